//! gmprt-kernels: each compute kernel twice, with the same math — a CUDA C source compiled at
//! run time by NVRTC (`kernels/cuda/*.cu`, embedded by [`cuda`]) and a vectorised CPU version —
//! plus f64 references for tests. It depends on no crate of ours, so the runtime and the
//! offload layer can both use it.
//!
//! CPU kernels: [`black_scholes`] (price + five Greeks, f32, with [`math`]'s branch-free
//! exp/ln/Φ/φ), [`monte_carlo`] (π and option paths on [`philox`] streams), [`saxpy`] and
//! [`sgemm`], and [`segmented`] (per-segment position-weighted sums of Black-Scholes
//! outputs, e.g. a book's Greeks per underlying). The vectorised ones are compiled once per
//! instruction-set level (AVX-512, AVX2+FMA, portable) from one `#[inline(always)]` body and
//! dispatched at run time by [`Isa::detect`]; every level gives the same results up to the
//! documented rounding.
//!
//! Data is struct-of-arrays f32. The offload layer moves batches as *word buffers*: `u32`
//! words, column-major with stride `n` (column `c` of a batch of `n` items is
//! `words[c * n..(c + 1) * n]`), f32 columns as their bits. Every kernel has a `*_words` entry
//! point over that layout, used identically by the CPU path and the CUDA launch.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod black_scholes;
pub mod cuda;
pub mod error;
pub mod isa;
pub mod math;
pub mod monte_carlo;
pub mod parallel;
pub mod philox;
pub mod precision;
pub mod saxpy;
pub mod segmented;
pub mod sgemm;

pub use error::{InvalidInput, KernelError};
pub use isa::Isa;
pub use parallel::{Parallel, ScopedThreads};
