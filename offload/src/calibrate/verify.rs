//! [`verify`]: run one kernel at one size on both sides, on this machine, and hold the cost
//! model's per-phase predictions to what was measured (`explain --verify`; issue 27, item 5).
//!
//! Each side runs the way the model prices it: the device side as a Batcher's slot runs a
//! host-resident batch (one slot made first, its staging filled once, then all three phases
//! per run: H2D, kernel and D2H each timed, and the whole run's wall time against the model's
//! GPU total; priced [`Residency::Host`], pinned copies), SGEMM through `Device::sgemm` and
//! Monte Carlo through `Device::option_paths_sum`, which copy from and to the caller's own
//! memory (priced [`Residency::Pageable`]: on the H100, 2026-11-27, the pinned price put
//! SGEMM's copies at a quarter of what they took and Monte Carlo's 16-byte read-back at 3 µs
//! against 14); the CPU side as a program calls it ([`CpuKernels::time`]: from
//! outside the runtime, Ps parked, operands evicted) on the profile's largest P count. Every
//! figure is the median of `reps` runs after one warm-up run.
//!
//! A phase passes within ±[`TOLERANCE`] (the 25% the model is held to). Phases under
//! [`MIN_CHECKED`] on both sides (the copies of Monte Carlo, which has no operands) are shown
//! and not held to it: timer resolution and a cache miss decide them; nor is a phase the
//! device's path does not run at all (measured 0: the Host device's SGEMM has no copies).
use super::measure::middle;
use super::{mc_contract, CpuKernels, MC_SEED};
use crate::backend::Phases;
use crate::device::Device;
use crate::error::OffloadError;
use crate::jobs::{BlackScholes, Saxpy};
use crate::model::units::secs;
use crate::model::{CostModel, Residency};
use gmprt_kernels::black_scholes;
use gmprt_runtime::Runtime;
use std::time::{Duration, Instant};

/// How far a measured phase may be from its prediction: ±25%, what the model is held to.
pub const TOLERANCE: f64 = 0.25;
/// Phases shorter than this on both sides (2 µs) are shown but not checked (see the module doc).
pub const MIN_CHECKED: f64 = 2e-6;

/// One phase: predicted against measured seconds.
///
/// ```
/// use gmprt_offload::calibrate::PhaseCheck;
/// let c = PhaseCheck { phase: "kernel".into(), predicted: 1e-3, measured: 1.2e-3 };
/// assert!(c.checked() && c.passes());
/// let off = PhaseCheck { measured: 1.3e-3, ..c.clone() };
/// assert!(!off.passes());
/// assert!(off.to_string().contains("+30%"), "{off}");
/// // Under 2 µs on both sides: shown, not held to the tolerance.
/// let tiny = PhaseCheck { phase: "H2D".into(), predicted: 0.0, measured: 1e-7 };
/// assert!(!tiny.checked() && tiny.passes());
/// // Not run by the device's path at all: shown, not checked.
/// let none = PhaseCheck { phase: "D2H".into(), predicted: 80e-6, measured: 0.0 };
/// assert!(!none.checked() && none.to_string().contains("does not run it"), "{none}");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseCheck {
    /// `H2D`, `kernel`, `D2H`, `GPU total`, `CPU on P Ps`.
    pub phase: String,
    /// The model's seconds.
    pub predicted: f64,
    /// Measured seconds (a median).
    pub measured: f64,
}

impl PhaseCheck {
    /// Whether the phase is held to [`TOLERANCE`]: at least [`MIN_CHECKED`] on one side, and
    /// run at all by the device's path (measured exactly 0 means it was not: the Host device's
    /// SGEMM multiplies in host memory, with no copies for the model's H2D and D2H to match).
    pub fn checked(&self) -> bool {
        self.measured > 0.0 && self.predicted.max(self.measured) >= MIN_CHECKED
    }

    /// Measured over predicted − 1 (`inf` when 0 was predicted and time was measured).
    pub fn error(&self) -> f64 {
        if self.predicted > 0.0 {
            self.measured / self.predicted - 1.0
        } else if self.measured > 0.0 {
            f64::INFINITY
        } else {
            0.0
        }
    }

    /// Within the tolerance, or not checked.
    pub fn passes(&self) -> bool {
        !self.checked() || self.error().abs() <= TOLERANCE
    }
}

impl std::fmt::Display for PhaseCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let verdict = if self.measured == 0.0 && self.predicted > 0.0 {
            "not checked (this device's path does not run it)".to_string()
        } else if !self.checked() {
            "not checked (under 2 µs)".to_string()
        } else if self.passes() {
            "ok".to_string()
        } else {
            format!("OFF (beyond ±{:.0}%)", TOLERANCE * 100.0)
        };
        let err = self.error();
        let err = if err.is_finite() { format!("{:+.0}%", err * 100.0) } else { "—".to_string() };
        write!(
            f,
            "{:<16} predicted {:>11}  measured {:>11}  {err:>6}  {verdict}",
            self.phase,
            secs(self.predicted),
            secs(self.measured)
        )
    }
}

/// Runs `kernel` (`black_scholes`, `saxpy`, `sgemm`, `monte_carlo`) at size `n` (items; the
/// matrix side for SGEMM; paths) on `device` and on the CPU, and returns each phase predicted
/// by `model` (data on the host, pinned or pageable as the path copies it: module doc) against
/// measured: H2D, kernel, D2H, GPU total, then the CPU
/// on the profile's largest P count. Blocks the calling thread, which must not be a runtime's
/// M. Errors: an unknown kernel, a size the device cannot run, or a model without the kernel.
pub fn verify(
    device: &Device,
    model: &CostModel,
    kernel: &str,
    n: usize,
    reps: usize,
) -> Result<Vec<PhaseCheck>, OffloadError> {
    // The one-shot SGEMM and Monte Carlo calls copy the caller's pageable memory (module doc).
    let residency = if kernel.starts_with("sgemm") || kernel == "monte_carlo" {
        Residency::Pageable
    } else {
        Residency::Host
    };
    let b = model.predict(kernel, n as f64, residency, 0.0)?;
    let reps = reps.max(1) | 1;
    let contract = mc_contract();
    let mut run: Box<dyn FnMut() -> Result<(crate::PhaseTimes, Duration), OffloadError>> = match kernel {
        "black_scholes" => {
            let mut slot = device.backend().new_slot(6 * n, 6 * n)?;
            black_scholes::stage_words(
                &black_scholes::synthetic_chain(n, 42),
                &mut slot.staging_in()[..6 * n],
            );
            Box::new(move || timed(|| slot.run(&BlackScholes, n, 6 * n, 6 * n, Phases::ALL)))
        }
        "saxpy" => {
            let mut slot = device.backend().new_slot(2 * n, n)?;
            let (x, y) = slot.staging_in()[..2 * n].split_at_mut(n);
            x.fill(1.5f32.to_bits());
            y.fill(0.5f32.to_bits());
            Box::new(move || timed(|| slot.run(&Saxpy { a: 2.0 }, n, 2 * n, n, Phases::ALL)))
        }
        "sgemm" | "sgemm_tf32" | "sgemm_bf16" => {
            use gmprt_kernels::precision::Precision;
            let precision = match kernel {
                "sgemm_tf32" => Precision::Tf32,
                "sgemm_bf16" => Precision::Bf16,
                _ => Precision::Fp32,
            };
            let a: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 * 0.25).collect();
            let mut c = vec![0f32; n * n];
            Box::new(move || timed(|| device.sgemm_with(precision, n, n, n, &a, &a, &mut c)))
        }
        "monte_carlo" => Box::new(move || {
            timed(|| device.option_paths_sum(MC_SEED, &contract, (n / 4) as u64).map(|(_, p)| p))
        }),
        other => {
            return Err(OffloadError::Config(format!(
                "verify: unknown kernel `{other}` (one of black_scholes, saxpy, sgemm, monte_carlo)"
            )))
        }
    };
    run()?; // warm-up: first-use costs are not what the model prices
    let mut runs = Vec::with_capacity(reps);
    for _ in 0..reps {
        runs.push(run()?);
    }
    drop(run);
    let median = |f: &dyn Fn(&(crate::PhaseTimes, Duration)) -> Duration| {
        middle(runs.iter().map(|r| f(r).as_secs_f64()).collect())
    };
    let procs = model.profile.procs.max(1);
    let rt = Runtime::builder()
        .procs(procs)
        .build()
        .map_err(|e| OffloadError::Config(format!("verify: cannot build a {procs}-P runtime: {e}")))?;
    // The CPU side of a tensor-core SGEMM is the FP32 GEMM (`sgemm_kernel_name`).
    let cpu_kernel = if kernel.starts_with("sgemm") { "sgemm" } else { kernel };
    let cpu = CpuKernels::new(n, n).time(&rt.handle(), cpu_kernel, n, reps)?;
    let cpu_predicted = b.cpu.iter().find(|(p, _)| *p == procs).or(b.cpu.last()).map_or(0.0, |&(_, s)| s);
    Ok(vec![
        PhaseCheck { phase: "H2D".into(), predicted: b.h2d, measured: median(&|r| r.0.h2d) },
        PhaseCheck { phase: "kernel".into(), predicted: b.kernel_time, measured: median(&|r| r.0.kernel) },
        PhaseCheck { phase: "D2H".into(), predicted: b.d2h, measured: median(&|r| r.0.d2h) },
        PhaseCheck { phase: "GPU total".into(), predicted: b.gpu_total, measured: median(&|r| r.1) },
        PhaseCheck { phase: format!("CPU on {procs} Ps"), predicted: cpu_predicted, measured: cpu },
    ])
}

/// `f`'s phase times with the wall time of the call.
fn timed(
    f: impl FnOnce() -> Result<crate::PhaseTimes, OffloadError>,
) -> Result<(crate::PhaseTimes, Duration), OffloadError> {
    let t = Instant::now();
    let p = f()?;
    Ok((p, t.elapsed()))
}
