/* demo.c — the example program of `make demo`: a small CPU-only program that uses omniprof's
 * user API (thread names, nested ranges, a process-wide range, marks) from several threads
 * while it computes, so that every view of the report has something to show: ranges and marks
 * (regions, timeline), three hot functions of different weights (flame graph, flat profile), a
 * mutex and a barrier shared by the threads (wrapped calls: --trace-locks style settings). It
 * runs unchanged without the profiler.
 *
 * usage: omniprof-demo [THREADS [ITERATIONS]]   (defaults 4 and 50)
 * Per run it makes: 1 "main" range, 1 "setup" process range, 1 "compute" range per thread,
 * ITERATIONS "iteration" ranges per thread, 1 "done" mark per thread and 1 "finished" mark.
 * Per iteration a thread spends about 3/6 of its work in integrate(), 2/6 in sort_block() and
 * 1/6 in checksum(), then adds its result under the shared mutex; all threads meet at a
 * barrier before they end. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omniprof/user.h>

static int g_iterations = 50;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t g_barrier;
static double g_total;

/* The heaviest part: a partial sum of 1/i^2. noinline keeps each part its own frame. */
__attribute__((noinline)) static double integrate(int n)
{
    double x = 0;
    for (int i = 1; i <= n; i++) x += 1.0 / ((double)i * i);
    return x;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorting a block of pseudo-random numbers (qsort's frames appear below it). */
__attribute__((noinline)) static uint32_t sort_block(uint32_t seed, uint32_t *v, int n)
{
    for (int i = 0; i < n; i++) v[i] = seed = seed * 1664525u + 1013904223u;
    qsort(v, (size_t)n, sizeof *v, cmp_u32);
    return v[n / 2];
}

/* The lightest part: a checksum of the sorted block, a few times over. */
__attribute__((noinline)) static uint32_t checksum(const uint32_t *v, int n)
{
    uint32_t h = 2166136261u;
    for (int r = 0; r < 24; r++)
        for (int i = 0; i < n; i++) h = (h ^ v[i]) * 16777619u;
    return h;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    char name[32];
    snprintf(name, sizeof(name), "worker-%ld", id);
    omniprof_name_thread(name);
    uint32_t block[1500];
    double sum = 0;
    uint32_t mix = (uint32_t)id;
    omniprof_range_push("compute");
    for (int i = 0; i < g_iterations; i++) {
        omniprof_range_push("iteration");
        sum += integrate(150000);
        mix ^= sort_block(mix + (uint32_t)i, block, 1500);
        mix ^= checksum(block, 1500);
        pthread_mutex_lock(&g_lock);
        g_total += sum * 1e-9 + (mix & 1) * 1e-12;
        pthread_mutex_unlock(&g_lock);
        omniprof_range_pop();
    }
    omniprof_range_pop();
    omniprof_mark("done");
    pthread_barrier_wait(&g_barrier);
    double *out = malloc(sizeof(double));
    if (out) *out = sum;
    return out;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    if (argc > 2) g_iterations = atoi(argv[2]);
    if (threads < 1 || threads > 256 || g_iterations < 0) {
        fprintf(stderr, "usage: %s [THREADS(1-256) [ITERATIONS]]\n", argv[0]);
        return 2;
    }
    omniprof_name_thread("main");
    omniprof_range_push("main");
    omniprof_range_id_t setup = omniprof_range_start("setup");
    pthread_barrier_init(&g_barrier, NULL, (unsigned)threads);
    pthread_t tid[256];
    for (long t = 0; t < threads; t++) pthread_create(&tid[t], NULL, worker, (void *)t);
    omniprof_range_stop(setup);
    double total = 0;
    for (int t = 0; t < threads; t++) {
        void *r = NULL;
        pthread_join(tid[t], &r);
        if (r) total += *(double *)r;
        free(r);
    }
    pthread_barrier_destroy(&g_barrier);
    omniprof_mark("finished");
    omniprof_range_pop();
    printf("demo: %d threads x %d iterations, result %.6f\n", threads, g_iterations,
           g_iterations ? total / threads / g_iterations : 0.0);
    return 0;
}
