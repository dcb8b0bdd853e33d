//! Least-squares straight-line fits of time against size, in one regime or a few.
//!
//! # The line
//! Weighted by 1/secs² so that a 4 KiB copy (microseconds) and a 64 MiB copy (milliseconds)
//! count alike in relative terms; an unweighted fit would let the largest sample decide the
//! intercept alone. Coefficients are clamped to be non-negative.
//!
//! # Regimes
//! Memory-bound work on a CPU runs at a different speed per level of the memory hierarchy its
//! operands fit in (SAXPY on the dev VM: 0.21 ns per element up to 128k elements, 0.60 ns
//! from 512k on; a `memcpy` has four speeds: L1, L2, last-level cache, DRAM). No single line
//! is within ±25% of all of them, so [`LinFit::fit`] also tries every way of cutting the
//! sorted samples into two, three and four consecutive runs (at least [`MIN_RUN`] = 3
//! samples each, so eight points allow two regimes at most), fits a line to each run, and scores each cut by its worst relative error over all
//! the samples. It keeps one line unless that is off by more than [`SPLIT_ABOVE`]; a cut into
//! more regimes replaces the current choice only if it lowers the worst error by at least
//! [`MIN_GAIN`], so noise on one straight regime is not "explained" by spurious breaks.
//!
//! The top run's line is the fit's `intercept`/`slope` — the asymptote the cost model
//! extrapolates beyond the largest sample and compares slopes with; the lower runs' lines are
//! kept in [`LinFit::below`], each used below its break (the geometric mean of the two samples
//! either side of the cut).
use serde::{Deserialize, Serialize};

/// One measurement: `secs` seconds at size `x` (bytes, items, or flops — see the fit's owner).
///
/// ```
/// use gmprt_offload::model::{LinFit, Sample};
/// // One sample: a line through the origin (intercept 0).
/// let f = LinFit::fit(&[Sample { x: 1e6, secs: 1e-3 }]);
/// assert_eq!((f.intercept, f.slope), (0.0, 1e-9));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The size.
    pub x: f64,
    /// Seconds measured (a median of repeats).
    pub secs: f64,
}

/// The line of one lower regime of a [`LinFit`]: used for x below `upto` (and at or above
/// the previous regime's `upto`).
///
/// ```
/// use gmprt_offload::model::{LinFit, Regime};
/// // 0.2 ns per element below 128k elements (in cache), 0.6 ns from there on.
/// let f = LinFit {
///     intercept: 0.0,
///     slope: 0.6e-9,
///     max_rel_err: 0.0,
///     below: vec![Regime { upto: 128e3, intercept: 0.0, slope: 0.2e-9 }],
/// };
/// assert!((f.eval(64e3) - 12.8e-6).abs() < 1e-15); // the lower regime
/// assert!((f.eval(1e6) - 0.6e-3).abs() < 1e-15); // the top one, at and above the break
/// assert!((f.eval(128e3) - 76.8e-6).abs() < 1e-15);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Regime {
    /// The break: sizes below it use this line.
    pub upto: f64,
    /// Fixed cost in seconds.
    pub intercept: f64,
    /// Seconds per unit of x.
    pub slope: f64,
}

/// `secs ≈ intercept + slope · x` (for x below a break of `below`, that regime's line
/// instead), fitted by least squares with weights 1/secs² (so small and large sizes count
/// alike in relative terms), clamped to non-negative coefficients.
///
/// ```
/// use gmprt_offload::model::{LinFit, Sample};
/// // Samples on 10 µs + 1 ns per unit: the fit recovers the line, one regime.
/// let s: Vec<Sample> = [1e3, 1e4, 1e5, 1e6].iter().map(|&x| Sample { x, secs: 10e-6 + 1e-9 * x }).collect();
/// let f = LinFit::fit(&s);
/// assert!((f.intercept - 10e-6).abs() < 1e-12 && (f.slope - 1e-9).abs() < 1e-18);
/// assert!(f.max_rel_err < 1e-9 && f.below.is_empty());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinFit {
    /// Fixed cost in seconds (latency) of the top (or only) regime.
    pub intercept: f64,
    /// Seconds per unit of x (1 / bandwidth or 1 / throughput) of the top (or only) regime:
    /// the asymptotic cost per unit.
    pub slope: f64,
    /// Largest |predicted − measured| / measured over the samples fitted.
    pub max_rel_err: f64,
    /// The lower regimes, by increasing [`Regime::upto`] (empty: one regime; see the module
    /// docs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub below: Vec<Regime>,
}

/// Smallest time a weight is computed from (1 ns), so a zero-time sample cannot get an
/// infinite weight.
const MIN_SECS: f64 = 1e-9;
/// A single line whose worst relative error is at most this (10%) is kept as it is: well
/// inside the ±25% the model is held to, and above the run-to-run noise of a median on the
/// shared 2-core VM (a few percent), so noise alone does not trigger a cut.
///
/// ```
/// use gmprt_offload::model::fit::SPLIT_ABOVE;
/// use gmprt_offload::model::{LinFit, Sample};
/// // 1 ns per unit with ±5% noise: well within SPLIT_ABOVE, so one line is kept.
/// let s: Vec<Sample> = (0..8)
///     .map(|i| {
///         let x = 1e3 * 4f64.powi(i);
///         Sample { x, secs: 1e-9 * x * if i % 2 == 0 { 1.05 } else { 0.95 } }
///     })
///     .collect();
/// let f = LinFit::fit(&s);
/// assert!(f.below.is_empty());
/// assert!(f.max_rel_err <= SPLIT_ABOVE, "{}", f.max_rel_err);
/// ```
pub const SPLIT_ABOVE: f64 = 0.10;
/// Least drop in the worst relative error (5 points) for which one more regime is kept: the
/// medians this project fits move by a few percent from run to run on the shared VM, so a
/// smaller gain is within the noise, not evidence of another regime.
///
/// ```
/// use gmprt_offload::model::fit::{MIN_GAIN, SPLIT_ABOVE};
/// use gmprt_offload::model::{LinFit, Sample};
/// // 1 ns per unit, `slower` times that from the 7th sample on, with ±6% noise.
/// let series = |slower: f64| -> Vec<Sample> {
///     (0..12)
///         .map(|i| {
///             let x = 1e3 * 2f64.powi(i);
///             let per = if i < 6 { 1e-9 } else { slower * 1e-9 };
///             Sample { x, secs: x * per * if i % 2 == 0 { 1.06 } else { 0.94 } }
///         })
///         .collect()
/// };
/// // 10% slower: one line is off by 11%, a cut only brings that to 7.8% (a gain below
/// // MIN_GAIN), so the line is kept.
/// let f = LinFit::fit(&series(1.10));
/// assert!(f.below.is_empty() && f.max_rel_err > SPLIT_ABOVE);
/// // 15% slower: one line is off by 13.3%, the cut gains more than MIN_GAIN and is kept.
/// let f = LinFit::fit(&series(1.15));
/// assert_eq!(f.below.len(), 1);
/// assert!(f.max_rel_err < 0.133 - MIN_GAIN);
/// ```
pub const MIN_GAIN: f64 = 0.05;
/// Fewest samples in each regime: three. Two points determine a line, so a regime of two
/// fits them exactly whatever they are — one noisy pair of medians on the shared VM became a
/// "regime" of its own, and eight points could be cut into four such regimes, each fitting
/// its pair exactly (worst error 0, every cut "justified"). With three, each regime's line
/// has a residual its worst error can show, a single disturbed sample cannot carve out a
/// regime, and a series needs `MIN_RUN · regimes` samples for that many regimes (eight points:
/// at most two).
///
/// ```
/// use gmprt_offload::model::fit::MIN_RUN;
/// use gmprt_offload::model::{LinFit, Sample};
/// // Two speeds, but only five samples: fewer than 2 · MIN_RUN, so no cut is allowed.
/// let s: Vec<Sample> = [(1e3, 0.2e-9), (4e3, 0.2e-9), (16e3, 0.2e-9), (64e3, 0.6e-9), (256e3, 0.6e-9)]
///     .iter()
///     .map(|&(x, per)| Sample { x, secs: per * x })
///     .collect();
/// assert!(s.len() < 2 * MIN_RUN);
/// let f = LinFit::fit(&s);
/// assert!(f.below.is_empty() && f.max_rel_err > 0.10);
/// ```
pub const MIN_RUN: usize = 3;
/// Most regimes of one fit: four, one per level a CPU's memory traffic can be bound by (L1,
/// L2, the shared last-level cache, DRAM). A `memcpy` on the dev VM shows all four: 7.6, 24,
/// 75 and 125-170 ps per byte.
///
/// ```
/// use gmprt_offload::model::fit::MAX_REGIMES;
/// use gmprt_offload::model::{LinFit, Sample};
/// // A memcpy's four speeds (L1, L2, last-level cache, DRAM), three samples each:
/// let per_byte = [7.6e-12, 24e-12, 75e-12, 150e-12];
/// let s: Vec<Sample> = (0..12)
///     .map(|i| {
///         let x = 4096.0 * 2f64.powi(i);
///         Sample { x, secs: x * per_byte[i as usize / 3] }
///     })
///     .collect();
/// let f = LinFit::fit(&s);
/// // One line per level: the most a fit has.
/// assert!(f.max_rel_err < 1e-9);
/// assert_eq!(f.below.len() + 1, MAX_REGIMES);
/// ```
pub const MAX_REGIMES: usize = 4;

impl LinFit {
    /// Fits `samples` (at least one; with one sample the intercept is 0), in one regime or
    /// more (see the module docs). Non-finite samples are ignored.
    ///
    /// ```
    /// use gmprt_offload::model::{LinFit, Sample};
    /// // SAXPY-like: 0.2 ns per element up to 64k elements, 0.6 ns from 256k on.
    /// let s: Vec<Sample> = [1e3, 4e3, 16e3, 64e3, 256e3, 1e6, 4e6, 16e6]
    ///     .iter()
    ///     .map(|&x| Sample { x, secs: x * if x < 1e5 { 0.2e-9 } else { 0.6e-9 } })
    ///     .collect();
    /// let f = LinFit::fit(&s);
    /// assert_eq!(f.below.len(), 1); // two regimes
    /// assert!((f.below[0].upto - 128e3).abs() < 1e-6); // the break: √(64k · 256k)
    /// assert!((f.slope - 0.6e-9).abs() < 1e-15 && (f.below[0].slope - 0.2e-9).abs() < 1e-15);
    /// assert!(f.max_rel_err < 1e-6);
    /// // Non-finite samples are ignored.
    /// let with_nan = [s.clone(), vec![Sample { x: f64::NAN, secs: 1.0 }]].concat();
    /// assert_eq!(LinFit::fit(&with_nan), f);
    /// ```
    pub fn fit(samples: &[Sample]) -> LinFit {
        let mut pts: Vec<Sample> =
            samples.iter().copied().filter(|s| s.x.is_finite() && s.secs.is_finite()).collect();
        pts.sort_by(|a, b| a.x.total_cmp(&b.x));
        let mut best = LinFit::line(&pts);
        for regimes in 2..=MAX_REGIMES {
            if best.max_rel_err <= SPLIT_ABOVE {
                break;
            }
            let candidate = cuts(pts.len(), regimes)
                .into_iter()
                .filter(|c| c.iter().all(|&k| pts[k - 1].x < pts[k].x)) // no cut between equal sizes
                .map(|c| LinFit::piecewise(&pts, &c))
                .min_by(|a, b| a.max_rel_err.total_cmp(&b.max_rel_err));
            if let Some(c) = candidate
                && c.max_rel_err <= best.max_rel_err - MIN_GAIN
            {
                best = c;
            }
        }
        best
    }
    /// A fit from known coefficients (published figures), `max_rel_err` 0, one regime.
    ///
    /// ```
    /// use gmprt_offload::model::LinFit;
    /// let pcie = LinFit::known(10e-6, 1.0 / 25e9); // 10 µs + 25 GB/s
    /// assert!((pcie.eval(25e6) - 1.01e-3).abs() < 1e-12); // 25 MB: 1.01 ms
    /// ```
    pub fn known(intercept: f64, slope: f64) -> LinFit {
        LinFit { intercept, slope, max_rel_err: 0.0, below: vec![] }
    }
    /// This line with every time multiplied by `factor` (each regime's too): the same device
    /// shape `factor` times slower.
    ///
    /// ```
    /// use gmprt_offload::model::LinFit;
    /// let f = LinFit::known(10e-6, 1e-9).scaled(2.0);
    /// assert_eq!((f.intercept, f.slope), (20e-6, 2e-9));
    /// ```
    pub fn scaled(&self, factor: f64) -> LinFit {
        let mut f = self.clone();
        (f.intercept, f.slope) = (f.intercept * factor, f.slope * factor);
        for r in &mut f.below {
            (r.intercept, r.slope) = (r.intercept * factor, r.slope * factor);
        }
        f
    }
    /// Predicted seconds at size `x`: the line of the regime x falls in, at least what any
    /// smaller size costs.
    ///
    /// ```
    /// use gmprt_offload::model::LinFit;
    /// let link = LinFit::known(10e-6, 1.0 / 55e9); // 10 µs + 55 GB/s
    /// assert!((link.eval(0.0) - 10e-6).abs() < 1e-15);
    /// assert!((link.eval(55e6) - 1.01e-3).abs() < 1e-12); // 55 MB: 1.01 ms
    /// ```
    ///
    /// Never less than at any smaller size (monotone in x): where a lower regime's line ends
    /// above the next one's start — its fixed cost is higher, as a multi-P fork/join's is below
    /// the size where the per-item cost drops — the next regime reads as that end until its
    /// own line climbs past it. More work never takes less time; the H200 run's 8-P
    /// Black-Scholes fit, read as bare lines, fell by a third at n = 32k.
    ///
    /// ```
    /// use gmprt_offload::model::{LinFit, Regime};
    /// // 50 µs + 1 ns per item below 32k items; 2 µs + 1 ns per item from there on.
    /// let f = LinFit {
    ///     intercept: 2e-6,
    ///     slope: 1e-9,
    ///     max_rel_err: 0.0,
    ///     below: vec![Regime { upto: 32e3, intercept: 50e-6, slope: 1e-9 }],
    /// };
    /// let end = 50e-6 + 32e3 * 1e-9; // where the lower line ends: 82 µs
    /// assert!((f.eval(40e3) - end).abs() < 1e-15); // the top line would say 42 µs
    /// assert!((f.eval(60e3) - end).abs() < 1e-15); // … and passes 82 µs only at 80k
    /// assert!((f.eval(100e3) - 102e-6).abs() < 1e-15);
    /// ```
    pub fn eval(&self, x: f64) -> f64 {
        // The most any smaller size costs: the end of every regime below x.
        let mut floor = 0.0f64;
        for r in &self.below {
            if x < r.upto {
                return (r.intercept + r.slope * x).max(floor);
            }
            floor = floor.max(r.intercept + r.slope * r.upto);
        }
        (self.intercept + self.slope * x).max(floor)
    }
    /// One straight line through `pts` (sorted, finite).
    fn line(pts: &[Sample]) -> LinFit {
        let (intercept, slope) = match pts.len() {
            0 => (0.0, 0.0),
            1 if pts[0].x > 0.0 => (0.0, pts[0].secs.max(0.0) / pts[0].x),
            1 => (pts[0].secs.max(0.0), 0.0),
            _ => weighted(pts),
        };
        let mut f = LinFit { intercept, slope, max_rel_err: 0.0, below: vec![] };
        f.max_rel_err = rel_err(&f, pts);
        f
    }
    /// One line per run of `pts` cut before each index of `cuts` (increasing).
    fn piecewise(pts: &[Sample], cuts: &[usize]) -> LinFit {
        let mut start = 0;
        let mut below = Vec::with_capacity(cuts.len());
        for &k in cuts {
            let l = LinFit::line(&pts[start..k]);
            below.push(Regime {
                upto: (pts[k - 1].x * pts[k].x).sqrt(),
                intercept: l.intercept,
                slope: l.slope,
            });
            start = k;
        }
        let mut f = LinFit { below, ..LinFit::line(&pts[start..]) };
        f.max_rel_err = rel_err(&f, pts);
        f
    }
}

/// Every way to cut `len` samples into `regimes` runs of at least [`MIN_RUN`]: the indices
/// the runs after the first start at.
fn cuts(len: usize, regimes: usize) -> Vec<Vec<usize>> {
    fn go(from: usize, len: usize, left: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if left == 0 {
            if len - from >= MIN_RUN {
                out.push(cur.clone());
            }
            return;
        }
        // The run starting at `from` takes at least MIN_RUN samples, and leaves enough for
        // the `left` runs after it.
        for k in from + MIN_RUN..=len.saturating_sub(left * MIN_RUN) {
            cur.push(k);
            go(k, len, left - 1, cur, out);
            cur.pop();
        }
    }
    let mut out = vec![];
    if regimes >= 1 {
        go(0, len, regimes - 1, &mut vec![], &mut out);
    }
    out
}

/// Largest |f(x) − secs| / secs over `pts` with a positive time.
fn rel_err(f: &LinFit, pts: &[Sample]) -> f64 {
    pts.iter().filter(|s| s.secs > 0.0).map(|s| (f.eval(s.x) - s.secs).abs() / s.secs).fold(0.0, f64::max)
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
