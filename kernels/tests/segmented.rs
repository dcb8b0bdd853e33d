//! Segmented Greek sums (`gmprt_kernels::segmented`): the CPU twin against a straightforward
//! f64 reference on uneven segments (empty ones included), the word twin bit for bit against
//! the struct twin, every refused input, and the tolerance rule against a Rust emulation of
//! the CUDA kernel's summation order (`kernels/cuda/segmented.cu`: strided per thread, warp
//! shuffle trees, then warp 0's tree) on outputs perturbed by up to the per-contract
//! agreement tolerance, as a GPU's would be.
use gmprt_kernels::black_scholes::tolerance::{agreement_tolerance, CPU_MATH, CUDA_MATH, OUTPUT_NAMES};
use gmprt_kernels::black_scholes::{
    price_batch, price_greeks_words, stage_words, synthetic_chain, BsBatch, BsResults, Contract, IN_WORDS,
    OUT_WORDS,
};
use gmprt_kernels::segmented::{
    segment_tolerance, sum_by_segment, sum_by_segment_words, BsCols, GreekSums, AGG_WORDS, SUM_LANES,
};
use gmprt_kernels::{InvalidInput, KernelError};
use proptest::prelude::*;

/// Offsets of segments with lengths `lens`.
fn offsets_of(lens: &[usize]) -> Vec<u32> {
    std::iter::once(0)
        .chain(lens.iter().scan(0u32, |end, &l| Some(*end + l as u32).inspect(|&e| *end = e)))
        .collect()
}

/// A deterministic quantity in [-500, 500) in steps of 0.25 (a splitmix-style hash of `i`).
fn qty_of(i: usize, seed: u64) -> f32 {
    let mut z = (i as u64).wrapping_add(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    ((z >> 52) as f32 - 2048.0) * 0.25
}

/// Chain, its f32 results (CPU kernel), its output words and the quantities.
fn book(n: usize, seed: u64) -> (Vec<Contract>, BsResults, Vec<u32>, Vec<f32>) {
    let chain = synthetic_chain(n, seed);
    let results = price_batch(&BsBatch::from_contracts(&chain)).unwrap();
    let mut input = vec![0u32; n * IN_WORDS];
    stage_words(&chain, &mut input);
    let mut words = vec![0u32; n * OUT_WORDS];
    price_greeks_words(n, &input, &mut words).unwrap();
    let qty = (0..n).map(|i| qty_of(i, seed)).collect();
    (chain, results, words, qty)
}

/// The documented order, written plainly: per segment and output, `SUM_LANES` running sums of
/// qty·col in f64 from 0.0, the segment's product k into sum k % SUM_LANES, then the sums added
/// in lane order from 0.0 (not `Iterator::sum`, which starts from −0.0).
fn reference(results: &BsResults, qty: &[f32], offsets: &[u32]) -> Vec<[f64; 6]> {
    let cols = [&results.price, &results.delta, &results.gamma, &results.vega, &results.theta, &results.rho];
    (0..offsets.len() - 1)
        .map(|s| {
            let lo = offsets[s] as usize;
            cols.map(|col| {
                let mut lanes = [0.0f64; SUM_LANES];
                for i in lo..offsets[s + 1] as usize {
                    lanes[(i - lo) % SUM_LANES] += qty[i] as f64 * col[i] as f64;
                }
                lanes.iter().fold(0.0, |acc, &x| acc + x)
            })
        })
        .collect()
}

/// The CUDA kernel's order of additions for block size `block` (a multiple of 32, ≤ 1024):
/// thread t sums items lo + t, lo + t + block, ... from 0.0; each warp's lane 0 gets its
/// shuffle-down tree (offsets 16, 8, 4, 2, 1); warp 0 does the same over the warp sums,
/// padded with 0.0.
fn cuda_order(n: usize, words: &[u32], qty: &[f32], offsets: &[u32], block: usize) -> Vec<f64> {
    fn tree(mut v: [f64; 32]) -> f64 {
        for off in [16, 8, 4, 2, 1] {
            for l in 0..off {
                v[l] += v[l + off];
            }
        }
        v[0]
    }
    let mut sums = Vec::new();
    for s in 0..offsets.len() - 1 {
        let (lo, hi) = (offsets[s] as usize, offsets[s + 1] as usize);
        for c in 0..AGG_WORDS {
            let thread = |t: usize| {
                (lo + t..hi)
                    .step_by(block)
                    .fold(0.0f64, |a, i| a + qty[i] as f64 * f32::from_bits(words[c * n + i]) as f64)
            };
            let warp = |w: usize| tree(std::array::from_fn(|l| thread(w * 32 + l)));
            sums.push(tree(std::array::from_fn(|w| if w < block / 32 { warp(w) } else { 0.0 })));
        }
    }
    sums
}

/// `x` moved by at most |by| (toward `x + by`), still an f32.
fn perturb(x: f32, by: f64) -> f32 {
    let r = (x as f64 + by) as f32;
    if ((r as f64) - (x as f64)).abs() <= by.abs() {
        r
    } else if r > x {
        r.next_down()
    } else {
        r.next_up()
    }
}

/// Every output of every contract moved by its CPU-vs-CUDA agreement tolerance, in the
/// direction of its quantity's sign (so the differences add up: the bound's worst case).
fn perturbed_words(chain: &[Contract], words: &[u32], qty: &[f32]) -> Vec<u32> {
    let n = chain.len();
    let mut out = words.to_vec();
    for (i, c) in chain.iter().enumerate() {
        let t = agreement_tolerance(c, &CPU_MATH, &CUDA_MATH).to_array();
        for (j, tj) in t.into_iter().enumerate() {
            let x = f32::from_bits(words[j * n + i]);
            out[j * n + i] = perturb(x, tj.copysign(qty[i] as f64)).to_bits();
        }
    }
    out
}

/// Checks the CPU twin (struct and words) against the reference and the emulated GPU on
/// perturbed outputs against the tolerance; returns the largest |cpu − gpu| / tolerance.
fn check_book(lens: &[usize], seed: u64, block: usize) -> f64 {
    let n = lens.iter().sum();
    let offsets = offsets_of(lens);
    let segments = lens.len();
    let (chain, results, words, qty) = book(n, seed);
    let cols = BsCols::from(&results);
    let mut sums = vec![GreekSums { price: f64::NAN, ..GreekSums::default() }; segments];
    sum_by_segment(&cols, &qty, &offsets, &mut sums).unwrap();
    let want = reference(&results, &qty, &offsets);
    let mut flat = vec![f64::NAN; segments * AGG_WORDS];
    sum_by_segment_words(n, &words, &qty, &offsets, &mut flat).unwrap();
    for s in 0..segments {
        let got = sums[s].to_array();
        // Same additions in the same order: the same bits, in both twins.
        assert_eq!(got.map(f64::to_bits), want[s].map(f64::to_bits), "segment {s}");
        assert_eq!(flat[s * AGG_WORDS..(s + 1) * AGG_WORDS], got, "segment {s}: words vs struct");
    }
    let mut tol = vec![GreekSums::default(); segments];
    segment_tolerance(&chain, &cols, &qty, &offsets, &CPU_MATH, &CUDA_MATH, &mut tol).unwrap();
    let gpu = cuda_order(n, &perturbed_words(&chain, &words, &qty), &qty, &offsets, block);
    let mut worst = 0.0f64;
    for s in 0..segments {
        let (cpu, tol) = (sums[s].to_array(), tol[s].to_array());
        for j in 0..AGG_WORDS {
            let other = gpu[s * AGG_WORDS + j];
            let diff = (cpu[j] - other).abs();
            assert!(diff <= tol[j], "segment {s} {}: |{} - {other}| > {:e}", OUTPUT_NAMES[j], cpu[j], tol[j]);
            if tol[j] > 0.0 {
                worst = worst.max(diff / tol[j]);
            }
        }
    }
    worst
}

#[test]
fn uneven_segments_match_the_reference_and_the_gpu_order_within_tolerance() {
    let lens = [0, 7, 0, 0, 43, 1, 69, 300, 0, 80];
    let worst = check_book(&lens, 2024, 256);
    // The perturbation is the bound's worst case: the differences use most of it.
    assert!(worst > 0.5, "largest |cpu - gpu| / tolerance {worst}");
    for block in [32, 64, 1024] {
        check_book(&lens, 7, block);
    }
}

#[test]
fn exact_sums_are_the_same_in_the_gpu_order() {
    // Quarter quantities times outputs rounded to 1/64: every partial sum is exact, so any order
    // gives the same bits; checks the emulation's indexing against the CPU twin.
    let (n, lens) = (333, [100, 0, 233]);
    let words: Vec<u32> = (0..n * OUT_WORDS).map(|k| ((k % 97) as f32 / 64.0 - 0.5).to_bits()).collect();
    let qty: Vec<f32> = (0..n).map(|i| qty_of(i, 5)).collect();
    let offsets = offsets_of(&lens);
    let mut cpu = vec![0.0; lens.len() * AGG_WORDS];
    sum_by_segment_words(n, &words, &qty, &offsets, &mut cpu).unwrap();
    for block in [32, 128, 1024] {
        assert_eq!(cuda_order(n, &words, &qty, &offsets, block), cpu, "block {block}");
    }
}

#[test]
fn zero_segments_and_zero_contracts() {
    let empty = BsResults::zeroed(0);
    sum_by_segment(&BsCols::from(&empty), &[], &[0], &mut []).unwrap();
    let mut sums = [GreekSums { rho: 1.0, ..GreekSums::default() }; 2];
    sum_by_segment(&BsCols::from(&empty), &[], &[0, 0, 0], &mut sums).unwrap();
    assert_eq!(sums, [GreekSums::default(); 2]);
    assert!(sums.iter().all(|s| s.to_array().iter().all(|x| x.is_sign_positive())), "+0.0");
}

#[test]
fn bad_inputs_are_refused_naming_what_is_wrong() {
    let (_, results, words, qty) = book(5, 3);
    let cols = BsCols::from(&results);
    let ok: [u32; 3] = [0, 2, 5];
    let run = |qty: &[f32], offsets: &[u32], segments: usize| {
        let mut sums = vec![GreekSums { vega: 42.0, ..GreekSums::default() }; segments];
        let err = sum_by_segment(&cols, qty, offsets, &mut sums).unwrap_err();
        assert!(sums.iter().all(|s| s.vega == 42.0), "{err}: sums written before refusing");
        err
    };
    let offsets_err =
        |index, value: f64, why| KernelError::Invalid(InvalidInput { field: "offsets", index, value, why });
    let cases: Vec<(KernelError, &str)> = vec![
        (run(&qty[..4], &ok, 2), "shape mismatch: qty has 4 elements, the shape needs 5"),
        (run(&qty, &ok, 3), "shape mismatch: offsets has 3 elements, the shape needs 4"),
        (run(&qty, &[1, 2, 5], 2), "item 0: offsets = 1: the first offset must be 0"),
        (run(&qty, &[0, 3, 2, 5], 3), "item 2: offsets = 2: offsets must be non-decreasing"),
        (
            run(&qty, &[0, 2, 4], 2),
            "shape mismatch: contracts covered by offsets (the last offset) has 4 elements, the shape needs 5",
        ),
        (run(&[1.0, 2.0, 3.0, f32::INFINITY, f32::NAN], &ok, 2), "item 3: qty = inf: quantity must be finite"),
    ];
    for (err, msg) in &cases {
        assert_eq!(err.to_string(), *msg);
    }
    assert_eq!(cases[2].0, offsets_err(0, 1.0, "the first offset must be 0"));
    // A short output column is named.
    let short = BsCols { gamma: &results.gamma[..4], ..cols };
    let err = sum_by_segment(&short, &qty, &ok, &mut [GreekSums::default(); 2]).unwrap_err();
    assert_eq!(err, KernelError::Shape { what: "gamma", expected: 5, got: 4 });
    // The word twin: buffer shapes, then the same checks.
    let mut flat = [0.0; 2 * AGG_WORDS];
    let err = sum_by_segment_words(5, &words[1..], &qty, &ok, &mut flat).unwrap_err();
    assert_eq!(err, KernelError::Shape { what: "output words", expected: 30, got: 29 });
    let err = sum_by_segment_words(5, &words, &qty, &ok, &mut flat[1..]).unwrap_err();
    assert_eq!(err, KernelError::Shape { what: "sums words", expected: 12, got: 11 });
    let err = sum_by_segment_words(5, &words, &qty, &[], &mut []).unwrap_err();
    assert_eq!(err, KernelError::Shape { what: "offsets", expected: 1, got: 0 });
    let err = sum_by_segment_words(5, &words, &qty, &[0, 3, 2], &mut flat).unwrap_err();
    assert_eq!(err, offsets_err(2, 2.0, "offsets must be non-decreasing"));
    // The tolerance: the same checks, and the contracts must match.
    let chain = synthetic_chain(4, 3);
    let mut tol = [GreekSums::default(); 2];
    let err = segment_tolerance(&chain, &cols, &qty, &ok, &CPU_MATH, &CUDA_MATH, &mut tol).unwrap_err();
    assert_eq!(err.to_string(), "shape mismatch: contracts has 4 elements, the shape needs 5");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Any segmentation (empty segments included), any seed and block size: the twins agree
    /// with the reference bit for bit and the emulated GPU within the tolerance.
    #[test]
    fn any_segmentation(lens in prop::collection::vec(prop_oneof![Just(0usize), 1usize..40], 0..12),
                        seed in any::<u64>(), block in prop::sample::select(vec![32usize, 96, 256])) {
        check_book(&lens, seed, block);
    }
}
