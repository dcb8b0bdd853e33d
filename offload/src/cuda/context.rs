//! The device and its context: [`probe`] (is a device usable?), opening it
//! ([`CudaBackend::new`], [`CudaBackend::with_sync`]: the primary context with event tracking
//! off, see the parent module's ordering protocol) and what it reports about itself.
use super::*;

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
pub(super) fn driver_library() -> Result<(), String> {
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
    /// // A bad GMPRT_CUDA_SYNC is refused before any device is looked at.
    /// // SAFETY: a doctest runs in its own process, and no thread has started in it yet (no
    /// // device has been opened: a GPU's driver starts threads).
    /// unsafe { std::env::set_var(SYNC_ENV, "often") };
    /// match CudaBackend::new(0) {
    ///     Err(OffloadError::Config(m)) => assert!(m.contains("got `often`"), "{m}"),
    ///     other => panic!("{other:?}"),
    /// }
    /// // SAFETY: as above; the refusal opened no device.
    /// unsafe { std::env::remove_var(SYNC_ENV) };
    /// match CudaBackend::new(0) {
    ///     Ok(gpu) => assert_eq!(gpu.ordinal(), 0),
    ///     // No GPU here (CI): the reason is probe's.
    ///     Err(e) => assert_eq!(e, OffloadError::NoDevice { reason: probe(0).unwrap_err() }),
    /// }
    /// ```
    pub fn new(ordinal: usize) -> Result<CudaBackend, OffloadError> {
        CudaBackend::with_sync(ordinal, SyncMode::from_env()?)
    }

    /// Opens device `ordinal` after [`probe`], its primary context set to `sync` (see
    /// [`sync`]) before it is retained, mapped I/O as `GMPRT_CUDA_MAPPED_IO` says
    /// ([`mapped_io`](Self::mapped_io); a bad value is `Err(Config)` before the device is
    /// touched); never panics.
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
        // Read before the device is touched, like the sync mode: a bad value opens nothing.
        let mapped_io = super::mapped_io_from_env()?;
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
                gemm_warm: Mutex::new(std::collections::HashSet::new()),
                util: Mutex::new(None),
                util_events: Mutex::new(None),
                sync,
                mapped_io,
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

    /// Whether this backend's slots map the I/O of small runs (`GMPRT_CUDA_MAPPED_IO`, read at
    /// creation; see [`CudaSlot`]'s "Mapped I/O").
    ///
    /// # Examples
    ///
    /// Runs with or without a GPU (without one, the GPU part is skipped):
    ///
    /// ```
    /// use gmprt_offload::cuda::{mapped_io_from_env, CudaBackend};
    /// use gmprt_offload::Backend;
    ///
    /// if let Ok(gpu) = CudaBackend::new(0) {
    ///     assert_eq!(gpu.mapped_io(), mapped_io_from_env().unwrap());
    ///     // The device line says which, so every figure taken on it does.
    ///     assert!(gpu.describe().contains("mapped I/O "));
    /// }
    /// ```
    pub fn mapped_io(&self) -> bool {
        self.inner.mapped_io
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
}
