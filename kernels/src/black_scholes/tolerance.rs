//! How far an f32 Black-Scholes kernel may be from the f64 [`reference()`](super::reference),
//! per output and per contract — and so how far two f32 kernels (the CPU's and the GPU's) may
//! be from each other. One body of code for the kernel tests, the CUDA tests and the examples.
//!
//! A relative tolerance with an absolute floor (say 1e-5 of max(|value|, 0.01)) cannot work:
//! an output is a sum of terms that may be much larger than the output itself, and each term
//! carries the rounding of *its* size. Theta of a deep in-the-money put is
//! −S·φ(d1)·σ/(2√T) + r·K·e^(−rT)·Φ(−d2): two terms of ~15 that cancel to near 0, so a few ulp
//! of 15 (1e-6 each) is a correct result's difference and is far above 1e-5 of 0.01. The
//! tolerance here is instead derived from the error model (ε = 2⁻²⁴, half an f32 ulp):
//!
//! * the math functions: Φ within [`MathAccuracy::cdf_abs`] absolute, φ within
//!   [`MathAccuracy::pdf_rel`] relative, exp/ln within ~2ε; each f32 operation within ε;
//! * d1 = (ln(S/K) + (r + σ²/2)T)/(σ√T) carries an absolute error of at most
//!   `DD = 8ε·(1 + |ln(S/K)| + |r|T + σ²T)/(σ√T) + 8ε·|d1|` (about four roundings of each
//!   term, doubled for margin);
//! * each output's tolerance is (its sensitivity to d1) × DD, plus the Φ/φ errors times the
//!   factor they are multiplied by, plus 16ε of the magnitudes of the terms summed (the final
//!   roundings). The price's first-order sensitivity to d1 vanishes (S·φ(d1) =
//!   K·e^(−rT)·φ(d2)), so its tolerance is Φ's error and the roundings only;
//! * at σ√T = 0 (T = 0) Φ is a step: only when S/K is within rounding of 1 can an f32 kernel
//!   land on the other side of it, and then the tolerance allows the whole step;
//! * every output also gets [`FLUSH_FLOOR`] absolute: a kernel may flush φ (hence gamma, vega
//!   and theta's diffusion term) to 0 below f32's normal range (~1e-38), where f64 does not.
//!
//! [`tolerance`] is that bound for one kernel against the reference;
//! [`agreement_tolerance`] for two kernels against each other is the sum of their bounds
//! (each is within its own of the reference). [`TOLERANCE_RULE`] says it in one line, for
//! programs to print.
use super::{reference, Contract, Greeks, Greeks64};

/// ε = 2⁻²⁴: half an f32 ulp of 1 (the largest relative rounding error of one operation).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::tolerance::EPS;
///
/// assert_eq!(EPS, (f32::EPSILON / 2.0) as f64);
/// assert_eq!(EPS, 2f64.powi(-24));
/// ```
pub const EPS: f64 = 5.960_464_477_539_063e-8;

/// Absolute allowance added to every output (see the module docs): below f32's normal range
/// a kernel may flush to 0 what f64 keeps.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::tolerance::{tolerance, CPU_MATH, FLUSH_FLOOR};
/// use gmprt_kernels::black_scholes::{Contract, OptionKind};
///
/// // At expiry gamma and vega have nothing but the floor.
/// let c = Contract { spot: 120.0, strike: 100.0, t: 0.0, rate: 0.03, vol: 0.2, kind: OptionKind::Call };
/// let tol = tolerance(&c, &CPU_MATH);
/// assert_eq!((tol.gamma, tol.vega), (FLUSH_FLOOR, FLUSH_FLOOR));
/// ```
pub const FLUSH_FLOOR: f64 = 1e-30;

/// The outputs in word order (`price, delta, gamma, vega, theta, rho`).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::tolerance::OUTPUT_NAMES;
/// use gmprt_kernels::black_scholes::Greeks64;
///
/// let g = Greeks64 { theta: -4.0, ..Greeks64::default() };
/// let theta = OUTPUT_NAMES.iter().position(|&n| n == "theta").unwrap();
/// assert_eq!(g.to_array()[theta], -4.0);
/// ```
pub const OUTPUT_NAMES: [&str; 6] = ["price", "delta", "gamma", "vega", "theta", "rho"];

/// The tolerance rule in one line, for programs that print what they checked.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::tolerance::TOLERANCE_RULE;
///
/// assert!(TOLERANCE_RULE.contains("eps = 2^-24"));
/// assert!(!TOLERANCE_RULE.contains('\n'), "one line");
/// ```
pub const TOLERANCE_RULE: &str = "per contract and output, |a - b| <= the sum of both kernels' \
     error bounds vs the f64 reference: (sensitivity to d1) x (d1's rounding, ~8 eps of \
     (1 + |ln S/K| + |r|T + sigma^2 T)/(sigma sqrt T)) + Phi/phi errors x their factors + 16 eps of \
     the terms summed (eps = 2^-24; see gmprt_kernels::black_scholes::tolerance)";

/// The accuracy of the math functions a kernel build uses.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::tolerance::{tolerance, MathAccuracy, CPU_MATH};
/// use gmprt_kernels::black_scholes::{Contract, OptionKind};
///
/// // A build whose Φ is ten times worse: delta = Φ(d1) may be off by the extra 9 × 2.5e-7.
/// let sloppy = MathAccuracy { cdf_abs: 10.0 * CPU_MATH.cdf_abs, ..CPU_MATH };
/// let c = Contract { spot: 100.0, strike: 100.0, t: 1.0, rate: 0.05, vol: 0.2, kind: OptionKind::Call };
/// let wider = tolerance(&c, &sloppy).delta - tolerance(&c, &CPU_MATH).delta;
/// assert!((wider - 9.0 * CPU_MATH.cdf_abs).abs() < 1e-15);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MathAccuracy {
    /// Φ's largest absolute error.
    pub cdf_abs: f64,
    /// φ's largest relative error.
    pub pdf_rel: f64,
}

/// The CPU kernels' math ([`crate::math`]): Φ within 2.5e-7 absolute, φ within 2.5e-7
/// relative.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::tolerance::{tolerance, CPU_MATH};
/// use gmprt_kernels::black_scholes::{price_one, reference, synthetic_chain};
///
/// for c in synthetic_chain(32, 17) {
///     let (got, want) = (price_one(&c).to_array64(), reference(&c).to_array());
///     let tol = tolerance(&c, &CPU_MATH).to_array();
///     assert!((0..6).all(|j| (got[j] - want[j]).abs() <= tol[j]), "{c:?}");
/// }
/// ```
pub const CPU_MATH: MathAccuracy = MathAccuracy { cdf_abs: 2.5e-7, pdf_rel: 2.5e-7 };

/// The CUDA kernel's math (`kernels/cuda/black_scholes.cu`: CUDA's accurate single-precision
/// functions, no fast math): `normcdff` within 5 ulp (CUDA Math API), which below 1 is at
/// most 5·2⁻²⁴ ≈ 3.0e-7 absolute; φ = `expf` (2 ulp) times a constant, within 2.5e-7
/// relative.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::tolerance::{tolerance, CPU_MATH, CUDA_MATH, EPS};
/// use gmprt_kernels::black_scholes::{Contract, OptionKind};
///
/// assert_eq!(CUDA_MATH.cdf_abs, 5.0 * EPS);
/// // normcdff is the less accurate Φ, so the GPU's bound is the wider one.
/// let c = Contract { spot: 100.0, strike: 90.0, t: 0.5, rate: 0.02, vol: 0.25, kind: OptionKind::Put };
/// assert!(tolerance(&c, &CUDA_MATH).delta > tolerance(&c, &CPU_MATH).delta);
/// ```
pub const CUDA_MATH: MathAccuracy = MathAccuracy { cdf_abs: 5.0 * EPS, pdf_rel: 2.5e-7 };

/// How far an f32 kernel whose math functions are as accurate as `math` may be from
/// [`reference()`](super::reference) for contract `c`, per output (absolute; see the module
/// docs). Finite for every valid contract.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::tolerance::{tolerance, CPU_MATH};
/// use gmprt_kernels::black_scholes::{price_one, reference, Contract, OptionKind};
///
/// let c = Contract { spot: 100.0, strike: 100.0, t: 1.0, rate: 0.05, vol: 0.2, kind: OptionKind::Call };
/// let tol = tolerance(&c, &CPU_MATH);
/// // Tight at the money: a few parts per million of the price...
/// assert!(tol.price < 1e-5 * 100.0);
/// // ...and the kernel meets it.
/// assert!((price_one(&c).price as f64 - reference(&c).price).abs() <= tol.price);
/// ```
pub fn tolerance(c: &Contract, math: &MathAccuracy) -> Greeks64 {
    let (s, k, t, r, v) = (c.spot as f64, c.strike as f64, c.t as f64, c.rate as f64, c.vol as f64);
    let sv = v * t.sqrt();
    let kd = k * (-r * t).exp();
    let ln_sk = (s / k).ln();
    let num = ln_sk + (r + 0.5 * v * v) * t;
    let refg = reference(c);
    let size = s.max(kd);
    // Rounding allowance for the final sums.
    let round = 16.0 * EPS;
    let tol = if sv == 0.0 {
        // T = 0: Φ is a step; only when S/K is within rounding of 1 can f32 see the other side.
        let at_kink = ln_sk.abs() <= 4.0 * EPS;
        let step = if at_kink { 0.5 } else { 0.0 };
        Greeks64 {
            price: round * size + step * (s - kd).abs(),
            delta: math.cdf_abs + step,
            gamma: 0.0,
            vega: 0.0,
            theta: round * r.abs() * kd + step * r.abs() * kd,
            rho: 0.0,
        }
    } else {
        let d1 = num / sv;
        let d2 = d1 - sv;
        let dd1 = 8.0 * EPS * (1.0 + ln_sk.abs() + r.abs() * t + v * v * t) / sv + 8.0 * EPS * d1.abs();
        let dd2 = dd1 + 4.0 * EPS * (d2.abs() + sv);
        let pdf1 = norm_pdf(d1);
        let pdf2 = norm_pdf(d2);
        // Error of Φ(±d2) and of the relative error of φ(d1) (the kernel's d vs the true d).
        let dn1 = math.cdf_abs + pdf1 * dd1;
        let dn2 = math.cdf_abs + pdf2 * dd2;
        let dpdf_rel = math.pdf_rel + d1.abs() * dd1 + 4.0 * EPS;
        let n2 = (refg.rho / (t * kd)).abs().min(1.0); // Φ(±d2) as the reference has it
        let diffusion = s * pdf1 * v / (2.0 * t.sqrt());
        Greeks64 {
            // The d1 errors cancel to first order; what is left is second order in dd1 plus
            // Φ's own error.
            price: math.cdf_abs * (s + kd)
                + round * size
                + s * pdf1 * (dd2 - dd1)
                + 0.5 * s * pdf1 * d1.abs() * dd1 * dd1,
            delta: dn1 + round,
            gamma: refg.gamma.abs() * (dpdf_rel + round),
            vega: refg.vega.abs() * (dpdf_rel + round),
            theta: diffusion * (dpdf_rel + round)
                + r.abs() * kd * (dn2 + round * n2)
                + round * refg.theta.abs(),
            rho: t * kd * (dn2 + round * n2),
        }
    };
    let [price, delta, gamma, vega, theta, rho] = tol.to_array().map(|x| x + FLUSH_FLOOR);
    Greeks64 { price, delta, gamma, vega, theta, rho }
}

/// How far two f32 kernels, with math as accurate as `a` and `b`, may be from each other for
/// contract `c`, per output: the sum of their [`tolerance`]s (each is within its own of the
/// reference).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::tolerance::{agreement_tolerance, tolerance, CPU_MATH, CUDA_MATH};
/// use gmprt_kernels::black_scholes::{Contract, OptionKind};
///
/// let c = Contract { spot: 80.0, strike: 100.0, t: 2.0, rate: 0.01, vol: 0.4, kind: OptionKind::Put };
/// let both = agreement_tolerance(&c, &CPU_MATH, &CUDA_MATH);
/// assert_eq!(both.rho, tolerance(&c, &CPU_MATH).rho + tolerance(&c, &CUDA_MATH).rho);
/// ```
pub fn agreement_tolerance(c: &Contract, a: &MathAccuracy, b: &MathAccuracy) -> Greeks64 {
    let (ta, tb) = (tolerance(c, a).to_array(), tolerance(c, b).to_array());
    let [price, delta, gamma, vega, theta, rho] = std::array::from_fn(|j| ta[j] + tb[j]);
    Greeks64 { price, delta, gamma, vega, theta, rho }
}

/// φ in f64.
fn norm_pdf(x: f64) -> f64 {
    crate::math::norm_pdf_f64(x)
}

impl Greeks64 {
    /// The six outputs in word order ([`OUTPUT_NAMES`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::black_scholes::Greeks64;
    ///
    /// let g = Greeks64 { price: 1.0, delta: 0.5, gamma: 0.1, vega: 2.0, theta: -3.0, rho: 4.0 };
    /// assert_eq!(g.to_array(), [1.0, 0.5, 0.1, 2.0, -3.0, 4.0]);
    /// ```
    pub fn to_array(&self) -> [f64; 6] {
        [self.price, self.delta, self.gamma, self.vega, self.theta, self.rho]
    }
}

impl Greeks {
    /// The six outputs in word order ([`OUTPUT_NAMES`]), widened to f64.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::black_scholes::Greeks;
    ///
    /// let g = Greeks { price: 1.5, delta: 0.25, ..Greeks::default() };
    /// assert_eq!(g.to_array64(), [1.5, 0.25, 0.0, 0.0, 0.0, 0.0]);
    /// ```
    pub fn to_array64(&self) -> [f64; 6] {
        [self.price, self.delta, self.gamma, self.vega, self.theta, self.rho].map(f64::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::black_scholes::{price_one, OptionKind};

    fn contract(spot: f32, strike: f32, t: f32, rate: f32, vol: f32, kind: OptionKind) -> Contract {
        Contract { spot, strike, t, rate, vol, kind }
    }

    /// The CPU kernel is within `tolerance` of the reference on `c`, every output; returns the
    /// tolerances.
    fn kernel_within(c: &Contract) -> [f64; 6] {
        let got = price_one(c).to_array64();
        let want = reference(c).to_array();
        let tol = tolerance(c, &CPU_MATH).to_array();
        for j in 0..6 {
            assert!(
                tol[j].is_finite() && tol[j] >= FLUSH_FLOOR,
                "{c:?}: {} tolerance {}",
                OUTPUT_NAMES[j],
                tol[j]
            );
            let err = (got[j] - want[j]).abs();
            assert!(
                err <= tol[j],
                "{c:?}: {} = {} vs {}: error {err:e} > {:e}",
                OUTPUT_NAMES[j],
                got[j],
                want[j],
                tol[j]
            );
        }
        tol
    }

    #[test]
    fn deep_itm_put_theta_allows_the_rounding_of_its_terms() {
        // A deep in-the-money put whose theta's two terms (~15 each) cancel: find the spot where
        // theta crosses 0 by bisection on the reference.
        let (k, t, r, v) = (150.0f32, 1.0f32, 0.1f32, 0.3f32);
        let theta = |s: f64| reference(&contract(s as f32, k, t, r, v, OptionKind::Put)).theta;
        let (mut lo, mut hi) = (60.0f64, 149.0f64);
        assert!(theta(lo) > 0.0 && theta(hi) < 0.0, "{} {}", theta(lo), theta(hi));
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if theta(mid) > 0.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let c = contract(lo as f32, k, t, r, v, OptionKind::Put);
        let g = reference(&c);
        let carry = (r as f64) * (k as f64) * (-(r as f64) * (t as f64)).exp();
        assert!(g.theta.abs() < 1e-3 && carry > 10.0, "theta {} carry term {carry}", g.theta);
        let tol = kernel_within(&c)[4];
        // At least a few ulp of the ~13 term (the old 1e-5 · max(|θ|, 0.01) rule allowed 1e-7),
        // still a tight bound: below 1e-5 of the term.
        assert!(tol > 4.0 * EPS * carry && tol < 1e-5 * carry, "theta tolerance {tol:e}, term {carry}");
        assert!(tol > 1e-5 * g.theta.abs().max(0.01));
    }

    #[test]
    fn at_the_money_is_tight() {
        let c = contract(100.0, 100.0, 1.0, 0.05, 0.2, OptionKind::Call);
        let tol = kernel_within(&c);
        let g = reference(&c).to_array();
        for j in 0..6 {
            // A few parts per million of each output's natural size at the money.
            let scale = [100.0, 1.0, g[2], g[3], g[4].abs(), g[5]][j];
            assert!(tol[j] < 1e-5 * scale, "{}: {:e} vs scale {scale}", OUTPUT_NAMES[j], tol[j]);
        }
    }

    #[test]
    fn tiny_sigma_at_the_money_widens_with_d1s_conditioning() {
        // σ = 1e-4 with S/K within 1e-5 of 1: d1 ≈ ln(S/K)/(σ√T) ≈ −0.1 carries the rounding
        // of ln(S/K) divided by 1e-4, and delta = Φ(d1) inherits it times φ(d1) ≈ 0.4.
        let ordinary = tolerance(&contract(100.0, 100.001, 1.0, 0.0, 0.2, OptionKind::Call), &CPU_MATH);
        let near = kernel_within(&contract(100.0, 100.001, 1.0, 0.0, 1e-4, OptionKind::Call));
        assert!(near[1] > 100.0 * ordinary.delta, "delta {:e} vs {:e}", near[1], ordinary.delta);
        assert!(near[1] < 0.01, "still a bound worth checking: {:e}", near[1]);
        // Far from the money (d1 ≈ −50) it is finite and holds too.
        kernel_within(&contract(100.0, 100.5, 1.0, 0.0, 1e-4, OptionKind::Put));
    }

    #[test]
    fn expiry_limits_are_finite_and_hold() {
        for kind in [OptionKind::Call, OptionKind::Put] {
            for (s, k) in [(120.0, 100.0), (80.0, 100.0), (100.0, 100.0)] {
                for t in [0.0, 1e-8, 1e-6, 1e-4] {
                    let c = contract(s, k, t, 0.03, 0.2, kind);
                    let tol = kernel_within(&c);
                    if t == 0.0 {
                        // Φ is a step: gamma and vega have nothing but the flush floor.
                        assert_eq!(tol[2], FLUSH_FLOOR);
                        assert_eq!(tol[3], FLUSH_FLOOR);
                    }
                }
            }
        }
    }

    #[test]
    fn agreement_is_the_sum_of_both_bounds() {
        let c = contract(100.0, 90.0, 0.5, 0.02, 0.25, OptionKind::Put);
        let (a, b) = (tolerance(&c, &CPU_MATH).to_array(), tolerance(&c, &CUDA_MATH).to_array());
        let both = agreement_tolerance(&c, &CPU_MATH, &CUDA_MATH).to_array();
        for j in 0..6 {
            assert_eq!(both[j], a[j] + b[j]);
            assert!(b[j] >= a[j], "CUDA's normcdff is the less accurate Φ: {}", OUTPUT_NAMES[j]);
        }
    }
}
