//! `[gpu]`: every kernel against its CPU twin and the f64 reference: Black-Scholes, SAXPY, π hits,
//! option paths, SGEMM in FP32, TF32 and BF16, batched on a slot.

use super::*;

// ------------------------------------------------------------------------ GPU tests ---

pub(super) fn black_scholes_matches_cpu_and_f64_reference(b: &CudaBackend) {
    // A multiple of 4 (aligned columns: the float4 path of black_scholes.cu), and not (every
    // column past the first misaligned: one contract at a time).
    for n in [100_000, 100_003] {
        black_scholes_matches_at(b, n);
    }
}

fn black_scholes_matches_at(b: &CudaBackend, n: usize) {
    let chain = black_scholes::synthetic_chain(n, 7);
    let gpu = run_bs(b, &chain);
    let mut input = vec![0u32; n * IN_WORDS];
    black_scholes::stage_words(&chain, &mut input);
    let mut cpu = vec![0u32; n * OUT_WORDS];
    black_scholes::price_greeks_words(n, &input, &mut cpu).expect("cpu");

    // Per contract and output, the shared error model (`black_scholes::tolerance`, as the
    // kernel tests and option_screener use): the GPU against the f64 reference within the
    // bound for CUDA's math functions, and against the CPU kernel within the sum of both bounds.
    let names = tolerance::OUTPUT_NAMES;
    let mut worst = [0f64; 6]; // largest error / tolerance, per Greek, vs the reference
    let mut worst_cpu = [0f64; 6];
    let mut failures = Vec::new();
    for (i, c) in chain.iter().enumerate() {
        let gv = black_scholes::gather_words(n, &gpu, i).to_array64();
        let hv = black_scholes::gather_words(n, &cpu, i).to_array64();
        let rv = black_scholes::reference(c).to_array();
        let tol_ref = tolerance::tolerance(c, &tolerance::CUDA_MATH).to_array();
        let tol_cpu =
            tolerance::agreement_tolerance(c, &tolerance::CUDA_MATH, &tolerance::CPU_MATH).to_array();
        for j in 0..6 {
            let e_ref = (gv[j] - rv[j]).abs() / tol_ref[j];
            let e_cpu = (gv[j] - hv[j]).abs() / tol_cpu[j];
            worst[j] = worst[j].max(e_ref);
            worst_cpu[j] = worst_cpu[j].max(e_cpu);
            if !(e_ref <= 1.0 && e_cpu <= 1.0) && failures.len() < 10 {
                failures.push(format!(
                    "#{i} {c:?}: {} gpu {} cpu {} ref {} (tolerance {:e} vs ref, {:e} vs cpu)",
                    names[j], gv[j], hv[j], rv[j], tol_ref[j], tol_cpu[j]
                ));
            }
        }
    }
    println!("n = {n}: worst error/tolerance vs f64 reference: {worst:?}; vs CPU: {worst_cpu:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

pub(super) fn black_scholes_edge_contracts_stay_finite(b: &CudaBackend) {
    let c = |spot, strike, t, vol, kind| Contract { spot, strike, t, rate: 0.03, vol, kind };
    let chain = [
        c(100.0, 100.0, 0.0, 0.2, OptionKind::Call), // T = 0 at the money
        c(120.0, 100.0, 0.0, 0.2, OptionKind::Call), // T = 0 in the money
        c(80.0, 100.0, 0.0, 0.2, OptionKind::Put),
        c(100.0, 90.0, 1.0, 1e-30, OptionKind::Call), // vanishing sigma
        c(100.0, 100.0, 50.0, 10.0, OptionKind::Put),
    ];
    let gpu = run_bs(b, &chain);
    for (i, con) in chain.iter().enumerate() {
        let g = black_scholes::gather_words(chain.len(), &gpu, i);
        let vals = [g.price, g.delta, g.gamma, g.vega, g.theta, g.rho];
        assert!(vals.iter().all(|v| v.is_finite()), "{con:?} -> {g:?}");
        let cpu = black_scholes::price_one(con);
        assert!((g.price - cpu.price).abs() <= 1e-4 * con.spot.max(con.strike), "{con:?}: {g:?} vs {cpu:?}");
        assert!((g.delta - cpu.delta).abs() <= 1e-4, "{con:?}: {g:?} vs {cpu:?}");
    }
    let intrinsic = black_scholes::gather_words(chain.len(), &gpu, 1);
    assert!((intrinsic.price - (120.0 - 100.0)).abs() < 1e-3, "{intrinsic:?}");
    assert_eq!(intrinsic.gamma, 0.0);
}

pub(super) fn saxpy_matches_cpu(b: &CudaBackend) {
    // Not a multiple of the block size, and y = x + n misaligned for 16-byte steps (the
    // one-float path); a multiple of 4 (the float4 path); 7 (a float4 step and a tail of 3).
    for n in [1_000_003, 1_000_000, 7] {
        let a = 1.7f32;
        let x: Vec<f32> = (0..n as u64).map(|i| det(i, 1) * 100.0).collect();
        let y: Vec<f32> = (0..n as u64).map(|i| det(i, 2) * 100.0).collect();
        let mut slot = b.new_slot(2 * n, n).expect("slot");
        let st = slot.staging_in();
        for i in 0..n {
            st[i] = x[i].to_bits();
            st[n + i] = y[i].to_bits();
        }
        let t = slot.run(&SaxpyJob(a), n, 2 * n, n, Phases::ALL).expect("run");
        println!("saxpy n={n}: {t:?}");
        let out = f32s(slot.staging_out());
        let mut want = y.clone();
        gmprt_kernels::saxpy::saxpy(a, &x, &mut want).expect("cpu saxpy");
        for i in 0..n {
            // One fused rounding on the GPU; the CPU may round the product separately: allow
            // one ulp of the operands' magnitude.
            let tol = 2.0 * f32::EPSILON * ((a * x[i]).abs() + y[i].abs());
            assert!((out[i] - want[i]).abs() <= tol, "n = {n}, #{i}: gpu {} cpu {}", out[i], want[i]);
        }
    }
}

pub(super) fn pi_hits_equal_cpu_exactly(b: &CudaBackend) {
    for seed in [1u64, 42, 0xDEAD_BEEF_CAFE_BABE] {
        for blocks in [1u64, 255, 1000, 1 << 20, 3_000_017] {
            let (gpu, t) = b.pi_hits(seed, blocks).expect("gpu pi");
            let cpu = gmprt_kernels::monte_carlo::pi_hits(seed, 0, blocks);
            assert_eq!(gpu, cpu, "seed {seed} blocks {blocks}");
            if blocks == 3_000_017 {
                let pi = 4.0 * gpu as f64 / (2 * blocks) as f64;
                println!("pi_hits seed {seed}: {gpu} hits, pi ~ {pi}, {t:?}");
                assert!((pi - std::f64::consts::PI).abs() < 5e-3);
            }
        }
    }
    assert_eq!(b.pi_hits(1, 0).expect("empty").0, 0);
    // Known answers, independent of the CPU twin (see PI_KNOWN).
    for (seed, blocks, hits) in PI_KNOWN {
        assert_eq!(b.pi_hits(seed, blocks).expect("gpu pi").0, hits, "seed {seed} blocks {blocks}");
    }
}

pub(super) fn option_paths_agree_with_cpu_and_black_scholes(b: &CudaBackend) {
    let blocks = 1u64 << 20; // 4 Mi paths
    for kind in [OptionKind::Call, OptionKind::Put] {
        let c = Contract { spot: 100.0, strike: 105.0, t: 1.0, rate: 0.05, vol: 0.2, kind };
        let ((sum, sum_sq), t) = b.option_paths_sum(42, &c, blocks).expect("gpu paths");
        let (cpu_sum, cpu_sq) = gmprt_kernels::monte_carlo::option_paths_sum(42, &c, 0, blocks);
        // Same draws, f32 math functions of slightly different accuracy, a different
        // summation order: the sums agree to rounding, far below the statistical error.
        assert!((sum - cpu_sum).abs() <= 1e-5 * cpu_sum.abs(), "{kind:?}: gpu {sum} cpu {cpu_sum}");
        assert!((sum_sq - cpu_sq).abs() <= 1e-5 * cpu_sq.abs(), "{kind:?}: gpu {sum_sq} cpu {cpu_sq}");
        let paths = (4 * blocks) as f64;
        let mean = sum / paths;
        let se = ((sum_sq / paths - mean * mean).max(0.0) / paths).sqrt();
        let bs = black_scholes::reference(&c).price;
        println!("{kind:?}: mc {mean:.5} ± {se:.5}, bs {bs:.5}, {t:?}");
        assert!((mean - bs).abs() < 5.0 * se, "{kind:?}: mc {mean} ± {se} vs bs {bs}");
    }
}

/// The batched kernel against one launch per contract and the CPU twin: more contracts than
/// the grid has rows (65,535 is the cap; 70,000 contracts of 64 blocks make several per row),
/// calls and puts, different seeds.
pub(super) fn option_paths_batch_equals_one_launch_per_contract(b: &CudaBackend) {
    let n = 70_000usize;
    let blocks = 64u64;
    let contracts: Vec<Contract> = (0..n)
        .map(|i| Contract {
            spot: 80.0 + (i % 41) as f32,
            strike: 100.0,
            t: 0.25 + (i % 7) as f32 * 0.25,
            rate: 0.03,
            vol: 0.1 + (i % 5) as f32 * 0.05,
            kind: if i % 3 == 0 { OptionKind::Put } else { OptionKind::Call },
        })
        .collect();
    let seeds: Vec<u64> = (0..n as u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 11).collect();
    let (sums, t) = b.option_paths_sum_many(&seeds, &contracts, blocks).expect("gpu batch");
    let cpu =
        gmprt_kernels::monte_carlo::option_paths_sum_many(&seeds, &contracts, blocks).expect("equal slices");
    assert_eq!(sums.len(), n);
    // Same draws and math as the CPU twin, f32 math functions that differ in the last bits.
    // A path's payoff max(K - S_T, 0) is a difference of two numbers of size max(S, K), so its
    // rounding is a few ulps of max(S, K), not of the payoff: on a deep out-of-the-money
    // contract, whose few paths that pay pay little, the sums' *relative* difference passes
    // 1e-5 (contract 450 here, a put at spot 120, strike 100, vol 0.1: 2.8e-5 on the H200 on
    // 2026-11-27). So compare what the sums are for, the price and its standard error, against
    // the statistical error: rounding sits three orders of magnitude below it (contract 450:
    // 2.9e-8 against 1.05e-3). `floor` is one path's rounding (8 ulps of max(S, K)) spread over
    // the mean, for a contract where a single path pays at all.
    let paths = (4 * blocks) as f64;
    let price_and_error = |(sum, sum_sq): (f64, f64)| {
        let mean = sum / paths;
        (mean, ((sum_sq / paths - mean * mean).max(0.0) / paths).sqrt())
    };
    // Whether `x` is `reference` to rounding, for contract `c`; the allowance.
    let agrees = |x: (f64, f64), reference: (f64, f64), c: &Contract| {
        let ((p, se), (rp, rse)) = (price_and_error(x), price_and_error(reference));
        let floor = 8.0 * f64::from(f32::EPSILON) * f64::from(c.spot.max(c.strike)) / paths;
        let tol = 1e-3 * rse + 1e-5 * rp.abs() + floor;
        ((p - rp).abs() <= tol && (se - rse).abs() <= tol, tol)
    };
    for (i, ((g, c), contract)) in sums.iter().zip(&cpu).zip(&contracts).enumerate() {
        let (ok, tol) = agrees(*g, *c, contract);
        // The message's (price, standard error) pairs are computed only if it fails.
        assert!(
            ok,
            "contract {i}: (price, standard error) gpu {:?}, cpu {:?} (allowed ±{tol:.3e})",
            price_and_error(*g),
            price_and_error(*c)
        );
    }
    // The allowance still catches a wrong draw: the CPU twin with other seeds falls outside it
    // for nearly every contract whose paths pay at all (a few may agree by chance).
    let k = 2_000;
    let other_seeds: Vec<u64> = seeds[..k].iter().map(|s| s ^ 0x5555).collect();
    let other = gmprt_kernels::monte_carlo::option_paths_sum_many(&other_seeds, &contracts[..k], blocks)
        .expect("equal slices");
    let paying = cpu[..k].iter().filter(|c| c.0 > 0.0).count();
    let caught = (0..k).filter(|&i| cpu[i].0 > 0.0 && !agrees(other[i], cpu[i], &contracts[i]).0).count();
    assert!(caught * 100 >= paying * 99, "other seeds pass the allowance: {caught} of {paying} caught");
    for &i in &[0usize, 1, 65_535, n - 1] {
        let (one, _) = b.option_paths_sum(seeds[i], &contracts[i], blocks).expect("gpu one");
        assert!(
            (one.0 - sums[i].0).abs() <= 1e-9 * one.0.abs().max(1e-9),
            "contract {i}: {one:?} vs {:?}",
            sums[i]
        );
    }
    println!("{n} contracts × {} paths in one launch: {t:?}", 4 * blocks);
    // Unequal slices are refused before any device work.
    assert!(b.option_paths_sum_many(&seeds[..1], &contracts, blocks).is_err());
}

/// Row-major C = A·B in f64, for tolerances.
fn gemm_f64(m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> Vec<f64> {
    let mut c = vec![0f64; m * n];
    for i in 0..m {
        for p in 0..k {
            let aip = a[i * k + p] as f64;
            for j in 0..n {
                c[i * n + j] += aip * b[p * n + j] as f64;
            }
        }
    }
    c
}

fn assert_gemm_close(what: &str, k: usize, got: &[f32], want: &[f64]) {
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        // Inputs in [-1, 1): each product < 1, so k·eps bounds the f32 accumulation error.
        let tol = 4.0 * k as f64 * f32::EPSILON as f64;
        assert!((g as f64 - w).abs() <= tol, "{what} #{i}: gpu {g} want {w}");
    }
}

pub(super) fn sgemm_matches_cpu(b: &CudaBackend) {
    let (m, n, k) = (123, 77, 45); // odd shapes catch a swapped leading dimension
    let a: Vec<f32> = (0..(m * k) as u64).map(|i| det(i, 3)).collect();
    let bm: Vec<f32> = (0..(k * n) as u64).map(|i| det(i, 4)).collect();
    let mut c = vec![f32::NAN; m * n];
    let t = b.sgemm(m, n, k, &a, &bm, &mut c).expect("gpu sgemm");
    println!("sgemm {m}x{n}x{k}: {t:?}");
    assert_gemm_close("sgemm", k, &c, &gemm_f64(m, n, k, &a, &bm));
    let mut cpu = vec![0f32; m * n];
    gmprt_kernels::sgemm::sgemm_naive(m, n, k, &a, &bm, &mut cpu).expect("cpu sgemm");
    let want: Vec<f64> = cpu.iter().map(|&v| v as f64).collect();
    assert_gemm_close("sgemm vs sgemm_naive", 2 * k, &c, &want);
    // Degenerate shapes are answered without a launch.
    let mut empty: Vec<f32> = vec![];
    b.sgemm(0, 5, 3, &[], &[0.0; 15], &mut empty).expect("m = 0");
    let mut zeros = vec![1.0f32; 6];
    b.sgemm(2, 3, 0, &[], &[], &mut zeros).expect("k = 0");
    assert_eq!(zeros, vec![0.0; 6]);
    assert!(matches!(b.sgemm(2, 2, 2, &[0.0; 3], &[0.0; 4], &mut [0.0; 4]), Err(OffloadError::Kernel(_))));
}

/// TF32 and BF16 on the tensor cores (issue 27, item 3): each element within its precision's
/// bound of the exact product, and within twice that of the Host's emulation (the same input
/// rounding, then FP32).
pub(super) fn sgemm_tf32_and_bf16_within_their_tolerance(b: &CudaBackend) {
    use gmprt_offload::kernels::precision::Precision;
    let (m, n, k) = (123, 77, 256);
    let a: Vec<f32> = (0..(m * k) as u64).map(|i| det(i, 5)).collect();
    let bm: Vec<f32> = (0..(k * n) as u64).map(|i| det(i, 6)).collect();
    let exact = gemm_f64(m, n, k, &a, &bm);
    // Σ_p |a_ip·b_pj| per element: what the bound is relative to.
    let abs_a: Vec<f32> = a.iter().map(|x| x.abs()).collect();
    let abs_b: Vec<f32> = bm.iter().map(|x| x.abs()).collect();
    let scale = gemm_f64(m, n, k, &abs_a, &abs_b);
    for p in [Precision::Tf32, Precision::Bf16] {
        let mut gpu = vec![f32::NAN; m * n];
        let t = b.sgemm_with(p, m, n, k, &a, &bm, &mut gpu).expect("gpu sgemm_with");
        let mut host = vec![f32::NAN; m * n];
        gmprt_offload::Device::host().sgemm_with(p, m, n, k, &a, &bm, &mut host).expect("host emulation");
        let tol = p.tolerance(k);
        for i in 0..m * n {
            let (g, h, w, s) = (gpu[i] as f64, host[i] as f64, exact[i], scale[i].max(f64::MIN_POSITIVE));
            assert!((g - w).abs() <= tol * s, "{p} #{i}: gpu {g} exact {w} (bound {})", tol * s);
            assert!((g - h).abs() <= 2.0 * tol * s, "{p} #{i}: gpu {g} host emulation {h}");
        }
        let mut fp32 = vec![0f32; m * n];
        b.sgemm(m, n, k, &a, &bm, &mut fp32).expect("gpu sgemm");
        let differs = gpu.iter().zip(&fp32).filter(|(x, y)| x != y).count();
        println!("sgemm {p} {m}x{n}x{k}: {t:?}; {differs} of {} elements differ from FP32", m * n);
    }
}

pub(super) fn sgemm_batched_on_a_slot_matches_cpu(b: &CudaBackend) {
    let (count, m, n, k) = (5, 17, 9, 31);
    let (a_len, b_len, c_len) = (count * m * k, count * k * n, count * m * n);
    let mut slot = b.new_slot(a_len + b_len, c_len).expect("slot");
    let words: Vec<f32> = (0..(a_len + b_len) as u64).map(|i| det(i, 5)).collect();
    for (w, v) in slot.staging_in().iter_mut().zip(&words) {
        *w = v.to_bits();
    }
    let job = GemmJob { m, n, k };
    slot.run(&job, count, a_len + b_len, c_len, Phases::ALL).expect("run");
    let out = f32s(slot.staging_out());
    for i in 0..count {
        let a = &words[i * m * k..(i + 1) * m * k];
        let bm = &words[a_len + i * k * n..a_len + (i + 1) * k * n];
        assert_gemm_close(
            &format!("product {i}"),
            k,
            &out[i * m * n..(i + 1) * m * n],
            &gemm_f64(m, n, k, a, bm),
        );
    }
    // k = 0: every C_i is an empty sum (the output is cleared on the device).
    assert!(out.iter().any(|&v| v != 0.0));
    slot.run(&GemmJob { m, n, k: 0 }, count, 0, c_len, Phases::ALL).expect("k = 0");
    assert!(slot.staging_out().iter().all(|&w| w == 0), "k = 0 must give C = 0");
}
