// gmprt_bs_one: European Black-Scholes price and five Greeks of one contract, in f32. The one
// body of the CUDA Black-Scholes math, included ahead of black_scholes.cu (gmprt_black_scholes)
// and segmented.cu (gmprt_black_scholes_segment_sums) by kernels/src/cuda.rs, so both kernels
// price a contract with the same instructions. The CUDA twin of kernels/src/black_scholes.rs.
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
// by the formulas above.
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
