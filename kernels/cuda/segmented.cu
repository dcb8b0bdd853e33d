// gmprt_greeks_segment_sum: per segment s (contracts offsets[s] .. offsets[s+1], e.g. one
// underlying of a book sorted by underlying), the position-weighted sums sum_i qty[i] * col[i]
// of the six Black-Scholes outputs, in f64. The CUDA twin of kernels/src/segmented/mod.rs
// (sum_by_segment_words), so only the per-segment aggregates leave the device.
//
// Word layout: `out` holds the six output columns price, delta, gamma, vega, theta, rho of a
// batch of n (f32, column c at out[c*n ..], as gmprt_black_scholes writes them when the host
// passes out + c*n as its c-th output pointer); `qty` n f32; `offsets` segments + 1 u32 with
// offsets[0] == 0, non-decreasing, offsets[segments] == n (the host checks this, as the CPU
// twin does); `sums` receives GMPRT_AGG_WORDS doubles per segment, segment-major
// (sums[s*6 + c]), overwritten: no zeroing, no atomics.
//
// Launch shape: one block per segment, grid-stride over segments (any grid of at least one
// block covers any number of segments; the host launches none when segments == 0). Block size:
// any multiple of 32 up to 1024 (full warps for the shuffles; at most 32 warps of shared
// slots). Threads t, t + blockDim, t + 2 blockDim, ... of the segment accumulate privately,
// then the block reduces (warp shuffles, one value per warp in shared memory, warp 0).
//
// Exactness: qty[i] * col[i] is formed in double from two floats, which is exact (24 x 24
// significand bits < 53), so an FMA contraction (--fmad=true) gives the same bits as a
// separate multiply and add. The only rounding is the summation, whose order here (strided,
// then a tree) differs from the CPU's index order: the sums agree to the f64 rounding of a sum
// of the segment's length (gmprt_kernels::segmented::segment_tolerance), not bit for bit. For
// a fixed block size the order is fixed, so the GPU result does not vary run to run.

#define GMPRT_AGG_WORDS 6

// Segment s's contracts [*lo, *hi), clamped into [0, n): offsets that break the contract (the
// host twins refuse them) give wrong sums here, never a read outside the columns. size_t:
// offsets near 2^32 plus blockDim must not wrap.
__device__ __forceinline__ void gmprt_segment_bounds(const unsigned* offsets, size_t s, unsigned n,
                                                     size_t* lo, size_t* hi)
{
    *lo = min((size_t)offsets[s], (size_t)n);
    *hi = max(*lo, min((size_t)offsets[s + 1], (size_t)n));
}

// The block's sums of acc[0..GMPRT_AGG_WORDS] into out[0..GMPRT_AGG_WORDS] (warp shuffles, one
// value per output and warp in `warp_sums`, then warp 0; written by lane 0 of warp 0). Every
// thread of the block must call it; it ends with a barrier, so `warp_sums` is free for the
// block's next segment. The one reduction of both kernels below: one summation order.
__device__ __forceinline__ void gmprt_greeks_block_sum(const double* acc,
                                                       double (*warp_sums)[32], double* out)
{
    unsigned lane = threadIdx.x & 31u;
    unsigned warp = threadIdx.x >> 5;
    unsigned warps = (blockDim.x + 31u) >> 5;
#pragma unroll
    for (int c = 0; c < GMPRT_AGG_WORDS; ++c) {
        double v = acc[c];
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        if (lane == 0) warp_sums[c][warp] = v;
    }
    __syncthreads();
    if (warp == 0) {
#pragma unroll
        for (int c = 0; c < GMPRT_AGG_WORDS; ++c) {
            double v = lane < warps ? warp_sums[c][lane] : 0.0;
            for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
            if (lane == 0) out[c] = v;
        }
    }
    __syncthreads();
}

extern "C" __global__ void gmprt_greeks_segment_sum(const float* __restrict__ out,
                                                    const float* __restrict__ qty,
                                                    const unsigned* __restrict__ offsets,
                                                    unsigned segments, unsigned n,
                                                    double* __restrict__ sums)
{
    // One partial per output and warp (at most 32 warps per block).
    __shared__ double warp_sums[GMPRT_AGG_WORDS][32];
    // size_t indices: s + gridDim.x and i + blockDim.x may pass 2^32, and c * n does for
    // n near 2^32. The loop condition depends on blockIdx only, so every thread of a block
    // reaches the reduction's barriers.
    for (size_t s = blockIdx.x; s < (size_t)segments; s += gridDim.x) {
        size_t lo, hi;
        gmprt_segment_bounds(offsets, s, n, &lo, &hi);
        double acc[GMPRT_AGG_WORDS];
#pragma unroll
        for (int c = 0; c < GMPRT_AGG_WORDS; ++c) acc[c] = 0.0;
        for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
            double q = (double)qty[i];
#pragma unroll
            for (int c = 0; c < GMPRT_AGG_WORDS; ++c) acc[c] += q * (double)out[(size_t)c * n + i];
        }
        gmprt_greeks_block_sum(acc, warp_sums, sums + s * GMPRT_AGG_WORDS);
    }
}

// gmprt_black_scholes_segment_sums: prices only the contracts of the selected segments, each at
// its segment's spot, and sums their position-weighted outputs per selected segment, in one
// pass with no scratch columns: for k < nsel, segment s = sel[k] (contracts offsets[s] ..
// offsets[s+1] of a book of n, laid out as for gmprt_black_scholes, qty beside),
// sums[k*6 + c] = sum_i qty[i] * g_c(i) in f64, each contract priced by gmprt_bs_one
// (bs_one.cuh, prepended to this source by kernels/src/cuda.rs) at spot seg_spot[s]: segments
// are underlyings, and the per-contract spot column is not read. For a book resident on the
// device of which a tick moved a few underlyings: one spot word per underlying goes up, the
// moved segments are repriced where they live and only their aggregates come back. A selected
// id past `segments` gives an empty (zero) segment, and offsets are clamped as above. Launch
// shape, reduction and summation order as gmprt_greeks_segment_sum: one block per selected
// segment, grid-stride. The CPU twin: kernels/src/segmented/selected.rs (price_and_sum_selected_words).
extern "C" __global__ void gmprt_black_scholes_segment_sums(
    const float* __restrict__ seg_spot,
    const float* __restrict__ strike,
    const float* __restrict__ t,
    const float* __restrict__ rate,
    const float* __restrict__ vol,
    const unsigned* __restrict__ kind,
    const float* __restrict__ qty,
    const unsigned* __restrict__ offsets,
    unsigned segments,
    const unsigned* __restrict__ sel,
    unsigned nsel,
    unsigned n,
    double* __restrict__ sums)
{
    __shared__ double warp_sums[GMPRT_AGG_WORDS][32];
    for (size_t k = blockIdx.x; k < (size_t)nsel; k += gridDim.x) {
        size_t lo = 0, hi = 0;
        float spot = 1.0f;
        if (sel[k] < segments) {
            gmprt_segment_bounds(offsets, sel[k], n, &lo, &hi);
            spot = seg_spot[sel[k]];
        }
        double acc[GMPRT_AGG_WORDS];
#pragma unroll
        for (int c = 0; c < GMPRT_AGG_WORDS; ++c) acc[c] = 0.0;
        for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
            float g[GMPRT_AGG_WORDS];
            gmprt_bs_one(spot, strike[i], t[i], rate[i], vol[i], kind[i], g);
            double q = (double)qty[i];
#pragma unroll
            for (int c = 0; c < GMPRT_AGG_WORDS; ++c) acc[c] += q * (double)g[c];
        }
        gmprt_greeks_block_sum(acc, warp_sums, sums + k * GMPRT_AGG_WORDS);
    }
}
