/* diff_prog.c — the program `omniprof diff`'s tests profile twice (tests/diff/test_diff.py):
 * ITERS iterations, each a user range "step" holding two ranges, "prepare" and "solve", each
 * spending its time in a function of its own (prepare_work, solve_work) on the CPU.
 *
 *   diff_prog ITERS UNITS SOLVE_PCT [DRIFT_SEED]
 *
 * UNITS is the work of each range per iteration; SOLVE_PCT scales solve's work (100: as
 * prepare's, 120: a planted 20 % slowdown of solve alone). DRIFT_SEED (not 0) adds a wait to
 * each range whose length drifts the way a machine's load does: a new level every 10
 * iterations, 5 to 35 ms, drawn from the seed — the same program, whose instances are not
 * independent of their neighbours (test_diff.py's case same_drift). Prints one checksum line,
 * so that the work is not optimized away. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "omniprof/user.h"

static volatile double g_sink;

/* Each range's function has its loop of its own, so that its CPU samples name it (a shared
 * helper would be the leaf frame of both). */
#define SPIN(n, x)                                                                               \
    do {                                                                                         \
        for (long i_ = 0; i_ < (n); i_++) (x) = (x) * 1.0000001 + 1e-9;                          \
    } while (0)

__attribute__((noinline)) double prepare_work(long n)
{
    double x = 1.0;
    SPIN(n, x);
    return x;
}

__attribute__((noinline)) double solve_work(long n)
{
    double x = 2.0;
    SPIN(n, x);
    return x;
}

static uint64_t g_x;
static double next_u(void) /* xorshift64: uniform in [0, 1) */
{
    g_x ^= g_x << 13;
    g_x ^= g_x >> 7;
    g_x ^= g_x << 17;
    return (double)(g_x >> 11) / 9007199254740992.0;
}

static void nap(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (us > 0 && nanosleep(&ts, &ts) != 0) {
    }
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: diff_prog ITERS UNITS SOLVE_PCT [DRIFT_SEED]\n");
        return 2;
    }
    long iters = atol(argv[1]), units = atol(argv[2]), pct = atol(argv[3]);
    long seed = argc == 5 ? atol(argv[4]) : 0, wait_us = 0;
    g_x = 0x9e3779b97f4a7c15ull * (uint64_t)(seed + 1);
    double sum = 0;
    for (long i = 0; i < iters; i++) {
        if (seed && i % 10 == 0) wait_us = 5000 + (long)(30000 * next_u());
        omniprof_range_push("step");
        omniprof_range_push("prepare");
        sum += prepare_work(units);
        nap(wait_us);
        omniprof_range_pop();
        omniprof_range_push("solve");
        sum += solve_work(units * pct / 100);
        nap(wait_us);
        omniprof_range_pop();
        omniprof_range_pop();
    }
    g_sink = sum;
    printf("diff_prog done iters=%ld checksum=%.3f\n", iters, sum > 0 ? 1.0 : 0.0);
    return 0;
}
