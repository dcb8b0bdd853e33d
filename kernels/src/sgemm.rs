//! SGEMM, `C = A·B`, row-major f32 (A is m×k, B is k×n, C is m×n).
//! Rungs of the CPU ladder: [`sgemm_naive`], [`sgemm_rows`] (one cache-blocked, vectorised
//! row block — what one green task runs), and [`sgemm_crate`] (a well-kept GEMM crate).
//!
//! All three sum the k products of each element in f32 (in different orders), so each element
//! is within about k·ε·Σ|a_ip·b_pj| of the exact product (ε = 2⁻²⁴; the tests check this).
//!
//! # `sgemm_rows`
//! Loops j-panel (`NB` = 512 columns) → k-panel (`KB` = 256) → 4-row block → `NR`-column strip,
//! and keeps the 4×`NR` block of C in registers across the k-panel (`NR` = 32 for AVX-512, i.e.
//! 8 zmm accumulators; 16 for AVX2, 8 ymm; 8 for portable SSE2 code): per step of p it
//! broadcasts 4 elements of A and loads one `NR`-wide row segment of B. A B panel
//! (KB×NB×4 B = 512 KiB) stays in L2 while the row blocks sweep over it. No packing. Columns
//! left over when n is not a multiple of `NR` go through 16-, 8-, 4- and 1-wide strips, also in
//! registers (N = 64 … 640 all run at 78–110 GFLOP/s on one dev-VM core; summing the tail in
//! memory made N = 80 or 100 three times slower than N = 96).
//!
//! # `sgemm_crate`: `matrixmultiply`, chosen by measurement
//! Best of several runs, N×N×N, this machine (Intel Xeon with AVX-512, 2 cores, shared with
//! other builds, so ±10 %), GFLOP/s:
//!
//! | crate | threads | N = 512 | N = 1024 |
//! |---|---|---|---|
//! | `gemm` 0.18.2 (sarah-ek), `Parallelism::None` / `Rayon(2)` | 1 | 113 | 108 |
//! | `gemm` 0.18.2 | 2 | 217 | 211 |
//! | `matrixmultiply` 0.3.11 (AVX-512 kernel) | 1 | 184 | 183 |
//! | `matrixmultiply`, its own `threading` (`MATMUL_NUM_THREADS=2`) | 2 | 291 | 320 |
//! | `matrixmultiply`, single-threaded calls on 2 scoped threads (row halves) | 2 | 282 | 309 |
//!
//! `matrixmultiply` wins at both sizes and thread counts. Its own threading, though, is
//! process-wide (the `MATMUL_NUM_THREADS` variable, read once, capped at 4), so it cannot honour
//! a per-call thread count; [`sgemm_crate`] therefore uses it without the `threading` feature
//! and runs `threads` single-threaded calls on contiguous row blocks of C (scoped threads),
//! which measured within the noise of the crate's own threading (last two rows).
//! [`sgemm_crate_on`] runs the same blocks on a caller's [`Parallel`] executor instead (the
//! offload crate passes its persistent host pool, so a call starts no thread).
use crate::parallel::{Parallel, ScopedThreads, Task};
use crate::{Isa, KernelError};
use std::ops::Range;

/// Checks `a.len() == m*k`, `b.len() == k*n`, `c.len() == m*n`.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::sgemm::check_shapes;
/// use gmprt_kernels::KernelError;
///
/// // A is 2×3, B is 3×4, C is 2×4.
/// assert!(check_shapes(2, 4, 3, 6, 12, 8).is_ok());
/// assert_eq!(check_shapes(2, 4, 3, 6, 11, 8), Err(KernelError::Shape { what: "b", expected: 12, got: 11 }));
/// ```
pub fn check_shapes(m: usize, n: usize, k: usize, a: usize, b: usize, c: usize) -> Result<(), KernelError> {
    for (what, expected, got) in [("a", m * k, a), ("b", k * n, b), ("c", m * n, c)] {
        if expected != got {
            return Err(KernelError::Shape { what, expected, got });
        }
    }
    Ok(())
}

/// The textbook triple loop (i, j, p), no blocking: the ladder's first rung.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::sgemm::sgemm_naive;
///
/// // [1 2; 3 4] · [5 6; 7 8] = [19 22; 43 50]
/// let (a, b) = ([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]);
/// let mut c = [0.0; 4];
/// sgemm_naive(2, 2, 2, &a, &b, &mut c).unwrap();
/// assert_eq!(c, [19.0, 22.0, 43.0, 50.0]);
/// ```
pub fn sgemm_naive(
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
) -> Result<(), KernelError> {
    check_shapes(m, n, k, a.len(), b.len(), c.len())?;
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f32;
            for p in 0..k {
                acc += a[i * k + p] * b[p * n + j];
            }
            c[i * n + j] = acc;
        }
    }
    Ok(())
}

/// Columns per j-panel.
const NB: usize = 512;
/// Depth per k-panel.
const KB: usize = 256;
/// Rows per register block.
const MR: usize = 4;

/// C rows `i0..i0 + R` (R ≤ MR; `c` starts at row `i0`'s first column) += A·B over
/// `p ∈ ks`, columns `js`, with an `R`×`NR` register block per column strip; the columns left
/// over (fewer than `NR`) go through 16-, 8-, 4- and 1-wide strips, each also held in
/// registers.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn block_rows<const FMA: bool, const R: usize, const NR: usize>(
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    i0: usize,
    ks: Range<usize>,
    js: Range<usize>,
    c: &mut [f32],
) {
    let a_rows: [&[f32]; R] = std::array::from_fn(|r| &a[(i0 + r) * k..(i0 + r + 1) * k]);
    // Narrower strips for the tail keep its accumulators in registers too: summed in memory
    // instead (an i-p-j loop, C's row loaded and stored once per p), a 16-column tail made
    // N = 80 (NR = 32) run at a third of the speed of N = 64 or 96 on the dev VM.
    let mut j = strips::<FMA, R, NR>(n, b, &a_rows, &ks, js.start, js.end, c);
    j = strips::<FMA, R, 16>(n, b, &a_rows, &ks, j, js.end, c);
    j = strips::<FMA, R, 8>(n, b, &a_rows, &ks, j, js.end, c);
    j = strips::<FMA, R, 4>(n, b, &a_rows, &ks, j, js.end, c);
    let j = strips::<FMA, R, 1>(n, b, &a_rows, &ks, j, js.end, c);
    debug_assert_eq!(j, js.end);
}

/// `W`-column strips from column `j` while a whole strip fits before `end`: C's `R`×`W` block
/// held in registers across `ks`, B's row segment loaded once per p. Returns the first column
/// not done.
#[inline(always)]
fn strips<const FMA: bool, const R: usize, const W: usize>(
    n: usize,
    b: &[f32],
    a_rows: &[&[f32]; R],
    ks: &Range<usize>,
    mut j: usize,
    end: usize,
    c: &mut [f32],
) -> usize {
    while j + W <= end {
        let mut acc = [[0.0f32; W]; R];
        for r in 0..R {
            acc[r].copy_from_slice(&c[r * n + j..r * n + j + W]);
        }
        for p in ks.clone() {
            let bp: &[f32; W] = b[p * n + j..p * n + j + W].try_into().unwrap();
            for r in 0..R {
                let av = a_rows[r][p];
                for x in 0..W {
                    acc[r][x] = crate::math::fmadd::<FMA>(av, bp[x], acc[r][x]);
                }
            }
        }
        for r in 0..R {
            c[r * n + j..r * n + j + W].copy_from_slice(&acc[r]);
        }
        j += W;
    }
    j
}

#[inline(always)]
fn rows_body<const FMA: bool, const NR: usize>(
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    rows: Range<usize>,
    c_rows: &mut [f32],
) {
    c_rows.fill(0.0);
    for jb in (0..n).step_by(NB) {
        let js = jb..(jb + NB).min(n);
        for kb in (0..k).step_by(KB) {
            let ks = kb..(kb + KB).min(k);
            let mut i = rows.start;
            while i + MR <= rows.end {
                let c = &mut c_rows[(i - rows.start) * n..];
                block_rows::<FMA, MR, NR>(n, k, a, b, i, ks.clone(), js.clone(), c);
                i += MR;
            }
            while i < rows.end {
                let c = &mut c_rows[(i - rows.start) * n..];
                block_rows::<FMA, 1, NR>(n, k, a, b, i, ks.clone(), js.clone(), c);
                i += 1;
            }
        }
    }
}

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,fma,avx2")]
unsafe fn rows_avx512(n: usize, k: usize, a: &[f32], b: &[f32], rows: Range<usize>, c: &mut [f32]) {
    rows_body::<true, 32>(n, k, a, b, rows, c)
}

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows_avx2(n: usize, k: usize, a: &[f32], b: &[f32], rows: Range<usize>, c: &mut [f32]) {
    rows_body::<true, 16>(n, k, a, b, rows, c)
}

/// Computes rows `rows` of C into `c_rows` (`rows.len() * n` elements) with a cache-blocked,
/// vectorised kernel; single-threaded. Shapes of `a` and `b` as in [`check_shapes`].
///
/// # Examples
///
/// ```
/// use gmprt_kernels::sgemm::sgemm_rows;
///
/// // Row 1 of [1 2; 3 4] · [5 6; 7 8] is [43 50].
/// let (a, b) = ([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]);
/// let mut row = [0.0; 2];
/// sgemm_rows(2, 2, 2, &a, &b, 1..2, &mut row).unwrap();
/// assert_eq!(row, [43.0, 50.0]);
/// assert!(sgemm_rows(2, 2, 2, &a, &b, 1..3, &mut row).is_err()); // rows past m
/// ```
pub fn sgemm_rows(
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    rows: Range<usize>,
    c_rows: &mut [f32],
) -> Result<(), KernelError> {
    sgemm_rows_isa(Isa::detect(), m, n, k, a, b, rows, c_rows)
}

/// As [`sgemm_rows`] with a chosen ISA build.
///
/// # Panics
/// If `isa` is not available on this CPU.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::sgemm::{sgemm_naive, sgemm_rows_isa};
/// use gmprt_kernels::Isa;
///
/// // 37×35 (register blocks plus every tail width), k = 9; small integers, so exact.
/// let (m, n, k) = (37, 35, 9);
/// let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 - 3.0).collect();
/// let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 - 2.0).collect();
/// let mut want = vec![0.0; m * n];
/// sgemm_naive(m, n, k, &a, &b, &mut want).unwrap();
/// for isa in Isa::available() {
///     let mut c = vec![f32::NAN; m * n]; // old contents are overwritten
///     sgemm_rows_isa(isa, m, n, k, &a, &b, 0..m, &mut c).unwrap();
///     assert_eq!(c, want, "{}", isa.name());
/// }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn sgemm_rows_isa(
    isa: Isa,
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    rows: Range<usize>,
    c_rows: &mut [f32],
) -> Result<(), KernelError> {
    check_shapes(m, n, k, a.len(), b.len(), m * n)?;
    if rows.start > rows.end || rows.end > m {
        return Err(KernelError::Shape { what: "rows", expected: m, got: rows.end });
    }
    if c_rows.len() != rows.len() * n {
        return Err(KernelError::Shape { what: "c_rows", expected: rows.len() * n, got: c_rows.len() });
    }
    assert!(isa.is_available(), "ISA {} is not available on this CPU", isa.name());
    match isa {
        Isa::Scalar => rows_body::<false, 8>(n, k, a, b, rows, c_rows),
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        // SAFETY: `isa.is_available()` (asserted above): the CPU has AVX2 and FMA.
        Isa::Avx2 => unsafe { rows_avx2(n, k, a, b, rows, c_rows) },
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        // SAFETY: `isa.is_available()`: the CPU has AVX-512 F/DQ/VL, AVX2 and FMA.
        Isa::Avx512 => unsafe { rows_avx512(n, k, a, b, rows, c_rows) },
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
        _ => unreachable!("only Isa::Scalar is available off x86"),
    }
    Ok(())
}

/// One single-threaded `matrixmultiply` call: `c` (rows × n) = `a` (rows × k) · `b` (k × n).
fn mm_call(rows: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    debug_assert!(a.len() == rows * k && b.len() == k * n && c.len() == rows * n);
    if rows == 0 || n == 0 {
        return;
    }
    // SAFETY: the pointers come from slices of exactly rows×k, k×n and rows×n elements
    // (checked by every caller), and the strides (k, 1), (n, 1), (n, 1) describe those
    // row-major layouts, so every access stays in bounds; `c` is a unique borrow, so it aliases
    // neither input. beta = 0 means C's old contents are not read.
    unsafe {
        matrixmultiply::sgemm(
            rows,
            k,
            n,
            1.0,
            a.as_ptr(),
            k as isize,
            1,
            b.as_ptr(),
            n as isize,
            1,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

/// C = A·B through the chosen GEMM crate on `threads` threads (its own threading).
///
/// The crate is `matrixmultiply` (see the module docs for the measurement and for why the
/// threads are ours: `threads` contiguous row blocks of C, one single-threaded call each, on
/// scoped threads; `threads = 0` means [`std::thread::available_parallelism`]). This is
/// [`sgemm_crate_on`] with [`ScopedThreads`].
///
/// # Examples
///
/// ```
/// use gmprt_kernels::sgemm::sgemm_crate;
///
/// let (a, b) = ([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]);
/// for threads in [0, 1, 2] {
///     let mut c = [0.0; 4];
///     sgemm_crate(2, 2, 2, &a, &b, &mut c, threads).unwrap();
///     assert_eq!(c, [19.0, 22.0, 43.0, 50.0]);
/// }
/// ```
pub fn sgemm_crate(
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    threads: usize,
) -> Result<(), KernelError> {
    sgemm_crate_on(&ScopedThreads, m, n, k, a, b, c, threads)
}

/// As [`sgemm_crate`], with the row blocks run by `par` (a persistent pool, say) instead of
/// scoped threads started per call; `threads = 0` means [`Parallel::threads`]. The blocks are
/// the same for every executor, so the results are bit-identical.
///
/// ```
/// use gmprt_kernels::parallel::{Parallel, Task};
/// use gmprt_kernels::sgemm::{sgemm_crate, sgemm_crate_on};
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// /// Runs the parts in order on the calling thread, counting them.
/// struct Counting(AtomicUsize);
/// impl Parallel for Counting {
///     fn threads(&self) -> usize {
///         4
///     }
///     fn run_all(&self, tasks: Vec<Task<'_>>) {
///         self.0.fetch_add(tasks.len(), Ordering::Relaxed);
///         tasks.into_iter().for_each(|t| t());
///     }
/// }
/// let (m, n, k) = (37, 35, 9);
/// let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 * 0.3).collect();
/// let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 * 0.7).collect();
/// let par = Counting(AtomicUsize::new(0));
/// let mut c = vec![0.0; m * n];
/// sgemm_crate_on(&par, m, n, k, &a, &b, &mut c, 0).unwrap(); // 0: par.threads()
/// assert_eq!(par.0.load(Ordering::Relaxed), 4); // row blocks of 10, 10, 10 and 7 rows
/// // The same 4 blocks on scoped threads: the same bits.
/// let mut scoped = vec![0.0; m * n];
/// sgemm_crate(m, n, k, &a, &b, &mut scoped, 4).unwrap();
/// assert_eq!(c, scoped);
/// ```
#[allow(clippy::too_many_arguments)]
pub fn sgemm_crate_on(
    par: &dyn Parallel,
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    threads: usize,
) -> Result<(), KernelError> {
    check_shapes(m, n, k, a.len(), b.len(), c.len())?;
    let threads = match threads {
        0 => par.threads(),
        t => t,
    }
    .min(m.max(1));
    if threads <= 1 || n == 0 {
        mm_call(m, n, k, a, b, c);
        return Ok(());
    }
    let rows_per = m.div_ceil(threads);
    let tasks: Vec<Task<'_>> = c
        .chunks_mut(rows_per * n)
        .enumerate()
        .map(|(t, c_block)| {
            let rows = c_block.len() / n;
            let a_block = &a[t * rows_per * k..(t * rows_per + rows) * k];
            Box::new(move || mm_call(rows, n, k, a_block, b, c_block)) as Task<'_>
        })
        .collect();
    par.run_all(tasks);
    Ok(())
}

/// `count` independent products C_i = A_i·B_i (each A_i m×k, B_i k×n, row-major), the CPU twin
/// of a strided-batched cuBLAS call. Word layout: `input` = all A_i (`count·m·k` words, f32
/// bits) then all B_i (`count·k·n`); `output` = all C_i (`count·m·n`). Single-threaded.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::sgemm::sgemm_batched_words;
///
/// // Two 2×2 products: A0 = I, A1 = 2I, with B0 = B1 = [5 6; 7 8].
/// let a = [1.0f32, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 2.0];
/// let b = [5.0f32, 6.0, 7.0, 8.0, 5.0, 6.0, 7.0, 8.0];
/// let input: Vec<u32> = a.iter().chain(&b).map(|v| v.to_bits()).collect();
/// let mut output = [0u32; 8];
/// sgemm_batched_words(2, 2, 2, 2, &input, &mut output).unwrap();
/// assert_eq!(output.map(f32::from_bits), [5.0, 6.0, 7.0, 8.0, 10.0, 12.0, 14.0, 16.0]);
/// ```
pub fn sgemm_batched_words(
    count: usize,
    m: usize,
    n: usize,
    k: usize,
    input: &[u32],
    output: &mut [u32],
) -> Result<(), KernelError> {
    let (sa, sb, sc) = (m * k, k * n, m * n);
    if input.len() != count * (sa + sb) {
        return Err(KernelError::Shape {
            what: "input words",
            expected: count * (sa + sb),
            got: input.len(),
        });
    }
    if output.len() != count * sc {
        return Err(KernelError::Shape { what: "output words", expected: count * sc, got: output.len() });
    }
    let input: &[f32] = bytemuck::cast_slice(input);
    let output: &mut [f32] = bytemuck::cast_slice_mut(output);
    let (all_a, all_b) = input.split_at(count * sa);
    for i in 0..count {
        let c = &mut output[i * sc..(i + 1) * sc];
        mm_call(m, n, k, &all_a[i * sa..(i + 1) * sa], &all_b[i * sb..(i + 1) * sb], c);
    }
    Ok(())
}
