/* causal_work.h — the CPU work of the causal test programs: a loop of CAUSAL_STEP written on
 * one source line burns CPU time on that line only (the line a causal profiler selects), and
 * causal_units_per_ms() says how many steps make a millisecond of CPU on this machine. */
#ifndef OMNIPROF_TESTS_CAUSAL_WORK_H
#define OMNIPROF_TESTS_CAUSAL_WORK_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* One unit of work: a dependent multiply-add the compiler cannot remove. Used on one line:
 *     for (long i = 0; i < n; i++) CAUSAL_STEP(x);                                         */
#define CAUSAL_STEP(x) do { __asm__ volatile("" : "+r"(x)); (x) = (x) * 6364136223846793005ull + 1442695040888963407ull; } while (0)

/* Seconds since the first call (CLOCK_MONOTONIC): the programs run for a given time, so that
 * a causal profiler gets the same number of experiments whatever the machine's speed. */
static inline double causal_elapsed(void)
{
    static struct timespec t0;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (!t0.tv_sec && !t0.tv_nsec) t0 = t;
    return (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec);
}

/* Units of CAUSAL_STEP per millisecond of this thread's CPU time, measured once (a few ms of
 * spinning, timed on the thread's CPU-time clock, so a busy machine does not skew it), or
 * CAUSAL_UNITS_PER_MS from the environment: runs compared with each other (a program and the
 * same program made faster by a knob) then do the same work, whatever each run's measure. */
static inline long causal_units_per_ms(void)
{
    static long units;
    if (units) return units;
    const char *fixed = getenv("CAUSAL_UNITS_PER_MS");
    if (fixed && atol(fixed) > 0) return units = atol(fixed);
    struct timespec a, b;
    uint64_t x = 7;
    long n = 1 << 22;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    for (long i = 0; i < n; i++) CAUSAL_STEP(x);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
    units = ms > 0 ? (long)((double)n / ms) + (long)(x & 1) : 400000;
    return units;
}

#endif
