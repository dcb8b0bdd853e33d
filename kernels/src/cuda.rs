//! The CUDA C sources, embedded, compiled at run time by NVRTC (in gmprt-offload). Each
//! source's math follows its CPU twin in this crate; the `.cu` files' headers state the
//! argument lists, the word layout they read and any difference from the CPU (rounding only).
//!
//! Every kernel is `extern "C"` (unmangled names, listed here as constants) and uses a
//! grid-stride loop, so any grid size covers any `n`; the reductions (`monte_carlo`,
//! `segmented`) need a block size that is a multiple of 32, at most 1024.

/// One `.cu` source and the kernels (extern "C" functions) it defines.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::{CudaSource, SAXPY};
///
/// let s: CudaSource = SAXPY;
/// assert_eq!(s.name, "saxpy");
/// for f in s.functions {
///     assert!(s.src.contains(&format!("__global__ void {f}(")));
/// }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct CudaSource {
    /// Module name (file stem).
    pub name: &'static str,
    /// CUDA C text.
    pub src: &'static str,
    /// `extern "C" __global__` functions it defines.
    pub functions: &'static [&'static str],
}

/// `gmprt_black_scholes(spot, strike, t, rate, vol, kind, price, delta, gamma, vega, theta,
/// rho, int n)`: price and Greeks per contract (see [`crate::black_scholes`]).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::{BLACK_SCHOLES, FN_BLACK_SCHOLES};
///
/// assert!(BLACK_SCHOLES.functions.contains(&FN_BLACK_SCHOLES));
/// assert!(BLACK_SCHOLES.src.contains(FN_BLACK_SCHOLES));
/// ```
pub const FN_BLACK_SCHOLES: &str = "gmprt_black_scholes";
/// `gmprt_black_scholes_segment_sums(const f32* seg_spot, 5 input columns (strike .. kind),
/// const f32* qty, const u32* offsets, u32 segments, const u32* sel, u32 nsel, u32 n, f64*
/// sums)`: prices only the contracts of the selected segments of a book of `n`, each at its
/// segment's spot (`seg_spot`, one per segment), and writes their position-weighted sums per
/// selected segment (6 f64 each). The CPU twin is
/// [`price_and_sum_selected_words`](crate::segmented::price_and_sum_selected_words).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::{FN_BLACK_SCHOLES_SEGMENT_SUMS, SEGMENTED};
///
/// assert!(SEGMENTED.functions.contains(&FN_BLACK_SCHOLES_SEGMENT_SUMS));
/// assert!(SEGMENTED.src.contains(FN_BLACK_SCHOLES_SEGMENT_SUMS));
/// assert!(SEGMENTED.src.contains("gmprt_bs_one"), "the shared Black-Scholes body comes first");
/// ```
pub const FN_BLACK_SCHOLES_SEGMENT_SUMS: &str = "gmprt_black_scholes_segment_sums";
/// `gmprt_pi_hits(u64 seed, u64 blocks, u64* hits)`: adds the hits of Philox blocks
/// `0..blocks` of stream [`TAG_PI`](crate::philox::TAG_PI) to `*hits`.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::{FN_PI_HITS, MONTE_CARLO};
///
/// assert!(MONTE_CARLO.functions.contains(&FN_PI_HITS));
/// assert!(MONTE_CARLO.src.contains(FN_PI_HITS));
/// ```
pub const FN_PI_HITS: &str = "gmprt_pi_hits";
/// `gmprt_option_paths(u64 seed, f32 spot, f32 strike, f32 t, f32 rate, f32 vol, int is_call,
/// u64 blocks, f64* sums)`: adds the discounted payoff sum and sum of squares of paths from
/// blocks `0..blocks` of stream [`TAG_PATHS`](crate::philox::TAG_PATHS) to `sums[0..2]`.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::{FN_OPTION_PATHS, MONTE_CARLO};
///
/// assert!(MONTE_CARLO.functions.contains(&FN_OPTION_PATHS));
/// assert!(MONTE_CARLO.src.contains(FN_OPTION_PATHS));
/// ```
pub const FN_OPTION_PATHS: &str = "gmprt_option_paths";
/// `gmprt_option_paths_batch(const u64* seeds, const f32* params, u32 n, u64 blocks, f64* sums)`:
/// for each of `n` contracts, what [`FN_OPTION_PATHS`] adds for it, into `sums[2c..2c + 2]`, in
/// one launch. `params[6c..6c + 6]` = spot, strike, t, rate, vol, is_call (1.0 or 0.0). The CPU
/// twin is [`option_paths_sum_many`](crate::monte_carlo::option_paths_sum_many).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::{FN_OPTION_PATHS_BATCH, MONTE_CARLO};
///
/// assert!(MONTE_CARLO.functions.contains(&FN_OPTION_PATHS_BATCH));
/// assert!(MONTE_CARLO.src.contains(FN_OPTION_PATHS_BATCH));
/// ```
pub const FN_OPTION_PATHS_BATCH: &str = "gmprt_option_paths_batch";
/// `gmprt_saxpy(int n, f32 a, const f32* x, const f32* y, f32* out)`: `out = a·x + y`.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::{FN_SAXPY, SAXPY};
///
/// assert_eq!(SAXPY.functions, &[FN_SAXPY]);
/// assert!(SAXPY.src.contains(FN_SAXPY));
/// ```
pub const FN_SAXPY: &str = "gmprt_saxpy";
/// `gmprt_greeks_segment_sum(const f32* out, const f32* qty, const u32* offsets, u32 segments,
/// u32 n, f64* sums)`: per segment, the sums of `qty` times each of the six Black-Scholes
/// output columns of `out` (stride `n`) into `sums[s * 6..]` (see [`crate::segmented`]).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::{FN_BLACK_SCHOLES_SEGMENT_SUMS, FN_GREEKS_SEGMENT_SUM, SEGMENTED};
///
/// assert_eq!(SEGMENTED.functions, &[FN_GREEKS_SEGMENT_SUM, FN_BLACK_SCHOLES_SEGMENT_SUMS]);
/// assert!(SEGMENTED.src.contains(FN_GREEKS_SEGMENT_SUM));
/// ```
pub const FN_GREEKS_SEGMENT_SUM: &str = "gmprt_greeks_segment_sum";
/// `gmprt_empty()`: does nothing (launch-overhead calibration).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::{CALIB, FN_EMPTY};
///
/// assert!(CALIB.functions.contains(&FN_EMPTY));
/// assert!(CALIB.src.contains(FN_EMPTY));
/// ```
pub const FN_EMPTY: &str = "gmprt_empty";
/// `gmprt_copy(const float4* src, float4* dst, size_t n4)`: device-to-device copy of `n4`
/// 16-byte vectors (bandwidth calibration).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::{CALIB, FN_COPY};
///
/// assert!(CALIB.functions.contains(&FN_COPY));
/// assert!(CALIB.src.contains(FN_COPY));
/// ```
pub const FN_COPY: &str = "gmprt_copy";

/// `gmprt_chase(const unsigned int* next, unsigned long long steps, unsigned int* out)`: one
/// thread follows `p = next[p]` from 0, `steps` dependent loads (the load-latency rungs).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::{FN_CHASE, LATENCY};
///
/// assert!(LATENCY.functions.contains(&FN_CHASE));
/// assert!(LATENCY.src.contains(FN_CHASE));
/// ```
pub const FN_CHASE: &str = "gmprt_chase";
/// `gmprt_fma_chain(float a, float b, unsigned long long steps, float* out)`: one thread, `steps`
/// dependent FMAs (the FMA-latency rung).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::{FN_FMA_CHAIN, LATENCY};
///
/// assert!(LATENCY.functions.contains(&FN_FMA_CHAIN));
/// assert!(LATENCY.src.contains(FN_FMA_CHAIN));
/// ```
pub const FN_FMA_CHAIN: &str = "gmprt_fma_chain";
/// `gmprt_sm_ping_pong(volatile unsigned int* flag, unsigned int rounds, unsigned int* failed)`:
/// two one-thread blocks bounce a word through the L2 (two SMs' only shared level), `2·rounds`
/// writes each seen by the other; sets `*failed` if a wait gave up (the blocks did not run at
/// once).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::{FN_SM_PING_PONG, LATENCY};
///
/// assert!(LATENCY.functions.contains(&FN_SM_PING_PONG));
/// assert!(LATENCY.src.contains(FN_SM_PING_PONG));
/// ```
pub const FN_SM_PING_PONG: &str = "gmprt_sm_ping_pong";

/// Black-Scholes price and Greeks (`kernels/cuda/black_scholes.cu`, after the math it shares
/// with [`SEGMENTED`], `kernels/cuda/bs_one.cuh`).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::BLACK_SCHOLES;
///
/// assert_eq!(BLACK_SCHOLES.name, "black_scholes");
/// assert!(BLACK_SCHOLES.src.contains("extern \"C\""));
/// ```
pub const BLACK_SCHOLES: CudaSource = CudaSource {
    name: "black_scholes",
    // The math (gmprt_bs_one) first: segmented.cu prices with the same body.
    src: concat!(include_str!("../cuda/bs_one.cuh"), include_str!("../cuda/black_scholes.cu")),
    functions: &[FN_BLACK_SCHOLES],
};

/// Philox4x32-10 Monte Carlo: π hits and option path sums, one contract or many per launch
/// (`kernels/cuda/monte_carlo.cu`).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::MONTE_CARLO;
///
/// assert_eq!(MONTE_CARLO.functions.len(), 3);
/// assert!(!MONTE_CARLO.src.contains('\0'), "NVRTC takes a C string");
/// ```
pub const MONTE_CARLO: CudaSource = CudaSource {
    name: "monte_carlo",
    src: include_str!("../cuda/monte_carlo.cu"),
    functions: &[FN_PI_HITS, FN_OPTION_PATHS, FN_OPTION_PATHS_BATCH],
};

/// SAXPY, out of place (`kernels/cuda/saxpy.cu`).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::SAXPY;
///
/// assert!(SAXPY.src.contains("__global__ void gmprt_saxpy("));
/// ```
pub const SAXPY: CudaSource =
    CudaSource { name: "saxpy", src: include_str!("../cuda/saxpy.cu"), functions: &[FN_SAXPY] };

/// Per-segment position-weighted sums of Black-Scholes outputs (`kernels/cuda/segmented.cu`),
/// the twin of [`crate::segmented::sum_by_segment_words`], and the resident book's pricing
/// and sums of selected segments in one pass (after `kernels/cuda/bs_one.cuh`, the math it
/// shares with [`BLACK_SCHOLES`]).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::SEGMENTED;
///
/// assert_eq!(SEGMENTED.name, "segmented");
/// assert!(SEGMENTED.src.contains("__syncthreads()"));
/// ```
pub const SEGMENTED: CudaSource = CudaSource {
    name: "segmented",
    // gmprt_bs_one first, for gmprt_black_scholes_segment_sums (as in BLACK_SCHOLES).
    src: concat!(include_str!("../cuda/bs_one.cuh"), include_str!("../cuda/segmented.cu")),
    functions: &[FN_GREEKS_SEGMENT_SUM, FN_BLACK_SCHOLES_SEGMENT_SUMS],
};

/// Calibration kernels: empty launch and device copy (`kernels/cuda/calib.cu`).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::CALIB;
///
/// assert_eq!(CALIB.functions, &["gmprt_empty", "gmprt_copy"]);
/// ```
pub const CALIB: CudaSource =
    CudaSource { name: "calib", src: include_str!("../cuda/calib.cu"), functions: &[FN_EMPTY, FN_COPY] };

/// Latency kernels: one thread's pointer chase and FMA chain, and a word bounced between two SMs
/// (`kernels/cuda/latency.cu`, for `examples/latency_ladder.rs`).
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::LATENCY;
///
/// assert_eq!(LATENCY.functions, &["gmprt_chase", "gmprt_fma_chain", "gmprt_sm_ping_pong"]);
/// ```
pub const LATENCY: CudaSource = CudaSource {
    name: "latency",
    src: include_str!("../cuda/latency.cu"),
    functions: &[FN_CHASE, FN_FMA_CHAIN, FN_SM_PING_PONG],
};

/// Every embedded source, each name once.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::ALL;
///
/// let mut names: Vec<&str> = ALL.iter().map(|s| s.name).collect();
/// names.sort_unstable();
/// names.dedup();
/// assert_eq!(names, ["black_scholes", "calib", "latency", "monte_carlo", "saxpy", "segmented"]);
/// ```
pub const ALL: &[CudaSource] = &[BLACK_SCHOLES, MONTE_CARLO, SAXPY, SEGMENTED, CALIB, LATENCY];

/// The source whose module name is `name`, if any.
///
/// # Examples
///
/// ```
/// use gmprt_kernels::cuda::{by_name, FN_PI_HITS};
///
/// assert!(by_name("monte_carlo").unwrap().functions.contains(&FN_PI_HITS));
/// assert!(by_name("nope").is_none());
/// ```
pub fn by_name(name: &str) -> Option<&'static CudaSource> {
    ALL.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_function_is_defined_extern_c_in_its_source() {
        let mut names: Vec<&str> = ALL.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len(), "module names must be unique");
        for s in ALL {
            assert!(!s.functions.is_empty(), "{} lists no function", s.name);
            for f in s.functions {
                let decl = format!("__global__ void {f}(");
                assert!(s.src.contains(&decl), "{}: no `{decl}`", s.name);
                assert!(s.src.contains("extern \"C\""), "{}: kernels must be extern \"C\"", s.name);
            }
            assert!(!s.src.contains('\0'), "{}: NUL in source (NVRTC takes a C string)", s.name);
        }
        assert_eq!(by_name("saxpy").map(|s| s.name), Some("saxpy"));
        assert!(by_name("nope").is_none());
    }
}
