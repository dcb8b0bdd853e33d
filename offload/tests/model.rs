//! The cost model: fits, profile JSON, published profiles, the fit quality of Host data,
//! verdicts derived from the profiles' own numbers, and a live Host calibration's shape.
//!
//! Fit quality is asserted on *recorded* Host data — `offload/profiles/host-2core-vm.json`, a
//! full Host calibration of the 2-core dev VM saved by `explain --device host --save-profile
//! …`, raw samples included — so the assertion is
//! deterministic: timed assertions on a shared, noisy machine would fail at random (this
//! project checks speed in benchmarks, never in timed unit tests). The live comparison of
//! predictions with fresh measurements is the error table of `cargo bench -p gmprt-offload
//! --bench model`. The live calibration below is checked for its shape only — every kernel,
//! P count and size present, and fits of the shape `LinFit::fit` gives for *any* samples
//! (`fits_have_their_shape_whatever_the_samples` checks that shape on arbitrary ones), so no
//! amount of load on the machine can break it.
use gmprt_offload::calibrate::{calibrate, CalibrateOptions, CpuKernels};
use gmprt_offload::model::fit::MAX_REGIMES;
use gmprt_offload::model::{
    CostModel, Crossover, DeviceProfile, LinFit, MappedFit, ProfileSource, Residency, Sample, Size, Verdict,
};
use gmprt_offload::Device;
use proptest::prelude::*;
use std::sync::OnceLock;

/// The recorded quick Host calibration (see the module doc).
const RECORDED_HOST: &str = include_str!("../profiles/host-2core-vm.json");

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

/// Samples of `t = a + b·x` below `brk` and `a2 + b2·x` from it on, at x = 2^i.
fn two_speed(brk: f64, (a, b): (f64, f64), (a2, b2): (f64, f64)) -> Vec<Sample> {
    (10..24)
        .map(|i| {
            let x = f64::from(1u32 << i);
            Sample { x, secs: if x < brk { a + b * x } else { a2 + b2 * x } }
        })
        .collect()
}

#[test]
fn linfit_finds_cache_regimes_and_ignores_noise() {
    // In cache 0.2 ns per element, from DRAM 0.6 ns: two regimes, break between the samples.
    let s = two_speed(3e5, (1e-6, 0.2e-9), (2e-6, 0.6e-9));
    let f = LinFit::fit(&s);
    assert_eq!(f.below.len(), 1, "{f:?}");
    assert!(
        (f.slope - 0.6e-9).abs() / 0.6e-9 < 1e-6 && (f.below[0].slope - 0.2e-9).abs() / 0.2e-9 < 1e-6,
        "{f:?}"
    );
    assert!(f.below[0].upto > 262_144.0 && f.below[0].upto < 524_288.0, "{f:?}");
    assert!(f.max_rel_err < 1e-6, "{f:?}");
    for x in [5e3, 1e5, 1e6, 1e8] {
        let want = if x < 3e5 { 1e-6 + 0.2e-9 * x } else { 2e-6 + 0.6e-9 * x };
        assert!((f.eval(x) - want).abs() / want < 1e-6, "x = {x}: {} vs {want}", f.eval(x));
    }
    // JSON keeps the regimes; a one-regime fit writes no `below` at all.
    let json = serde_json::to_string(&f).unwrap();
    assert_eq!(serde_json::from_str::<LinFit>(&json).unwrap(), f);
    assert!(!serde_json::to_string(&LinFit::known(1.0, 2.0)).unwrap().contains("below"));
    // One straight regime with ±4% alternating noise: no spurious break.
    let noisy: Vec<Sample> = two_speed(f64::INFINITY, (1e-6, 0.5e-9), (0.0, 0.0))
        .into_iter()
        .enumerate()
        .map(|(i, s)| Sample { x: s.x, secs: s.secs * if i % 2 == 0 { 1.04 } else { 0.96 } })
        .collect();
    let f = LinFit::fit(&noisy);
    assert!(f.below.is_empty(), "noise split into regimes: {f:?}");
    // Four speeds (L1, L2, LLC, DRAM, as a memcpy shows): at most four regimes, all found.
    let s: Vec<Sample> = (12..28)
        .map(|i| {
            let x = f64::from(1u32 << i);
            let ps = match i {
                ..=14 => 7.5,
                15..=19 => 24.0,
                20..=24 => 72.0,
                _ => 140.0,
            };
            Sample { x, secs: ps * 1e-12 * x }
        })
        .collect();
    let f = LinFit::fit(&s);
    assert_eq!(f.below.len(), 3, "{f:?}");
    assert!(f.max_rel_err < 1e-6, "{f:?}");
}

#[test]
fn crossover_search_matches_the_closed_form_on_straight_fits() {
    // With one regime everywhere, n* = max over P of (A_g − A_p) / (s_p − s_g) in closed form.
    let p = DeviceProfile::published_h100();
    let m = CostModel::new(p.clone());
    for (kernel, res) in [
        ("black_scholes", Residency::Device),
        ("saxpy", Residency::Device),
        ("monte_carlo", Residency::Host),
        ("monte_carlo", Residency::Device),
    ] {
        let k = p.kernel(kernel).unwrap();
        let Size::Items { in_bytes, out_bytes, out_fixed } = k.size else { unreachable!() };
        let host = res == Residency::Host;
        let (h, d) = (&p.h2d.pinned, &p.d2h.pinned);
        let s_g = k.device.slope + if host { in_bytes * h.slope + out_bytes * d.slope } else { 0.0 };
        let mut a_g = p.launch_overhead() + k.device.intercept;
        if host {
            a_g += if in_bytes > 0.0 { h.intercept } else { 0.0 } + d.intercept + d.slope * out_fixed;
        }
        let closed = k
            .cpu
            .iter()
            .map(|c| (a_g - c.fit.intercept) / (c.fit.slope - s_g))
            .fold(f64::NEG_INFINITY, f64::max)
            .ceil();
        match m.crossover(kernel, res).unwrap() {
            Crossover::At { n } => assert_eq!(n, closed, "{kernel} {res:?}"),
            c => panic!("{kernel} {res:?}: {c:?}, closed form {closed}"),
        }
    }
}

#[test]
fn small_host_batches_are_priced_by_the_mapped_fit_and_larger_ones_copy() {
    // SAXPY, 12 B per element: 5,461 elements fit in 64 KiB and map; one more copies.
    let mut p = DeviceProfile::published_h100();
    let plain = CostModel::new(p.clone());
    let k = p.kernels.iter_mut().find(|k| k.name == "saxpy").unwrap();
    let fit = LinFit::known(7e-6, 12.0 / 10e9); // 7 µs + 10 GB/s across PCIe
    k.mapped = Some(MappedFit { max_bytes: 65536.0, fit: fit.clone(), samples: vec![] });
    let m = CostModel::new(p);
    for n in [1.0, 100.0, 5461.0] {
        let b = m.predict("saxpy", n, Residency::Host, 0.0).unwrap();
        assert!(b.mapped_io && b.h2d == 0.0 && b.d2h == 0.0, "{b:?}");
        assert_eq!(b.kernel_time, fit.eval(n));
        assert_eq!(b.gpu_total, b.launch + b.kernel_time);
        assert!(m.explain(&b).contains("mapped I/O: no copies"), "{}", m.explain(&b));
        let pipe = m.predict_pipeline("saxpy", n, 2, Residency::Host).unwrap();
        assert_eq!((pipe.h2d, pipe.d2h, pipe.kernel_time), (0.0, 0.0, b.kernel_time));
    }
    // Past the window, and for data on the device or in pageable memory, the plain model.
    for (n, res) in [(5462.0, Residency::Host), (100.0, Residency::Device), (100.0, Residency::Pageable)] {
        let b = m.predict("saxpy", n, res, 0.0).unwrap();
        assert!(!b.mapped_io, "{b:?}");
        assert_eq!(b, plain.predict("saxpy", n, res, 0.0).unwrap());
    }
    // A profile's JSON keeps the fit; one without it (older, published) reads as None.
    let back = DeviceProfile::from_json(&m.profile.to_json()).unwrap();
    assert_eq!(back.kernel("saxpy").unwrap().mapped, m.profile.kernel("saxpy").unwrap().mapped);
    assert!(DeviceProfile::published_h100().kernel("saxpy").unwrap().mapped.is_none());
}

#[test]
fn a_gpu_lost_on_the_asymptotes_says_below_which_size_it_still_wins() {
    // Black-Scholes from host memory on the published H100: PCIe-bound, the GPU never wins.
    let mut p = DeviceProfile::published_h100();
    let Crossover::Never { reason, wins_below: None } =
        CostModel::new(p.clone()).crossover("black_scholes", Residency::Host).unwrap()
    else {
        panic!("PCIe-bound on the published profile, and never a win")
    };
    assert!(!reason.contains("wins only below"), "{reason}");
    // A CPU side with 1 ms of fixed cost per call (a fork/join as called, exaggerated): the
    // asymptote is the same, but small batches now go to the GPU, and the reason says up to where.
    for c in &mut p.kernels.iter_mut().find(|k| k.name == "black_scholes").unwrap().cpu {
        c.fit = LinFit::known(1e-3, c.fit.slope);
    }
    let m = CostModel::new(p);
    let Crossover::Never { reason, wins_below: Some(at) } =
        m.crossover("black_scholes", Residency::Host).unwrap()
    else {
        panic!("still PCIe-bound at large n, and a GPU win below some n")
    };
    assert!(reason.starts_with("PCIe-bound") && reason.contains("it wins only below n ≈ "), "{reason}");
    let said: f64 = reason.rsplit("n ≈ ").next().unwrap().split(',').next().unwrap().parse().unwrap();
    assert!((said / at - 1.0).abs() < 0.01, "{reason} against {at}");
    let words = m.explain(&m.predict("black_scholes", 1e3, Residency::Host, 0.0).unwrap());
    assert!(words.contains("Crossover: none, the GPU loses at large n — PCIe-bound"), "{words}");
    let verdict = |n: f64| m.predict("black_scholes", n, Residency::Host, 0.0).unwrap().verdict;
    assert!(matches!(verdict(at / 2.0), Verdict::Gpu { .. }), "{reason}");
    assert!(matches!(verdict(at * 2.0), Verdict::Cpu { .. }), "{reason}");
}

#[test]
fn crossover_follows_a_cpu_cache_regime() {
    // A CPU that is fast while the batch fits in cache (0.1 ns per item below 1M items) and
    // slow beyond (1 ns), against a device at 0.3 ns per item + 20 µs: the GPU can only win
    // once the CPU has left its cache, i.e. not before 1M items, although a straight line
    // through the CPU's samples would have put the crossover lower.
    let mut p = DeviceProfile::published_h100();
    let cpu = LinFit::fit(&two_speed(1.5e6, (1e-6, 0.1e-9), (0.0, 1e-9)));
    assert_eq!(cpu.below.len(), 1, "{cpu:?}");
    let k = p.kernels.iter_mut().find(|k| k.name == "saxpy").unwrap();
    k.device = LinFit::known(20e-6, 0.3e-9);
    k.cpu.retain(|c| c.procs == 1);
    k.cpu[0].fit = cpu;
    let m = CostModel::new(p);
    let Crossover::At { n } = m.crossover("saxpy", Residency::Device).unwrap() else {
        panic!("no crossover")
    };
    assert!(n > 1e6, "n* = {n}");
    let before = m.predict("saxpy", n - 1.0, Residency::Device, 0.0).unwrap();
    let after = m.predict("saxpy", n, Residency::Device, 0.0).unwrap();
    assert!(matches!(before.verdict, Verdict::Cpu { .. }), "{before:?}");
    assert!(matches!(after.verdict, Verdict::Gpu { .. }), "{after:?}");
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

/// The shape `LinFit::fit` gives `samples`, whatever they measured: finite, non-negative
/// coefficients (a slope of 0 included: the fitter clamps a run whose time falls with size to
/// a constant, and on a loaded machine a larger size can be measured faster than a smaller
/// one), at most `MAX_REGIMES` regimes whose breaks rise strictly and lie between the smallest
/// and largest size, a finite worst error that is the worst error over the samples — and the
/// fit is exactly what fitting `samples` gives (so nothing was fitted to other data).
#[track_caller]
fn assert_fit_shape(what: &str, fit: &LinFit, samples: &[Sample]) {
    let ok = |c: f64| c.is_finite() && c >= 0.0;
    assert!(ok(fit.intercept) && ok(fit.slope) && ok(fit.max_rel_err), "{what}: {fit:?}");
    assert!(fit.below.len() < MAX_REGIMES, "{what}: {} regimes: {fit:?}", fit.below.len() + 1);
    let (lo, hi) =
        samples.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), s| (l.min(s.x), h.max(s.x)));
    let mut prev = lo;
    for r in &fit.below {
        assert!(ok(r.intercept) && ok(r.slope), "{what}: regime {r:?}");
        assert!(r.upto > prev && r.upto < hi, "{what}: break {} not in ({prev}, {hi}): {fit:?}", r.upto);
        prev = r.upto;
    }
    let worst = samples
        .iter()
        .filter(|s| s.secs > 0.0)
        .map(|s| (fit.eval(s.x) - s.secs).abs() / s.secs)
        .fold(0.0, f64::max);
    assert!(
        (fit.max_rel_err - worst).abs() <= 1e-9 * worst.max(1.0),
        "{what}: max_rel_err {fit:?} vs {worst}"
    );
    assert_eq!(*fit, LinFit::fit(samples), "{what}: the fit is not the fit of its samples");
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

/// Times at x = 2^`from` …: an arbitrary positive time each (any noise a loaded machine can
/// add), or 0 now and then.
fn arbitrary_series() -> impl Strategy<Value = Vec<Sample>> {
    (10u32..20, prop::collection::vec(prop_oneof![20 => -9.0f64..0.0, 1 => Just(f64::NEG_INFINITY)], 1..14))
        .prop_map(|(from, logs)| {
            logs.iter()
                .enumerate()
                .map(|(i, &l)| Sample { x: f64::from(1u32 << (from + i as u32)), secs: 10f64.powf(l) })
                .collect()
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    /// What `live_host_calibration_has_every_kernel_and_sane_fits` asserts of each fit holds
    /// for any samples, so load on the machine cannot make that test fail.
    #[test]
    fn fits_have_their_shape_whatever_the_samples(samples in arbitrary_series()) {
        assert_fit_shape("arbitrary", &LinFit::fit(&samples), &samples);
    }
}

#[test]
fn a_size_measured_faster_than_a_smaller_one_fits_slope_zero() {
    // What a loaded machine did to a live SAXPY calibration: in-cache 0.2 ns per element and
    // 0.6 ns from DRAM, but the largest size (8M) measured faster than the ones before it (the
    // 2M and 4M runs were stretched by other processes). The top regime's samples fall with size,
    // and the fitter clamps that to a constant: slope 0 is the fit of these samples, not a bug.
    let mut s: Vec<Sample> = (13..=23)
        .map(|i| {
            let x = f64::from(1u32 << i);
            Sample { x, secs: if x < 3e5 { 1e-6 + 0.2e-9 * x } else { 2e-6 + 0.6e-9 * x } }
        })
        .collect();
    // Every regime holds at least three samples (`fit::MIN_RUN`), so the top one is the last
    // three: the 2M and 4M runs stretched, each more than the next size's time.
    let n = s.len();
    s[n - 3].secs *= 4.5;
    s[n - 2].secs *= 2.2;
    let f = LinFit::fit(&s);
    assert_fit_shape("loaded saxpy", &f, &s);
    assert_eq!(f.slope, 0.0, "{f:?}");
}

#[test]
fn published_h100_verdicts_follow_the_numbers() {
    let p = DeviceProfile::published_h100();
    let m = CostModel::new(p.clone());
    let best_cpu_slope =
        |k: &str| p.kernel(k).unwrap().cpu.iter().map(|c| c.fit.slope).fold(f64::INFINITY, f64::min);
    // SAXPY with inputs on the host: PCIe moves 12 B per element slower than the CPU does.
    match m.crossover("saxpy", Residency::Host).unwrap() {
        Crossover::Never { reason, .. } => {
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
            Crossover::Never { reason, .. } => assert!(reason.contains("PCIe"), "{reason}"),
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

/// How many of `samples` each regime of `fit` covers (lowest regime first).
fn per_regime(fit: &LinFit, samples: &[Sample]) -> Vec<usize> {
    let mut bounds: Vec<f64> = fit.below.iter().map(|r| r.upto).collect();
    bounds.push(f64::INFINITY);
    let mut lo = f64::NEG_INFINITY;
    bounds
        .iter()
        .map(|&hi| {
            let c = samples.iter().filter(|s| s.x >= lo && s.x < hi).count();
            lo = hi;
            c
        })
        .collect()
}

#[test]
fn eight_points_never_make_four_regimes() {
    // Four "regimes" of two points each, 3x apart in cost per byte: with two samples a
    // regime fitted any pair exactly, so this used to come back as four regimes with a worst
    // error of 0. Every regime now needs MIN_RUN = 3 samples: two regimes at most.
    assert_eq!(gmprt_offload::model::fit::MIN_RUN, 3);
    let slopes = [7.6e-12, 24e-12, 75e-12, 150e-12];
    let samples: Vec<Sample> = (0..8)
        .map(|i| {
            let x = f64::from(1u32 << (12 + i));
            Sample { x, secs: 1e-7 + slopes[i as usize / 2] * x }
        })
        .collect();
    let fit = LinFit::fit(&samples);
    assert!(fit.below.len() < 2, "at most two regimes from eight points: {fit:?}");
    let counts = per_regime(&fit, &samples);
    assert_eq!(counts.iter().sum::<usize>(), 8);
    assert!(counts.iter().all(|&c| c >= 3), "a regime with fewer than 3 samples: {counts:?} {fit:?}");
    // Noise on two points of a straight series cannot carve out a regime either.
    let mut noisy: Vec<Sample> = (0..8)
        .map(|i| Sample { x: f64::from(1u32 << (12 + i)), secs: 1e-6 + 1e-10 * f64::from(1u32 << (12 + i)) })
        .collect();
    noisy[3].secs *= 1.3;
    noisy[4].secs *= 1.3;
    let fit = LinFit::fit(&noisy);
    assert!(per_regime(&fit, &noisy).iter().all(|&c| c >= 3), "{fit:?}");
}

#[test]
fn twelve_points_in_four_clean_regimes_give_four_regimes_of_three() {
    // memcpy on the dev VM: L1, L2, LLC, DRAM at 7.6, 24, 75 and 150 ps per byte.
    let slopes = [7.6e-12, 24e-12, 75e-12, 150e-12];
    let samples: Vec<Sample> = (0..12)
        .map(|i| {
            let x = f64::from(1u32 << (12 + i));
            Sample { x, secs: slopes[i as usize / 3] * x }
        })
        .collect();
    let fit = LinFit::fit(&samples);
    assert_eq!(per_regime(&fit, &samples), vec![3, 3, 3, 3], "{fit:?}");
    assert!(fit.max_rel_err < 1e-9, "{fit:?}");
    assert!((fit.slope - 150e-12).abs() < 1e-15, "the top regime is the asymptote: {fit:?}");
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
