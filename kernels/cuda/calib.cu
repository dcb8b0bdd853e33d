// Calibration kernels: gmprt_empty measures the bare launch + completion cost of a stream
// (the floor under every offloaded batch), gmprt_copy a device-to-device copy in 16-byte
// vectors (the device-memory bandwidth roof for the roofline of the memory-bound kernels).

extern "C" __global__ void gmprt_empty() {}

// dst[i] = src[i] for i < n4 (n4 float4s = 16 * n4 bytes), grid-stride. Both pointers must be
// 16-byte aligned (device allocations are 256-byte aligned).
extern "C" __global__ void gmprt_copy(const float4* __restrict__ src, float4* __restrict__ dst,
                                      size_t n4)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        dst[i] = src[i];
    }
}
