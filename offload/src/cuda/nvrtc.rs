//! Run-time compilation of the embedded CUDA C sources with NVRTC.
//!
//! Protocol: [`available`] is asked before any NVRTC call (cudarc panics when it has to load a
//! library that is not there, so `is_culib_present` is checked first, once per process);
//! [`compile`] turns one [`CudaSource`] into PTX for one GPU architecture. The backend
//! (`CudaBackend::function`) compiles each source once per device and caches the loaded
//! module; nothing here caches.
//!
//! Architecture: the PTX targets the device's own virtual architecture, `compute_XY` for
//! compute capability X.Y, passed as a plain `--gpu-architecture=` option string. cudarc's
//! `CompileOptions::arch` would need a `&'static str` per architecture (a fixed table that goes
//! stale with every new GPU, or a leaked string); the option string needs neither. A virtual
//! architecture is used (not `sm_XY`) because NVRTC always yields PTX for it, which the driver
//! JIT-compiles to the exact SASS of the device at module load (and caches on disk), so the
//! code uses every feature of the device it runs on; the one JIT per source and device is paid
//! in `CudaBackend::function`, not per launch.
//!
//! Options: accurate math is kept — no `--use_fast_math`; `--ftz=false`, `--prec-div=true`,
//! `--prec-sqrt=true` are NVRTC's defaults, spelled out so that a changed default cannot
//! silently change results; `--fmad` stays at its default `true` (contractions to FMA are
//! allowed, as on the CPU's FMA builds).
use crate::error::OffloadError;
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx};
use gmprt_kernels::cuda::CudaSource;
use std::sync::OnceLock;

/// Whether libnvrtc can be used; `Err` says why not, in words: absent (the message starts
/// with `no libnvrtc`), a stub, or another CUDA major than 13 (cudarc's silent fallback to
/// `libnvrtc.so.12`/`.11`; see [`super::libs`]). Checked once per process; the library's path
/// and version are logged and kept for [`super::loaded_libraries`].
///
/// # Examples
///
/// Runs with or without NVRTC (CI has none): absent is an `Err` that says so.
///
/// ```
/// use gmprt_offload::cuda::nvrtc;
///
/// match nvrtc::available() {
///     Ok(()) => assert_eq!(nvrtc::version().unwrap().0, 13),
///     Err(why) => assert!(
///         ["no libnvrtc", "libnvrtc loaded from a stub", "libnvrtc loads but"].iter().any(|p| why.starts_with(p))
///             || why.contains("gmprt needs CUDA 13's libnvrtc"),
///         "{why}"
///     ),
/// }
/// // Checked once: asking again gives the same answer.
/// assert_eq!(nvrtc::available(), nvrtc::available());
/// ```
pub fn available() -> Result<(), String> {
    static STATE: OnceLock<Result<(), String>> = OnceLock::new();
    STATE
        .get_or_init(|| {
            // SAFETY: `is_culib_present` only tries to dlopen the candidate library names and
            // drops what it opened; it touches no other state and has no precondition.
            if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
                return Err("no libnvrtc.so (NVRTC not found: install the CUDA toolkit's NVRTC, or put \
                            the directory holding libnvrtc.so.13 on LD_LIBRARY_PATH)"
                    .to_string());
            }
            let (mut major, mut minor) = (0, 0);
            // SAFETY: the library is present (checked just above), so cudarc's loader does not
            // panic; both pointers are valid for writes.
            unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
                .result()
                .map_err(|e| format!("libnvrtc loads but nvrtcVersion failed: {e}"))?;
            let major = u32::try_from(major).unwrap_or(0);
            super::libs::check_loaded(super::libs::CudaLib::Nvrtc, major, &format!("{major}.{minor}"))
                .map(|_| ())
        })
        .clone()
}

/// NVRTC's version `(major, minor)`, e.g. `(13, 0)`; `Err(Driver)` with
/// [`available`]'s reason when NVRTC cannot be used.
///
/// # Examples
///
/// Runs with or without NVRTC:
///
/// ```
/// use gmprt_offload::cuda::nvrtc;
/// use gmprt_offload::OffloadError;
///
/// match nvrtc::version() {
///     Ok((major, _minor)) => assert_eq!(major, 13), // anything else is refused
///     Err(OffloadError::Driver { op, msg }) => {
///         assert_eq!(op, "nvrtcVersion");
///         assert_eq!(Err(msg), nvrtc::available());
///     }
///     Err(other) => panic!("{other:?}"),
/// }
/// ```
pub fn version() -> Result<(i32, i32), OffloadError> {
    available().map_err(|msg| OffloadError::Driver { op: "nvrtcVersion".into(), msg })?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is present (checked above); both pointers are valid for writes.
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| OffloadError::Driver { op: "nvrtcVersion".into(), msg: e.to_string() })?;
    Ok((major, minor))
}

/// The `--gpu-architecture` value for compute capability `(major, minor)`: `compute_90` for
/// 9.0 (see the module docs for why the virtual architecture).
///
/// # Examples
///
/// ```
/// use gmprt_offload::cuda::nvrtc::arch_for;
///
/// assert_eq!(arch_for((9, 0)), "compute_90");
/// assert_eq!(arch_for((10, 0)), "compute_100");
/// ```
pub fn arch_for(cc: (i32, i32)) -> String {
    format!("compute_{}{}", cc.0, cc.1)
}

/// The options every source is compiled with, for compute capability `cc`.
///
/// # Examples
///
/// ```
/// use gmprt_offload::cuda::nvrtc::options_for;
/// use gmprt_offload::kernels::cuda::SAXPY;
///
/// let o = options_for(&SAXPY, (8, 0));
/// // Accurate math, spelled out; no fast math.
/// assert_eq!((o.ftz, o.prec_div, o.prec_sqrt, o.use_fast_math), (Some(false), Some(true), Some(true), None));
/// assert_eq!(o.options, ["--gpu-architecture=compute_80", "--std=c++17"]);
/// assert_eq!(o.name.as_deref(), Some("saxpy.cu"));
/// ```
pub fn options_for(src: &CudaSource, cc: (i32, i32)) -> CompileOptions {
    CompileOptions {
        ftz: Some(false),
        prec_sqrt: Some(true),
        prec_div: Some(true),
        options: vec![format!("--gpu-architecture={}", arch_for(cc)), "--std=c++17".to_string()],
        name: Some(format!("{}.cu", src.name)),
        ..Default::default()
    }
}

/// Compiles `src` to PTX for compute capability `cc`. A compile error comes back as
/// `OffloadError::Driver { op: "nvrtc compile <name>", msg: <NVRTC log> }`; without a
/// usable NVRTC, the same `op` with [`available`]'s reason. Needs no GPU.
///
/// # Examples
///
/// Runs with or without NVRTC:
///
/// ```
/// use gmprt_offload::cuda::nvrtc;
/// use gmprt_offload::kernels::cuda::{CudaSource, FN_SAXPY, SAXPY};
/// use gmprt_offload::OffloadError;
///
/// match nvrtc::compile(&SAXPY, (9, 0)) {
///     // With NVRTC: PTX for the virtual architecture, defining the kernel.
///     Ok(ptx) => {
///         let text = ptx.to_src();
///         assert!(text.contains(".target sm_90") && text.contains(FN_SAXPY));
///     }
///     // Without: the error names the source and says why.
///     Err(OffloadError::Driver { op, msg }) => {
///         assert_eq!(op, "nvrtc compile saxpy");
///         assert_eq!(Err(msg), nvrtc::available());
///     }
///     Err(other) => panic!("{other:?}"),
/// }
/// // A broken source: NVRTC's log (with NVRTC), or the same "why not" (without).
/// let bad = CudaSource { name: "bad", src: "__global__ void f() { undeclared = 1; }", functions: &["f"] };
/// let err = nvrtc::compile(&bad, (9, 0)).unwrap_err().to_string();
/// assert!(err.starts_with("CUDA call failed: nvrtc compile bad: "), "{err}");
/// assert!(nvrtc::available().is_err() || err.contains("undeclared"), "{err}");
/// ```
pub fn compile(src: &CudaSource, cc: (i32, i32)) -> Result<Ptx, OffloadError> {
    let op = format!("nvrtc compile {}", src.name);
    available().map_err(|msg| OffloadError::Driver { op: op.clone(), msg })?;
    // cudarc turns the source into a C string with `expect`: refuse a NUL here instead.
    if src.src.contains('\0') || src.name.contains('\0') {
        return Err(OffloadError::Driver { op, msg: "source or name contains a NUL byte".into() });
    }
    cudarc::nvrtc::compile_ptx_with_opts(src.src, options_for(src, cc))
        .map_err(|e| OffloadError::Driver { op, msg: describe(e) })
}

/// NVRTC's log for a failed compile, or the failing step otherwise.
fn describe(e: CompileError) -> String {
    match e {
        CompileError::CompileError { nvrtc, options, log } => {
            let log = log.to_string_lossy();
            format!("{nvrtc:?} with options {options:?}:\n{}", log.trim_end())
        }
        CompileError::CreationError(e) => format!("nvrtcCreateProgram failed: {e:?}"),
        CompileError::GetLogError(e) => format!("nvrtcGetProgramLog failed: {e:?}"),
        CompileError::GetPtxError(e) => format!("nvrtcGetPTX failed: {e:?}"),
        CompileError::DestroyError(e) => format!("nvrtcDestroyProgram failed: {e:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_names_follow_the_compute_capability() {
        assert_eq!(arch_for((9, 0)), "compute_90");
        assert_eq!(arch_for((10, 0)), "compute_100");
        assert_eq!(arch_for((12, 1)), "compute_121");
    }

    #[test]
    fn options_keep_accurate_math_and_name_the_file() {
        let o = options_for(&gmprt_kernels::cuda::SAXPY, (9, 0));
        assert_eq!(o.ftz, Some(false));
        assert_eq!(o.use_fast_math, None);
        assert!(o.options.contains(&"--gpu-architecture=compute_90".to_string()));
        assert_eq!(o.name.as_deref(), Some("saxpy.cu"));
    }
}
