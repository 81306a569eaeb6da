// an_events.cu — `omniprof analyze` on CUDA events (tests/gpu/run.sh part "analyzeevents",
// gpu_events.py). Each iteration: stream C runs busy_other (OTHER_MS, a busy stream nobody
// waits for), stream A runs producer (PROD_MS) and records event a; stream B waits for a
// (cudaStreamWaitEvent) and runs consumer (CONS_MS); the host records event b on stream B,
// synchronizes on b (cudaEventSynchronize), then spins CPU_MS on the CPU. The iteration is
// PROD + CONS + CPU: producer is on the critical path only through the stream wait, and the
// event synchronize waits for stream B, not for busy_other (which ends before consumer).
// usage: an_events [PROD_MS CONS_MS OTHER_MS CPU_MS ITERS] (default 40 10 45 40 5; the knob:
// PROD_MS 20)
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__global__ void producer(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

__global__ void consumer(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

__global__ void busy_other(long long cycles)
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
    double prod_ms = argc > 1 ? atof(argv[1]) : 40, cons_ms = argc > 2 ? atof(argv[2]) : 10;
    double other_ms = argc > 3 ? atof(argv[3]) : 45, cpu_ms = argc > 4 ? atof(argv[4]) : 40;
    int iters = argc > 5 ? atoi(argv[5]) : 5;
    int clk_khz = 0;
    cudaDeviceGetAttribute(&clk_khz, cudaDevAttrClockRate, 0);
    cudaStream_t a, b, c;
    cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking);
    cudaEvent_t ea, eb;
    cudaEventCreateWithFlags(&ea, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&eb, cudaEventDisableTiming);
    producer<<<1, 1, 0, a>>>(1000); /* warm-up: modules loaded before the measured part */
    consumer<<<1, 1, 0, b>>>(1000);
    busy_other<<<1, 1, 0, c>>>(1000);
    if (cudaDeviceSynchronize() != cudaSuccess) {
        fprintf(stderr, "an_events: no GPU\n");
        return 1;
    }
    for (int it = 0; it < iters; it++) {
        busy_other<<<1, 1, 0, c>>>((long long)(other_ms * clk_khz));
        producer<<<1, 1, 0, a>>>((long long)(prod_ms * clk_khz));
        cudaEventRecord(ea, a);
        cudaStreamWaitEvent(b, ea, 0);
        consumer<<<1, 1, 0, b>>>((long long)(cons_ms * clk_khz));
        cudaEventRecord(eb, b);
        cudaEventSynchronize(eb);
        double t = now_ms();
        while (now_ms() - t < cpu_ms) {
        }
    }
    cudaDeviceSynchronize();
    printf("an_events done\n");
    return 0;
}
