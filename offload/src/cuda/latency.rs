//! [`CudaBackend::chase`] and [`CudaBackend::fma_chain`]: one GPU thread doing dependent steps,
//! the device's side of `examples/latency_ladder.rs` (SEEDS story 3: a GPU is a throughput
//! machine; one thread alone waits out every latency its thousands of threads normally hide);
//! and [`CudaBackend::sm_ping_pong`]: one word bounced between two SMs through the L2, the
//! GPU's counterpart of the example's core-to-core figure.
//!
//! Protocol: on the utility stream (one-shot operations, `ops.rs`'s rules), with the `latency`
//! module compiled outside every timing: the buffer is uploaded, one untimed launch runs the
//! same kernel (a whole lap of the chase, so the cycle sits in whatever cache it fits, and the
//! function's code is loaded), then a timed launch between events 1 and 2: the kernel's device
//! time, with no copy in it. The caller divides by the steps.
use super::{driver_err, event_span, CudaBackend};
use crate::error::OffloadError;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use gmprt_kernels::cuda::{FN_CHASE, FN_FMA_CHAIN, FN_SM_PING_PONG, LATENCY};
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

/// Enqueues `gmprt_sm_ping_pong(flag, rounds, failed)` on `s`, two blocks of one thread.
fn launch_sm_ping_pong(
    s: &Arc<CudaStream>,
    f: &CudaFunction,
    flag: &mut CudaSlice<u32>,
    rounds: u32,
    failed: &mut CudaSlice<u32>,
) -> Result<(), OffloadError> {
    let two = LaunchConfig { grid_dim: (2, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    let mut b = s.launch_builder(f);
    b.arg(flag).arg(&rounds).arg(failed);
    // SAFETY: arguments match `gmprt_sm_ping_pong(volatile unsigned int* flag, unsigned int
    // rounds, unsigned int* failed)`; `flag` and `failed` are one zeroed word each, the only
    // memory the kernel touches, and every wait in it is bounded, so it ends.
    unsafe { b.launch(two) }.map(|_| ()).map_err(|e| driver_err("cuLaunchKernel gmprt_sm_ping_pong", e))
}

impl CudaBackend {
    /// The device times of `runs` launches of one thread following `p = next[p]` from 0 for
    /// `steps` dependent loads (after an untimed lap; `next` is checked and uploaded once for
    /// all of them), and the word the walk ends on (where the same walk on the host ends):
    /// divide a time by `steps` for one load's latency from wherever `next` fits. `next` must be non-empty, at most 2^32 words, and every word an index into it
    /// (else `Err(Config)`, before anything reaches the device: a word past the end would
    /// read outside the buffer); `steps` and `runs` at least 1.
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
    ///         let err = gpu.chase(&[0, 7], 10, 1).unwrap_err();
    ///         assert!(err.to_string().contains("word 1 is 7"), "{err}");
    ///         // A cycle of 32 words through 4 lines of 128 bytes: 0 -> 64 -> 32 -> 96 -> 0.
    ///         let mut next = vec![0u32; 128];
    ///         (next[0], next[64], next[32], next[96]) = (64, 32, 96, 0);
    ///         match gpu.chase(&next, 1001, 2) {
    ///             Ok((ts, end)) => assert_eq!((ts.len(), ts.iter().all(|t| t.as_nanos() > 0), end), (2, true, 64)),
    ///             Err(e) => assert!(nvrtc::available().is_err(), "{e}"),
    ///         }
    ///     }
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn chase(&self, next: &[u32], steps: u64, runs: usize) -> Result<(Vec<Duration>, u32), OffloadError> {
        if next.is_empty() || next.len() > 1 << 32 || steps == 0 || runs == 0 {
            return Err(OffloadError::Config(format!(
                "chase: needs 1..=2^32 words, at least 1 step and 1 run, got {} words, {steps} steps, {runs} runs",
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
            let mut times = Vec::with_capacity(runs);
            let mut end = [0u32; 1];
            for _ in 0..runs {
                record(1)?;
                launch_chase(s, &f, &d_next, steps, &mut out)?;
                record(2)?;
                s.memcpy_dtoh(&out, &mut end).map_err(|e| driver_err("cuMemcpyDtoHAsync(out)", e))?;
                record(3)?;
                self.wait_end(&ev[3])?;
                times.push(event_span(&ev[1], &ev[2])?);
            }
            Ok((times, end[0]))
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

    /// The device time of `rounds` round trips of one word between two SMs through the L2
    /// (two one-thread blocks, after an untimed launch of 100): divide by `2·rounds` for one
    /// write seen by the other SM. `Ok(None)` when the blocks did not run at once (a wait gave
    /// up: nothing in CUDA promises two blocks run together without a cooperative launch), so
    /// there is no figure; `rounds` in `1..=2^30` (else `Err(Config)`).
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
    ///         assert!(gpu.sm_ping_pong(0).is_err());
    ///         match gpu.sm_ping_pong(1000) {
    ///             Ok(Some(t)) => assert!(t.as_nanos() > 0),
    ///             Ok(None) => println!("the two blocks did not run at once"),
    ///             Err(e) => assert!(nvrtc::available().is_err(), "{e}"),
    ///         }
    ///     }
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn sm_ping_pong(&self, rounds: u32) -> Result<Option<Duration>, OffloadError> {
        // The flag counts to 2·rounds + 1 in a 32-bit word.
        if !(1..=1 << 30).contains(&rounds) {
            return Err(OffloadError::Config(format!(
                "sm_ping_pong: rounds must be in 1..=2^30, got {rounds}"
            )));
        }
        let f = self.function(&LATENCY, FN_SM_PING_PONG)?;
        self.with_util(|s, ev| {
            let zeroed = || s.alloc_zeros::<u32>(1).map_err(|e| driver_err("cuMemAllocAsync", e));
            let (mut flag, mut failed) = (zeroed()?, zeroed()?);
            // Untimed: loads the function's code, and starts the blocks once.
            launch_sm_ping_pong(s, &f, &mut flag, rounds.min(100), &mut failed)?;
            let mut flag = zeroed()?;
            let record = |i: usize| ev[i].record(s).map_err(|e| driver_err("cuEventRecord", e));
            record(1)?;
            launch_sm_ping_pong(s, &f, &mut flag, rounds, &mut failed)?;
            record(2)?;
            let mut gave_up = [0u32; 1];
            s.memcpy_dtoh(&failed, &mut gave_up).map_err(|e| driver_err("cuMemcpyDtoHAsync(failed)", e))?;
            record(3)?;
            self.wait_end(&ev[3])?;
            let t = event_span(&ev[1], &ev[2])?;
            Ok((gave_up[0] == 0).then_some(t))
        })
    }
}
