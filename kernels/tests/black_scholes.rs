//! Black-Scholes kernel vs the f64 reference, per ISA, on random valid contracts including the
//! edges (T = 0 and T → 0, tiny σ, deep in/out of the money, rates ±1), plus the word layout,
//! the limits and validation.
//!
//! Tolerances come from `black_scholes::tolerance` (shared with the CUDA tests and the
//! examples), derived from the error model in the `black_scholes` and `math` module docs
//! (ε = 2⁻²⁴, half an f32 ulp):
//! * Φ: 2.5e-7 absolute; φ: 2.5e-7 relative; exp/ln: ~2ε; each f32 operation: ε.
//! * d1 = num/(σ√T) with num = ln(S/K) + (r + σ²/2)T carries an absolute error of at most
//!   `DD = 8ε·(1 + |ln(S/K)| + |r|T + σ²T)/(σ√T) + 8ε·|d1|` (about four roundings of each
//!   term, doubled for margin).
//! * Each Greek's tolerance is then (sensitivity of the Greek to d1) × DD, plus the Φ/φ
//!   errors times the factor they are multiplied by, plus 16ε of the magnitudes of the terms
//!   summed (the final roundings). The price's first-order sensitivity to d1 vanishes
//!   (S·φ(d1) = K·e^(−rT)·φ(d2)), so its tolerance is the Φ error and roundings only.
//!
//! Independently of the model, every price must also be within 1e-5·max(1, S, K).
use gmprt_kernels::black_scholes::tolerance::{tolerance, CPU_MATH, OUTPUT_NAMES as NAMES};
use gmprt_kernels::black_scholes::{
    gather_words, price_greeks_isa, price_greeks_words, price_one, reference, stage_words, synthetic_chain,
    validate, validate_batch, BsBatch, BsResults, Contract, Greeks, Greeks64, OptionKind, IN_WORDS,
    OUT_WORDS,
};
use gmprt_kernels::Isa;
use proptest::prelude::*;

/// Per-Greek absolute tolerances for contract `c`: the shared error model
/// (`black_scholes::tolerance`, described in the file docs), for the CPU's math functions.
fn tolerances(c: &Contract) -> Greeks64 {
    tolerance(c, &CPU_MATH)
}

fn as_arr(g: Greeks) -> [f64; 6] {
    [g.price as f64, g.delta as f64, g.gamma as f64, g.vega as f64, g.theta as f64, g.rho as f64]
}
fn as_arr64(g: Greeks64) -> [f64; 6] {
    [g.price, g.delta, g.gamma, g.vega, g.theta, g.rho]
}

/// Checks one kernel result against the reference; returns a description of the first miss.
fn check(c: &Contract, got: Greeks) -> Result<(), String> {
    let want = as_arr64(reference(c));
    let tol = as_arr64(tolerances(c));
    let got = as_arr(got);
    for i in 0..6 {
        if !got[i].is_finite() {
            return Err(format!("{c:?}: {} = {} is not finite", NAMES[i], got[i]));
        }
        let err = (got[i] - want[i]).abs();
        // The tolerance includes 1e-30 absolute (`FLUSH_FLOOR`): the kernel flushes φ (hence
        // gamma, vega, theta's diffusion term) to 0
        // once it falls below f32's normal range (~1e-38), where the f64 reference does not.
        if err > tol[i] {
            return Err(format!(
                "{c:?}: {} = {:e}, reference {:e}, error {:e} > tolerance {:e}",
                NAMES[i], got[i], want[i], err, tol[i]
            ));
        }
    }
    let scale = 1f64.max(c.spot as f64).max(c.strike as f64);
    if (got[0] - want[0]).abs() > 1e-5 * scale {
        return Err(format!("{c:?}: price error above 1e-5·max(1, S, K)"));
    }
    Ok(())
}

fn run_isa(isa: Isa, contracts: &[Contract]) -> BsResults {
    let batch = BsBatch::from_contracts(contracts);
    let mut out = BsResults::zeroed(contracts.len());
    price_greeks_isa(isa, &batch.as_in(), &mut out.as_out()).unwrap();
    out
}

fn contract_strategy() -> impl Strategy<Value = Contract> {
    let spot = prop_oneof![(0.0f64..3.0).prop_map(|e| 10f64.powf(e)), Just(100.0)];
    let moneyness = prop_oneof![
        (-1.609f64..1.609).prop_map(f64::exp),
        Just(0.2),
        Just(5.0),
        Just(1.0),
        Just(0.999),
        Just(1.001)
    ];
    let t = prop_oneof![
        Just(0.0),
        Just(1e-8),
        Just(1e-6),
        Just(1e-4),
        (-3.0f64..0.0).prop_map(|e| 10f64.powf(e)),
        0.001f64..3.0
    ];
    let vol = prop_oneof![Just(1e-4), Just(1e-3), Just(10.0), (-2.0f64..0.7).prop_map(|e| 10f64.powf(e))];
    let rate = prop_oneof![Just(-1.0), Just(1.0), Just(0.0), -0.1f64..0.2];
    (spot, moneyness, t, vol, rate, any::<bool>()).prop_map(|(s, m, t, v, r, call)| Contract {
        spot: s as f32,
        strike: (s * m) as f32,
        t: t as f32,
        rate: r as f32,
        vol: v as f32,
        kind: if call { OptionKind::Call } else { OptionKind::Put },
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Every ISA build against the reference, in batches that exercise vector bodies and tails.
    #[test]
    fn kernel_matches_reference(contracts in prop::collection::vec(contract_strategy(), 1..40)) {
        for isa in Isa::available() {
            let out = run_isa(isa, &contracts);
            for (i, c) in contracts.iter().enumerate() {
                prop_assert!(validate(c, i).is_ok());
                if let Err(e) = check(c, out.get(i)) {
                    return Err(TestCaseError::fail(format!("{}: {e}", isa.name())));
                }
            }
        }
    }

    /// The FMA builds (AVX2, AVX-512) are bit-identical (same operations per lane); the scalar
    /// build (no FMA) and `price_one` agree with each other bit for bit.
    #[test]
    fn isas_agree(contracts in prop::collection::vec(contract_strategy(), 1..40)) {
        let isas = Isa::available();
        let results: Vec<BsResults> = isas.iter().map(|&isa| run_isa(isa, &contracts)).collect();
        for (i, c) in contracts.iter().enumerate() {
            prop_assert_eq!(results[0].get(i), price_one(c));
        }
        for w in results.windows(2).skip(1) {
            prop_assert_eq!(&w[0], &w[1]);
        }
    }

    /// Outputs stay finite over the whole documented range.
    #[test]
    fn finite_over_documented_range(
        s in -6.0f64..6.0, k in -6.0f64..6.0, t in prop_oneof![Just(0.0), 0.0f64..50.0],
        r in -1.0f64..=1.0, v in -6.0f64..1.0, call in any::<bool>()
    ) {
        let c = Contract {
            spot: 10f64.powf(s) as f32, strike: 10f64.powf(k) as f32, t: t as f32, rate: r as f32,
            vol: 10f64.powf(v) as f32, kind: if call { OptionKind::Call } else { OptionKind::Put },
        };
        prop_assume!(validate(&c, 0).is_ok());
        for isa in Isa::available() {
            let g = as_arr(run_isa(isa, &[c]).get(0));
            prop_assert!(g.iter().all(|x| x.is_finite()), "{}: {:?} -> {:?}", isa.name(), c, g);
        }
    }
}

#[test]
fn synthetic_chain_is_valid_deterministic_and_matches() {
    let chain = synthetic_chain(10_000, 7);
    assert_eq!(chain, synthetic_chain(10_000, 7));
    assert_ne!(chain, synthetic_chain(10_000, 8));
    let calls = chain.iter().filter(|c| c.kind == OptionKind::Call).count();
    assert_eq!(calls, 5_000);
    for (i, c) in chain.iter().enumerate() {
        validate(c, i).unwrap();
        assert!((50.0..150.0).contains(&c.spot));
        assert!(c.strike >= 0.7 * c.spot * 0.999 && c.strike <= 1.3 * c.spot * 1.001);
        assert!(c.t > 0.0099 && c.t <= 3.0 && (0.05..=0.8).contains(&c.vol));
        assert!((-0.01..=0.08).contains(&c.rate));
    }
    for isa in Isa::available() {
        let out = run_isa(isa, &chain);
        for (i, c) in chain.iter().enumerate() {
            check(c, out.get(i)).unwrap_or_else(|e| panic!("{}: {e}", isa.name()));
        }
    }
}

#[test]
fn words_round_trip() {
    let chain = synthetic_chain(37, 3);
    let n = chain.len();
    let mut input = vec![0u32; n * IN_WORDS];
    stage_words(&chain, &mut input);
    let mut output = vec![0u32; n * OUT_WORDS];
    price_greeks_words(n, &input, &mut output).unwrap();
    let direct = run_isa(Isa::detect(), &chain);
    for i in 0..n {
        assert_eq!(gather_words(n, &output, i), direct.get(i));
    }
    // Shape errors name the buffer.
    let err = price_greeks_words(n, &input[1..], &mut output).unwrap_err();
    assert!(err.to_string().contains("input words"), "{err}");
    let err = price_greeks_words(n, &input, &mut output[1..]).unwrap_err();
    assert!(err.to_string().contains("output words"), "{err}");
}

#[test]
fn column_lengths_checked() {
    let batch = BsBatch::from_contracts(&synthetic_chain(8, 1));
    let mut out = BsResults::zeroed(7);
    let err = price_greeks_isa(Isa::Scalar, &batch.as_in(), &mut out.as_out()).unwrap_err();
    assert!(err.to_string().contains("price"), "{err}");
}

#[test]
fn expiry_limits() {
    let mk = |spot: f32, strike: f32, kind| Contract { spot, strike, t: 0.0, rate: 0.05, vol: 0.3, kind };
    let cases = [
        (mk(110.0, 100.0, OptionKind::Call), 10.0, 1.0),
        (mk(90.0, 100.0, OptionKind::Call), 0.0, 0.0),
        (mk(90.0, 100.0, OptionKind::Put), 10.0, -1.0),
        (mk(110.0, 100.0, OptionKind::Put), 0.0, 0.0),
        (mk(100.0, 100.0, OptionKind::Call), 0.0, 0.5),
        (mk(100.0, 100.0, OptionKind::Put), 0.0, -0.5),
    ];
    for isa in Isa::available() {
        for (c, price, delta) in cases {
            let g = run_isa(isa, &[c]).get(0);
            assert_eq!((g.price, g.delta, g.gamma, g.vega, g.rho), (price, delta, 0.0, 0.0, 0.0), "{c:?}");
            assert!(g.theta.is_finite());
            let r = reference(&c);
            assert_eq!((r.price as f32, r.delta as f32), (price, delta));
        }
    }
    // Tiny σ: the forward intrinsic value; gamma/vega vanish away from the money.
    let c = Contract { spot: 100.0, strike: 90.0, t: 1.0, rate: 0.05, vol: 1e-4, kind: OptionKind::Call };
    for isa in Isa::available() {
        let g = run_isa(isa, &[c]).get(0);
        let want = 100.0 - 90.0 * (-0.05f64).exp();
        assert!((g.price as f64 - want).abs() < 1e-4 && g.delta == 1.0 && g.gamma == 0.0 && g.vega == 0.0);
    }
}

#[test]
fn put_call_parity() {
    let chain = synthetic_chain(1000, 11);
    for isa in Isa::available() {
        let calls: Vec<Contract> = chain.iter().map(|c| Contract { kind: OptionKind::Call, ..*c }).collect();
        let puts: Vec<Contract> = chain.iter().map(|c| Contract { kind: OptionKind::Put, ..*c }).collect();
        let (gc, gp) = (run_isa(isa, &calls), run_isa(isa, &puts));
        for (i, c) in chain.iter().enumerate() {
            let fwd = c.spot as f64 - c.strike as f64 * (-(c.rate as f64) * c.t as f64).exp();
            let parity = gc.price[i] as f64 - gp.price[i] as f64;
            assert!((parity - fwd).abs() < 2e-5 * c.spot.max(c.strike) as f64, "{c:?}");
            assert!(((gc.delta[i] - gp.delta[i]) as f64 - 1.0).abs() < 1e-6);
            assert_eq!(gc.gamma[i], gp.gamma[i]);
            assert_eq!(gc.vega[i], gp.vega[i]);
        }
    }
}

#[test]
fn validation_names_each_field() {
    let good = Contract { spot: 100.0, strike: 100.0, t: 1.0, rate: 0.05, vol: 0.2, kind: OptionKind::Call };
    validate(&good, 0).unwrap();
    let bad: [(Contract, &str, &str); 14] = [
        (Contract { spot: 0.0, ..good }, "spot", "spot must be > 0"),
        (Contract { spot: -1.0, ..good }, "spot", "> 0"),
        (Contract { spot: f32::INFINITY, ..good }, "spot", "finite"),
        (Contract { strike: 0.0, ..good }, "strike", "> 0"),
        (Contract { strike: f32::NAN, ..good }, "strike", "finite"),
        (Contract { t: -0.1, ..good }, "t", ">= 0"),
        (Contract { t: f32::NAN, ..good }, "t", "finite"),
        (Contract { rate: 1.5, ..good }, "rate", "<= 1"),
        (Contract { rate: -1.01, ..good }, "rate", "<= 1"),
        (Contract { rate: f32::NEG_INFINITY, ..good }, "rate", "finite"),
        (Contract { vol: 0.0, ..good }, "vol", "> 0"),
        (Contract { vol: -0.2, ..good }, "vol", "> 0"),
        (Contract { vol: 10.5, ..good }, "vol", "<= 10"),
        (Contract { vol: f32::NAN, ..good }, "vol", "finite"),
    ];
    for (i, (c, field, why)) in bad.iter().enumerate() {
        let e = validate(c, i).unwrap_err();
        assert_eq!((e.field, e.index), (*field, i), "{c:?}");
        assert!(e.why.contains(why), "{e}");
    }
    let e = validate(&Contract { vol: f32::NAN, ..good }, 3).unwrap_err();
    assert_eq!(e.to_string(), "item 3: vol = NaN: must be a finite number");
    // Edges that are valid.
    for c in [Contract { t: 0.0, ..good }, Contract { rate: -1.0, ..good }, Contract { vol: 10.0, ..good }] {
        validate(&c, 0).unwrap();
    }
    // Batch validation: the index and a bad kind word.
    let mut batch = BsBatch::from_contracts(&[good, good, good]);
    validate_batch(&batch.as_in()).unwrap();
    batch.kind[2] = 7;
    let e = validate_batch(&batch.as_in()).unwrap_err();
    assert_eq!((e.field, e.index), ("kind", 2));
    batch.vol[1] = -1.0;
    assert_eq!(validate_batch(&batch.as_in()).unwrap_err().index, 1);
}
