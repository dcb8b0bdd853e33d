//! Errors every kernel reports: a bad input value (naming the field, the item and why) or a
//! shape mismatch (naming what was expected).
use std::fmt;

/// One input value that a kernel refuses, e.g. `contract 3: vol = -0.2: volatility must be > 0`.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{validate, Contract, OptionKind};
/// use gmprt_kernels::InvalidInput;
///
/// let c = Contract { spot: 100.0, strike: 100.0, t: 1.0, rate: 0.0, vol: -1.0, kind: OptionKind::Call };
/// let err: InvalidInput = validate(&c, 3).unwrap_err();
/// assert_eq!(err.to_string(), "item 3: vol = -1: volatility must be > 0 and <= 10");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct InvalidInput {
    /// Field name as the user knows it (`"vol"`, `"t"`, `"spot"`, ...).
    pub field: &'static str,
    /// Index of the item in its batch (0 for a single item).
    pub index: usize,
    /// The offending value.
    pub value: f64,
    /// What must hold instead.
    pub why: &'static str,
}

impl fmt::Display for InvalidInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "item {}: {} = {}: {}", self.index, self.field, self.value, self.why)
    }
}

impl std::error::Error for InvalidInput {}

/// Why a kernel call was refused.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::saxpy::saxpy;
/// use gmprt_kernels::{InvalidInput, KernelError};
///
/// let err = saxpy(2.0, &[1.0, 2.0], &mut [0.0; 3]).unwrap_err();
/// assert_eq!(err, KernelError::Shape { what: "y", expected: 2, got: 3 });
/// assert_eq!(err.to_string(), "shape mismatch: y has 3 elements, the shape needs 2");
/// // An InvalidInput converts with `?`.
/// let bad = InvalidInput { field: "t", index: 0, value: -1.0, why: "time to expiry must be >= 0" };
/// assert!(matches!(KernelError::from(bad), KernelError::Invalid(e) if e.field == "t"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum KernelError {
    /// A value is outside the kernel's domain.
    Invalid(InvalidInput),
    /// Buffer lengths do not match the stated shape.
    Shape {
        /// Which buffer (`"a"`, `"price"`, `"input words"`, ...).
        what: &'static str,
        /// Length the shape requires.
        expected: usize,
        /// Length given.
        got: usize,
    },
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::Invalid(e) => e.fmt(f),
            KernelError::Shape { what, expected, got } => {
                write!(f, "shape mismatch: {what} has {got} elements, the shape needs {expected}")
            }
        }
    }
}

impl std::error::Error for KernelError {}

impl From<InvalidInput> for KernelError {
    fn from(e: InvalidInput) -> Self {
        KernelError::Invalid(e)
    }
}
