// an_gpu.cu — CUDA programs with planted problems and a knob, for `omniprof analyze` on the GPU
// machine (tests/analyze/gpu_analyze.py, tests/gpu/run.sh part "analyze"). Kernels spin on the
// GPU clock, CPU work on the monotonic clock, so each piece lasts what its argument says.
// usage: an_gpu MODE FIXED   (FIXED 0: the planted problem, 1: the program with it fixed)
//   critical  20 x: kernel spin_a (2 ms, waited for at once: on the critical path; FIXED: 1 ms),
//             kernel spin_b (1 ms) hidden behind 5 ms of CPU work, then a synchronize
//   syncloop  2000 x: a 25 us kernel, cudaDeviceSynchronize, 30 us CPU (the synchronize keeps
//             CPU and GPU from overlapping; FIXED: one synchronize at the end)
//   pageable  64 x: 64 MiB cudaMemcpyAsync from malloc'ed memory, a 1 ms kernel
//             (FIXED: cudaMallocHost memory)
//   tiny      20000 x: a 2 us kernel launched after 20 us of CPU work (FIXED: 10 us of CPU work)
//   streams   20 x: kernel (2 ms) on stream 1, synchronize, kernel (2 ms) on stream 2,
//             synchronize (FIXED: both launched, then one synchronize)
//   clean     200 x a 1 ms kernel back to back, one synchronize
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long long g_khz;

__global__ void spin(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}
__global__ void spin_a(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}
__global__ void spin_b(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

static void gpu_us(double us, cudaStream_t s = 0, int which = 0)
{
    long long c = (long long)(us * (double)g_khz / 1000.0);
    if (which == 1) spin_a<<<1, 1, 0, s>>>(c);
    else if (which == 2) spin_b<<<1, 1, 0, s>>>(c);
    else spin<<<1, 1, 0, s>>>(c);
}

static void cpu_us(double us)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long long ns = (long long)(us * 1000.0);
    do clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) < ns);
}

#define CK(x)                                                                                       \
    do {                                                                                            \
        cudaError_t e_ = (x);                                                                       \
        if (e_ != cudaSuccess) {                                                                    \
            fprintf(stderr, "an_gpu: %s: %s\n", #x, cudaGetErrorString(e_));                         \
            return 1;                                                                               \
        }                                                                                           \
    } while (0)

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "clean";
    int fixed = argc > 2 ? atoi(argv[2]) : 0;
    int dev = 0, khz = 0;
    CK(cudaSetDevice(dev));
    CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
    g_khz = khz;
    CK(cudaFree(0));
    if (!strcmp(mode, "critical")) {
        for (int i = 0; i < 20; i++) {
            gpu_us(fixed ? 1000 : 2000, 0, 1);
            CK(cudaDeviceSynchronize());
            gpu_us(1000, 0, 2);
            cpu_us(5000);
            CK(cudaDeviceSynchronize());
        }
    } else if (!strcmp(mode, "syncloop")) {
        for (int i = 0; i < 2000; i++) {
            gpu_us(25);
            if (!fixed) CK(cudaDeviceSynchronize());
            cpu_us(30);
        }
        CK(cudaDeviceSynchronize());
    } else if (!strcmp(mode, "pageable")) {
        size_t n = 64u << 20;
        char *h = NULL, *d = NULL;
        if (fixed) CK(cudaMallocHost((void **)&h, n));
        else h = (char *)malloc(n);
        memset(h, 1, n);
        CK(cudaMalloc((void **)&d, n));
        for (int i = 0; i < 64; i++) {
            CK(cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, 0));
            gpu_us(1000);
        }
        CK(cudaDeviceSynchronize());
        CK(cudaFree(d));
        if (fixed) CK(cudaFreeHost(h));
        else free(h);
    } else if (!strcmp(mode, "tiny")) {
        for (int i = 0; i < 20000; i++) {
            cpu_us(fixed ? 10 : 20);
            gpu_us(2);
        }
        CK(cudaDeviceSynchronize());
    } else if (!strcmp(mode, "streams")) {
        cudaStream_t s1, s2;
        CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
        CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
        for (int i = 0; i < 20; i++) {
            gpu_us(2000, s1);
            if (!fixed) CK(cudaStreamSynchronize(s1));
            gpu_us(2000, s2);
            if (!fixed) CK(cudaStreamSynchronize(s2));
            else CK(cudaDeviceSynchronize());
        }
        CK(cudaStreamDestroy(s1));
        CK(cudaStreamDestroy(s2));
    } else {
        for (int i = 0; i < 200; i++) gpu_us(1000);
        CK(cudaDeviceSynchronize());
    }
    CK(cudaGetLastError());
    printf("an_gpu %s %d done\n", mode, fixed);
    return 0;
}
