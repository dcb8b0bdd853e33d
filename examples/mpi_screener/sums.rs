//! The screener's arithmetic, the same on every rank count: a slice of the book priced in
//! chunks of [`CHUNK`] on the Ps (or in one bulk launch on a device), each chunk's Greeks summed
//! in f64 in contract order, and the chunk sums folded in chunk order, so 1 rank and N ranks
//! add the same numbers in the same order (the bit-for-bit claim of the example's docs).

use gmprt::kernels::black_scholes::{price_greeks, BsIn, BsOut, IN_WORDS, OUT_WORDS};
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
    let col = |c: usize| &words[c * m..(c + 1) * m];
    let f = |w: &[u32]| -> Vec<f32> { w.iter().map(|&x| f32::from_bits(x)).collect() };
    rt.handle().parallel_for(m, CHUNK, |r| {
        let len = r.len();
        let (spot, strike, t) = (f(&col(0)[r.clone()]), f(&col(1)[r.clone()]), f(&col(2)[r.clone()]));
        let (rate, vol) = (f(&col(3)[r.clone()]), f(&col(4)[r.clone()]));
        let input =
            BsIn { spot: &spot, strike: &strike, t: &t, rate: &rate, vol: &vol, kind: &col(5)[r.clone()] };
        let mut o = vec![0f32; 6 * len];
        let (price, rest) = o.split_at_mut(len);
        let (delta, rest) = rest.split_at_mut(len);
        let (gamma, rest) = rest.split_at_mut(len);
        let (vega, rest) = rest.split_at_mut(len);
        let (theta, rho) = rest.split_at_mut(len);
        price_greeks(&input, &mut BsOut { price, delta, gamma, vega, theta, rho })
            .expect("staged words are valid contracts of matching lengths");
        let mut s = [0f64; 6];
        for (g, out) in s.iter_mut().zip(o.chunks_exact(len)) {
            for &x in out {
                *g += f64::from(x);
            }
        }
        *sums[r.start / CHUNK].lock().expect("no chunk panics while holding its sums") = s;
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
    let mut sums = Vec::with_capacity(6 * m.div_ceil(CHUNK));
    for lo in (0..m).step_by(CHUNK) {
        let hi = (lo + CHUNK).min(m);
        for g in 0..6 {
            let mut s = 0f64;
            for &w in &out[g * m + lo..g * m + hi] {
                s += f64::from(f32::from_bits(w));
            }
            sums.push(s);
        }
    }
    Ok(sums)
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
