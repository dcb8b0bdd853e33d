//! Crossovers and verdicts derived from the profiles' own numbers.

use super::*;

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
