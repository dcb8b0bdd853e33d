// gmprt_black_scholes: European Black-Scholes price and five Greeks, one thread per contract
// (grid-stride), f32 struct-of-arrays. The CUDA twin of kernels/src/black_scholes.rs.
//
// Word layout (batch of n, column c at words[c*n ..]): inputs spot, strike, t, rate, vol
// (f32) and kind (u32: 1 call, 0 put); outputs price, delta, gamma, vega, theta, rho (f32).
// The host passes each column's device address as its own pointer argument. The math is
// gmprt_bs_one (bs_one.cuh, prepended to this source by kernels/src/cuda.rs).
//
// 16-byte steps: when all twelve columns are 16-byte aligned (n % 4 == 0 and aligned buffers,
// as slot buffers and mapped staging are), each thread step loads one float4 of each input
// column, prices its four contracts and stores one float4 of each output column: a quarter of
// the load and store instructions of one contract at a time, and four independent contracts
// for the scheduler to interleave. The last n % 4 contracts, and every contract when a column
// is not aligned, go one at a time. The launch sizes the grid for ceil(n / 4) threads.

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
    size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t scalar_from = 0;
    size_t any = (size_t)spot | (size_t)strike | (size_t)t | (size_t)rate | (size_t)vol | (size_t)kind
               | (size_t)price | (size_t)delta | (size_t)gamma | (size_t)vega | (size_t)theta | (size_t)rho;
    if ((any & 15) == 0) {
        size_t n4 = (size_t)n / 4;
        for (size_t i = first; i < n4; i += stride) {
            float4 s4 = ((const float4*)spot)[i];
            float4 k4 = ((const float4*)strike)[i];
            float4 t4 = ((const float4*)t)[i];
            float4 r4 = ((const float4*)rate)[i];
            float4 v4 = ((const float4*)vol)[i];
            uint4 c4 = ((const uint4*)kind)[i];
            float a[6], b[6], c[6], d[6];
            gmprt_bs_one(s4.x, k4.x, t4.x, r4.x, v4.x, c4.x, a);
            gmprt_bs_one(s4.y, k4.y, t4.y, r4.y, v4.y, c4.y, b);
            gmprt_bs_one(s4.z, k4.z, t4.z, r4.z, v4.z, c4.z, c);
            gmprt_bs_one(s4.w, k4.w, t4.w, r4.w, v4.w, c4.w, d);
            ((float4*)price)[i] = make_float4(a[0], b[0], c[0], d[0]);
            ((float4*)delta)[i] = make_float4(a[1], b[1], c[1], d[1]);
            ((float4*)gamma)[i] = make_float4(a[2], b[2], c[2], d[2]);
            ((float4*)vega)[i] = make_float4(a[3], b[3], c[3], d[3]);
            ((float4*)theta)[i] = make_float4(a[4], b[4], c[4], d[4]);
            ((float4*)rho)[i] = make_float4(a[5], b[5], c[5], d[5]);
        }
        scalar_from = n4 * 4;
    }
    for (size_t i = scalar_from + first; i < (size_t)n; i += stride) {
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
