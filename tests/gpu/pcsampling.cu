// pcsampling.cu — kernels of known character for the PC sampling test (tests/gpu/check_pcsampling.py):
//   k_membound  streams 256 MiB through DRAM: its warps wait on memory (top stall: long scoreboard)
//   k_fma       dependent FMA chains in registers: never waits on memory
//   k_hotloop   one hot loop on the line marked PCS-HOT-LINE: the most sampled source line
// Built with -lineinfo so that CUPTI maps PCs to source lines. Prints EXPECT with the counts.
#include <cuda_runtime.h>
#include <stdio.h>

__global__ void k_membound(const float *x, float *y, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = 2.0f * x[i] + y[i];
}

__global__ void k_fma(float *out, int iters) {
    float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.5f, d = 0.25f;
    for (int i = 0; i < iters; i++) {
        a = fmaf(a, b, c);
        d = fmaf(d, b, a);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a + d;
}

__global__ void k_hotloop(float *out, int iters) {
    float acc = threadIdx.x;
    if (threadIdx.x == 0) out[blockIdx.x] = 0.0f;
    for (int i = 0; i < iters; i++) acc = fmaf(acc, 1.00001f, 0.5f) * 0.999f; // PCS-HOT-LINE
    out[blockIdx.x * blockDim.x + threadIdx.x] += acc;
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

int main() {
    const size_t n = 64u << 20;
    float *x, *y, *o;
    CK(cudaMalloc(&x, n * 4));
    CK(cudaMalloc(&y, n * 4));
    CK(cudaMalloc(&o, 1 << 24));
    CK(cudaMemset(x, 0, n * 4));
    CK(cudaMemset(y, 0, n * 4));
    for (int r = 0; r < 5; r++) k_membound<<<1024, 256>>>(x, y, n);
    for (int r = 0; r < 3; r++) k_fma<<<528, 256>>>(o, 20000);
    for (int r = 0; r < 3; r++) k_hotloop<<<528, 256>>>(o, 20000);
    CK(cudaDeviceSynchronize());
    printf("EXPECT {\"kernels\":{\"k_membound\":5,\"k_fma\":3,\"k_hotloop\":3}}\n");
    cudaFree(x);
    cudaFree(y);
    cudaFree(o);
    return 0;
}
