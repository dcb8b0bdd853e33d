//! Repricing the selected segments of a book at their spots, then summing each: the CPU twin of
//! `gmprt_black_scholes_segment_sums` (a resident book's tick path). The sums are the parent
//! module's, by its own `segment_sum`, so they agree with [`super::sum_by_segment_words`] bit
//! for bit over the same prices.
use super::{check_offsets, check_qty, segment_sum, BsCols, AGG_WORDS};
use crate::black_scholes::OUT_WORDS;
use crate::{InvalidInput, KernelError};

/// Prices only the contracts of the selected segments, each at its segment's spot, and sums
/// them per selected segment: for `k < sel.len()`, `sums[k * AGG_WORDS..]` = the sums of
/// segment `sel[k]`, its contracts priced from `input` (the
/// [`price_greeks_words`](crate::black_scholes::price_greeks_words) input columns of a book of
/// `n`, column `c` at `c * n`) with the spot column replaced by `spots[sel[k]]`: segments are
/// underlyings, and every contract of one is priced at its one spot. The CPU twin of
/// `gmprt_black_scholes_segment_sums` (`kernels/cuda/segmented.cu`): a book that stays on the
/// device reprices the underlyings a tick moved, where they live, from one spot word per
/// underlying, and returns their aggregates alone. Each segment is priced as one batch of its
/// own contracts and summed in the parent module's order, so a segment's sums equal
/// [`sum_by_segment_words`](super::sum_by_segment_words)'s over the same prices bit for bit.
/// Checked first: `input`, `qty`, `spots` (one per segment) and `sums` sizes, the offsets'
/// contract, every selected id below the segment count, the selected segments' quantities
/// finite and their spots valid (the error names the first bad one).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{price_greeks_words, stage_words, synthetic_chain, IN_WORDS, OUT_WORDS};
/// use gmprt_kernels::segmented::{price_and_sum_selected_words, sum_by_segment_words, AGG_WORDS};
///
/// // 6 contracts in 3 segments (0..2, 2..3, 3..6), one of each held; the spots per segment.
/// let (n, qty, offsets, spots) = (6, [1.0f32; 6], [0u32, 2, 3, 6], [90.0f32, 100.0, 110.0]);
/// let mut chain = synthetic_chain(n, 9);
/// for (i, c) in chain.iter_mut().enumerate() {
///     c.spot = spots[offsets.iter().rposition(|&o| o as usize <= i).unwrap()];
/// }
/// let mut input = vec![0u32; n * IN_WORDS];
/// stage_words(&chain, &mut input);
/// // Segments 2 and 0 alone, in that order.
/// let mut some = [0f64; 2 * AGG_WORDS];
/// price_and_sum_selected_words(n, &input, &qty, &offsets, &spots, &[2, 0], &mut some).unwrap();
/// // The same sums as pricing the whole book and summing every segment.
/// let mut out = vec![0u32; n * OUT_WORDS];
/// price_greeks_words(n, &input, &mut out).unwrap();
/// let mut all = [0f64; 3 * AGG_WORDS];
/// sum_by_segment_words(n, &out, &qty, &offsets, &mut all).unwrap();
/// assert_eq!(some[..AGG_WORDS], all[2 * AGG_WORDS..]);
/// assert_eq!(some[AGG_WORDS..], all[..AGG_WORDS]);
/// // A selected segment that does not exist is named, and so is a bad spot.
/// let e = price_and_sum_selected_words(n, &input, &qty, &offsets, &spots, &[3], &mut some[..AGG_WORDS]).unwrap_err();
/// assert!(e.to_string().contains("selected segment"), "{e}");
/// let bad = [90.0, -1.0, 110.0];
/// let e = price_and_sum_selected_words(n, &input, &qty, &offsets, &bad, &[1], &mut some[..AGG_WORDS]).unwrap_err();
/// assert!(e.to_string().contains("spot"), "{e}");
/// ```
pub fn price_and_sum_selected_words(
    n: usize,
    input: &[u32],
    qty: &[f32],
    offsets: &[u32],
    spots: &[f32],
    sel: &[u32],
    sums: &mut [f64],
) -> Result<(), KernelError> {
    use crate::black_scholes::{price_greeks_words, IN_WORDS};
    let segments = offsets.len().saturating_sub(1);
    for (what, expected, got) in [
        ("input words", n * IN_WORDS, input.len()),
        ("qty", n, qty.len()),
        ("spots (one per segment)", segments, spots.len()),
        ("sums words", sel.len() * AGG_WORDS, sums.len()),
    ] {
        if got != expected {
            return Err(KernelError::Shape { what, expected, got });
        }
    }
    check_offsets(offsets, segments, n)?;
    if let Some(k) = sel.iter().position(|&s| s as usize >= segments) {
        let why = "a selected segment must be below the segment count";
        return Err(InvalidInput { field: "selected segment", index: k, value: sel[k].into(), why }.into());
    }
    // The selected segments' quantities only: a resident book is repriced a few segments at a
    // time, and checking all of it every time would cost more than pricing them. Their spots
    // are checked by the pricing below, but with the segment's first contract as the index:
    // name the segment instead.
    for &s in sel {
        let (lo, hi) = (offsets[s as usize] as usize, offsets[s as usize + 1] as usize);
        let spot = spots[s as usize];
        if lo < hi && !(spot.is_finite() && spot > 0.0) {
            let why = "a segment's spot must be positive and finite";
            return Err(
                InvalidInput { field: "segment spot", index: s as usize, value: spot.into(), why }.into()
            );
        }
        check_qty(&qty[lo..hi]).map_err(|e| match e {
            KernelError::Invalid(mut bad) => {
                bad.index += lo;
                KernelError::Invalid(bad)
            }
            e => e,
        })?;
    }
    let (mut tin, mut tout) = (Vec::new(), Vec::new());
    for (out, &s) in sums.chunks_exact_mut(AGG_WORDS).zip(sel) {
        let (lo, hi) = (offsets[s as usize] as usize, offsets[s as usize + 1] as usize);
        let m = hi - lo;
        tin.clear();
        // Column 0 (spot): the segment's spot for each of its contracts.
        tin.resize(m, spots[s as usize].to_bits());
        for c in 1..IN_WORDS {
            tin.extend_from_slice(&input[c * n + lo..c * n + hi]);
        }
        tout.clear();
        tout.resize(m * OUT_WORDS, 0);
        price_greeks_words(m, &tin, &mut tout)?;
        let cols = BsCols::from_words(m, &tout)?.to_array();
        out.copy_from_slice(&segment_sum(cols, &qty[lo..hi], &[0, m as u32], 0));
    }
    Ok(())
}
