//! NVRTC modules: each CUDA source compiled once per device architecture (`nvrtc`), loaded
//! once per device and kept with the functions looked up so far ([`CudaBackend::function`]);
//! `warm_modules` pays all of it before any timed run ([`FirstUse`]).
use super::*;

/// One module compiled for this device, with the functions looked up so far.
pub(super) struct Loaded {
    pub(super) module: Arc<CudaModule>,
    pub(super) functions: HashMap<String, CudaFunction>,
}

impl CudaBackend {
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
pub(super) fn load_hint(e: DriverError) -> String {
    use cudarc::driver::sys::CUresult;
    match e.0 {
        CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION => format!(
            "{e} (the NVRTC library is newer than the driver: use an NVRTC no newer than the \
             driver's CUDA version)"
        ),
        _ => e.to_string(),
    }
}
