//! [`CudaBackend::launch_costs`]: what an event span on an idle GPU contains besides the
//! kernel — the host's enqueue cost, the device's cost of an empty kernel, and the round trip
//! of a launch plus a synchronisation, spinning and sleeping.
//!
//! Why: a slot's kernel span (`ev[1]..ev[2]`) on an idle GPU starts when the GPU reaches
//! `ev[1]`, which can be before the host has finished enqueuing the launch, so it includes
//! part of the host's API latency; with two slots it can also include waiting for the other
//! stream's copy engine. These figures let calibration and the GPU run separate those floors
//! from the kernels' own time.
//!
//! Protocol: on the utility stream (its lock held for the whole call, so nothing else of this
//! backend's one-shot operations interleaves), with the `gmprt_empty` kernel (one block of
//! one thread) already compiled and one launch done untimed:
//! 1. **enqueue**: host time of `n` back-to-back launches / `n` (then the stream is drained);
//! 2. **empty kernel**: events before and after `n` back-to-back launches, elapsed / `n`
//!    (the device's per-launch cost when the queue is full: the throughput floor);
//! 3. **launch + sync**: `n` times (launch, `cuStreamSynchronize`), host time / `n`, once with
//!    the context's flag set to `CU_CTX_SCHED_SPIN` and once to `CU_CTX_SCHED_BLOCKING_SYNC`
//!    (`cuCtxSetFlags`, CUDA ≥ 12.1), then the flag is restored. The latency floor of one
//!    batch, for each sync mode.
//!
//! Changing the context's flag affects every thread waiting on this context: do not run
//! this beside timed work (calibration runs it alone).
use super::{driver_err, CudaBackend, SyncMode};
use crate::error::OffloadError;
use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig};
use gmprt_kernels::cuda::{CALIB, FN_EMPTY};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Launch-overhead figures of one device (see [`CudaBackend::launch_costs`]); each is a mean
/// over `launches`.
///
/// # Examples
///
/// ```
/// use gmprt_offload::{LaunchCosts, SyncMode};
/// use std::time::Duration;
///
/// let costs = LaunchCosts {
///     launches: 1000,
///     enqueue: Duration::from_nanos(2_500),
///     empty_kernel: Duration::from_nanos(1_250),
///     launch_sync_spin: Duration::from_micros(8),
///     launch_sync_blocking: Duration::from_micros(15),
///     sync_mode: SyncMode::Auto,
/// };
/// assert_eq!(
///     costs.to_string(),
///     "enqueue 2.50 µs, empty kernel 1.25 µs, launch+sync spin 8.00 µs / blocking 15.00 µs \
///      (means of 1000 launches; sync mode auto)"
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LaunchCosts {
    /// Launches per figure.
    pub launches: usize,
    /// Host time to enqueue one empty launch (`cuLaunchKernel` returning).
    pub enqueue: Duration,
    /// Device time per empty kernel, back to back (events around all launches / launches).
    pub empty_kernel: Duration,
    /// One launch + `cuStreamSynchronize`, host time, context flag `CU_CTX_SCHED_SPIN`.
    pub launch_sync_spin: Duration,
    /// One launch + `cuStreamSynchronize`, host time, context flag
    /// `CU_CTX_SCHED_BLOCKING_SYNC`.
    pub launch_sync_blocking: Duration,
    /// The sync mode the backend was opened with (the context's flags found before the
    /// measurement are restored after it).
    pub sync_mode: SyncMode,
}

impl std::fmt::Display for LaunchCosts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        write!(
            f,
            "enqueue {:.2} µs, empty kernel {:.2} µs, launch+sync spin {:.2} µs / blocking {:.2} µs \
             (means of {} launches; sync mode {})",
            us(self.enqueue),
            us(self.empty_kernel),
            us(self.launch_sync_spin),
            us(self.launch_sync_blocking),
            self.launches,
            self.sync_mode
        )
    }
}

/// The empty kernel's launch shape: one block of one thread.
const ONE: LaunchConfig = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };

/// Enqueues one `gmprt_empty` on `s`.
fn launch_empty(s: &Arc<CudaStream>, f: &CudaFunction) -> Result<(), OffloadError> {
    let mut b = s.launch_builder(f);
    // SAFETY: `gmprt_empty()` takes no argument and touches no memory.
    unsafe { b.launch(ONE) }.map(|_| ()).map_err(|e| driver_err("cuLaunchKernel gmprt_empty", e))
}

/// Sets the current context's scheduling flag (the context must be current).
fn set_ctx_flags(mode: SyncMode) -> Result<(), OffloadError> {
    set_sched_bits(mode.ctx_flags())
}

/// Sets the current context's scheduling bits to `sched` (masked; the context must be
/// current).
fn set_sched_bits(sched: u32) -> Result<(), OffloadError> {
    let sched = sched & cudarc::driver::sys::CUctx_flags::CU_CTX_SCHED_MASK as u32;
    // SAFETY: the caller made this backend's context current; only scheduling bits are
    // passed, which cuCtxSetFlags accepts on a live context.
    unsafe { cudarc::driver::sys::cuCtxSetFlags(sched) }
        .result()
        .map_err(|e| driver_err(format!("cuCtxSetFlags({sched:#x})"), e))
}

/// The current context's flags (the context must be current).
fn ctx_flags() -> Result<u32, OffloadError> {
    let mut flags = 0;
    // SAFETY: the caller made this backend's context current; the pointer is valid for one
    // write.
    unsafe { cudarc::driver::sys::cuCtxGetFlags(&mut flags) }
        .result()
        .map_err(|e| driver_err("cuCtxGetFlags", e))?;
    Ok(flags)
}

impl CudaBackend {
    /// Measures the launch floors (module docs: enqueue cost, empty-kernel device time,
    /// launch + sync spinning and blocking), each a mean over `launches` (≥ 1, at most
    /// 100 000; ~1000 is plenty — beyond the driver's launch queue, about a thousand pending
    /// launches, `cuLaunchKernel` waits for room and the enqueue figure includes that wait). Compiles the calibration module first if needed (outside
    /// every timing). Must not run beside timed work: it switches the context's sync flag for
    /// a moment. `launches` out of range is `Err(Config)`.
    ///
    /// # Examples
    ///
    /// Runs with or without a GPU (without one, `new` fails and the GPU part is skipped);
    /// with a GPU, the empty kernel needs NVRTC:
    ///
    /// ```
    /// use gmprt_offload::cuda::{nvrtc, CudaBackend};
    /// use gmprt_offload::OffloadError;
    ///
    /// match CudaBackend::new(0) {
    ///     Ok(gpu) => {
    ///         let err = gpu.launch_costs(0).unwrap_err();
    ///         assert!(err.to_string().contains("launches must be in 1..=100000, got 0"), "{err}");
    ///         match gpu.launch_costs(100) {
    ///             Ok(costs) => {
    ///                 assert_eq!((costs.launches, costs.sync_mode), (100, gpu.sync_mode()));
    ///                 // The context's flag is restored afterwards.
    ///                 assert_eq!(gpu.effective_sync_mode().unwrap(), Some(gpu.sync_mode()));
    ///             }
    ///             Err(e) => assert!(nvrtc::available().is_err(), "{e}"),
    ///         }
    ///     }
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn launch_costs(&self, launches: usize) -> Result<LaunchCosts, OffloadError> {
        if !(1..=100_000).contains(&launches) {
            return Err(OffloadError::Config(format!(
                "launch_costs: launches must be in 1..=100000, got {launches}"
            )));
        }
        let f = self.function(&CALIB, FN_EMPTY)?;
        let sync_mode = self.sync_mode();
        self.with_util(|s, ev| {
            let sync =
                |s: &Arc<CudaStream>| s.synchronize().map_err(|e| driver_err("cuStreamSynchronize", e));
            let per = |d: Duration| d / u32::try_from(launches).unwrap_or(u32::MAX);
            // Untimed: the first launch of a function can load its code (lazy loading).
            launch_empty(s, &f)?;
            sync(s)?;

            // 1. Enqueue cost.
            let t = Instant::now();
            for _ in 0..launches {
                launch_empty(s, &f)?;
            }
            let enqueue = per(t.elapsed());
            sync(s)?;

            // 2. Device time per empty kernel, back to back. The end event may be a
            // blocking-sync one (with_util's last): timing stays enabled.
            let record = |i: usize| ev[i].record(s).map_err(|e| driver_err("cuEventRecord", e));
            record(0)?;
            for _ in 0..launches {
                launch_empty(s, &f)?;
            }
            record(3)?;
            ev[3].synchronize().map_err(|e| driver_err("cuEventSynchronize", e))?;
            // SAFETY: both events are live, were recorded on one stream, and have completed
            // (waited on just above).
            let ms = unsafe { cudarc::driver::result::event::elapsed(ev[0].cu_event(), ev[3].cu_event()) }
                .map_err(|e| driver_err("cuEventElapsedTime", e))?;
            let empty_kernel = if ms.is_finite() && ms > 0.0 {
                per(Duration::from_secs_f64(f64::from(ms) / 1e3))
            } else {
                Duration::ZERO
            };

            // 3. Launch + sync, per context flag; the flags found are restored whatever
            // happens (with_util made this backend's context current).
            let found = ctx_flags()?;
            let round_trips = |mode: SyncMode| -> Result<Duration, OffloadError> {
                set_ctx_flags(mode)?;
                launch_empty(s, &f)?; // one untimed round trip in this mode
                sync(s)?;
                let t = Instant::now();
                for _ in 0..launches {
                    launch_empty(s, &f)?;
                    sync(s)?;
                }
                Ok(per(t.elapsed()))
            };
            let spin = round_trips(SyncMode::Spin);
            let blocking = spin.is_ok().then(|| round_trips(SyncMode::Blocking));
            let restored = set_sched_bits(found);
            let launch_sync_spin = spin?;
            let launch_sync_blocking = blocking.unwrap_or(Ok(Duration::ZERO))?;
            restored?;
            Ok(LaunchCosts {
                launches,
                enqueue,
                empty_kernel,
                launch_sync_spin,
                launch_sync_blocking,
                sync_mode,
            })
        })
    }
}
