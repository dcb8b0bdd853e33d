//! [`DeviceProfile`]: a device's measured (or published) costs, as JSON.
//!
//! The published profiles ship as `offload/profiles/*.json` (compiled in with `include_str!`);
//! their `source` is [`ProfileSource::Published`] with every figure and assumption cited.
use super::fit::{LinFit, Sample};
use crate::error::OffloadError;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// The profile kernel that holds the device-memory roof: the device-to-device copy kernel
/// measured by [`calibrate`](crate::calibrate::calibrate()), x = bytes copied (see
/// [`DeviceProfile::device_copy`]).
///
/// ```
/// use gmprt_offload::model::{DeviceProfile, DEVICE_COPY};
/// // The published profiles were not measured, so they have no device-copy entry.
/// let e = DeviceProfile::published_h100().kernel(DEVICE_COPY).unwrap_err();
/// assert!(e.to_string().contains("no kernel `device_copy`"), "{e}");
/// ```
pub const DEVICE_COPY: &str = "device_copy";

/// The profile kernel a job's name ([`Job::name`](crate::Job::name)) is priced and paced by:
/// `black_scholes`, `saxpy`, `monte_carlo` map to themselves; `sgemm`, `small_sgemm` and
/// `sgemm_batched` map to `sgemm`. Any other name maps to itself (and is priced only if the
/// profile has a kernel of that name).
///
/// ```
/// use gmprt_offload::model::profile_kernel_name;
/// assert_eq!(profile_kernel_name("sgemm_batched"), "sgemm");
/// assert_eq!(profile_kernel_name("saxpy"), "saxpy");
/// ```
pub fn profile_kernel_name(job_name: &str) -> &str {
    match job_name {
        "sgemm" | "small_sgemm" | "sgemm_batched" => "sgemm",
        other => other,
    }
}

/// The profile kernel an SGEMM at `precision` is priced by: `sgemm` (FP32), `sgemm_tf32`,
/// `sgemm_bf16`. A CUDA calibration measures the last two on the device (the tensor cores);
/// their CPU side is the FP32 GEMM's, since the CPU has no faster path at lower precision.
///
/// ```
/// use gmprt_offload::kernels::precision::Precision;
/// use gmprt_offload::model::sgemm_kernel_name;
/// assert_eq!(sgemm_kernel_name(Precision::Fp32), "sgemm");
/// assert_eq!(sgemm_kernel_name(Precision::Tf32), "sgemm_tf32");
/// ```
pub fn sgemm_kernel_name(precision: gmprt_kernels::precision::Precision) -> &'static str {
    use gmprt_kernels::precision::Precision;
    match precision {
        Precision::Fp32 => "sgemm",
        Precision::Tf32 => "sgemm_tf32",
        Precision::Bf16 => "sgemm_bf16",
    }
}

/// Predicted seconds → `Duration`, clamping negative or non-finite predictions to zero (and
/// absurd ones to 10⁶ s).
pub(crate) fn duration(s: f64) -> Duration {
    if s.is_finite() && s > 0.0 {
        Duration::from_secs_f64(s.min(1e6))
    } else {
        Duration::ZERO
    }
}

/// Where a profile's numbers come from.
///
/// ```
/// use gmprt_offload::model::{DeviceProfile, ProfileSource};
/// match DeviceProfile::published_h100().source {
///     ProfileSource::Published { citation } => assert!(citation.starts_with("NOT MEASURED"), "{citation}"),
///     ProfileSource::Measured => panic!("the shipped profiles are published figures"),
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ProfileSource {
    /// Measured by [`calibrate`](crate::calibrate::calibrate()) on the named machine.
    Measured,
    /// Built from vendor-published figures, not measured; `citation` says which.
    Published {
        /// The figures and where they come from.
        citation: String,
    },
}

/// How a profile's CPU fits (`KernelProfile::cpu`) were timed.
///
/// ```
/// use gmprt_offload::model::{CpuTiming, DeviceProfile};
/// // The first H200 run, calibrated before issue 27 asked for the as-called timing: its CPU
/// // fits are cache-resident, and say so.
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/h200-measured-2026-11-26.json");
/// let first = DeviceProfile::load(path.as_ref()).unwrap();
/// assert_eq!(first.cpu_timing, CpuTiming::Resident);
/// assert!(CpuTiming::Resident.describe().contains("cache-resident"));
/// // The default (measured on the H200 on 2026-11-27) times them as called.
/// assert_eq!(DeviceProfile::measured_h200().cpu_timing, CpuTiming::AsCalled);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuTiming {
    /// As a program calls a kernel (what `calibrate` times since issue 27): from a thread
    /// outside the runtime while its Ps are parked, so the call pays for waking them, on
    /// operands evicted from every cache level first, so they come from DRAM. Way 2 of
    /// `option_screener` and a CPU-placed Batcher batch run this way.
    AsCalled,
    /// As [`CpuTiming::AsCalled`], and the outputs are allocated by each call, so their first
    /// touch (page faults) is timed too: a program that allocates its result every call.
    AsCalledFreshOutputs,
    /// Cache-resident: the same buffers every run, called by a task on the runtime (whose Ps
    /// are awake): the best case, kept in a profile as a separate, labelled line
    /// (`KernelProfile::cpu_resident`). Profiles measured before issue 27 timed their `cpu`
    /// fits this way, and JSON without a `cpu_timing` reads as this.
    #[default]
    Resident,
}

impl CpuTiming {
    /// One line saying how the fits were timed, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            CpuTiming::AsCalled => "as called: Ps parked at the call, operands evicted from the caches",
            CpuTiming::AsCalledFreshOutputs => {
                "as called, outputs allocated per call (first touch timed), operands evicted"
            }
            CpuTiming::Resident => "cache-resident: warm buffers, called from a task with the Ps awake",
        }
    }
}

/// Host ↔ device copies: `t = latency + bytes / bandwidth` (intercept = latency in s,
/// slope = 1 / bandwidth in s/B), pinned and pageable host memory.
///
/// ```
/// use gmprt_offload::model::DeviceProfile;
/// let h2d = DeviceProfile::published_h100().h2d;
/// // 1 MB from pinned memory: 10 µs latency + 1e6 B at 55 GB/s (18.2 µs).
/// assert!((h2d.pinned.eval(1e6) - 28.18e-6).abs() < 0.01e-6);
/// // Pageable memory is assumed half as fast (an extra staging copy).
/// assert!((h2d.pageable.slope / h2d.pinned.slope - 2.0).abs() < 1e-9);
/// // Published figures: no raw samples behind the fits.
/// assert!(h2d.pinned_samples.is_empty() && h2d.pageable_samples.is_empty());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransferProfile {
    /// Pinned host buffers.
    pub pinned: LinFit,
    /// Pageable host buffers.
    pub pageable: LinFit,
    /// Raw samples behind `pinned` (x = bytes).
    pub pinned_samples: Vec<Sample>,
    /// Raw samples behind `pageable` (x = bytes).
    pub pageable_samples: Vec<Sample>,
}

/// How a kernel's size `n` maps to work and bytes.
///
/// ```
/// use gmprt_offload::model::Size;
/// // SAXPY: x and y in (8 B), y out (4 B) per element.
/// let saxpy = Size::Items { in_bytes: 8.0, out_bytes: 4.0, out_fixed: 0.0 };
/// assert_eq!((saxpy.work(1e3), saxpy.in_bytes(1e3), saxpy.out_bytes(1e3)), (1e3, 8e3, 4e3));
/// // SGEMM of 10×10 matrices: 2000 flops, A and B in (800 B), C out (400 B).
/// let sgemm = Size::MatrixN;
/// assert_eq!((sgemm.work(10.0), sgemm.in_bytes(10.0), sgemm.out_bytes(10.0)), (2e3, 800.0, 400.0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Size {
    /// `n` independent items: work = n, bytes in/out = per-item bytes · n (+ fixed out bytes).
    Items {
        /// Bytes uploaded per item.
        in_bytes: f64,
        /// Bytes downloaded per item.
        out_bytes: f64,
        /// Bytes downloaded per launch regardless of n (a reduction's result).
        out_fixed: f64,
    },
    /// Square N×N f32 matrices, C = A·B: work = 2N³ flops, in = 8N² B, out = 4N² B.
    MatrixN,
}

impl Size {
    /// Work units at size n (the x of the kernel fits).
    ///
    /// ```
    /// use gmprt_offload::model::Size;
    /// assert_eq!(Size::MatrixN.work(100.0), 2e6); // 2N³ flops
    /// let items = Size::Items { in_bytes: 24.0, out_bytes: 24.0, out_fixed: 0.0 };
    /// assert_eq!(items.work(100.0), 100.0); // one unit per item
    /// ```
    pub fn work(&self, n: f64) -> f64 {
        match self {
            Size::Items { .. } => n,
            Size::MatrixN => 2.0 * n * n * n,
        }
    }
    /// Bytes to upload at size n.
    ///
    /// ```
    /// use gmprt_offload::model::Size;
    /// assert_eq!(Size::MatrixN.in_bytes(100.0), 80_000.0); // A and B: 2 · 4 B · N²
    /// let options = Size::Items { in_bytes: 24.0, out_bytes: 24.0, out_fixed: 0.0 };
    /// assert_eq!(options.in_bytes(1000.0), 24_000.0);
    /// ```
    pub fn in_bytes(&self, n: f64) -> f64 {
        match self {
            Size::Items { in_bytes, .. } => in_bytes * n,
            Size::MatrixN => 8.0 * n * n,
        }
    }
    /// Bytes to download at size n.
    ///
    /// ```
    /// use gmprt_offload::model::Size;
    /// assert_eq!(Size::MatrixN.out_bytes(100.0), 40_000.0); // C: 4 B · N²
    /// // A reduction (Monte Carlo) downloads a fixed 16 B whatever the number of paths.
    /// let paths = Size::Items { in_bytes: 0.0, out_bytes: 0.0, out_fixed: 16.0 };
    /// assert_eq!((paths.out_bytes(1.0), paths.out_bytes(1e9)), (16.0, 16.0));
    /// ```
    pub fn out_bytes(&self, n: f64) -> f64 {
        match self {
            Size::Items { out_bytes, out_fixed, .. } => out_bytes * n + out_fixed,
            Size::MatrixN => 4.0 * n * n,
        }
    }
}

/// CPU time of a kernel on `procs` Ps (x = work units).
///
/// ```
/// use gmprt_offload::model::DeviceProfile;
/// let h100 = DeviceProfile::published_h100();
/// let saxpy = h100.kernel("saxpy").unwrap();
/// let procs: Vec<usize> = saxpy.cpu.iter().map(|c| c.procs).collect();
/// assert_eq!(procs, [1, 2, 4, 8, 16]);
/// // On 1 P: 1 µs + 1.2 ns per element.
/// assert!((saxpy.cpu[0].fit.eval(1e6) - 1.201e-3).abs() < 1e-9);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuFit {
    /// Ps used.
    pub procs: usize,
    /// The fit.
    pub fit: LinFit,
    /// Raw samples.
    pub samples: Vec<Sample>,
}

/// One kernel's costs: device time against work, CPU time against work on 1 … all Ps.
///
/// ```
/// use gmprt_offload::model::{DeviceProfile, Size};
/// let h100 = DeviceProfile::published_h100();
/// let sgemm = h100.kernel("sgemm").unwrap();
/// assert_eq!((sgemm.unit.as_str(), sgemm.size), ("N (matrix side)", Size::MatrixN));
/// // A 1024² SGEMM: 2·1024³ flops at 50 TFLOP/s (42.9 µs) + one 4 µs launch.
/// let t = sgemm.device.eval(sgemm.size.work(1024.0));
/// assert!((t - 46.95e-6).abs() < 0.01e-6, "{t}");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelProfile {
    /// `black_scholes`, `saxpy`, `sgemm`, `monte_carlo`.
    pub name: String,
    /// What n counts (`options`, `elements`, `N (matrix side)`, `paths`).
    pub unit: String,
    /// How n maps to work and bytes.
    pub size: Size,
    /// Device kernel time (launch excluded as far as the device can tell it apart).
    pub device: LinFit,
    /// Raw samples behind `device` (x = work).
    pub device_samples: Vec<Sample>,
    /// CPU fits, one per P count measured, timed as the profile's
    /// [`cpu_timing`](DeviceProfile::cpu_timing) says: what the cost model prices.
    pub cpu: Vec<CpuFit>,
    /// The same kernels timed cache-resident ([`CpuTiming::Resident`]), when `cpu` was timed
    /// as called: the best case, a separate, labelled line (`explain` prints it beside the
    /// priced one); the cost model does not price it. Empty in older and published profiles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_resident: Vec<CpuFit>,
    /// Device time of a run with *mapped I/O* — no copies, the kernel reading and writing the
    /// slot's pinned staging across PCIe (`cuda::CudaSlot`'s small runs of a job that streams
    /// its I/O) — when the calibration measured one. `None` in Host, published and older
    /// profiles, and for kernels whose runs always copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapped: Option<MappedFit>,
}

/// A kernel's runs with mapped I/O: their whole device span (launch latency, the crossings of
/// input and output, the kernel) against work, and the largest run, input plus output bytes,
/// that maps (`cuda::MAPPED_IO_MAX_BYTES` when measured). The cost model prices a batch with
/// inputs on the host by this fit, with no H2D or D2H, when its bytes are within `max_bytes`.
///
/// ```
/// use gmprt_offload::model::{LinFit, MappedFit};
/// // 8 µs + 10 GB/s of crossings for 48 B per option.
/// let m = MappedFit { max_bytes: 65536.0, fit: LinFit::known(8e-6, 48.0 / 10e9), samples: vec![] };
/// assert!(m.maps(48.0 * 1365.0) && !m.maps(48.0 * 1366.0));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MappedFit {
    /// The largest run (input plus output bytes) that maps.
    pub max_bytes: f64,
    /// Device seconds of one mapped run against work (the kernel's x).
    pub fit: LinFit,
    /// Raw samples behind `fit`.
    pub samples: Vec<Sample>,
}

impl MappedFit {
    /// Whether a run of `bytes` (input plus output) maps its I/O.
    pub fn maps(&self, bytes: f64) -> bool {
        bytes <= self.max_bytes
    }
}

/// Everything the cost model knows about one machine (device + its host CPU).
///
/// ```
/// use gmprt_offload::model::{DeviceProfile, ProfileSource};
/// let h200 = DeviceProfile::published_h200();
/// assert_eq!((h200.kind.as_str(), h200.procs), ("published", 16));
/// assert!(matches!(h200.source, ProfileSource::Published { .. }));
/// let names: Vec<&str> = h200.kernels.iter().map(|k| k.name.as_str()).collect();
/// assert_eq!(names, ["black_scholes", "saxpy", "sgemm", "monte_carlo"]);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceProfile {
    /// Device name (`NVIDIA H200`, `host`).
    pub device: String,
    /// `cuda`, `host`, or `published`.
    pub kind: String,
    /// Driver / CUDA version, or `-`.
    pub driver: String,
    /// When measured (RFC 3339 date) or compiled.
    pub date: String,
    /// The host CPU (model name); how many Ps the CPU fits go up to is `procs`.
    pub cpu: String,
    /// Largest P count in the CPU fits.
    pub procs: usize,
    /// Measured or published.
    pub source: ProfileSource,
    /// Seconds of an empty launch on the kernel-phase clock that also times the kernels (CUDA:
    /// events around the launch; Host: the slot's kernel timer) — so every device kernel fit's
    /// intercept already contains it.
    pub launch_enqueue: f64,
    /// Wall seconds of an empty kernel's launch + synchronize (contains `launch_enqueue`).
    pub launch_sync: f64,
    /// Host → device copies.
    pub h2d: TransferProfile,
    /// Device → host copies.
    pub d2h: TransferProfile,
    /// Per-kernel costs.
    pub kernels: Vec<KernelProfile>,
    /// How the kernels' `cpu` fits were timed (absent in JSON measured before issue 27, which
    /// timed them cache-resident: read as [`CpuTiming::Resident`]).
    #[serde(default)]
    pub cpu_timing: CpuTiming,
    /// The driver's own launch + synchronize floors on CUDA, spinning and blocking, beside the
    /// slots' `launch_sync` (`None` on Host, simulated, published and older profiles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_round_trip: Option<LaunchRoundTrip>,
}

/// An empty kernel's launch + `cuStreamSynchronize` with no slot around it, in both ways a host
/// thread can wait (`CudaBackend::launch_costs`, means of 1,000 launches), and the sync mode
/// the slots ran with when `launch_sync` was measured. The cost model charges
/// `launch_sync − launch_enqueue`: the slots' own round trip in their own mode (under `auto` a
/// slot spins up to `cuda::SPIN_BEFORE_BLOCK` before it sleeps, so a tiny batch pays about the
/// spinning floor); these two say how far that is from the driver's floors.
///
/// ```
/// use gmprt_offload::model::LaunchRoundTrip;
/// // The H200 run's figures (its CUDA test's launch_costs line).
/// let r = LaunchRoundTrip { spin: 8.9e-6, blocking: 19.8e-6, sync_mode: "auto".into() };
/// assert!(r.blocking > r.spin);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaunchRoundTrip {
    /// Seconds, context flag `CU_CTX_SCHED_SPIN`.
    pub spin: f64,
    /// Seconds, context flag `CU_CTX_SCHED_BLOCKING_SYNC`.
    pub blocking: f64,
    /// `spin`, `blocking` or `auto`: how the slots waited when `launch_sync` was measured.
    pub sync_mode: String,
}

/// The H100 SXM published profile (JSON, compiled in).
const H100_JSON: &str = include_str!("../../profiles/h100-sxm-published.json");
/// The H200 published profile (JSON, compiled in).
const H200_JSON: &str = include_str!("../../profiles/h200-published.json");
/// The H200 profile measured on the first GPU run (JSON, compiled in; raw output in
/// `benches/results/h200-2026-11-26/`).
const H200_MEASURED_JSON: &str = include_str!("../../profiles/h200-measured-2026-11-27.json");

impl DeviceProfile {
    /// What a launch costs beyond what the kernel fits already contain: `launch_sync −
    /// launch_enqueue`, at least 0 (the kernel fits are timed on the clock `launch_enqueue` is
    /// timed on, so adding `launch_sync` to them would count `launch_enqueue` twice).
    ///
    /// ```
    /// let mut p = gmprt_offload::model::DeviceProfile::published_h100();
    /// // 8 µs launch + sync, of which the kernel fits already hold the 4 µs enqueue.
    /// assert!((p.launch_overhead() - 4e-6).abs() < 1e-12);
    /// p.launch_sync = 1e-6; // below launch_enqueue: clamped
    /// assert_eq!(p.launch_overhead(), 0.0);
    /// ```
    pub fn launch_overhead(&self) -> f64 {
        (self.launch_sync - self.launch_enqueue).max(0.0)
    }
    /// The kernel named `name`, or an error listing the profile's kernels.
    ///
    /// ```
    /// let h100 = gmprt_offload::model::DeviceProfile::published_h100();
    /// assert_eq!(h100.kernel("saxpy").unwrap().unit, "elements");
    /// // Job names are not mapped here (see `job_kernel`): the error lists what there is.
    /// let e = h100.kernel("sgemm_batched").unwrap_err().to_string();
    /// assert!(e.contains("no kernel `sgemm_batched` (it has: black_scholes, saxpy, sgemm, monte_carlo)"), "{e}");
    /// ```
    pub fn kernel(&self, name: &str) -> Result<&KernelProfile, OffloadError> {
        self.kernels.iter().find(|k| k.name == name).ok_or_else(|| {
            let names: Vec<&str> = self.kernels.iter().map(|k| k.name.as_str()).collect();
            OffloadError::Config(format!(
                "profile `{}` has no kernel `{name}` (it has: {})",
                self.device,
                names.join(", ")
            ))
        })
    }
    /// JSON text (pretty).
    ///
    /// ```
    /// use gmprt_offload::model::DeviceProfile;
    /// let h100 = DeviceProfile::published_h100();
    /// let text = h100.to_json();
    /// assert!(text.contains("\"device\": \"NVIDIA H100 SXM (published)\""));
    /// assert_eq!(DeviceProfile::from_json(&text).unwrap(), h100); // round trip
    /// ```
    pub fn to_json(&self) -> String {
        // Serialising plain structs of numbers and strings cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
    /// Parses JSON text; the error says what is wrong.
    ///
    /// ```
    /// use gmprt_offload::model::DeviceProfile;
    /// let h200 = DeviceProfile::published_h200();
    /// assert_eq!(DeviceProfile::from_json(&h200.to_json()).unwrap(), h200);
    /// let e = DeviceProfile::from_json("{}").unwrap_err().to_string();
    /// assert!(e.starts_with("invalid configuration: not a device profile: missing field `device`"), "{e}");
    /// ```
    pub fn from_json(s: &str) -> Result<DeviceProfile, OffloadError> {
        serde_json::from_str(s).map_err(|e| OffloadError::Config(format!("not a device profile: {e}")))
    }
    /// Writes JSON to `path`.
    ///
    /// ```
    /// use gmprt_offload::model::DeviceProfile;
    /// let h100 = DeviceProfile::published_h100();
    /// let path = std::env::temp_dir().join(format!("gmprt-doc-save-{}.json", std::process::id()));
    /// h100.save(&path).unwrap();
    /// assert_eq!(DeviceProfile::load(&path).unwrap(), h100);
    /// std::fs::remove_file(&path).unwrap();
    /// // A directory that does not exist: the error names the path.
    /// let bad = std::env::temp_dir().join("gmprt-no-such-dir").join("p.json");
    /// let e = h100.save(&bad).unwrap_err().to_string();
    /// assert!(e.contains("cannot write profile") && e.contains("gmprt-no-such-dir"), "{e}");
    /// ```
    pub fn save(&self, path: &Path) -> Result<(), OffloadError> {
        std::fs::write(path, self.to_json())
            .map_err(|e| OffloadError::Config(format!("cannot write profile {}: {e}", path.display())))
    }
    /// Reads JSON from `path`; the error names the path.
    ///
    /// ```
    /// use gmprt_offload::model::DeviceProfile;
    /// let path = std::env::temp_dir().join(format!("gmprt-doc-load-{}.json", std::process::id()));
    /// let e = DeviceProfile::load(&path).unwrap_err().to_string(); // not there yet
    /// assert!(e.contains("cannot read profile") && e.contains(&*path.to_string_lossy()), "{e}");
    /// std::fs::write(&path, "not json").unwrap();
    /// let e = DeviceProfile::load(&path).unwrap_err().to_string();
    /// assert!(e.contains("is not a valid device profile"), "{e}");
    /// DeviceProfile::published_h200().save(&path).unwrap();
    /// assert_eq!(DeviceProfile::load(&path).unwrap().device, "NVIDIA H200 (published)");
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn load(path: &Path) -> Result<DeviceProfile, OffloadError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| OffloadError::Config(format!("cannot read profile {}: {e}", path.display())))?;
        serde_json::from_str(&text).map_err(|e| {
            OffloadError::Config(format!("profile {} is not a valid device profile: {e}", path.display()))
        })
    }
    /// The shipped profile built from published H100 SXM figures (labelled Published).
    ///
    /// ```
    /// let h100 = gmprt_offload::model::DeviceProfile::published_h100();
    /// assert_eq!(h100.device, "NVIDIA H100 SXM (published)");
    /// assert!(h100.label().contains("published figures, not measured"));
    /// ```
    pub fn published_h100() -> DeviceProfile {
        // The file is checked by the test suite (`published profiles load`); a broken file is
        // a build defect, not a runtime condition.
        DeviceProfile::from_json(H100_JSON).expect("offload/profiles/h100-sxm-published.json is valid")
    }
    /// The shipped profile built from published H200 figures (labelled Published).
    ///
    /// ```
    /// let h200 = gmprt_offload::model::DeviceProfile::published_h200();
    /// assert_eq!(h200.device, "NVIDIA H200 (published)");
    /// assert_eq!(h200.kernels.len(), 4);
    /// ```
    pub fn published_h200() -> DeviceProfile {
        DeviceProfile::from_json(H200_JSON).expect("offload/profiles/h200-published.json is valid")
    }
    /// The profile measured on one NVIDIA H200 with a 16-core Xeon (driver 580, CUDA 13.0;
    /// `explain --all --device cuda --save-profile` at commit 98ea83a, 2026-11-27; raw output
    /// in `benches/results/h200-2026-11-27b/`): the CPU side timed as a program calls it
    /// ([`CpuTiming::AsCalled`]), the driver's launch floors, and mapped-I/O fits for
    /// Black-Scholes and SAXPY; refitted with the current fitting procedure. The default of
    /// `Device::simulated` via `GMPRT_DEVICE=simulated` and of `explain` when there is no GPU
    /// to measure. The first H200 run's profile (2026-11-26, CPU fits cache-resident) stays in
    /// `offload/profiles/` beside it, and the published profiles stay, labelled published.
    ///
    /// ```
    /// use gmprt_offload::model::{CpuTiming, DeviceProfile, ProfileSource};
    /// let h200 = DeviceProfile::measured_h200();
    /// assert_eq!((h200.device.as_str(), h200.kind.as_str(), h200.procs), ("NVIDIA H200", "cuda", 16));
    /// assert!(matches!(h200.source, ProfileSource::Measured));
    /// assert_eq!(h200.cpu_timing, CpuTiming::AsCalled);
    /// let names: Vec<&str> = h200.kernels.iter().map(|k| k.name.as_str()).collect();
    /// // The four kernels, SGEMM on the tensor cores, and the device-to-device copy (the
    /// // roofline's memory bound).
    /// assert_eq!(
    ///     names,
    ///     ["black_scholes", "saxpy", "sgemm", "monte_carlo", "sgemm_tf32", "sgemm_bf16", "device_copy"]
    /// );
    /// // The kernels that stream their I/O have a mapped fit.
    /// assert!(h200.kernel("black_scholes").unwrap().mapped.is_some());
    /// assert!(h200.kernel("sgemm").unwrap().mapped.is_none());
    /// ```
    pub fn measured_h200() -> DeviceProfile {
        let mut p = DeviceProfile::from_json(H200_MEASURED_JSON)
            .expect("offload/profiles/h200-measured-2026-11-27.json is valid");
        p.refit();
        p
    }
    /// Refits every fit of a measured profile from its raw samples with the current
    /// [`LinFit::fit`] (after the fitting procedure changes, a recorded profile need not be
    /// measured again). Fits without samples (published figures) are left as they are.
    ///
    /// ```
    /// use gmprt_offload::model::{DeviceProfile, Sample};
    /// let mut p = DeviceProfile::published_h100();
    /// // Samples recorded on a 5 µs + 20 GB/s link; the published fit was 10 µs + 55 GB/s.
    /// p.h2d.pinned_samples = [1e3, 1e4, 1e5, 1e6].iter().map(|&x| Sample { x, secs: 5e-6 + x / 20e9 }).collect();
    /// let pageable = p.h2d.pageable.clone();
    /// p.refit();
    /// assert!((p.h2d.pinned.intercept - 5e-6).abs() < 1e-12);
    /// assert!((p.h2d.pinned.slope - 1.0 / 20e9).abs() < 1e-16);
    /// assert_eq!(p.h2d.pageable, pageable); // no samples: left as published
    /// ```
    pub fn refit(&mut self) {
        let refit = |fit: &mut LinFit, samples: &[Sample]| {
            if !samples.is_empty() {
                *fit = LinFit::fit(samples);
            }
        };
        for t in [&mut self.h2d, &mut self.d2h] {
            refit(&mut t.pinned, &t.pinned_samples);
            refit(&mut t.pageable, &t.pageable_samples);
        }
        for k in &mut self.kernels {
            refit(&mut k.device, &k.device_samples);
            for c in k.cpu.iter_mut().chain(&mut k.cpu_resident) {
                refit(&mut c.fit, &c.samples);
            }
            if let Some(m) = &mut k.mapped {
                refit(&mut m.fit, &m.samples);
            }
        }
    }
    /// The device-memory roof, if calibrated: seconds to copy x bytes device to device (the
    /// fit of the [`DEVICE_COPY`] entry; profiles measured before it existed, and the
    /// published ones, have none).
    ///
    /// ```
    /// use gmprt_offload::model::{DeviceProfile, KernelProfile, LinFit, Size, DEVICE_COPY};
    /// let mut p = DeviceProfile::published_h100();
    /// assert!(p.device_copy().is_none()); // published figures: no measured roof
    /// p.kernels.push(KernelProfile {
    ///     name: DEVICE_COPY.to_string(),
    ///     unit: "bytes".into(),
    ///     size: Size::Items { in_bytes: 0.0, out_bytes: 0.0, out_fixed: 0.0 },
    ///     device: LinFit::known(2e-6, 1.0 / 3e12), // 2 µs + 3 TB/s
    ///     device_samples: vec![],
    ///     cpu: vec![],
    ///     cpu_resident: vec![],
    ///     mapped: None,
    /// });
    /// assert!((p.device_copy().unwrap().eval(3e9) - 1.002e-3).abs() < 1e-12); // 3 GB: 1.002 ms
    /// ```
    pub fn device_copy(&self) -> Option<&LinFit> {
        self.kernels.iter().find(|k| k.name == DEVICE_COPY).map(|k| &k.device)
    }
    /// The kernel a job named `job_name` is priced by ([`profile_kernel_name`]), if the
    /// profile has it.
    ///
    /// ```
    /// let h100 = gmprt_offload::model::DeviceProfile::published_h100();
    /// assert_eq!(h100.job_kernel("sgemm_batched").map(|k| k.name.as_str()), Some("sgemm"));
    /// assert!(h100.job_kernel("no_such_kernel").is_none());
    /// ```
    pub fn job_kernel(&self, job_name: &str) -> Option<&KernelProfile> {
        let want = profile_kernel_name(job_name);
        self.kernels.iter().find(|k| k.name == want)
    }
    /// This profile with every device-side time (launch, copies, kernels) multiplied by
    /// `factor`, its CPU fits kept and its samples dropped: a card of the same shape `factor`
    /// times slower, e.g. the second device of a mixed machine simulated
    /// ([`Batcher::spread`](crate::Batcher::spread)). Named `<device> at 1/<factor> speed`.
    ///
    /// ```
    /// use gmprt_offload::model::{CostModel, DeviceProfile, Residency};
    /// let h200 = DeviceProfile::measured_h200();
    /// let half = h200.slowed_by(2.0);
    /// assert!(half.device.ends_with(" at 1/2 speed"), "{}", half.device);
    /// let at = |p: &DeviceProfile| CostModel::new(p.clone()).predict("saxpy", 1e6, Residency::Host, 0.0).unwrap().gpu_total;
    /// assert!((at(&half) / at(&h200) - 2.0).abs() < 1e-9);
    /// ```
    pub fn slowed_by(&self, factor: f64) -> DeviceProfile {
        let mut p = self.clone();
        p.device = format!("{} at 1/{factor} speed", p.device);
        (p.launch_enqueue, p.launch_sync) = (p.launch_enqueue * factor, p.launch_sync * factor);
        if let Some(rt) = &mut p.launch_round_trip {
            (rt.spin, rt.blocking) = (rt.spin * factor, rt.blocking * factor);
        }
        for t in [&mut p.h2d, &mut p.d2h] {
            (t.pinned, t.pageable) = (t.pinned.scaled(factor), t.pageable.scaled(factor));
            t.pinned_samples.clear();
            t.pageable_samples.clear();
        }
        for k in &mut p.kernels {
            k.device = k.device.scaled(factor);
            k.device_samples.clear();
            if let Some(m) = &mut k.mapped {
                m.fit = m.fit.scaled(factor);
                m.samples.clear();
            }
        }
        p
    }
    /// One line naming the profile: device, source, date, CPU and procs.
    ///
    /// ```
    /// let l = gmprt_offload::model::DeviceProfile::published_h100().label();
    /// assert!(l.starts_with("NVIDIA H100 SXM (published) (published, driver -; published figures, not measured, "), "{l}");
    /// assert!(l.ends_with(" up to 16 Ps)"), "{l}");
    /// ```
    pub fn label(&self) -> String {
        let source = match &self.source {
            ProfileSource::Measured => "measured",
            ProfileSource::Published { .. } => "published figures, not measured",
        };
        format!(
            "{} ({}, driver {}; {source}, {}; CPU {} up to {} Ps)",
            self.device, self.kind, self.driver, self.date, self.cpu, self.procs
        )
    }
}
