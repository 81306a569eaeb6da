/* bench_db_close_prog.c — the program of bench_db_close.py (issue 12: "after the program exits,
 * the database is complete within 10 % of the program's run time"): a CPU-only stand-in for the
 * PyTorch loop under `omniprof run --runtime-trace`, without a GPU.
 *
 * For SECONDS it plays the CUDA backend's delivery: every BURST_MS (default 500, the backend's
 * OMNIPROF_CUDA_FLUSH_INTERVAL_MS) one burst of records is emitted through the SDK's backend
 * interface (op_sdk_emit) — per launch a CUDA_RUNTIME_API record (cudaLaunchKernel) and its
 * KERNEL_DISPATCH record with the same correlation id, every third call a runtime call without
 * GPU work — so that RECORDS records (default 200,000, the loop's count) arrive in all; between
 * bursts it sleeps, as the loop's CPU time belongs to the program. It prints the
 * CLOCK_MONOTONIC time of its start and of leaving main (`start_mono=... exit_mono=...`), and the
 * number of records emitted.
 *
 * usage: bench_db_close_prog [SECONDS [RECORDS [BURST_MS]]] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "omniprof/gpu.h"
#include "omniprof/omniprof.h"
#include "omniprof/tracing.h"
#include "sdk/backend.h"

#define NKERNELS 48

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_until(double t)
{
    double d = t - mono();
    if (d <= 0) return;
    struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

int main(int argc, char **argv)
{
    double start = mono();
    double secs = argc > 1 ? atof(argv[1]) : 8.0;
    uint64_t total = argc > 2 ? strtoull(argv[2], NULL, 10) : 200000;
    double burst_ms = argc > 3 ? atof(argv[3]) : 500.0;
    if (secs <= 0 || burst_ms <= 0) {
        fprintf(stderr, "usage: bench_db_close_prog [SECONDS [RECORDS [BURST_MS]]]\n");
        return 2;
    }
    omniprof_initialize();
    const char *mangled[NKERNELS], *demangled[NKERNELS];
    for (int k = 0; k < NKERNELS; k++) {
        char m[160], d[320];
        snprintf(m, sizeof m, "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_%dFunctor%dIfEESt5arrayIPcLm2EEEEviT0_T1_",
                 10 + k % 10, k);
        snprintf(d, sizeof d, "void at::native::vectorized_elementwise_kernel<4, at::native::Functor%d<float>, "
                 "std::array<char*, 2> >(int, at::native::Functor%d<float>, std::array<char*, 2>)", k, k);
        mangled[k] = op_sdk_intern(m);
        demangled[k] = op_sdk_intern(d);
    }
    int api_on = op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API, 1);
    int kd_on = op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH, OMNIPROF_KERNEL_DISPATCH_COMPLETE);
    int bursts = (int)(secs * 1000.0 / burst_ms + 0.5);
    if (bursts < 1) bursts = 1;
    uint64_t emitted = 0, corr = 0, dispatch = 0, tid = (uint64_t)getpid();
    for (int b = 1; b <= bursts; b++) {
        sleep_until(start + b * burst_ms / 1000.0);
        uint64_t until = total * (uint64_t)b / (uint64_t)bursts;
        uint64_t t;
        omniprof_get_timestamp(&t);
        while (emitted < until) {
            uint64_t c = ++corr;
            int launch = c % 3 != 2;
            omniprof_buffer_tracing_api_record_t a;
            memset(&a, 0, sizeof a);
            a.size = sizeof a;
            a.kind = OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API;
            a.operation = launch ? 1 : 2 + (int32_t)(c % 5);
            a.correlation_id.internal = c;
            a.thread_id = tid;
            a.start_timestamp = t + c * 1500;
            a.end_timestamp = a.start_timestamp + 2100;
            if (api_on) op_sdk_emit(a.kind, a.operation, &a, NULL);
            emitted++;
            if (!launch || emitted >= until) continue;
            omniprof_buffer_tracing_kernel_dispatch_record_t k;
            memset(&k, 0, sizeof k);
            k.size = sizeof k;
            k.kind = OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH;
            k.operation = OMNIPROF_KERNEL_DISPATCH_COMPLETE;
            k.correlation_id.internal = c;
            k.thread_id = tid;
            k.start_timestamp = a.end_timestamp + 5000;
            k.end_timestamp = k.start_timestamp + 3000;
            k.kernel_id = c % NKERNELS + 1;
            k.dispatch_id = ++dispatch;
            k.kernel_name = mangled[c % NKERNELS];
            k.kernel_name_demangled = demangled[c % NKERNELS];
            k.grid_size = (omniprof_dim3_t){(uint32_t)(1 + c % 97), 1, 1};
            k.block_size = (omniprof_dim3_t){128, 1, 1};
            if (kd_on) op_sdk_emit(k.kind, k.operation, &k, NULL);
            emitted++;
        }
    }
    printf("emitted=%llu api=%d kernel=%d\n", (unsigned long long)emitted, api_on, kd_on);
    printf("start_mono=%.6f exit_mono=%.6f\n", start, mono());
    fflush(stdout);
    return 0;
}
