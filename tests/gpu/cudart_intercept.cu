// cudart_intercept.cu — the GPU program of the CUDA runtime / NVTX intercept-table test
// (cudart_intercept.sh gpu): built with -cudart shared so that the preloaded interposers see its
// calls. Calls: 2 cudaMalloc, 3 cudaMemcpy, 4 cudaLaunchKernel (explicit, not <<<>>>),
// 5 nvtxRangePushA and 5 nvtxRangePop; prints a checksum of the result, which must not change
// under the tool.
#include <cstdio>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

__global__ void add_one(int *v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] += 1;
}

int main()
{
    const int n = 1024;
    static int host[n];
    for (int i = 0; i < n; i++) host[i] = i;
    for (int i = 0; i < 5; i++) nvtxRangePushA("step");
    int *a = nullptr, *b = nullptr;
    if (cudaMalloc((void **)&a, n * sizeof(int)) != cudaSuccess || cudaMalloc((void **)&b, n * sizeof(int)) != cudaSuccess) {
        std::printf("cudaMalloc failed\n");
        return 2;
    }
    cudaMemcpy(a, host, n * sizeof(int), cudaMemcpyHostToDevice);
    int nn = n;
    void *args[] = {&a, &nn};
    for (int i = 0; i < 4; i++) cudaLaunchKernel((const void *)add_one, dim3(n / 128), dim3(128), args, 0, 0);
    cudaMemcpy(b, a, n * sizeof(int), cudaMemcpyDeviceToDevice);
    cudaMemcpy(host, b, n * sizeof(int), cudaMemcpyDeviceToHost);
    for (int i = 0; i < 5; i++) nvtxRangePop();
    long sum = 0;
    for (int i = 0; i < n; i++) sum += host[i];
    std::printf("checksum %ld (expected %ld)\n", sum, (long)n * (n - 1) / 2 + 4L * n);
    return 0;
}
