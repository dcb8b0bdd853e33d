//! The precision a GEMM's inputs are multiplied at: FP32 (the default), or the tensor cores'
//! TF32 and BF16, which round each input to a shorter mantissa and accumulate in FP32
//! (cuBLAS's `CUBLAS_COMPUTE_32F_FAST_TF32` and `CUBLAS_COMPUTE_32F_FAST_16BF`; issue 27,
//! item 3: PyTorch's TF32 reached 380 TFLOP/s on the H200 where FP32 gave 51.5).
//!
//! An explicit opt-in, never a default: a TF32 product of two numbers carries about 3 decimal
//! digits, a BF16 one about 2. [`Precision::round`] is the input rounding the GPU performs
//! (round to nearest, ties to even, to [`Precision::mantissa_bits`]), so the Host stand-in
//! computes what the GPU computes, and [`Precision::tolerance`] bounds the result against an
//! exact product.
//!
//! ```
//! use gmprt_kernels::precision::Precision;
//! assert_eq!(Precision::default(), Precision::Fp32);
//! // 1 + 2^-12 keeps its last bit in FP32, not in TF32 (10 mantissa bits) or BF16 (7).
//! let x = 1.0 + 2f32.powi(-12);
//! assert_eq!(Precision::Fp32.round(x), x);
//! assert_eq!(Precision::Tf32.round(x), 1.0);
//! assert_eq!(Precision::Bf16.round(x), 1.0);
//! ```

/// How a GEMM's inputs are rounded before they are multiplied (see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Precision {
    /// IEEE single precision throughout (23 mantissa bits): the default.
    #[default]
    Fp32,
    /// Inputs rounded to TF32 (10 mantissa bits, FP32's exponent range), FP32 accumulation.
    Tf32,
    /// Inputs rounded to BF16 (7 mantissa bits, FP32's exponent range), FP32 accumulation.
    Bf16,
}

impl Precision {
    /// Every precision, FP32 first.
    pub const ALL: [Precision; 3] = [Precision::Fp32, Precision::Tf32, Precision::Bf16];

    /// `fp32`, `tf32` or `bf16`.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Tf32 => "tf32",
            Precision::Bf16 => "bf16",
        }
    }

    /// Parses a [`name`](Precision::name) (any case).
    ///
    /// ```
    /// use gmprt_kernels::precision::Precision;
    /// assert_eq!(Precision::parse("TF32"), Ok(Precision::Tf32));
    /// assert!(Precision::parse("fp16").unwrap_err().contains("fp32, tf32 or bf16"));
    /// ```
    pub fn parse(s: &str) -> Result<Precision, String> {
        Precision::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("`{s}` is not a GEMM precision (fp32, tf32 or bf16)"))
    }

    /// Explicit mantissa bits the inputs keep: 23, 10 or 7.
    pub fn mantissa_bits(self) -> u32 {
        match self {
            Precision::Fp32 => 23,
            Precision::Tf32 => 10,
            Precision::Bf16 => 7,
        }
    }

    /// `x` rounded to this precision: to nearest, ties to even, keeping FP32's exponent
    /// (infinities and NaN pass through; a value that rounds past the largest finite one
    /// becomes infinite, as on the GPU).
    pub fn round(self, x: f32) -> f32 {
        let drop = 23 - self.mantissa_bits();
        if drop == 0 || !x.is_finite() {
            return x;
        }
        let bits = x.to_bits();
        let half = 1u32 << (drop - 1);
        // Ties to even: add half − 1, plus the lowest kept bit.
        let keep_lsb = (bits >> drop) & 1;
        let rounded = bits.wrapping_add(half - 1 + keep_lsb) & !((1u32 << drop) - 1);
        f32::from_bits(rounded)
    }

    /// `v` with every element rounded to this precision (a copy; FP32 borrows `v` as is).
    pub fn round_all(self, v: &[f32]) -> std::borrow::Cow<'_, [f32]> {
        match self {
            Precision::Fp32 => std::borrow::Cow::Borrowed(v),
            p => std::borrow::Cow::Owned(v.iter().map(|&x| p.round(x)).collect()),
        }
    }

    /// The bound on |C − exact| for one element, relative to Σ_p |a_ip·b_pj| (the sum of the
    /// magnitudes of its k products): each input rounded to this precision is off by at most
    /// 2^−(bits+1) of itself, so a product by at most 2^−bits (plus a second-order term), and
    /// the k-term FP32 sum adds at most k·2^−24. Twice that sum, for the orders in which
    /// libraries accumulate and the fused multiply-adds they may or may not use.
    ///
    /// ```
    /// use gmprt_kernels::precision::Precision;
    /// // At k = 1024: FP32 about 1.2e-4, TF32 about 2.1e-3, BF16 about 1.6e-2.
    /// assert!(Precision::Fp32.tolerance(1024) < 1.3e-4);
    /// assert!(Precision::Tf32.tolerance(1024) < 2.2e-3);
    /// assert!(Precision::Bf16.tolerance(1024) < 1.7e-2);
    /// ```
    pub fn tolerance(self, k: usize) -> f64 {
        let input = match self {
            Precision::Fp32 => 0.0,
            p => 2f64.powi(-(p.mantissa_bits() as i32)),
        };
        2.0 * (input + k as f64 * 2f64.powi(-24))
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::Precision;

    #[test]
    fn rounding_is_to_nearest_even_at_the_kept_bit() {
        // TF32 keeps 10 bits: the unit in the last place of 1.0 is 2^-10.
        let ulp = 2f32.powi(-10);
        let t = Precision::Tf32;
        assert_eq!(t.round(1.0 + ulp), 1.0 + ulp, "representable: unchanged");
        assert_eq!(t.round(1.0 + 0.75 * ulp), 1.0 + ulp, "above the half: up");
        assert_eq!(t.round(1.0 + 0.25 * ulp), 1.0, "below the half: down");
        assert_eq!(t.round(1.0 + 0.5 * ulp), 1.0, "a tie to the even neighbour (down)");
        assert_eq!(t.round(1.0 + 1.5 * ulp), 1.0 + 2.0 * ulp, "a tie to the even neighbour (up)");
        assert_eq!(t.round(-1.0 - 0.75 * ulp), -1.0 - ulp, "signs are symmetric");
        assert!(t.round(f32::NAN).is_nan());
        assert_eq!(t.round(f32::INFINITY), f32::INFINITY);
        assert_eq!(Precision::Bf16.round(f32::MAX), f32::INFINITY, "rounds past the largest finite");
        // Every rounded value has only the kept bits.
        for p in Precision::ALL {
            let drop = 23 - p.mantissa_bits();
            for i in 0..10_000u32 {
                let x = f32::from_bits(0x3f80_0000 + i * 7919);
                let r = p.round(x).to_bits();
                assert_eq!(r & ((1u32 << drop) - 1), 0, "{p}: {x}");
                assert!(
                    ((p.round(x) - x) / x).abs() <= 2f32.powi(-(p.mantissa_bits() as i32 + 1)),
                    "{p}: {x}"
                );
            }
        }
    }
}
