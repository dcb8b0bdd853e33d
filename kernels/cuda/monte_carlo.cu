// Monte Carlo on Philox4x32-10 streams: pi by sampling the unit square (gmprt_pi_hits) and a
// European option by simulated terminal prices (gmprt_option_paths, and gmprt_option_paths_batch for
// many contracts in one launch). The CUDA twins of
// kernels/src/philox.rs and kernels/src/monte_carlo.rs; the same seed draws the same numbers.
//
// Stream layout (fixed, shared with the CPU): block b (u64) of stream `tag` is
//   philox4x32_10(ctr = [b lo, b hi, tag, 0], key = [seed lo, seed hi]),
// with tag GMPRT_TAG_PI = 0 and GMPRT_TAG_PATHS = 1. Both kernels cover blocks 0 .. blocks.
//
// Work split: thread g of the grid takes blocks g, g + G, g + 2G, ... (G = grid threads), keeps
// a private count/sum, the CUDA block reduces those (warp shuffles, then one value per warp in
// shared memory), and thread 0 adds the block's total to the output with one atomicAdd. The
// output must be zeroed before the launch. Block size: any multiple of 32 up to 1024 (the
// host uses 256).
//
// Exactness: pi hit counts are integers, so GPU == CPU exactly. Path sums are f64 sums of the
// same f32 payoffs added in a different order (and the double atomicAdd order varies run to
// run), so they agree with the CPU to rounding, not bit for bit.

#define GMPRT_TAG_PI 0u
#define GMPRT_TAG_PATHS 1u

// Philox4x32 constants (Salmon et al., SC'11; Random123): round multipliers and the Weyl
// key increments (golden ratio and sqrt(3) - 1, as 32-bit fractions).
#define GMPRT_PHILOX_M0 0xD2511F53u
#define GMPRT_PHILOX_M1 0xCD9E8D57u
#define GMPRT_PHILOX_W0 0x9E3779B9u
#define GMPRT_PHILOX_W1 0xBB67AE85u

// 2^-24: scales the top 24 bits of a word to [0, 1) exactly in f32.
#define GMPRT_TWO_POW_M24 (1.0f / 16777216.0f)
// 2 pi in f32 (the f32 nearest 2 pi, as Rust's std::f32::consts::TAU).
#define GMPRT_TWO_PI_F 6.28318548f

struct gmprt_u32x4 {
    unsigned x, y, z, w;
};

__device__ __forceinline__ gmprt_u32x4 gmprt_philox_round(gmprt_u32x4 c, unsigned k0, unsigned k1)
{
    unsigned hi0 = __umulhi(GMPRT_PHILOX_M0, c.x);
    unsigned lo0 = GMPRT_PHILOX_M0 * c.x;
    unsigned hi1 = __umulhi(GMPRT_PHILOX_M1, c.z);
    unsigned lo1 = GMPRT_PHILOX_M1 * c.z;
    gmprt_u32x4 r;
    r.x = hi1 ^ c.y ^ k0;
    r.y = lo1;
    r.z = hi0 ^ c.w ^ k1;
    r.w = lo0;
    return r;
}

// Ten rounds, the key bumped between rounds (nine bumps), as Random123's philox4x32_10.
__device__ __forceinline__ gmprt_u32x4 gmprt_philox4x32_10(gmprt_u32x4 c, unsigned k0, unsigned k1)
{
#pragma unroll
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += GMPRT_PHILOX_W0;
            k1 += GMPRT_PHILOX_W1;
        }
        c = gmprt_philox_round(c, k0, k1);
    }
    return c;
}

// Block `b` of stream `tag` under `seed` (the stream layout above).
__device__ __forceinline__ gmprt_u32x4 gmprt_philox_block(unsigned long long seed, unsigned tag,
                                                          unsigned long long b)
{
    gmprt_u32x4 c;
    c.x = (unsigned)b;
    c.y = (unsigned)(b >> 32);
    c.z = tag;
    c.w = 0u;
    return gmprt_philox4x32_10(c, (unsigned)seed, (unsigned)(seed >> 32));
}

// Uniform in [0, 1): top 24 bits times 2^-24 (philox::unit_f32).
__device__ __forceinline__ float gmprt_unit(unsigned x)
{
    return (float)(x >> 8) * GMPRT_TWO_POW_M24;
}

// Uniform in (0, 1]: (top 24 bits + 1) times 2^-24 (philox::unit_open_f32), safe for logf.
__device__ __forceinline__ float gmprt_unit_open(unsigned x)
{
    return (float)((x >> 8) + 1u) * GMPRT_TWO_POW_M24;
}

// 1 when the 24-bit point (x >> 8, y >> 8) lies inside the quarter circle of radius 2^24:
// x^2 + y^2 < 2^48, exact in 64-bit integers (each square < 2^48, the sum < 2^49).
__device__ __forceinline__ unsigned long long gmprt_pi_hit(unsigned x, unsigned y)
{
    unsigned long long a = x >> 8;
    unsigned long long b = y >> 8;
    return (a * a + b * b < (1ull << 48)) ? 1ull : 0ull;
}

// Sum of `v` over the CUDA block, valid in thread 0. `shared` holds one value per warp
// (at most 32 warps). Every thread of the block must call it.
__device__ __forceinline__ unsigned long long gmprt_block_sum_u64(unsigned long long v,
                                                                  unsigned long long* shared)
{
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    unsigned lane = threadIdx.x & 31u;
    unsigned warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    unsigned warps = (blockDim.x + 31u) >> 5;
    v = 0ull;
    if (warp == 0) {
        v = lane < warps ? shared[lane] : 0ull;
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    }
    return v;
}

// As gmprt_block_sum_u64 for a double.
__device__ __forceinline__ double gmprt_block_sum_f64(double v, double* shared)
{
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    unsigned lane = threadIdx.x & 31u;
    unsigned warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    unsigned warps = (blockDim.x + 31u) >> 5;
    v = 0.0;
    if (warp == 0) {
        v = lane < warps ? shared[lane] : 0.0;
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    }
    return v;
}

// hits[0] += number of the 2 * blocks points of stream GMPRT_TAG_PI that hit (two points per
// Philox block: (w0, w1) and (w2, w3)). hits[0] must be zero (or a running total) on entry.
extern "C" __global__ void gmprt_pi_hits(unsigned long long seed, unsigned long long blocks,
                                         unsigned long long* hits)
{
    __shared__ unsigned long long warp_sums[32];
    unsigned long long stride = (unsigned long long)blockDim.x * gridDim.x;
    unsigned long long count = 0ull;
    for (unsigned long long b = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         b < blocks; b += stride) {
        gmprt_u32x4 r = gmprt_philox_block(seed, GMPRT_TAG_PI, b);
        count += gmprt_pi_hit(r.x, r.y) + gmprt_pi_hit(r.z, r.w);
    }
    count = gmprt_block_sum_u64(count, warp_sums);
    if (threadIdx.x == 0) atomicAdd(hits, count);
}

// Discounted payoff of one path whose standard normal draw is z, as the CPU twin computes it:
// S_T = S exp(drift + vol_sqrt_t z) in f32, then payoff max(sgn (S_T - K), 0) and the discount
// in f64. __fmul_rn / __fadd_rn keep NVRTC from contracting the exponent into an FMA (the
// CPU rounds the product and the sum separately), so only the math functions' last bits
// differ between the two sides.
__device__ __forceinline__ double gmprt_path_payoff(float z, float spot, double strike, float drift,
                                                    float vol_sqrt_t, double sgn, double disc)
{
    double st = (double)(spot * expf(__fadd_rn(drift, __fmul_rn(vol_sqrt_t, z))));
    return fmax(sgn * (st - strike), 0.0) * disc;
}

// This thread's share of one contract's paths: Philox blocks first, first + stride, ... below
// `blocks` of stream GMPRT_TAG_PATHS under `seed`, into *sum and *sum_sq (f64). Each Philox
// block gives four normals by Box-Muller on (unit_open(w0), unit(w1)) and (unit_open(w2),
// unit(w3)), in the order
//   z0 = r1 cos(2 pi u2), z1 = r1 sin(2 pi u2), z2 = r2 cos(2 pi u4), z3 = r2 sin(2 pi u4),
//   r = sqrt(-2 ln u)   (all f32),
// and each normal one path: S_T = S exp((r - sigma^2 / 2) T + sigma sqrt(T) z) (f32). The
// payoff max(+-(S_T - K), 0) is taken in f64, discounted by exp(-r T) (f64), summed in f64 —
// step for step as kernels/src/monte_carlo.rs documents it. One body for both kernels below.
__device__ __forceinline__ void gmprt_paths_partial(unsigned long long seed, float spot, float strike,
                                                    float t, float rate, float vol, int is_call,
                                                    unsigned long long first,
                                                    unsigned long long stride,
                                                    unsigned long long blocks, double* sum_out,
                                                    double* sum_sq_out)
{
    // (r - sigma^2 / 2) T with each operation rounded separately, as on the CPU.
    float drift = __fmul_rn(__fsub_rn(rate, __fmul_rn(__fmul_rn(0.5f, vol), vol)), t);
    float vol_sqrt_t = vol * sqrtf(t);
    double sgn = is_call != 0 ? 1.0 : -1.0;
    double disc = exp(-(double)rate * (double)t);
    double strike64 = (double)strike;
    double sum = 0.0;
    double sum_sq = 0.0;
    for (unsigned long long b = first; b < blocks; b += stride) {
        gmprt_u32x4 r = gmprt_philox_block(seed, GMPRT_TAG_PATHS, b);
        float rad0 = sqrtf(-2.0f * logf(gmprt_unit_open(r.x)));
        float ang0 = GMPRT_TWO_PI_F * gmprt_unit(r.y);
        float rad1 = sqrtf(-2.0f * logf(gmprt_unit_open(r.z)));
        float ang1 = GMPRT_TWO_PI_F * gmprt_unit(r.w);
        float z[4] = {rad0 * cosf(ang0), rad0 * sinf(ang0), rad1 * cosf(ang1), rad1 * sinf(ang1)};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            double p = gmprt_path_payoff(z[j], spot, strike64, drift, vol_sqrt_t, sgn, disc);
            sum += p;
            sum_sq += p * p;
        }
    }
    *sum_out = sum;
    *sum_sq_out = sum_sq;
}

// Adds the CUDA block's sums to out[0] and out[1] (thread 0, one atomicAdd each). Every thread
// of the block must call it; it leaves `shared` free for the next call (a barrier at the end).
__device__ __forceinline__ void gmprt_paths_add(double sum, double sum_sq, double* shared, double* out)
{
    sum = gmprt_block_sum_f64(sum, shared);
    // The shared slots are reused for the second sum: wait until warp 0 has read them all.
    __syncthreads();
    sum_sq = gmprt_block_sum_f64(sum_sq, shared);
    if (threadIdx.x == 0) {
        atomicAdd(&out[0], sum);
        atomicAdd(&out[1], sum_sq);
    }
    __syncthreads();
}

// sums[0] += sum of discounted payoffs, sums[1] += sum of their squares, over the 4 * blocks
// paths of stream GMPRT_TAG_PATHS (gmprt_paths_partial), the grid striding over the blocks.
extern "C" __global__ void gmprt_option_paths(unsigned long long seed, float spot, float strike,
                                              float t, float rate, float vol, int is_call,
                                              unsigned long long blocks, double* sums)
{
    __shared__ double warp_sums[32];
    unsigned long long stride = (unsigned long long)blockDim.x * gridDim.x;
    unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    double sum, sum_sq;
    gmprt_paths_partial(seed, spot, strike, t, rate, vol, is_call, first, stride, blocks, &sum, &sum_sq);
    gmprt_paths_add(sum, sum_sq, warp_sums, sums);
}

// Many contracts in one launch: for each contract c < n, sums[2c] and sums[2c + 1] += the sums of
// its 4 * blocks paths under seeds[c], exactly as gmprt_option_paths(seeds[c], params of c,
// blocks, sums + 2c) would add them. params[6c .. 6c + 6] = spot, strike, t, rate, vol, is_call
// (1.0f: call, 0.0f: put). Grid: row y (blockIdx.y) takes contracts y, y + gridDim.y, ...; the
// gridDim.x CUDA blocks of a row stride over that contract's Philox blocks. `sums` (2n doubles)
// must be zeroed before the launch.
extern "C" __global__ void gmprt_option_paths_batch(const unsigned long long* seeds, const float* params,
                                                    unsigned n, unsigned long long blocks, double* sums)
{
    __shared__ double warp_sums[32];
    unsigned long long stride = (unsigned long long)blockDim.x * gridDim.x;
    unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    // The loop bound is the same for every thread of a CUDA block (blockIdx.y), so the
    // barriers inside gmprt_paths_add are reached by all of them.
    for (unsigned c = blockIdx.y; c < n; c += gridDim.y) {
        const float* p = params + 6ull * c;
        double sum, sum_sq;
        gmprt_paths_partial(seeds[c], p[0], p[1], p[2], p[3], p[4], p[5] != 0.0f ? 1 : 0, first, stride,
                            blocks, &sum, &sum_sq);
        gmprt_paths_add(sum, sum_sq, warp_sums, sums + 2ull * c);
    }
}
