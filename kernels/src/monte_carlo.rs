//! Monte Carlo on Philox streams: π by sampling the unit square, and a European option by
//! simulated terminal prices (compared with Black-Scholes).
//!
//! π: block `b` of stream [`TAG_PI`] gives two points, `(w0, w1)` and
//! `(w2, w3)`, as 24-bit integers `x = w >> 8`; a point hits when `x² + y² < 2⁴⁸`, computed
//! exactly in u64, so CPU and GPU counts are identical. Samples = 2 × blocks.
//!
//! Paths: block `b` of stream [`TAG_PATHS`] gives four normals by
//! Box-Muller on `(unit_open(w0), unit(w1))` and `(unit_open(w2), unit(w3))` (f32), i.e. four
//! paths; each path's payoff is discounted and summed in f64. Paths = 4 × blocks.
//!
//! Exactly, per block (all f32, with `math`'s branch-free [`ln`](crate::math::ln_with),
//! [`exp`](crate::math::exp_with) and [`sin_cos`](crate::math::sin_cos_with), and `sqrt`,
//! unless said otherwise; `u1 = unit_open_f32(w0)`, `u2 = unit_f32(w1)`,
//! `u3 = unit_open_f32(w2)`, `u4 = unit_f32(w3)`):
//!
//! * `r1 = sqrt(max(−2·ln u1, 0))`, `θ1 = 2π·u2`, `r2 = sqrt(max(−2·ln u3, 0))`, `θ2 = 2π·u4`
//!   (the f32 products, as the CUDA source rounds them);
//! * the four normals, in this order: `z0 = r1·cos θ1`, `z1 = r1·sin θ1`, `z2 = r2·cos θ2`,
//!   `z3 = r2·sin θ2`;
//! * `drift = (r − σ²/2)·T`, `diffusion = σ·√T`, `S_T = S·exp(drift + diffusion·z)` (the
//!   product and sum fused where the build has FMA);
//! * payoff (f64) `max(S_T − K, 0)` for a call, `max(K − S_T, 0)` for a put, times
//!   `exp(−r·T)` computed in f64; the sums of the payoffs and of their squares in f64.
//!
//! The CPU prices [`PATH_CHUNK`] blocks at a time, with no call and no branch in the loop, so
//! the compiler vectorises it (one build per [`Isa`], as for π), and keeps one running sum per
//! path slot of a chunk, added up at the end: a call's sums depend on its paths and on where its
//! first block falls, to f64 rounding, never on anything else. The FMA builds (AVX2, AVX-512)
//! agree bit for bit with each other; the portable build differs from them in the last bits.
//! The GPU's `sinf`/`cosf`/`logf`/`expf` are not bit-identical to the CPU's either, so path sums
//! agree statistically (and to ~1e-6 relative per path), not bit for bit; the π counts agree
//! exactly.
use crate::black_scholes::{Contract, OptionKind};
use crate::math::{exp_with, fmadd, ln_with, sin_cos_with, DEFAULT_FMA};
use crate::philox::{block, unit_f32, unit_open_f32, TAG_PATHS, TAG_PI};
use crate::Isa;

/// The π hit test of one block (both points); exact integer arithmetic.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::monte_carlo::pi_block_hits;
///
/// // (0, 0) is inside the quarter circle; (2²⁴ − 1, 2²⁴ − 1) is outside.
/// assert_eq!(pi_block_hits([0, 0, 0, 0]), 2);
/// assert_eq!(pi_block_hits([0, 0, u32::MAX, u32::MAX]), 1);
/// assert_eq!(pi_block_hits([u32::MAX; 4]), 0);
/// ```
#[inline(always)]
pub fn pi_block_hits(w: [u32; 4]) -> u64 {
    const R2: u64 = 1 << 48;
    let sq = |a: u32, b: u32| {
        let (x, y) = ((a >> 8) as u64, (b >> 8) as u64);
        x * x + y * y
    };
    (sq(w[0], w[1]) < R2) as u64 + (sq(w[2], w[3]) < R2) as u64
}

#[inline(always)]
fn pi_body(seed: u64, first_block: u64, blocks: u64) -> u64 {
    let mut hits = 0u64;
    for b in first_block..first_block.wrapping_add(blocks) {
        hits += pi_block_hits(block(seed, TAG_PI, b));
    }
    hits
}

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,fma,avx2")]
unsafe fn pi_avx512(seed: u64, first_block: u64, blocks: u64) -> u64 {
    pi_body(seed, first_block, blocks)
}

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
#[target_feature(enable = "avx2,fma")]
unsafe fn pi_avx2(seed: u64, first_block: u64, blocks: u64) -> u64 {
    pi_body(seed, first_block, blocks)
}

/// Hits among the `2 * blocks` points of blocks `first_block .. first_block + blocks`.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::monte_carlo::{pi_hits, PiEstimate};
///
/// let (seed, blocks) = (42, 4096);
/// let hits = pi_hits(seed, 0, blocks);
/// // Deterministic, and splittable into chunks that add up exactly.
/// assert_eq!(hits, pi_hits(seed, 0, 1000) + pi_hits(seed, 1000, blocks - 1000));
/// let est = PiEstimate { hits, samples: 2 * blocks };
/// assert!((est.pi() - std::f64::consts::PI).abs() < 5.0 * est.std_error());
/// ```
pub fn pi_hits(seed: u64, first_block: u64, blocks: u64) -> u64 {
    pi_hits_isa(Isa::detect(), seed, first_block, blocks)
}

/// As [`pi_hits`] with a chosen ISA build (the count is the same for every ISA).
///
/// # Panics
/// If `isa` is not available on this CPU.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::monte_carlo::pi_hits_isa;
/// use gmprt_kernels::Isa;
///
/// let want = pi_hits_isa(Isa::Scalar, 7, 100, 500);
/// for isa in Isa::available() {
///     assert_eq!(pi_hits_isa(isa, 7, 100, 500), want, "{}", isa.name());
/// }
/// ```
pub fn pi_hits_isa(isa: Isa, seed: u64, first_block: u64, blocks: u64) -> u64 {
    assert!(isa.is_available(), "ISA {} is not available on this CPU", isa.name());
    match isa {
        Isa::Scalar => pi_body(seed, first_block, blocks),
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        // SAFETY: `isa.is_available()` (asserted above): the CPU has AVX2 and FMA.
        Isa::Avx2 => unsafe { pi_avx2(seed, first_block, blocks) },
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        // SAFETY: `isa.is_available()`: the CPU has AVX-512 F/DQ/VL, AVX2 and FMA.
        Isa::Avx512 => unsafe { pi_avx512(seed, first_block, blocks) },
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
        _ => unreachable!("only Isa::Scalar is available off x86"),
    }
}

/// A π estimate: `4 * hits / samples`.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::monte_carlo::PiEstimate;
///
/// let est = PiEstimate { hits: 3, samples: 4 };
/// assert_eq!(est.pi(), 3.0);
/// // 4·sqrt(p(1 − p)/n) with p = 3/4, n = 4.
/// assert!((est.std_error() - 4.0 * (0.75f64 * 0.25 / 4.0).sqrt()).abs() < 1e-15);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PiEstimate {
    /// Points inside the quarter circle.
    pub hits: u64,
    /// Points drawn.
    pub samples: u64,
}

impl PiEstimate {
    /// 4 · hits / samples.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::monte_carlo::PiEstimate;
    ///
    /// assert_eq!(PiEstimate { hits: 785, samples: 1000 }.pi(), 3.14);
    /// ```
    pub fn pi(&self) -> f64 {
        4.0 * self.hits as f64 / self.samples as f64
    }
    /// Standard error of [`PiEstimate::pi`]: `4·sqrt(p(1 − p)/samples)` with p = hits/samples.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::monte_carlo::PiEstimate;
    ///
    /// // Four times the samples halve the error.
    /// let (small, big) = (PiEstimate { hits: 75, samples: 100 }, PiEstimate { hits: 300, samples: 400 });
    /// assert!((small.std_error() / big.std_error() - 2.0).abs() < 1e-12);
    /// ```
    pub fn std_error(&self) -> f64 {
        let p = self.hits as f64 / self.samples as f64;
        4.0 * (p * (1.0 - p) / self.samples as f64).sqrt()
    }
}

/// The four standard normals of one path block, in the documented order.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::monte_carlo::block_normals;
/// use gmprt_kernels::philox::{block, unit_open_f32, TAG_PATHS};
///
/// let w = block(1, TAG_PATHS, 0);
/// let z = block_normals(w);
/// assert!(z.iter().all(|v| v.is_finite()));
/// // Box-Muller: z0² + z1² = −2·ln(u1).
/// let r2 = -2.0 * unit_open_f32(w[0]).ln();
/// assert!((z[0] * z[0] + z[1] * z[1] - r2).abs() < 1e-5 * r2.max(1.0));
/// ```
#[inline]
pub fn block_normals(w: [u32; 4]) -> [f32; 4] {
    block_normals_with::<DEFAULT_FMA>(w)
}

/// [`block_normals`] with the multiply-adds fused or not (`math`'s `FMA`).
#[inline(always)]
fn block_normals_with<const FMA: bool>(w: [u32; 4]) -> [f32; 4] {
    const TWO_PI: f32 = std::f32::consts::TAU;
    let r1 = (-2.0 * ln_with::<FMA>(unit_open_f32(w[0]))).max(0.0).sqrt();
    let (s1, c1) = sin_cos_with::<FMA>(TWO_PI * unit_f32(w[1]));
    let r2 = (-2.0 * ln_with::<FMA>(unit_open_f32(w[2]))).max(0.0).sqrt();
    let (s2, c2) = sin_cos_with::<FMA>(TWO_PI * unit_f32(w[3]));
    [r1 * c1, r1 * s1, r2 * c2, r2 * s2]
}

/// Sum of discounted payoffs and of their squares over paths of blocks
/// `first_block .. first_block + blocks`.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{reference, Contract, OptionKind};
/// use gmprt_kernels::monte_carlo::{mc_price, option_paths_sum};
///
/// let c = Contract { spot: 100.0, strike: 100.0, t: 1.0, rate: 0.05, vol: 0.2, kind: OptionKind::Call };
/// let blocks = 4096; // 4 paths per block
/// let (sum, sum_sq) = option_paths_sum(3, &c, 0, blocks);
/// let mc = mc_price(sum, sum_sq, 4 * blocks);
/// // Agrees with the closed form within 5 standard errors.
/// assert!((mc.price - reference(&c).price).abs() < 5.0 * mc.std_error);
/// // Chunks add up (to rounding of the f64 sums).
/// let (a, _) = option_paths_sum(3, &c, 0, 1000);
/// let (b, _) = option_paths_sum(3, &c, 1000, blocks - 1000);
/// assert!((a + b - sum).abs() < 1e-9 * sum);
/// ```
pub fn option_paths_sum(seed: u64, c: &Contract, first_block: u64, blocks: u64) -> (f64, f64) {
    option_paths_sum_isa(Isa::detect(), seed, c, first_block, blocks)
}

/// As [`option_paths_sum`] with a chosen ISA build (the FMA builds give the same sums, the
/// portable one differs in the last bits: module doc).
///
/// # Panics
/// If `isa` is not available on this CPU.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{Contract, OptionKind};
/// use gmprt_kernels::monte_carlo::option_paths_sum_isa;
/// use gmprt_kernels::Isa;
///
/// let c = Contract { spot: 100.0, strike: 100.0, t: 1.0, rate: 0.05, vol: 0.2, kind: OptionKind::Call };
/// let (want, _) = option_paths_sum_isa(Isa::Scalar, 3, &c, 0, 1000);
/// for isa in Isa::available() {
///     // The same paths; the portable build's unfused multiply-adds move the last bits.
///     let (sum, _) = option_paths_sum_isa(isa, 3, &c, 0, 1000);
///     assert!((sum - want).abs() < 1e-6 * want, "{}", isa.name());
/// }
/// ```
pub fn option_paths_sum_isa(isa: Isa, seed: u64, c: &Contract, first_block: u64, blocks: u64) -> (f64, f64) {
    assert!(isa.is_available(), "ISA {} is not available on this CPU", isa.name());
    match isa {
        Isa::Scalar => paths_body::<false>(seed, c, first_block, blocks),
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        // SAFETY: `isa.is_available()` (asserted above): the CPU has AVX2 and FMA.
        Isa::Avx2 => unsafe { paths_avx2(seed, c, first_block, blocks) },
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        // SAFETY: `isa.is_available()`: the CPU has AVX-512 F/DQ/VL, AVX2 and FMA.
        Isa::Avx512 => unsafe { paths_avx512(seed, c, first_block, blocks) },
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
        _ => unreachable!("only Isa::Scalar is available off x86"),
    }
}

/// Blocks whose paths [`option_paths_sum`] prices in one vectorised loop: 16 blocks, 64 paths, so
/// each of the four normals fills one AVX-512 register or two AVX2 ones; the terminal prices
/// (256 B of f32) stay in L1 until they are summed.
pub const PATH_CHUNK: usize = 16;

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,fma,avx2")]
unsafe fn paths_avx512(seed: u64, c: &Contract, first_block: u64, blocks: u64) -> (f64, f64) {
    paths_body::<true>(seed, c, first_block, blocks)
}

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
#[target_feature(enable = "avx2,fma")]
unsafe fn paths_avx2(seed: u64, c: &Contract, first_block: u64, blocks: u64) -> (f64, f64) {
    paths_body::<true>(seed, c, first_block, blocks)
}

/// The paths of blocks `first_block ..` (`blocks` of them), [`PATH_CHUNK`] at a time: the
/// terminal prices of a whole chunk first (past the last block too, so the loop has one shape
/// and a path's value never depends on where a chunk starts), then their discounted payoffs in
/// f64, added into one running sum per path slot of the chunk (slot (k, i): normal k of the
/// chunk's block i; the blocks past the end add 0), and the slots summed last, in slot order.
/// One running sum per slot rather than one in all: a single f64 sum is a chain of dependent
/// adds, 64 per chunk, which held the AVX-512 build at 251 M paths/s on the 2-core VM; with 64
/// independent ones it does 337 M (`benches/README.md`).
#[inline(always)]
fn paths_body<const FMA: bool>(seed: u64, c: &Contract, first_block: u64, blocks: u64) -> (f64, f64) {
    let drift = (c.rate - 0.5 * c.vol * c.vol) * c.t;
    let diffusion = c.vol * c.t.sqrt();
    let disc = (-(c.rate as f64) * c.t as f64).exp();
    let strike = c.strike as f64;
    // A call pays S_T − K, a put K − S_T: sign·(S_T − K).
    let sign = if c.kind == OptionKind::Call { 1.0 } else { -1.0 };
    // st[k][i]: the terminal price of normal k of block `b + i` (lanes along the blocks).
    let mut st = [[0.0f32; PATH_CHUNK]; 4];
    let mut sum = [[0.0f64; PATH_CHUNK]; 4];
    let mut sum_sq = [[0.0f64; PATH_CHUNK]; 4];
    let (mut b, mut left) = (first_block, blocks);
    while left > 0 {
        // `i` is both the block's offset and its lane in every row: an index, not an iterator.
        #[allow(clippy::needless_range_loop)]
        for i in 0..PATH_CHUNK {
            let z = block_normals_with::<FMA>(block(seed, TAG_PATHS, b.wrapping_add(i as u64)));
            for k in 0..4 {
                st[k][i] = c.spot * exp_with::<FMA>(fmadd::<FMA>(diffusion, z[k], drift));
            }
        }
        let n = left.min(PATH_CHUNK as u64) as usize;
        for k in 0..4 {
            for i in 0..PATH_CHUNK {
                let p = (sign * (st[k][i] as f64 - strike)).max(0.0) * disc;
                let p = if i < n { p } else { 0.0 };
                sum[k][i] += p;
                sum_sq[k][i] += p * p;
            }
        }
        b = b.wrapping_add(n as u64);
        left -= n as u64;
    }
    let total = |a: &[[f64; PATH_CHUNK]; 4]| a.iter().flatten().sum::<f64>();
    (total(&sum), total(&sum_sq))
}

/// [`option_paths_sum`] over blocks `0..blocks` for each contract, contract `i` on the stream
/// of `seeds[i]`: the CPU twin of the batched CUDA kernel (`gmprt_option_paths_batch`), which
/// values a whole batch of contracts in one launch. `None` if the two slices differ in length
/// (say which in the caller's error).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{Contract, OptionKind};
/// use gmprt_kernels::monte_carlo::{option_paths_sum, option_paths_sum_many};
///
/// let c = Contract { spot: 100.0, strike: 100.0, t: 1.0, rate: 0.05, vol: 0.2, kind: OptionKind::Call };
/// let p = Contract { kind: OptionKind::Put, ..c };
/// let many = option_paths_sum_many(&[3, 4], &[c, p], 256).unwrap();
/// // Contract by contract, the same sums as one call each, bit for bit.
/// assert_eq!(many, vec![option_paths_sum(3, &c, 0, 256), option_paths_sum(4, &p, 0, 256)]);
/// assert!(option_paths_sum_many(&[3], &[c, p], 256).is_none());
/// ```
pub fn option_paths_sum_many(seeds: &[u64], contracts: &[Contract], blocks: u64) -> Option<Vec<(f64, f64)>> {
    if seeds.len() != contracts.len() {
        return None;
    }
    Some(seeds.iter().zip(contracts).map(|(&s, c)| option_paths_sum(s, c, 0, blocks)).collect())
}

/// A Monte Carlo price with its standard error.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::monte_carlo::{mc_price, McPrice};
///
/// let p: McPrice = mc_price(4.0, 10.0, 2); // payoffs 1 and 3
/// assert_eq!(p, McPrice { price: 2.0, std_error: 1.0, paths: 2 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct McPrice {
    /// Mean discounted payoff.
    pub price: f64,
    /// Standard error of the mean.
    pub std_error: f64,
    /// Paths simulated.
    pub paths: u64,
}

/// Builds a [`McPrice`] from path sums (as returned by [`option_paths_sum`], summed over chunks).
///
/// `price = sum/paths`; `std_error = sqrt((sum_sq/paths − price²)/(paths − 1))` (the sample
/// variance, clamped at 0 against rounding, over paths − 1). With no paths the price is 0, and
/// with fewer than two the standard error is +∞ (nothing is known about the spread).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::monte_carlo::mc_price;
///
/// // Payoffs 1 and 3: mean 2, sample variance 2, standard error sqrt(2/2) = 1.
/// let p = mc_price(1.0 + 3.0, 1.0 + 9.0, 2);
/// assert_eq!((p.price, p.std_error), (2.0, 1.0));
/// assert_eq!(mc_price(5.0, 25.0, 1).std_error, f64::INFINITY);
/// assert_eq!(mc_price(0.0, 0.0, 0).price, 0.0);
/// ```
pub fn mc_price(sum: f64, sum_sq: f64, paths: u64) -> McPrice {
    if paths == 0 {
        return McPrice { price: 0.0, std_error: f64::INFINITY, paths };
    }
    let n = paths as f64;
    let price = sum / n;
    let std_error =
        if paths < 2 { f64::INFINITY } else { ((sum_sq / n - price * price).max(0.0) / (n - 1.0)).sqrt() };
    McPrice { price, std_error, paths }
}
