//! [`OffloadError`]: every way the offload layer refuses or fails work, each with a message
//! that says what was wrong. Nothing in this crate panics on bad input or a missing GPU.
use gmprt_kernels::{InvalidInput, KernelError};
use std::fmt;

/// Why an offload call failed. `Clone` so that one failed batch can fail each of its items.
///
/// # Examples
///
/// ```
/// use gmprt_offload::kernels::{InvalidInput, KernelError};
/// use gmprt_offload::runtime::Runtime;
/// use gmprt_offload::{Batcher, BatcherConfig, Device, OffloadError, Saxpy};
///
/// // A configuration out of range is refused when the Batcher is made...
/// let bad = BatcherConfig { max_batch: 0, ..BatcherConfig::default() };
/// match Batcher::new(Saxpy { a: 2.0 }, &Device::host(), bad) {
///     Err(OffloadError::Config(m)) => assert!(m.contains("max_batch"), "{m}"),
///     other => panic!("{other:?}"),
/// }
/// // ...an invalid item at submit, naming the field...
/// let rt = Runtime::builder().procs(2).build().unwrap();
/// let b = Batcher::new(Saxpy { a: 2.0 }, &Device::host(), BatcherConfig::default()).unwrap();
/// match rt.block_on(b.submit((1.0, f32::INFINITY))) {
///     Err(OffloadError::Invalid(e)) => assert_eq!(e.field, "y"),
///     other => panic!("{other:?}"),
/// }
/// // ...and any item after shutdown.
/// b.shutdown();
/// let closed = rt.block_on(b.submit((1.0, 1.0))).unwrap_err();
/// assert_eq!(closed, OffloadError::Closed);
/// assert_eq!(closed.to_string(), "the batcher is shut down; item not accepted");
/// // A kernel's error converts with `?`; its Invalid case stays Invalid.
/// let shape = KernelError::Shape { what: "y", expected: 2, got: 3 };
/// assert_eq!(OffloadError::from(shape.clone()), OffloadError::Kernel(shape));
/// let bad = InvalidInput { field: "vol", index: 1, value: -1.0, why: "volatility must be > 0" };
/// assert!(matches!(OffloadError::from(KernelError::Invalid(bad)), OffloadError::Invalid(_)));
/// ```
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
