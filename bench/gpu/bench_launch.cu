// bench_launch.cu — launch overhead of GPU tracing. 50,000 empty-kernel launches (host-bound)
// and 2,000 GPU-bound saxpy launches of 16M floats, timed on the host with CLOCK_MONOTONIC.
// argv[1] = mode: 0 untraced (also used under the omniprof tool); 1 bare CUPTI, CONCURRENT_KERNEL
// + MEMCPY activity; 2 = 1 + RUNTIME and DRIVER API activity + empty callbacks on both API domains
// (CUPTI itself recording every API call, docs/cuda.md); 3 = 1 + empty callbacks on the launch
// calls only (what a kernel-to-launch correlation through callbacks needs at least); 4 = 1 + empty
// callbacks on both API domains, no API activity (the callback cost alone); 5 = 1 + API activity
// records of the runtime launch calls only (cuptiActivityEnableRuntimeApi: what omniprof's
// activity-mode kernel tracing asks CUPTI for, without driver launches); 6 = 1 + RUNTIME and
// DRIVER API activity, no callback (the floor of API+kernel tracing); 7 = 5 + API activity of the
// driver launch calls (omniprof's default kernel tracing).
// Modifiers of any bare mode (which one setting of omniprof's CUPTI configuration costs, alone):
// BENCH_TID=system: cuptiSetThreadIdType(SYSTEM) (records carry gettid() values instead of
// pthread_self()); BENCH_TS=mono: a timestamp callback returning CLOCK_MONOTONIC; BENCH_SUB=1 (or
// both, res, nvtx, none): a subscriber with the resource and/or NVTX domains enabled (no API callback).
// Prints "metric=<name> value=<n> unit=<u>" lines; argv[2] names the configuration in them.
#include <cuda_runtime.h>
#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

__global__ void k_empty() {}
__global__ void k_saxpy(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

static uint64_t now_ns() { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (uint64_t)t.tv_sec * 1000000000ull + t.tv_nsec; }
static long g_kernels, g_api;
static void CUPTIAPI buf_req(uint8_t **b, size_t *sz, size_t *m) { *sz = 8u << 20; *b = (uint8_t *)aligned_alloc(8, *sz); *m = 0; }
static void CUPTIAPI buf_done(CUcontext c, uint32_t s, uint8_t *b, size_t sz, size_t valid) {
    (void)c; (void)s; (void)sz; CUpti_Activity *r = NULL;
    while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS)
        if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) g_kernels++;
        else if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME || r->kind == CUPTI_ACTIVITY_KIND_DRIVER) g_api++;
    free(b);
}
static void CUPTIAPI cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *p) { (void)u; (void)d; (void)id; (void)p; }
static uint64_t CUPTIAPI ts_mono(void) { return now_ns(); }
static int env_is(const char *name, const char *v) { const char *e = getenv(name); return e && !strcmp(e, v); }

int main(int argc, char **argv) {
    int mode = argc > 1 ? atoi(argv[1]) : 0;
    const char *label = argc > 2 ? argv[2] : "untraced";
    const int N = 50000, M = 2000, n = 1 << 24;
    if (mode >= 1 && env_is("BENCH_TS", "mono")) cuptiActivityRegisterTimestampCallback(ts_mono);
    if (mode >= 1 && env_is("BENCH_TID", "system")) cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    const char *sub = getenv("BENCH_SUB");
    if (mode >= 1 && sub && *sub) { // "1"/"both": resource + NVTX domains; "res", "nvtx": one; "none": no domain
        CUpti_SubscriberHandle s0;
        if (cuptiSubscribe(&s0, (CUpti_CallbackFunc)cb, NULL) == CUPTI_SUCCESS) {
            if (!strcmp(sub, "1") || !strcmp(sub, "both") || !strcmp(sub, "res")) cuptiEnableDomain(1, s0, CUPTI_CB_DOMAIN_RESOURCE);
            if (!strcmp(sub, "1") || !strcmp(sub, "both") || !strcmp(sub, "nvtx")) cuptiEnableDomain(1, s0, CUPTI_CB_DOMAIN_NVTX);
        }
    }
    if (mode >= 1) {
        cuptiActivityRegisterCallbacks(buf_req, buf_done);
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
    }
    if (mode == 2 || mode == 6) { // CUPTI records every API call too
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
    }
    if (mode == 5 || mode == 7) { // API records of the launch calls only
        cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, 1);
        cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1);
        cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, 1);
    }
    if (mode == 7) {
        cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1);
        cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 1);
    }
    if (mode == 2 || mode == 3 || mode == 4) {
        CUpti_SubscriberHandle sub;
        if (cuptiSubscribe(&sub, (CUpti_CallbackFunc)cb, NULL) == CUPTI_SUCCESS) {
            if (mode == 2 || mode == 4) {
                cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
                cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
            } else { // only the launch calls (what kernel-to-launch correlation needs at least)
                cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000);
                cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
                cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
            }
        }
    }
    cudaFree(0);
    float *x, *y; cudaMalloc(&x, (size_t)n * 4); cudaMalloc(&y, (size_t)n * 4);
    cudaMemset(x, 0, (size_t)n * 4); cudaMemset(y, 0, (size_t)n * 4);
    for (int i = 0; i < 200; i++) k_empty<<<1, 32>>>();
    k_saxpy<<<(n + 255) / 256, 256>>>(n, 2.f, x, y);
    cudaDeviceSynchronize();
    // 50,000 launches, five times in this process; the median repetition is reported (the
    // spread between repetitions is printed too), so one noisy burst does not decide the number.
    const int R = 5;
    double enq[R], tosync[R];
    uint64_t t2 = 0;
    for (int r = 0; r < R; r++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < N; i++) k_empty<<<1, 32>>>();
        uint64_t t1 = now_ns();
        cudaDeviceSynchronize();
        t2 = now_ns();
        enq[r] = (t1 - t0) / 1e3 / N;
        tosync[r] = (t2 - t0) / 1e3 / N;
    }
    for (int a = 0; a < R; a++)
        for (int b = a + 1; b < R; b++) {
            if (enq[b] < enq[a]) { double t = enq[a]; enq[a] = enq[b]; enq[b] = t; }
            if (tosync[b] < tosync[a]) { double t = tosync[a]; tosync[a] = tosync[b]; tosync[b] = t; }
        }
    for (int i = 0; i < M; i++) k_saxpy<<<(n + 255) / 256, 256>>>(n, 2.f, x, y);
    cudaDeviceSynchronize();
    uint64_t t3 = now_ns();
    if (mode >= 1) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    printf("metric=launch_enqueue_%s value=%.4f unit=us\n", label, enq[R / 2]);
    printf("metric=launch_to_sync_%s value=%.4f unit=us\n", label, tosync[R / 2]);
    printf("metric=launch_enqueue_spread_%s value=%.4f unit=us\n", label, enq[R - 1] - enq[0]);
    printf("metric=saxpy16M_%s value=%.4f unit=us\n", label, (t3 - t2) / 1e3 / M);
    if (mode >= 1) printf("metric=bare_cupti_kernel_records_%s value=%ld unit=records\n", label, g_kernels);
    if (mode >= 1) printf("metric=bare_cupti_api_records_%s value=%ld unit=records\n", label, g_api);
    cudaFree(x); cudaFree(y);
    return 0;
}
