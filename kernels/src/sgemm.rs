//! SGEMM, `C = A·B`, row-major f32 (A is m×k, B is k×n, C is m×n). STUB (kernels helper).
//! Rungs of the CPU ladder: [`sgemm_naive`], [`sgemm_rows`] (one cache-blocked, vectorised
//! row block — what one green task runs), and [`sgemm_crate`] (a well-kept GEMM crate).
use crate::KernelError;
use std::ops::Range;

/// Checks `a.len() == m*k`, `b.len() == k*n`, `c.len() == m*n`.
pub fn check_shapes(m: usize, n: usize, k: usize, a: usize, b: usize, c: usize) -> Result<(), KernelError> {
    let _ = (m, n, k, a, b, c);
    todo!()
}

/// The textbook triple loop (i, j, p), no blocking: the ladder's first rung.
pub fn sgemm_naive(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32]) -> Result<(), KernelError> {
    let _ = (m, n, k, a, b, c);
    todo!()
}

/// Computes rows `rows` of C into `c_rows` (`rows.len() * n` elements) with a cache-blocked,
/// vectorised kernel; single-threaded. Shapes of `a` and `b` as in [`check_shapes`].
pub fn sgemm_rows(
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    rows: Range<usize>,
    c_rows: &mut [f32],
) -> Result<(), KernelError> {
    let _ = (m, n, k, a, b, rows, c_rows);
    todo!()
}

/// C = A·B through the chosen GEMM crate on `threads` threads (its own threading).
pub fn sgemm_crate(
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    threads: usize,
) -> Result<(), KernelError> {
    let _ = (m, n, k, a, b, c, threads);
    todo!()
}
