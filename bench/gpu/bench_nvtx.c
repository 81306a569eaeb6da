/* bench_nvtx.c — the cost of one NVTX range (push + pop) as PyTorch's --torch path makes them:
 * N ranges on one thread, each with a unique message of LEN characters (an operator name, its
 * sequence number and input shapes), after cudaFree(0) so that a CUDA tool is up. Prints
 * "nvtx_ns_per_range=X label=L". usage: omniprof-bench-nvtx N LEN LABEL [unique|same]
 * Run by bench/gpu/run_nvtx.sh (tests/gpu/run.sh part "nvtx"). */
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    int len = argc > 2 ? atoi(argv[2]) : 120;
    const char *label = argc > 3 ? argv[3] : "run";
    int unique = !(argc > 4 && !strcmp(argv[4], "same"));
    char msg[1024];
    if (len < 40 || len >= (int)sizeof msg) len = 120;
    if (cudaFree(0) != cudaSuccess) {
        fprintf(stderr, "bench_nvtx: no CUDA device\n");
        return 1;
    }
    memset(msg, 'x', sizeof msg);
    msg[len] = 0;
    for (long i = 0; i < 1000; i++) { /* warm-up: the injection loads on the first call */
        nvtxRangePushA("warm-up");
        nvtxRangePop();
    }
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        if (unique) {
            int k = snprintf(msg, 40, "aten::addmm, seq = %ld, op_id = %ld", i, i + 7);
            msg[k] = ',';
        }
        nvtxRangePushA(msg);
        nvtxRangePop();
    }
    double t1 = now_s();
    printf("nvtx_ns_per_range=%.1f label=%s n=%ld len=%d\n", (t1 - t0) * 1e9 / (double)n, label, n,
           len);
    return 0;
}
