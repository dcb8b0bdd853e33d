//! Profiles: the JSON round trip, published profiles labelled so, the recorded Host fits
//! predicting their own samples, and every committed profile monotone in n.

use super::*;

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
        assert!(p.device_copy().is_none(), "published profiles have no device-copy roof, and load");
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

/// The fit-quality failures of `p`: every kernel's device and CPU fits must be within ±25% of
/// their samples from n = 10k on (SGEMM: every sample, N ≥ 64).
fn fit_failures(p: &DeviceProfile, limit: f64) -> Vec<String> {
    let mut bad = vec![];
    for k in &p.kernels {
        let from = match k.size {
            Size::MatrixN => 0.0,
            Size::Items { .. } => 1e4,
        };
        let e = worst(&k.device, &k.device_samples, from);
        eprintln!(
            "{}: device fit, {} regime(s), worst error {:.1}%",
            k.name,
            k.device.below.len() + 1,
            100.0 * e
        );
        if e > limit {
            bad.push(format!("{} device fit off by {:.0}%: {:?}", k.name, 100.0 * e, k.device_samples));
        }
        for c in &k.cpu {
            let e = worst(&c.fit, &c.samples, from);
            eprintln!(
                "{}: CPU {}P fit, {} regime(s), worst error {:.1}%",
                k.name,
                c.procs,
                c.fit.below.len() + 1,
                100.0 * e
            );
            if e > limit {
                bad.push(format!(
                    "{} CPU {}P fit off by {:.0}%: {:?}",
                    k.name,
                    c.procs,
                    100.0 * e,
                    c.samples
                ));
            }
        }
    }
    // Copies are reported, not asserted: on the VM, memcpy from DRAM (32-128 MiB) moves by
    // ±30% between neighbouring sizes (see the profile's samples); the e2e column of the model
    // bench shows what that does to batch predictions.
    for (dir, t) in [("H2D", &p.h2d), ("D2H", &p.d2h)] {
        eprintln!(
            "{dir}: pinned fit worst error {:.1}%, pageable {:.1}%",
            100.0 * worst(&t.pinned, &t.pinned_samples, 0.0),
            100.0 * worst(&t.pageable, &t.pageable_samples, 0.0)
        );
    }
    bad
}

#[test]
fn recorded_host_fits_predict_their_own_samples() {
    let stored = DeviceProfile::from_json(RECORDED_HOST).unwrap();
    assert_eq!(stored.source, ProfileSource::Measured);
    assert_eq!(stored.kind, "host");
    // The recorded fits were made before every regime needed three samples (`fit::MIN_RUN`);
    // what is checked is the current fitter on the recorded samples (a refit of a refit
    // changes nothing: the fits are a function of the samples alone).
    let mut p = stored.clone();
    p.refit();
    let mut again = p.clone();
    again.refit();
    assert_eq!(again, p, "refitting is not a function of the samples");
    // Held to ±25% but for the one sample that sits on the edge of the last-level cache and
    // DRAM: the recorded series has only three samples past the edge (8M-32M SAXPY elements,
    // 6.3 / 18.2 / 30.0 ms: the 8M point is half cached), which a regime of at least three
    // samples cannot fit all of within 25% (worst 30%); two-sample regimes hid that by fitting
    // 16M-32M exactly (SGEMM on 1 P: 25.3%). Calibrations since then go to 64M SAXPY elements
    // (see `calibrate`'s plan).
    let bad = fit_failures(&p, 0.31);
    assert!(bad.is_empty(), "{bad:#?}");
    // The memory hierarchy shows: SAXPY on the device is cut into regimes, and its
    // per-element cost from DRAM is more than twice the in-cache one.
    let sx = p.kernel("saxpy").unwrap();
    let first = sx.device.below.first().expect("SAXPY on the Host device has more than one regime");
    assert!(sx.device.slope > 2.0 * first.slope, "{:?}", sx.device);
    let m = CostModel::new(p.clone());
    for k in ["black_scholes", "saxpy", "sgemm", "monte_carlo"] {
        for r in [Residency::Host, Residency::Device, Residency::Pageable] {
            eprintln!("recorded host crossover {k} {r:?}: {:?}", m.crossover(k, r).unwrap());
        }
    }
}

/// Every fit of every committed profile is monotone in n: more work never reads as less time
/// (issue 27, item 5). Read as bare lines, the H200 run's CPU fits fell at a regime break
/// (Black-Scholes on 4, 8 and 16 Ps by a third at n = 32k); `LinFit::eval` reads each regime
/// as at least the end of the ones below it.
#[test]
fn every_committed_profile_is_monotone_in_n() {
    fn check(what: &str, f: &LinFit, bad: &mut Vec<String>) {
        // 20 points per decade from 1 to 1e13: past every break of every profile (flops for SGEMM).
        let mut prev = (0.0, f.eval(0.0));
        for i in 0..=260 {
            let x = 10f64.powf(f64::from(i) / 20.0);
            let y = f.eval(x);
            if y < prev.1 {
                bad.push(format!(
                    "{what}: {:.3e} s at x = {:.3e}, then {y:.3e} s at x = {x:.3e}",
                    prev.1, prev.0
                ));
                return;
            }
            prev = (x, y);
        }
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles");
    let mut bad = vec![];
    let mut files = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let p = DeviceProfile::load(&path).unwrap();
        files += 1;
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        for t in [("h2d", &p.h2d), ("d2h", &p.d2h)] {
            check(&format!("{name} {} pinned", t.0), &t.1.pinned, &mut bad);
            check(&format!("{name} {} pageable", t.0), &t.1.pageable, &mut bad);
        }
        for k in &p.kernels {
            check(&format!("{name} {} device", k.name), &k.device, &mut bad);
            for c in k.cpu.iter().chain(&k.cpu_resident) {
                check(&format!("{name} {} cpu {} Ps", k.name, c.procs), &c.fit, &mut bad);
            }
        }
    }
    assert!(files >= 4, "expected the four committed profiles in {}", dir.display());
    assert!(bad.is_empty(), "fits that fall with n:\n{}", bad.join("\n"));
}
