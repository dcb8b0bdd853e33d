//! STUB: filled in by the offload helper.
/// STUB.
pub struct Device;
/// STUB.
pub enum DeviceKind {}
