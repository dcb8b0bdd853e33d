// gmprt_black_scholes: European Black-Scholes price and five Greeks, one thread per contract
// (grid-stride), f32 struct-of-arrays. The CUDA twin of kernels/src/black_scholes.rs.
//
// Word layout (batch of n, column c at words[c*n ..]): inputs spot, strike, t, rate, vol
// (f32) and kind (u32: 1 call, 0 put); outputs price, delta, gamma, vega, theta, rho (f32).
// The host passes each column's device address as its own pointer argument.
//
// Conventions (as the CPU twin): vega and rho per unit (1.0 = 100 percentage points) of
// vol / rate, theta per calendar year (negative of dV/dT), gamma per unit spot.
//
// Math: accurate CUDA single-precision functions (logf, expf, sqrtf, normcdff — the last is
// erfcf-based, a few ulp), no fast-math intrinsics, so the GPU agrees with the CPU's
// documented approximations to about 1e-5 relative on ordinary contracts.
//
// Edge handling, branch-free (selects only: no divergence inside a warp of mixed contracts),
// as the CPU kernel (kernels/src/black_scholes/simd.rs, SV_MIN):
// * when sv = sigma*sqrt(T) < GMPRT_BS_SV_MIN (in particular T = 0) the contract is priced at
//   its sv -> 0 limit: d1 = d2 = (ln(S/K) + (r + sigma^2/2) T) / GMPRT_BS_SV_MIN, i.e. +-huge
//   by the sign of the forward moneyness (0 exactly at the money), so the price is the
//   discounted intrinsic value and delta a step; gamma and theta's diffusion term, the two
//   terms with 1/sv, are set to 0; vega = S phi(d1) sqrt(T) is 0 at T = 0 by itself.
// * theta's diffusion term S phi(d1) sigma / (2 sqrt T) is computed as
//   S phi(d1) sigma^2 / (2 sv), so T = 0 needs no second guard.
// * Calls and puts share one formula with sgn = +1 (kind == 1, call) or -1 (any other kind
//   word, put — the host validates kinds):
//     price = sgn * (S N(sgn d1) - K D N(sgn d2)),  delta = sgn * N(sgn d1),
//     theta = -S phi(d1) sigma^2 / (2 sv) - sgn * r K D N(sgn d2),
//     rho   = sgn * T K D N(sgn d2),  with D = exp(-rT);
//   for a put this is K D N(-d2) - S N(-d1), -N(-d1), ... — N(-x) evaluated directly, not
//   as 1 - N(x), so deep out-of-the-money values keep their relative accuracy.

// Floor on sigma*sqrt(T) (the CPU's SV_MIN): keeps 1/sv and phi/(S sv) finite in f32 for any
// spot above 1e-18, and no valid contract with sigma*sqrt(T) of practical size is affected.
#define GMPRT_BS_SV_MIN 1e-20f
// 1 / sqrt(2 pi), for the normal density.
#define GMPRT_INV_SQRT_2PI 0.3989422804014327f

// One contract: price and the five Greeks into g[0..6] (price, delta, gamma, vega, theta, rho),
// by the formulas above. One body for both kernels of this file.
__device__ __forceinline__ void gmprt_bs_one(float S, float K, float T, float r, float sigma, unsigned kind,
                                             float* g)
{
    float sgn = kind == 1u ? 1.0f : -1.0f;
    float sqrt_t = sqrtf(T);
    float sv = sigma * sqrt_t;
    bool degenerate = sv < GMPRT_BS_SV_MIN;
    float inv_sv = 1.0f / fmaxf(sv, GMPRT_BS_SV_MIN);
    float d1 = (logf(S / K) + (r + 0.5f * sigma * sigma) * T) * inv_sv;
    float d2 = d1 - sv;
    float kd = K * expf(-r * T);
    float pdf = GMPRT_INV_SQRT_2PI * expf(-0.5f * d1 * d1);
    float kdn2 = kd * normcdff(sgn * d2);
    float n1 = normcdff(sgn * d1);
    float s_pdf = S * pdf;
    float diffusion = degenerate ? 0.0f : 0.5f * s_pdf * sigma * sigma * inv_sv;

    g[0] = sgn * (S * n1 - kdn2);
    g[1] = sgn * n1;
    g[2] = degenerate ? 0.0f : pdf * inv_sv / S;
    g[3] = s_pdf * sqrt_t;
    g[4] = -sgn * r * kdn2 - diffusion;
    g[5] = sgn * T * kdn2;
}

extern "C" __global__ void gmprt_black_scholes(
    const float* __restrict__ spot,
    const float* __restrict__ strike,
    const float* __restrict__ t,
    const float* __restrict__ rate,
    const float* __restrict__ vol,
    const unsigned* __restrict__ kind,
    float* __restrict__ price,
    float* __restrict__ delta,
    float* __restrict__ gamma,
    float* __restrict__ vega,
    float* __restrict__ theta,
    float* __restrict__ rho,
    int n)
{
    // size_t arithmetic: blockIdx.x * blockDim.x overflows 32 bits for n near 2^31.
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)n; i += stride) {
        float g[6];
        gmprt_bs_one(spot[i], strike[i], t[i], rate[i], vol[i], kind[i], g);
        price[i] = g[0];
        delta[i] = g[1];
        gamma[i] = g[2];
        vega[i] = g[3];
        theta[i] = g[4];
        rho[i] = g[5];
    }
}

// gmprt_black_scholes_segment_sums: prices only the contracts of the selected segments and sums
// their position-weighted outputs per selected segment, in one pass with no scratch columns:
// for k < nsel, segment s = sel[k] (contracts offsets[s] .. offsets[s+1] of a book of n, laid
// out as for gmprt_black_scholes, qty beside), sums[k*6 + c] = sum_i qty[i] * g_c(i) in f64.
// For a book resident on the device of which a tick moved a few underlyings: the moved
// segments are repriced where they live and only their aggregates come back. A selected id
// past `segments`, or offsets past n, give an empty (zero) segment, never a read outside the
// columns (the host twin refuses them). Launch shape, block reduction and summation order as
// gmprt_greeks_segment_sum (segmented.cu): one block per selected segment, grid-stride.
extern "C" __global__ void gmprt_black_scholes_segment_sums(
    const float* __restrict__ spot,
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
    __shared__ double warp_sums[6][32];
    unsigned lane = threadIdx.x & 31u;
    unsigned warp = threadIdx.x >> 5;
    unsigned warps = (blockDim.x + 31u) >> 5;
    for (size_t k = blockIdx.x; k < (size_t)nsel; k += gridDim.x) {
        unsigned s = sel[k];
        size_t lo = 0, hi = 0;
        if (s < segments) {
            lo = min((size_t)offsets[s], (size_t)n);
            hi = max(lo, min((size_t)offsets[s + 1], (size_t)n));
        }
        double acc[6];
#pragma unroll
        for (int c = 0; c < 6; ++c) acc[c] = 0.0;
        for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
            float g[6];
            gmprt_bs_one(spot[i], strike[i], t[i], rate[i], vol[i], kind[i], g);
            double q = (double)qty[i];
#pragma unroll
            for (int c = 0; c < 6; ++c) acc[c] += q * (double)g[c];
        }
#pragma unroll
        for (int c = 0; c < 6; ++c) {
            double v = acc[c];
            for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
            if (lane == 0) warp_sums[c][warp] = v;
        }
        __syncthreads();
        if (warp == 0) {
#pragma unroll
            for (int c = 0; c < 6; ++c) {
                double v = lane < warps ? warp_sums[c][lane] : 0.0;
                for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
                if (lane == 0) sums[k * 6 + c] = v;
            }
        }
        // The slots are reused for the block's next segment (the loop bound depends on
        // blockIdx only, so every thread reaches both barriers).
        __syncthreads();
    }
}
