// gmprt_saxpy: out = a * x + y, f32 (grid-stride). The CUDA twin of kernels/src/saxpy.rs, out
// of place so that it matches the offload word layout: input words x then y (stride n),
// output words a * x + y. The memory-bound case: 2 flops per 12 bytes.
//
// 16-byte steps: when x, y and out are all 16-byte aligned, each thread step loads one float4
// of x and of y and stores one of out, the width of the device-copy roof kernel (gmprt_copy in
// calib.cu), a quarter of the load and store instructions of one float each; the last n % 4
// elements, and every element when an array is not aligned, go one float at a time. Slot
// buffers and mapped staging are 256-byte aligned, so x and out always are, and y = x + n is
// when n % 4 == 0. The launch sizes the grid for ceil(n / 4) threads.
//
// fmaf: one rounding, as the CPU's FMA builds (mul_add) give; a CPU build without FMA rounds
// twice and may differ by one ulp.

extern "C" __global__ void gmprt_saxpy(int n, float a, const float* __restrict__ x,
                                       const float* __restrict__ y, float* __restrict__ out)
{
    // size_t arithmetic: blockIdx.x * blockDim.x overflows 32 bits for n near 2^31.
    size_t stride = (size_t)blockDim.x * gridDim.x;
    size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t scalar_from = 0;
    if ((((size_t)x | (size_t)y | (size_t)out) & 15) == 0) {
        size_t n4 = (size_t)n / 4;
        const float4* x4 = (const float4*)x;
        const float4* y4 = (const float4*)y;
        float4* out4 = (float4*)out;
        for (size_t i = first; i < n4; i += stride) {
            float4 xv = x4[i];
            float4 yv = y4[i];
            out4[i] = make_float4(fmaf(a, xv.x, yv.x), fmaf(a, xv.y, yv.y), fmaf(a, xv.z, yv.z),
                                  fmaf(a, xv.w, yv.w));
        }
        scalar_from = n4 * 4;
    }
    for (size_t i = scalar_from + first; i < (size_t)n; i += stride) {
        out[i] = fmaf(a, x[i], y[i]);
    }
}
