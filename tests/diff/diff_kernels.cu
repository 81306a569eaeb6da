// diff_kernels.cu — the GPU program of `omniprof diff`'s GPU test (tests/gpu/run.sh part "diff",
// tests/diff/gpu_diff.sh): ITERS iterations, each an NVTX range "step" launching three kernels
// on one stream, then cudaDeviceSynchronize. Each kernel spins for a number of GPU clock cycles
// (clock64), so its duration is set by its argument, not by the load:
//
//   diff_kernels ITERS CYCLES B_PCT
//
// kernel_a and kernel_c spin CYCLES; kernel_b spins CYCLES x B_PCT / 100 (120: a planted 20 %
// slowdown of kernel_b alone). Prints one line with the iterations done.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__device__ long long g_sink;

__device__ void spin(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
    if (threadIdx.x == 0 && blockIdx.x == 0) g_sink = t0;
}

extern "C" __global__ void kernel_a(long long cycles) { spin(cycles); }
extern "C" __global__ void kernel_b(long long cycles) { spin(cycles); }
extern "C" __global__ void kernel_c(long long cycles) { spin(cycles); }

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: diff_kernels ITERS CYCLES B_PCT\n");
        return 2;
    }
    long iters = atol(argv[1]);
    long long cycles = atoll(argv[2]), b = cycles * atoll(argv[3]) / 100;
    if (cudaFree(0) != cudaSuccess) {
        fprintf(stderr, "diff_kernels: no CUDA device\n");
        return 77;
    }
    for (long i = 0; i < iters; i++) {
        nvtxRangePushA("step");
        kernel_a<<<1, 32>>>(cycles);
        kernel_b<<<1, 32>>>(b);
        kernel_c<<<1, 32>>>(cycles);
        cudaDeviceSynchronize();
        nvtxRangePop();
    }
    cudaError_t e = cudaGetLastError();
    printf("diff_kernels done iters=%ld %s\n", iters, cudaGetErrorString(e));
    return e == cudaSuccess ? 0 : 1;
}
