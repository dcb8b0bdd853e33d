//! [`Crossover`]: the batch size n* from which the GPU wins end to end, or why it never does —
//! one search for every kernel, shared with the network's crossover (`network.rs`).
//!
//! # The search
//! First the asymptotes ([`CostModel::crossover`]'s `never`): beyond every regime break each
//! cost grows with its upper regime's slope, so if the GPU's cost per unit of work (plus its
//! transfers per unit, for item kernels) is not below the best CPU's, the GPU loses at large n
//! and there is no n* — the reason says so in numbers, and says below which size the GPU still
//! wins when fixed costs on the CPU side (or mapped I/O) let it. Otherwise
//! `search_crossover` walks down a geometric grid ([`GRID_RATIO`]) from a size where the GPU
//! wins and keeps winning to the first size where it does not, and bisects that step: n* is the
//! next integer above it. The grid can step over a losing window narrower than 4.4%, well inside
//! the model's ±25%.
use super::cost::{CostModel, Residency};
use super::profile::{KernelProfile, Size};
use super::units::{ps, rate, secs};
use crate::error::OffloadError;

/// Where the GPU starts to win.
///
/// ```
/// use gmprt_offload::model::{CostModel, Crossover, DeviceProfile, Residency};
/// let m = CostModel::new(DeviceProfile::published_h100());
/// // Options already on the device: from 2187 on, the GPU beats the CPU.
/// assert_eq!(m.crossover("black_scholes", Residency::Device).unwrap(), Crossover::At { n: 2187.0 });
/// // From host memory, 48 B per option over PCIe costs more than pricing it on the CPU.
/// match m.crossover("black_scholes", Residency::Host).unwrap() {
///     Crossover::Never { reason, .. } => assert!(reason.starts_with("PCIe-bound"), "{reason}"),
///     c => panic!("{c:?}"),
/// }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Crossover {
    /// From size `n` on (and for every larger size) the GPU is faster end to end.
    At {
        /// n*.
        n: f64,
    },
    /// The GPU wins at every size (even n = 1).
    Always,
    /// The GPU does not win at large sizes, so there is no n* from which on it wins; the
    /// reason in numbers.
    Never {
        /// E.g. for Black-Scholes on the published H100 profile: "PCIe-bound: 48 B per option
        /// at 55.00 GB/s costs 0.873 ns, more than pricing it on the CPU …" (the best CPU fit,
        /// its rate and time per item follow), ending with "; it wins only below n ≈ X, …"
        /// when `wins_below` is set.
        reason: String,
        /// The largest size on the search grid ([`GRID_RATIO`] apart) at which the GPU still
        /// wins, when fixed costs on the CPU side (or mapped I/O) let it win smaller batches;
        /// `None` when it wins at no size (the network's crossover, `NetworkLink::scatter_crossover`,
        /// does not search below its asymptote and always leaves it `None`).
        wins_below: Option<f64>,
    },
}

/// Matrix side the SGEMM crossover search starts from (a 10⁶×10⁶ f32 matrix is 4 TB: beyond
/// any device, and far beyond every regime break, so costs there are on their asymptotes).
const MAX_MATRIX_N: f64 = 1e6;
/// Item count the crossover search starts from: 10¹² items is terabytes for every item
/// kernel, far beyond any cache or regime break, so costs there are on their asymptotes.
pub(super) const SEARCH_FROM_ITEMS: f64 = 1e12;
/// Largest size the crossover search doubles up to (where the asymptote says the GPU wins but
/// its fixed costs are so large that it has not yet caught up: `Never` in practice).
const SEARCH_LIMIT: f64 = 1e18;
/// Ratio between neighbouring sizes of the crossover search's grid: 2^(1/16), 4.4% apart. A
/// window narrower than that in which the GPU loses (two regime breaks next to each other)
/// could be stepped over; a window that narrow is well inside the model's ±25% anyway.
///
/// ```
/// use gmprt_offload::model::crossover::GRID_RATIO;
/// assert!((GRID_RATIO.powi(16) - 2.0).abs() < 1e-12); // 16 steps per doubling
/// ```
pub const GRID_RATIO: f64 = 1.044_273_782_427_413_8;

/// The crossover search both crossovers share — the PCIe one ([`CostModel::crossover`]) and the
/// network's (`NetworkLink::scatter_crossover`): `f(n) < 0` where the alternative (the GPU, the
/// other ranks) wins. From `hi`, a size beyond every regime break where the asymptote says it
/// wins, it doubles until `f(hi) < 0` (past [`SEARCH_LIMIT`]: `Never`, with `not_repaid`'s
/// words for the limit); walks down the grid ([`GRID_RATIO`]) to the first size where it does
/// not win (`Always` if it wins at n = 1); and bisects that step until the bracket is well
/// under one unit of n (or at f64's resolution, for huge n), so n* = ceil(hi).
pub(super) fn search_crossover(
    f: impl Fn(f64) -> f64,
    mut hi: f64,
    not_repaid: impl FnOnce(f64) -> String,
) -> Crossover {
    while f(hi) >= 0.0 {
        if hi >= SEARCH_LIMIT {
            return Crossover::Never { reason: not_repaid(SEARCH_LIMIT), wins_below: None };
        }
        hi *= 2.0;
    }
    let mut lo = loop {
        if hi <= 1.0 {
            return Crossover::Always;
        }
        let next = (hi / GRID_RATIO).max(1.0);
        if f(next) >= 0.0 {
            break next;
        }
        hi = next;
    };
    for _ in 0..200 {
        if hi - lo <= 1e-3 || hi - lo <= hi * 1e-12 {
            break;
        }
        let mid = 0.5 * (lo + hi);
        if f(mid) < 0.0 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Crossover::At { n: hi.ceil() }
}

impl CostModel {
    /// n* for `kernel` with `residency`, against the best CPU P count, or why never.
    ///
    /// One mechanism for every kernel: first the asymptote — beyond every regime break each
    /// cost grows with the upper regimes' slopes, so if the GPU's cost per unit of work (plus
    /// its transfers per unit, for item kernels) is not below the best CPU's, it never wins;
    /// then the largest size at which the GPU does not win, found on a geometric grid (ratio
    /// [`GRID_RATIO`]) searched downward from a size where the GPU wins and keeps winning, and
    /// refined by bisection. n* is the next integer above it.
    ///
    /// With a mapped fit ([`MappedFit`](super::MappedFit)), host-resident batches up to its
    /// `max_bytes` are priced without copies, a step down in GPU time at small n. The search
    /// walks down from large n and reports the crossover above every size where the GPU loses;
    /// a window of small sizes where it wins only through mapped I/O, below sizes where it
    /// loses, is not a crossover (the breakdown at such an n, `predict`, shows it).
    ///
    /// ```
    /// use gmprt_offload::model::{CostModel, Crossover, DeviceProfile, Residency};
    /// let m = CostModel::new(DeviceProfile::published_h100());
    /// match m.crossover("black_scholes", Residency::Host).unwrap() {
    ///     Crossover::Never { reason, .. } => assert!(
    ///         reason.starts_with("PCIe-bound: 48 B per option at 55.00 GB/s costs 0.873 ns"),
    ///         "{reason}"
    ///     ),
    ///     c => panic!("{c:?}"),
    /// }
    /// // SGEMM: flops grow as N³ and copies as N², so the GPU wins from some N on.
    /// let Crossover::At { n } = m.crossover("sgemm", Residency::Host).unwrap() else { panic!() };
    /// assert!(n > 1.0 && n == n.ceil());
    /// assert!(m.crossover("no_such_kernel", Residency::Host).is_err());
    /// ```
    pub fn crossover(&self, kernel: &str, residency: Residency) -> Result<Crossover, OffloadError> {
        let k = self.profile.kernel(kernel)?;
        if k.cpu.is_empty() {
            return Ok(Crossover::Always);
        }
        // f(n) < 0: the GPU wins at n.
        let f = |n: f64| self.gpu_total(k, n, residency) - Self::best_cpu(k, n);
        // An upper end where the GPU wins, beyond every regime break (all costs are then on
        // their asymptotes, where each CPU's deficit only grows: see `never`).
        let hi = match k.size {
            Size::Items { .. } => SEARCH_FROM_ITEMS,
            Size::MatrixN => MAX_MATRIX_N,
        };
        if let Some(reason) = self.never(k, residency) {
            // Lost on the asymptotes, but a CPU side with large fixed costs (timed as called: a
            // fork/join of parked Ps) or mapped I/O can still let the GPU win smaller batches:
            // say up to where, so the reason does not contradict a verdict at such an n.
            let mut n = hi;
            while n > 1.0 && f(n) >= 0.0 {
                n /= GRID_RATIO;
            }
            let wins_below = (n > 1.0 || f(1.0) < 0.0).then(|| n.ceil());
            return Ok(Crossover::Never {
                reason: match wins_below {
                    Some(at) => {
                        let at = if at >= 1e4 { format!("{at:.2e}") } else { format!("{at}") };
                        format!("{reason}; it wins only below n ≈ {at}, on the CPU side's fixed costs")
                    }
                    None => reason,
                },
                wins_below,
            });
        }
        let unit = k.unit.trim_end_matches('s').to_string();
        Ok(search_crossover(f, hi, |limit| {
            format!("the GPU's cost per {unit} is below the CPU's, but its fixed costs are not repaid below n = {limit:e}")
        }))
    }
    /// Why the GPU can never win `k` with `residency`, judged on the asymptotes (the upper
    /// regimes' slopes), or `None` when it wins for large enough sizes.
    ///
    /// Item kernels: the GPU's cost per item beyond the breaks is transfers per item + the
    /// device's slope; if that is not below the best CPU slope, the gap grows with n. SGEMM:
    /// transfers grow as N², flops as N³, so only the flop rates decide the asymptote.
    fn never(&self, k: &KernelProfile, residency: Residency) -> Option<String> {
        let best = k.cpu.iter().min_by(|a, b| {
            a.fit.slope.total_cmp(&b.fit.slope).then(a.fit.intercept.total_cmp(&b.fit.intercept))
        })?;
        let unit = k.unit.trim_end_matches('s');
        match k.size {
            Size::Items { in_bytes, out_bytes, .. } => {
                let p = &self.profile;
                let transfer_slope = match residency {
                    Residency::Host => in_bytes * p.h2d.pinned.slope + out_bytes * p.d2h.pinned.slope,
                    Residency::Pageable => in_bytes * p.h2d.pageable.slope + out_bytes * p.d2h.pageable.slope,
                    Residency::Device => 0.0,
                };
                let s_g = transfer_slope + k.device.slope;
                if s_g < best.fit.slope {
                    return None;
                }
                Some(if transfer_slope >= best.fit.slope {
                    let bytes = in_bytes + out_bytes;
                    let bw = bytes / transfer_slope.max(1e-300);
                    // The Host device's "transfers" are memcpys between host buffers.
                    let link = if p.kind == "host" { "copy-bound (host memcpy)" } else { "PCIe-bound" };
                    format!(
                        "{link}: {bytes:.0} B per {unit} at {} costs {}, more than computing it on {} at {}/s ({})",
                        rate(bw, "B/s"),
                        secs(transfer_slope),
                        ps(best.procs),
                        rate(1.0 / best.fit.slope, k.unit.as_str()),
                        secs(best.fit.slope)
                    )
                } else {
                    format!(
                        "per {unit} the GPU costs {} (transfers {} + kernel {}), more than {} on {} ({}/s)",
                        secs(s_g),
                        secs(transfer_slope),
                        secs(k.device.slope),
                        secs(best.fit.slope),
                        ps(best.procs),
                        rate(1.0 / best.fit.slope, k.unit.as_str())
                    )
                })
            }
            Size::MatrixN if k.device.slope < best.fit.slope => None,
            Size::MatrixN => Some(format!(
                "the device's SGEMM rate ({}) is not above the CPU's best ({} on {})",
                rate(1.0 / k.device.slope.max(1e-300), "FLOP/s"),
                rate(1.0 / best.fit.slope, "FLOP/s"),
                ps(best.procs)
            )),
        }
    }
}
