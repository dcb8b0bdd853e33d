//! SGEMM rungs against an f64 product, shape errors, the row-block entry and the batched
//! word layout.
use gmprt_kernels::parallel::Task;
use gmprt_kernels::sgemm::{
    check_shapes, sgemm_batched_words, sgemm_crate, sgemm_crate_on, sgemm_naive, sgemm_rows, sgemm_rows_isa,
};
use gmprt_kernels::{Isa, KernelError, Parallel};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Deterministic values in [-1, 1).
fn fill(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Checks `c` against the f64 product with the f32 summation bound: each element within
/// 2·k·ε·Σ_p |a_ip·b_pj| (ε = 2⁻²⁴; any summation order, with or without FMA, stays inside).
fn check(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &[f32], who: &str) {
    for i in 0..m {
        for j in 0..n {
            let (mut exact, mut mag) = (0.0f64, 0.0f64);
            for p in 0..k {
                let t = a[i * k + p] as f64 * b[p * n + j] as f64;
                exact += t;
                mag += t.abs();
            }
            let bound = 2.0 * k.max(1) as f64 * 5.96e-8 * mag + 1e-30;
            let got = c[i * n + j] as f64;
            assert!((got - exact).abs() <= bound, "{who} {m}x{n}x{k}: c[{i},{j}] = {got}, exact {exact}");
        }
    }
}

const SHAPES: [(usize, usize, usize); 11] = [
    (1, 1, 1),
    (3, 5, 7),
    (4, 32, 16),
    (17, 33, 65),
    (64, 64, 64),
    (6, 63, 40),    // every strip width: 32 + 16 + 8 + 4 + 3 × 1
    (5, 29, 17),    // 16 + 8 + 4 + 1, no full 32-wide strip
    (37, 530, 300), // crosses the 512-column and 256-depth panels
    (9, 1, 300),
    (5, 7, 0),
    (0, 3, 4),
];

#[test]
fn all_rungs_match_f64() {
    for (s, &(m, n, k)) in SHAPES.iter().enumerate() {
        let a = fill(m * k, 2 * s as u64 + 1);
        let b = fill(k * n, 2 * s as u64 + 2);
        let mut c = vec![f32::NAN; m * n];
        sgemm_naive(m, n, k, &a, &b, &mut c).unwrap();
        check(m, n, k, &a, &b, &c, "naive");
        for isa in Isa::available() {
            let mut c = vec![f32::NAN; m * n];
            sgemm_rows_isa(isa, m, n, k, &a, &b, 0..m, &mut c).unwrap();
            check(m, n, k, &a, &b, &c, isa.name());
        }
        for threads in [0, 1, 2, 3] {
            let mut c = vec![f32::NAN; m * n];
            sgemm_crate(m, n, k, &a, &b, &mut c, threads).unwrap();
            check(m, n, k, &a, &b, &c, &format!("crate/{threads}"));
        }
    }
}

/// Runs the parts one after another on the calling thread, in reverse order, counting them:
/// an executor as unlike scoped threads as can be.
struct Sequential {
    threads: usize,
    parts: AtomicUsize,
}

impl Parallel for Sequential {
    fn threads(&self) -> usize {
        self.threads
    }

    fn run_all(&self, tasks: Vec<Task<'_>>) {
        self.parts.fetch_add(tasks.len(), Ordering::Relaxed);
        for t in tasks.into_iter().rev() {
            t();
        }
    }
}

#[test]
fn executor_does_not_change_the_bits() {
    let (m, n, k) = (37, 45, 29);
    let a = fill(m * k, 9);
    let b = fill(k * n, 10);
    for threads in [0, 2, 3, 5] {
        let mut scoped = vec![f32::NAN; m * n];
        let seq = Sequential { threads: 4, parts: AtomicUsize::new(0) };
        sgemm_crate(m, n, k, &a, &b, &mut scoped, if threads == 0 { 4 } else { threads }).unwrap();
        let mut other = vec![f32::NAN; m * n];
        sgemm_crate_on(&seq, m, n, k, &a, &b, &mut other, threads).unwrap();
        let bits = |c: &[f32]| c.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&scoped), bits(&other), "threads {threads}");
        let want = if threads == 0 { 4 } else { threads };
        assert_eq!(seq.parts.load(Ordering::Relaxed), want, "threads = 0 takes the executor's count");
    }
}

#[test]
fn row_blocks_compose() {
    let (m, n, k) = (23, 40, 19);
    let a = fill(m * k, 5);
    let b = fill(k * n, 6);
    let mut whole = vec![0.0; m * n];
    sgemm_rows(m, n, k, &a, &b, 0..m, &mut whole).unwrap();
    let mut parts = vec![0.0; m * n];
    for r in [0..5, 5..6, 6..6, 6..23] {
        let (lo, hi) = (r.start * n, r.end * n);
        sgemm_rows(m, n, k, &a, &b, r, &mut parts[lo..hi]).unwrap();
    }
    assert_eq!(whole, parts);
    check(m, n, k, &a, &b, &whole, "rows");
}

#[test]
fn shape_errors_name_the_buffer() {
    assert_eq!(check_shapes(2, 3, 4, 8, 12, 6), Ok(()));
    let shape = |what, expected, got| Err(KernelError::Shape { what, expected, got });
    assert_eq!(check_shapes(2, 3, 4, 7, 12, 6), shape("a", 8, 7));
    assert_eq!(check_shapes(2, 3, 4, 8, 13, 6), shape("b", 12, 13));
    assert_eq!(check_shapes(2, 3, 4, 8, 12, 5), shape("c", 6, 5));
    let (a, b, mut c) = (vec![0.0; 8], vec![0.0; 12], vec![0.0; 5]);
    assert_eq!(sgemm_naive(2, 3, 4, &a, &b, &mut c), shape("c", 6, 5));
    assert_eq!(sgemm_crate(2, 3, 4, &a, &b, &mut c, 2), shape("c", 6, 5));
    assert_eq!(sgemm_crate(2, 3, 4, &a[1..], &b, &mut c, 2), shape("a", 8, 7));
    let mut rows = vec![0.0; 3];
    assert_eq!(sgemm_rows(2, 3, 4, &a, &b, 0..2, &mut rows), shape("c_rows", 6, 3));
    assert!(sgemm_rows(2, 3, 4, &a, &b, 1..3, &mut rows).is_err());
    let err = sgemm_batched_words(2, 2, 3, 4, &[0; 39], &mut [0; 12]).unwrap_err();
    assert!(err.to_string().contains("input words"), "{err}");
}

#[test]
fn batched_words_layout() {
    let (count, m, n, k) = (3, 5, 6, 7);
    let a = fill(count * m * k, 11);
    let b = fill(count * k * n, 12);
    let mut input: Vec<u32> = a.iter().chain(&b).map(|v| v.to_bits()).collect();
    let mut output = vec![0u32; count * m * n];
    sgemm_batched_words(count, m, n, k, &input, &mut output).unwrap();
    for i in 0..count {
        let ai = &a[i * m * k..(i + 1) * m * k];
        let bi = &b[i * k * n..(i + 1) * k * n];
        let ci: Vec<f32> = output[i * m * n..(i + 1) * m * n].iter().map(|w| f32::from_bits(*w)).collect();
        check(m, n, k, ai, bi, &ci, "batched");
    }
    input.pop();
    assert!(sgemm_batched_words(count, m, n, k, &input, &mut output).is_err());
}
