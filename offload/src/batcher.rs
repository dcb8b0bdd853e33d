//! STUB.
/// STUB.
pub struct Batcher;
/// STUB.
pub struct BatcherConfig;
