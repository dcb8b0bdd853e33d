//! Least-squares straight-line fits of time against size. SKELETON.
use serde::{Deserialize, Serialize};

/// One measurement: `secs` seconds at size `x` (bytes, items, or flops — see the fit's owner).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The size.
    pub x: f64,
    /// Seconds measured (a median of repeats).
    pub secs: f64,
}

/// `secs ≈ intercept + slope · x`, fitted by least squares with weights 1/secs² (so small and
/// large sizes count alike in relative terms), clamped to non-negative coefficients.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinFit {
    /// Fixed cost in seconds (latency).
    pub intercept: f64,
    /// Seconds per unit of x (1 / bandwidth or 1 / throughput).
    pub slope: f64,
    /// Largest |predicted − measured| / measured over the samples fitted.
    pub max_rel_err: f64,
}

impl LinFit {
    /// Fits `samples` (at least one; with one sample the intercept is 0).
    pub fn fit(samples: &[Sample]) -> LinFit {
        let _ = samples;
        todo!()
    }
    /// A fit from known coefficients (published figures), `max_rel_err` 0.
    pub fn known(intercept: f64, slope: f64) -> LinFit {
        LinFit { intercept, slope, max_rel_err: 0.0 }
    }
    /// Predicted seconds at size `x`.
    pub fn eval(&self, x: f64) -> f64 {
        self.intercept + self.slope * x
    }
}
