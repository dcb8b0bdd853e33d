//! The desk's end-of-run checks: the risk per underlying against an f64 reference, and the
//! Monte Carlo share against Black-Scholes' exact price, each reduced to its worst case and
//! where it was (`trading_desk` prints both and fails the run past them).

use super::book::{Book, McValue};
use gmprt::kernels::black_scholes::reference;
use gmprt::kernels::black_scholes::tolerance::{tolerance, CPU_MATH, CUDA_MATH};
use gmprt::kernels::segmented::GreekSums;

/// The check after a run: each underlying's sums against the f64 reference on the final
/// spots, within the kernels' own tolerance (summed over the segment's positions) plus the
/// f64 summation's rounding. Returns the worst |error| / tolerance over every underlying and
/// output (≤ 1 passes), and where it was.
pub fn check_against_reference(book: &Book, sums: &[GreekSums], cuda: bool) -> (f64, String) {
    let math = if cuda { CUDA_MATH } else { CPU_MATH };
    let mut worst = (0.0f64, String::from("no contracts"));
    debug_assert_eq!(sums.len(), book.underlyings());
    for (u, got) in sums.iter().enumerate() {
        let r = book.offsets[u] as usize..book.offsets[u + 1] as usize;
        let len = r.len() as f64;
        let (mut want, mut tol, mut mag) = ([0.0f64; 6], [0.0f64; 6], [0.0f64; 6]);
        for i in r {
            let c = book.contract(i, book.spot[i]);
            let q = book.qty[i] as f64;
            let (g, t) = (reference(&c).to_array(), tolerance(&c, &math).to_array());
            for k in 0..6 {
                want[k] += q * g[k];
                tol[k] += q.abs() * t[k];
                mag[k] += (q * g[k]).abs();
            }
        }
        let got = got.to_array();
        for k in 0..6 {
            // f32 products are exact in f64; each of the `len` additions rounds by at most
            // ε₆₄ of the running magnitude, on both sides.
            let allowed = tol[k] + 2.0 * len * f64::EPSILON * mag[k] + 1e-12;
            let ratio = (got[k] - want[k]).abs() / allowed;
            if ratio > worst.0 || worst.1 == "no contracts" {
                worst = (
                    ratio,
                    format!(
                        "underlying {u}, {}: {} vs {} (allowed ±{allowed:.3e})",
                        NAMES[k], got[k], want[k]
                    ),
                );
            }
        }
    }
    worst
}

const NAMES: [&str; 6] = ["price", "delta", "gamma", "vega", "theta", "rho"];

/// The Monte Carlo share's check: each underlying's value against the f64 Black-Scholes price
/// of the same contracts (the paths' payoff is European, so that is their exact expectation),
/// as a z-score. Returns the largest |z| (≤ 5 passes) and where it was.
pub fn check_paths(book: &Book, values: &[McValue]) -> (f64, String) {
    let mut worst = (0.0f64, String::from("no Monte Carlo contracts"));
    for (u, v) in values.iter().enumerate() {
        let start = book.offsets[u] as usize;
        let r = start..start + book.mc[u] as usize;
        if r.is_empty() {
            continue;
        }
        let want: f64 =
            r.map(|i| book.qty[i] as f64 * reference(&book.contract(i, book.spot[i])).price).sum();
        let z = (v.value - want).abs() / v.variance.sqrt().max(1e-12);
        if z > worst.0 || worst.1.starts_with("no ") {
            worst = (
                z,
                format!(
                    "underlying {u}: {:.2} vs Black-Scholes {want:.2} (σ {:.2})",
                    v.value,
                    v.variance.sqrt()
                ),
            );
        }
    }
    worst
}
