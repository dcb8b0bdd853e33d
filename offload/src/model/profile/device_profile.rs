//! [`DeviceProfile`]'s methods: what a launch costs, kernel lookup, JSON (parse, print, load,
//! save), the compiled-in profiles (published H100/H200, measured H200), refitting from the
//! recorded samples, and the scaled copies the what-if tables use. The types are the parent's.
use super::super::fit::{LinFit, Sample};
use super::{profile_kernel_name, DeviceProfile, KernelProfile, ProfileSource, DEVICE_COPY};
use crate::error::OffloadError;
use std::path::Path;

/// The H100 SXM published profile (JSON, compiled in).
const H100_JSON: &str = include_str!("../../../profiles/h100-sxm-published.json");
/// The H200 published profile (JSON, compiled in).
const H200_JSON: &str = include_str!("../../../profiles/h200-published.json");
/// The H200 profile measured on the first GPU run (JSON, compiled in; raw output in
/// `benches/results/h200-2026-11-26/`).
const H200_MEASURED_JSON: &str = include_str!("../../../profiles/h200-measured-2026-11-27.json");

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
    /// ([`CpuTiming::AsCalled`](super::CpuTiming::AsCalled)), the driver's launch floors, and mapped-I/O fits for
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
