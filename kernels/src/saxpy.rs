//! SAXPY, `y = a·x + y`: the memory-bound case (2 flops per 12 bytes moved). Vectorised like the
//! other kernels (one `#[inline(always)]` loop compiled for AVX-512, AVX2+FMA and portable code,
//! chosen by [`Isa`]). The FMA builds round once (`a·x + y` fused), the portable build twice, so
//! results may differ by an ulp between ISAs.
use crate::{Isa, KernelError};

#[inline(always)]
fn body<const FMA: bool>(a: f32, x: &[f32], y: &mut [f32]) {
    let n = x.len().min(y.len());
    let (x, y) = (&x[..n], &mut y[..n]);
    for i in 0..n {
        y[i] = crate::math::fmadd::<FMA>(a, x[i], y[i]);
    }
}

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,fma,avx2")]
unsafe fn run_avx512(a: f32, x: &[f32], y: &mut [f32]) {
    body::<true>(a, x, y)
}

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_avx2(a: f32, x: &[f32], y: &mut [f32]) {
    body::<true>(a, x, y)
}

/// `y[i] = a * x[i] + y[i]`; lengths must match.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::saxpy::saxpy;
///
/// let x = [1.0, 2.0, 3.0, 4.0];
/// let mut y = [10.0, 20.0, 30.0, 40.0];
/// saxpy(2.0, &x, &mut y).unwrap();
/// assert_eq!(y, [12.0, 24.0, 36.0, 48.0]);
/// assert!(saxpy(2.0, &x, &mut y[1..]).is_err()); // lengths must match
/// ```
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) -> Result<(), KernelError> {
    saxpy_isa(Isa::detect(), a, x, y)
}

/// As [`saxpy`] with a chosen ISA build.
///
/// # Panics
/// If `isa` is not available on this CPU.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::saxpy::saxpy_isa;
/// use gmprt_kernels::Isa;
///
/// // 1037 elements: a vector body and a tail. Small integers are exact in every build.
/// let x: Vec<f32> = (0..1037).map(|i| i as f32).collect();
/// for isa in Isa::available() {
///     let mut y = vec![1.0f32; x.len()];
///     saxpy_isa(isa, -0.5, &x, &mut y).unwrap();
///     assert!(y.iter().enumerate().all(|(i, &v)| v == 1.0 - 0.5 * i as f32), "{}", isa.name());
/// }
/// ```
pub fn saxpy_isa(isa: Isa, a: f32, x: &[f32], y: &mut [f32]) -> Result<(), KernelError> {
    if x.len() != y.len() {
        return Err(KernelError::Shape { what: "y", expected: x.len(), got: y.len() });
    }
    assert!(isa.is_available(), "ISA {} is not available on this CPU", isa.name());
    match isa {
        Isa::Scalar => body::<false>(a, x, y),
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        // SAFETY: `isa.is_available()` (asserted above): the CPU has AVX2 and FMA.
        Isa::Avx2 => unsafe { run_avx2(a, x, y) },
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        // SAFETY: `isa.is_available()`: the CPU has AVX-512 F/DQ/VL, AVX2 and FMA.
        Isa::Avx512 => unsafe { run_avx512(a, x, y) },
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
        _ => unreachable!("only Isa::Scalar is available off x86"),
    }
    Ok(())
}

/// Word-layout SAXPY: `input` is x then y (`2·n` words, f32 bits, stride `n`), `output` (`n`
/// words) receives `a·x + y`.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::saxpy::saxpy_words;
///
/// let (x, y) = ([1.0f32, 2.0, 3.0], [0.5f32, 0.5, 0.5]);
/// let input: Vec<u32> = x.iter().chain(&y).map(|v| v.to_bits()).collect();
/// let mut output = [0u32; 3];
/// saxpy_words(3, 3.0, &input, &mut output).unwrap();
/// assert_eq!(output.map(f32::from_bits), [3.5, 6.5, 9.5]);
/// ```
pub fn saxpy_words(n: usize, a: f32, input: &[u32], output: &mut [u32]) -> Result<(), KernelError> {
    if input.len() != 2 * n {
        return Err(KernelError::Shape { what: "input words", expected: 2 * n, got: input.len() });
    }
    if output.len() != n {
        return Err(KernelError::Shape { what: "output words", expected: n, got: output.len() });
    }
    let (x, y) = input.split_at(n);
    output.copy_from_slice(y);
    saxpy(a, bytemuck::cast_slice(x), bytemuck::cast_slice_mut(output))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_isa_matches_f64_and_checks_lengths() {
        let n = 1037; // a vector body and a tail
        let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
        let y0: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos() * 3.0).collect();
        let a = 1.7f32;
        for isa in Isa::available() {
            let mut y = y0.clone();
            saxpy_isa(isa, a, &x, &mut y).unwrap();
            for i in 0..n {
                let want = a as f64 * x[i] as f64 + y0[i] as f64;
                // At most two roundings of a value of magnitude ≤ |a·x| + |y|.
                let bound = 2.0 * f32::EPSILON as f64 * (a.abs() * x[i].abs() + y0[i].abs()) as f64;
                assert!((y[i] as f64 - want).abs() <= bound, "{}: {i}", isa.name());
            }
            let err = saxpy_isa(isa, a, &x, &mut y[1..]).unwrap_err();
            assert_eq!(err, KernelError::Shape { what: "y", expected: n, got: n - 1 });
        }
        // Word layout.
        let mut input: Vec<u32> = x.iter().map(|v| v.to_bits()).collect();
        input.extend(y0.iter().map(|v| v.to_bits()));
        let mut output = vec![0u32; n];
        saxpy_words(n, a, &input, &mut output).unwrap();
        let mut y = y0.clone();
        saxpy(a, &x, &mut y).unwrap();
        assert!(output.iter().zip(&y).all(|(w, v)| f32::from_bits(*w) == *v));
        assert!(saxpy_words(n, a, &input[1..], &mut output).is_err());
        assert!(saxpy_words(n, a, &input, &mut output[1..]).is_err());
    }
}
