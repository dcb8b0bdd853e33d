//! CUDA backend tests. Two kinds:
//! * `nvrtc_*`: need only libnvrtc (no GPU) — every embedded `.cu` source must compile for
//!   sm_90-class PTX. They run wherever libnvrtc loads and otherwise print `skipped: <why>`.
//! * everything else needs a device: when `probe(0)` fails each test prints
//!   `skipped: <reason>` and returns. With a GPU they compare every kernel with its CPU twin
//!   (and the f64 reference), exactly where the math is integer (π hits).
//!
//! All GPU tests share one backend (one context, modules compiled once).
use gmprt_kernels::black_scholes::{self, Contract, OptionKind, IN_WORDS, OUT_WORDS};
use gmprt_kernels::cuda::{CudaSource, ALL, CALIB, FN_COPY, FN_EMPTY};
use gmprt_offload::backend::{Backend, Job, Phases};
use gmprt_offload::cuda::{self, nvrtc, CudaBackend, LaunchCtx};
use gmprt_offload::OffloadError;
use std::sync::OnceLock;

/// The shared backend, or why there is none.
fn backend(test: &str) -> Option<&'static CudaBackend> {
    static B: OnceLock<Result<CudaBackend, String>> = OnceLock::new();
    let b = B.get_or_init(|| match cuda::probe(0) {
        Err(reason) => Err(reason),
        Ok(()) => CudaBackend::new(0).map_err(|e| format!("probe passed but CudaBackend::new failed: {e}")),
    });
    match b {
        Ok(b) => Some(b),
        Err(reason) if reason.starts_with("probe passed") => panic!("{test}: {reason}"),
        Err(reason) => {
            println!("skipped: {test}: {reason}");
            None
        }
    }
}

fn f32s(words: &[u32]) -> Vec<f32> {
    words.iter().map(|&w| f32::from_bits(w)).collect()
}

/// A deterministic f32 in [-1, 1) from an index (splitmix-style hash).
fn det(i: u64, salt: u64) -> f32 {
    let mut z = i.wrapping_add(salt.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    ((z >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
}

// ---------------------------------------------------------------- NVRTC only (no GPU) ---

#[test]
fn nvrtc_compiles_every_source() {
    if let Err(why) = nvrtc::available() {
        println!("skipped: nvrtc_compiles_every_source: {why}");
        return;
    }
    let version = nvrtc::version().expect("nvrtcVersion");
    for cc in [(9, 0), (8, 0)] {
        for src in ALL {
            let ptx = nvrtc::compile(src, cc).unwrap_or_else(|e| panic!("{} for {cc:?}: {e}", src.name));
            let text = ptx.to_src();
            // GMPRT_PTX_DIR=dir keeps the PTX (e.g. for `ptxas -arch=sm_90 -v` register checks).
            if let Some(dir) = std::env::var_os("GMPRT_PTX_DIR") {
                let path =
                    std::path::Path::new(&dir).join(format!("{}_{}.ptx", src.name, nvrtc::arch_for(cc)));
                std::fs::write(&path, &text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
            }
            for f in src.functions {
                assert!(
                    text.contains(&format!(".entry {f}(")),
                    "{}: PTX for {cc:?} has no entry {f}",
                    src.name
                );
            }
            println!(
                "nvrtc {version:?}: {} compiles for {} ({} bytes of PTX)",
                src.name,
                nvrtc::arch_for(cc),
                text.len()
            );
        }
    }
}

#[test]
fn nvrtc_reports_compile_errors_with_the_log() {
    if let Err(why) = nvrtc::available() {
        println!("skipped: nvrtc_reports_compile_errors_with_the_log: {why}");
        return;
    }
    let bad = CudaSource {
        name: "broken",
        src: "extern \"C\" __global__ void broken(float* x) { x[0] = undeclared_name; }",
        functions: &["broken"],
    };
    match nvrtc::compile(&bad, (9, 0)) {
        Err(OffloadError::Driver { op, msg }) => {
            assert_eq!(op, "nvrtc compile broken");
            assert!(msg.contains("undeclared_name"), "the log should name the error: {msg}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}

/// Known answers of `gmprt_pi_hits`, counted by a host (g++) build of
/// `kernels/cuda/monte_carlo.cu`'s own Philox and hit test; that Philox reproduces Random123's
/// published philox4x32_10 test vectors. The GPU test below checks the device against them.
const PI_KNOWN: [(u64, u64, u64); 3] =
    [(42, 1_000_000, 1_571_050), (1, 1000, 1603), (0xDEAD_BEEF_CAFE_BABE, 3_000_017, 4_711_977)];

#[test]
fn cpu_pi_hits_match_the_cuda_source_known_answers() {
    // No GPU needed: ties the CPU twin to the stream the .cu source draws.
    for (seed, blocks, hits) in PI_KNOWN {
        assert_eq!(gmprt_kernels::monte_carlo::pi_hits(seed, 0, blocks), hits, "seed {seed} blocks {blocks}");
    }
}

#[test]
fn probe_and_new_never_panic_and_agree() {
    match cuda::probe(0) {
        Err(reason) => {
            println!("skipped: probe_and_new_never_panic_and_agree (GPU part): {reason}");
            assert!(!reason.is_empty());
            match CudaBackend::new(0) {
                Err(OffloadError::NoDevice { reason: r }) => assert_eq!(r, reason),
                Err(e) => panic!("expected NoDevice, got {e}"),
                Ok(_) => panic!("probe failed but CudaBackend::new succeeded"),
            }
        }
        Ok(()) => {
            let b = backend("probe_and_new_never_panic_and_agree").expect("probe passed");
            let d = b.describe();
            assert!(d.starts_with("cuda:0 ") && d.contains("(sm_") && d.contains("driver "), "{d}");
            println!("{d}; {} SMs", b.sm_count());
            let far = cuda::probe(1 << 20).expect_err("no machine has 2^20 GPUs");
            assert!(far.starts_with("device 1048576 not present (only "), "{far}");
        }
    }
}

// ------------------------------------------------------------------------ test jobs ---

struct BsJob;
impl Job for BsJob {
    fn name(&self) -> &'static str {
        "black_scholes"
    }
    fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
        black_scholes::price_greeks_words(n, input, output).map_err(|e| e.to_string())
    }
    fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
        cuda::launch_black_scholes(ctx, n)
    }
}

struct SaxpyJob(f32);
impl Job for SaxpyJob {
    fn name(&self) -> &'static str {
        "saxpy"
    }
    fn run_host(&self, n: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
        for i in 0..n {
            output[i] = self.0.mul_add(f32::from_bits(input[i]), f32::from_bits(input[n + i])).to_bits();
        }
        Ok(())
    }
    fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, n: usize) -> Result<(), OffloadError> {
        cuda::launch_saxpy(ctx, n, self.0)
    }
}

/// `count` products of m×k by k×n; `n` passed to `run` is `count`.
struct GemmJob {
    m: usize,
    n: usize,
    k: usize,
}
impl Job for GemmJob {
    fn name(&self) -> &'static str {
        "sgemm_batched"
    }
    fn run_host(&self, _: usize, _: &[u32], _: &mut [u32]) -> Result<(), String> {
        Err("not used".into())
    }
    fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, count: usize) -> Result<(), OffloadError> {
        cuda::launch_sgemm_batched(ctx, count, self.m, self.n, self.k)
    }
}

/// The calibration kernels: `gmprt_empty`, then `gmprt_copy` of the input to the output.
struct CopyJob;
impl Job for CopyJob {
    fn name(&self) -> &'static str {
        "copy"
    }
    fn run_host(&self, _: usize, input: &[u32], output: &mut [u32]) -> Result<(), String> {
        output.copy_from_slice(input);
        Ok(())
    }
    fn launch_cuda(&self, ctx: &mut LaunchCtx<'_>, words: usize) -> Result<(), OffloadError> {
        use cudarc::driver::{LaunchConfig, PushKernelArg};
        let err = |op: &str, e: cudarc::driver::DriverError| OffloadError::Driver {
            op: op.into(),
            msg: e.to_string(),
        };
        let empty = ctx.backend.function(&CALIB, FN_EMPTY)?;
        let copy = ctx.backend.function(&CALIB, FN_COPY)?;
        // SAFETY: gmprt_empty takes no argument.
        unsafe { ctx.stream.launch_builder(&empty).launch(LaunchConfig::for_num_elems(1)) }
            .map_err(|e| err("launch gmprt_empty", e))?;
        assert_eq!(words % 4, 0);
        let n4 = (words / 4) as u64;
        let mut b = ctx.stream.launch_builder(&copy);
        b.arg(&ctx.input).arg(&mut ctx.output).arg(&n4);
        let cfg = LaunchConfig {
            grid_dim: (cuda::grid_size(n4, ctx.backend.sm_count()), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: (const float4*, float4*, size_t n4): both views hold >= 4·n4 words (the
        // slot was made for `words`), device buffers are 256-byte aligned.
        unsafe { b.launch(cfg) }.map_err(|e| err("launch gmprt_copy", e))?;
        Ok(())
    }
}

/// Stages `contracts`, runs them on a fresh slot, returns the output words.
fn run_bs(b: &CudaBackend, contracts: &[Contract]) -> Vec<u32> {
    let n = contracts.len();
    let mut slot = b.new_slot(n * IN_WORDS, n * OUT_WORDS).expect("slot");
    black_scholes::stage_words(contracts, slot.staging_in());
    let t = slot.run(&BsJob, n, n * IN_WORDS, n * OUT_WORDS, Phases::ALL).expect("run");
    println!("black_scholes n={n}: {t:?}");
    slot.staging_out().to_vec()
}

// ------------------------------------------------------------------------ GPU tests ---

#[test]
fn black_scholes_matches_cpu_and_f64_reference() {
    let Some(b) = backend("black_scholes_matches_cpu_and_f64_reference") else { return };
    let n = 100_000;
    let chain = black_scholes::synthetic_chain(n, 7);
    let gpu = run_bs(b, &chain);
    let mut input = vec![0u32; n * IN_WORDS];
    black_scholes::stage_words(&chain, &mut input);
    let mut cpu = vec![0u32; n * OUT_WORDS];
    black_scholes::price_greeks_words(n, &input, &mut cpu).expect("cpu");

    let names = ["price", "delta", "gamma", "vega", "theta", "rho"];
    let mut worst = [0f64; 6]; // largest error / tolerance, per Greek, vs the reference
    let mut worst_cpu = [0f64; 6];
    let mut failures = Vec::new();
    for (i, c) in chain.iter().enumerate() {
        let g = black_scholes::gather_words(n, &gpu, i);
        let h = black_scholes::gather_words(n, &cpu, i);
        let r = black_scholes::reference(c);
        let (s, k, t, rate, v) = (c.spot as f64, c.strike as f64, c.t as f64, c.rate as f64, c.vol as f64);
        let sv = (v * t.sqrt()).max(1e-12);
        // Absolute scale of each output (its size for an at-the-money contract); the
        // tolerance is 1e-4 relative plus 2e-5 of that scale, so prices and Greeks near 0
        // are judged against the contract's natural size, not against their own tiny value.
        let scale = [
            s.max(k),
            1.0,
            0.4 / (s * sv),
            0.4 * s * t.sqrt(),
            0.4 * s * v * v / (2.0 * sv) + rate.abs() * k,
            k * t,
        ];
        let gv = [g.price, g.delta, g.gamma, g.vega, g.theta, g.rho];
        let hv = [h.price, h.delta, h.gamma, h.vega, h.theta, h.rho];
        let rv = [r.price, r.delta, r.gamma, r.vega, r.theta, r.rho];
        for j in 0..6 {
            let tol = 1e-4 * rv[j].abs() + 2e-5 * scale[j];
            let e_ref = (gv[j] as f64 - rv[j]).abs() / tol;
            let e_cpu = (gv[j] as f64 - hv[j] as f64).abs() / tol;
            worst[j] = worst[j].max(e_ref);
            worst_cpu[j] = worst_cpu[j].max(e_cpu);
            if !(e_ref <= 1.0 && e_cpu <= 1.0) && failures.len() < 10 {
                failures.push(format!("#{i} {c:?}: {} gpu {} cpu {} ref {}", names[j], gv[j], hv[j], rv[j]));
            }
        }
    }
    println!("worst error/tolerance vs f64 reference: {worst:?}; vs CPU: {worst_cpu:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn black_scholes_edge_contracts_stay_finite() {
    let Some(b) = backend("black_scholes_edge_contracts_stay_finite") else { return };
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

#[test]
fn saxpy_matches_cpu() {
    let Some(b) = backend("saxpy_matches_cpu") else { return };
    let n = 1_000_003; // not a multiple of the block size
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
        assert!((out[i] - want[i]).abs() <= tol, "#{i}: gpu {} cpu {}", out[i], want[i]);
    }
}

#[test]
fn pi_hits_equal_cpu_exactly() {
    let Some(b) = backend("pi_hits_equal_cpu_exactly") else { return };
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

#[test]
fn option_paths_agree_with_cpu_and_black_scholes() {
    let Some(b) = backend("option_paths_agree_with_cpu_and_black_scholes") else { return };
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

#[test]
fn sgemm_matches_cpu() {
    let Some(b) = backend("sgemm_matches_cpu") else { return };
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

#[test]
fn sgemm_batched_on_a_slot_matches_cpu() {
    let Some(b) = backend("sgemm_batched_on_a_slot_matches_cpu") else { return };
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

#[test]
fn slot_resident_runs_time_each_phase_alone() {
    let Some(b) = backend("slot_resident_runs_time_each_phase_alone") else { return };
    let n = 1 << 16;
    let chain = black_scholes::synthetic_chain(n, 11);
    let mut slot = b.new_slot(n * IN_WORDS, n * OUT_WORDS).expect("slot");
    black_scholes::stage_words(&chain, slot.staging_in());
    let all = slot.run(&BsJob, n, n * IN_WORDS, n * OUT_WORDS, Phases::ALL).expect("all");
    let want = slot.staging_out().to_vec();
    assert!(all.h2d > std::time::Duration::ZERO && all.kernel > std::time::Duration::ZERO);
    // Data stays on the device: upload once, then kernels alone, then one download.
    let up =
        slot.run(&BsJob, n, n * IN_WORDS, n * OUT_WORDS, Phases { h2d: true, kernel: false, d2h: false });
    let up = up.expect("upload");
    assert!(up.kernel.is_zero() && up.d2h.is_zero());
    for _ in 0..3 {
        let k =
            slot.run(&BsJob, n, n * IN_WORDS, n * OUT_WORDS, Phases { h2d: false, kernel: true, d2h: false });
        let k = k.expect("kernel");
        assert!(k.h2d.is_zero() && k.d2h.is_zero() && !k.kernel.is_zero(), "{k:?}");
        println!("resident kernel n={n}: {:?} (full run {all:?})", k.kernel);
    }
    let down =
        slot.run(&BsJob, n, n * IN_WORDS, n * OUT_WORDS, Phases { h2d: false, kernel: false, d2h: true });
    assert!(down.expect("download").kernel.is_zero());
    assert_eq!(slot.staging_out(), &want[..]);
}

#[test]
fn slot_errors_leave_it_usable() {
    let Some(b) = backend("slot_errors_leave_it_usable") else { return };
    let n = 1000;
    let mut slot = b.new_slot(2 * n, n).expect("slot");
    // Too many words for the slot's buffers.
    let e = slot.run(&SaxpyJob(1.0), n, 2 * n + 1, n, Phases::ALL).expect_err("too big");
    assert!(matches!(e, OffloadError::Kernel(_)), "{e}");
    // A batch larger than the words handed to the kernel: refused by the launch.
    let e = slot.run(&SaxpyJob(1.0), n + 1, 2 * n, n, Phases::ALL).expect_err("short buffer");
    assert!(matches!(e, OffloadError::Kernel(_)), "{e}");
    // Still fine afterwards.
    for (i, w) in slot.staging_in().iter_mut().enumerate() {
        *w = (i as f32).to_bits();
    }
    slot.run(&SaxpyJob(2.0), n, 2 * n, n, Phases::ALL).expect("good run");
    let out = f32s(slot.staging_out());
    assert_eq!(out[3], 2.0 * 3.0 + (n + 3) as f32);
}

#[test]
fn two_slots_on_two_threads_stay_independent() {
    let Some(b) = backend("two_slots_on_two_threads_stay_independent") else { return };
    let n = 1 << 20;
    let start = std::time::Instant::now();
    let busy: Vec<std::time::Duration> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|t| {
                s.spawn(move || {
                    let mut slot = b.new_slot(2 * n, n).expect("slot");
                    let mut busy = std::time::Duration::ZERO;
                    for round in 0..20 {
                        let a = (t * 100 + round) as f32;
                        for (i, w) in slot.staging_in().iter_mut().enumerate() {
                            *w = ((i % 1000) as f32).to_bits();
                        }
                        let pt = slot.run(&SaxpyJob(a), n, 2 * n, n, Phases::ALL).expect("run");
                        busy += pt.h2d + pt.kernel + pt.d2h;
                        let out = slot.staging_out();
                        for i in [0, 1, 999, n - 1] {
                            let x = (i % 1000) as f32;
                            let y = ((n + i) % 1000) as f32;
                            assert_eq!(
                                f32::from_bits(out[i]),
                                a.mul_add(x, y),
                                "slot {t} round {round} #{i}"
                            );
                        }
                    }
                    busy
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("thread")).collect()
    });
    println!("two slots: wall {:?}, device-busy per slot {busy:?} (overlap if wall < sum)", start.elapsed());
}

#[test]
fn calibration_kernels_run() {
    let Some(b) = backend("calibration_kernels_run") else { return };
    let words = 1 << 20;
    let mut slot = b.new_slot(words, words).expect("slot");
    for (i, w) in slot.staging_in().iter_mut().enumerate() {
        *w = i as u32 ^ 0xA5A5_A5A5;
    }
    let t = slot.run(&CopyJob, words, words, words, Phases::ALL).expect("copy");
    println!("copy of {} MiB: {t:?}", (words * 4) >> 20);
    assert!(slot.staging_out().iter().enumerate().all(|(i, &w)| w == i as u32 ^ 0xA5A5_A5A5));
}
