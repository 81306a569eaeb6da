/* short_threads.c — each iteration starts a thread that does about M ms of CPU work on one
 * line and ends; the main thread joins it and counts a progress point. A thread lives for a
 * few sampling periods only (issue 35 item 1: the delay a sample of the selected line stands
 * for must be the sample's own period, however young the thread). LINE_TINY runs for a few
 * nanoseconds an iteration: never the sampled instruction (item 3). Usage: short_threads
 * [seconds] [ms of work per thread]. */
#include <coz.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "causal_work.h"

static long g_units;
static uint64_t g_sink;

static void *worker(void *arg)
{
    uint64_t x = (uint64_t)(intptr_t)arg;
    for (long i = 0; i < g_units; i++) CAUSAL_STEP(x); /* LINE_WORK */
    return (void *)(intptr_t)(x & 0xff);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 5.0;
    double ms = argc > 2 ? atof(argv[2]) : 3.0;
    causal_elapsed();
    g_units = (long)(ms * (double)causal_units_per_ms());
    long it;
    for (it = 0; causal_elapsed() < seconds; it++) {
        pthread_t t;
        void *r = NULL;
        if (pthread_create(&t, NULL, worker, (void *)(intptr_t)it) != 0) break;
        pthread_join(t, &r);
        g_sink += (uint64_t)(intptr_t)r; /* LINE_TINY */
        COZ_PROGRESS_NAMED("thread");
    }
    printf("short_threads: %ld threads %s\n", it, g_sink ? "done" : "done (zero)");
    return 0;
}
