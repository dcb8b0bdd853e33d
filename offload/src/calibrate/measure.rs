//! The device side of a calibration: how one point is measured ([`median`], [`passes`]), the
//! two calibration jobs ([`DeviceCopy`], [`Noop`]) and the series measured through a slot or a
//! bulk helper — launch, copies, the device-memory roof and the four kernels.
//!
//! The statistics are shared with `cpu`: every series of a calibration, device or CPU, is
//! measured in [`PASSES`] passes of [`median`]s.
use super::{mc_contract, Plan, DEVICE_COPY, MC_SEED};
use crate::backend::{Phases, Slot};
use crate::cuda::{CudaJob, LaunchCtx};
use crate::device::{Device, DeviceKind};
use crate::error::OffloadError;
use crate::job::Job;
use crate::jobs::{BlackScholes, Saxpy};
use crate::model::{KernelProfile, LinFit, MappedFit, Sample, Size, TransferProfile};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use gmprt_kernels::black_scholes;
use gmprt_kernels::cuda::{CALIB, FN_COPY};
use std::hint::black_box;
use std::time::{Duration, Instant};

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
pub(super) fn calls(reps: usize, warm: f64) -> usize {
    let extra = if warm > 0.0 { (POINT_BUDGET / warm) as usize } else { MAX_REPS };
    reps.max(1).max(extra.min(MAX_REPS) | 1)
}

/// The median of `v` (non-empty).
pub(super) fn middle(mut v: Vec<f64>) -> f64 {
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
    let first = sizes.iter().map(|&n| point(n)).collect::<Result<Vec<_>, _>>()?;
    later_passes(sizes, first, point)
}

/// The passes after the first, which the caller made (`first[i]` is size `i`'s), and the
/// median per size of all [`PASSES`].
fn later_passes<const K: usize>(
    sizes: &[usize],
    first: Vec<[f64; K]>,
    mut point: impl FnMut(usize) -> Result<[f64; K], OffloadError>,
) -> Result<Vec<[f64; K]>, OffloadError> {
    debug_assert_eq!(first.len(), sizes.len(), "one first-pass figure per size");
    let mut runs: Vec<Vec<[f64; K]>> = first
        .into_iter()
        .map(|f| {
            let mut r = Vec::with_capacity(PASSES);
            r.push(f);
            r
        })
        .collect();
    for _ in 1..PASSES {
        for (i, &n) in sizes.iter().enumerate() {
            runs[i].push(point(n)?);
        }
    }
    Ok(runs.into_iter().map(|r| std::array::from_fn(|k| middle(r.iter().map(|v| v[k]).collect()))).collect())
}

/// One series by [`passes`]: `secs(n)` seconds at size n, as samples at x = `work(n)`.
///
/// The first pass also decides how far the series goes: it stops before the first size whose
/// one run would take more than [`MAX_RUN`] (the last run's time scaled by the ratio of work),
/// once [`MIN_SIZES`] sizes are in. Past that time every kernel here is deep in its
/// large-size regime, which the fit extrapolates linearly; measuring it only multiplies the
/// calibration's time (the first H200 calibration spent ~2 minutes of its 3 on one SGEMM of
/// 4096³ on one P, 6 runs × 3 passes × 2 timings of ~7 s; the second ran past 4 minutes).
pub(super) fn samples(
    sizes: &[usize],
    work: impl Fn(usize) -> f64,
    mut secs: impl FnMut(usize) -> Result<f64, OffloadError>,
) -> Result<Vec<Sample>, OffloadError> {
    let mut first = Vec::with_capacity(sizes.len());
    for (i, &n) in sizes.iter().enumerate() {
        let s = secs(n)?;
        first.push([s]);
        let next = sizes.get(i + 1).map(|&m| s * work(m) / work(n));
        if first.len() >= MIN_SIZES && next.is_some_and(|t| t > MAX_RUN.as_secs_f64()) {
            break;
        }
    }
    let kept = &sizes[..first.len()];
    let figures = later_passes(kept, first, |n| Ok([secs(n)?]))?;
    Ok(kept.iter().zip(figures).map(|(&n, [s])| Sample { x: work(n), secs: s }).collect())
}

/// The longest one run a calibration series measures (each series stops before a run that
/// would take longer): 0.2 s is 2,000× the slowest fork/join or launch latency a calibration
/// sees (~100 µs), so the fixed costs the fit's intercept holds are settled well before it,
/// and a point of 0.2 s costs ~4 s in all (one warm-up and 5 runs, 3 passes; twice on the
/// CPU, as called and cache-resident).
pub const MAX_RUN: Duration = Duration::from_millis(200);
/// Sizes a series keeps whatever they cost: a regime's [`MIN_RUN`](crate::model::fit::MIN_RUN)
/// of 3 and one more, so even a series whose small sizes are already slow gets a fit.
const MIN_SIZES: usize = 4;

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

/// (enqueue, launch + sync) seconds of a 1-item launch after `warm_up` of launches (see the
/// module docs).
pub(super) fn launch(device: &Device, reps: usize, warm_up: Duration) -> Result<(f64, f64), OffloadError> {
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
pub(super) fn copies(
    device: &Device,
    plan: &Plan,
) -> Result<(TransferProfile, TransferProfile), OffloadError> {
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
pub(super) fn device_copy(device: &Device, plan: &Plan) -> Result<KernelProfile, OffloadError> {
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
        cpu_resident: vec![],
        mapped: None,
    }
}

/// The tensor-core SGEMMs on CUDA (`sgemm_tf32`, `sgemm_bf16`: device time against 2N³
/// flops at the plan's SGEMM sizes, as `sgemm`), with `fp32`'s CPU fits: the CPU has no faster
/// path at lower precision, so an FP32 GEMM is its side of the comparison. Nothing on Host and
/// simulated devices (no tensor cores: their TF32 is FP32's time plus a rounding pass).
pub(super) fn tensor_core_sgemms(
    device: &Device,
    plan: &Plan,
    fp32: &KernelProfile,
) -> Result<Vec<KernelProfile>, OffloadError> {
    use gmprt_kernels::precision::Precision;
    if device.kind() != DeviceKind::Cuda {
        return Ok(vec![]);
    }
    let mut out = vec![];
    for p in [Precision::Tf32, Precision::Bf16] {
        let mm = sgemm_series(device, plan, p)?;
        let mut k = kernel(crate::model::sgemm_kernel_name(p), "N (matrix side)", Size::MatrixN, mm);
        k.cpu = fp32.cpu.clone();
        k.cpu_resident = fp32.cpu_resident.clone();
        out.push(k);
    }
    Ok(out)
}

/// Device time of square SGEMMs at the plan's sides and `precision`, against x = 2N³ flops.
fn sgemm_series(
    device: &Device,
    plan: &Plan,
    precision: gmprt_kernels::precision::Precision,
) -> Result<Vec<Sample>, OffloadError> {
    samples(
        &plan.sgemm,
        |n| 2.0 * (n as f64).powi(3),
        |n| {
            let a: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 * 0.25).collect();
            let mut c = vec![0f32; n * n];
            median(plan.reps, || Ok(device.sgemm_with(precision, n, n, n, &a, &a, &mut c)?.kernel))
        },
    )
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

/// Sizes of a mapped-I/O series: 1 item up to the most that map (`max`), ×4 steps, and
/// `max` itself, so the fit spans the whole window the model prices with it.
fn mapped_sizes(max: usize) -> Vec<usize> {
    let mut v: Vec<usize> =
        std::iter::successors(Some(1usize), |&n| Some(n * 4)).take_while(|&n| n < max).collect();
    v.push(max.max(1));
    v
}

/// The mapped-I/O fit of `job` on CUDA: whole runs (all three phases) of n items with
/// `words` (in, out) words each, n up to the most whose bytes fit in
/// [`MAPPED_IO_MAX_BYTES`](crate::cuda::MAPPED_IO_MAX_BYTES), each timed as the run reports
/// it (a mapped run's one span is its kernel time), on a slot of its own. `stage(slot, n)`
/// fills the input. `None` when the slot would not map the largest of them
/// ([`Slot::maps_io`]: a Host or simulated slot, `GMPRT_CUDA_MAPPED_IO=off`, buffers the
/// driver would not map): the model then prices copies.
fn mapped_fit(
    device: &Device,
    job: &dyn CudaJob,
    words: (usize, usize),
    reps: usize,
    mut stage: impl FnMut(&mut dyn Slot, usize),
) -> Result<Option<MappedFit>, OffloadError> {
    let max_bytes = crate::cuda::MAPPED_IO_MAX_BYTES;
    let max = max_bytes / (4 * (words.0 + words.1));
    let mut slot = device.backend().new_slot(words.0 * max, words.1 * max)?;
    // Mapping only depends on the bytes being within the limit, so the largest run decides.
    if !slot.maps_io(job, words.0 * max, words.1 * max, Phases::ALL) {
        return Ok(None);
    }
    let samples = samples(
        &mapped_sizes(max),
        |n| n as f64,
        |n| {
            stage(&mut *slot, n);
            median(reps, || Ok(slot.run(job, n, words.0 * n, words.1 * n, Phases::ALL)?.kernel))
        },
    )?;
    Ok(Some(MappedFit { max_bytes: max_bytes as f64, fit: LinFit::fit(&samples), samples }))
}

/// Device-time fits of the four kernels.
pub(super) fn device_kernels(device: &Device, plan: &Plan) -> Result<Vec<KernelProfile>, OffloadError> {
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
    // 48 B per option: 6 words in and 6 out.
    let small = black_scholes::synthetic_chain(crate::cuda::MAPPED_IO_MAX_BYTES / 48, 42);
    let bs_mapped = mapped_fit(device, &BlackScholes, (6, 6), reps, |slot, n| {
        black_scholes::stage_words(&small[..n], &mut slot.staging_in()[..6 * n]);
    })?;
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
    let sx_mapped = mapped_fit(device, &Saxpy { a: 2.0 }, (2, 1), reps, |slot, n| {
        slot.staging_in()[..2 * n].fill(1.0f32.to_bits());
    })?;
    let mm = sgemm_series(device, plan, gmprt_kernels::precision::Precision::Fp32)?;
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
        KernelProfile { mapped: bs_mapped, ..kernel("black_scholes", "options", bytes(6, 6), bs) },
        KernelProfile { mapped: sx_mapped, ..kernel("saxpy", "elements", bytes(2, 1), sx) },
        kernel("sgemm", "N (matrix side)", Size::MatrixN, mm),
        kernel("monte_carlo", "paths", Size::Items { in_bytes: 0.0, out_bytes: 0.0, out_fixed: 16.0 }, mc),
    ])
}

#[cfg(test)]
mod tests {
    use super::{samples, MAX_RUN, MIN_SIZES, PASSES};
    use std::collections::HashMap;

    /// Runs `samples` over sizes 1, 10, …, 10⁷ with a run costing `per_item` seconds per item
    /// (no clock: the figure is made up, so the test is exact); the sizes kept and the calls
    /// made per size.
    fn series(per_item: f64) -> (Vec<f64>, HashMap<usize, usize>) {
        let sizes: Vec<usize> = (0..8).map(|e| 10usize.pow(e)).collect();
        let mut calls = HashMap::new();
        let s = samples(
            &sizes,
            |n| n as f64,
            |n| {
                *calls.entry(n).or_insert(0) += 1;
                Ok(n as f64 * per_item)
            },
        )
        .unwrap();
        (s.iter().map(|s| s.x).collect(), calls)
    }

    #[test]
    fn a_series_stops_before_a_run_longer_than_max_run() {
        // 1 µs per item: 10⁵ items take 0.1 s, 10⁶ would take 1 s > MAX_RUN.
        assert!(MAX_RUN.as_secs_f64() < 1.0 && MAX_RUN.as_secs_f64() > 0.1);
        let (xs, calls) = series(1e-6);
        assert_eq!(xs, [1.0, 10.0, 100.0, 1e3, 1e4, 1e5]);
        // Every kept size is measured in every pass; a dropped one never.
        for (n, c) in &calls {
            assert_eq!(*c, if *n <= 100_000 { PASSES } else { 0 }, "size {n}");
        }
        assert_eq!(calls.len(), 6);
    }

    #[test]
    fn a_fast_series_is_whole_and_a_slow_one_keeps_min_sizes() {
        let (xs, _) = series(1e-12);
        assert_eq!(xs.len(), 8);
        // Even 1 s per item: the first MIN_SIZES sizes, so a fit has its points.
        let (xs, calls) = series(1.0);
        assert_eq!(xs.len(), MIN_SIZES);
        assert!(calls.values().all(|&c| c == PASSES));
    }
}
