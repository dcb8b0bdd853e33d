//! Least-squares straight-line fits of time against size.
//!
//! Weighted by 1/secs² so that a 4 KiB copy (microseconds) and a 64 MiB copy (milliseconds)
//! count alike in relative terms; an unweighted fit would let the largest sample decide the
//! intercept alone.
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

/// Smallest time a weight is computed from (1 ns), so a zero-time sample cannot get an
/// infinite weight.
const MIN_SECS: f64 = 1e-9;

impl LinFit {
    /// Fits `samples` (at least one; with one sample the intercept is 0).
    pub fn fit(samples: &[Sample]) -> LinFit {
        let pts: Vec<Sample> =
            samples.iter().copied().filter(|s| s.x.is_finite() && s.secs.is_finite()).collect();
        let (intercept, slope) = match pts.len() {
            0 => (0.0, 0.0),
            1 if pts[0].x > 0.0 => (0.0, pts[0].secs.max(0.0) / pts[0].x),
            1 => (pts[0].secs.max(0.0), 0.0),
            _ => weighted(&pts),
        };
        let mut f = LinFit { intercept, slope, max_rel_err: 0.0 };
        f.max_rel_err = pts
            .iter()
            .filter(|s| s.secs > 0.0)
            .map(|s| (f.eval(s.x) - s.secs).abs() / s.secs)
            .fold(0.0, f64::max);
        f
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

/// Weighted least squares (weights 1/secs²) with non-negative coefficients: when the
/// unconstrained solution has a negative coefficient, that coefficient is set to 0 and the
/// other refitted alone.
fn weighted(pts: &[Sample]) -> (f64, f64) {
    let w = |s: &Sample| 1.0 / s.secs.max(MIN_SECS).powi(2);
    let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for s in pts {
        let wi = w(s);
        sw += wi;
        sx += wi * s.x;
        sy += wi * s.secs;
        sxx += wi * s.x * s.x;
        sxy += wi * s.x * s.secs;
    }
    let det = sw * sxx - sx * sx;
    let (a, b) = if det.abs() > f64::EPSILON * sw * sxx {
        ((sy * sxx - sx * sxy) / det, (sw * sxy - sx * sy) / det)
    } else {
        (sy / sw, 0.0) // all x equal: a constant
    };
    if b < 0.0 {
        ((sy / sw).max(0.0), 0.0)
    } else if a < 0.0 {
        (0.0, if sxx > 0.0 { (sxy / sxx).max(0.0) } else { 0.0 })
    } else {
        (a, b)
    }
}
