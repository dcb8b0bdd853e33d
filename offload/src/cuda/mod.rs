//! CUDA device through cudarc (dynamic loading). STUB: signatures fixed; the CUDA helper
//! fills in the bodies.
use crate::backend::{Backend, Slot};
use crate::error::OffloadError;
use crate::PhaseTimes;
use cudarc::driver::{CudaFunction, CudaStream, CudaView, CudaViewMut};
use gmprt_kernels::cuda::CudaSource;
use std::sync::Arc;

/// Checks, without panicking, that a CUDA device can be used: libcuda present
/// (`is_culib_present` first), driver init, at least `ordinal + 1` devices. `Err` carries the
/// reason in plain words ("no libcuda.so", "no CUDA device", ...).
pub fn probe(ordinal: usize) -> Result<(), String> {
    let _ = ordinal;
    todo!()
}

/// One CUDA device: context, NVRTC-compiled modules (cached per device architecture),
/// cuBLAS handle. Implements [`Backend`].
pub struct CudaBackend {
    _p: (),
}

impl CudaBackend {
    /// Opens device `ordinal` after [`probe`]; never panics.
    pub fn new(ordinal: usize) -> Result<CudaBackend, OffloadError> {
        let _ = ordinal;
        todo!()
    }
    /// Device name, e.g. `NVIDIA H200`.
    pub fn name(&self) -> &str {
        todo!()
    }
    /// Compute capability (major, minor).
    pub fn compute_capability(&self) -> (i32, i32) {
        todo!()
    }
    /// Driver version as reported by `cuDriverGetVersion` (e.g. 13000).
    pub fn driver_version(&self) -> i32 {
        todo!()
    }
    /// `function` of `src`, compiling the module with NVRTC for this device's architecture
    /// on first use (cached).
    pub fn function(&self, src: &CudaSource, function: &str) -> Result<CudaFunction, OffloadError> {
        let _ = (src, function);
        todo!()
    }
    /// C = A·B (row-major, m×k by k×n) through cuBLAS: uploads, runs, downloads; returns
    /// event-timed phases.
    pub fn sgemm(
        &self,
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        b: &[f32],
        c: &mut [f32],
    ) -> Result<PhaseTimes, OffloadError> {
        let _ = (m, n, k, a, b, c);
        todo!()
    }
    /// π hits over `blocks` Philox blocks from `seed` (same stream as
    /// `gmprt_kernels::monte_carlo::pi_hits(seed, 0, blocks)`), with the kernel's time.
    pub fn pi_hits(&self, seed: u64, blocks: u64) -> Result<(u64, PhaseTimes), OffloadError> {
        let _ = (seed, blocks);
        todo!()
    }
    /// Monte Carlo option path sums (as `gmprt_kernels::monte_carlo::option_paths_sum(seed,
    /// c, 0, blocks)`), with the kernel's time.
    pub fn option_paths_sum(
        &self,
        seed: u64,
        c: &gmprt_kernels::black_scholes::Contract,
        blocks: u64,
    ) -> Result<((f64, f64), PhaseTimes), OffloadError> {
        let _ = (seed, c, blocks);
        todo!()
    }
}

impl Backend for CudaBackend {
    fn describe(&self) -> String {
        todo!()
    }
    fn new_slot(&self, in_words: usize, out_words: usize) -> Result<Box<dyn Slot>, OffloadError> {
        let _ = (in_words, out_words);
        todo!()
    }
}

/// What a [`Job`](crate::Job) gets to enqueue its launch on a CUDA slot.
pub struct LaunchCtx<'a> {
    /// The slot's stream; launches go here.
    pub stream: &'a Arc<CudaStream>,
    /// The device input buffer (first `n * in_words_per_item` words are the batch).
    pub input: CudaView<'a, u32>,
    /// The device output buffer.
    pub output: CudaViewMut<'a, u32>,
    /// The device (modules, cuBLAS).
    pub backend: &'a CudaBackend,
}

/// Enqueues Black-Scholes over `n` contracts in the word layout
/// (`gmprt_kernels::black_scholes`): one launch.
pub fn launch_black_scholes(ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
    let _ = (ctx, n);
    todo!()
}

/// Enqueues SAXPY over `n` items: input words `x` then `y` (stride n), output word `a·x + y`.
pub fn launch_saxpy(ctx: &mut LaunchCtx<'_>, n: usize, a: f32) -> Result<(), OffloadError> {
    let _ = (ctx, n, a);
    todo!()
}

/// Enqueues `count` independent products C_i = A_i·B_i (m×k by k×n, row-major) as one
/// strided-batched cuBLAS call. Input words: all A_i (count·m·k) then all B_i (count·k·n);
/// output words: all C_i (count·m·n).
pub fn launch_sgemm_batched(
    ctx: &mut LaunchCtx<'_>,
    count: usize,
    m: usize,
    n: usize,
    k: usize,
) -> Result<(), OffloadError> {
    let _ = (ctx, count, m, n, k);
    todo!()
}
