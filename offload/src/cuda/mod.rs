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
//! span) and [`CudaBackend::launch_costs`] (enqueue, empty-kernel and launch + sync floors).
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
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, CudaView, CudaViewMut, DriverError};
use gmprt_kernels::cuda::CudaSource;
use parking_lot::Mutex;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod launch;
pub mod libs;
mod measure;
pub mod nvrtc;
mod ops;
mod slot;
pub mod sync;

pub use launch::{
    grid_size, launch_black_scholes, launch_saxpy, launch_sgemm_batched, BLOCK_SIZE, GRID_BLOCKS_PER_SM,
};
pub use libs::{loaded_libraries, LoadedLib};
pub use measure::LaunchCosts;
pub use slot::CudaSlot;
pub use sync::{SyncMode, SYNC_ENV};

/// Checks, without panicking, that a CUDA device can be used: libcuda present
/// (`is_culib_present` first), not a stub and at least CUDA 13 (checked through
/// `/proc/self/maps` and `cuDriverGetVersion` before `cuInit`, see [`libs`]; the loaded path
/// and version are logged once), driver init, at least `ordinal + 1` devices. `Err` carries
/// the reason in plain words ("no libcuda.so", "libcuda loaded from a stub library ...",
/// "no CUDA device", ...).
///
/// # Examples
///
/// Runs with or without a GPU; [`CudaBackend::new`] agrees with it:
///
/// ```
/// use gmprt_offload::cuda::{probe, CudaBackend};
/// use gmprt_offload::OffloadError;
///
/// match probe(0) {
///     Ok(()) => assert!(CudaBackend::new(0).is_ok()),
///     // No GPU here (CI): e.g. "no libcuda.so (CUDA driver library not found)".
///     Err(reason) => {
///         assert!(!reason.is_empty());
///         assert_eq!(CudaBackend::new(0).unwrap_err(), OffloadError::NoDevice { reason });
///     }
/// }
/// // No machine has this many devices.
/// assert!(probe(usize::MAX).is_err());
/// ```
pub fn probe(ordinal: usize) -> Result<(), String> {
    // SAFETY: `is_culib_present` only tries to dlopen the candidate library names and drops
    // what it opened; no precondition. It must come before any other driver call, because
    // cudarc panics when a call has to load a library that is not there.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err("no libcuda.so (CUDA driver library not found)".to_string());
    }
    driver_library()?;
    cudarc::driver::result::init().map_err(|e| format!("cuInit failed: {e}"))?;
    let count =
        cudarc::driver::result::device::get_count().map_err(|e| format!("cuDeviceGetCount failed: {e}"))?;
    let count = usize::try_from(count).unwrap_or(0);
    if count == 0 {
        return Err("no CUDA device (driver found, 0 devices)".to_string());
    }
    if ordinal >= count {
        return Err(format!("device {ordinal} not present (only {count})"));
    }
    Ok(())
}

/// Loads the driver library (cudarc's `culib()`, through `cuDriverGetVersion`, which needs no
/// `cuInit`), then checks and logs what was loaded ([`libs`]): a stub or a driver older than
/// CUDA 13 is `Err` before `cuInit` could fail with a confusing code. Call only after
/// `is_culib_present` said yes.
fn driver_library() -> Result<(), String> {
    let mut v = 0;
    // SAFETY: the library is present (the caller checked `is_culib_present`), so cudarc's
    // loader does not panic; the pointer is valid for one write. cuDriverGetVersion may be
    // called before cuInit.
    let got = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) }.result();
    let (major, minor) = libs::split_cuda_version(v);
    match got {
        Ok(()) => libs::check_loaded(libs::CudaLib::Driver, major, &format!("{major}.{minor}")).map(|_| ()),
        Err(e) => {
            // A stub fails here: say so rather than show its error code alone.
            let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
            libs::verify(libs::CudaLib::Driver, &libs::paths_in_maps(&maps, libs::CudaLib::Driver), 0, "?")
                .err()
                .filter(|msg| msg.contains("stub"))
                .map_or_else(|| Err(format!("cuDriverGetVersion failed: {e}")), Err)
        }
    }
}

/// The driver-call error for `op`.
pub(crate) fn driver_err(op: impl Into<String>, e: DriverError) -> OffloadError {
    OffloadError::Driver { op: op.into(), msg: e.to_string() }
}

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

/// One module compiled for this device, with the functions looked up so far.
struct Loaded {
    module: Arc<CudaModule>,
    functions: HashMap<String, CudaFunction>,
}

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
    pub(crate) blas: Mutex<HashMap<usize, CudaBlas>>,
    /// Stream of the one-shot operations (`sgemm`, `pi_hits`, ...), created on first use;
    /// the lock serialises those operations so that their event timings do not interleave.
    pub(crate) util: Mutex<Option<Arc<CudaStream>>>,
    /// The sync mode asked for (the context's scheduling flag).
    pub(crate) sync: SyncMode,
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
    /// Opens device `ordinal` after [`probe`], with the sync mode of `GMPRT_CUDA_SYNC`
    /// (`Err(Config)` on a bad value, checked first); never panics.
    ///
    /// # Examples
    ///
    /// Runs with or without a GPU:
    ///
    /// ```
    /// use gmprt_offload::cuda::{probe, CudaBackend, SYNC_ENV};
    /// use gmprt_offload::OffloadError;
    ///
    /// match CudaBackend::new(0) {
    ///     Ok(gpu) => assert_eq!(gpu.ordinal(), 0),
    ///     // No GPU here (CI): the reason is probe's.
    ///     Err(e) => assert_eq!(e, OffloadError::NoDevice { reason: probe(0).unwrap_err() }),
    /// }
    /// // A bad GMPRT_CUDA_SYNC is refused before any device is looked at.
    /// std::env::set_var(SYNC_ENV, "often");
    /// match CudaBackend::new(0) {
    ///     Err(OffloadError::Config(m)) => assert!(m.contains("got `often`"), "{m}"),
    ///     other => panic!("{other:?}"),
    /// }
    /// ```
    pub fn new(ordinal: usize) -> Result<CudaBackend, OffloadError> {
        CudaBackend::with_sync(ordinal, SyncMode::from_env()?)
    }

    /// Opens device `ordinal` after [`probe`], its primary context set to `sync` (see
    /// [`sync`]) before it is retained; never panics.
    ///
    /// # Examples
    ///
    /// Runs with or without a GPU (without one, the GPU part is skipped):
    ///
    /// ```
    /// use gmprt_offload::cuda::CudaBackend;
    /// use gmprt_offload::{OffloadError, SyncMode};
    ///
    /// match CudaBackend::with_sync(0, SyncMode::Blocking) {
    ///     Ok(gpu) => {
    ///         assert_eq!(gpu.sync_mode(), SyncMode::Blocking);
    ///         assert_eq!(gpu.effective_sync_mode().unwrap(), Some(SyncMode::Blocking));
    ///     }
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn with_sync(ordinal: usize, sync: SyncMode) -> Result<CudaBackend, OffloadError> {
        probe(ordinal).map_err(|reason| OffloadError::NoDevice { reason })?;
        let dev_ordinal = i32::try_from(ordinal)
            .map_err(|_| OffloadError::Config(format!("device ordinal {ordinal} is too large")))?;
        let dev =
            cudarc::driver::result::device::get(dev_ordinal).map_err(|e| driver_err("cuDeviceGet", e))?;
        // SAFETY: the driver is loaded and initialised (probe), `dev` is a valid device; the
        // flags are scheduling flags only.
        let preset = unsafe { cudarc::driver::sys::cuDevicePrimaryCtxSetFlags_v2(dev, sync.ctx_flags()) };
        // Older drivers refuse this while the primary context is active (another backend of
        // this process, or the runtime API): then `cuCtxSetFlags` below sets it instead.
        if preset != cudarc::driver::sys::CUresult::CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE {
            preset.result().map_err(|e| driver_err(format!("cuDevicePrimaryCtxSetFlags({sync})"), e))?;
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| driver_err("cuDevicePrimaryCtxRetain", e))?;
        // `CudaContext::new` made the context current on this thread. Set the flag on the
        // live context too (CUDA >= 12.1; the driver is >= 13, see `libs`): this covers a
        // context that was already active with other flags.
        // SAFETY: this context is current on this thread (bound by `CudaContext::new`).
        unsafe { cudarc::driver::sys::cuCtxSetFlags(sync.ctx_flags()) }
            .result()
            .map_err(|e| driver_err(format!("cuCtxSetFlags({sync})"), e))?;
        // SAFETY: from here on this backend orders all its work itself (module docs: each
        // buffer lives on one stream, every run ends with a host wait on its last event, a
        // failed run synchronises its stream). No stream or buffer exists yet on this
        // context, so none was created with tracking on; the flag belongs to this
        // `CudaContext` value only (another `CudaContext::new` gets its own).
        unsafe { ctx.disable_event_tracking() };
        let name = ctx.name().map_err(|e| driver_err("cuDeviceGetName", e))?;
        let cc = ctx.compute_capability().map_err(|e| driver_err("cuDeviceGetAttribute(cc)", e))?;
        let sms = ctx
            .attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(|e| driver_err("cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)", e))?;
        let mut driver = 0;
        // SAFETY: the driver library is loaded and initialised (probe); the pointer is valid.
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver) }
            .result()
            .map_err(|e| driver_err("cuDriverGetVersion", e))?;
        Ok(CudaBackend {
            inner: Arc::new(Inner {
                ctx,
                ordinal,
                name,
                cc,
                driver,
                sms: u32::try_from(sms).unwrap_or(1).max(1),
                modules: Mutex::new(HashMap::new()),
                blas: Mutex::new(HashMap::new()),
                util: Mutex::new(None),
                sync,
                first_use: Mutex::new(FirstUse::default()),
            }),
        })
    }
    /// Device name, e.g. `NVIDIA H200`.
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
    ///         assert!(!gpu.name().is_empty());
    ///         assert!(format!("{gpu:?}").contains(gpu.name())); // `Debug` is the device's line
    ///     }
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn name(&self) -> &str {
        &self.inner.name
    }
    /// Compute capability (major, minor).
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
    ///         let (major, minor) = gpu.compute_capability();
    ///         assert!(major >= 5 && minor >= 0);
    ///         let sm = format!("sm_{major}{minor}");
    ///         assert!(format!("{gpu:?}").contains(&sm));
    ///     }
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn compute_capability(&self) -> (i32, i32) {
        self.inner.cc
    }
    /// Driver version as reported by `cuDriverGetVersion` (e.g. 13000).
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
    ///     // A driver older than CUDA 13 is refused when the backend is opened.
    ///     Ok(gpu) => assert!(gpu.driver_version() >= 13000),
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn driver_version(&self) -> i32 {
        self.inner.driver
    }
    /// The sync mode asked for at creation (`GMPRT_CUDA_SYNC`).
    ///
    /// # Examples
    ///
    /// Runs with or without a GPU (without one, `new` fails and the GPU part is skipped):
    ///
    /// ```
    /// use gmprt_offload::cuda::CudaBackend;
    /// use gmprt_offload::{OffloadError, SyncMode};
    ///
    /// match CudaBackend::new(0) {
    ///     Ok(gpu) => assert_eq!(gpu.sync_mode(), SyncMode::from_env().unwrap()),
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn sync_mode(&self) -> SyncMode {
        self.inner.sync
    }
    /// The sync mode the context runs with now (`cuCtxGetFlags`).
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
    ///     // Set at creation: the context runs with the mode asked for.
    ///     Ok(gpu) => assert_eq!(gpu.effective_sync_mode().unwrap(), Some(gpu.sync_mode())),
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn effective_sync_mode(&self) -> Result<Option<SyncMode>, OffloadError> {
        self.inner.ctx.bind_to_thread().map_err(|e| driver_err("cuCtxSetCurrent", e))?;
        let mut flags = 0;
        // SAFETY: this backend's context is current on this thread (bound above); the
        // pointer is valid for one write.
        unsafe { cudarc::driver::sys::cuCtxGetFlags(&mut flags) }
            .result()
            .map_err(|e| driver_err("cuCtxGetFlags", e))?;
        Ok(SyncMode::from_ctx_flags(flags))
    }
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
        if launch::cublas_available().is_ok() {
            self.ensure_blas(&util)?;
        }
        Ok(self.first_use())
    }
    /// Compiles and loads every embedded module and looks up its functions (see
    /// [`CudaBackend::warm_up`]).
    pub(crate) fn warm_modules(&self) -> Result<(), OffloadError> {
        for src in gmprt_kernels::cuda::ALL {
            for f in src.functions {
                self.function(src, f)?;
            }
        }
        Ok(())
    }
    /// The utility stream, created on first use.
    pub(crate) fn util_stream(&self) -> Result<Arc<CudaStream>, OffloadError> {
        let mut util = self.inner.util.lock();
        if let Some(s) = util.as_ref() {
            return Ok(s.clone());
        }
        self.inner.ctx.bind_to_thread().map_err(|e| driver_err("cuCtxSetCurrent", e))?;
        let s = self.inner.ctx.new_stream().map_err(|e| driver_err("cuStreamCreate", e))?;
        *util = Some(s.clone());
        Ok(s)
    }
    /// Creates `stream`'s cuBLAS handle if it has none (timed into [`FirstUse`]). Call
    /// before recording any event of a timed run.
    pub(crate) fn ensure_blas(&self, stream: &Arc<CudaStream>) -> Result<(), OffloadError> {
        launch::cublas_available()?;
        let key = stream.cu_stream() as usize;
        let mut handles = self.inner.blas.lock();
        if let Entry::Vacant(v) = handles.entry(key) {
            self.inner.ctx.bind_to_thread().map_err(|e| driver_err("cuCtxSetCurrent", e))?;
            let t = Instant::now();
            let blas = CudaBlas::new(stream.clone())
                .map_err(|e| OffloadError::Driver { op: "cublasCreate".into(), msg: e.to_string() })?;
            let took = t.elapsed();
            v.insert(blas);
            let mut fu = self.inner.first_use.lock();
            fu.cublas_handle += took;
            fu.cublas_handles += 1;
        }
        Ok(())
    }
    /// Device ordinal.
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
    ///         assert_eq!(gpu.ordinal(), 0);
    ///         assert!(format!("{gpu:?}").starts_with("cuda:0 "));
    ///     }
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn ordinal(&self) -> usize {
        self.inner.ordinal
    }
    /// Number of streaming multiprocessors.
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
    ///     // The grid cap of every launch scales with it.
    ///     Ok(gpu) => assert!(gpu.sm_count() >= 1),
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn sm_count(&self) -> u32 {
        self.inner.sms
    }
    /// The context (event tracking disabled: whoever allocates on it must follow the
    /// ordering rules in the module docs).
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
    ///         // One context per backend, shared by its clones.
    ///         assert!(std::sync::Arc::ptr_eq(gpu.context(), gpu.clone().context()));
    ///         assert_eq!(gpu.context().ordinal(), gpu.ordinal());
    ///     }
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.inner.ctx
    }
    /// `function` of `src`, compiling the module with NVRTC for this device's architecture
    /// on first use (cached).
    ///
    /// # Examples
    ///
    /// Runs with or without a GPU (without one, `new` fails and the GPU part is skipped); with a GPU, compiling needs NVRTC:
    ///
    /// ```
    /// use gmprt_offload::cuda::{nvrtc, CudaBackend};
    /// use gmprt_offload::kernels::cuda::{FN_SAXPY, SAXPY};
    /// use gmprt_offload::OffloadError;
    ///
    /// match CudaBackend::new(0) {
    ///     Ok(gpu) => match gpu.function(&SAXPY, FN_SAXPY) {
    ///         Ok(_) => {
    ///             assert_eq!(gpu.first_use().modules, 1);
    ///             gpu.function(&SAXPY, FN_SAXPY).unwrap(); // cached: not compiled again
    ///             assert_eq!(gpu.first_use().modules, 1);
    ///             let err = gpu.function(&SAXPY, "no_such_kernel").unwrap_err();
    ///             assert!(err.to_string().contains("cuModuleGetFunction no_such_kernel (module saxpy)"), "{err}");
    ///         }
    ///         Err(e) => assert!(nvrtc::available().is_err(), "{e}"),
    ///     },
    ///     // No GPU here (CI): nothing opened, the reason in the error.
    ///     Err(e) => assert!(matches!(e, OffloadError::NoDevice { .. }), "{e}"),
    /// }
    /// ```
    pub fn function(&self, src: &CudaSource, function: &str) -> Result<CudaFunction, OffloadError> {
        // One lock for lookup and compile: a source is compiled once even when two slots ask
        // for it at the same time. Compiles happen once per source per device, so holding the
        // lock through one (~0.1 s) costs nothing after warm-up; the hot path is one lookup.
        let mut modules = self.inner.modules.lock();
        if let Some(f) = modules.get(src.name).and_then(|m| m.functions.get(function)) {
            return Ok(f.clone());
        }
        let loaded = match modules.entry(src.name) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => {
                let t = Instant::now();
                let ptx = nvrtc::compile(src, self.inner.cc)?;
                let compiled = Instant::now();
                let module = self.inner.ctx.load_module(ptx).map_err(|e| OffloadError::Driver {
                    op: format!("load module {}", src.name),
                    msg: load_hint(e),
                })?;
                let mut fu = self.inner.first_use.lock();
                fu.nvrtc_compile += compiled - t;
                fu.module_load += compiled.elapsed();
                fu.modules += 1;
                v.insert(Loaded { module, functions: HashMap::new() })
            }
        };
        if function.contains('\0') {
            return Err(OffloadError::Driver {
                op: format!("cuModuleGetFunction {function:?}"),
                msg: "name contains a NUL byte".into(),
            });
        }
        let t = Instant::now();
        let f = loaded.module.load_function(function).map_err(|e| OffloadError::Driver {
            op: format!("cuModuleGetFunction {function} (module {})", src.name),
            msg: e.to_string(),
        })?;
        // With lazy loading (CUDA_MODULE_LOADING=LAZY, the default) a function's code is
        // loaded here: part of the module's first-use cost.
        self.inner.first_use.lock().module_load += t.elapsed();
        loaded.functions.insert(function.to_string(), f.clone());
        Ok(f)
    }
}

/// A module-load error, with the usual cause spelled out when it is a PTX version mismatch.
fn load_hint(e: DriverError) -> String {
    use cudarc::driver::sys::CUresult;
    match e.0 {
        CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION => format!(
            "{e} (the NVRTC library is newer than the driver: use an NVRTC no newer than the \
             driver's CUDA version)"
        ),
        _ => e.to_string(),
    }
}

impl Backend for CudaBackend {
    fn describe(&self) -> String {
        let (major, minor) = self.inner.cc;
        let d = self.inner.driver;
        let mut line = format!(
            "cuda:{} {} (sm_{major}{minor}, driver {}.{}, sync {}",
            self.inner.ordinal,
            self.inner.name,
            d / 1000,
            (d % 1000) / 10,
            self.inner.sync
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

/// What a [`CudaJob`] gets to enqueue its launch on a CUDA slot.
///
/// # Examples
///
/// A job that copies its input words to its output with the context's stream and buffers
/// (a device-to-device copy, no kernel). It runs on the Host slot everywhere, and on a CUDA
/// slot too where a GPU is usable (skipped without one, so this passes on CI):
///
/// ```
/// use gmprt_offload::cuda::{CudaBackend, CudaJob, LaunchCtx};
/// use gmprt_offload::{Backend, Device, Job, OffloadError, Phases};
///
/// struct Copy;
/// impl Job for Copy {
///     fn name(&self) -> &'static str { "copy" }
///     fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
///         output[..n].copy_from_slice(&input[..n]);
///         Ok(())
///     }
/// }
/// impl CudaJob for Copy {
///     fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
///         let (src, mut dst) = (ctx.input.slice(..n), ctx.output.slice_mut(..n));
///         ctx.stream.memcpy_dtod(&src, &mut dst).map_err(|e| OffloadError::Driver {
///             op: format!("cuMemcpyDtoDAsync on {}", ctx.backend.name()),
///             msg: e.to_string(),
///         })
///     }
/// }
///
/// let run_on = |backend: &dyn Backend| {
///     let mut slot = backend.new_slot(3, 3).unwrap();
///     slot.staging_in().copy_from_slice(&[7, 8, 9]);
///     slot.run(&Copy, 3, 3, 3, Phases::ALL).unwrap();
///     slot.staging_out().to_vec()
/// };
/// assert_eq!(run_on(Device::host().backend()), [7, 8, 9]);
/// if let Ok(gpu) = CudaBackend::new(0) {
///     assert_eq!(run_on(&gpu), [7, 8, 9]);
/// }
/// ```
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

/// A [`Job`](crate::Job) that can also be launched on a CUDA slot: what a [`Slot`] runs
/// (Host and simulated slots call [`Job::run_host`](crate::Job::run_host), a CUDA slot
/// [`launch_cuda`](CudaJob::launch_cuda)). A job with no CUDA kernel returns an error from
/// `launch_cuda`.
///
/// # Examples
///
/// A host-only job: its CUDA side says so. It runs on the Host slot; on a CUDA slot (where a
/// GPU is usable; skipped without one, so this passes on CI) its batch fails with that error.
///
/// ```
/// use gmprt_offload::cuda::{CudaBackend, CudaJob, LaunchCtx};
/// use gmprt_offload::{Backend, Device, Job, OffloadError, Phases};
///
/// struct Count;
/// impl Job for Count {
///     fn name(&self) -> &'static str { "count" }
///     fn run_host(&self, n: usize, _input: &[u32], output: &mut [u32]) -> Result<(), String> {
///         (0..n).for_each(|i| output[i] = i as u32);
///         Ok(())
///     }
/// }
/// impl CudaJob for Count {
///     fn launch_cuda(&self, _ctx: &mut LaunchCtx<'_>, _n: usize) -> Result<(), OffloadError> {
///         Err(OffloadError::Config("count has no CUDA kernel".into()))
///     }
/// }
///
/// let mut slot = Device::host().backend().new_slot(0, 4).unwrap();
/// slot.run(&Count, 4, 0, 4, Phases::ALL).unwrap();
/// assert_eq!(slot.staging_out(), [0, 1, 2, 3]);
/// if let Ok(gpu) = CudaBackend::new(0) {
///     let mut slot = gpu.new_slot(0, 4).unwrap();
///     let err = slot.run(&Count, 4, 0, 4, Phases::ALL).unwrap_err();
///     assert_eq!(err, OffloadError::Config("count has no CUDA kernel".into()));
/// }
/// ```
pub trait CudaJob: crate::Job {
    /// Enqueues the computation of `n` items on `ctx`'s stream, reading `ctx`'s input buffer
    /// and writing its output buffer. Must not synchronise.
    fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError>;
}

/// `PhaseTimes` from four events recorded in order on one stream at the phase boundaries; the
/// caller has already waited on the last one.
pub(crate) fn phase_times(
    ev: &[cudarc::driver::CudaEvent; 4],
    phases: crate::Phases,
) -> Result<PhaseTimes, OffloadError> {
    let span = |a: &cudarc::driver::CudaEvent,
                b: &cudarc::driver::CudaEvent,
                on: bool|
     -> Result<std::time::Duration, OffloadError> {
        if !on {
            return Ok(std::time::Duration::ZERO);
        }
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
    };
    Ok(PhaseTimes {
        h2d: span(&ev[0], &ev[1], phases.h2d)?,
        kernel: span(&ev[1], &ev[2], phases.kernel)?,
        d2h: span(&ev[2], &ev[3], phases.d2h)?,
    })
}
