// counters_app.cu — the workload of the counters GPU tests (tests/gpu/counters.sh): saxpy over
// N floats (reads 2*N*4 bytes of DRAM, writes N*4), an FMA loop (compute bound) and an empty
// kernel, each launched REPS times in that order, then optionally TIMED launches of each kind,
// each followed by a synchronization, to time one launch (with counting: the counting cost).
// Usage: counters_app [N] [REPS] [TIMED]
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cuda_runtime.h>

__global__ void saxpy(int n, float a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void fma_loop(int n, float *y, int iters)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = y[i];
        for (int k = 0; k < iters; k++) v = v * 0.999f + 0.001f;
        y[i] = v;
    }
}

__global__ void empty_kernel() {}

static double now_us()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : (1 << 24);
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    int timed = argc > 3 ? atoi(argv[3]) : 0;
    float *x, *y;
    CK(cudaMalloc(&x, (size_t)n * 4));
    CK(cudaMalloc(&y, (size_t)n * 4));
    CK(cudaMemset(x, 0, (size_t)n * 4));
    CK(cudaMemset(y, 0, (size_t)n * 4));
    CK(cudaDeviceSynchronize());
    int threads = 256, blocks = (n + threads - 1) / threads;
    int launched = 0;
    for (int r = 0; r < reps; r++) {
        saxpy<<<blocks, threads>>>(n, 2.0f, x, y);
        fma_loop<<<blocks, threads>>>(n, y, 64);
        empty_kernel<<<1, 32>>>();
        launched += 3;
    }
    CK(cudaDeviceSynchronize());
    printf("n=%d kernels=%d\n", n, launched);
    for (int kind = 0; kind < 3 && timed > 0; kind++) {
        double t0 = now_us();
        for (int r = 0; r < timed; r++) {
            if (kind == 0) saxpy<<<blocks, threads>>>(n, 2.0f, x, y);
            else if (kind == 1) fma_loop<<<blocks, threads>>>(n, y, 64);
            else empty_kernel<<<1, 32>>>();
            CK(cudaDeviceSynchronize());
        }
        double t1 = now_us();
        printf("time kernel=%s launches=%d us_per_launch=%.2f\n", kind == 0 ? "saxpy" : kind == 1 ? "fma_loop" : "empty",
               timed, (t1 - t0) / timed);
        launched += timed;
    }
    CK(cudaGetLastError());
    printf("total_kernels=%d\n", launched);
    cudaFree(x);
    cudaFree(y);
    return 0;
}
