//! sin and cos of an f32 angle, branch-free for vectorised loops (the Box-Muller step of the
//! Monte Carlo paths, `monte_carlo.rs`).
//!
//! Cody-Waite reduction by quarter turns, as Cephes `sinf`/`cosf` (S. L. Moshier, Cephes Math
//! Library 2.2, `sinf.c`): `j = round(x·2/π)`, `r = x − j·π/2` with π/2 in three parts, the
//! first with 8 significant bits so that `j·DP1` and the first subtraction are exact for
//! `|j| < 2¹⁵`; then the Cephes minimax polynomials for sin and cos on |r| ≤ π/4, and the quarter
//! turns put back by swapping and negating (selects and a sign-bit xor, no branch). No table, no
//! call, so LLVM vectorises it with the rest of `math`.
//!
//! Domain: |x| ≤ 8192 (beyond it the reduction loses accuracy, as Cephes says of its own).
//! Error, measured against f64 by this module's test on the angles the Monte Carlo draws,
//! `fl(2π·u)` for every `u` of Philox's 2⁻²⁴ grid of [0, 1), in both flavours: absolute
//! ≤ 1.2e-7 (one f32 ulp at 1). The angle is the f32 product, rounded, as the CUDA source
//! computes it (`GMPRT_TWO_PI_F * u`), so the two sides differ only by their `sin`/`cos`.

use super::{fmadd, ROUND_MAGIC};

/// 2/π, for the quarter-turn count.
const FRAC_2_PI: f32 = std::f32::consts::FRAC_2_PI;
/// π/2 in three parts (twice Cephes' `DP1..DP3` for π/4): `DP1` has 8 significant bits.
const DP1: f32 = 1.570_312_5;
const DP2: f32 = 4.837_512_969_970_703_125e-4;
const DP3: f32 = 7.549_789_954_891_882_16e-8;

/// `(sin x, cos x)` for finite `|x| ≤ 8192` (the module doc's bound is for x in [0, 2π]). `FMA`
/// as for the rest of `math` (`fmadd`).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::sin_cos_with;
///
/// for x in [0.0f32, 0.5, 1.0, 2.0, 3.14159, 4.0, 5.5, 6.2831855] {
///     let (s, c) = sin_cos_with::<true>(x);
///     let (ws, wc) = (x as f64).sin_cos();
///     assert!((s as f64 - ws).abs() < 1.2e-7 && (c as f64 - wc).abs() < 1.2e-7, "{x}");
/// }
/// assert_eq!(sin_cos_with::<false>(0.0), (0.0, 1.0));
/// ```
#[inline(always)]
pub fn sin_cos_with<const FMA: bool>(x: f32) -> (f32, f32) {
    let jf = (x * FRAC_2_PI + ROUND_MAGIC) - ROUND_MAGIC;
    let r = fmadd::<FMA>(jf, -DP1, x); // exact (module doc), fused or not
    let r = fmadd::<FMA>(jf, -DP2, r);
    let r = fmadd::<FMA>(jf, -DP3, r);
    let z = r * r;
    // Cephes sinf: r + r³·P(r²); cosf: 1 − r²/2 + r⁴·Q(r²), both on |r| ≤ π/4.
    let mut p = -1.951_529_589_1e-4_f32;
    p = fmadd::<FMA>(p, z, 8.332_160_873_6e-3);
    p = fmadd::<FMA>(p, z, -1.666_665_461_1e-1);
    let s = fmadd::<FMA>(p * z, r, r);
    let mut q = 2.443_315_711_809_948e-5_f32;
    q = fmadd::<FMA>(q, z, -1.388_731_625_493_765e-3);
    q = fmadd::<FMA>(q, z, 4.166_664_568_298_827e-2);
    let c = fmadd::<FMA>(q * z, z, fmadd::<FMA>(-0.5, z, 1.0));
    // Quarter turns: j = 0: (s, c); 1: (c, −s); 2: (−s, −c); 3: (−c, s).
    let j = jf as i32 as u32;
    let (a, b) = if j & 1 != 0 { (c, s) } else { (s, c) };
    let sin = f32::from_bits(a.to_bits() ^ ((j & 2) << 30));
    let cos = f32::from_bits(b.to_bits() ^ ((j.wrapping_add(1) & 2) << 30));
    (sin, cos)
}

/// [`sin_cos_with`] with [`DEFAULT_FMA`](super::DEFAULT_FMA).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::sin_cos;
///
/// let (s, c) = sin_cos(std::f32::consts::FRAC_PI_6);
/// assert!((s - 0.5).abs() < 1e-7 && (c - 0.75f32.sqrt()).abs() < 1e-7);
/// ```
#[inline(always)]
pub fn sin_cos(x: f32) -> (f32, f32) {
    sin_cos_with::<{ super::DEFAULT_FMA }>(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every angle the Monte Carlo draws, `fl(2π·u)` for `u` on the 2⁻²⁴ grid of [0, 1), both
    /// flavours, against f64 of the same f32 angle.
    #[test]
    fn error_over_every_box_muller_angle() {
        type F = fn(f32) -> (f32, f32);
        for (name, f) in [("fma", sin_cos_with::<true> as F), ("nofma", sin_cos_with::<false>)] {
            let (mut ws, mut wc) = (0.0f64, 0.0f64);
            for i in 0..(1u32 << 24) {
                let x = std::f32::consts::TAU * (i as f32 / 16_777_216.0);
                let (s, c) = f(x);
                let (es, ec) = (x as f64).sin_cos();
                ws = ws.max((s as f64 - es).abs());
                wc = wc.max((c as f64 - ec).abs());
            }
            println!("sin_cos ({name}): max abs error sin {ws:.3e}, cos {wc:.3e}");
            assert!(ws <= 1.2e-7 && wc <= 1.2e-7, "{name}: sin {ws:e}, cos {wc:e}");
        }
    }

    /// Odd and even, whole turns, and the domain's far end.
    #[test]
    fn symmetry_turns_and_large_angles() {
        for x in [0.3f32, 1.2, 2.9, 4.4, 6.0] {
            let (s, c) = sin_cos(x);
            let (sn, cn) = sin_cos(-x);
            assert!((s + sn).abs() < 1e-7 && (c - cn).abs() < 1e-7, "{x}");
        }
        for x in [100.0f32, 1000.5, 8191.0] {
            let (s, c) = sin_cos(x);
            let (ws, wc) = (x as f64).sin_cos();
            assert!((s as f64 - ws).abs() < 5e-7 && (c as f64 - wc).abs() < 5e-7, "{x}: {s} {c}");
        }
    }
}
