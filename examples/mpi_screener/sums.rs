//! The screener's arithmetic, the same on every rank count: a slice of the book priced in
//! chunks of [`CHUNK`] on the Ps (or in one bulk launch on a device), each chunk's Greeks summed
//! in f64 in contract order, and the chunk sums folded in chunk order, so 1 rank and N ranks
//! add the same numbers in the same order (the bit-for-bit claim of the example's docs).

use gmprt::kernels::black_scholes::{price_greeks_words, IN_WORDS, OUT_WORDS};
use gmprt::offload::jobs::BlackScholes;
use gmprt::offload::Device;
use gmprt::runtime::Runtime;
use std::sync::Mutex;

/// Contracts per chunk: the grid every rank count shares (as `option_screener`'s way 2).
pub const CHUNK: usize = 16 * 1024;

/// Prices `m` contracts in column words (`IN_WORDS` columns of stride `m`) on `rt`'s Ps, in
/// chunks of [`CHUNK`], and returns each chunk's Greeks summed in f64 in contract order, 6 per
/// chunk, in chunk order.
pub fn chunk_sums(rt: &Runtime, m: usize, words: &[u32]) -> Vec<f64> {
    let sums: Vec<Mutex<[f64; 6]>> = (0..m.div_ceil(CHUNK)).map(|_| Mutex::new([0.0; 6])).collect();
    rt.handle().parallel_for(m, CHUNK, |r| {
        let len = r.len();
        // The chunk's own columns (stride `len`), the layout `price_greeks_words` reads.
        let mut input = Vec::with_capacity(len * IN_WORDS);
        for c in 0..IN_WORDS {
            input.extend_from_slice(&words[c * m + r.start..c * m + r.end]);
        }
        let mut out = vec![0u32; len * OUT_WORDS];
        price_greeks_words(len, &input, &mut out)
            .expect("staged words are valid contracts of matching lengths");
        *sums[r.start / CHUNK].lock().expect("no chunk panics while holding its sums") =
            column_sums(&out, len, 0..len);
    });
    sums.into_iter().flat_map(|s| s.into_inner().expect("chunk sums")).collect()
}

/// [`chunk_sums`] on `device`: one bulk launch of the `m` contracts (copies included), then
/// each chunk's Greeks summed on the host in f64 in contract order, as `chunk_sums` sums them.
pub fn chunk_sums_on(device: &Device, m: usize, words: &[u32]) -> Result<Vec<f64>, String> {
    if m == 0 {
        return Ok(Vec::new());
    }
    let (out, _) = device
        .run_bulk(&BlackScholes, m, words, m * IN_WORDS, m * OUT_WORDS, false)
        .map_err(|e| format!("pricing on {}: {e}", device.describe()))?;
    Ok((0..m).step_by(CHUNK).flat_map(|lo| column_sums(&out, m, lo..(lo + CHUNK).min(m))).collect())
}

/// The six output columns of `out` (column `g` at `g * n`, f32 bits), each summed in f64 over
/// the contracts `r`, in contract order: the one summation both paths share.
fn column_sums(out: &[u32], n: usize, r: std::ops::Range<usize>) -> [f64; 6] {
    let mut s = [0f64; 6];
    for (g, sum) in s.iter_mut().enumerate() {
        for &w in &out[g * n + r.start..g * n + r.end] {
            *sum += f64::from(f32::from_bits(w));
        }
    }
    s
}

/// The portfolio Greeks: the chunk sums added in chunk order.
pub fn fold(chunk_sums: &[f64]) -> [f64; 6] {
    let mut g = [0f64; 6];
    for c in chunk_sums.chunks_exact(6) {
        for (a, &b) in g.iter_mut().zip(c) {
            *a += b;
        }
    }
    g
}
