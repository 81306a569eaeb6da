/* cudart_intercept_prog.c — the CUDA runtime and NVTX calls of the intercept-table test, in C
 * against the shared CUDA runtime, runnable without a GPU (each call then returns an error code,
 * which is printed: the output must not change under the tool). Calls: 2 cudaMalloc,
 * 3 cudaMemcpy, 4 cudaLaunchKernel, 5 nvtxRangePushA, 5 nvtxRangePop (cudart_intercept.sh). */
#include <stdio.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

static void not_a_kernel(void) {}

int main(void)
{
    int levels = 0;
    for (int i = 0; i < 5; i++)
        levels += nvtxRangePushA("step");
    void *a = NULL, *b = NULL;
    int e1 = cudaMalloc(&a, 1024), e2 = cudaMalloc(&b, 1024);
    char host[64] = "payload";
    int ec = 0;
    for (int i = 0; i < 3; i++)
        ec += cudaMemcpy(host + 32, host, 8, cudaMemcpyHostToHost);
    int el = 0;
    dim3 g = {1, 1, 1}, bl = {1, 1, 1};
    for (int i = 0; i < 4; i++)
        el += cudaLaunchKernel((const void *)not_a_kernel, g, bl, NULL, 0, 0);
    for (int i = 0; i < 5; i++)
        levels += nvtxRangePop();
    printf("malloc %d %d memcpy %d launch %d nvtx %d\n", e1, e2, ec, el, levels);
    return 0;
}
