// Latency kernels (SEEDS story 3, examples/latency_ladder.rs): one thread doing steps that each
// need the one before, so the kernel's time over the steps is the latency of one step, the
// figure a GPU hides behind thousands of threads and a latency-bound program cannot.
//
// gmprt_chase walks a cycle of indices: word `next[p]` holds the word to read after word `p`
// (the host links one word per 128-byte line, the GPU's L1 line, in random order, so no line is
// read twice in a lap and no prefetch can guess the next one), `steps` times from word 0, and
// writes where it ended (so the loads cannot be dropped). Where the buffer fits decides what
// one step costs: L1, L2 or device memory.
extern "C" __global__ void gmprt_chase(const unsigned int* __restrict__ next, unsigned long long steps,
                                       unsigned int* __restrict__ out)
{
    unsigned int p = 0;
    for (unsigned long long i = 0; i < steps; ++i) {
        p = next[p];
    }
    *out = p;
}

// gmprt_fma_chain: `steps` dependent fused multiply-adds, x = x * a + b from x = 1, the result
// written out (a < 1 and b small keep x normal, as the CPU chain of the same example does).
extern "C" __global__ void gmprt_fma_chain(float a, float b, unsigned long long steps, float* __restrict__ out)
{
    float x = 1.0f;
    for (unsigned long long i = 0; i < steps; ++i) {
        x = fmaf(x, a, b);
    }
    *out = x;
}
