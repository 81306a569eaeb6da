/* bench_cpu_spin.c — the CPU-bound program of the sampling-overhead benchmark: recursive
 * calls (stacks 20-30 frames deep, so unwinding is not trivially short) and a floating-point
 * kernel, single-threaded. Prints the time of its compute phase only (CLOCK_MONOTONIC), so
 * start-up and exit costs of a profiler are kept apart: `work_ns=<n>` (wall) and
 * `work_cpu_ns=<n>` (the thread's CPU time, signal handlers included: robust to other load). argv[1] = rounds. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) static double kernel(long n)
{
    volatile double x = 1.0;
    for (long i = 0; i < n; i++) x = x * 1.0000001 + 0.5;
    return x;
}

__attribute__((noinline)) static double descend(int depth, long n)
{
    if (depth == 0) return kernel(n);
    return descend(depth - 1, n) + 1.0;
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 400;
    struct timespec a, b, ca, cb;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ca);
    double s = 0;
    for (long r = 0; r < rounds; r++) s += descend(20 + (int)(r % 10), 1000000);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cb);
    clock_gettime(CLOCK_MONOTONIC, &b);
    long long ns = (long long)(b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec);
    long long cpu = (long long)(cb.tv_sec - ca.tv_sec) * 1000000000ll + (cb.tv_nsec - ca.tv_nsec);
    printf("work_ns=%lld work_cpu_ns=%lld checksum=%d\n", ns, cpu, s > 0);
    return 0;
}
