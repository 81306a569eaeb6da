// gpu_causal.cu — a GPU program for causal profiling (tests/causal/gpu_tests.sh): each step
// prepares its input on the CPU (a loop on one line), launches a kernel that spins on the GPU,
// and waits for it; one NVTX range per step ("step"), whose starts are the progress point.
// Usage: gpu_causal [seconds to run] [ms of CPU work per step] [kernel iterations].
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>

#include "causal_work.h"

__global__ void k_spin(unsigned long long *out, long iters)
{
    unsigned long long x = threadIdx.x + 1;
    for (long i = 0; i < iters; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    if (x == 42) *out = x;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 6.0;
    double ms = argc > 2 ? atof(argv[2]) : 4.0;
    long kiters = argc > 3 ? atol(argv[3]) : 200000;
    long units = (long)(ms * (double)causal_units_per_ms());
    unsigned long long *d = NULL;
    if (cudaMalloc(&d, sizeof *d) != cudaSuccess) {
        fprintf(stderr, "gpu_causal: no usable GPU\n");
        return 3;
    }
    uint64_t host = 0;
    long steps = 0;
    for (causal_elapsed(); causal_elapsed() < seconds; steps++) {
        nvtxRangePushA("step");
        uint64_t x = (uint64_t)steps;
        for (long i = 0; i < units; i++) CAUSAL_STEP(x); /* LINE_PREPARE */
        host += x;
        k_spin<<<1, 32>>>(d, kiters);
        cudaDeviceSynchronize();
        nvtxRangePop();
    }
    cudaFree(d);
    printf("gpu_causal: %s\n", steps > 0 && host ? "done" : "no work");
    return 0;
}
