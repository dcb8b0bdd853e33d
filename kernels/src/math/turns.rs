//! sin and cos of a fraction of a turn, `sin 2πu` and `cos 2πu`, branch-free for vectorised
//! loops (the Box-Muller step of the Monte Carlo paths, `monte_carlo.rs`).
//!
//! Box-Muller draws its angle as `u` turns, `u` uniform in [0, 1), so the reduction is done on
//! `u` itself, exactly: `j = round(4u)` quarter turns and `r = u − j/4` ∈ [−1/8, 1/8] (for `u`
//! on a 2⁻²⁴ grid, as Philox's uniforms are, and for any `|u| < 2²²`, `r` is exact: both terms
//! are multiples of `r`'s own ulp). Then `x = 2π·r` ∈ [−π/4, π/4], the Cephes `sinf`/`cosf`
//! minimax polynomials on that interval (S. L. Moshier, Cephes Math Library 2.2, `sinf.c`),
//! and the quarter turns put back by swapping and negating (selects and a sign-bit xor, no
//! branch). No table, no call, so LLVM vectorises it with the rest of `math`.
//!
//! Error, measured against f64 over 2²⁴ + 1 points of [0, 1] by this module's test, for both
//! flavours: absolute ≤ 1.2e-7 (one f32 ulp at 1). Computing `sinf(2π·u)` instead first rounds
//! the angle, up to 2.4e-7 at 2π, an error this reduction does not make.

use super::fmadd;

/// 2π in f32 (the product `r·2π`, |r| ≤ 1/8, rounds to within 1e-7 of 2π·r: see the module doc).
const TAU: f32 = std::f32::consts::TAU;
/// 1.5·2²³: adding and subtracting it rounds a float of magnitude < 2²² to an integer (as `exp`).
const ROUND_MAGIC: f32 = 12_582_912.0;

/// `(sin 2πu, cos 2πu)` for finite `u` with `|u| < 2²²` (the module doc's error bound is for
/// `u` in [0, 1]). `FMA` as for the rest of `math` (`fmadd`).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::sin_cos_turn_with;
///
/// for u in [0.0f32, 0.125, 0.25, 0.3, 0.5, 0.75, 0.9999999] {
///     let (s, c) = sin_cos_turn_with::<true>(u);
///     let x = std::f64::consts::TAU * u as f64;
///     assert!((s as f64 - x.sin()).abs() < 1.2e-7 && (c as f64 - x.cos()).abs() < 1.2e-7, "{u}");
/// }
/// // Exact at the quarter turns.
/// assert_eq!(sin_cos_turn_with::<false>(0.25), (1.0, 0.0));
/// ```
#[inline(always)]
pub fn sin_cos_turn_with<const FMA: bool>(u: f32) -> (f32, f32) {
    let q = 4.0 * u; // exact: a power of two
    let jf = (q + ROUND_MAGIC) - ROUND_MAGIC;
    let r = fmadd::<FMA>(jf, -0.25, u); // exact (module doc), fused or not
    let x = r * TAU;
    let z = x * x;
    // Cephes sinf: x + x³·P(x²); cosf: 1 − x²/2 + x⁴·Q(x²), both on |x| ≤ π/4.
    let mut p = -1.951_529_589_1e-4_f32;
    p = fmadd::<FMA>(p, z, 8.332_160_873_6e-3);
    p = fmadd::<FMA>(p, z, -1.666_665_461_1e-1);
    let s = fmadd::<FMA>(p * z, x, x);
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

/// [`sin_cos_turn_with`] with [`DEFAULT_FMA`](super::DEFAULT_FMA).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::sin_cos_turn;
///
/// let (s, c) = sin_cos_turn(1.0 / 12.0); // 30°
/// assert!((s - 0.5).abs() < 1e-7 && (c - 0.75f32.sqrt()).abs() < 1e-7);
/// ```
#[inline(always)]
pub fn sin_cos_turn(u: f32) -> (f32, f32) {
    sin_cos_turn_with::<{ super::DEFAULT_FMA }>(u)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every point of the 2⁻²⁴ grid of [0, 1] (Philox's uniforms), both flavours.
    #[test]
    fn error_over_the_whole_uniform_grid() {
        for (name, f) in [
            ("fma", sin_cos_turn_with::<true> as fn(f32) -> (f32, f32)),
            ("nofma", sin_cos_turn_with::<false>),
        ] {
            let (mut ws, mut wc) = (0.0f64, 0.0f64);
            for i in 0..=(1u32 << 24) {
                let u = i as f32 / 16_777_216.0;
                let (s, c) = f(u);
                let x = std::f64::consts::TAU * u as f64;
                ws = ws.max((s as f64 - x.sin()).abs());
                wc = wc.max((c as f64 - x.cos()).abs());
            }
            println!("sin_cos_turn ({name}): max abs error sin {ws:.3e}, cos {wc:.3e}");
            assert!(ws <= 1.2e-7 && wc <= 1.2e-7, "{name}: sin {ws:e}, cos {wc:e}");
        }
    }

    /// Outside [0, 1): negative turns and whole turns added give the same values.
    #[test]
    fn whole_turns_and_signs() {
        for u in [0.1f32, 0.37, 0.62, 0.88] {
            let (s, c) = sin_cos_turn(u);
            let (s1, c1) = sin_cos_turn(u + 3.0);
            assert!((s - s1).abs() < 1e-6 && (c - c1).abs() < 1e-6, "{u}");
            let (sn, cn) = sin_cos_turn(-u);
            assert!((s + sn).abs() < 1e-7 && (c - cn).abs() < 1e-7, "{u}");
        }
    }
}
