//! Segmented reduction of position-weighted Black-Scholes outputs: per segment `s` (the
//! contracts `offsets[s]..offsets[s + 1]`, e.g. one underlying of a book sorted by
//! underlying), the sums `Σ qty[i]·col[i]` of each of the six outputs, accumulated in f64.
//! The CUDA twin is `kernels/cuda/segmented.cu` ([`crate::cuda::SEGMENTED`]), so a GPU book
//! returns only the per-segment aggregates.
//!
//! **Layout.** Inputs: the [`OUT_WORDS`] output columns `price, delta, gamma, vega, theta, rho`
//! of a batch of `n` (as [`price_greeks_words`](crate::black_scholes::price_greeks_words)
//! writes them: column `c` is `words[c * n..(c + 1) * n]`, f32 bits), `qty` (`n` f32) and
//! `offsets` (`segments + 1` u32). Output: [`AGG_WORDS`] f64 per segment, segment-major
//! (`sums[s * AGG_WORDS + c]`), in output order.
//!
//! **Contract.** `offsets[0] == 0`, non-decreasing, `offsets[segments] == n` (so segments
//! cover every contract once, in order; empty segments are allowed and sum to +0.0), every
//! `qty` finite; anything else is a [`KernelError`] naming what is wrong, checked before any
//! sum is written. The outputs are not checked: a non-finite output propagates into its sum.
//! Every sum is overwritten (no zeroing needed).
//!
//! **Arithmetic.** Each product `qty[i]·col[i]` is formed in f64 from two f32s, which is exact
//! (24 × 24 significand bits < 53), so an FMA contraction cannot change it; the only rounding
//! is the summation. The CPU keeps [`SUM_LANES`] running sums per output from 0.0, the
//! segment's product `k` into sum `k % SUM_LANES`, and adds them up in lane order from 0.0: a
//! fixed order that depends only on the segment's own contracts (deterministic);
//! [`sum_by_segment_words`] and [`sum_by_segment`] share that code, so they agree bit for bit.
//! The CUDA kernel adds the same products in its own order (strided per thread, then a block
//! tree), so it agrees to the rounding of a sum, not bit for bit.
//!
//! **Tolerance** ([`segment_tolerance`], u = 2⁻⁵³, m = segment length, γₖ = k·u/(1 − k·u)):
//! if each contract's outputs on the two sides differ by at most tᵢ (the per-contract
//! [`agreement_tolerance`]), the exact sums differ by at most A = Σ|qtyᵢ|·tᵢ; each side's
//! f64 sum of m terms, in *any* order (a binary tree of additions, adding exact zeros for
//! idle threads), is within γₘ₋₁·Σ|termᵢ| of its exact sum (Higham, *Accuracy and Stability
//! of Numerical Algorithms*, §4.2). With P = Σ|qtyᵢ·colᵢ| from the side given and the other
//! side's Σ|termᵢ| ≤ P + A, the computed sums differ by at most A + γₘ·(2P + A). The bound is
//! itself evaluated in f64 (m + 5 roundings of non-negative terms), so it is returned times
//! 1 + 4(m + 6)·u, which exceeds that evaluation error: a bound, not a fudge factor.
use crate::black_scholes::tolerance::{agreement_tolerance, MathAccuracy};
use crate::black_scholes::{BsResults, Contract, OUT_WORDS};
use crate::{InvalidInput, KernelError};

mod selected;
pub use selected::price_and_sum_selected_words;

/// f64 words per segment in [`sum_by_segment_words`]'s output (one per output column).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::OUT_WORDS;
/// use gmprt_kernels::segmented::AGG_WORDS;
///
/// assert_eq!(AGG_WORDS, OUT_WORDS);
/// ```
pub const AGG_WORDS: usize = 6;

/// u = 2⁻⁵³: the largest relative rounding error of one f64 operation.
const U: f64 = f64::EPSILON / 2.0;

/// [`segment_tolerance`]'s rule in one line, for programs that print what they checked.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::segmented::SEGMENT_TOLERANCE_RULE;
///
/// assert!(SEGMENT_TOLERANCE_RULE.contains("gamma_m"));
/// assert!(!SEGMENT_TOLERANCE_RULE.contains('\n'), "one line");
/// ```
pub const SEGMENT_TOLERANCE_RULE: &str = "per segment of m contracts and output, |a - b| <= \
     A + gamma_m (2P + A), A = sum |qty_i| t_i (t_i the per-contract agreement tolerance), \
     P = sum |qty_i col_i|, gamma_m = m u / (1 - m u), u = 2^-53 (any f64 summation order); \
     times 1 + 4 (m + 6) u for evaluating it (see gmprt_kernels::segmented)";

/// Position-weighted sums of the six outputs over one segment.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::segmented::GreekSums;
///
/// let s = GreekSums { delta: 150.0, ..GreekSums::default() };
/// assert_eq!(s.to_array(), [0.0, 150.0, 0.0, 0.0, 0.0, 0.0]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GreekSums {
    /// Σ qty·price.
    pub price: f64,
    /// Σ qty·delta.
    pub delta: f64,
    /// Σ qty·gamma.
    pub gamma: f64,
    /// Σ qty·vega.
    pub vega: f64,
    /// Σ qty·theta.
    pub theta: f64,
    /// Σ qty·rho.
    pub rho: f64,
}

impl GreekSums {
    /// The six sums in output order (`price, delta, gamma, vega, theta, rho`).
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::segmented::GreekSums;
    ///
    /// let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    /// assert_eq!(GreekSums::from_array(a).to_array(), a);
    /// ```
    pub fn to_array(&self) -> [f64; AGG_WORDS] {
        [self.price, self.delta, self.gamma, self.vega, self.theta, self.rho]
    }

    /// The sums from an array in output order.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::segmented::GreekSums;
    ///
    /// assert_eq!(GreekSums::from_array([0.0, 0.0, 0.0, 0.0, -1.5, 0.0]).theta, -1.5);
    /// ```
    pub fn from_array([price, delta, gamma, vega, theta, rho]: [f64; AGG_WORDS]) -> GreekSums {
        GreekSums { price, delta, gamma, vega, theta, rho }
    }
}

/// Read-only view of the six output columns of a batch (all the same length).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::BsResults;
/// use gmprt_kernels::segmented::BsCols;
///
/// let r = BsResults::zeroed(3);
/// let cols = BsCols::from(&r);
/// assert_eq!(cols.rho.len(), 3);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct BsCols<'a> {
    /// Prices.
    pub price: &'a [f32],
    /// Deltas.
    pub delta: &'a [f32],
    /// Gammas.
    pub gamma: &'a [f32],
    /// Vegas.
    pub vega: &'a [f32],
    /// Thetas.
    pub theta: &'a [f32],
    /// Rhos.
    pub rho: &'a [f32],
}

impl<'a> From<&'a BsResults> for BsCols<'a> {
    fn from(r: &'a BsResults) -> BsCols<'a> {
        BsCols {
            price: &r.price,
            delta: &r.delta,
            gamma: &r.gamma,
            vega: &r.vega,
            theta: &r.theta,
            rho: &r.rho,
        }
    }
}

impl<'a> BsCols<'a> {
    /// The columns of an output word buffer of a batch of `n` (`words.len() == n * OUT_WORDS`).
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::black_scholes::OUT_WORDS;
    /// use gmprt_kernels::segmented::BsCols;
    ///
    /// let mut words = vec![0u32; 2 * OUT_WORDS];
    /// words[2 * 4 + 1] = (-3.5f32).to_bits(); // theta of item 1
    /// assert_eq!(BsCols::from_words(2, &words).unwrap().theta, &[0.0, -3.5]);
    /// assert!(BsCols::from_words(3, &words).is_err());
    /// ```
    pub fn from_words(n: usize, words: &'a [u32]) -> Result<BsCols<'a>, KernelError> {
        if words.len() != n * OUT_WORDS {
            return Err(KernelError::Shape {
                what: "output words",
                expected: n * OUT_WORDS,
                got: words.len(),
            });
        }
        let f: &'a [f32] = bytemuck::cast_slice(words);
        let c = |j: usize| &f[j * n..(j + 1) * n];
        Ok(BsCols { price: c(0), delta: c(1), gamma: c(2), vega: c(3), theta: c(4), rho: c(5) })
    }

    fn to_array(self) -> [&'a [f32]; AGG_WORDS] {
        [self.price, self.delta, self.gamma, self.vega, self.theta, self.rho]
    }
}

/// Per segment `s`, `sums[s]` = the sums over contracts `offsets[s]..offsets[s + 1]` of
/// `qty[i]` times each output (see the module docs for the contract and the arithmetic).
/// Needs `offsets.len() == sums.len() + 1`.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{price_batch, synthetic_chain, BsBatch};
/// use gmprt_kernels::segmented::{sum_by_segment, BsCols, GreekSums};
///
/// // Five contracts on two underlyings (0..3 and 3..5) and one underlying with none.
/// let results = price_batch(&BsBatch::from_contracts(&synthetic_chain(5, 3))).unwrap();
/// let qty = [10.0, -5.0, 2.0, 1.0, 100.0];
/// let offsets = [0, 3, 3, 5];
/// let mut sums = [GreekSums::default(); 3];
/// sum_by_segment(&BsCols::from(&results), &qty, &offsets, &mut sums).unwrap();
/// let delta_1: f64 = (3..5).map(|i| qty[i] as f64 * results.delta[i] as f64).sum();
/// assert_eq!(sums[2].delta, delta_1);
/// assert_eq!(sums[1], GreekSums::default()); // empty segment
/// // A NaN quantity is refused, naming the contract.
/// let bad = [10.0, -5.0, f32::NAN, 1.0, 100.0];
/// let err = sum_by_segment(&BsCols::from(&results), &bad, &offsets, &mut sums).unwrap_err();
/// assert_eq!(err.to_string(), "item 2: qty = NaN: quantity must be finite");
/// ```
pub fn sum_by_segment(
    cols: &BsCols<'_>,
    qty: &[f32],
    offsets: &[u32],
    sums: &mut [GreekSums],
) -> Result<(), KernelError> {
    let cols = cols.to_array();
    check(cols, qty, offsets, sums.len())?;
    for (s, out) in sums.iter_mut().enumerate() {
        *out = GreekSums::from_array(segment_sum(cols, qty, offsets, s));
    }
    Ok(())
}

/// Word-layout twin of [`sum_by_segment`], the one `kernels/cuda/segmented.cu` mirrors:
/// `output_words` holds the [`OUT_WORDS`] columns of stride `n` (as
/// [`price_greeks_words`](crate::black_scholes::price_greeks_words) writes them), `sums`
/// receives [`AGG_WORDS`] f64 per segment, segment-major, so
/// `sums.len() == (offsets.len() - 1) * AGG_WORDS`. Same bits as [`sum_by_segment`].
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::OUT_WORDS;
/// use gmprt_kernels::segmented::{sum_by_segment_words, AGG_WORDS};
///
/// // Two contracts in one segment, every output 1.5 and 0.25: Σ qty·col = 2·1.5 − 4·0.25.
/// let words: Vec<u32> = (0..OUT_WORDS).flat_map(|_| [1.5f32.to_bits(), 0.25f32.to_bits()]).collect();
/// let mut sums = [0.0; AGG_WORDS];
/// sum_by_segment_words(2, &words, &[2.0, -4.0], &[0, 2], &mut sums).unwrap();
/// assert_eq!(sums, [2.0; AGG_WORDS]);
/// // Offsets that stop short of n are refused.
/// assert!(sum_by_segment_words(2, &words, &[2.0, -4.0], &[0, 1], &mut sums).is_err());
/// ```
pub fn sum_by_segment_words(
    n: usize,
    output_words: &[u32],
    qty: &[f32],
    offsets: &[u32],
    sums: &mut [f64],
) -> Result<(), KernelError> {
    let cols = BsCols::from_words(n, output_words)?.to_array();
    let segments = offsets.len().saturating_sub(1);
    if sums.len() != segments * AGG_WORDS {
        return Err(KernelError::Shape {
            what: "sums words",
            expected: segments * AGG_WORDS,
            got: sums.len(),
        });
    }
    check(cols, qty, offsets, segments)?;
    for (s, out) in sums.chunks_exact_mut(AGG_WORDS).enumerate() {
        out.copy_from_slice(&segment_sum(cols, qty, offsets, s));
    }
    Ok(())
}

/// Per segment and output, how far `a`'s sum ([`sum_by_segment`] over `cols`, the outputs
/// of a kernel with math `a`) may be from another kernel's (math `b`, any f64 summation
/// order) for the same `contracts`, `qty` and `offsets`: the rule of the module docs
/// ([`SEGMENT_TOLERANCE_RULE`]). Same checks as [`sum_by_segment`], plus
/// `contracts.len() == n`.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::tolerance::{CPU_MATH, CUDA_MATH};
/// use gmprt_kernels::black_scholes::{price_batch, synthetic_chain, BsBatch};
/// use gmprt_kernels::segmented::{segment_tolerance, sum_by_segment, BsCols, GreekSums};
///
/// let chain = synthetic_chain(6, 1);
/// let results = price_batch(&BsBatch::from_contracts(&chain)).unwrap();
/// let cols = BsCols::from(&results);
/// let (qty, offsets) = ([3.0, -1.0, 7.0, 2.0, -2.0, 5.0], [0, 4, 6]);
/// let (mut sums, mut tol) = ([GreekSums::default(); 2], [GreekSums::default(); 2]);
/// sum_by_segment(&cols, &qty, &offsets, &mut sums).unwrap();
/// segment_tolerance(&chain, &cols, &qty, &offsets, &CPU_MATH, &CUDA_MATH, &mut tol).unwrap();
/// // Another order of the same products is within it...
/// let reversed = (0..4).rev().fold(0.0, |a, i| a + qty[i] as f64 * results.price[i] as f64);
/// assert!((sums[0].price - reversed).abs() <= tol[0].price);
/// // ...and it is worth checking: about Φ's error (both sides, ~5.5e-7) times S + K per unit held.
/// let scale: f64 = (0..4).map(|i| (qty[i] * (chain[i].spot + chain[i].strike)).abs() as f64).sum();
/// assert!(tol[0].price > 0.0 && tol[0].price < 2e-6 * scale);
/// ```
pub fn segment_tolerance(
    contracts: &[Contract],
    cols: &BsCols<'_>,
    qty: &[f32],
    offsets: &[u32],
    a: &MathAccuracy,
    b: &MathAccuracy,
    tol: &mut [GreekSums],
) -> Result<(), KernelError> {
    let cols = cols.to_array();
    if contracts.len() != qty.len() {
        return Err(KernelError::Shape { what: "contracts", expected: qty.len(), got: contracts.len() });
    }
    check(cols, qty, offsets, tol.len())?;
    for (s, out) in tol.iter_mut().enumerate() {
        let (lo, hi) = (offsets[s] as usize, offsets[s + 1] as usize);
        let (mut diff, mut size) = ([0.0f64; AGG_WORDS], [0.0f64; AGG_WORDS]);
        for i in lo..hi {
            let q = f64::from(qty[i]);
            let t = agreement_tolerance(&contracts[i], a, b).to_array();
            for j in 0..AGG_WORDS {
                diff[j] += q.abs() * t[j];
                size[j] += (q * f64::from(cols[j][i])).abs();
            }
        }
        let m = (hi - lo) as f64;
        let gamma = m * U / (1.0 - m * U);
        let eval = 1.0 + 4.0 * (m + 6.0) * U;
        *out = GreekSums::from_array(std::array::from_fn(|j| {
            (diff[j] + gamma * (2.0 * size[j] + diff[j])) * eval
        }));
    }
    Ok(())
}

/// The checks of the module docs' contract, in order: column and `qty` lengths, offsets'
/// length, start, order and end, then `qty` finite.
fn check(
    cols: [&[f32]; AGG_WORDS],
    qty: &[f32],
    offsets: &[u32],
    segments: usize,
) -> Result<(), KernelError> {
    let n = cols[0].len();
    let names = crate::black_scholes::tolerance::OUTPUT_NAMES;
    for (what, got) in names.into_iter().zip(cols.map(<[f32]>::len)).chain([("qty", qty.len())]) {
        if got != n {
            return Err(KernelError::Shape { what, expected: n, got });
        }
    }
    check_offsets(offsets, segments, n)?;
    check_qty(qty)
}

/// The offsets' contract (module docs) for `segments` segments over `n` contracts.
fn check_offsets(offsets: &[u32], segments: usize, n: usize) -> Result<(), KernelError> {
    if offsets.len() != segments + 1 {
        return Err(KernelError::Shape { what: "offsets", expected: segments + 1, got: offsets.len() });
    }
    let bad = |index: usize, why: &'static str| InvalidInput {
        field: "offsets",
        index,
        value: offsets[index].into(),
        why,
    };
    if offsets[0] != 0 {
        return Err(bad(0, "the first offset must be 0").into());
    }
    if let Some(s) = offsets.windows(2).position(|w| w[1] < w[0]) {
        return Err(bad(s + 1, "offsets must be non-decreasing").into());
    }
    let last = offsets[segments] as usize;
    if last != n {
        return Err(KernelError::Shape {
            what: "contracts covered by offsets (the last offset)",
            expected: n,
            got: last,
        });
    }
    Ok(())
}

/// Every quantity finite.
fn check_qty(qty: &[f32]) -> Result<(), KernelError> {
    if let Some(i) = qty.iter().position(|q| !q.is_finite()) {
        let why = "quantity must be finite";
        return Err(InvalidInput { field: "qty", index: i, value: qty[i].into(), why }.into());
    }
    Ok(())
}

/// Running sums per output in [`sum_by_segment`]: the segment's product `k` (counted from its
/// first contract) goes into sum `k % SUM_LANES`. One sum per output made every add wait for the
/// previous one (a chain of dependent adds); four independent ones vectorise (two SSE2
/// registers of f64). Measured (`cargo bench -p gmprt-kernels --bench segmented`, 2-core VM,
/// `benches/results/segmented-sums-2core-intel-2026-11-29.txt`): one sum per output 296 M
/// contracts/s, four 465 M, eight 472 M (no better, so four).
pub const SUM_LANES: usize = 4;

/// Segment `s`'s six sums, each product exact in f64 (the arithmetic of the module docs): per
/// output, [`SUM_LANES`] running sums from 0.0, product `k` of the segment into sum
/// `k % SUM_LANES`, then the sums added in lane order from 0.0. The contract has been checked.
fn segment_sum(cols: [&[f32]; AGG_WORDS], qty: &[f32], offsets: &[u32], s: usize) -> [f64; AGG_WORDS] {
    let (lo, hi) = (offsets[s] as usize, offsets[s + 1] as usize);
    let qty = &qty[lo..hi];
    // One output at a time (the segment's quantities stay in L1 between the six passes).
    cols.map(|col| {
        let col = &col[lo..hi];
        let mut lanes = [0.0f64; SUM_LANES];
        let (q4, c4) = (qty.chunks_exact(SUM_LANES), col.chunks_exact(SUM_LANES));
        let tail = q4.remainder().iter().zip(c4.remainder());
        for (q, c) in q4.zip(c4) {
            for (l, (&q, &c)) in lanes.iter_mut().zip(q.iter().zip(c)) {
                *l += f64::from(q) * f64::from(c);
            }
        }
        for (l, (&q, &c)) in lanes.iter_mut().zip(tail) {
            *l += f64::from(q) * f64::from(c);
        }
        lanes.iter().fold(0.0, |t, &x| t + x)
    })
}
