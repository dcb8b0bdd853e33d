//! A live quick Host calibration (checked for its shape only: module doc of `main.rs`),
//! `CpuKernels` on every kernel and on bad input, and `verify` on the Host.

use super::*;

/// One live quick Host calibration.
fn host_profile() -> &'static DeviceProfile {
    static P: OnceLock<DeviceProfile> = OnceLock::new();
    P.get_or_init(|| {
        let opts = CalibrateOptions { max_procs: 2, repeats: 5, quick: true, progress: false };
        let t = std::time::Instant::now();
        let p = calibrate(&Device::host(), &opts).expect("host calibration");
        eprintln!("quick host calibration took {:?}", t.elapsed());
        p
    })
}

#[test]
fn cpu_kernels_time_every_kernel_and_reject_bad_input() {
    let rt = gmprt_runtime::Runtime::builder().procs(2).build().unwrap();
    let cpu = CpuKernels::new(1 << 14, 1 << 14);
    for (k, n) in [("black_scholes", 1 << 14), ("saxpy", 1 << 14), ("sgemm", 32), ("monte_carlo", 1 << 12)] {
        // A real run takes some time; how much is up to the machine's load (no upper bound).
        let t = cpu.time(&rt.handle(), k, n, 3).unwrap();
        assert!(t.is_finite() && t > 0.0, "{k}: {t}");
    }
    let e = cpu.time(&rt.handle(), "saxpy", 1 << 15, 3).unwrap_err().to_string();
    assert!(e.contains("32768") && e.contains("16384"), "{e}");
    let e = cpu.time(&rt.handle(), "fft", 8, 3).unwrap_err().to_string();
    assert!(e.contains("fft") && e.contains("black_scholes"), "{e}");
    // Every timing runs every kernel.
    use gmprt_offload::model::CpuTiming;
    for timing in [CpuTiming::AsCalledFreshOutputs, CpuTiming::Resident] {
        for (k, n) in
            [("black_scholes", 1 << 14), ("saxpy", 1 << 14), ("sgemm", 32), ("monte_carlo", 1 << 12)]
        {
            let t = cpu.time_as(&rt.handle(), k, n, 1, timing).unwrap();
            assert!(t.is_finite() && t > 0.0, "{k}, {timing:?}: {t}");
        }
    }
    // An as-called timing from inside the runtime would time a P's hand-off: refused.
    let h = rt.handle();
    let inside = rt.block_on(async move { CpuKernels::new(1, 1 << 14).time(&h, "saxpy", 1 << 14, 1) });
    let e = inside.unwrap_err().to_string();
    assert!(e.contains("outside the runtime"), "{e}");
}

/// `[lo, 2·lo, 4·lo, …] ≤ hi`.
fn doubling(lo: usize, hi: usize) -> Vec<f64> {
    std::iter::successors(Some(lo), |&x| Some(2 * x)).take_while(|&x| x <= hi).map(|x| x as f64).collect()
}

/// `samples` were taken at exactly the sizes `xs`, in order, each a finite, non-negative time.
#[track_caller]
fn assert_sampled_at(what: &str, samples: &[Sample], xs: &[f64]) {
    assert_eq!(samples.iter().map(|s| s.x).collect::<Vec<_>>(), xs, "{what}: sizes");
    assert!(samples.iter().all(|s| s.secs.is_finite() && s.secs >= 0.0), "{what}: {samples:?}");
}

#[test]
fn live_host_calibration_has_every_kernel_and_sane_fits() {
    // Shape only (see the module docs): the sizes are calibrate's quick Host plan, fixed; the
    // times are whatever this machine measured, and every fit only has to have the shape that
    // `LinFit::fit` gives any samples.
    let p = host_profile();
    assert_eq!((p.source.clone(), p.kind.as_str(), p.procs), (ProfileSource::Measured, "host", 2));
    // The priced CPU fits are timed as a program calls the kernels (issue 27, item 5), and
    // the cache-resident ones are kept beside them.
    assert_eq!(p.cpu_timing, gmprt_offload::model::CpuTiming::AsCalled);
    assert!(p.launch_enqueue.is_finite() && p.launch_enqueue >= 0.0, "{}", p.launch_enqueue);
    assert!(p.launch_sync.is_finite() && p.launch_sync >= 0.0, "{}", p.launch_sync);
    const KI: usize = 1024;
    const MI: usize = 1024 * KI;
    let copies = doubling(4 * KI, 4 * MI);
    for (dir, t) in [("H2D", &p.h2d), ("D2H", &p.d2h)] {
        assert_sampled_at(dir, &t.pinned_samples, &copies);
        assert_sampled_at(dir, &t.pageable_samples, &copies);
        assert_fit_shape(&format!("{dir} pinned"), &t.pinned, &t.pinned_samples);
        assert_fit_shape(&format!("{dir} pageable"), &t.pageable, &t.pageable_samples);
    }
    let sgemm_flops: Vec<f64> =
        [32.0f64, 48.0, 64.0, 96.0, 128.0, 192.0, 256.0].iter().map(|n| 2.0 * n.powi(3)).collect();
    let names: Vec<&str> = p.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["black_scholes", "saxpy", "sgemm", "monte_carlo", "device_copy"]);
    // The device-memory roof: the copy kernel at the copy sizes, bytes copied, no CPU side.
    let copy = p.kernel("device_copy").unwrap();
    assert_sampled_at("device copy", &copy.device_samples, &copies);
    assert_fit_shape("device copy", &copy.device, &copy.device_samples);
    assert!(copy.cpu.is_empty());
    assert_eq!(p.device_copy(), Some(&copy.device));
    for (name, xs) in [
        ("black_scholes", doubling(8 * KI, MI)),
        ("saxpy", doubling(8 * KI, 8 * MI)),
        ("sgemm", sgemm_flops),
        ("monte_carlo", doubling(16 * KI, 4 * MI)),
    ] {
        let k = p.kernel(name).unwrap();
        assert_sampled_at(&format!("{name} device"), &k.device_samples, &xs);
        assert_fit_shape(&format!("{name} device"), &k.device, &k.device_samples);
        for (line, fits) in [("as called", &k.cpu), ("resident", &k.cpu_resident)] {
            let procs: Vec<usize> = fits.iter().map(|c| c.procs).collect();
            assert_eq!(procs, vec![1, 2], "{name}: CPU fits, {line}");
        }
        for c in k.cpu.iter().chain(&k.cpu_resident) {
            let what = format!("{name} CPU {}P", c.procs);
            assert_sampled_at(&what, &c.samples, &xs);
            assert_fit_shape(&what, &c.fit, &c.samples);
        }
    }
    let back = DeviceProfile::from_json(&p.to_json()).unwrap();
    assert_eq!(&back, p);
}

/// `calibrate::verify` (`explain --verify`) runs every kernel on both sides and returns the
/// five phases, each predicted by the model and measured; whether they pass is the machine's
/// business (no timing is asserted), but the shape and the errors are fixed.
#[test]
fn verify_runs_both_sides_and_names_each_phase() {
    use gmprt_offload::calibrate::verify;
    let model = CostModel::new(host_profile().clone());
    let d = Device::host();
    for (k, n) in [("black_scholes", 1 << 14), ("saxpy", 1 << 14), ("sgemm", 64), ("monte_carlo", 1 << 14)] {
        let checks = verify(&d, &model, k, n, 1).unwrap();
        let phases: Vec<&str> = checks.iter().map(|c| c.phase.as_str()).collect();
        assert_eq!(phases, ["H2D", "kernel", "D2H", "GPU total", "CPU on 2 Ps"], "{k}");
        for c in &checks {
            assert!(c.predicted.is_finite() && c.predicted >= 0.0, "{k}: {c:?}");
            assert!(c.measured.is_finite() && c.measured >= 0.0, "{k}: {c:?}");
        }
        // The kernel and the whole run take time on both sides.
        assert!(checks[1].measured > 0.0 && checks[3].measured > 0.0 && checks[4].measured > 0.0, "{k}");
        // Priced the way the path copies: a slot's pinned staging, or the caller's pageable
        // memory for the one-shot SGEMM and Monte Carlo calls.
        let residency =
            if matches!(k, "sgemm" | "monte_carlo") { Residency::Pageable } else { Residency::Host };
        let b = model.predict(k, n as f64, residency, 0.0).unwrap();
        assert_eq!((checks[0].predicted, checks[2].predicted), (b.h2d, b.d2h), "{k}");
    }
    let e = verify(&d, &model, "fft", 8, 1).unwrap_err().to_string();
    assert!(e.contains("no kernel `fft`"), "{e}");
}
