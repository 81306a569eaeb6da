// demo_cuda.cu — the CUDA example of `make demo` on a machine with an NVIDIA GPU: two streams
// of copies and kernels inside NVTX ranges, so that the report shows kernels, copies, API calls,
// NVTX regions and GPU lanes on the timeline. Runs unchanged without the profiler.
// usage: omniprof-demo-cuda [STEPS]   (default 20)
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>

__global__ void saxpy(float *y, const float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void smooth(float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > 0 && i + 1 < n) y[i] = 0.25f * y[i - 1] + 0.5f * y[i] + 0.25f * y[i + 1];
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "demo_cuda: %s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 20;
    const int n = 1 << 22;
    float *h = (float *)malloc(n * sizeof(float)), *x, *y[2];
    if (!h) return 1;
    for (int i = 0; i < n; i++) h[i] = (float)(i % 97);
    cudaStream_t s[2];
    CK(cudaMalloc(&x, n * sizeof(float)));
    for (int k = 0; k < 2; k++) {
        CK(cudaMalloc(&y[k], n * sizeof(float)));
        CK(cudaStreamCreate(&s[k]));
    }
    nvtxRangePushA("setup");
    CK(cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice));
    nvtxRangePop();
    for (int t = 0; t < steps; t++) {
        nvtxRangePushA("step");
        for (int k = 0; k < 2; k++) {
            CK(cudaMemcpyAsync(y[k], h, n * sizeof(float), cudaMemcpyHostToDevice, s[k]));
            saxpy<<<(n + 255) / 256, 256, 0, s[k]>>>(y[k], x, 2.0f, n);
            for (int r = 0; r < 3; r++) smooth<<<(n + 255) / 256, 256, 0, s[k]>>>(y[k], n);
        }
        CK(cudaDeviceSynchronize());
        nvtxRangePop();
    }
    CK(cudaMemcpy(h, y[0], n * sizeof(float), cudaMemcpyDeviceToHost));
    printf("demo_cuda: %d steps, y[1000] = %.3f\n", steps, h[1000]);
    for (int k = 0; k < 2; k++) {
        cudaFree(y[k]);
        cudaStreamDestroy(s[k]);
    }
    cudaFree(x);
    free(h);
    return 0;
}
