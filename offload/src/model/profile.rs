//! [`DeviceProfile`]: a device's measured (or published) costs, as JSON.
//!
//! The published profiles ship as `offload/profiles/*.json` (compiled in with `include_str!`);
//! their `source` is [`ProfileSource::Published`] with every figure and assumption cited.
use super::fit::{LinFit, Sample};
use serde::{Deserialize, Serialize};
use std::time::Duration;

mod device_profile;

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
