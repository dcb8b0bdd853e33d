//! Owned columns: [`BsBatch`] (inputs) and [`BsResults`] (outputs), the [`price_batch`] call
//! over them, and [`synthetic_chain`], the reproducible option chain the examples, tests and
//! benches price.

use super::{kind_word, price_greeks, BsIn, BsOut, Contract, Greeks, OptionKind, CALL};
use crate::KernelError;

/// Owned input columns.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{synthetic_chain, BsBatch};
///
/// let chain = synthetic_chain(4, 2);
/// let batch = BsBatch::from_contracts(&chain);
/// assert_eq!(batch.len(), 4);
/// assert_eq!(batch.strike[3], chain[3].strike);
/// assert_eq!(batch.get(1), chain[1]);
/// ```
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
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{price_batch, synthetic_chain, BsBatch, BsResults};
///
/// let results: BsResults = price_batch(&BsBatch::from_contracts(&synthetic_chain(6, 8))).unwrap();
/// assert_eq!(results.len(), 6);
/// // Calls (even indices) have deltas in [0, 1], puts (odd) in [-1, 0].
/// for i in 0..6 {
///     let range = if i % 2 == 0 { 0.0..=1.0 } else { -1.0..=0.0 };
///     assert!(range.contains(&results.delta[i]), "{i}: {}", results.delta[i]);
/// }
/// ```
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
///
/// Draws from a splitmix64 stream: spot ~ U[50, 150), strike = spot·U[0.7, 1.3),
/// T ~ U(0.01, 3], rate ~ U[−0.01, 0.08), vol ~ U[0.05, 0.8); even indices are calls, odd puts.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{synthetic_chain, validate, OptionKind};
///
/// let chain = synthetic_chain(100, 2024);
/// assert_eq!(chain, synthetic_chain(100, 2024)); // deterministic
/// assert_ne!(chain, synthetic_chain(100, 2025));
/// for (i, c) in chain.iter().enumerate() {
///     assert!(validate(c, i).is_ok());
///     assert!((50.0..150.0).contains(&c.spot) && (0.05..0.8).contains(&c.vol));
///     assert_eq!(c.kind == OptionKind::Call, i % 2 == 0);
/// }
/// ```
pub fn synthetic_chain(n: usize, seed: u64) -> Vec<Contract> {
    let mut state = seed;
    let mut unit = move || {
        // splitmix64 (Steele, Lea, Flood 2014), top 53 bits as a uniform in [0, 1).
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    };
    (0..n)
        .map(|i| {
            let spot = 50.0 + 100.0 * unit();
            let strike = spot * (0.7 + 0.6 * unit());
            let t = 3.0 - 2.99 * unit(); // (0.01, 3]
            let rate = -0.01 + 0.09 * unit();
            let vol = 0.05 + 0.75 * unit();
            let kind = if i % 2 == 0 { OptionKind::Call } else { OptionKind::Put };
            Contract {
                spot: spot as f32,
                strike: strike as f32,
                t: t as f32,
                rate: rate as f32,
                vol: vol as f32,
                kind,
            }
        })
        .collect()
}

impl BsBatch {
    /// Columns of `contracts`, in order.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::black_scholes::{synthetic_chain, BsBatch, CALL, PUT};
    ///
    /// let chain = synthetic_chain(3, 4);
    /// let batch = BsBatch::from_contracts(&chain);
    /// assert_eq!(batch.spot, chain.iter().map(|c| c.spot).collect::<Vec<_>>());
    /// assert_eq!(batch.kind, vec![CALL, PUT, CALL]);
    /// ```
    pub fn from_contracts(contracts: &[Contract]) -> BsBatch {
        let col = |f: fn(&Contract) -> f32| contracts.iter().map(f).collect::<Vec<f32>>();
        BsBatch {
            spot: col(|c| c.spot),
            strike: col(|c| c.strike),
            t: col(|c| c.t),
            rate: col(|c| c.rate),
            vol: col(|c| c.vol),
            kind: contracts.iter().map(|c| kind_word(c.kind)).collect(),
        }
    }
    /// Contract `i` as a struct (a `kind` word other than [`CALL`] reads as a put).
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::black_scholes::{synthetic_chain, BsBatch, OptionKind};
    ///
    /// let chain = synthetic_chain(2, 6);
    /// let mut batch = BsBatch::from_contracts(&chain);
    /// assert_eq!(batch.get(0), chain[0]);
    /// batch.kind[0] = 7; // not CALL: reads as a put
    /// assert_eq!(batch.get(0).kind, OptionKind::Put);
    /// ```
    pub fn get(&self, i: usize) -> Contract {
        Contract {
            spot: self.spot[i],
            strike: self.strike[i],
            t: self.t[i],
            rate: self.rate[i],
            vol: self.vol[i],
            kind: if self.kind[i] == CALL { OptionKind::Call } else { OptionKind::Put },
        }
    }
    /// Number of contracts.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::black_scholes::{synthetic_chain, BsBatch};
    ///
    /// assert_eq!(BsBatch::from_contracts(&synthetic_chain(5, 0)).len(), 5);
    /// ```
    pub fn len(&self) -> usize {
        self.spot.len()
    }
    /// True when empty.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::black_scholes::{synthetic_chain, BsBatch};
    ///
    /// assert!(BsBatch::default().is_empty());
    /// assert!(!BsBatch::from_contracts(&synthetic_chain(1, 0)).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.spot.is_empty()
    }
    /// Borrowed view of all columns.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::black_scholes::{synthetic_chain, validate_batch, BsBatch};
    ///
    /// let batch = BsBatch::from_contracts(&synthetic_chain(3, 1));
    /// let view = batch.as_in();
    /// assert_eq!(view.vol, &batch.vol[..]);
    /// assert!(validate_batch(&view).is_ok());
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::black_scholes::BsResults;
    ///
    /// let r = BsResults::zeroed(3);
    /// assert_eq!(r.len(), 3);
    /// assert_eq!(r.rho, vec![0.0; 3]);
    /// ```
    pub fn zeroed(n: usize) -> BsResults {
        BsResults {
            price: vec![0.0; n],
            delta: vec![0.0; n],
            gamma: vec![0.0; n],
            vega: vec![0.0; n],
            theta: vec![0.0; n],
            rho: vec![0.0; n],
        }
    }
    /// Mutable view of all columns.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::black_scholes::{price_greeks, synthetic_chain, BsBatch, BsResults};
    ///
    /// let batch = BsBatch::from_contracts(&synthetic_chain(2, 1));
    /// let mut r = BsResults::zeroed(2);
    /// price_greeks(&batch.as_in(), &mut r.as_out()).unwrap();
    /// assert!(r.vega.iter().all(|&v| v > 0.0));
    /// ```
    pub fn as_out(&mut self) -> BsOut<'_> {
        BsOut {
            price: &mut self.price,
            delta: &mut self.delta,
            gamma: &mut self.gamma,
            vega: &mut self.vega,
            theta: &mut self.theta,
            rho: &mut self.rho,
        }
    }
    /// Result `i` as a struct.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::black_scholes::{price_batch, price_one, synthetic_chain, BsBatch};
    ///
    /// let chain = synthetic_chain(3, 12);
    /// let r = price_batch(&BsBatch::from_contracts(&chain)).unwrap();
    /// let g = r.get(2);
    /// assert_eq!(g.theta, r.theta[2]);
    /// assert!((g.price - price_one(&chain[2]).price).abs() < 1e-4);
    /// ```
    pub fn get(&self, i: usize) -> Greeks {
        Greeks {
            price: self.price[i],
            delta: self.delta[i],
            gamma: self.gamma[i],
            vega: self.vega[i],
            theta: self.theta[i],
            rho: self.rho[i],
        }
    }
    /// Number of results.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::black_scholes::BsResults;
    ///
    /// assert_eq!(BsResults::zeroed(7).len(), 7);
    /// ```
    pub fn len(&self) -> usize {
        self.price.len()
    }
    /// True when empty.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::black_scholes::BsResults;
    ///
    /// assert!(BsResults::zeroed(0).is_empty());
    /// assert!(!BsResults::zeroed(1).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.price.is_empty()
    }
}

/// Prices a whole batch with the best ISA into fresh results.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::black_scholes::{price_batch, BsBatch, Contract, OptionKind};
///
/// let call = Contract { spot: 110.0, strike: 100.0, t: 0.5, rate: 0.04, vol: 0.3, kind: OptionKind::Call };
/// let put = Contract { kind: OptionKind::Put, ..call };
/// let r = price_batch(&BsBatch::from_contracts(&[call, put])).unwrap();
/// // Put-call parity: C - P = S - K·e^(-rT); delta_C - delta_P = 1.
/// let forward = 110.0 - 100.0 * (-0.04f32 * 0.5).exp();
/// assert!((r.price[0] - r.price[1] - forward).abs() < 1e-4);
/// assert!((r.delta[0] - r.delta[1] - 1.0).abs() < 1e-6);
/// ```
pub fn price_batch(batch: &BsBatch) -> Result<BsResults, KernelError> {
    let mut out = BsResults::zeroed(batch.len());
    price_greeks(&batch.as_in(), &mut out.as_out())?;
    Ok(out)
}
