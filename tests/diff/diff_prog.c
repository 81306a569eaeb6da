/* diff_prog.c — the program `omniprof diff`'s tests profile twice (tests/diff/test_diff.py):
 * ITERS iterations, each a user range "step" holding two ranges, "prepare" and "solve", each
 * spending its time in a function of its own (prepare_work, solve_work) on the CPU.
 *
 *   diff_prog ITERS UNITS SOLVE_PCT
 *
 * UNITS is the work of each range per iteration; SOLVE_PCT scales solve's work (100: as
 * prepare's, 120: a planted 20 % slowdown of solve alone). Prints one checksum line, so that
 * the work is not optimized away. */
#include <stdio.h>
#include <stdlib.h>

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

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: diff_prog ITERS UNITS SOLVE_PCT\n");
        return 2;
    }
    long iters = atol(argv[1]), units = atol(argv[2]), pct = atol(argv[3]);
    double sum = 0;
    for (long i = 0; i < iters; i++) {
        omniprof_range_push("step");
        omniprof_range_push("prepare");
        sum += prepare_work(units);
        omniprof_range_pop();
        omniprof_range_push("solve");
        sum += solve_work(units * pct / 100);
        omniprof_range_pop();
        omniprof_range_pop();
    }
    g_sink = sum;
    printf("diff_prog done iters=%ld checksum=%.3f\n", iters, sum > 0 ? 1.0 : 0.0);
    return 0;
}
