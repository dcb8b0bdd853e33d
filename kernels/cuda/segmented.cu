// gmprt_greeks_segment_sum: per segment s (contracts offsets[s] .. offsets[s+1], e.g. one
// underlying of a book sorted by underlying), the position-weighted sums sum_i qty[i] * col[i]
// of the six Black-Scholes outputs, in f64. The CUDA twin of kernels/src/segmented.rs
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

extern "C" __global__ void gmprt_greeks_segment_sum(const float* __restrict__ out,
                                                    const float* __restrict__ qty,
                                                    const unsigned* __restrict__ offsets,
                                                    unsigned segments, unsigned n,
                                                    double* __restrict__ sums)
{
    // One partial per output and warp (at most 32 warps per block).
    __shared__ double warp_sums[GMPRT_AGG_WORDS][32];
    unsigned lane = threadIdx.x & 31u;
    unsigned warp = threadIdx.x >> 5;
    unsigned warps = (blockDim.x + 31u) >> 5;
    // size_t indices: s + gridDim.x and i + blockDim.x may pass 2^32, and c * n does for
    // n near 2^32.
    for (size_t s = blockIdx.x; s < (size_t)segments; s += gridDim.x) {
        // Clamped into [0, n): offsets that break the contract (the host twin refuses them)
        // give wrong sums here, never a read outside the columns.
        size_t lo = min((size_t)offsets[s], (size_t)n);
        size_t hi = max(lo, min((size_t)offsets[s + 1], (size_t)n));
        double acc[GMPRT_AGG_WORDS];
#pragma unroll
        for (int c = 0; c < GMPRT_AGG_WORDS; ++c) acc[c] = 0.0;
        for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
            double q = (double)qty[i];
#pragma unroll
            for (int c = 0; c < GMPRT_AGG_WORDS; ++c) acc[c] += q * (double)out[(size_t)c * n + i];
        }
        // Warp sums (valid in lane 0), one slot per output and warp.
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
                if (lane == 0) sums[s * GMPRT_AGG_WORDS + c] = v;
            }
        }
        // The slots are reused by the block's next segment: wait until warp 0 has read them.
        // (The loop condition depends on blockIdx only, so every thread reaches both barriers.)
        __syncthreads();
    }
}
