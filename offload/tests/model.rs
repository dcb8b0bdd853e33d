//! The cost model: fits, profile JSON, published profiles, the fit quality of Host data,
//! verdicts derived from the profiles' own numbers, and a live Host calibration's shape.
//!
//! Fit quality is asserted on *recorded* Host data — `offload/profiles/host-2core-vm-quick.json`,
//! a quick Host calibration of the 2-core dev VM saved by `explain --device host
//! --calibrate-quick --save-profile …`, raw samples included — so the assertion is
//! deterministic: timed assertions on a shared, noisy machine would fail at random (this
//! project checks speed in benchmarks, never in timed unit tests). The live comparison of
//! predictions with fresh measurements is the error table of `cargo bench -p gmprt-offload
//! --bench model`. The live calibration below is checked for its shape only.
use gmprt_offload::model::{
    calibrate, CalibrateOptions, CostModel, Crossover, DeviceProfile, LinFit, ProfileSource, Residency,
    Sample, Verdict,
};
use gmprt_offload::Device;
use std::sync::OnceLock;

/// The recorded quick Host calibration (see the module doc).
const RECORDED_HOST: &str = include_str!("../profiles/host-2core-vm-quick.json");

/// One live quick Host calibration.
fn host_profile() -> &'static DeviceProfile {
    static P: OnceLock<DeviceProfile> = OnceLock::new();
    P.get_or_init(|| {
        let opts = CalibrateOptions { max_procs: 2, repeats: 5, quick: true };
        let t = std::time::Instant::now();
        let p = calibrate(&Device::host(), &opts).expect("host calibration");
        eprintln!("quick host calibration took {:?}", t.elapsed());
        p
    })
}

#[test]
fn linfit_recovers_known_coefficients() {
    let (a, b) = (2e-6, 3e-9);
    let exact: Vec<Sample> =
        [1e3, 1e4, 1e5, 1e6, 1e7].iter().map(|&x| Sample { x, secs: a + b * x }).collect();
    let f = LinFit::fit(&exact);
    assert!((f.intercept - a).abs() / a < 1e-6, "{f:?}");
    assert!((f.slope - b).abs() / b < 1e-6, "{f:?}");
    assert!(f.max_rel_err < 1e-9);
    // ±2% deterministic noise: coefficients within a few percent.
    let noisy: Vec<Sample> = exact
        .iter()
        .enumerate()
        .map(|(i, s)| Sample { x: s.x, secs: s.secs * if i % 2 == 0 { 1.02 } else { 0.98 } })
        .collect();
    let f = LinFit::fit(&noisy);
    assert!((f.slope - b).abs() / b < 0.05, "{f:?}");
    assert!((f.intercept - a).abs() / a < 0.1, "{f:?}");
    // One sample: intercept 0, slope through it; negative trends clamp to 0.
    let one = LinFit::fit(&[Sample { x: 10.0, secs: 5.0 }]);
    assert_eq!((one.intercept, one.slope), (0.0, 0.5));
    let down = LinFit::fit(&[Sample { x: 1.0, secs: 2.0 }, Sample { x: 2.0, secs: 1.0 }]);
    assert!(down.slope == 0.0 && down.intercept > 0.0);
}

#[test]
fn json_round_trip_and_files() {
    let p = DeviceProfile::published_h100();
    assert_eq!(DeviceProfile::from_json(&p.to_json()).unwrap(), p);
    let path = std::env::temp_dir().join(format!("gmprt-model-{}.json", std::process::id()));
    p.save(&path).unwrap();
    assert_eq!(DeviceProfile::load(&path).unwrap(), p);
    std::fs::write(&path, "{\"device\": 3}").unwrap();
    let e = DeviceProfile::load(&path).unwrap_err().to_string();
    assert!(e.contains(&path.display().to_string()) && e.contains("device"), "{e}");
    std::fs::remove_file(&path).ok();
    let missing = std::path::Path::new("/nonexistent/dir/profile.json");
    let e = DeviceProfile::load(missing).unwrap_err().to_string();
    assert!(e.contains("/nonexistent/dir/profile.json"), "{e}");
    let e = p.kernel("nope").unwrap_err().to_string();
    assert!(e.contains("black_scholes") && e.contains("nope"), "{e}");
}

#[test]
fn published_profiles_say_published() {
    for p in [DeviceProfile::published_h100(), DeviceProfile::published_h200()] {
        match &p.source {
            ProfileSource::Published { citation } => assert!(citation.contains("NOT MEASURED")),
            s => panic!("{s:?}"),
        }
        assert!(p.label().contains("published"), "{}", p.label());
        assert_eq!(p.kernels.len(), 4);
    }
    let (h100, h200) = (DeviceProfile::published_h100(), DeviceProfile::published_h200());
    let bs = |p: &DeviceProfile| p.kernel("black_scholes").unwrap().device.slope;
    assert!(bs(&h200) < bs(&h100), "H200's HBM is faster");
}

/// Relative error of `fit` on the samples with x ≥ `from`.
fn worst(fit: &LinFit, samples: &[Sample], from: f64) -> f64 {
    samples
        .iter()
        .filter(|s| s.x >= from)
        .map(|s| (fit.eval(s.x) - s.secs).abs() / s.secs)
        .fold(0.0, f64::max)
}

/// The fit-quality failures of `p` (empty when every BS/SAXPY fit is within ±25% at n ≥ 10k).
fn fit_failures(p: &DeviceProfile) -> Vec<String> {
    let mut bad = vec![];
    for name in ["black_scholes", "saxpy"] {
        let k = p.kernel(name).unwrap();
        let e = worst(&k.device, &k.device_samples, 1e4);
        eprintln!("{name}: device fit {:?}, worst error at n >= 10k {:.1}%", k.device, 100.0 * e);
        if e > 0.25 {
            bad.push(format!("{name} device fit off by {:.0}%: {:?}", 100.0 * e, k.device_samples));
        }
        for c in &k.cpu {
            let e = worst(&c.fit, &c.samples, 1e4);
            eprintln!("{name}: CPU {}P fit {:?}, worst error {:.1}%", c.procs, c.fit, 100.0 * e);
            if e > 0.25 {
                bad.push(format!("{name} CPU {}P fit off by {:.0}%: {:?}", c.procs, 100.0 * e, c.samples));
            }
        }
    }
    bad
}

#[test]
fn recorded_host_fits_predict_their_own_samples() {
    let p = DeviceProfile::from_json(RECORDED_HOST).unwrap();
    assert_eq!(p.source, ProfileSource::Measured);
    assert_eq!(p.kind, "host");
    let bad = fit_failures(&p);
    assert!(bad.is_empty(), "{bad:#?}");
    // The stored fits are what fitting the stored samples gives (nothing hand-edited).
    for k in &p.kernels {
        let refit = LinFit::fit(&k.device_samples);
        assert!((refit.slope - k.device.slope).abs() <= 1e-9 * k.device.slope.abs().max(1e-30), "{}", k.name);
    }
    let m = CostModel::new(p.clone());
    for k in ["black_scholes", "saxpy", "sgemm", "monte_carlo"] {
        for r in [Residency::Host, Residency::Device] {
            eprintln!("recorded host crossover {k} {r:?}: {:?}", m.crossover(k, r).unwrap());
        }
    }
}

#[test]
fn live_host_calibration_has_every_kernel_and_sane_fits() {
    let p = host_profile();
    assert_eq!((p.source.clone(), p.kind.as_str(), p.procs), (ProfileSource::Measured, "host", 2));
    for name in ["black_scholes", "saxpy", "sgemm", "monte_carlo"] {
        let k = p.kernel(name).unwrap();
        assert!(k.device.slope > 0.0 && k.device.intercept >= 0.0, "{name}: {:?}", k.device);
        assert!(!k.device_samples.is_empty(), "{name}: no device samples");
        let procs: Vec<usize> = k.cpu.iter().map(|c| c.procs).collect();
        assert_eq!(procs, vec![1, 2], "{name}: CPU fits");
        assert!(k.cpu.iter().all(|c| c.fit.slope > 0.0 && !c.samples.is_empty()), "{name}");
    }
    assert!(p.h2d.pinned.slope > 0.0 && p.d2h.pinned.slope > 0.0);
    let back = DeviceProfile::from_json(&p.to_json()).unwrap();
    assert_eq!(&back, p);
}

#[test]
fn published_h100_verdicts_follow_the_numbers() {
    let p = DeviceProfile::published_h100();
    let m = CostModel::new(p.clone());
    let best_cpu_slope =
        |k: &str| p.kernel(k).unwrap().cpu.iter().map(|c| c.fit.slope).fold(f64::INFINITY, f64::min);
    // SAXPY with inputs on the host: PCIe moves 12 B per element slower than the CPU does.
    match m.crossover("saxpy", Residency::Host).unwrap() {
        Crossover::Never { reason } => {
            assert!(reason.contains("PCIe"), "{reason}");
            eprintln!("h100 saxpy host: Never: {reason}");
        }
        c => panic!("saxpy host-resident should never pay: {c:?}"),
    }
    let b = m.predict("saxpy", 1e8, Residency::Host, 0.0).unwrap();
    assert!(matches!(b.verdict, Verdict::Cpu { .. }), "{b:?}");
    // SGEMM with inputs on the host: N² transfers vs N³ flops, so a crossover exists.
    match m.crossover("sgemm", Residency::Host).unwrap() {
        Crossover::At { n } => {
            eprintln!("h100 sgemm host: N* = {n}");
            let below = m.predict("sgemm", (n - 2.0).max(1.0), Residency::Host, 0.0).unwrap();
            let above = m.predict("sgemm", n + 2.0, Residency::Host, 0.0).unwrap();
            assert!(matches!(below.verdict, Verdict::Cpu { .. }), "{below:?}");
            assert!(matches!(above.verdict, Verdict::Gpu { .. }), "{above:?}");
        }
        c => panic!("sgemm should cross over: {c:?}"),
    }
    // Black-Scholes on device-resident data: the GPU wins for large n.
    let c = m.crossover("black_scholes", Residency::Device).unwrap();
    eprintln!("h100 black_scholes device: {c:?}");
    assert!(matches!(c, Crossover::At { .. } | Crossover::Always), "{c:?}");
    let b = m.predict("black_scholes", 1e7, Residency::Device, 0.0).unwrap();
    assert!(matches!(b.verdict, Verdict::Gpu { .. }), "{}", m.explain(&b));
    // Black-Scholes host-resident: whatever the model says must agree with the slopes.
    let k = p.kernel("black_scholes").unwrap();
    let gpu_slope = 24.0 * p.h2d.pinned.slope + 24.0 * p.d2h.pinned.slope + k.device.slope;
    let c = m.crossover("black_scholes", Residency::Host).unwrap();
    eprintln!(
        "h100 black_scholes host: {c:?} (GPU {gpu_slope:e} s/option vs CPU {:e})",
        best_cpu_slope("black_scholes")
    );
    if gpu_slope >= best_cpu_slope("black_scholes") {
        match c {
            Crossover::Never { reason } => assert!(reason.contains("PCIe"), "{reason}"),
            c => panic!("slopes say never, model says {c:?}"),
        }
    } else {
        assert!(matches!(c, Crossover::At { .. } | Crossover::Always), "{c:?}");
    }
    for k in ["black_scholes", "saxpy", "sgemm", "monte_carlo"] {
        for r in [Residency::Host, Residency::Device] {
            eprintln!("h100 crossover {k} {r:?}: {:?}", m.crossover(k, r).unwrap());
        }
    }
    let b = m.predict("black_scholes", 1e6, Residency::Host, 0.0).unwrap();
    let text = m.explain(&b);
    assert!(text.contains("Verdict") && text.contains("Crossover"), "{text}");
    eprintln!("{text}");
    // cpu_time: the nearest profiled P count at or below the request.
    let t16 = m.cpu_time("saxpy", 1e6, 16).unwrap();
    assert_eq!(m.cpu_time("saxpy", 1e6, 15).unwrap(), m.cpu_time("saxpy", 1e6, 8).unwrap());
    assert!(t16 <= m.cpu_time("saxpy", 1e6, 1).unwrap());
}
