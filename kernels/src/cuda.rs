//! The CUDA C sources, embedded, compiled at run time by NVRTC (in gmprt-offload). Each
//! source's math follows its CPU twin in this crate. STUB (CUDA helper fills in).

/// One `.cu` source and the kernels (extern "C" functions) it defines.
#[derive(Clone, Copy, Debug)]
pub struct CudaSource {
    /// Module name (file stem).
    pub name: &'static str,
    /// CUDA C text.
    pub src: &'static str,
    /// `extern "C" __global__` functions it defines.
    pub functions: &'static [&'static str],
}
