//! SAXPY, `y = a·x + y`: the memory-bound case (2 flops per 12 bytes moved). STUB.
use crate::KernelError;

/// `y[i] = a * x[i] + y[i]`; lengths must match.
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) -> Result<(), KernelError> {
    let _ = (a, x, y);
    todo!()
}
