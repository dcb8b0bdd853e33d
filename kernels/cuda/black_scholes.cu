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
        float S = spot[i];
        float K = strike[i];
        float T = t[i];
        float r = rate[i];
        float sigma = vol[i];
        float sgn = kind[i] == 1u ? 1.0f : -1.0f;

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

        price[i] = sgn * (S * n1 - kdn2);
        delta[i] = sgn * n1;
        gamma[i] = degenerate ? 0.0f : pdf * inv_sv / S;
        vega[i] = s_pdf * sqrt_t;
        theta[i] = -sgn * r * kdn2 - diffusion;
        rho[i] = sgn * T * kdn2;
    }
}
