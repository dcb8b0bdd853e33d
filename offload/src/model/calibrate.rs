//! [`calibrate`]: measure a [`DeviceProfile`] on the device at hand.
//!
//! What is measured (each point is the median of at least `repeats` runs after one warm-up
//! run, in each of three passes over the series' sizes, and then the median of the passes —
//! `passes` for why):
//! * **launch**: after a warm-up of empty launches for [`WARM_UP`] (quick: [`WARM_UP_QUICK`])
//!   — clocks ramp up, caches and the driver's paths are hot, a GPU leaves its idle power
//!   state — a 1-item launch on a slot, kernel phase only — on Host a no-op [`Job`]
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
//!   (x = paths = 4 per Philox block);
//! * **kernels on the CPU**: the same kernels on 1, 2, 4, … `max_procs` Ps of a fresh gmprt
//!   [`Runtime`], split with `parallel_for` by a task on that runtime ([`CpuKernels`]; SGEMM:
//!   `sgemm_rows` per row block).
//!
//! The kernel fits and `launch_enqueue` are timed on the same kernel-phase clock, so every
//! kernel fit's intercept contains `launch_enqueue`, and `launch_sync` (wall time of launch +
//! synchronize) contains it too: the cost model adds only `launch_sync − launch_enqueue` to a
//! kernel ([`DeviceProfile::launch_overhead`]).
//!
//! Every series is fitted with [`LinFit::fit`] (one to four regimes); the raw samples are kept
//! in the profile, so [`DeviceProfile::refit`] can fit them again.
use super::fit::{LinFit, Sample};
use super::profile::{CpuFit, DeviceProfile, KernelProfile, ProfileSource, Size, TransferProfile};
use crate::backend::{Job, Phases, Slot};
use crate::cuda::{CudaJob, LaunchCtx};
use crate::device::{Device, DeviceKind};
use crate::error::OffloadError;
use crate::jobs::{BlackScholes, Saxpy};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use gmprt_kernels::black_scholes::{self, BsBatch, BsIn, BsOut, Contract};
use gmprt_kernels::cuda::{CALIB, FN_COPY};
use gmprt_kernels::{monte_carlo, saxpy, sgemm};
use gmprt_runtime::{yield_now, Handle, Runtime};
use parking_lot::Mutex;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How much to measure.
#[derive(Clone, Debug)]
pub struct CalibrateOptions {
    /// Largest P count for the CPU fits (default: available parallelism).
    pub max_procs: usize,
    /// Repeats per point (the median is kept).
    pub repeats: usize,
    /// A quick pass (smaller sizes, fewer repeats) for tests.
    pub quick: bool,
}

impl Default for CalibrateOptions {
    /// All host threads, 5 repeats (an odd count, so the median is a sample), full sizes.
    fn default() -> Self {
        CalibrateOptions { max_procs: crate::host::host_threads(), repeats: 5, quick: false }
    }
}

impl CalibrateOptions {
    /// The quick pass on all host threads, 3 repeats.
    pub fn quick() -> Self {
        CalibrateOptions { repeats: 3, quick: true, ..CalibrateOptions::default() }
    }
}

/// Seed of the Monte Carlo paths (any value; fixed so runs are comparable).
const MC_SEED: u64 = 0x5eed;
/// Items per `parallel_for` chunk at least: below this the per-chunk claim is a visible cost.
const MIN_GRAIN: usize = 4096;
/// Chunks per P: a few, so that a P that starts late still gets a share.
const CHUNKS_PER_P: usize = 4;

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
            // Host Monte Carlo spawns a scoped thread per host thread per call (tens of µs, and
            // milliseconds when the machine is loaded): Host starts at 16k paths (~100 µs).
            mc_paths: mc,
            procs,
            reps: if opts.quick { opts.repeats.clamp(1, 5) } else { opts.repeats.max(1) },
            warm_up: if opts.quick { WARM_UP_QUICK } else { WARM_UP },
        }
    }
}

/// Median seconds of at least `reps` calls of `f` (after one warm-up call); `f` returns the
/// time it measured. Short points get more calls, up to [`MAX_REPS`], so that every point
/// samples about [`POINT_BUDGET`] seconds: a median of 5 runs of 20 µs is at the mercy of one
/// scheduler hiccup on a loaded machine, a median of 51 much less so.
fn median(reps: usize, mut f: impl FnMut() -> Result<Duration, OffloadError>) -> Result<f64, OffloadError> {
    let warm = f()?.as_secs_f64();
    let v = (0..calls(reps, warm)).map(|_| f().map(|d| d.as_secs_f64())).collect::<Result<Vec<f64>, _>>()?;
    Ok(middle(v))
}

/// How many timed calls [`median`] makes after a warm-up call that took `warm` seconds: at
/// least `reps`, more for short calls (up to [`MAX_REPS`]), always odd so the median is a
/// sample.
fn calls(reps: usize, warm: f64) -> usize {
    let extra = if warm > 0.0 { (POINT_BUDGET / warm) as usize } else { MAX_REPS };
    reps.max(1).max(extra.min(MAX_REPS) | 1)
}

/// The median of `v` (non-empty).
fn middle(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Measures every size of a series [`PASSES`] times, one pass over all the sizes after the
/// other, and keeps per size the median of its passes: `point(n)` gives `K` figures for size
/// `n` (each usually a [`median`] itself).
///
/// Why passes: the shared VM's speed drifts by up to 40% over seconds (the same Black-Scholes
/// kernel, same process, timed 3.4 and 5.1 ns per option a few seconds apart), and a series
/// measured in one sweep turns such an episode into a false "regime" over the sizes it
/// covered. Spread over passes, an episode spoils one pass of a size, which the median drops.
fn passes<const K: usize>(
    sizes: &[usize],
    mut point: impl FnMut(usize) -> Result<[f64; K], OffloadError>,
) -> Result<Vec<[f64; K]>, OffloadError> {
    let mut runs: Vec<Vec<[f64; K]>> = vec![Vec::with_capacity(PASSES); sizes.len()];
    for _ in 0..PASSES {
        for (i, &n) in sizes.iter().enumerate() {
            runs[i].push(point(n)?);
        }
    }
    Ok(runs.into_iter().map(|r| std::array::from_fn(|k| middle(r.iter().map(|v| v[k]).collect()))).collect())
}

/// One series by [`passes`]: `secs(n)` seconds at size n, as samples at x = `work(n)`.
fn samples(
    sizes: &[usize],
    work: impl Fn(usize) -> f64,
    mut secs: impl FnMut(usize) -> Result<f64, OffloadError>,
) -> Result<Vec<Sample>, OffloadError> {
    let figures = passes(sizes, |n| Ok([secs(n)?]))?;
    Ok(sizes.iter().zip(figures).map(|(&n, [s])| Sample { x: work(n), secs: s }).collect())
}

/// Passes over each series ([`passes`]): three, so that one disturbed pass is outvoted.
const PASSES: usize = 3;

/// Most calls per point ([`median`]).
const MAX_REPS: usize = 51;
/// Seconds of sampling per point that [`median`] aims for when points are short, per pass
/// (8 ms, ×[`PASSES`] = 24 ms a point: a point of ~1 ms gets ~8 calls per pass and ~24 in all,
/// whose median is steady to a few percent on the loaded 2-core VM, where 5 ms in one sweep
/// gave medians of 3-5 calls that moved by 50% from run to run; the full Host calibration
/// stays under 30 seconds).
const POINT_BUDGET: f64 = 8e-3;

/// How long [`calibrate`] launches empty kernels before timing the launch: about a second,
/// long enough for a GPU to leave its idle clocks (and a CPU its power-saving state), and
/// short next to a calibration of tens of seconds.
pub const WARM_UP: Duration = Duration::from_secs(1);
/// The warm-up of a quick calibration (tests): a tenth of [`WARM_UP`].
pub const WARM_UP_QUICK: Duration = Duration::from_millis(100);
/// The profile kernel that holds the device-memory roof (see the module docs).
pub const DEVICE_COPY: &str = "device_copy";

/// Copies `n` words from the slot's device-side input to its device-side output: the
/// device-memory roof (`gmprt_copy` on CUDA, 16 bytes per thread step; `n` a multiple of 4).
struct DeviceCopy;

impl Job for DeviceCopy {
    fn name(&self) -> &'static str {
        DEVICE_COPY
    }
    fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
        output[..n].copy_from_slice(black_box(&input[..n]));
        black_box(&output[..n]);
        Ok(())
    }
}

impl CudaJob for DeviceCopy {
    fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
        if !n.is_multiple_of(4) || n > ctx.input.len() || n > ctx.output.len() {
            return Err(OffloadError::Config(format!(
                "device copy of {n} words: a multiple of 4 up to the slot's {} / {} words",
                ctx.input.len(),
                ctx.output.len()
            )));
        }
        let f = ctx.backend.function(&CALIB, FN_COPY)?;
        let n4 = n / 4;
        // Grid-stride: up to 8 blocks of 256 threads per SM, fewer for small copies.
        let blocks = n4.div_ceil(256).clamp(1, 8 * ctx.backend.sm_count().max(1) as usize) as u32;
        let cfg = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        let src = ctx.input.slice(..n);
        let mut dst = ctx.output.slice_mut(..n);
        let n4_arg = n4;
        let mut b = ctx.stream.launch_builder(&f);
        b.arg(&src).arg(&mut dst).arg(&n4_arg);
        // SAFETY: `gmprt_copy(const float4* src, float4* dst, size_t n4)`: src and dst hold n
        // words = n4 float4s each (checked above), device allocations are 256-byte aligned, the
        // slot's input and output buffers are distinct allocations, and `usize` is `size_t`.
        unsafe { b.launch(cfg) }.map_err(|e| crate::cuda::driver_err("cuLaunchKernel gmprt_copy", e))?;
        Ok(())
    }
}

/// A job that does nothing: the cost of handing a batch to a slot.
struct Noop;

impl Job for Noop {
    fn name(&self) -> &'static str {
        "noop"
    }
    fn run_host(&self, _n: usize, _input: &[u32], _output: &mut [u32]) -> Result<(), String> {
        Ok(())
    }
}

impl CudaJob for Noop {
    fn launch_cuda(&self, _ctx: &mut LaunchCtx<'_>, _n: usize) -> Result<(), OffloadError> {
        Ok(())
    }
}

const KERNEL_ONLY: Phases = Phases { h2d: false, kernel: true, d2h: false };
const H2D_ONLY: Phases = Phases { h2d: true, kernel: false, d2h: false };
const D2H_ONLY: Phases = Phases { h2d: false, kernel: false, d2h: true };

/// Measures launch overhead, H2D/D2H (pinned and pageable), each kernel's device time and its
/// CPU time on 1 … `max_procs` Ps, and fits them. Under a minute on a GPU, under 30 s on Host.
pub fn calibrate(device: &Device, opts: &CalibrateOptions) -> Result<DeviceProfile, OffloadError> {
    let plan = Plan::new(device.kind(), opts);
    let (launch_enqueue, launch_sync) = launch(device, plan.reps, plan.warm_up)?;
    let (h2d, d2h) = copies(device, &plan)?;
    let mut kernels = device_kernels(device, &plan)?;
    cpu_kernels(&plan, &mut kernels)?;
    kernels.push(device_copy(device, &plan)?);
    let (name, driver) = match device.cuda_backend() {
        Some(c) => {
            let v = c.driver_version();
            (c.name().to_string(), format!("{}.{}", v / 1000, (v % 1000) / 10))
        }
        None => ("host".to_string(), "-".to_string()),
    };
    Ok(DeviceProfile {
        device: name,
        kind: device.kind_name().to_string(),
        driver,
        date: utc_date(),
        cpu: format!("{} ({} threads)", cpu_model(), crate::host::host_threads()),
        procs: *plan.procs.last().unwrap_or(&1),
        source: ProfileSource::Measured,
        launch_enqueue,
        launch_sync,
        h2d,
        d2h,
        kernels,
    })
}

/// (enqueue, launch + sync) seconds of a 1-item launch after `warm_up` of launches (see the
/// module docs).
fn launch(device: &Device, reps: usize, warm_up: Duration) -> Result<(f64, f64), OffloadError> {
    let mut slot = device.backend().new_slot(2, 1)?;
    let (noop, sx) = (Noop, Saxpy { a: 1.0 });
    let job: &dyn CudaJob = if device.kind() == DeviceKind::Cuda { &sx } else { &noop };
    slot.run(job, 1, 2, 1, Phases::ALL)?;
    // Each `run` synchronises, so this is a loop of launch + sync until `warm_up` has passed.
    let start = Instant::now();
    while start.elapsed() < warm_up {
        slot.run(job, 1, 2, 1, KERNEL_ONLY)?;
    }
    // More repeats than elsewhere: each is microseconds, and the median of few is noisy.
    let reps = reps.max(1) * 20;
    let enqueue = median(reps, || Ok(slot.run(job, 1, 2, 1, KERNEL_ONLY)?.kernel))?;
    let sync = median(reps, || {
        let t = Instant::now();
        slot.run(job, 1, 2, 1, KERNEL_ONLY)?;
        Ok(t.elapsed())
    })?;
    Ok((enqueue, sync))
}

/// H2D and D2H transfer profiles.
fn copies(device: &Device, plan: &Plan) -> Result<(TransferProfile, TransferProfile), OffloadError> {
    let max_words = plan.copy_bytes.iter().max().copied().unwrap_or(4) / 4;
    let mut slot = device.backend().new_slot(max_words, max_words)?;
    let src = vec![1u32; max_words];
    let mut dst = vec![0u32; max_words];
    dst.fill(2); // touch the pages before timing
    let mut c = vec![0f32; max_words];
    let figures = passes(&plan.copy_bytes, |bytes| {
        let w = bytes / 4;
        let h2d = median(plan.reps, || Ok(slot.run(&Noop, 1, w, w, H2D_ONLY)?.h2d))?;
        let d2h = median(plan.reps, || Ok(slot.run(&Noop, 1, w, w, D2H_ONLY)?.d2h))?;
        let (h2d_pageable, d2h_pageable) = match device.kind() {
            DeviceKind::Cuda => {
                // An m×1 by 1×1 product: A (m floats) goes up and C (m floats) comes down,
                // both from pageable Vecs (B, 4 bytes, adds one tiny copy to the upload).
                let a: &[f32] = bytemuck::cast_slice(&src[..w]);
                let b = [1.0f32];
                device.sgemm(w, 1, 1, a, &b, &mut c[..w])?;
                let times = (0..plan.reps)
                    .map(|_| device.sgemm(w, 1, 1, a, &b, &mut c[..w]))
                    .collect::<Result<Vec<_>, _>>()?;
                let med = |f: fn(&crate::PhaseTimes) -> Duration| {
                    middle(times.iter().map(|t| f(t).as_secs_f64()).collect())
                };
                (med(|t| t.h2d), med(|t| t.d2h))
            }
            _ => {
                let mut memcpy = || {
                    let t = Instant::now();
                    dst[..w].copy_from_slice(black_box(&src[..w]));
                    black_box(&dst);
                    Ok(t.elapsed())
                };
                (median(plan.reps, &mut memcpy)?, median(plan.reps, &mut memcpy)?)
            }
        };
        Ok([h2d, d2h, h2d_pageable, d2h_pageable])
    })?;
    let series = |k: usize| -> Vec<Sample> {
        plan.copy_bytes.iter().zip(&figures).map(|(&b, f)| Sample { x: b as f64, secs: f[k] }).collect()
    };
    let (hp, dp, hg, dg) = (series(0), series(1), series(2), series(3));
    let tp = |pinned: Vec<Sample>, pageable: Vec<Sample>| TransferProfile {
        pinned: LinFit::fit(&pinned),
        pageable: LinFit::fit(&pageable),
        pinned_samples: pinned,
        pageable_samples: pageable,
    };
    Ok((tp(hp, hg), tp(dp, dg)))
}

/// The device-memory roof: the copy kernel ([`DeviceCopy`]) over the plan's copy sizes,
/// kernel phase only (the data is uploaded once, untimed), x = bytes copied.
fn device_copy(device: &Device, plan: &Plan) -> Result<KernelProfile, OffloadError> {
    let max_words = plan.copy_bytes.iter().max().copied().unwrap_or(16) / 4;
    let mut slot = device.backend().new_slot(max_words, max_words)?;
    slot.staging_in().fill(3);
    slot.run(&DeviceCopy, max_words, max_words, max_words, H2D_ONLY)?;
    let s = samples(
        &plan.copy_bytes,
        |b| b as f64,
        |b| {
            let w = b / 4;
            median(plan.reps, || Ok(slot.run(&DeviceCopy, w, w, w, KERNEL_ONLY)?.kernel))
        },
    )?;
    Ok(kernel(DEVICE_COPY, "bytes", Size::Items { in_bytes: 1.0, out_bytes: 1.0, out_fixed: 0.0 }, s))
}

/// A profile entry with its device fit and no CPU fits yet.
fn kernel(name: &str, unit: &str, size: Size, samples: Vec<Sample>) -> KernelProfile {
    KernelProfile {
        name: name.into(),
        unit: unit.into(),
        size,
        device: LinFit::fit(&samples),
        device_samples: samples,
        cpu: vec![],
    }
}

/// The contract whose paths calibration times Monte Carlo with: an at-the-money one-year call
/// (the cost per path does not depend on it; a fixed one keeps runs comparable).
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

/// Kernel phase of `job` over `n` items already uploaded to `slot`.
fn slot_kernel(
    slot: &mut dyn Slot,
    job: &dyn CudaJob,
    n: usize,
    (iw, ow): (usize, usize),
    reps: usize,
) -> Result<f64, OffloadError> {
    slot.run(job, n, iw, ow, H2D_ONLY)?;
    median(reps, || Ok(slot.run(job, n, iw, ow, KERNEL_ONLY)?.kernel))
}

/// Device-time fits of the four kernels.
fn device_kernels(device: &Device, plan: &Plan) -> Result<Vec<KernelProfile>, OffloadError> {
    let reps = plan.reps;
    // Black-Scholes: 6 words in, 6 out per option.
    let nmax = plan.bs.iter().max().copied().unwrap_or(1);
    let chain = black_scholes::synthetic_chain(nmax, 42);
    let mut slot = device.backend().new_slot(6 * nmax, 6 * nmax)?;
    let bs = samples(
        &plan.bs,
        |n| n as f64,
        |n| {
            black_scholes::stage_words(&chain[..n], &mut slot.staging_in()[..6 * n]);
            slot_kernel(&mut *slot, &BlackScholes, n, (6 * n, 6 * n), reps)
        },
    )?;
    drop(slot);
    // SAXPY: x then y in, a·x + y out.
    let nmax = plan.saxpy.iter().max().copied().unwrap_or(1);
    let mut slot = device.backend().new_slot(2 * nmax, nmax)?;
    let sx = samples(
        &plan.saxpy,
        |n| n as f64,
        |n| {
            let (x, y) = slot.staging_in()[..2 * n].split_at_mut(n);
            x.fill(1.5f32.to_bits());
            y.fill(0.5f32.to_bits());
            slot_kernel(&mut *slot, &Saxpy { a: 2.0 }, n, (2 * n, n), reps)
        },
    )?;
    drop(slot);
    // SGEMM: square N, x = 2N³ flops.
    let mm = samples(
        &plan.sgemm,
        |n| 2.0 * (n as f64).powi(3),
        |n| {
            let a: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 * 0.25).collect();
            let mut c = vec![0f32; n * n];
            median(reps, || Ok(device.sgemm(n, n, n, &a, &a, &mut c)?.kernel))
        },
    )?;
    // Monte Carlo: 4 paths per Philox block.
    let contract = mc_contract();
    let mc = samples(
        &plan.mc_paths,
        |n| n as f64,
        |paths| {
            let blocks = (paths / 4) as u64;
            median(reps, || Ok(device.option_paths_sum(MC_SEED, &contract, blocks)?.1.kernel))
        },
    )?;
    let bytes = |i: usize, o: usize| Size::Items {
        in_bytes: 4.0 * i as f64,
        out_bytes: 4.0 * o as f64,
        out_fixed: 0.0,
    };
    Ok(vec![
        kernel("black_scholes", "options", bytes(6, 6), bs),
        kernel("saxpy", "elements", bytes(2, 1), sx),
        kernel("sgemm", "N (matrix side)", Size::MatrixN, mm),
        kernel("monte_carlo", "paths", Size::Items { in_bytes: 0.0, out_bytes: 0.0, out_fixed: 16.0 }, mc),
    ])
}

/// Per-chunk output buffers of `len` floats each, one lock per chunk (uncontended: each chunk
/// is claimed once), so `parallel_for`'s shared closure can write disjoint outputs safely.
fn chunk_bufs(chunks: usize, len: usize) -> Vec<Mutex<Vec<f32>>> {
    (0..chunks).map(|_| Mutex::new(vec![1.0f32; len])).collect()
}

/// The chunk size for `n` items on `p` Ps.
fn grain(n: usize, p: usize) -> usize {
    n.div_ceil(CHUNKS_PER_P * p).max(MIN_GRAIN)
}

/// Times one `parallel_for` (wall clock).
fn timed(h: &Handle, len: usize, grain: usize, f: impl Fn(std::ops::Range<usize>) + Sync) -> Duration {
    let t = Instant::now();
    h.parallel_for(len, grain, f);
    t.elapsed()
}

/// The four kernels on the CPU, timed the way [`calibrate`] times them: by a task on the
/// runtime (so the caller is an M and runs chunks itself, as a Go program's goroutine would),
/// split over the Ps with `parallel_for` (about four chunks per P, each at least
/// 4096 items; SGEMM by row blocks through `sgemm_rows`), from inputs made once.
///
/// Timing inside a task matters on a VM: a `parallel_for` called from outside the runtime
/// waits for an M to wake and then is woken itself, and waking a halted virtual CPU costs
/// 5-100 µs on the dev VM depending on whether it was idle long enough to halt — a bimodal
/// latency that no fit can predict. On an M the caller starts on the chunks at once; a helper
/// that wakes late finds nothing left.
///
/// Public so that a benchmark can check the model's CPU predictions against fresh runs of
/// exactly what was calibrated.
pub struct CpuKernels {
    inputs: Arc<CpuInputs>,
}

/// What [`CpuKernels`] computes on.
struct CpuInputs {
    bs: BsBatch,
    xs: Vec<f32>,
    contract: Contract,
}

/// Kernels [`CpuKernels::time`] knows.
const CPU_KERNELS: [&str; 4] = ["black_scholes", "saxpy", "sgemm", "monte_carlo"];

impl CpuKernels {
    /// Inputs for up to `max_options` Black-Scholes options and `max_elements` SAXPY elements
    /// (Monte Carlo and SGEMM make theirs per call).
    pub fn new(max_options: usize, max_elements: usize) -> CpuKernels {
        CpuKernels {
            inputs: Arc::new(CpuInputs {
                bs: BsBatch::from_contracts(&black_scholes::synthetic_chain(max_options.max(1), 42)),
                xs: vec![1.5f32; max_elements.max(1)],
                contract: mc_contract(),
            }),
        }
    }

    /// Median wall-clock seconds of `kernel` (`black_scholes`, `saxpy`, `sgemm`, `monte_carlo`)
    /// at size `n` (items; the matrix side for SGEMM; paths for Monte Carlo) on `h`'s Ps,
    /// timed by one task on `h` (see the type's docs); blocks the calling thread, which must
    /// not be an M. Errors: an unknown kernel, more items than [`CpuKernels::new`] was made
    /// for, or a runtime that is shutting down.
    pub fn time(&self, h: &Handle, kernel: &str, n: usize, reps: usize) -> Result<f64, OffloadError> {
        let Some(&kernel) = CPU_KERNELS.iter().find(|&&k| k == kernel) else {
            return Err(OffloadError::Config(format!(
                "CpuKernels::time: unknown kernel `{kernel}` (one of {})",
                CPU_KERNELS.join(", ")
            )));
        };
        let cap = match kernel {
            "black_scholes" => self.inputs.bs.len(),
            "saxpy" => self.inputs.xs.len(),
            _ => usize::MAX,
        };
        if n > cap {
            return Err(OffloadError::Config(format!(
                "CpuKernels::time: {kernel} of {n} items, but this CpuKernels was made for at most {cap}"
            )));
        }
        let inputs = self.inputs.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        h.try_spawn(async move {
            let h = Handle::try_current().expect("a task runs inside its runtime");
            let run = inputs.prepare(&h, kernel, n);
            let warm = run().as_secs_f64();
            let mut v = vec![];
            for _ in 0..calls(reps, warm) {
                // One run per poll: the P is given back to the scheduler between runs.
                yield_now().await;
                v.push(run().as_secs_f64());
            }
            // The receiver waits for exactly this message; it cannot be gone.
            let _ = tx.send(middle(v));
        })
        .map_err(|e| OffloadError::Config(format!("CpuKernels::time: cannot spawn the timing task: {e}")))?;
        rx.recv().map_err(|_| {
            OffloadError::Config("CpuKernels::time: the runtime dropped the timing task (shut down?)".into())
        })
    }
}

impl CpuInputs {
    /// Makes the buffers for `kernel` at `n` on `h`'s Ps once, and returns one timed run: a
    /// `parallel_for` from the calling task, its wall time (the buffers are reused run after
    /// run, so no timed run pays for allocating or filling them).
    fn prepare<'a>(&'a self, h: &'a Handle, kernel: &str, n: usize) -> Box<dyn Fn() -> Duration + Send + 'a> {
        let p = h.procs().max(1);
        match kernel {
            "black_scholes" => {
                let input = self.bs.as_in();
                let g = grain(n, p);
                let bufs = chunk_bufs(n.div_ceil(g), 6 * g);
                Box::new(move || {
                    timed(h, n, g, |r| {
                        let mut buf = bufs[r.start / g].lock();
                        let m = r.len();
                        let (price, rest) = buf[..6 * m].split_at_mut(m);
                        let (delta, rest) = rest.split_at_mut(m);
                        let (gamma, rest) = rest.split_at_mut(m);
                        let (vega, rest) = rest.split_at_mut(m);
                        let (theta, rho) = rest.split_at_mut(m);
                        let sub = BsIn {
                            spot: &input.spot[r.clone()],
                            strike: &input.strike[r.clone()],
                            t: &input.t[r.clone()],
                            rate: &input.rate[r.clone()],
                            vol: &input.vol[r.clone()],
                            kind: &input.kind[r.clone()],
                        };
                        let mut out = BsOut { price, delta, gamma, vega, theta, rho };
                        black_box(black_scholes::price_greeks(&sub, &mut out)).ok();
                    })
                })
            }
            "saxpy" => {
                let g = grain(n, p);
                let bufs = chunk_bufs(n.div_ceil(g), g);
                Box::new(move || {
                    timed(h, n, g, |r| {
                        let mut y = bufs[r.start / g].lock();
                        black_box(saxpy::saxpy(0.5, &self.xs[r.clone()], &mut y[..r.len()])).ok();
                    })
                })
            }
            "sgemm" => {
                let a: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 * 0.25).collect();
                // Row blocks: at least 8 rows (one register tile's worth), a few per P.
                let g = n.div_ceil(CHUNKS_PER_P * p).max(8);
                let bufs = chunk_bufs(n.div_ceil(g), g * n);
                Box::new(move || {
                    timed(h, n, g, |r| {
                        let mut c = bufs[r.start / g].lock();
                        let rows = r.len();
                        black_box(sgemm::sgemm_rows(n, n, n, &a, &a, r, &mut c[..rows * n])).ok();
                    })
                })
            }
            _ => {
                let blocks = n / 4;
                let g = grain(blocks, p).min(blocks.max(1)); // blocks: a chunk of 4096 is 16k paths
                Box::new(move || {
                    timed(h, blocks, g, |r| {
                        black_box(monte_carlo::option_paths_sum(
                            MC_SEED,
                            &self.contract,
                            r.start as u64,
                            r.len() as u64,
                        ));
                    })
                })
            }
        }
    }
}

/// CPU fits of the four kernels (in `kernels`' order) on each P count of the plan.
fn cpu_kernels(plan: &Plan, kernels: &mut [KernelProfile]) -> Result<(), OffloadError> {
    let max = |sizes: &[usize]| sizes.iter().max().copied().unwrap_or(1);
    let cpu = CpuKernels::new(max(&plan.bs), max(&plan.saxpy));
    for &p in &plan.procs {
        let rt = Runtime::builder()
            .procs(p)
            .build()
            .map_err(|e| OffloadError::Config(format!("calibrate: cannot build a {p}-P runtime: {e}")))?;
        let h = rt.handle();
        let sizes: [(&str, &[usize]); 4] = [
            ("black_scholes", &plan.bs),
            ("saxpy", &plan.saxpy),
            ("sgemm", &plan.sgemm),
            ("monte_carlo", &plan.mc_paths),
        ];
        for (k, (name, ns)) in kernels.iter_mut().zip(sizes) {
            debug_assert_eq!(k.name, name);
            let size = k.size;
            let samples = samples(ns, |n| size.work(n as f64), |n| cpu.time(&h, name, n, plan.reps))?;
            k.cpu.push(CpuFit { procs: p, fit: LinFit::fit(&samples), samples });
        }
        drop(rt);
    }
    Ok(())
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
