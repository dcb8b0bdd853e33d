//! European Black-Scholes price and five Greeks per contract, f32 struct-of-arrays.
//! STUB (signatures fixed; the kernels helper fills in the bodies).
//!
//! Conventions: vega and rho per unit (1.0 = 100 percentage points) of vol/rate, theta per
//! year (calendar), gamma per unit spot. Word layout (see crate docs): inputs
//! `spot, strike, t, rate, vol` (f32 bits) then `kind` (u32: 1 call, 0 put) — [`IN_WORDS`] = 6;
//! outputs `price, delta, gamma, vega, theta, rho` — [`OUT_WORDS`] = 6.
use crate::{InvalidInput, Isa, KernelError};

/// Input words per contract in the word layout.
pub const IN_WORDS: usize = 6;
/// Output words per contract in the word layout.
pub const OUT_WORDS: usize = 6;
/// `kind` word of a call.
pub const CALL: u32 = 1;
/// `kind` word of a put.
pub const PUT: u32 = 0;

/// Call or put.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionKind {
    /// Right to buy at the strike.
    Call,
    /// Right to sell at the strike.
    Put,
}

/// One European option contract.
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

/// Price and Greeks in f64, from [`reference`].
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
pub fn validate(c: &Contract, index: usize) -> Result<(), InvalidInput> {
    let _ = (c, index);
    todo!()
}

/// The f64 reference (closed form, libm erfc) used by tests.
pub fn reference(c: &Contract) -> Greeks64 {
    let _ = c;
    todo!()
}

/// Borrowed input columns (all the same length).
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
pub fn price_greeks(input: &BsIn<'_>, out: &mut BsOut<'_>) -> Result<(), KernelError> {
    price_greeks_isa(Isa::detect(), input, out)
}

/// As [`price_greeks`] with a chosen ISA (must be one of [`Isa::available`]).
pub fn price_greeks_isa(isa: Isa, input: &BsIn<'_>, out: &mut BsOut<'_>) -> Result<(), KernelError> {
    let _ = (isa, input, out);
    todo!()
}

/// Word-layout entry point: `input.len() == n * IN_WORDS`, `output.len() == n * OUT_WORDS`.
pub fn price_greeks_words(n: usize, input: &[u32], output: &mut [u32]) -> Result<(), KernelError> {
    let _ = (n, input, output);
    todo!()
}

/// Owned input columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BsBatch {
    /// Spot prices.
    pub spot: Vec<f32>,
    /// Strikes.
    pub strike: Vec<f32>,
    /// Times to expiry.
    pub t: Vec<f32>,
    /// Rates.
    pub rate: Vec<f32>,
    /// Volatilities.
    pub vol: Vec<f32>,
    /// Kinds.
    pub kind: Vec<u32>,
}

/// Owned output columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BsResults {
    /// Prices.
    pub price: Vec<f32>,
    /// Deltas.
    pub delta: Vec<f32>,
    /// Gammas.
    pub gamma: Vec<f32>,
    /// Vegas.
    pub vega: Vec<f32>,
    /// Thetas.
    pub theta: Vec<f32>,
    /// Rhos.
    pub rho: Vec<f32>,
}

/// A deterministic synthetic option chain of `n` valid contracts from `seed` (spots, strikes
/// around the money, T in (0, 3], rates, vols in [0.05, 0.8], calls and puts).
pub fn synthetic_chain(n: usize, seed: u64) -> Vec<Contract> {
    let _ = (n, seed);
    todo!()
}

impl BsBatch {
    /// Columns of `contracts`, in order.
    pub fn from_contracts(contracts: &[Contract]) -> BsBatch {
        let _ = contracts;
        todo!()
    }
    /// Number of contracts.
    pub fn len(&self) -> usize {
        self.spot.len()
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.spot.is_empty()
    }
    /// Borrowed view of all columns.
    pub fn as_in(&self) -> BsIn<'_> {
        BsIn {
            spot: &self.spot,
            strike: &self.strike,
            t: &self.t,
            rate: &self.rate,
            vol: &self.vol,
            kind: &self.kind,
        }
    }
}

impl BsResults {
    /// `n` zeroed results.
    pub fn zeroed(n: usize) -> BsResults {
        let _ = n;
        todo!()
    }
    /// Mutable view of all columns.
    pub fn as_out(&mut self) -> BsOut<'_> {
        todo!()
    }
    /// Result `i` as a struct.
    pub fn get(&self, i: usize) -> Greeks {
        let _ = i;
        todo!()
    }
}

/// Writes `contracts` into `input` in the word layout (`input.len() == contracts.len() * IN_WORDS`).
pub fn stage_words(contracts: &[Contract], input: &mut [u32]) {
    let _ = (contracts, input);
    todo!()
}

/// Reads result `i` of a batch of `n` from `output` in the word layout.
pub fn gather_words(n: usize, output: &[u32], i: usize) -> Greeks {
    let _ = (n, output, i);
    todo!()
}
