/* bench_calls.c — the program of the instrumentation benchmark (bench_instrument.py).
 *
 *   bench_calls leaf N   call leaf() N times: the per-call cost of a method (instrumented with
 *                        -i '^leaf$': forced, never throttled)
 *   bench_calls mix N    a call-heavy program: per iteration a tiny helper (a few instructions),
 *                        a mid-size function (~150 instructions, no loop) and every 4096th
 *                        iteration a big one (a loop): what the defaults (size limit, throttle)
 *                        must keep within 5 %
 * Prints "calls=<n> cpu_ns=<thread CPU time of the work>" (CLOCK_THREAD_CPUTIME_ID counts the
 * kernel's uprobe handling too, and ignores other load on the machine). Built plain, with
 * -finstrument-functions (bench_calls_cyg) and with the functions in a library (bench_calls_lib)
 * whose calls go through the PLT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef BENCH_IN_LIBRARY
long leaf(long x);
long tiny(long x);
long mid(long x);
long big(long x);
#else
#include "bench_funcs.h"
#endif

static long cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_calls leaf|mix N\n");
        return 2;
    }
    long n = atol(argv[2]), acc = 0, calls = 0;
    long t0 = cpu_ns();
    if (!strcmp(argv[1], "leaf")) {
        for (long i = 0; i < n; i++) acc += leaf(i);
        calls = n;
    } else {
        for (long i = 0; i < n; i++) {
            acc += tiny(i) + mid(i);
            calls += 2;
            if ((i & 4095) == 0) acc += big(i), calls++;
        }
    }
    long t1 = cpu_ns();
    printf("calls=%ld cpu_ns=%ld acc=%ld\n", calls, t1 - t0, acc);
    return 0;
}
