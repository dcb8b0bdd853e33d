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

// gmprt_sm_ping_pong: two blocks of one thread (an idle GPU puts them on two SMs) bounce one
// word through the L2, the only place two SMs share: block 0 waits for 2i and writes 2i + 1,
// block 1 waits for 2i + 1 and writes 2i + 2, for `rounds` rounds, so the kernel's time over
// 2 * rounds is one write seen by the other SM. `volatile` keeps every read out of the L1 (and
// in the loop). A wait gives up after 2^22 reads (seconds at L2 latency) and sets *failed, so
// blocks that do not run at once (nothing in CUDA promises it without a cooperative launch)
// end the kernel instead of hanging it.
extern "C" __global__ void gmprt_sm_ping_pong(volatile unsigned int* flag, unsigned int rounds,
                                              unsigned int* failed)
{
    const unsigned int me = blockIdx.x;
    for (unsigned int i = 0; i < rounds; ++i) {
        const unsigned int want = 2 * i + me;
        unsigned int spins = 0;
        while (*flag != want) {
            if (++spins == (1u << 22)) {
                atomicExch(failed, 1u);
                return;
            }
        }
        *flag = want + 1;
    }
}
