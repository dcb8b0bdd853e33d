//! CUDA device through cudarc (dynamic loading): nothing here links against CUDA, and nothing
//! panics when the driver, NVRTC or cuBLAS library is missing — each is looked for
//! (`is_culib_present`) before its first call, and its absence is an [`OffloadError`].
//!
//! Pieces: [`probe`] (is a device usable?), [`CudaBackend`] (context, NVRTC modules compiled
//! once per device architecture and cached, cuBLAS handles, one-shot measured operations),
//! the slot ([`Backend::new_slot`], in `slot`), the [`CudaJob`] trait a slot launches, and the
//! launch functions this crate's jobs call ([`launch_black_scholes`], [`launch_saxpy`],
//! [`launch_sgemm_batched`], in `launch`).
//! Around them: [`libs`] (which libcuda/libnvrtc/libcublas was loaded, from where, at which
//! version — a stub or a CUDA 12/11 fallback is refused; [`loaded_libraries`]), [`sync`] (the
//! context's sync mode, `GMPRT_CUDA_SYNC`), [`FirstUse`] (compile, module load and cuBLAS
//! handle costs, paid by [`CudaBackend::warm_up`] and slot creation, never inside a timed
//! span), [`CudaBackend::launch_costs`] (enqueue, empty-kernel and launch + sync floors) and,
//! in `latency`, one thread's dependent steps ([`CudaBackend::chase`], [`CudaBackend::fma_chain`]:
//! the GPU rungs of `examples/latency_ladder.rs`).
//!
//! Ordering protocol (why no buffer is reused too early, and why two slots overlap):
//! * cudarc's per-buffer event tracking is **disabled** for this backend's context (right
//!   after it is created, before any stream or buffer exists). Ordering is ours instead, and
//!   rests on three rules: (1) every device buffer is used on exactly one stream — a slot's
//!   buffers on the slot's stream, a one-shot operation's buffers on the backend's utility
//!   stream — so stream order alone orders its copies and kernels, and its free (cudarc frees
//!   on the owning stream) comes after its last use; (2) every run ends with the host waiting
//!   on an event recorded after the run's last operation, so when `Slot::run` (or a one-shot
//!   operation) returns, nothing on the device reads the pinned input or writes the pinned
//!   output any more, and the host may touch them; (3) on an error in the middle of a run the
//!   stream is synchronised before returning, for the same reason. With tracking on, cudarc
//!   would add a `cuStreamWaitEvent` and a `cuEventRecord` per buffer per operation (all on the
//!   same stream here, so they order nothing) — pure per-batch overhead.
//! * Each slot owns a non-blocking stream (no implicit sync with the legacy default stream)
//!   and shares no buffer with any other slot, so the copy of one slot's batch overlaps the
//!   kernel of another's on a GPU with separate copy engines.
//! * cuBLAS: one handle per stream (cuBLAS keeps its workspace per handle, and a handle whose
//!   stream is switched between concurrently running streams would share that workspace
//!   between them), created on the first GEMM on that stream and dropped with the slot.
use crate::backend::{host_available, Available, Backend, MemoryNeed, MemoryParts, Slot};
use crate::error::OffloadError;
use crate::PhaseTimes;
use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, DriverError};
use gmprt_kernels::cuda::CudaSource;
use parking_lot::Mutex;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod context;
mod gemm;
mod handles;
mod latency;
mod launch;
pub mod libs;
mod measure;
mod modules;
pub mod nvrtc;
mod ops;
mod slot;
pub mod sync;

pub use crate::job::{CudaJob, LaunchCtx, LaunchDevice};
pub(crate) use context::driver_err;
pub use context::probe;
pub use gemm::{launch_sgemm_batched, warm_sgemm_batched};
pub use launch::{
    grid_size, launch_black_scholes, launch_black_scholes_by_segment, launch_black_scholes_selected,
    launch_saxpy, BLOCK_SIZE, GRID_BLOCKS_PER_SM,
};
pub use libs::{loaded_libraries, LoadedLib};
pub use measure::LaunchCosts;
use modules::Loaded;
pub use slot::{mapped_io_from_env, CudaSlot, MAPPED_IO_ENV, MAPPED_IO_MAX_BYTES, SPIN_BEFORE_BLOCK};
pub use sync::{SyncMode, SYNC_ENV};

/// First-use costs of a [`CudaBackend`], paid once per process and device, outside every
/// timed span: [`CudaBackend::warm_up`] (called by [`Device::warm_up`](crate::Device::warm_up))
/// compiles and loads every module and creates the one-shot stream's cuBLAS handle; a slot's
/// creation loads the modules too and creates its own stream's handle — all before any event
/// is recorded, so no [`PhaseTimes`] ever contains them.
///
/// # Examples
///
/// ```
/// use gmprt_offload::FirstUse;
/// use std::time::Duration;
///
/// assert_eq!(FirstUse::default().modules, 0);
/// let paid = FirstUse {
///     nvrtc_compile: Duration::from_millis(120),
///     module_load: Duration::from_micros(4500),
///     modules: 4,
///     cublas_handle: Duration::from_millis(30),
///     cublas_handles: 1,
/// };
/// assert_eq!(
///     paid.to_string(),
///     "first use: NVRTC compile 120.0 ms + module load 4.5 ms (4 modules), cuBLAS handles 30.0 ms (1)"
/// );
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FirstUse {
    /// NVRTC compile time, summed over the modules compiled so far.
    pub nvrtc_compile: Duration,
    /// `cuModuleLoadData` (the driver's PTX JIT to this device's SASS) plus function look-ups,
    /// summed over the modules loaded so far.
    pub module_load: Duration,
    /// Modules compiled and loaded so far.
    pub modules: u32,
    /// `cublasCreate` (library load on the first, workspace set-up), summed over the handles
    /// created so far.
    pub cublas_handle: Duration,
    /// cuBLAS handles created so far (one per stream that runs a GEMM).
    pub cublas_handles: u32,
}

impl std::fmt::Display for FirstUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        write!(
            f,
            "first use: NVRTC compile {:.1} ms + module load {:.1} ms ({} modules), cuBLAS handles {:.1} ms ({})",
            ms(self.nvrtc_compile),
            ms(self.module_load),
            self.modules,
            ms(self.cublas_handle),
            self.cublas_handles
        )
    }
}

/// A GEMM shape on a stream, for the warm-up set: (stream key, m, n, k, precision).
pub(crate) type GemmShape = (usize, usize, usize, usize, gmprt_kernels::precision::Precision);

/// The state behind a [`CudaBackend`] (shared by its clones and its slots).
pub(crate) struct Inner {
    /// The device's primary context, event tracking disabled (see the module docs).
    pub(crate) ctx: Arc<CudaContext>,
    ordinal: usize,
    name: String,
    cc: (i32, i32),
    driver: i32,
    /// Streaming multiprocessors (for grid sizes).
    pub(crate) sms: u32,
    /// Module per source name, compiled and loaded on first use.
    modules: Mutex<HashMap<&'static str, Loaded>>,
    /// cuBLAS handle per stream (keyed by the `CUstream` address), created on first use.
    /// The map's lock is held only to find or insert a handle; a GEMM holds its own handle's
    /// lock (uncontended: one stream is used by one thread at a time), so GEMMs on different
    /// slots never wait for each other here.
    pub(crate) blas: Mutex<HashMap<usize, Arc<Mutex<CudaBlas>>>>,
    /// GEMM shapes already run once on a stream: the one-shot `sgemm` and a slot's batched
    /// GEMM run each new shape once untimed first (`ops.rs`, `gemm::warm_sgemm_batched`).
    pub(crate) gemm_warm: Mutex<std::collections::HashSet<GemmShape>>,
    /// Stream of the one-shot operations (`sgemm`, `pi_hits`, ...), created on first use;
    /// the lock serialises those operations so that their event timings do not interleave.
    pub(crate) util: Mutex<Option<Arc<CudaStream>>>,
    /// The one-shot operations' four phase events, created at the first one and reused (taken
    /// only under `util`, after it): creating and destroying four events per call cost every
    /// `sgemm`, `option_paths_sum` and `option_paths_sum_many` its own driver calls.
    pub(crate) util_events: Mutex<Option<[cudarc::driver::CudaEvent; 4]>>,
    /// The sync mode asked for (the context's scheduling flag).
    pub(crate) sync: SyncMode,
    /// Whether slots may map small runs' I/O (`GMPRT_CUDA_MAPPED_IO`, see `slot`).
    pub(crate) mapped_io: bool,
    /// First-use costs so far.
    first_use: Mutex<FirstUse>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // cuBLAS frees its workspace through the runtime API, which acts on the calling
        // thread's current context: make it this device's before the handles go (cudarc's
        // `CudaBlas` does not bind, and panics if the destroy fails).
        if self.ctx.bind_to_thread().is_ok() {
            self.blas.get_mut().clear();
        }
    }
}

/// One CUDA device: context, NVRTC-compiled modules (cached per device architecture),
/// cuBLAS handle. Implements [`Backend`]. Cloning is cheap and shares everything.
///
/// # Examples
///
/// Runs with or without a GPU (without one, `new` fails and the GPU part is skipped):
///
/// ```
/// use gmprt_offload::cuda::CudaBackend;
/// use gmprt_offload::{Backend, OffloadError};
///
/// match CudaBackend::new(0) {
///     Ok(gpu) => {
///         // One line naming the device, e.g. "cuda:0 NVIDIA H100 ... (sm_90, driver 13.0, sync auto; ...)".
///         let line = gpu.describe();
///         assert!(line.starts_with(&format!("cuda:0 {} (sm_", gpu.name())), "{line}");
///         assert!(line.contains(&format!("sync {}", gpu.sync_mode())), "{line}");
///     }
///     // No GPU here (CI): nothing opened, the reason in the error.
///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
/// }
/// ```
#[derive(Clone)]
pub struct CudaBackend {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl CudaBackend {
    /// First-use costs paid so far (see [`FirstUse`]).
    ///
    /// # Examples
    ///
    /// Runs with or without a GPU (without one, `new` fails and the GPU part is skipped):
    ///
    /// ```
    /// use gmprt_offload::cuda::CudaBackend;
    /// use gmprt_offload::OffloadError;
    ///
    /// match CudaBackend::new(0) {
    ///     Ok(gpu) => {
    ///         // Nothing compiled yet on a fresh backend of a fresh process.
    ///         assert_eq!(gpu.first_use().modules, 0);
    ///         if gpu.warm_up().is_ok() {
    ///             assert_eq!(gpu.first_use().modules as usize, gmprt_offload::kernels::cuda::ALL.len());
    ///         }
    ///     }
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn first_use(&self) -> FirstUse {
        *self.inner.first_use.lock()
    }

    /// Pays every first-use cost now, outside any timed span: compiles and loads every
    /// embedded module (`gmprt_kernels::cuda::ALL`) and looks up each of its functions, then
    /// creates the cuBLAS handle of the utility stream (the one-shot operations' stream) when
    /// cuBLAS is usable. Cheap after the first call (cached look-ups). Returns the costs paid
    /// so far. A missing or refused cuBLAS is not an error here (a GEMM reports it).
    ///
    /// # Examples
    ///
    /// Runs with or without a GPU (without one, `new` fails and the GPU part is skipped); with a GPU, `warm_up` needs NVRTC:
    ///
    /// ```
    /// use gmprt_offload::cuda::{nvrtc, CudaBackend};
    /// use gmprt_offload::OffloadError;
    ///
    /// match CudaBackend::new(0) {
    ///     Ok(gpu) => match gpu.warm_up() {
    ///         Ok(paid) => {
    ///             assert_eq!(paid.modules as usize, gmprt_offload::kernels::cuda::ALL.len());
    ///             // Cheap after the first call: nothing is compiled twice.
    ///             assert_eq!(gpu.warm_up().unwrap().modules, paid.modules);
    ///         }
    ///         Err(e) => assert!(nvrtc::available().is_err(), "{e}"),
    ///     },
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn warm_up(&self) -> Result<FirstUse, OffloadError> {
        self.warm_modules()?;
        let util = self.util_stream()?;
        if gemm::cublas_available().is_ok() {
            self.ensure_blas(&util)?;
        }
        Ok(self.first_use())
    }
}

impl Backend for CudaBackend {
    fn describe(&self) -> String {
        let (major, minor) = self.inner.cc;
        let d = self.inner.driver;
        let mut line = format!(
            "cuda:{} {} (sm_{major}{minor}, driver {}.{}, sync {}, mapped I/O {}",
            self.inner.ordinal,
            self.inner.name,
            d / 1000,
            (d % 1000) / 10,
            self.inner.sync,
            if self.inner.mapped_io {
                format!("up to {} KiB", MAPPED_IO_MAX_BYTES >> 10)
            } else {
                "off".into()
            }
        );
        for lib in loaded_libraries() {
            line.push_str(&format!("; {lib}"));
        }
        let fu = self.first_use();
        if fu.modules > 0 || fu.cublas_handles > 0 {
            line.push_str(&format!("; {fu}"));
        }
        line.push(')');
        line
    }
    fn new_slot(&self, in_words: usize, out_words: usize) -> Result<Box<dyn Slot>, OffloadError> {
        Ok(Box::new(CudaSlot::new(self.clone(), in_words, out_words)?))
    }

    /// Two memories, two checks, both before anything is allocated: the staging buffers are
    /// page-locked host memory (`cuMemHostAlloc`: it cannot be swapped out, so it must fit in
    /// what the host has available) and, with the caller's item queues, are checked against
    /// [`host_available`]; the device-side copies are checked against the free GPU memory
    /// `cuMemGetInfo` reports for this device's context. If `cuMemGetInfo` itself fails, the
    /// device side counts as unknown and the allocations decide (they fail with
    /// `Err(Driver)`, never an abort).
    fn check_memory(&self, need: &MemoryNeed) -> Result<(), OffloadError> {
        let host = MemoryParts { staging: true, queues: true, ..MemoryParts::default() };
        need.check("host memory (pinned staging)", host, &host_available())?;
        // `mem_get_info` binds this device's context to the calling thread first.
        let free = self
            .inner
            .ctx
            .mem_get_info()
            .map(|(free, _total)| free as u64)
            .map_err(|e| format!("cuMemGetInfo failed: {e}"));
        let gpu = MemoryParts { device_copies: true, ..MemoryParts::default() };
        let memory = format!("GPU memory on cuda:{}", self.inner.ordinal);
        need.check(&memory, gpu, &Available { bytes: free, source: "free per cuMemGetInfo" })
    }
}

impl crate::job::LaunchDevice for CudaBackend {
    fn name(&self) -> &str {
        CudaBackend::name(self)
    }
    fn sm_count(&self) -> u32 {
        CudaBackend::sm_count(self)
    }
    fn function(&self, src: &CudaSource, function: &str) -> Result<CudaFunction, OffloadError> {
        CudaBackend::function(self, src, function)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The device time between two events recorded in that order on one stream, of which the
/// caller has already waited on the later one.
pub(crate) fn event_span(
    a: &cudarc::driver::CudaEvent,
    b: &cudarc::driver::CudaEvent,
) -> Result<std::time::Duration, OffloadError> {
    // SAFETY: both events are live, were recorded on one stream, and have completed (the
    // caller waited on the last event recorded after them), which is all
    // cuEventElapsedTime needs. (cudarc's `elapsed_ms` would synchronise both again.)
    let ms = unsafe { cudarc::driver::result::event::elapsed(a.cu_event(), b.cu_event()) }
        .map_err(|e| driver_err("cuEventElapsedTime", e))?;
    // Events are recorded in order on one stream, so `ms >= 0`; guard anyway (a NaN or a
    // negative value from a broken driver must not panic `from_secs_f64`).
    Ok(if ms.is_finite() && ms > 0.0 {
        std::time::Duration::from_secs_f64(f64::from(ms) / 1e3)
    } else {
        std::time::Duration::ZERO
    })
}

/// `PhaseTimes` from four events recorded in order on one stream at the phase boundaries; the
/// caller has already waited on the last one. A phase not in `phases` is zero, unread.
pub(crate) fn phase_times(
    ev: &[cudarc::driver::CudaEvent; 4],
    phases: crate::Phases,
) -> Result<PhaseTimes, OffloadError> {
    let span = |a, b, on: bool| if on { event_span(a, b) } else { Ok(std::time::Duration::ZERO) };
    Ok(PhaseTimes {
        h2d: span(&ev[0], &ev[1], phases.h2d)?,
        kernel: span(&ev[1], &ev[2], phases.kernel)?,
        d2h: span(&ev[2], &ev[3], phases.d2h)?,
    })
}
