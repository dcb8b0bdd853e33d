//! Which CUDA libraries this process actually loaded, from where, at which version — and the
//! refusal of the two loads that cudarc would otherwise accept silently.
//!
//! cudarc 0.19 (`dynamic-loading`) opens each library by *name*, through the loader's search
//! path: for `nvrtc` it tries `libnvrtc.so`, `libnvrtc64*.so`, then `libnvrtc.so.13` (the
//! `cuda-13000` feature's major), then **`libnvrtc.so.12`, `.11`, `.10`, `.9`, `.1`** — the
//! first that opens wins, and nothing says which one it was (`get_lib_name_candidates`,
//! `is_culib_present` and `culib()` in cudarc's `lib.rs` and `*/sys/mod.rs`). Two loads are
//! wrong and are refused here with an error naming what was loaded and what is expected:
//!
//! * **a stub** — a path with a `/stubs/` directory (the toolkit's `lib64/stubs/libcuda.so`
//!   exists only to link against: its `cuInit` fails with `CUDA_ERROR_STUB_LIBRARY`, which reads
//!   like a broken GPU); for the driver this is checked before `cuInit`;
//! * **another CUDA major** — the kernels are compiled by CUDA 13's NVRTC for a CUDA 13 driver,
//!   and cudarc's bindings are generated for CUDA 13: a libnvrtc or libcublas of CUDA 12/11
//!   found by the fallback is an **error**, not a warning. A warning would let a run go on
//!   with PTX the driver may reject at module load (or a cuBLAS whose entry points cudarc's
//!   CUDA 13 bindings may call with other signatures), and print figures that belong to
//!   another toolkit; the fix is always the same and cheap (put the CUDA 13 library first on
//!   `LD_LIBRARY_PATH`), so the error says it. A driver older than CUDA 13 is refused too: it
//!   cannot load CUDA 13 PTX or run CUDA 13's cuBLAS.
//!
//! How: right after a library is first used (which makes cudarc `dlopen` it), the mapped
//! files of this process (`/proc/self/maps`) are scanned for that library's file name
//! (`libcuda.so*`, `libnvrtc.so*`, `libcublas.so*` — not `libcudart`, `libnvrtc-builtins` or
//! `libcublasLt`), the path and its version suffix are checked with the version the library
//! reports itself (`cuDriverGetVersion`, `nvrtcVersion`, `cublasGetProperty`), and the result
//! is logged once on stderr and kept for [`loaded_libraries`]. The parsing functions are pure
//! and public so that they can be tested on synthetic maps text.
use parking_lot::Mutex;
use std::path::{Path, PathBuf};

/// The CUDA major version gmprt's kernels and cudarc's bindings are built for (cudarc's
/// `cuda-13000` feature).
///
/// # Examples
///
/// ```
/// use gmprt_offload::cuda::libs::{file_major, EXPECTED_CUDA_MAJOR};
/// use std::path::Path;
///
/// assert_eq!(EXPECTED_CUDA_MAJOR, 13);
/// // The file major a libnvrtc or libcublas must carry.
/// assert_eq!(file_major(Path::new("/usr/local/cuda/lib64/libnvrtc.so.13")), Some(EXPECTED_CUDA_MAJOR));
/// ```
pub const EXPECTED_CUDA_MAJOR: u32 = 13;

/// One of the CUDA libraries gmprt loads.
///
/// # Examples
///
/// ```
/// use gmprt_offload::cuda::libs::{paths_in_maps, CudaLib};
///
/// let maps = "7f00-7f10 r-xp 0 08:01 12 /usr/lib/libcublasLt.so.13.1.0\n\
///             7f20-7f30 r-xp 0 08:01 13 /usr/lib/libcublas.so.13.1.0\n";
/// // Each variant finds only its own file (`libcublasLt` is not `libcublas`).
/// assert_eq!(paths_in_maps(maps, CudaLib::Cublas).len(), 1);
/// assert!(paths_in_maps(maps, CudaLib::Nvrtc).is_empty());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CudaLib {
    /// The driver, `libcuda.so` (from the NVIDIA driver, not the toolkit).
    Driver,
    /// The run-time compiler, `libnvrtc.so`.
    Nvrtc,
    /// cuBLAS, `libcublas.so` (which pulls in `libcublasLt.so`).
    Cublas,
}

impl CudaLib {
    /// The library's file-name stem: `libcuda`, `libnvrtc`, `libcublas`.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_offload::cuda::libs::CudaLib;
    ///
    /// let stems: Vec<&str> = [CudaLib::Driver, CudaLib::Nvrtc, CudaLib::Cublas].map(CudaLib::stem).into();
    /// assert_eq!(stems, ["libcuda", "libnvrtc", "libcublas"]);
    /// ```
    pub fn stem(self) -> &'static str {
        match self {
            CudaLib::Driver => "libcuda",
            CudaLib::Nvrtc => "libnvrtc",
            CudaLib::Cublas => "libcublas",
        }
    }
}

/// A CUDA library this process loaded.
///
/// # Examples
///
/// ```
/// use gmprt_offload::cuda::libs::{verify, CudaLib};
/// use gmprt_offload::LoadedLib;
/// use std::path::PathBuf;
///
/// let path = PathBuf::from("/opt/cuda/lib64/libnvrtc.so.13.0.88");
/// let lib: LoadedLib = verify(CudaLib::Nvrtc, &[path.clone()], 13, "13.0").unwrap();
/// assert_eq!(lib.name, "libnvrtc");
/// assert_eq!(lib.path, Some(path));
/// assert_eq!(lib.file_version.as_deref(), Some("13.0.88"));
/// assert_eq!(lib.to_string(), "libnvrtc 13.0 (/opt/cuda/lib64/libnvrtc.so.13.0.88)");
/// // Not found in the maps: the path is unknown, the version still reported.
/// let unknown = verify(CudaLib::Nvrtc, &[], 13, "13.0").unwrap();
/// assert_eq!(unknown.to_string(), "libnvrtc 13.0 (path unknown)");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedLib {
    /// `libcuda`, `libnvrtc` or `libcublas`.
    pub name: &'static str,
    /// The mapped file, as `/proc/self/maps` shows it (symbolic links resolved); `None` when
    /// the maps could not be read or did not show it (not Linux).
    pub path: Option<PathBuf>,
    /// The version the library reports itself (`13.0` from `cuDriverGetVersion`, `13.0` from
    /// `nvrtcVersion`, `13.1.0` from `cublasGetProperty`).
    pub version: String,
    /// The version suffix of the file name (`13.0.88` for `libnvrtc.so.13.0.88`,
    /// `580.95.05` for the driver's `libcuda.so.580.95.05`), if any.
    pub file_version: Option<String>,
}

impl std::fmt::Display for LoadedLib {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.path {
            Some(p) => write!(f, "{} {} ({})", self.name, self.version, p.display()),
            None => write!(f, "{} {} (path unknown)", self.name, self.version),
        }
    }
}

/// The distinct paths in `maps` (the text of `/proc/<pid>/maps`) whose file name is
/// `<stem>.so` or `<stem>.so.<anything>` for `lib`, in order of first appearance.
///
/// # Examples
///
/// ```
/// use gmprt_offload::cuda::libs::{paths_in_maps, CudaLib};
/// use std::path::PathBuf;
///
/// let maps = "\
/// 7f00-7f10 r--p 00000000 08:01 11 /usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05
/// 7f10-7f20 r-xp 00010000 08:01 11 /usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05
/// 7f30-7f40 r-xp 00000000 08:01 12 /opt/my cuda/lib64/libnvrtc.so.13.0.88 (deleted)
/// 7f50-7f60 r-xp 00000000 08:01 14 /opt/my cuda/lib64/libnvrtc-builtins.so.13.0
/// 7f70-7f80 rw-p 00000000 00:00 0
/// ";
/// // One entry per distinct path, even when mapped several times.
/// assert_eq!(paths_in_maps(maps, CudaLib::Driver), [PathBuf::from("/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05")]);
/// // Spaces in the path are kept, " (deleted)" is dropped, libnvrtc-builtins is not libnvrtc.
/// assert_eq!(paths_in_maps(maps, CudaLib::Nvrtc), [PathBuf::from("/opt/my cuda/lib64/libnvrtc.so.13.0.88")]);
/// assert!(paths_in_maps(maps, CudaLib::Cublas).is_empty());
/// ```
pub fn paths_in_maps(maps: &str, lib: CudaLib) -> Vec<PathBuf> {
    let so = format!("{}.so", lib.stem());
    let mut out: Vec<PathBuf> = Vec::new();
    for line in maps.lines() {
        // address perms offset dev inode pathname — the pathname (which may contain spaces)
        // is everything after the fifth field; anonymous mappings have none.
        let mut rest = line.trim_start();
        for _ in 0..5 {
            rest = match rest.find(char::is_whitespace) {
                Some(i) => rest[i..].trim_start(),
                None => "",
            };
        }
        let path = rest.trim_end().trim_end_matches(" (deleted)");
        if !path.starts_with('/') {
            continue;
        }
        let file = path.rsplit('/').next().unwrap_or("");
        let matches = file == so || file.strip_prefix(so.as_str()).is_some_and(|s| s.starts_with('.'));
        if matches && !out.iter().any(|p| p.as_os_str() == path) {
            out.push(PathBuf::from(path));
        }
    }
    out
}

/// Whether `path` is a link-time stub: a `stubs` directory anywhere in it.
///
/// # Examples
///
/// ```
/// use gmprt_offload::cuda::libs::is_stub;
/// use std::path::Path;
///
/// assert!(is_stub(Path::new("/usr/local/cuda/lib64/stubs/libcuda.so")));
/// assert!(!is_stub(Path::new("/usr/lib/x86_64-linux-gnu/libcuda.so.1")));
/// // A whole component only: a directory merely named like it is not a stub.
/// assert!(!is_stub(Path::new("/opt/stubsless/libcuda.so.1")));
/// ```
pub fn is_stub(path: &Path) -> bool {
    path.components().any(|c| c.as_os_str() == "stubs")
}

/// The version suffix after `.so.` in the file name (`libnvrtc.so.13.0.88` → `13.0.88`).
///
/// # Examples
///
/// ```
/// use gmprt_offload::cuda::libs::file_version;
/// use std::path::Path;
///
/// assert_eq!(file_version(Path::new("/lib/libcuda.so.580.95.05")).as_deref(), Some("580.95.05"));
/// // No suffix, or an empty one: None.
/// assert_eq!(file_version(Path::new("/lib/libnvrtc.so")), None);
/// assert_eq!(file_version(Path::new("/lib/libnvrtc.so.")), None);
/// ```
pub fn file_version(path: &Path) -> Option<String> {
    let file = path.file_name()?.to_str()?;
    let (_, v) = file.split_once(".so.")?;
    (!v.is_empty()).then(|| v.to_string())
}

/// The major number of the file's version suffix (`libcublas.so.12.4.5` → 12).
///
/// # Examples
///
/// ```
/// use gmprt_offload::cuda::libs::file_major;
/// use std::path::Path;
///
/// assert_eq!(file_major(Path::new("/usr/lib/libcublas.so.12.4.5")), Some(12));
/// assert_eq!(file_major(Path::new("/usr/lib/libcublas.so")), None);
/// // A suffix that does not start with a number has no major.
/// assert_eq!(file_major(Path::new("/usr/lib/libcublas.so.x1")), None);
/// ```
pub fn file_major(path: &Path) -> Option<u32> {
    file_version(path)?.split('.').next()?.parse().ok()
}

/// Checks what was loaded for `lib` (the `paths` found in the maps, and the major and
/// version string the library reports) and builds its [`LoadedLib`]; `Err` names the path,
/// the version and what is expected, and how to fix it. Pure: no I/O.
///
/// Refused: any path under a `stubs` directory; for NVRTC and cuBLAS, a reported major or a
/// file-name major other than [`EXPECTED_CUDA_MAJOR`]; for the driver, a reported major below
/// it (the driver's file suffix is the driver release, e.g. 580, and is not compared).
///
/// # Examples
///
/// ```
/// use gmprt_offload::cuda::libs::{verify, CudaLib};
/// use std::path::PathBuf;
///
/// // The driver's suffix is its release, not a CUDA major: accepted.
/// let driver = [PathBuf::from("/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05")];
/// assert_eq!(verify(CudaLib::Driver, &driver, 13, "13.0").unwrap().version, "13.0");
/// // ...but a driver older than CUDA 13 is refused.
/// let old = verify(CudaLib::Driver, &driver, 12, "12.4").unwrap_err();
/// assert!(old.contains("supports CUDA 12.4") && old.contains("update the NVIDIA driver"), "{old}");
/// // A stub is refused, naming its path.
/// let stub = [PathBuf::from("/usr/local/cuda/lib64/stubs/libcuda.so")];
/// let err = verify(CudaLib::Driver, &stub, 13, "13.0").unwrap_err();
/// assert!(err.starts_with("libcuda loaded from a stub library /usr/local/cuda/lib64/stubs/libcuda.so"), "{err}");
/// // cudarc's fallback to a CUDA 12 libnvrtc is an error that says how to fix it.
/// let nvrtc12 = [PathBuf::from("/usr/lib/libnvrtc.so.12")];
/// let err = verify(CudaLib::Nvrtc, &nvrtc12, 12, "12.4").unwrap_err();
/// assert!(err.starts_with("libnvrtc 12.4 was loaded (/usr/lib/libnvrtc.so.12)"), "{err}");
/// assert!(err.contains("libnvrtc.so.13") && err.contains("LD_LIBRARY_PATH"), "{err}");
/// ```
pub fn verify(lib: CudaLib, paths: &[PathBuf], major: u32, version: &str) -> Result<LoadedLib, String> {
    let name = lib.stem();
    let fix = match lib {
        CudaLib::Driver => "use the NVIDIA driver's libcuda.so.1 (e.g. /usr/local/nvidia/lib64 or \
                            /usr/lib/x86_64-linux-gnu), not the toolkit's stubs directory: take \
                            `stubs` off LD_LIBRARY_PATH"
            .to_string(),
        _ => format!(
            "put the directory holding {name}.so.{EXPECTED_CUDA_MAJOR} (CUDA {EXPECTED_CUDA_MAJOR}'s \
             toolkit lib64, or the nvidia-*-cu{EXPECTED_CUDA_MAJOR} wheel's lib) first on LD_LIBRARY_PATH"
        ),
    };
    if let Some(stub) = paths.iter().find(|p| is_stub(p)) {
        return Err(format!(
            "{name} loaded from a stub library {} (a link-time stub, not a working {name}): {fix}",
            stub.display()
        ));
    }
    let expected = EXPECTED_CUDA_MAJOR;
    match lib {
        CudaLib::Driver if major < expected => {
            return Err(format!(
                "the CUDA driver ({}) supports CUDA {version}, older than the CUDA {expected} that \
                 gmprt's kernels and cuBLAS are built for: update the NVIDIA driver (r580 or newer)",
                paths.first().map_or("path unknown".to_string(), |p| p.display().to_string())
            ))
        }
        CudaLib::Driver => {}
        CudaLib::Nvrtc | CudaLib::Cublas => {
            let wrong_file = paths.iter().find(|p| file_major(p).is_some_and(|m| m != expected));
            if major != expected || wrong_file.is_some() {
                let at = wrong_file
                    .or(paths.first())
                    .map_or("path unknown".to_string(), |p| p.display().to_string());
                return Err(format!(
                    "{name} {version} was loaded ({at}), but gmprt needs CUDA {expected}'s {name} \
                     (cudarc fell back to another CUDA major): {fix}"
                ));
            }
        }
    }
    let path = paths.first().cloned();
    let file_version = path.as_deref().and_then(file_version);
    Ok(LoadedLib { name, path, version: version.to_string(), file_version })
}

/// Every library checked so far, in load order.
static LOADED: Mutex<Vec<LoadedLib>> = Mutex::new(Vec::new());

/// Reads `/proc/self/maps` for `lib` (call right after the library was first used), checks it
/// with [`verify`], logs `gmprt-offload: loaded <lib> <version> from <path>` once on stderr,
/// and records it for [`loaded_libraries`].
pub(crate) fn check_loaded(lib: CudaLib, major: u32, version: &str) -> Result<LoadedLib, String> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let loaded = verify(lib, &paths_in_maps(&maps, lib), major, version)?;
    let mut all = LOADED.lock();
    if !all.iter().any(|l| l.name == loaded.name) {
        eprintln!("gmprt-offload: loaded {loaded}");
        all.push(loaded.clone());
    }
    Ok(loaded)
}

/// The CUDA libraries this process loaded and checked so far (driver after
/// [`probe`](super::probe), NVRTC after the first compile or [`nvrtc::available`](super::nvrtc::available),
/// cuBLAS after the first handle), each with its full path and version.
///
/// # Examples
///
/// Runs with or without a GPU: where a library is missing it is simply not in the list.
///
/// ```
/// use gmprt_offload::cuda::{self, nvrtc};
/// use gmprt_offload::loaded_libraries;
///
/// let gpu = cuda::probe(0).is_ok();
/// let nvrtc_ok = nvrtc::available().is_ok();
/// let libs = loaded_libraries();
/// let has = |name: &str| libs.iter().any(|l| l.name == name);
/// // A usable driver or NVRTC was checked and recorded on the way.
/// assert!(!gpu || has("libcuda"));
/// assert!(!nvrtc_ok || has("libnvrtc"));
/// for lib in &libs {
///     assert!(["libcuda", "libnvrtc", "libcublas"].contains(&lib.name));
///     assert!(lib.to_string().starts_with(lib.name));
/// }
/// ```
pub fn loaded_libraries() -> Vec<LoadedLib> {
    LOADED.lock().clone()
}

/// `major.minor` from a CUDA version number such as `cuDriverGetVersion`'s 13000.
pub(crate) fn split_cuda_version(v: i32) -> (u32, u32) {
    let v = u32::try_from(v).unwrap_or(0);
    (v / 1000, (v % 1000) / 10)
}
