//! Monte Carlo on Philox streams: π by sampling the unit square, and a European option by
//! simulated terminal prices (compared with Black-Scholes). STUB (kernels helper).
//!
//! π: block `b` of stream [`TAG_PI`](crate::philox::TAG_PI) gives two points, `(w0, w1)` and
//! `(w2, w3)`, as 24-bit integers `x = w >> 8`; a point hits when `x² + y² < 2⁴⁸`, computed
//! exactly in u64, so CPU and GPU counts are identical. Samples = 2 × blocks.
//!
//! Paths: block `b` of stream [`TAG_PATHS`](crate::philox::TAG_PATHS) gives four normals by
//! Box-Muller on `(unit_open(w0), unit(w1))` and `(unit_open(w2), unit(w3))` (f32), i.e. four
//! paths; each path's payoff is discounted and summed in f64. Paths = 4 × blocks.
use crate::black_scholes::Contract;

/// Hits among the `2 * blocks` points of blocks `first_block .. first_block + blocks`.
pub fn pi_hits(seed: u64, first_block: u64, blocks: u64) -> u64 {
    let _ = (seed, first_block, blocks);
    todo!()
}

/// A π estimate: `4 * hits / samples`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PiEstimate {
    /// Points inside the quarter circle.
    pub hits: u64,
    /// Points drawn.
    pub samples: u64,
}

impl PiEstimate {
    /// 4 · hits / samples.
    pub fn pi(&self) -> f64 {
        4.0 * self.hits as f64 / self.samples as f64
    }
}

/// Sum of discounted payoffs and of their squares over paths of blocks
/// `first_block .. first_block + blocks`.
pub fn option_paths_sum(seed: u64, c: &Contract, first_block: u64, blocks: u64) -> (f64, f64) {
    let _ = (seed, c, first_block, blocks);
    todo!()
}

/// A Monte Carlo price with its standard error.
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
pub fn mc_price(sum: f64, sum_sq: f64, paths: u64) -> McPrice {
    let _ = (sum, sum_sq, paths);
    todo!()
}
