//! Monte Carlo: π and option prices within a few standard errors of the truth, determinism,
//! chunking, the ISA builds of the π counter, and `mc_price`'s edge cases.
use gmprt_kernels::black_scholes::{reference, Contract, OptionKind};
use gmprt_kernels::math::{ln, sin_cos};
use gmprt_kernels::monte_carlo::{
    block_normals, mc_price, option_paths_sum, option_paths_sum_isa, pi_hits, pi_hits_isa, PiEstimate,
};
use gmprt_kernels::philox::{block, TAG_PATHS};
use gmprt_kernels::Isa;

#[test]
fn pi_within_four_standard_errors() {
    let blocks = 5_000_000; // 10 M samples
    let est = PiEstimate { hits: pi_hits(2024, 0, blocks), samples: 2 * blocks };
    let err = (est.pi() - std::f64::consts::PI).abs();
    assert!(err < 4.0 * est.std_error(), "pi = {} (se {})", est.pi(), est.std_error());
}

#[test]
fn pi_is_deterministic_chunkable_and_isa_independent() {
    let (seed, blocks) = (77, 200_003);
    let whole = pi_hits(seed, 0, blocks);
    assert_eq!(whole, pi_hits(seed, 0, blocks));
    assert_ne!(whole, pi_hits(seed + 1, 0, blocks));
    let parts: u64 =
        [(0, 1), (1, 99_999), (100_000, 100_003)].iter().map(|&(f, b)| pi_hits(seed, f, b)).sum();
    assert_eq!(whole, parts);
    for isa in Isa::available() {
        assert_eq!(pi_hits_isa(isa, seed, 0, blocks), whole, "{}", isa.name());
    }
    // Counters above 2^32 use the high word.
    assert_ne!(pi_hits(seed, 1 << 32, 1000), pi_hits(seed, 0, 1000));
}

#[test]
fn normals_follow_the_documented_order() {
    let w = block(9, TAG_PATHS, 5);
    let z = block_normals(w);
    let u = |x: u32| (x >> 8) as f32 / 16_777_216.0;
    let r1 = (-2.0 * ln(u(w[0]) + 1.0 / 16_777_216.0)).max(0.0).sqrt();
    let (s1, c1) = sin_cos(std::f32::consts::TAU * u(w[1]));
    assert_eq!(z[0], r1 * c1);
    assert_eq!(z[1], r1 * s1);
    let r2 = (-2.0 * ln(u(w[2]) + 1.0 / 16_777_216.0)).max(0.0).sqrt();
    let (s2, c2) = sin_cos(std::f32::consts::TAU * u(w[3]));
    assert_eq!((z[2], z[3]), (r2 * c2, r2 * s2));
    // Box-Muller with libm, in f64: the same normals to f32's rounding.
    let (u1, u2) = ((u(w[0]) + 1.0 / 16_777_216.0) as f64, u(w[1]) as f64);
    let r = (-2.0 * u1.ln()).sqrt();
    let th = std::f64::consts::TAU * u2;
    assert!((z[0] as f64 - r * th.cos()).abs() < 1e-6 * r.max(1.0), "{} vs {}", z[0], r * th.cos());
    assert!((z[1] as f64 - r * th.sin()).abs() < 1e-6 * r.max(1.0), "{} vs {}", z[1], r * th.sin());
    // Moments of many normals.
    let (mut s1, mut s2, mut cnt) = (0.0f64, 0.0f64, 0.0f64);
    for b in 0..50_000 {
        for z in block_normals(block(1, TAG_PATHS, b)) {
            s1 += z as f64;
            s2 += (z as f64).powi(2);
            cnt += 1.0;
        }
    }
    assert!((s1 / cnt).abs() < 4.0 / cnt.sqrt());
    assert!((s2 / cnt - 1.0).abs() < 4.0 * (2.0 / cnt).sqrt());
}

#[test]
fn option_prices_within_four_standard_errors_of_black_scholes() {
    let contracts = [
        Contract { spot: 100.0, strike: 100.0, t: 1.0, rate: 0.05, vol: 0.2, kind: OptionKind::Call },
        Contract { spot: 100.0, strike: 110.0, t: 0.5, rate: 0.02, vol: 0.3, kind: OptionKind::Put },
        Contract { spot: 50.0, strike: 40.0, t: 2.0, rate: 0.0, vol: 0.5, kind: OptionKind::Call },
        Contract { spot: 120.0, strike: 100.0, t: 0.25, rate: -0.01, vol: 0.15, kind: OptionKind::Put },
    ];
    let blocks = 100_000; // 400 k paths each
    for (i, c) in contracts.iter().enumerate() {
        let (s, s2) = option_paths_sum(31 + i as u64, c, 0, blocks);
        let mc = mc_price(s, s2, 4 * blocks);
        let bs = reference(c).price;
        assert!(mc.std_error > 0.0 && mc.std_error < 0.05 * bs.max(1.0));
        assert!(
            (mc.price - bs).abs() < 4.0 * mc.std_error,
            "{c:?}: mc {} ± {}, bs {bs}",
            mc.price,
            mc.std_error
        );
    }
}

#[test]
fn option_sums_are_deterministic_and_chunkable() {
    let c = Contract { spot: 100.0, strike: 95.0, t: 1.0, rate: 0.03, vol: 0.25, kind: OptionKind::Call };
    let whole = option_paths_sum(5, &c, 0, 10_000);
    assert_eq!(whole, option_paths_sum(5, &c, 0, 10_000));
    let (a, b) = (option_paths_sum(5, &c, 0, 3_333), option_paths_sum(5, &c, 3_333, 6_667));
    // Same paths; only the f64 summation order differs.
    assert!((a.0 + b.0 - whole.0).abs() <= 1e-9 * whole.0);
    assert!((a.1 + b.1 - whole.1).abs() <= 1e-9 * whole.1);
    // Chunks that start inside a vectorised chunk of 16 blocks and end past the last one:
    // each path's value does not depend on where the loop's chunks fall.
    let parts = [(0, 7), (7, 16), (23, 1), (24, 9_976)].map(|(f, n)| option_paths_sum(5, &c, f, n));
    let (s, q) = parts.iter().fold((0.0, 0.0), |(s, q), p| (s + p.0, q + p.1));
    assert!((s - whole.0).abs() <= 1e-9 * whole.0 && (q - whole.1).abs() <= 1e-9 * whole.1);
    assert_eq!(option_paths_sum(5, &c, 3, 0), (0.0, 0.0));
}

#[test]
fn option_sums_agree_across_isa_builds() {
    let c = Contract { spot: 100.0, strike: 105.0, t: 0.5, rate: 0.02, vol: 0.3, kind: OptionKind::Put };
    let want = option_paths_sum_isa(Isa::Scalar, 11, &c, 0, 5_003);
    let mut fma = None;
    for isa in Isa::available() {
        let got = option_paths_sum_isa(isa, 11, &c, 0, 5_003);
        // The portable build rounds its multiply-adds twice: a few ulps per path, no more.
        assert!((got.0 - want.0).abs() <= 1e-6 * want.0, "{}: {got:?} vs {want:?}", isa.name());
        if isa != Isa::Scalar {
            // The FMA builds run the same operations: bit for bit.
            assert_eq!(*fma.get_or_insert(got), got, "{}", isa.name());
        }
    }
}

#[test]
fn mc_price_edges() {
    let p = mc_price(0.0, 0.0, 0);
    assert_eq!((p.price, p.std_error, p.paths), (0.0, f64::INFINITY, 0));
    let p = mc_price(3.0, 9.0, 1);
    assert_eq!((p.price, p.std_error), (3.0, f64::INFINITY));
    // Two paths 1 and 3: mean 2, sample variance 2, std error 1.
    let p = mc_price(4.0, 10.0, 2);
    assert_eq!(p.price, 2.0);
    assert!((p.std_error - 1.0).abs() < 1e-12);
    // All-equal payoffs: zero spread, never NaN from rounding.
    let p = mc_price(0.1 * 3.0, 0.01 * 3.0, 3);
    assert!(p.std_error >= 0.0 && p.std_error < 1e-8);
}
