/* hotspot.c — CPU test program with known hot spots across threads: every thread (main and
 * OMNIPROF_TEST_THREADS workers, default 2) repeats hot_a(7 units) then hot_b(3 units), the same
 * loop body, so hot_a takes 70% and hot_b 30% of the CPU time. Used by cpu.hotspots and
 * cpu.perf_agreement and cpu.options. OMNIPROF_TEST_NAME_THREADS=1: workers name themselves
 * hot-1, hot-2, ... with pthread_setname_np. argv[1] = units per thread (default 400). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define UNIT 200000L
#define BODY(n)                                                   \
    volatile double x = 0;                                        \
    for (long i = 0; i < (n); i++) x += (double)i * 0.5 + 1.0;    \
    return x

__attribute__((noinline)) double hot_a(long units) { BODY(units * UNIT); }
__attribute__((noinline)) double hot_b(long units) { BODY(units * UNIT); }

static long g_reps = 400;

static void *work(void *arg)
{
    double *sum = arg;
    if (getenv("OMNIPROF_TEST_NAME_THREADS") && arg != (void *)&g_reps) {
        char name[16];
        snprintf(name, sizeof name, "hot-%ld", (long)(*sum));
        pthread_setname_np(pthread_self(), name);
    }
    for (long r = 0; r < g_reps / 10; r++) {
        *sum += hot_a(7);
        *sum += hot_b(3);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1) g_reps = atol(argv[1]);
    int n = getenv("OMNIPROF_TEST_THREADS") ? atoi(getenv("OMNIPROF_TEST_THREADS")) : 2;
    pthread_t th[64];
    double sums[65] = {0};
    if (n > 64) n = 64;
    for (int i = 0; i < n; i++) {
        sums[i + 1] = i + 1; /* the thread's name number, then its checksum */
        pthread_create(&th[i], NULL, work, &sums[i + 1]);
    }
    work(&sums[0]);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    double t = 0;
    for (int i = 0; i <= n; i++) t += sums[i];
    (void)0;
    printf("hotspot done threads=%d checksum=%.0f\n", n + 1, t > 0 ? 1.0 : 0.0);
    return 0;
}
