/* join_workers.c — two worker threads started and joined every iteration; worker A does twice
 * the work of worker B. One progress point per iteration (COZ_PROGRESS, from Coz's coz.h).
 *
 * On paper (the two workers run in parallel): an iteration lasts max(2W, W) = 2W. Speeding
 * A's loop by s gives max(2W(1-s), W), so the program speeds up by min(s, 50 %); speeding B's
 * loop changes nothing (0 %). Usage: join_workers [seconds to run, or -N for N iterations]
 * [ms of B's work] [fraction of A's work done: the knob that makes A's line really faster,
 * e.g. 0.75 for a 25 % speedup, against which a causal profile's prediction is checked].
 * CAUSAL_UNITS_PER_MS fixes the work (causal_work.h); the last line says each worker's CPU. */
#include <coz.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "causal_work.h"

static long g_units, g_units_a;
static uint64_t g_sink[2];
static double g_cpu_ms[2]; /* CPU time of each worker's loop, summed over the iterations */

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void *worker_a(void *arg)
{
    (void)arg;
    uint64_t x = 1;
    double t0 = cpu_ms();
    for (long i = 0; i < g_units_a; i++) CAUSAL_STEP(x); /* LINE_A */
    g_cpu_ms[0] += cpu_ms() - t0;
    g_sink[0] += x;
    return NULL;
}

static void *worker_b(void *arg)
{
    (void)arg;
    uint64_t x = 2;
    double t0 = cpu_ms();
    for (long i = 0; i < g_units; i++) CAUSAL_STEP(x); /* LINE_B */
    g_cpu_ms[1] += cpu_ms() - t0;
    g_sink[1] += x;
    return NULL;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 10.0;
    double ms = argc > 2 ? atof(argv[2]) : 2.0;
    double a_frac = argc > 3 ? atof(argv[3]) : 1.0;
    g_units = (long)(ms * (double)causal_units_per_ms());
    g_units_a = (long)(2.0 * a_frac * (double)g_units);
    long iterations = 0, fixed = seconds < 0 ? (long)-seconds : 0; /* negative: that many iterations */
    for (causal_elapsed(); fixed ? iterations < fixed : causal_elapsed() < seconds; iterations++) {
        pthread_t a, b;
        pthread_create(&a, NULL, worker_a, NULL);
        pthread_create(&b, NULL, worker_b, NULL);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        COZ_PROGRESS_NAMED("iteration");
    }
    double n = iterations > 0 ? (double)iterations : 1.0;
    printf("join_workers: %s (%ld iterations, %ld units/ms; CPU per iteration: A %.3f ms, "
           "B %.3f ms)\n", iterations > 0 && (g_sink[0] | g_sink[1]) ? "done" : "no work",
           iterations, causal_units_per_ms(), g_cpu_ms[0] / n, g_cpu_ms[1] / n);
    return 0;
}
