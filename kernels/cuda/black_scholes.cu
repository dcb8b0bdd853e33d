// gmprt_black_scholes: European Black-Scholes price and five Greeks, one thread per contract
// (grid-stride), f32 struct-of-arrays. The CUDA twin of kernels/src/black_scholes.rs.
//
// Word layout (batch of n, column c at words[c*n ..]): inputs spot, strike, t, rate, vol
// (f32) and kind (u32: 1 call, 0 put); outputs price, delta, gamma, vega, theta, rho (f32).
// The host passes each column's device address as its own pointer argument. The math is
// gmprt_bs_one (bs_one.cuh, prepended to this source by kernels/src/cuda.rs).

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
