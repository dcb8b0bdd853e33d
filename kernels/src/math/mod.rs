//! Branch-free f32 approximations of `exp`, `ln`, `sin`/`cos` and the standard normal CDF Φ and
//! PDF φ, built from `f32::to_bits`/`from_bits` exponent tricks and short polynomials so that
//! LLVM can vectorise them inside a loop (every function is `#[inline(always)]`, with no table
//! lookups, no calls and no data-dependent branches — only selects).
//!
//! Each function comes in two flavours, chosen by the const parameter `FMA` of the `*_with`
//! forms: `FMA = true` evaluates polynomials with [`f32::mul_add`] (a single `vfmadd` inside
//! functions compiled with `#[target_feature(enable = "fma")]`, but a slow libm call in code
//! without that feature), `FMA = false` with a separate multiply and add. The plain forms
//! ([`exp`], [`ln`], [`sin_cos`], [`norm_cdf`], [`norm_pdf`]) pick `FMA` from the crate's
//! compile-time target features. The two flavours differ by an ulp or so; both meet the bounds below.
//!
//! Documented maximum errors, measured against f64 (`libm`) over dense sweeps by this module's
//! tests, for both flavours (ε = 2⁻²⁴ ≈ 5.96e-8 is half an f32 ulp at 1):
//!
//! | function | domain | bound |
//! |---|---|---|
//! | [`exp`] | x ∈ [-87.3, 88.3] | relative 1.2e-7 (measured 8.4e-8) |
//! | [`ln`] | x ∈ [0.5, 2] | absolute 5e-8 (measured 3.9e-8) |
//! | [`ln`] | x ∈ [1e-30, 1e30] outside [0.5, 2] | relative 1e-7 (measured 8.0e-8) |
//! | [`norm_pdf`] | x ∈ [-13, 13] | relative 2.5e-7 (measured 1.7e-7) |
//! | [`norm_cdf`] | x ∈ [-13, 0] | relative 5e-7 (measured 4.4e-7; the lower tail, Φ(-13) ≈ 6e-39) |
//! | [`norm_cdf`] | x ∈ [0, ∞) | absolute 2.5e-7 (measured 2.2e-7; Φ(x) = 1 − Φ(−x)) |
//! | [`sin_cos`] | x = 2π·u in f32, u ∈ [0, 1) on a 2⁻²⁴ grid (`trig.rs`) | absolute 1.2e-7 (measured 9.3e-8) |
//!
//! The Φ bounds are dominated by the rounding of the product φ·t·P(t) near x = 0 (about 1 ulp
//! of each factor), not by the fit (2.7e-8).
//!
//! Outside the domains: `exp` returns exactly 0 below −87.3365 (no subnormals) and clamps its
//! argument at 88.3763 (ln 2^127.5) above, so it returns at most 2.4e38, never ∞; φ and
//! the lower tail of Φ flush to exactly 0 for |x| > 13.2 and Φ is exactly 1 above. `ln` is
//! meaningless for x ≤ 0, subnormal, ∞ or NaN (its callers pass positive normal numbers).
//!
//! # Where the numbers come from
//!
//! * `exp`: Cody-Waite reduction x = n·ln2 + r with the two-part ln 2 of Cephes `expf`
//!   (`C1 = 0.693359375` has 9 significant bits, so n·C1 and x − n·C1 are exact), then the
//!   Cephes `expf` minimax polynomial for e^r on |r| ≤ ln2/2 (S. L. Moshier, Cephes Math
//!   Library 2.2, `expf.c`), and 2ⁿ built in the exponent field. Rounding to the nearest n uses
//!   the 1.5·2²³ "magic number" trick (no `round` call, so it vectorises on plain SSE2).
//! * `ln`: the mantissa is brought into [√½, √2) by offsetting the bit pattern by that of √½
//!   (the musl `logf` decomposition), then the Cephes `logf` polynomial (`logf.c`, same
//!   library) in f = m − 1, with the same two-part ln 2.
//! * φ(x) = e^(−x²/2)/√(2π): x² loses up to half an ulp of a number up to 169, i.e. up to 1e-5
//!   absolute in the exponent, which would be a 1e-5 relative error in the far tails. So |x| is
//!   split as `h + l` with `h` = |x| rounded down to 12 significant bits: h² is exact in f32
//!   and −x²/2 = −h²/2 − l(|x| + h)/2 is handed to the exponential as a (high, low) pair; the
//!   low part is added after the Cody-Waite reduction, where it is small.
//! * Φ: for a = |x|, the upper tail is Q(a) = φ(a)·M(a), with the Mills ratio M written as
//!   M(a) = t·P(t), t = 1/(1 + 0.3·a), P a degree-9 polynomial. P is the Chebyshev
//!   interpolant (`mpmath.chebyfit(g, [1/(1 + 0.3·14), 1], 10)` at 40 digits) of
//!   g(t) = M(a(t))/t over a ∈ [0, 14]; its relative error is 4.5e-9 before and 2.7e-8 after
//!   rounding the coefficients to f32 (evaluated in f64). Φ(x) = Q(|x|) for x < 0 and
//!   1 − Q(|x|) for x ≥ 0. Because Q shares φ's exponential, [`norm_cdf_pdf_with`] returns both
//!   for the price of one `exp`. The fit stops at a = 14 because φ(14) already underflows f32.
// The polynomial coefficients are written as their sources publish them (Cephes) or as the
// fit printed them; some have a digit more than f32 holds, and round to the intended f32.
#![allow(clippy::excessive_precision)]

mod trig;
pub use trig::{sin_cos, sin_cos_with};

/// Multiply-add `a·b + c`: fused when `FMA` (one rounding), else two roundings.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::fmadd;
///
/// assert_eq!(fmadd::<false>(2.0, 3.0, 1.0), 7.0);
/// // a·a = 1 + 2⁻¹¹ + 2⁻²⁴: the unfused product rounds the 2⁻²⁴ away, the fused one keeps it.
/// let a = 1.0 + 2f32.powi(-12);
/// let c = -(1.0 + 2f32.powi(-11));
/// assert_eq!(fmadd::<false>(a, a, c), 0.0);
/// assert_eq!(fmadd::<true>(a, a, c), 2f32.powi(-24));
/// ```
#[inline(always)]
pub fn fmadd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// Whether the plain (non-`_with`) functions use fused multiply-adds: true when the crate is
/// compiled with the `fma` target feature (e.g. `-C target-cpu=native` on a recent x86).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::{exp, exp_with, DEFAULT_FMA};
///
/// assert_eq!(exp(0.7), exp_with::<DEFAULT_FMA>(0.7));
/// ```
pub const DEFAULT_FMA: bool = cfg!(target_feature = "fma");

/// 1.5·2²³: adding it to |y| < 2²² rounds y to an integer (round-half-even) in the low mantissa bits.
const ROUND_MAGIC: f32 = 12_582_912.0;
/// log₂ e.
const LOG2E: f32 = std::f32::consts::LOG2_E;
/// High part of ln 2 (Cephes): 355/512, 9 significant bits.
const LN2_C1: f32 = 0.693_359_375;
/// ln 2 − `LN2_C1` (Cephes).
const LN2_C2: f32 = -2.121_944_4e-4;
/// ln(f32::MIN_POSITIVE) rounded up: below it the result flushes to 0.
const EXP_LO: f32 = -87.336_54;
/// ln(2^127.5): keeps n ≤ 127 so that 2ⁿ is one normal f32 (e^x ≤ 2.4e38 < f32::MAX).
const EXP_HI: f32 = 88.376_26;
/// 1/√(2π).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::{norm_pdf, INV_SQRT_2PI};
///
/// assert!((INV_SQRT_2PI as f64 - 1.0 / (2.0 * std::f64::consts::PI).sqrt()).abs() < 3e-8);
/// assert!((norm_pdf(0.0) - INV_SQRT_2PI).abs() < 1e-7);
/// ```
pub const INV_SQRT_2PI: f32 = 0.398_942_3;

/// e^(hi + lo) for a pair whose sum is the argument, `|lo|` small (≤ 0.05): `lo` is added after
/// the range reduction, so it carries bits `hi` cannot. `hi` may be any value: below
/// `EXP_LO` the result is +0, above `EXP_HI` it is e^`EXP_HI` ≈ 2.4e38.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::exp_hl_with;
///
/// // The low part carries what `hi` cannot: e^(1 + 1e-3).
/// let got = exp_hl_with::<false>(1.0, 1e-3) as f64;
/// assert!((got / 1.001f64.exp() - 1.0).abs() < 2e-7);
/// // Underflow flushes to exactly 0; overflow clamps below f32::MAX.
/// assert_eq!(exp_hl_with::<false>(-100.0, 0.0), 0.0);
/// assert!(exp_hl_with::<false>(1000.0, 0.0).is_finite());
/// ```
#[inline(always)]
pub fn exp_hl_with<const FMA: bool>(hi: f32, lo: f32) -> f32 {
    let x = hi.clamp(EXP_LO, EXP_HI);
    // n = round(x / ln 2) by the magic-number trick; the integer sits in the low bits of `k`.
    let k = fmadd::<FMA>(x, LOG2E, ROUND_MAGIC);
    let n = k - ROUND_MAGIC;
    let ni = (k.to_bits() as i32).wrapping_sub(ROUND_MAGIC.to_bits() as i32);
    // Cody-Waite: x − n·C1 is exact (see the module docs); then the small corrections.
    let r = fmadd::<FMA>(n, -LN2_C1, x);
    let r = fmadd::<FMA>(n, -LN2_C2, r) + lo;
    // Cephes expf: e^r ≈ 1 + r + r²·P(r) on |r| ≤ ln2/2, relative error ~1e-7.
    let mut p = 1.987_569_2e-4_f32;
    p = fmadd::<FMA>(p, r, 1.398_199_9e-3);
    p = fmadd::<FMA>(p, r, 8.333_452e-3);
    p = fmadd::<FMA>(p, r, 4.166_579_6e-2);
    p = fmadd::<FMA>(p, r, 1.666_666_5e-1);
    p = fmadd::<FMA>(p, r, 5.000_000_1e-1);
    let er = fmadd::<FMA>(p, r * r, r) + 1.0;
    // 2^n in the exponent field: the clamp keeps n in [−126, 127], a normal number.
    let scale = f32::from_bits(((ni + 127) as u32) << 23);
    let v = er * scale;
    if hi < EXP_LO {
        0.0
    } else {
        v
    }
}

/// e^x (see the module table for the error bound; clamped, never ∞ or NaN for non-NaN x).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::exp_with;
///
/// for x in [-20.0f32, -1.0, 0.0, 0.5, 10.0, 80.0] {
///     let (fused, plain) = (exp_with::<true>(x) as f64, exp_with::<false>(x) as f64);
///     let want = (x as f64).exp();
///     assert!((fused / want - 1.0).abs() < 1.2e-7 && (plain / want - 1.0).abs() < 1.2e-7, "{x}");
/// }
/// ```
#[inline(always)]
pub fn exp_with<const FMA: bool>(x: f32) -> f32 {
    exp_hl_with::<FMA>(x, 0.0)
}

/// e^x with [`DEFAULT_FMA`].
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::exp;
///
/// assert_eq!(exp(0.0), 1.0);
/// assert!((exp(1.0) as f64 / std::f64::consts::E - 1.0).abs() < 1.2e-7);
/// assert_eq!(exp(-90.0), 0.0); // below ln(f32::MIN_POSITIVE): no subnormals
/// ```
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    exp_with::<DEFAULT_FMA>(x)
}

/// Natural logarithm of a positive normal f32 (see the module table).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::ln_with;
///
/// for x in [0.5f32, 0.9, 1.1, 2.0] {
///     let want = (x as f64).ln();
///     assert!((ln_with::<true>(x) as f64 - want).abs() < 5e-8, "{x}");
///     assert!((ln_with::<false>(x) as f64 - want).abs() < 5e-8, "{x}");
/// }
/// ```
#[inline(always)]
pub fn ln_with<const FMA: bool>(x: f32) -> f32 {
    // Offset the bits by those of √½ so that the exponent field counts from [√½, √2).
    const SQRT_HALF_BITS: i32 = 0x3f35_04f3;
    let ix = (x.to_bits() as i32).wrapping_sub(SQRT_HALF_BITS);
    let e = (ix >> 23) as f32;
    let m = f32::from_bits(((ix & 0x007f_ffff) + SQRT_HALF_BITS) as u32);
    let f = m - 1.0;
    let z = f * f;
    // Cephes logf: ln(1+f) ≈ f − f²/2 + f³·P(f) on f ∈ [√½ − 1, √2 − 1].
    let mut p = 7.037_683_6e-2_f32;
    p = fmadd::<FMA>(p, f, -1.151_461e-1);
    p = fmadd::<FMA>(p, f, 1.167_699_9e-1);
    p = fmadd::<FMA>(p, f, -1.242_014_1e-1);
    p = fmadd::<FMA>(p, f, 1.424_932_3e-1);
    p = fmadd::<FMA>(p, f, -1.666_805_8e-1);
    p = fmadd::<FMA>(p, f, 2.000_071_4e-1);
    p = fmadd::<FMA>(p, f, -2.499_999_4e-1);
    p = fmadd::<FMA>(p, f, 3.333_333_1e-1);
    let y = fmadd::<FMA>(p * f, z, fmadd::<FMA>(e, LN2_C2, -0.5 * z));
    fmadd::<FMA>(e, LN2_C1, f + y)
}

/// ln x with [`DEFAULT_FMA`].
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::ln;
///
/// assert_eq!(ln(1.0), 0.0);
/// assert!((ln(2.0) as f64 - std::f64::consts::LN_2).abs() < 5e-8);
/// assert!((ln(1e20) as f64 / 1e20f64.ln() - 1.0).abs() < 1e-7);
/// ```
#[inline(always)]
pub fn ln(x: f32) -> f32 {
    ln_with::<DEFAULT_FMA>(x)
}

/// φ(|x|) with the split exponent (see the module docs), for `a = |x|` already clamped.
#[inline(always)]
fn pdf_abs<const FMA: bool>(a: f32) -> f32 {
    // h = a with the low 12 mantissa bits cleared: 12 significant bits, so h·h is exact.
    let h = f32::from_bits(a.to_bits() & 0xffff_f000);
    let l = a - h; // exact
    let hi = -0.5 * (h * h); // exact
    let lo = -0.5 * (l * (a + h)); // −(a² − h²)/2, |lo| ≤ 2⁻¹²·a² ≤ 0.05 for a ≤ 14
    exp_hl_with::<FMA>(hi, lo) * INV_SQRT_2PI
}

/// Largest |x| the normal functions look at: φ(14) is already below f32's normal range.
const NORM_CLAMP: f32 = 14.0;

/// φ(x) = e^(−x²/2)/√(2π).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::{norm_pdf_f64, norm_pdf_with};
///
/// for x in [-3.0f32, -0.5, 1.0, 8.0] {
///     let want = norm_pdf_f64(x as f64);
///     assert!((norm_pdf_with::<false>(x) as f64 / want - 1.0).abs() < 2.5e-7, "{x}");
/// }
/// assert_eq!(norm_pdf_with::<true>(20.0), 0.0); // below f32's normal range
/// ```
#[inline(always)]
pub fn norm_pdf_with<const FMA: bool>(x: f32) -> f32 {
    pdf_abs::<FMA>(x.abs().min(NORM_CLAMP))
}

/// φ(x) with [`DEFAULT_FMA`].
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::{norm_pdf, norm_pdf_f64};
///
/// assert_eq!(norm_pdf(1.5), norm_pdf(-1.5));
/// assert!((norm_pdf(1.0) as f64 / norm_pdf_f64(1.0) - 1.0).abs() < 2.5e-7);
/// ```
#[inline(always)]
pub fn norm_pdf(x: f32) -> f32 {
    norm_pdf_with::<DEFAULT_FMA>(x)
}

/// (Φ(x), Φ(−x), φ(x)) for one exponential: both tails are accurate (Φ(−x) = 1 − Φ(x) without
/// the cancellation).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::{norm_cdf2_pdf_with, norm_cdf_f64};
///
/// // Deep in the lower tail: Φ(−5) ≈ 2.87e-7 keeps its relative accuracy, and 1 − Φ(5) too.
/// let (lo, hi, _) = norm_cdf2_pdf_with::<false>(-5.0);
/// assert!((lo as f64 / norm_cdf_f64(-5.0) - 1.0).abs() < 5e-7);
/// let (_, upper, _) = norm_cdf2_pdf_with::<false>(5.0);
/// assert_eq!(upper, lo);
/// assert!((hi as f64 - norm_cdf_f64(5.0)).abs() < 2.5e-7);
/// ```
#[inline(always)]
pub fn norm_cdf2_pdf_with<const FMA: bool>(x: f32) -> (f32, f32, f32) {
    let a = x.abs().min(NORM_CLAMP);
    let pdf = pdf_abs::<FMA>(a);
    let t = 1.0 / fmadd::<FMA>(0.3, a, 1.0);
    // Mills-ratio polynomial (degree 9, see the module docs for the fit).
    let mut p = -5.242_452_5e-2_f32;
    p = fmadd::<FMA>(p, t, 2.858_565_7e-1);
    p = fmadd::<FMA>(p, t, -5.816_342_2e-1);
    p = fmadd::<FMA>(p, t, 4.936_570_7e-1);
    p = fmadd::<FMA>(p, t, -2.099_114_4e-1);
    p = fmadd::<FMA>(p, t, 2.468_546_1e-1);
    p = fmadd::<FMA>(p, t, 1.944_869_4e-1);
    p = fmadd::<FMA>(p, t, 2.767_447_5e-1);
    p = fmadd::<FMA>(p, t, 2.996_718_3e-1);
    p = fmadd::<FMA>(p, t, 3.000_125_6e-1);
    let q = pdf * (t * p); // upper tail Q(a) = Φ(−a)
    let big = 1.0 - q;
    if x < 0.0 {
        (q, big, pdf)
    } else {
        (big, q, pdf)
    }
}

/// (Φ(x), φ(x)) for one exponential.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::{norm_cdf2_pdf_with, norm_cdf_pdf_with};
///
/// let (cdf, pdf) = norm_cdf_pdf_with::<true>(0.3);
/// let (cdf2, _, pdf2) = norm_cdf2_pdf_with::<true>(0.3);
/// assert_eq!((cdf, pdf), (cdf2, pdf2));
/// ```
#[inline(always)]
pub fn norm_cdf_pdf_with<const FMA: bool>(x: f32) -> (f32, f32) {
    let (c, _, p) = norm_cdf2_pdf_with::<FMA>(x);
    (c, p)
}

/// Φ(x), the standard normal CDF (see the module table for the tail accuracy).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::{norm_cdf_f64, norm_cdf_with};
///
/// for x in [-8.0f32, -1.0, 0.0, 1.96, 6.0] {
///     let want = norm_cdf_f64(x as f64);
///     assert!((norm_cdf_with::<true>(x) as f64 - want).abs() <= 2.5e-7, "{x}");
/// }
/// assert_eq!(norm_cdf_with::<false>(20.0), 1.0);
/// ```
#[inline(always)]
pub fn norm_cdf_with<const FMA: bool>(x: f32) -> f32 {
    norm_cdf2_pdf_with::<FMA>(x).0
}

/// Φ(x) with [`DEFAULT_FMA`].
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::norm_cdf;
///
/// assert!((norm_cdf(0.0) - 0.5).abs() < 2.5e-7);
/// assert!((norm_cdf(1.959_964) - 0.975).abs() < 3e-7); // 2.5e-7 plus x's rounding
/// ```
#[inline(always)]
pub fn norm_cdf(x: f32) -> f32 {
    norm_cdf_with::<DEFAULT_FMA>(x)
}

/// Φ(x) in f64 from `libm::erfc` (full double accuracy in both tails): the tests' yardstick.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::norm_cdf_f64;
///
/// assert_eq!(norm_cdf_f64(0.0), 0.5);
/// assert!((norm_cdf_f64(1.959_963_984_540_054) - 0.975).abs() < 1e-14);
/// // erfc keeps the far tail: Φ(−10) ≈ 7.62e-24, not 0.
/// assert!((norm_cdf_f64(-10.0) / 7.619_853_024_160_527e-24 - 1.0).abs() < 1e-12);
/// ```
pub fn norm_cdf_f64(x: f64) -> f64 {
    0.5 * libm::erfc(-x * std::f64::consts::FRAC_1_SQRT_2)
}

/// φ(x) in f64.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::math::norm_pdf_f64;
///
/// assert_eq!(norm_pdf_f64(0.0), 1.0 / (2.0 * std::f64::consts::PI).sqrt());
/// assert_eq!(norm_pdf_f64(2.0), norm_pdf_f64(-2.0));
/// ```
pub fn norm_pdf_f64(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dense sweep: `n + 1` evenly spaced points of [lo, hi] as f32.
    fn sweep(lo: f64, hi: f64, n: usize) -> impl Iterator<Item = f32> {
        (0..=n).map(move |i| (lo + (hi - lo) * i as f64 / n as f64) as f32)
    }

    /// Max relative error of `f` vs `g` over `xs`.
    fn max_rel(xs: impl Iterator<Item = f32>, f: impl Fn(f32) -> f32, g: impl Fn(f64) -> f64) -> (f64, f32) {
        let mut worst = (0.0, 0.0);
        for x in xs {
            let want = g(x as f64);
            let got = f(x) as f64;
            let e = ((got - want) / want).abs();
            if e > worst.0 || e.is_nan() {
                worst = (e, x);
            }
        }
        worst
    }

    type F32Fn = fn(f32) -> f32;

    fn check_both(
        name: &str,
        bound: f64,
        xs: impl Fn() -> Box<dyn Iterator<Item = f32>>,
        f: (F32Fn, F32Fn),
        g: impl Fn(f64) -> f64 + Copy,
    ) {
        for (flavour, f) in [("fma", f.0), ("nofma", f.1)] {
            let (e, x) = max_rel(xs(), f, g);
            println!("{name} ({flavour}): max rel error {e:.3e} at x = {x}");
            assert!(e <= bound, "{name} ({flavour}): rel error {e:e} at x = {x} exceeds {bound:e}");
        }
    }

    #[test]
    fn exp_error() {
        check_both(
            "exp",
            1.2e-7,
            || Box::new(sweep(-87.3, 88.3, 2_000_000)),
            (exp_with::<true>, exp_with::<false>),
            f64::exp,
        );
        // Clamping: never ∞, flushes to ~0 at the bottom.
        assert!(exp(1000.0).is_finite() && exp(88.37626) > 2.4e38);
        assert_eq!(exp(-87.4), 0.0);
        assert_eq!(exp(-1000.0), 0.0);
        assert!(exp(-87.33) > 1.1e-38);
        assert_eq!(exp(0.0), 1.0);
    }

    #[test]
    fn ln_error() {
        // Near 1 the result goes to 0, so there the bound is absolute.
        for (flavour, f) in [("fma", ln_with::<true> as fn(f32) -> f32), ("nofma", ln_with::<false>)] {
            let mut worst_abs: f64 = 0.0;
            for x in sweep(0.5, 2.0, 2_000_000) {
                worst_abs = worst_abs.max((f(x) as f64 - (x as f64).ln()).abs());
            }
            println!("ln ({flavour}): max abs error on [0.5, 2]: {worst_abs:.3e}");
            assert!(worst_abs <= 5e-8);
            // Log-spaced sweep over 60 decades.
            let xs = (0..=2_000_000).map(|i| 10f64.powf(-30.0 + 60.0 * i as f64 / 2e6) as f32);
            let xs = xs.filter(|&x| !(0.5..=2.0).contains(&x));
            let (e, x) = max_rel(xs, f, f64::ln);
            println!("ln ({flavour}): max rel error outside [0.5, 2]: {e:.3e} at {x}");
            assert!(e <= 1e-7, "ln rel error {e} at {x}");
        }
        assert_eq!(ln(1.0), 0.0);
    }

    #[test]
    fn pdf_error() {
        check_both(
            "norm_pdf",
            2.5e-7,
            || Box::new(sweep(-13.0, 13.0, 2_000_000)),
            (norm_pdf_with::<true>, norm_pdf_with::<false>),
            norm_pdf_f64,
        );
        assert_eq!(norm_pdf(20.0), 0.0);
        assert_eq!(norm_pdf(f32::INFINITY), 0.0);
    }

    #[test]
    fn cdf_lower_tail_relative() {
        check_both(
            "norm_cdf lower tail",
            5e-7,
            || Box::new(sweep(-13.0, 0.0, 2_000_000)),
            (norm_cdf_with::<true>, norm_cdf_with::<false>),
            norm_cdf_f64,
        );
    }

    #[test]
    fn cdf_upper_absolute_and_limits() {
        for (flavour, f) in
            [("fma", norm_cdf_with::<true> as fn(f32) -> f32), ("nofma", norm_cdf_with::<false>)]
        {
            let mut worst: f64 = 0.0;
            for x in sweep(0.0, 20.0, 2_000_000) {
                worst = worst.max((f(x) as f64 - norm_cdf_f64(x as f64)).abs());
            }
            println!("norm_cdf upper ({flavour}): max abs error {worst:.3e}");
            assert!(worst <= 2.5e-7);
        }
        // Both members of the pair are accurate, in both flavours.
        let pairs = [norm_cdf2_pdf_with::<true> as fn(f32) -> (f32, f32, f32), norm_cdf2_pdf_with::<false>];
        for pair in pairs {
            for x in sweep(-13.0, 13.0, 100_000) {
                let (c, cm, _) = pair(x);
                assert!((cm as f64 - norm_cdf_f64(-(x as f64))).abs() <= 2.5e-7);
                assert!((c as f64 - norm_cdf_f64(x as f64)).abs() <= 2.5e-7);
            }
        }
        assert_eq!(norm_cdf(30.0), 1.0);
        assert_eq!(norm_cdf(-30.0), 0.0);
        assert_eq!(norm_cdf(f32::INFINITY), 1.0);
        assert_eq!(norm_cdf(f32::NEG_INFINITY), 0.0);
        assert!((norm_cdf(0.0) - 0.5).abs() < 1e-7);
    }
}
