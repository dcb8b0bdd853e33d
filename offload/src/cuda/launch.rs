//! Kernel launches over the word layout (`gmprt_kernels`' crate docs: column `c` of a batch
//! of `n` at `words[c * n..]`), all enqueued on the caller's stream and never synchronised
//! here. The cuBLAS GEMMs are the `gemm` module's.
//!
//! Protocol: each function checks the batch against the buffers first (a short buffer is an
//! `OffloadError::Kernel(Shape)`, never a panic or an out-of-bounds launch), then looks the
//! function up (compiled once per device, see `CudaBackend::function`), cuts one device view
//! per column, and enqueues one launch. The views borrow the slot's buffers, so the borrow
//! checker keeps the buffers alive until the launch is enqueued; the slot's end-of-run wait
//! keeps them alive until it completes.
//!
//! Launch shape: [`BLOCK_SIZE`] threads per block and [`grid_size`] blocks, every kernel a
//! grid-stride loop, so any grid covers any `n`.
use super::{driver_err, LaunchCtx};
use crate::error::OffloadError;
use cudarc::driver::{LaunchConfig, PushKernelArg};
use gmprt_kernels::black_scholes::{IN_WORDS, OUT_WORDS};
use gmprt_kernels::cuda::{
    BLACK_SCHOLES, FN_BLACK_SCHOLES, FN_BLACK_SCHOLES_SEGMENT_SUMS, FN_GREEKS_SEGMENT_SUM, FN_SAXPY, SAXPY,
    SEGMENTED,
};
use gmprt_kernels::KernelError;

/// Threads per block: a multiple of the 32-thread warp, and 8 blocks of 256 fill the 2048
/// resident threads of an SM on sm_80..sm_100 when registers allow, so occupancy is limited by
/// registers, not by the block shape; the reduction kernels' per-warp shared arrays (32
/// entries) fit any block of at most 1024 threads.
///
/// # Examples
///
/// ```
/// use gmprt_offload::cuda::{grid_size, BLOCK_SIZE};
///
/// assert_eq!(BLOCK_SIZE % 32, 0); // whole warps
/// // One block per BLOCK_SIZE items, below the cap.
/// assert_eq!(grid_size(u64::from(BLOCK_SIZE), 132), 1);
/// assert_eq!(grid_size(u64::from(BLOCK_SIZE) + 1, 132), 2);
/// ```
pub const BLOCK_SIZE: u32 = 256;

/// Grid cap in blocks per SM: 32 blocks of 256 threads are four times the 8 blocks an SM can
/// hold at once, so every SM gets work and the last wave's imbalance is small; beyond that
/// the grid-stride loop reuses threads, which amortises per-thread setup (Philox key, block
/// reduction, one atomic per block in the Monte Carlo kernels) over more items.
///
/// # Examples
///
/// ```
/// use gmprt_offload::cuda::{grid_size, GRID_BLOCKS_PER_SM};
///
/// // A million items on a 4-SM device: capped at 4 · 32 blocks.
/// assert_eq!(grid_size(1 << 20, 4), 4 * GRID_BLOCKS_PER_SM);
/// ```
pub const GRID_BLOCKS_PER_SM: u32 = 32;

/// Blocks for `items` work items on a device with `sms` SMs:
/// `min(ceil(items / BLOCK_SIZE), sms · GRID_BLOCKS_PER_SM)`, at least 1 (`sms = 0` counts
/// as 1).
///
/// # Examples
///
/// ```
/// use gmprt_offload::cuda::grid_size;
///
/// assert_eq!(grid_size(0, 132), 1); // never an empty grid
/// assert_eq!(grid_size(100_000, 132), 391); // ceil(100000 / 256)
/// assert_eq!(grid_size(u64::MAX, 132), 132 * 32); // capped; the grid-stride loop does the rest
/// assert_eq!(grid_size(u64::MAX, 0), 32);
/// ```
pub fn grid_size(items: u64, sms: u32) -> u32 {
    let wanted = items.div_ceil(u64::from(BLOCK_SIZE)).max(1);
    let cap = u64::from(sms.max(1)) * u64::from(GRID_BLOCKS_PER_SM);
    // The cap is at most 2^32 · 32 in theory; the grid's x limit is 2^31 - 1.
    wanted.min(cap).min(i32::MAX as u64) as u32
}

/// The launch configuration for `items` on a device of `sms` SMs (no dynamic shared memory:
/// the reductions use static shared arrays).
pub(crate) fn config(items: u64, sms: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (grid_size(items, sms), 1, 1),
        block_dim: (BLOCK_SIZE, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `n` as the kernels' `int n`.
fn kernel_n(n: usize, kernel: &str) -> Result<i32, OffloadError> {
    i32::try_from(n).map_err(|_| {
        OffloadError::Config(format!(
            "batch of {n} items is too large for {kernel} (the kernel indexes with int)"
        ))
    })
}

/// `items · words_per_item`, checked against a buffer of `got` words.
pub(super) fn need(
    what: &'static str,
    items: usize,
    words_per_item: usize,
    got: usize,
) -> Result<usize, OffloadError> {
    let expected = items.checked_mul(words_per_item).ok_or_else(|| {
        OffloadError::Config(format!("{what}: {items} × {words_per_item} words overflows usize"))
    })?;
    if got < expected {
        return Err(KernelError::Shape { what, expected, got }.into());
    }
    Ok(expected)
}

/// Enqueues Black-Scholes over `n` contracts in the word layout
/// (`gmprt_kernels::black_scholes`): one launch. `n = 0` enqueues nothing; buffers shorter
/// than `n` items are `Err(Kernel(Shape))`.
///
/// # Examples
///
/// A job whose CUDA side is this launch (as [`BlackScholes`](crate::BlackScholes)'s is).
/// It runs on the Host slot everywhere, and on a CUDA slot too where a GPU and NVRTC are
/// usable (without them that part is skipped, so this passes on CI):
///
/// ```
/// use gmprt_offload::cuda::{launch_black_scholes, nvrtc, CudaBackend, CudaJob, LaunchCtx};
/// use gmprt_offload::kernels::black_scholes::{self, reference, Contract, OptionKind, IN_WORDS, OUT_WORDS};
/// use gmprt_offload::{Backend, Device, Job, OffloadError, Phases};
///
/// struct Bs;
/// impl Job for Bs {
///     fn name(&self) -> &'static str { "bs" }
///     fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
///         black_scholes::price_greeks_words(n, input, output).map_err(|e| e.to_string())
///     }
/// }
/// impl CudaJob for Bs {
///     fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
///         launch_black_scholes(ctx, n)
///     }
/// }
///
/// let c = Contract { spot: 100.0, strike: 95.0, t: 0.5, rate: 0.03, vol: 0.25, kind: OptionKind::Put };
/// let price_on = |backend: &dyn Backend| {
///     let mut slot = backend.new_slot(IN_WORDS, OUT_WORDS).unwrap();
///     black_scholes::stage_words(&[c], slot.staging_in());
///     slot.run(&Bs, 1, IN_WORDS, OUT_WORDS, Phases::ALL).unwrap();
///     black_scholes::gather_words(1, slot.staging_out(), 0).price
/// };
/// let want = reference(&c).price;
/// let host = price_on(Device::host().backend());
/// assert!((f64::from(host) - want).abs() < 1e-3 * want, "{host} vs {want}");
/// if let (Ok(gpu), Ok(())) = (CudaBackend::new(0), nvrtc::available()) {
///     let on_gpu = price_on(&gpu);
///     assert!((f64::from(on_gpu) - want).abs() < 1e-3 * want, "{on_gpu} vs {want}");
/// }
/// ```
pub fn launch_black_scholes(ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
    launch_black_scholes_at(ctx, n, 0)
}

/// [`launch_black_scholes`] with the six output columns written from word `out_at` of the
/// output buffer on (the by-segment job keeps its sums in front of them).
fn launch_black_scholes_at(ctx: &mut LaunchCtx<'_>, n: usize, out_at: usize) -> Result<(), OffloadError> {
    if n == 0 {
        return Ok(());
    }
    let n_arg = kernel_n(n, FN_BLACK_SCHOLES)?;
    need("device input words (black_scholes)", n, IN_WORDS, ctx.input.len())?;
    let out_len =
        need("device output words (black_scholes)", n, OUT_WORDS, ctx.output.len().saturating_sub(out_at))?;
    let f = ctx.backend.function(&BLACK_SCHOLES, FN_BLACK_SCHOLES)?;
    let col = |c: usize| ctx.input.slice(c * n..(c + 1) * n);
    let (spot, strike, t, rate, vol, kind) = (col(0), col(1), col(2), col(3), col(4), col(5));
    // Six disjoint mutable column views, cut one after the other.
    let mut out = ctx.output.slice_mut(out_at..out_at + out_len);
    let (mut price, mut r1) = out.split_at_mut(n);
    let (mut delta, mut r2) = r1.split_at_mut(n);
    let (mut gamma, mut r3) = r2.split_at_mut(n);
    let (mut vega, mut r4) = r3.split_at_mut(n);
    let (mut theta, mut rho) = r4.split_at_mut(n);
    // One thread per 16-byte step of 4 contracts (black_scholes.cu).
    let cfg = config((n as u64).div_ceil(4), ctx.backend.sm_count());
    let mut b = ctx.stream.launch_builder(&f);
    b.arg(&spot).arg(&strike).arg(&t).arg(&rate).arg(&vol).arg(&kind);
    b.arg(&mut price).arg(&mut delta).arg(&mut gamma).arg(&mut vega).arg(&mut theta).arg(&mut rho);
    b.arg(&n_arg);
    // SAFETY: the arguments match `gmprt_black_scholes`'s parameters in order and type (six
    // `const float*`/`const unsigned*` columns of n words, six `float*` columns of n words,
    // `int n`); every view holds exactly n words (checked above), so the kernel's accesses
    // `[0, n)` stay inside them; the views are disjoint, so no two outputs alias.
    unsafe { b.launch(cfg) }.map_err(|e| driver_err("cuLaunchKernel gmprt_black_scholes", e))?;
    Ok(())
}

/// Enqueues the by-segment job ([`BlackScholesBySegment`](crate::jobs::BlackScholesBySegment),
/// whose doc gives the word layouts): Black-Scholes into the output buffer's scratch columns,
/// then `gmprt_greeks_segment_sum` over them into the sums at the buffer's start (word 0: the
/// allocation's start, so the doubles are 8-byte aligned). Two launches on one stream run in
/// order. Buffers shorter than the layout are `Err(Kernel(Shape))`.
pub fn launch_black_scholes_by_segment(
    ctx: &mut LaunchCtx<'_>,
    n: usize,
    segments: usize,
) -> Result<(), OffloadError> {
    let job = crate::segments::BlackScholesBySegment { segments };
    need("device input words (black_scholes_by_segment)", 1, job.in_words(n), ctx.input.len())?;
    need("device output words (black_scholes_by_segment)", 1, job.out_words(n), ctx.output.len())?;
    let sum_words = job.sum_words();
    launch_black_scholes_at(ctx, n, sum_words)?;
    if segments == 0 {
        return Ok(());
    }
    let what = "the segmented sum (u32 segments and contracts)";
    let seg_arg = u32::try_from(segments)
        .map_err(|_| OffloadError::Config(format!("{segments} segments: too many for {what}")))?;
    let n_arg =
        u32::try_from(n).map_err(|_| OffloadError::Config(format!("{n} contracts: too many for {what}")))?;
    let f = ctx.backend.function(&SEGMENTED, FN_GREEKS_SEGMENT_SUM)?;
    let qty = ctx.input.slice(n * IN_WORDS..n * (IN_WORDS + 1));
    let offsets = ctx.input.slice(n * (IN_WORDS + 1)..n * (IN_WORDS + 1) + segments + 1);
    let mut out = ctx.output.slice_mut(..sum_words + n * OUT_WORDS);
    let (mut sums, mut scratch) = out.split_at_mut(sum_words);
    // One block per segment up to the same cap as the element-wise kernels (the kernel
    // grid-strides over the rest); BLOCK_SIZE (256) is a multiple of 32 up to 1024, as the
    // kernel's warp reduction needs.
    let cap = u64::from(ctx.backend.sm_count().max(1)) * u64::from(GRID_BLOCKS_PER_SM);
    let grid = (segments as u64).min(cap).min(i32::MAX as u64) as u32;
    let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (BLOCK_SIZE, 1, 1), shared_mem_bytes: 0 };
    let mut b = ctx.stream.launch_builder(&f);
    b.arg(&mut scratch).arg(&qty).arg(&offsets).arg(&seg_arg).arg(&n_arg).arg(&mut sums);
    // SAFETY: the arguments match `gmprt_greeks_segment_sum`'s parameters in order and type
    // (`const float* out` = the n * OUT_WORDS scratch words just written, `const float* qty` =
    // n words, `const unsigned* offsets` = segments + 1 words, `unsigned segments`, `unsigned
    // n`, `double* sums` = 2 * AGG_WORDS * segments words at the buffer's 256-byte-aligned
    // start); every view holds what the kernel reads or writes (checked above), and the
    // kernel clamps each segment's bounds into [0, n), so no offset value reads outside the
    // columns; sums and scratch are disjoint halves of one split, so nothing aliases.
    unsafe { b.launch(cfg) }.map_err(|e| driver_err("cuLaunchKernel gmprt_greeks_segment_sum", e))?;
    Ok(())
}

/// Enqueues the selected-segments job ([`BlackScholesSelected`](crate::jobs::BlackScholesSelected),
/// whose doc gives the word layouts): one launch of `gmprt_black_scholes_segment_sums`, one
/// block per selected segment (grid-stride past the cap), the sums at the output's start.
/// Buffers shorter than the layout are `Err(Kernel(Shape))`; nothing is launched for an
/// empty selection.
pub fn launch_black_scholes_selected(
    ctx: &mut LaunchCtx<'_>,
    n: usize,
    segments: usize,
    selected: usize,
) -> Result<(), OffloadError> {
    let job = crate::segments::BlackScholesSelected { segments, selected };
    need("device input words (black_scholes_selected)", 1, job.in_words(n), ctx.input.len())?;
    need("device output words (black_scholes_selected)", 1, job.out_words(), ctx.output.len())?;
    if selected == 0 || n == 0 {
        return Ok(());
    }
    let what = "the selected-segments kernel (u32 counts)";
    let u32_arg = |v: usize, name: &str| {
        u32::try_from(v).map_err(|_| OffloadError::Config(format!("{v} {name}: too many for {what}")))
    };
    let (n_arg, seg_arg, sel_arg) =
        (u32_arg(n, "contracts")?, u32_arg(segments, "segments")?, u32_arg(selected, "selected segments")?);
    let f = ctx.backend.function(&SEGMENTED, FN_BLACK_SCHOLES_SEGMENT_SUMS)?;
    let col = |c: usize| ctx.input.slice(c * n..(c + 1) * n);
    // Column 0 (the per-contract spots) is not read: each segment's spot is.
    let (strike, t, rate, vol, kind, qty) = (col(1), col(2), col(3), col(4), col(5), col(6));
    let at = n * (IN_WORDS + 1);
    let offsets = ctx.input.slice(at..at + segments + 1);
    let spots_at = job.spots_at(n);
    let seg_spot = ctx.input.slice(spots_at..spots_at + segments);
    let sel = ctx.input.slice(spots_at + segments..spots_at + segments + selected);
    let mut sums = ctx.output.slice_mut(..job.out_words());
    let cap = u64::from(ctx.backend.sm_count().max(1)) * u64::from(GRID_BLOCKS_PER_SM);
    let grid = (selected as u64).min(cap).min(i32::MAX as u64) as u32;
    let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (BLOCK_SIZE, 1, 1), shared_mem_bytes: 0 };
    let mut b = ctx.stream.launch_builder(&f);
    b.arg(&seg_spot).arg(&strike).arg(&t).arg(&rate).arg(&vol).arg(&kind).arg(&qty);
    b.arg(&offsets).arg(&seg_arg).arg(&sel).arg(&sel_arg).arg(&n_arg).arg(&mut sums);
    // SAFETY: the arguments match `gmprt_black_scholes_segment_sums`'s parameters in order and
    // type (`const float* seg_spot` = segments words; six `const` columns of n words: strike,
    // t, rate, vol, kind and qty; `const unsigned* offsets` = segments + 1 words; `unsigned
    // segments`; `const unsigned* sel` = selected words; `unsigned nsel`; `unsigned n`;
    // `double* sums` = 2 * AGG_WORDS * selected words at the output's 256-byte-aligned
    // start); every view holds what the kernel reads or writes (checked above); the kernel
    // clamps every segment's bounds into [0, n), reads `seg_spot` only below `segments` and
    // skips ids past it, so no input value reads outside the columns.
    unsafe { b.launch(cfg) }.map_err(|e| driver_err("cuLaunchKernel gmprt_black_scholes_segment_sums", e))?;
    Ok(())
}

/// Enqueues SAXPY over `n` items: input words `x` then `y` (stride n), output word `a·x + y`.
/// `n = 0` enqueues nothing; buffers shorter than `n` items are `Err(Kernel(Shape))`.
///
/// # Examples
///
/// A job computing `3·x + y` whose CUDA side is this launch. It runs on the Host slot
/// everywhere, and on a CUDA slot too where a GPU and NVRTC are usable (without them that
/// part is skipped, so this passes on CI):
///
/// ```
/// use gmprt_offload::cuda::{launch_saxpy, nvrtc, CudaBackend, CudaJob, LaunchCtx};
/// use gmprt_offload::{Backend, Device, Job, OffloadError, Phases};
///
/// struct Triple;
/// impl Job for Triple {
///     fn name(&self) -> &'static str { "triple" }
///     fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
///         for i in 0..n {
///             let (x, y) = (f32::from_bits(input[i]), f32::from_bits(input[n + i]));
///             output[i] = (3.0 * x + y).to_bits();
///         }
///         Ok(())
///     }
/// }
/// impl CudaJob for Triple {
///     fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
///         launch_saxpy(ctx, n, 3.0)
///     }
/// }
///
/// let run_on = |backend: &dyn Backend| {
///     let mut slot = backend.new_slot(4, 2).unwrap();
///     let words: Vec<u32> = [1.0f32, 2.0, 10.0, 20.0].iter().map(|v| v.to_bits()).collect();
///     slot.staging_in().copy_from_slice(&words); // x = [1, 2], y = [10, 20]
///     slot.run(&Triple, 2, 4, 2, Phases::ALL).unwrap();
///     slot.staging_out().iter().map(|w| f32::from_bits(*w)).collect::<Vec<_>>()
/// };
/// assert_eq!(run_on(Device::host().backend()), [13.0, 26.0]);
/// if let (Ok(gpu), Ok(())) = (CudaBackend::new(0), nvrtc::available()) {
///     assert_eq!(run_on(&gpu), [13.0, 26.0]);
/// }
/// ```
pub fn launch_saxpy(ctx: &mut LaunchCtx<'_>, n: usize, a: f32) -> Result<(), OffloadError> {
    if n == 0 {
        return Ok(());
    }
    let n_arg = kernel_n(n, FN_SAXPY)?;
    need("device input words (saxpy)", n, 2, ctx.input.len())?;
    need("device output words (saxpy)", n, 1, ctx.output.len())?;
    let f = ctx.backend.function(&SAXPY, FN_SAXPY)?;
    let x = ctx.input.slice(..n);
    let y = ctx.input.slice(n..2 * n);
    let mut out = ctx.output.slice_mut(..n);
    // One thread per 16-byte step of 4 elements (saxpy.cu): a grid for n threads would leave
    // three in four idle.
    let cfg = config((n as u64).div_ceil(4), ctx.backend.sm_count());
    let mut b = ctx.stream.launch_builder(&f);
    b.arg(&n_arg).arg(&a).arg(&x).arg(&y).arg(&mut out);
    // SAFETY: arguments match `gmprt_saxpy(int n, float a, const float* x, const float* y,
    // float* out)`; x, y and out hold n words each (checked above); out does not alias x, y.
    unsafe { b.launch(cfg) }.map_err(|e| driver_err("cuLaunchKernel gmprt_saxpy", e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_is_capped_by_sms_and_never_zero() {
        assert_eq!(grid_size(0, 132), 1);
        assert_eq!(grid_size(1, 132), 1);
        assert_eq!(grid_size(256, 132), 1);
        assert_eq!(grid_size(257, 132), 2);
        assert_eq!(grid_size(100_000, 132), 391);
        assert_eq!(grid_size(u64::MAX, 132), 132 * GRID_BLOCKS_PER_SM);
        assert_eq!(grid_size(u64::MAX, 0), GRID_BLOCKS_PER_SM);
    }
}
