// gmprt_saxpy: out = a * x + y, f32, one thread per element (grid-stride). The CUDA twin of
// kernels/src/saxpy.rs, out of place so that it matches the offload word layout: input words
// x then y (stride n), output words a * x + y. The memory-bound case: 2 flops per 12 bytes.
//
// fmaf: one rounding, as the CPU's FMA builds (mul_add) give; a CPU build without FMA rounds
// twice and may differ by one ulp.

extern "C" __global__ void gmprt_saxpy(int n, float a, const float* __restrict__ x,
                                       const float* __restrict__ y, float* __restrict__ out)
{
    // size_t arithmetic: blockIdx.x * blockDim.x overflows 32 bits for n near 2^31.
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)n; i += stride) {
        out[i] = fmaf(a, x[i], y[i]);
    }
}
