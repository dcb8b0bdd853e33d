//! European Black-Scholes price and five Greeks per contract, f32 struct-of-arrays.
//!
//! Conventions: vega and rho per unit (1.0 = 100 percentage points) of vol/rate, theta per
//! year (calendar), gamma per unit spot. Word layout (see crate docs): inputs
//! `spot, strike, t, rate, vol` (f32 bits) then `kind` (u32: 1 call, 0 put) — [`IN_WORDS`] = 6;
//! outputs `price, delta, gamma, vega, theta, rho` — [`OUT_WORDS`] = 6. A `kind` word other
//! than [`CALL`] prices a put ([`validate_batch`] refuses it).
//!
//! With D = e^(−rT), d1 = (ln(S/K) + (r + σ²/2)T)/(σ√T), d2 = d1 − σ√T:
//! call = S·Φ(d1) − K·D·Φ(d2), put = K·D·Φ(−d2) − S·Φ(−d1); delta Φ(d1) | −Φ(−d1);
//! gamma φ(d1)/(S·σ√T); vega S·φ(d1)·√T; theta −S·φ(d1)·σ/(2√T) ∓ r·K·D·Φ(±d2);
//! rho ±T·K·D·Φ(±d2). The kernel ([`simd`]) computes calls and puts with the same
//! instructions (see there).
//!
//! **Limits.** When σ√T < [`simd::SV_MIN`] (1e-20; in particular T = 0) the kernel returns the
//! σ√T → 0 limit: d1, d2 → ±∞ by the sign of ln(S/K) + (r + σ²/2)T, so the price is the
//! discounted intrinsic value max(±(S − K·D), 0), delta a step (0.5·sign at the money),
//! gamma 0, vega S·φ(d1)·√T (0 at T = 0), and theta only its carry term. No NaN or ∞ comes
//! out for valid contracts ([`validate`]) with spot and strike in [1e-6, 1e6] and T ≤ 50.
//!
//! **Accuracy** (f32 kernel vs the f64 [`reference()`]): the math functions' errors (see
//! [`crate::math`]: ≤ 5e-7 relative for Φ's lower tail, 2.5e-7 absolute upper, ~1e-7 for
//! exp/ln) plus f32 rounding of the inputs' combination. The price is well conditioned
//! (∂price/∂d1 = 0 at fixed inputs, since S·φ(d1) = K·D·φ(d2)), so its error is a few ulps of
//! max(S, K); the Greeks inherit the rounding of d1 (a few ulps of
//! (|ln(S/K)| + |r + σ²/2|·T)/(σ√T)) times their sensitivity to d1, which grows as σ√T → 0 at
//! the money — [`tolerance`] derives per-output tolerances from exactly this.
use crate::math::norm_cdf_f64;
use crate::{InvalidInput, Isa, KernelError};

mod batch;
pub mod simd;
pub mod tolerance;
mod words;

pub use batch::{price_batch, synthetic_chain, BsBatch, BsResults};
pub use words::{gather_words, kind_word, price_greeks_words, stage_words};

/// Input words per contract in the word layout.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{stage_words, synthetic_chain, IN_WORDS};
///
/// let chain = synthetic_chain(3, 7);
/// let mut words = vec![0u32; chain.len() * IN_WORDS];
/// stage_words(&chain, &mut words);
/// // Column 0 is the spots, column 4 the vols (stride n = 3).
/// assert_eq!(f32::from_bits(words[2]), chain[2].spot);
/// assert_eq!(f32::from_bits(words[4 * 3 + 1]), chain[1].vol);
/// ```
pub const IN_WORDS: usize = 6;
/// Output words per contract in the word layout.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{price_greeks_words, stage_words, synthetic_chain, IN_WORDS, OUT_WORDS};
///
/// let chain = synthetic_chain(4, 1);
/// let mut input = vec![0u32; chain.len() * IN_WORDS];
/// stage_words(&chain, &mut input);
/// let mut output = vec![0u32; chain.len() * OUT_WORDS];
/// price_greeks_words(chain.len(), &input, &mut output).unwrap();
/// // One word too few is a shape error.
/// assert!(price_greeks_words(chain.len(), &input, &mut output[1..]).is_err());
/// ```
pub const OUT_WORDS: usize = 6;
/// `kind` word of a call.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{kind_word, OptionKind, CALL};
///
/// assert_eq!(kind_word(OptionKind::Call), CALL);
/// ```
pub const CALL: u32 = 1;
/// `kind` word of a put.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{kind_word, OptionKind, PUT};
///
/// assert_eq!(kind_word(OptionKind::Put), PUT);
/// ```
pub const PUT: u32 = 0;

/// Call or put.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{reference, Contract, OptionKind};
///
/// let call = Contract { spot: 100.0, strike: 100.0, t: 1.0, rate: 0.05, vol: 0.2, kind: OptionKind::Call };
/// let put = Contract { kind: OptionKind::Put, ..call };
/// // Put-call parity: C - P = S - K·e^(-rT).
/// let (c, p) = (reference(&call).price, reference(&put).price);
/// let forward = 100.0 - 100.0 * (-(0.05f32 as f64)).exp();
/// assert!((c - p - forward).abs() < 1e-9);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionKind {
    /// Right to buy at the strike.
    Call,
    /// Right to sell at the strike.
    Put,
}

/// One European option contract.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{price_one, validate, Contract, OptionKind};
///
/// let c = Contract { spot: 105.0, strike: 100.0, t: 0.5, rate: 0.03, vol: 0.25, kind: OptionKind::Call };
/// assert!(validate(&c, 0).is_ok());
/// let g = price_one(&c);
/// // An in-the-money call is worth at least its discounted intrinsic value.
/// assert!(g.price > 105.0 - 100.0 * (-0.03f32 * 0.5).exp());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contract {
    /// Spot price S (> 0).
    pub spot: f32,
    /// Strike K (> 0).
    pub strike: f32,
    /// Time to expiry T in years (≥ 0).
    pub t: f32,
    /// Continuously compounded risk-free rate r (finite, |r| ≤ 1).
    pub rate: f32,
    /// Volatility σ (> 0, ≤ 10).
    pub vol: f32,
    /// Call or put.
    pub kind: OptionKind,
}

/// Price and Greeks of one contract (f32).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{price_one, Contract, OptionKind};
///
/// let c = Contract { spot: 100.0, strike: 100.0, t: 1.0, rate: 0.05, vol: 0.2, kind: OptionKind::Call };
/// let g = price_one(&c);
/// assert!((g.price - 10.450_584).abs() < 1e-4);
/// assert!(g.delta > 0.5 && g.delta < 1.0); // at the money, positive drift
/// assert!(g.gamma > 0.0 && g.vega > 0.0 && g.theta < 0.0 && g.rho > 0.0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Greeks {
    /// Option value.
    pub price: f32,
    /// ∂V/∂S.
    pub delta: f32,
    /// ∂²V/∂S².
    pub gamma: f32,
    /// ∂V/∂σ.
    pub vega: f32,
    /// ∂V/∂t (per year, negative of ∂V/∂T).
    pub theta: f32,
    /// ∂V/∂r.
    pub rho: f32,
}

/// Price and Greeks in f64, from [`reference()`].
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{reference, Contract, Greeks64, OptionKind};
///
/// let c = Contract { spot: 100.0, strike: 100.0, t: 1.0, rate: 0.05, vol: 0.2, kind: OptionKind::Put };
/// let g: Greeks64 = reference(&c);
/// assert!((g.price - 5.573_526).abs() < 1e-5);
/// assert!(g.delta < 0.0 && g.delta > -1.0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Greeks64 {
    /// Option value.
    pub price: f64,
    /// ∂V/∂S.
    pub delta: f64,
    /// ∂²V/∂S².
    pub gamma: f64,
    /// ∂V/∂σ.
    pub vega: f64,
    /// ∂V/∂t per year.
    pub theta: f64,
    /// ∂V/∂r.
    pub rho: f64,
}

/// Checks one contract; `index` is reported in the error.
///
/// Rules: every field finite (`"must be a finite number"`, checked first), spot > 0,
/// strike > 0, t ≥ 0, |rate| ≤ 1, 0 < vol ≤ 10. The error names the first bad field in the
/// order spot, strike, t, rate, vol.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{validate, Contract, OptionKind};
///
/// let ok = Contract { spot: 100.0, strike: 90.0, t: 1.0, rate: 0.01, vol: 0.3, kind: OptionKind::Put };
/// assert!(validate(&ok, 0).is_ok());
/// let err = validate(&Contract { vol: -1.0, ..ok }, 3).unwrap_err();
/// assert_eq!((err.field, err.index, err.value), ("vol", 3, -1.0));
/// let err = validate(&Contract { t: f32::NAN, ..ok }, 0).unwrap_err();
/// assert_eq!((err.field, err.why), ("t", "must be a finite number"));
/// ```
pub fn validate(c: &Contract, index: usize) -> Result<(), InvalidInput> {
    validate_fields(c.spot, c.strike, c.t, c.rate, c.vol, index)
}

fn validate_fields(
    spot: f32,
    strike: f32,
    t: f32,
    rate: f32,
    vol: f32,
    index: usize,
) -> Result<(), InvalidInput> {
    let fields: [(&'static str, f32, bool, &'static str); 5] = [
        ("spot", spot, spot > 0.0, "spot must be > 0"),
        ("strike", strike, strike > 0.0, "strike must be > 0"),
        ("t", t, t >= 0.0, "time to expiry must be >= 0"),
        ("rate", rate, rate.abs() <= 1.0, "rate must satisfy |rate| <= 1"),
        ("vol", vol, vol > 0.0 && vol <= 10.0, "volatility must be > 0 and <= 10"),
    ];
    for (field, value, ok, why) in fields {
        if !value.is_finite() {
            return Err(InvalidInput { field, index, value: value as f64, why: "must be a finite number" });
        }
        if !ok {
            return Err(InvalidInput { field, index, value: value as f64, why });
        }
    }
    Ok(())
}

/// Checks every contract of a column batch (and that `kind` is [`CALL`] or [`PUT`]); the
/// error's `index` is the contract's position. Lengths are not checked here.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{synthetic_chain, validate_batch, BsBatch};
///
/// let mut batch = BsBatch::from_contracts(&synthetic_chain(8, 3));
/// assert!(validate_batch(&batch.as_in()).is_ok());
/// batch.kind[5] = 2; // neither CALL nor PUT
/// let err = validate_batch(&batch.as_in()).unwrap_err();
/// assert_eq!((err.field, err.index), ("kind", 5));
/// ```
pub fn validate_batch(input: &BsIn<'_>) -> Result<(), InvalidInput> {
    for i in 0..input.spot.len() {
        validate_fields(input.spot[i], input.strike[i], input.t[i], input.rate[i], input.vol[i], i)?;
        let kind = input.kind[i];
        if kind != CALL && kind != PUT {
            let why = "kind must be 1 (call) or 0 (put)";
            return Err(InvalidInput { field: "kind", index: i, value: kind as f64, why });
        }
    }
    Ok(())
}

/// The f64 reference (closed form, libm erfc) used by tests.
///
/// Everything in f64 from the f32 inputs; Φ from `libm::erfc` (accurate in both tails). At
/// σ√T = 0 (T = 0) it returns the limits listed in the module docs; otherwise the closed form.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{reference, Contract, OptionKind};
///
/// // The textbook case: S = K = 100, T = 1, r = 5 %, σ = 20 % gives a call of 10.4506.
/// let c = Contract { spot: 100.0, strike: 100.0, t: 1.0, rate: 0.05, vol: 0.2, kind: OptionKind::Call };
/// let g = reference(&c);
/// assert!((g.price - 10.450_583_572).abs() < 1e-6);
/// assert!((g.delta - 0.636_830_651).abs() < 1e-6);
/// // At expiry: intrinsic value, a step delta, no gamma.
/// let g = reference(&Contract { spot: 120.0, t: 0.0, ..c });
/// assert_eq!((g.price, g.delta, g.gamma), (20.0, 1.0, 0.0));
/// ```
pub fn reference(c: &Contract) -> Greeks64 {
    let (s, k, t, r, v) = (c.spot as f64, c.strike as f64, c.t as f64, c.rate as f64, c.vol as f64);
    let sgn = match c.kind {
        OptionKind::Call => 1.0,
        OptionKind::Put => -1.0,
    };
    let sqrt_t = t.sqrt();
    let sv = v * sqrt_t;
    let kd = k * (-r * t).exp();
    let num = (s / k).ln() + (r + 0.5 * v * v) * t;
    let (d1, d2) = if sv > 0.0 {
        let d1 = num / sv;
        (d1, d1 - sv)
    } else {
        let d = if num > 0.0 {
            f64::INFINITY
        } else if num < 0.0 {
            f64::NEG_INFINITY
        } else {
            0.0
        };
        (d, d)
    };
    let n1 = norm_cdf_f64(sgn * d1);
    let n2 = norm_cdf_f64(sgn * d2);
    let pdf1 =
        if d1.is_finite() { (-0.5 * d1 * d1).exp() / (2.0 * std::f64::consts::PI).sqrt() } else { 0.0 };
    let (gamma, diffusion) =
        if sv > 0.0 { (pdf1 / (s * sv), s * pdf1 * v * v / (2.0 * sv)) } else { (0.0, 0.0) };
    Greeks64 {
        price: sgn * (s * n1 - kd * n2),
        delta: sgn * n1,
        gamma,
        vega: s * pdf1 * sqrt_t,
        theta: -diffusion - sgn * r * kd * n2,
        rho: sgn * t * kd * n2,
    }
}

/// Price and Greeks of one contract with the portable build of the kernel (inputs assumed
/// valid).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::tolerance::{tolerance, CPU_MATH};
/// use gmprt_kernels::black_scholes::{price_one, reference, Contract, OptionKind};
///
/// let c = Contract { spot: 90.0, strike: 100.0, t: 0.75, rate: 0.02, vol: 0.35, kind: OptionKind::Put };
/// let (got, want) = (price_one(&c).to_array64(), reference(&c).to_array());
/// let tol = tolerance(&c, &CPU_MATH).to_array();
/// for j in 0..6 {
///     assert!((got[j] - want[j]).abs() <= tol[j]);
/// }
/// ```
pub fn price_one(c: &Contract) -> Greeks {
    let kind = match c.kind {
        OptionKind::Call => CALL,
        OptionKind::Put => PUT,
    };
    let g = simd::greeks_one::<false>(c.spot, c.strike, c.t, c.rate, c.vol, kind);
    Greeks { price: g[0], delta: g[1], gamma: g[2], vega: g[3], theta: g[4], rho: g[5] }
}

/// Borrowed input columns (all the same length).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{price_greeks, BsIn, BsResults, CALL, PUT};
///
/// let input = BsIn {
///     spot: &[100.0, 100.0],
///     strike: &[100.0, 100.0],
///     t: &[1.0, 1.0],
///     rate: &[0.05, 0.05],
///     vol: &[0.2, 0.2],
///     kind: &[CALL, PUT],
/// };
/// let mut out = BsResults::zeroed(2);
/// price_greeks(&input, &mut out.as_out()).unwrap();
/// // Put-call parity, within f32 rounding.
/// let forward = 100.0 - 100.0 * (-0.05f32).exp();
/// assert!((out.price[0] - out.price[1] - forward).abs() < 1e-4);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct BsIn<'a> {
    /// Spot prices.
    pub spot: &'a [f32],
    /// Strikes.
    pub strike: &'a [f32],
    /// Times to expiry (years).
    pub t: &'a [f32],
    /// Rates.
    pub rate: &'a [f32],
    /// Volatilities.
    pub vol: &'a [f32],
    /// [`CALL`] or [`PUT`].
    pub kind: &'a [u32],
}

/// Borrowed output columns (same length as the inputs).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{price_greeks, synthetic_chain, BsBatch, BsOut};
///
/// let batch = BsBatch::from_contracts(&synthetic_chain(3, 9));
/// let (mut price, mut delta, mut gamma) = ([0.0f32; 3], [0.0f32; 3], [0.0f32; 3]);
/// let (mut vega, mut theta, mut rho) = ([0.0f32; 3], [0.0f32; 3], [0.0f32; 3]);
/// let mut out = BsOut {
///     price: &mut price,
///     delta: &mut delta,
///     gamma: &mut gamma,
///     vega: &mut vega,
///     theta: &mut theta,
///     rho: &mut rho,
/// };
/// price_greeks(&batch.as_in(), &mut out).unwrap();
/// assert!(price.iter().all(|&p| p > 0.0));
/// assert!(gamma.iter().all(|&g| g > 0.0));
/// ```
#[derive(Debug)]
pub struct BsOut<'a> {
    /// Prices.
    pub price: &'a mut [f32],
    /// Deltas.
    pub delta: &'a mut [f32],
    /// Gammas.
    pub gamma: &'a mut [f32],
    /// Vegas.
    pub vega: &'a mut [f32],
    /// Thetas.
    pub theta: &'a mut [f32],
    /// Rhos.
    pub rho: &'a mut [f32],
}

/// Prices every contract with the best ISA ([`Isa::detect`]) on the calling thread. Inputs are
/// assumed valid (see [`validate`]); only lengths are checked.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::tolerance::{agreement_tolerance, CPU_MATH};
/// use gmprt_kernels::black_scholes::{price_greeks, price_one, synthetic_chain, BsBatch, BsResults};
///
/// let chain = synthetic_chain(64, 42);
/// let batch = BsBatch::from_contracts(&chain);
/// let mut out = BsResults::zeroed(chain.len());
/// price_greeks(&batch.as_in(), &mut out.as_out()).unwrap();
/// for (i, c) in chain.iter().enumerate() {
///     // The vectorised build agrees with the portable one (`price_one`) to rounding.
///     let (a, b) = (out.get(i).price as f64, price_one(c).price as f64);
///     assert!((a - b).abs() <= agreement_tolerance(c, &CPU_MATH, &CPU_MATH).price, "{i}: {a} vs {b}");
/// }
/// // Columns of different lengths are refused.
/// let mut short = BsResults::zeroed(63);
/// assert!(price_greeks(&batch.as_in(), &mut short.as_out()).is_err());
/// ```
pub fn price_greeks(input: &BsIn<'_>, out: &mut BsOut<'_>) -> Result<(), KernelError> {
    price_greeks_isa(Isa::detect(), input, out)
}

/// As [`price_greeks`] with a chosen ISA (must be one of [`Isa::available`]).
///
/// # Panics
/// If `isa` is not available on this CPU (running its build would be undefined behaviour).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::tolerance::{tolerance, CPU_MATH};
/// use gmprt_kernels::black_scholes::{price_greeks_isa, reference, synthetic_chain, BsBatch, BsResults};
/// use gmprt_kernels::Isa;
///
/// let chain = synthetic_chain(40, 5);
/// let batch = BsBatch::from_contracts(&chain);
/// for isa in Isa::available() {
///     let mut out = BsResults::zeroed(chain.len());
///     price_greeks_isa(isa, &batch.as_in(), &mut out.as_out()).unwrap();
///     for (i, c) in chain.iter().enumerate() {
///         let (got, want) = (out.get(i).to_array64(), reference(c).to_array());
///         let tol = tolerance(c, &CPU_MATH).to_array();
///         assert!((0..6).all(|j| (got[j] - want[j]).abs() <= tol[j]), "{}: {i}", isa.name());
///     }
/// }
/// ```
pub fn price_greeks_isa(isa: Isa, input: &BsIn<'_>, out: &mut BsOut<'_>) -> Result<(), KernelError> {
    check_lengths(input, out)?;
    assert!(isa.is_available(), "ISA {} is not available on this CPU", isa.name());
    match isa {
        Isa::Scalar => simd::run_scalar(input, out),
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        // SAFETY: `isa.is_available()` (asserted above) means the CPU has AVX2 and FMA.
        Isa::Avx2 => unsafe { simd::run_avx2(input, out) },
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        // SAFETY: `isa.is_available()` means the CPU has AVX-512 F/DQ/VL, AVX2 and FMA.
        Isa::Avx512 => unsafe { simd::run_avx512(input, out) },
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
        _ => unreachable!("only Isa::Scalar is available off x86"),
    }
    Ok(())
}

fn check_lengths(input: &BsIn<'_>, out: &BsOut<'_>) -> Result<(), KernelError> {
    let n = input.spot.len();
    let cols = [
        ("strike", input.strike.len()),
        ("t", input.t.len()),
        ("rate", input.rate.len()),
        ("vol", input.vol.len()),
        ("kind", input.kind.len()),
        ("price", out.price.len()),
        ("delta", out.delta.len()),
        ("gamma", out.gamma.len()),
        ("vega", out.vega.len()),
        ("theta", out.theta.len()),
        ("rho", out.rho.len()),
    ];
    for (what, got) in cols {
        if got != n {
            return Err(KernelError::Shape { what, expected: n, got });
        }
    }
    Ok(())
}
