//! [`CudaBackend::chase`] and [`CudaBackend::fma_chain`]: one GPU thread doing dependent steps,
//! the device's side of `examples/latency_ladder.rs` (SEEDS story 3: a GPU is a throughput
//! machine; one thread alone waits out every latency its thousands of threads normally hide).
//!
//! Protocol: on the utility stream (one-shot operations, `ops.rs`'s rules), with the `latency`
//! module compiled outside every timing: the buffer is uploaded, one untimed launch runs the
//! same kernel (a whole lap of the chase, so the cycle sits in whatever cache it fits, and the
//! function's code is loaded), then a timed launch between events 1 and 2: the kernel's device
//! time, with no copy in it. The caller divides by the steps.
use super::{driver_err, event_span, CudaBackend};
use crate::error::OffloadError;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use gmprt_kernels::cuda::{FN_CHASE, FN_FMA_CHAIN, LATENCY};
use std::sync::Arc;
use std::time::Duration;

/// One block of one thread: a single chain of dependent steps.
const ONE: LaunchConfig = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };

/// Enqueues `gmprt_chase(next, steps, out)` on `s`.
fn launch_chase(
    s: &Arc<CudaStream>,
    f: &CudaFunction,
    next: &CudaSlice<u32>,
    steps: u64,
    out: &mut CudaSlice<u32>,
) -> Result<(), OffloadError> {
    let mut b = s.launch_builder(f);
    b.arg(next).arg(&steps).arg(out);
    // SAFETY: arguments match `gmprt_chase(const unsigned int* next, unsigned long long steps,
    // unsigned int* out)`; every word of `next` is an index into `next` (checked by `chase`
    // before the upload), so each load stays inside it, and `out` is one word.
    unsafe { b.launch(ONE) }.map(|_| ()).map_err(|e| driver_err("cuLaunchKernel gmprt_chase", e))
}

/// Enqueues `gmprt_fma_chain(a, b, steps, out)` on `s`.
fn launch_fma(
    s: &Arc<CudaStream>,
    f: &CudaFunction,
    steps: u64,
    out: &mut CudaSlice<f32>,
) -> Result<(), OffloadError> {
    // a < 1 and b small keep x normal (the CPU chain's constants).
    let (a, c) = (0.999_999f32, 1e-6f32);
    let mut b = s.launch_builder(f);
    b.arg(&a).arg(&c).arg(&steps).arg(out);
    // SAFETY: arguments match `gmprt_fma_chain(float a, float b, unsigned long long steps,
    // float* out)`; `out` is one float, the only memory the kernel touches.
    unsafe { b.launch(ONE) }.map(|_| ()).map_err(|e| driver_err("cuLaunchKernel gmprt_fma_chain", e))
}

impl CudaBackend {
    /// The device time of one thread following `p = next[p]` from 0 for `steps` dependent loads
    /// (after an untimed lap), and the word it ended on (where the same walk on the host ends):
    /// divide the time by `steps` for one load's latency from wherever `next` fits. `next` must be non-empty, at most 2^32 words, and every word an index into it
    /// (else `Err(Config)`, before anything reaches the device: a word past the end would
    /// read outside the buffer); `steps` at least 1.
    ///
    /// # Examples
    ///
    /// Runs with or without a GPU (without one, `new` fails and the GPU part is skipped); with
    /// a GPU, the kernel needs NVRTC:
    ///
    /// ```
    /// use gmprt_offload::cuda::{nvrtc, CudaBackend};
    /// use gmprt_offload::OffloadError;
    ///
    /// match CudaBackend::new(0) {
    ///     Ok(gpu) => {
    ///         let err = gpu.chase(&[0, 7], 10).unwrap_err();
    ///         assert!(err.to_string().contains("word 1 is 7"), "{err}");
    ///         // A cycle of 32 words through 4 lines of 128 bytes: 0 -> 64 -> 32 -> 96 -> 0.
    ///         let mut next = vec![0u32; 128];
    ///         (next[0], next[64], next[32], next[96]) = (64, 32, 96, 0);
    ///         match gpu.chase(&next, 1001) {
    ///             Ok((t, end)) => assert_eq!((t.as_nanos() > 0, end), (true, 64)),
    ///             Err(e) => assert!(nvrtc::available().is_err(), "{e}"),
    ///         }
    ///     }
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn chase(&self, next: &[u32], steps: u64) -> Result<(Duration, u32), OffloadError> {
        if next.is_empty() || next.len() > 1 << 32 || steps == 0 {
            return Err(OffloadError::Config(format!(
                "chase: needs 1..=2^32 words and at least 1 step, got {} words and {steps} steps",
                next.len()
            )));
        }
        if let Some((i, w)) = next.iter().enumerate().find(|&(_, &w)| w as usize >= next.len()) {
            return Err(OffloadError::Config(format!(
                "chase: word {i} is {w}, not an index into the {} words",
                next.len()
            )));
        }
        let f = self.function(&LATENCY, FN_CHASE)?;
        self.with_util(|s, ev| {
            let d_next = s.clone_htod(next).map_err(|e| driver_err("cuMemcpyHtoDAsync(next)", e))?;
            let mut out = s.alloc_zeros::<u32>(1).map_err(|e| driver_err("cuMemAllocAsync", e))?;
            // Untimed: a lap (at most `steps`) brings the cycle into the caches it fits, and
            // the first launch loads the function's code.
            launch_chase(s, &f, &d_next, steps.min(next.len() as u64), &mut out)?;
            let record = |i: usize| ev[i].record(s).map_err(|e| driver_err("cuEventRecord", e));
            record(1)?;
            launch_chase(s, &f, &d_next, steps, &mut out)?;
            record(2)?;
            let mut end = [0u32; 1];
            s.memcpy_dtoh(&out, &mut end).map_err(|e| driver_err("cuMemcpyDtoHAsync(out)", e))?;
            record(3)?;
            self.wait_end(&ev[3])?;
            Ok((event_span(&ev[1], &ev[2])?, end[0]))
        })
    }

    /// The device time of one thread doing `steps` dependent FMAs (`x = x·a + b`, after an
    /// untimed launch of the same): divide by `steps` for one FMA's latency. `steps` at least
    /// 1 (else `Err(Config)`).
    ///
    /// # Examples
    ///
    /// Runs with or without a GPU (without one, `new` fails and the GPU part is skipped); with
    /// a GPU, the kernel needs NVRTC:
    ///
    /// ```
    /// use gmprt_offload::cuda::{nvrtc, CudaBackend};
    /// use gmprt_offload::OffloadError;
    ///
    /// match CudaBackend::new(0) {
    ///     Ok(gpu) => {
    ///         assert!(gpu.fma_chain(0).is_err());
    ///         match gpu.fma_chain(10_000) {
    ///             Ok(t) => assert!(t.as_nanos() > 0),
    ///             Err(e) => assert!(nvrtc::available().is_err(), "{e}"),
    ///         }
    ///     }
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn fma_chain(&self, steps: u64) -> Result<Duration, OffloadError> {
        if steps == 0 {
            return Err(OffloadError::Config("fma_chain: needs at least 1 step, got 0".into()));
        }
        let f = self.function(&LATENCY, FN_FMA_CHAIN)?;
        self.with_util(|s, ev| {
            let mut out = s.alloc_zeros::<f32>(1).map_err(|e| driver_err("cuMemAllocAsync", e))?;
            launch_fma(s, &f, steps, &mut out)?; // untimed: loads the function's code
            let record = |i: usize| ev[i].record(s).map_err(|e| driver_err("cuEventRecord", e));
            record(1)?;
            launch_fma(s, &f, steps, &mut out)?;
            record(2)?;
            record(3)?;
            self.wait_end(&ev[3])?;
            event_span(&ev[1], &ev[2])
        })
    }
}
