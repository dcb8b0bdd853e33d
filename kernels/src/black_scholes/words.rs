//! The word layout (see the parent module and the crate docs): [`IN_WORDS`] input columns
//! and [`OUT_WORDS`] output columns of `n` words each, as a Batcher stages and scatters them and
//! a device copies them; the entry point that prices such a buffer, and the helpers that fill
//! and read one contract.

use super::{price_greeks, BsIn, BsOut, Contract, Greeks, OptionKind, CALL, IN_WORDS, OUT_WORDS, PUT};
use crate::KernelError;

/// Splits a word buffer into `N` columns of `n` words each (`what` names it in the error).
fn columns<'w, const N: usize>(
    words: &'w [u32],
    n: usize,
    what: &'static str,
) -> Result<[&'w [u32]; N], KernelError> {
    let expected = n * N;
    if words.len() != expected {
        return Err(KernelError::Shape { what, expected, got: words.len() });
    }
    Ok(std::array::from_fn(|c| &words[c * n..(c + 1) * n]))
}

/// Word-layout entry point: `input.len() == n * IN_WORDS`, `output.len() == n * OUT_WORDS`.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{
///     gather_words, price_batch, price_greeks_words, stage_words, synthetic_chain, BsBatch, IN_WORDS,
///     OUT_WORDS,
/// };
///
/// let chain = synthetic_chain(5, 11);
/// let n = chain.len();
/// let mut input = vec![0u32; n * IN_WORDS];
/// stage_words(&chain, &mut input);
/// let mut output = vec![0u32; n * OUT_WORDS];
/// price_greeks_words(n, &input, &mut output).unwrap();
/// // Same kernel as the column API, so the same bits.
/// let cols = price_batch(&BsBatch::from_contracts(&chain)).unwrap();
/// for i in 0..n {
///     assert_eq!(gather_words(n, &output, i), cols.get(i));
/// }
/// ```
pub fn price_greeks_words(n: usize, input: &[u32], output: &mut [u32]) -> Result<(), KernelError> {
    let [spot, strike, t, rate, vol, kind] = columns::<IN_WORDS>(input, n, "input words")?;
    if output.len() != n * OUT_WORDS {
        return Err(KernelError::Shape { what: "output words", expected: n * OUT_WORDS, got: output.len() });
    }
    fn f(w: &[u32]) -> &[f32] {
        bytemuck::cast_slice(w)
    }
    let input = BsIn { spot: f(spot), strike: f(strike), t: f(t), rate: f(rate), vol: f(vol), kind };
    let out: &mut [f32] = bytemuck::cast_slice_mut(output);
    let (price, rest) = out.split_at_mut(n);
    let (delta, rest) = rest.split_at_mut(n);
    let (gamma, rest) = rest.split_at_mut(n);
    let (vega, rest) = rest.split_at_mut(n);
    let (theta, rho) = rest.split_at_mut(n);
    price_greeks(&input, &mut BsOut { price, delta, gamma, vega, theta, rho })
}

/// The `kind` word of `k`.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{kind_word, OptionKind};
///
/// assert_eq!(kind_word(OptionKind::Call), 1);
/// assert_eq!(kind_word(OptionKind::Put), 0);
/// ```
pub fn kind_word(k: OptionKind) -> u32 {
    match k {
        OptionKind::Call => CALL,
        OptionKind::Put => PUT,
    }
}

/// Writes `contracts` into `input` in the word layout (`input.len() == contracts.len() * IN_WORDS`).
///
/// # Panics
/// If `input.len() != contracts.len() * IN_WORDS`.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{stage_words, Contract, OptionKind, IN_WORDS};
///
/// let c = Contract { spot: 100.0, strike: 95.0, t: 0.25, rate: 0.01, vol: 0.4, kind: OptionKind::Call };
/// let mut words = vec![0u32; 2 * IN_WORDS];
/// stage_words(&[c, Contract { kind: OptionKind::Put, ..c }], &mut words);
/// // Column-major with stride 2: spot, spot, strike, strike, ..., kind, kind.
/// assert_eq!(f32::from_bits(words[2]), 95.0);
/// assert_eq!(&words[10..], &[1, 0]);
/// ```
pub fn stage_words(contracts: &[Contract], input: &mut [u32]) {
    let n = contracts.len();
    assert_eq!(input.len(), n * IN_WORDS, "stage_words: input must hold n * IN_WORDS words");
    for (i, c) in contracts.iter().enumerate() {
        let w = [c.spot.to_bits(), c.strike.to_bits(), c.t.to_bits(), c.rate.to_bits(), c.vol.to_bits()];
        for (col, word) in w.into_iter().enumerate() {
            input[col * n + i] = word;
        }
        input[5 * n + i] = kind_word(c.kind);
    }
}

/// Reads result `i` of a batch of `n` from `output` in the word layout.
///
/// # Panics
/// If `i >= n` or `output` is shorter than `n * OUT_WORDS`.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{gather_words, OUT_WORDS};
///
/// // Two results; output column c of item i is word c * 2 + i.
/// let mut output = vec![0u32; 2 * OUT_WORDS];
/// output[1] = 7.5f32.to_bits(); // price of item 1
/// output[2 * 5 + 1] = 0.25f32.to_bits(); // rho of item 1
/// let g = gather_words(2, &output, 1);
/// assert_eq!((g.price, g.rho, g.delta), (7.5, 0.25, 0.0));
/// ```
pub fn gather_words(n: usize, output: &[u32], i: usize) -> Greeks {
    assert!(i < n && output.len() >= n * OUT_WORDS, "gather_words: item {i} of {n} out of range");
    let w = |col: usize| f32::from_bits(output[col * n + i]);
    Greeks { price: w(0), delta: w(1), gamma: w(2), vega: w(3), theta: w(4), rho: w(5) }
}
