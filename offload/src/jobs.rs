//! STUB.
/// STUB.
pub trait BatchKernel {}
