/* demo.c — the example program of `make demo`: a small CPU-only program that uses omniprof's
 * user API (thread names, nested ranges, a process-wide range, marks) from several threads
 * while it does a little arithmetic. It runs unchanged without the profiler.
 *
 * usage: omniprof-demo [THREADS [ITERATIONS]]   (defaults 4 and 50)
 * Per run it makes: 1 "main" range, 1 "setup" process range, 1 "compute" range per thread,
 * ITERATIONS "iteration" ranges per thread, 1 "done" mark per thread and 1 "finished" mark. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <omniprof/user.h>

static int g_iterations = 50;

static double work(int n)
{
    double x = 0;
    for (int i = 1; i <= n; i++) x += 1.0 / ((double)i * i);
    return x;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    char name[32];
    snprintf(name, sizeof(name), "worker-%ld", id);
    omniprof_name_thread(name);
    double sum = 0;
    omniprof_range_push("compute");
    for (int i = 0; i < g_iterations; i++) {
        omniprof_range_push("iteration");
        sum += work(20000);
        omniprof_range_pop();
    }
    omniprof_range_pop();
    omniprof_mark("done");
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
    omniprof_mark("finished");
    omniprof_range_pop();
    printf("demo: %d threads x %d iterations, result %.6f\n", threads, g_iterations, total / threads);
    return 0;
}
