//! [`OffloadError`]: every way the offload layer refuses or fails work, each with a message
//! that says what was wrong. Nothing in this crate panics on bad input or a missing GPU.
use gmprt_kernels::{InvalidInput, KernelError};
use std::fmt;

/// Why an offload call failed. `Clone` so that one failed batch can fail each of its items.
#[derive(Clone, Debug, PartialEq)]
pub enum OffloadError {
    /// A CUDA device was required (`GMPRT_DEVICE=cuda`, `Device::cuda`) but none is usable.
    NoDevice {
        /// What was missing: `"no libcuda.so"`, `"no CUDA device"`, ...
        reason: String,
    },
    /// A CUDA driver, NVRTC or cuBLAS call failed.
    Driver {
        /// The operation (`"cuMemcpyHtoDAsync"`, `"load module black_scholes"`).
        op: String,
        /// The driver's message.
        msg: String,
    },
    /// An item was rejected at submit; names the field.
    Invalid(InvalidInput),
    /// Buffers or shapes do not fit.
    Kernel(KernelError),
    /// A batch failed as a whole (copy, launch or host kernel); every item of it gets this.
    Batch {
        /// Batch sequence number (see the timeline).
        batch: u64,
        /// Kernel name.
        kernel: &'static str,
        /// What went wrong.
        msg: String,
    },
    /// The batcher is shut down; the item was not accepted.
    Closed,
    /// A configuration value is out of range (e.g. `max_batch = 0`).
    Config(String),
}

impl fmt::Display for OffloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OffloadError::NoDevice { reason } => write!(f, "no CUDA device: {reason}"),
            OffloadError::Driver { op, msg } => write!(f, "CUDA call failed: {op}: {msg}"),
            OffloadError::Invalid(e) => write!(f, "invalid item: {e}"),
            OffloadError::Kernel(e) => write!(f, "{e}"),
            OffloadError::Batch { batch, kernel, msg } => {
                write!(f, "batch {batch} of {kernel} failed: {msg}")
            }
            OffloadError::Closed => write!(f, "the batcher is shut down; item not accepted"),
            OffloadError::Config(msg) => write!(f, "invalid configuration: {msg}"),
        }
    }
}

impl std::error::Error for OffloadError {}

impl From<InvalidInput> for OffloadError {
    fn from(e: InvalidInput) -> Self {
        OffloadError::Invalid(e)
    }
}

impl From<KernelError> for OffloadError {
    fn from(e: KernelError) -> Self {
        match e {
            KernelError::Invalid(i) => OffloadError::Invalid(i),
            e => OffloadError::Kernel(e),
        }
    }
}
