//! `LinFit`: known coefficients recovered, cache regimes found and noise ignored, at most
//! `MAX_REGIMES` regimes of at least three points, and its shape whatever the samples.

use super::*;

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
