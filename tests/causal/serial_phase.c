/* serial_phase.c — each iteration has a serial phase on the main thread (work S) and then a
 * parallel phase in which two persistent workers each do work P (the same source line),
 * separated by barriers. One progress point per iteration (COZ_PROGRESS_NAMED).
 *
 * On paper (the workers run in parallel, P = 2S): an iteration lasts S + P = 3S. Speeding
 * the serial loop by s saves sS: the program speeds up by s/3 (33 % at most); speeding the
 * parallel loop by s saves sP: 2s/3 (67 % at most). Usage: serial_phase [seconds to run, or -N for N
 * iterations] [ms of S]. */
#include <coz.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "causal_work.h"

static pthread_barrier_t g_start, g_done;
static long g_units;
static _Atomic int g_stop;
static uint64_t g_sink[3];

static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (long it = 0;; it++) {
        pthread_barrier_wait(&g_start);
        if (g_stop) break;
        uint64_t x = (uint64_t)it;
        for (long i = 0; i < 2 * g_units; i++) CAUSAL_STEP(x); /* LINE_PARALLEL */
        g_sink[me] += x;
        pthread_barrier_wait(&g_done);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 10.0;
    double ms = argc > 2 ? atof(argv[2]) : 1.0;
    causal_elapsed();
    g_units = (long)(ms * (double)causal_units_per_ms());
    pthread_barrier_init(&g_start, NULL, 3);
    pthread_barrier_init(&g_done, NULL, 3);
    pthread_t w[2];
    for (int k = 0; k < 2; k++) pthread_create(&w[k], NULL, worker, (void *)(intptr_t)k);
    long it, fixed = seconds < 0 ? (long)-seconds : 0; /* negative: that many iterations */
    for (it = 0; fixed ? it < fixed : causal_elapsed() < seconds; it++) {
        uint64_t x = (uint64_t)it;
        for (long i = 0; i < g_units; i++) CAUSAL_STEP(x); /* LINE_SERIAL */
        g_sink[2] += x;
        pthread_barrier_wait(&g_start);
        pthread_barrier_wait(&g_done);
        COZ_PROGRESS_NAMED("iteration");
    }
    g_stop = 1;
    pthread_barrier_wait(&g_start);
    for (int k = 0; k < 2; k++) pthread_join(w[k], NULL);
    printf("serial_phase: %s\n", it > 0 && (g_sink[0] | g_sink[1] | g_sink[2]) ? "done" : "no work");
    return 0;
}
