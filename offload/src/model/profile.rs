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

/// Host ↔ device copies: `t = latency + bytes / bandwidth` (intercept = latency in s,
/// slope = 1 / bandwidth in s/B), pinned and pageable host memory.
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
    pub fn work(&self, n: f64) -> f64 {
        match self {
            Size::Items { .. } => n,
            Size::MatrixN => 2.0 * n * n * n,
        }
    }
    /// Bytes to upload at size n.
    pub fn in_bytes(&self, n: f64) -> f64 {
        match self {
            Size::Items { in_bytes, .. } => in_bytes * n,
            Size::MatrixN => 8.0 * n * n,
        }
    }
    /// Bytes to download at size n.
    pub fn out_bytes(&self, n: f64) -> f64 {
        match self {
            Size::Items { out_bytes, out_fixed, .. } => out_bytes * n + out_fixed,
            Size::MatrixN => 4.0 * n * n,
        }
    }
}

/// CPU time of a kernel on `procs` Ps (x = work units).
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
    /// CPU fits, one per P count measured.
    pub cpu: Vec<CpuFit>,
}

/// Everything the cost model knows about one machine (device + its host CPU).
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
    /// The host CPU (model name) and how many Ps the CPU fits go up to.
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
}

/// The H100 SXM published profile (JSON, compiled in).
const H100_JSON: &str = include_str!("../../profiles/h100-sxm-published.json");
/// The H200 published profile (JSON, compiled in).
const H200_JSON: &str = include_str!("../../profiles/h200-published.json");

impl DeviceProfile {
    /// What a launch costs beyond what the kernel fits already contain: `launch_sync −
    /// launch_enqueue`, at least 0 (the kernel fits are timed on the clock `launch_enqueue` is
    /// timed on, so adding `launch_sync` to them would count `launch_enqueue` twice).
    pub fn launch_overhead(&self) -> f64 {
        (self.launch_sync - self.launch_enqueue).max(0.0)
    }
    /// The kernel named `name`, or an error listing the profile's kernels.
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
    pub fn to_json(&self) -> String {
        // Serialising plain structs of numbers and strings cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
    /// Parses JSON text; the error says what is wrong.
    pub fn from_json(s: &str) -> Result<DeviceProfile, OffloadError> {
        serde_json::from_str(s).map_err(|e| OffloadError::Config(format!("not a device profile: {e}")))
    }
    /// Writes JSON to `path`.
    pub fn save(&self, path: &Path) -> Result<(), OffloadError> {
        std::fs::write(path, self.to_json())
            .map_err(|e| OffloadError::Config(format!("cannot write profile {}: {e}", path.display())))
    }
    /// Reads JSON from `path`; the error names the path.
    pub fn load(path: &Path) -> Result<DeviceProfile, OffloadError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| OffloadError::Config(format!("cannot read profile {}: {e}", path.display())))?;
        serde_json::from_str(&text).map_err(|e| {
            OffloadError::Config(format!("profile {} is not a valid device profile: {e}", path.display()))
        })
    }
    /// The shipped profile built from published H100 SXM figures (labelled Published).
    pub fn published_h100() -> DeviceProfile {
        // The file is checked by the test suite (`published profiles load`); a broken file is
        // a build defect, not a runtime condition.
        DeviceProfile::from_json(H100_JSON).expect("offload/profiles/h100-sxm-published.json is valid")
    }
    /// The shipped profile built from published H200 figures (labelled Published).
    pub fn published_h200() -> DeviceProfile {
        DeviceProfile::from_json(H200_JSON).expect("offload/profiles/h200-published.json is valid")
    }
    /// Refits every fit of a measured profile from its raw samples with the current
    /// [`LinFit::fit`] (after the fitting procedure changes, a recorded profile need not be
    /// measured again). Fits without samples (published figures) are left as they are.
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
            for c in &mut k.cpu {
                refit(&mut c.fit, &c.samples);
            }
        }
    }
    /// The device-memory roof, if calibrated: seconds to copy x bytes device to device (the
    /// fit of the [`DEVICE_COPY`] entry; profiles measured before it existed, and the
    /// published ones, have none).
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
    /// One line naming the profile: device, source, date, CPU and procs.
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
