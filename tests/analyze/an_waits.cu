// an_waits.cu — `omniprof analyze` on real CUPTI data (tests/gpu/run.sh part "analyzewaits",
// gpu_waits.py): which stream a stream synchronize waited for, and the overlap of copies with
// kernels. Stream 1 runs a long kernel (spin_long), stream 2 a short one (spin_short), stream 3
// a pinned host-to-device copy while spin_long runs; the host synchronizes stream 2 only, spins
// on the CPU, then synchronizes the device.
// usage: an_waits [LONG_MS SHORT_MS CPU_MS] (gpu_waits.py: 200 50 200, so that spin_long ends
// during the CPU spin and the device synchronize waits for nothing)
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__global__ void spin_long(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

__global__ void spin_short(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    double long_ms = argc > 1 ? atof(argv[1]) : 200, short_ms = argc > 2 ? atof(argv[2]) : 50;
    double cpu_ms = argc > 3 ? atof(argv[3]) : 100;
    int clk_khz = 0;
    cudaDeviceGetAttribute(&clk_khz, cudaDevAttrClockRate, 0);
    cudaStream_t s1, s2, s3;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking);
    size_t bytes = 64u << 20;
    void *h = NULL, *d = NULL;
    if (cudaMallocHost(&h, bytes) != cudaSuccess || cudaMalloc(&d, bytes) != cudaSuccess) {
        fprintf(stderr, "an_waits: no memory\n");
        return 1;
    }
    spin_short<<<1, 1, 0, s2>>>(1000); /* warm-up: modules loaded before the measured part */
    cudaDeviceSynchronize();
    for (int it = 0; it < 3; it++) {
        spin_long<<<1, 1, 0, s1>>>((long long)(long_ms * clk_khz));
        spin_short<<<1, 1, 0, s2>>>((long long)(short_ms * clk_khz));
        cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s3);
        cudaStreamSynchronize(s2);
        double t = now_ms();
        while (now_ms() - t < cpu_ms) {
        }
        cudaDeviceSynchronize();
    }
    printf("an_waits done\n");
    return 0;
}
