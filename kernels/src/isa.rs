//! Run-time choice of the CPU instruction set the vectorised kernels are compiled for.
//! STUB: the kernels helper fills this in (detection cached; `GMPRT_ISA=scalar|avx2|avx512`
//! may force a lower level, never a higher one than the CPU has).

/// An instruction-set level the CPU kernels have a build for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Isa {
    /// Portable code (whatever the target's baseline gives).
    Scalar,
    /// AVX2 + FMA (8 f32 lanes).
    Avx2,
    /// AVX-512 F/DQ/VL (16 f32 lanes).
    Avx512,
}

impl Isa {
    /// The best level this CPU supports (cached), lowered by `GMPRT_ISA` if set.
    pub fn detect() -> Isa {
        todo!()
    }
    /// Every level this CPU can run, lowest first.
    pub fn available() -> Vec<Isa> {
        todo!()
    }
    /// Lower-case name: `scalar`, `avx2`, `avx512`.
    pub fn name(self) -> &'static str {
        todo!()
    }
}
