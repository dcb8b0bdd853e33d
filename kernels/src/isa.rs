//! Run-time choice of the CPU instruction set the vectorised kernels are compiled for.
//!
//! [`Isa::detect`] asks the CPU once (`is_x86_feature_detected!`, cached in a `OnceLock`):
//! [`Isa::Avx512`] needs AVX-512 F, DQ and VL plus FMA (and AVX2, which every such CPU has);
//! [`Isa::Avx2`] needs AVX2 and FMA. The environment variable `GMPRT_ISA=scalar|avx2|avx512`,
//! read on the first call, may force a *lower* level (for A/B measurements and for testing the
//! fallbacks); asking for more than the CPU has gives what it has, and an unknown value is
//! ignored with one line on stderr. On non-x86 targets every kernel runs its portable build,
//! so only [`Isa::Scalar`] exists there.
use std::sync::OnceLock;

/// An instruction-set level the CPU kernels have a build for.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::Isa;
///
/// // Levels are ordered: every CPU runs the portable build.
/// assert!(Isa::Scalar < Isa::Avx2 && Isa::Avx2 < Isa::Avx512);
/// assert!(Isa::Scalar.is_available());
/// assert!(Isa::detect() >= Isa::Scalar);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Isa {
    /// Portable code (whatever the target's baseline gives).
    Scalar,
    /// AVX2 + FMA (8 f32 lanes).
    Avx2,
    /// AVX-512 F/DQ/VL (16 f32 lanes).
    Avx512,
}

/// The best level the hardware offers, ignoring `GMPRT_ISA` (not cached: cheap, and the
/// standard library caches the CPUID answers itself).
fn hardware_best() -> Isa {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        let fma = std::arch::is_x86_feature_detected!("fma");
        let avx2 = std::arch::is_x86_feature_detected!("avx2");
        if fma
            && avx2
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl")
        {
            return Isa::Avx512;
        }
        if fma && avx2 {
            return Isa::Avx2;
        }
    }
    Isa::Scalar
}

impl Isa {
    /// The best level this CPU supports (cached), lowered by `GMPRT_ISA` if set.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::Isa;
    ///
    /// let isa = Isa::detect();
    /// assert!(isa.is_available());
    /// assert!(Isa::available().contains(&isa));
    /// assert_eq!(Isa::detect(), isa); // cached
    /// ```
    pub fn detect() -> Isa {
        static DETECTED: OnceLock<Isa> = OnceLock::new();
        *DETECTED.get_or_init(|| {
            let hw = hardware_best();
            match std::env::var("GMPRT_ISA") {
                Ok(v) => match Isa::parse(&v) {
                    Some(wanted) => wanted.min(hw),
                    None => {
                        eprintln!(
                            "gmprt-kernels: ignoring GMPRT_ISA={v:?} (expected scalar, avx2 or avx512); using {}",
                            hw.name()
                        );
                        hw
                    }
                },
                Err(_) => hw,
            }
        })
    }

    /// Every level this CPU can run, lowest first. Not lowered by `GMPRT_ISA`: tests use it to
    /// compare every build the machine can execute.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::Isa;
    ///
    /// let all = Isa::available();
    /// assert_eq!(all[0], Isa::Scalar);
    /// assert!(all.windows(2).all(|w| w[0] < w[1])); // lowest first
    /// assert!(all.iter().all(|i| i.is_available()));
    /// ```
    pub fn available() -> Vec<Isa> {
        let hw = hardware_best();
        [Isa::Scalar, Isa::Avx2, Isa::Avx512].into_iter().filter(|&i| i <= hw).collect()
    }

    /// True when this CPU can run code built for `self`.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::Isa;
    ///
    /// assert!(Isa::Scalar.is_available());
    /// // Availability is monotone: AVX-512 implies AVX2.
    /// assert!(!Isa::Avx512.is_available() || Isa::Avx2.is_available());
    /// ```
    pub fn is_available(self) -> bool {
        self <= hardware_best()
    }

    /// Lower-case name: `scalar`, `avx2`, `avx512`.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::Isa;
    ///
    /// assert_eq!(Isa::Avx512.name(), "avx512");
    /// assert_eq!(Isa::parse(Isa::Avx2.name()), Some(Isa::Avx2));
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
        }
    }

    /// The level named `s` (as [`Isa::name`] spells it, case-insensitive, surrounding spaces
    /// ignored), or `None`.
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::Isa;
    ///
    /// assert_eq!(Isa::parse(" AVX2 "), Some(Isa::Avx2));
    /// assert_eq!(Isa::parse("scalar"), Some(Isa::Scalar));
    /// assert_eq!(Isa::parse("sse4"), None);
    /// ```
    pub fn parse(s: &str) -> Option<Isa> {
        match s.trim().to_ascii_lowercase().as_str() {
            "scalar" => Some(Isa::Scalar),
            "avx2" => Some(Isa::Avx2),
            "avx512" => Some(Isa::Avx512),
            _ => None,
        }
    }

    /// Lanes of f32 one vector register holds at this level (1 for scalar).
    ///
    /// # Examples
    ///
    /// ```
    /// use gmprt_kernels::Isa;
    ///
    /// assert_eq!(Isa::Scalar.f32_lanes(), 1);
    /// assert_eq!(Isa::Avx2.f32_lanes() * 32, 256); // one ymm register
    /// assert_eq!(Isa::Avx512.f32_lanes() * 32, 512); // one zmm register
    /// ```
    pub fn f32_lanes(self) -> usize {
        match self {
            Isa::Scalar => 1,
            Isa::Avx2 => 8,
            Isa::Avx512 => 16,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for isa in [Isa::Scalar, Isa::Avx2, Isa::Avx512] {
            assert_eq!(Isa::parse(isa.name()), Some(isa));
        }
        assert_eq!(Isa::parse(" AVX2 "), Some(Isa::Avx2));
        assert_eq!(Isa::parse("sse"), None);
    }

    #[test]
    fn detect_is_available_and_cached() {
        let d = Isa::detect();
        assert!(d.is_available());
        assert!(Isa::available().contains(&d));
        assert_eq!(Isa::detect(), d);
        assert_eq!(Isa::available()[0], Isa::Scalar);
    }
}
