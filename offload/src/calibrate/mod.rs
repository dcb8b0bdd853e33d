//! [`calibrate()`]: measure a [`DeviceProfile`] on the device at hand.
//!
//! This is the one part of the cost model that runs things — devices, slots, a gmprt
//! [`Runtime`] — so it lives here, outside [`crate::model`], which stays a leaf of fits,
//! profiles and predictions. Files: this one (options, the plan of sizes, [`calibrate()`],
//! the profile's header), `measure` (the statistics of one point and the device-side series)
//! and `cpu` (the kernels on 1 … `max_procs` Ps, [`CpuKernels`]).
//!
//! What is measured (each point is the median of at least `repeats` runs after one warm-up
//! run, in each of three passes over the series' sizes, and then the median of the passes —
//! `passes` for why):
//! * **launch**: after a warm-up of empty launches for [`WARM_UP`] (quick: [`WARM_UP_QUICK`])
//!   — clocks ramp up, caches and the driver's paths are hot, a GPU leaves its idle power
//!   state — a 1-item launch on a slot, kernel phase only — on Host a no-op [`Job`](crate::Job)
//!   handed to `Slot::run` (`launch_enqueue` = the slot's own kernel-phase clock, `launch_sync`
//!   = the wall time of the whole `run` call); on CUDA a 1-element SAXPY (`launch_enqueue` =
//!   its event-timed device duration, `launch_sync` = the wall time of launch + wait);
//! * **copies**: H2D and D2H of 4 KiB … 64 MiB (Host: … 128 MiB, ×2 steps; quick: … 4 MiB)
//!   through a slot's staging buffers (pinned on CUDA) and from plain `Vec`s (pageable: on
//!   Host a timed `memcpy`, on CUDA a `m×1·1×1` SGEMM whose upload and download are pageable
//!   copies);
//! * **device-memory roof**: the device-to-device copy kernel (`gmprt_copy` of
//!   [`CALIB`]; on Host a `memcpy` between the slot's device-side buffers) over the copy
//!   sizes, kernel phase only, x = bytes copied (each read once and written once) — stored as
//!   the profile kernel [`DEVICE_COPY`] (unit `bytes`, no CPU fits), so profiles without it
//!   (older or published ones) still load; [`DeviceProfile::device_copy`] finds it;
//! * **kernels on the device**: Black-Scholes and SAXPY through a slot (upload untimed, kernel
//!   phase timed, as `Device::run_bulk(.., resident = true)` does), SGEMM through
//!   `Device::sgemm` (x = 2N³ flops), Monte Carlo through `Device::option_paths_sum`
//!   (x = paths = 4 per Philox block); on CUDA also SGEMM on the tensor cores,
//!   `sgemm_tf32` and `sgemm_bf16` (`Device::sgemm_with`), whose CPU side is FP32's;
//! * **mapped I/O** (CUDA): Black-Scholes and SAXPY as whole runs of 1 item up to the most
//!   that fit in `cuda::MAPPED_IO_MAX_BYTES`, which a slot runs without copies (the kernel
//!   reads and writes the pinned staging across PCIe) — each run's one span, the crossings
//!   included, against n, into `KernelProfile::mapped`, which the cost model prices such
//!   batches by; none when the slot copied (`GMPRT_CUDA_MAPPED_IO=off`);
//! * **kernels on the CPU**: the same kernels on 1, 2, 4, … `max_procs` Ps of a fresh gmprt
//!   [`Runtime`], split with `parallel_for` ([`CpuKernels`]; SGEMM: `sgemm_rows` per row
//!   block), twice: *as called* — from a thread outside the runtime once its Ps have parked,
//!   on operands evicted from every cache (`cold`), the way a program calls them — into the
//!   fits the cost model prices (`KernelProfile::cpu`, the profile's `cpu_timing` says so);
//!   and *cache-resident* — by a task on the runtime, same buffers every run — into a
//!   separate, labelled line (`KernelProfile::cpu_resident`), the best case. The first H200
//!   run, which had only the second, predicted the CPU 1.7-2.9× too fast (issue 27, item 5).
//!
//! The kernel fits and `launch_enqueue` are timed on the same kernel-phase clock, so every
//! kernel fit's intercept contains `launch_enqueue`, and `launch_sync` (wall time of launch +
//! synchronize) contains it too: the cost model adds only `launch_sync − launch_enqueue` to a
//! kernel ([`DeviceProfile::launch_overhead`]).
//!
//! Every series stops before its first size whose one run would take more than [`MAX_RUN`]
//! (0.2 s; at least four sizes are kept): past it a kernel is deep in its large-size regime,
//! which the fit extrapolates.
//!
//! Every series is fitted with [`LinFit::fit`] (one to four regimes); the raw samples are kept
//! in the profile, so [`DeviceProfile::refit`] can fit them again.
use crate::device::{Device, DeviceKind};
use crate::error::OffloadError;
#[cfg(doc)]
use crate::model::LinFit;
use crate::model::{DeviceProfile, ProfileSource};
use gmprt_kernels::black_scholes::{self, Contract};
#[cfg(doc)]
use gmprt_kernels::cuda::CALIB;
#[cfg(doc)]
use gmprt_runtime::Runtime;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod cold;
mod cpu;
mod measure;
mod verify;

use cpu::cpu_kernels;
pub use measure::MAX_RUN;
use measure::{copies, device_copy, device_kernels, launch, tensor_core_sgemms};

pub use crate::model::DEVICE_COPY;
pub use cpu::CpuKernels;
pub use verify::{verify, PhaseCheck, MIN_CHECKED, TOLERANCE};

/// How much to measure.
///
/// ```
/// use gmprt_offload::calibrate::CalibrateOptions;
///
/// let full = CalibrateOptions::default();
/// assert_eq!((full.max_procs, full.repeats, full.quick), (gmprt_offload::pool::host_threads(), 5, false));
/// assert!(!full.progress);
/// // A quick pass with CPU fits on 1 and 2 Ps.
/// let opts = CalibrateOptions { max_procs: 2, ..CalibrateOptions::quick() };
/// assert!(opts.quick && opts.repeats == 3);
/// ```
#[derive(Clone, Debug)]
pub struct CalibrateOptions {
    /// Largest P count for the CPU fits (default: available parallelism).
    pub max_procs: usize,
    /// Repeats per point (the median is kept).
    pub repeats: usize,
    /// A quick pass (smaller sizes, fewer repeats) for tests.
    pub quick: bool,
    /// Print a line to stderr as each part starts, with the seconds so far (`explain` does: a
    /// full calibration on a GPU machine takes minutes, and a run cut short by a time limit
    /// then shows where it was).
    pub progress: bool,
}

impl Default for CalibrateOptions {
    /// All host threads, 5 repeats (an odd count, so the median is a sample), full sizes.
    fn default() -> Self {
        CalibrateOptions { max_procs: crate::pool::host_threads(), repeats: 5, quick: false, progress: false }
    }
}

impl CalibrateOptions {
    /// The quick pass on all host threads, 3 repeats.
    ///
    /// ```
    /// use gmprt_offload::calibrate::CalibrateOptions;
    /// let q = CalibrateOptions::quick();
    /// assert!(q.quick && q.repeats == 3);
    /// assert_eq!(q.max_procs, CalibrateOptions::default().max_procs);
    /// ```
    pub fn quick() -> Self {
        CalibrateOptions { repeats: 3, quick: true, ..CalibrateOptions::default() }
    }
}

/// Seed of the Monte Carlo paths (any value; fixed so runs are comparable).
const MC_SEED: u64 = 0x5eed;
/// `[lo, lo·step, …] ≤ hi`.
fn geometric(lo: usize, hi: usize, step: usize) -> Vec<usize> {
    std::iter::successors(Some(lo), |&x| Some(x * step)).take_while(|&x| x <= hi).collect()
}

/// The sizes of one calibration.
struct Plan {
    copy_bytes: Vec<usize>,
    bs: Vec<usize>,
    saxpy: Vec<usize>,
    sgemm: Vec<usize>,
    mc_paths: Vec<usize>,
    procs: Vec<usize>,
    reps: usize,
    /// How long to warm the device up before timing launches.
    warm_up: Duration,
}

impl Plan {
    fn new(kind: DeviceKind, opts: &CalibrateOptions) -> Plan {
        let cuda = kind == DeviceKind::Cuda;
        let max_procs = opts.max_procs.max(1);
        let mut procs = geometric(1, max_procs, 2);
        if procs.last() != Some(&max_procs) {
            procs.push(max_procs);
        }
        const KI: usize = 1024;
        const MI: usize = 1024 * 1024;
        // Quick: sizes up to a few million items (milliseconds on one core), enough for both
        // regimes; full: up to the sizes the issue asks for (4M options, 64 MiB copies). Host
        // item kernels start at 8k, just below the 10k from which the model is held to ±25%:
        // below that a multi-P `parallel_for` is mostly its fork/join latency (20-70 µs on a
        // loaded 2-core VM, varying run to run). Points are a factor 2 apart on Host so that
        // each regime (in cache, from DRAM: see `fit`) gets several, and SAXPY — whose two
        // regimes differ most (0.13 ns per element up to 64k elements, 0.55 ns from 1M on, on
        // the dev VM) — spans both.
        let (copy_hi, bs, mm, mc, saxpy) = match (opts.quick, cuda) {
            (true, false) => (
                4 * MI,
                geometric(8 * KI, MI, 2),
                vec![32, 48, 64, 96, 128, 192, 256],
                geometric(16 * KI, 4 * MI, 2),
                geometric(8 * KI, 8 * MI, 2),
            ),
            // Full Host: copies and SAXPY go a factor 4 past the size where the dev VM's
            // last-level cache gives out (32 MiB copies, 8M SAXPY elements = 96 MiB), so that
            // the DRAM regime has the three samples a regime needs (`fit::MIN_RUN`).
            (false, false) => (
                128 * MI,
                geometric(8 * KI, 4 * MI, 2),
                vec![64, 96, 128, 192, 256, 384, 512, 768, 1024],
                geometric(16 * KI, 4 * MI, 2),
                geometric(8 * KI, 64 * MI, 2),
            ),
            (_, true) => (
                64 * MI,
                geometric(KI, 4 * MI, 4),
                vec![64, 128, 256, 512, 1024, 2048, 4096],
                geometric(4 * KI, 64 * MI, 4),
                geometric(KI, 16 * MI, 4),
            ),
        };
        Plan {
            // Host copies change speed at each cache level: points a factor 2 apart give each
            // level several; a GPU's PCIe copies have one regime, ×4 is enough there.
            copy_bytes: geometric(4 * KI, copy_hi, if cuda { 4 } else { 2 }),
            bs,
            saxpy,
            sgemm: mm,
            // Host Monte Carlo hands a part per host thread to the host pool per call (a wake-up
            // each; it used to start a thread each, tens of µs and milliseconds under load):
            // Host starts at 16k paths (~100 µs).
            mc_paths: mc,
            procs,
            reps: if opts.quick { opts.repeats.clamp(1, 5) } else { opts.repeats.max(1) },
            warm_up: if opts.quick { WARM_UP_QUICK } else { WARM_UP },
        }
    }
}

/// How long [`calibrate`] launches empty kernels before timing the launch: about a second,
/// long enough for a GPU to leave its idle clocks (and a CPU its power-saving state), and
/// short next to a calibration of tens of seconds.
pub const WARM_UP: Duration = Duration::from_secs(1);
/// The warm-up of a quick calibration (tests): a tenth of [`WARM_UP`].
///
/// ```
/// use gmprt_offload::calibrate::{WARM_UP, WARM_UP_QUICK};
/// assert_eq!(WARM_UP_QUICK * 10, WARM_UP);
/// ```
pub const WARM_UP_QUICK: Duration = Duration::from_millis(100);
/// Measures launch overhead, H2D/D2H (pinned and pageable), each kernel's device time and its
/// CPU time on 1 … `max_procs` Ps, and fits them. About 30 s on Host on the 2-core dev VM.
/// Each series stops growing before a run would pass [`MAX_RUN`]: without that cap the CPU
/// side's largest SGEMMs and Monte Carlo runs on few Ps made the full calibration on the
/// 16-core H200 machine run past 4 minutes (2026-11-27), longer than its stage allows.
///
/// ```no_run
/// // Not run as a doctest: even a quick calibration measures for seconds (far longer in a
/// // debug build); `offload/tests/model/live.rs` runs a quick Host one. No GPU is needed.
/// use gmprt_offload::calibrate::{calibrate, CalibrateOptions};
/// use gmprt_offload::model::{CostModel, ProfileSource};
/// use gmprt_offload::Device;
///
/// let opts = CalibrateOptions { max_procs: 2, ..CalibrateOptions::quick() };
/// let profile = calibrate(&Device::host(), &opts).unwrap();
/// assert_eq!((profile.kind.as_str(), profile.procs), ("host", 2));
/// assert_eq!(profile.source, ProfileSource::Measured);
/// // Every kernel the cost model prices, with CPU fits on 1 and 2 Ps.
/// for name in ["black_scholes", "saxpy", "sgemm", "monte_carlo"] {
///     let k = profile.kernel(name).unwrap();
///     assert_eq!(k.cpu.iter().map(|c| c.procs).collect::<Vec<_>>(), [1, 2]);
/// }
/// assert!(profile.device_copy().is_some());
/// let _model = CostModel::new(profile);
/// ```
pub fn calibrate(device: &Device, opts: &CalibrateOptions) -> Result<DeviceProfile, OffloadError> {
    let plan = Plan::new(device.kind(), opts);
    let t0 = std::time::Instant::now();
    let progress = |what: &str| {
        if opts.progress {
            eprintln!("calibrate: {what} ({:.0} s)", t0.elapsed().as_secs_f64());
        }
    };
    progress("launch");
    let (launch_enqueue, launch_sync) = launch(device, plan.reps, plan.warm_up)?;
    progress("copies");
    let (h2d, d2h) = copies(device, &plan)?;
    progress("kernels on the device");
    let mut kernels = device_kernels(device, &plan)?;
    cpu_kernels(&plan, &mut kernels, &progress)?;
    let fp32 = kernels.iter().find(|k| k.name == "sgemm").expect("device_kernels measures sgemm").clone();
    progress("tensor-core SGEMMs");
    kernels.extend(tensor_core_sgemms(device, &plan, &fp32)?);
    progress("device-memory roof");
    kernels.push(device_copy(device, &plan)?);
    progress("launch round trips");
    let (name, driver) = match device.cuda_backend() {
        Some(c) => {
            let v = c.driver_version();
            (c.name().to_string(), format!("{}.{}", v / 1000, (v % 1000) / 10))
        }
        None => ("host".to_string(), "-".to_string()),
    };
    // The driver's floors beside the slots' own round trip (1,000 launches: the CUDA test's
    // count, tens of ms).
    // Not fatal: switching the context's flags needs CUDA >= 12.1; without the floors the
    // profile is still whole (the field stays empty, and the reason is printed).
    let launch_round_trip = device.cuda_backend().and_then(|c| match c.launch_costs(1000) {
        Ok(l) => Some(crate::model::LaunchRoundTrip {
            spin: l.launch_sync_spin.as_secs_f64(),
            blocking: l.launch_sync_blocking.as_secs_f64(),
            sync_mode: l.sync_mode.name().to_string(),
        }),
        Err(e) => {
            eprintln!("calibrate: the driver's launch + sync floors were not measured: {e}");
            None
        }
    });
    progress("done");
    Ok(DeviceProfile {
        device: name,
        kind: device.kind_name().to_string(),
        driver,
        date: utc_date(),
        cpu: format!("{} ({} threads)", cpu_model(), crate::pool::host_threads()),
        procs: *plan.procs.last().unwrap_or(&1),
        source: ProfileSource::Measured,
        launch_enqueue,
        launch_sync,
        h2d,
        d2h,
        kernels,
        cpu_timing: crate::model::CpuTiming::AsCalled,
        launch_round_trip,
    })
}

/// The contract whose paths calibration times Monte Carlo with: an at-the-money one-year call
/// (the cost per path does not depend on it; a fixed one keeps runs comparable).
///
/// ```
/// let c = gmprt_offload::calibrate::mc_contract();
/// assert_eq!((c.spot, c.strike, c.t), (100.0, 100.0, 1.0));
/// ```
pub fn mc_contract() -> Contract {
    Contract {
        spot: 100.0,
        strike: 100.0,
        t: 1.0,
        rate: 0.03,
        vol: 0.2,
        kind: black_scholes::OptionKind::Call,
    }
}

/// Today's UTC date, `YYYY-MM-DD` (RFC 3339 full-date), from the system clock.
fn utc_date() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (H. Hinnant's `civil_from_days`: 400-year eras of 146 097 days, years starting in March).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468; // days from 0000-03-01 to 1970-01-01
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March = 0
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The CPU's model name from `/proc/cpuinfo`, or `unknown CPU`.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string())
}

#[cfg(test)]
mod tests {
    use super::civil_from_days;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_414), (2025, 11, 22));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }
}
