/* bench_capture.c — the producer side of the end-to-end capture benchmark: THREADS threads
 * each make RECORDS/THREADS user-API marks (one MARKER_RANGE_API record each) as fast as they
 * can. Run under `omniprof run --marker-trace` by run_bench.py. Prints
 * metric=capture_records_per_s (records handed to the SDK/tool per second, aggregate, from the
 * first mark to the last) and the producing time per record.
 *
 * usage: bench_capture THREADS RECORDS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <omniprof/user.h>

static long g_per_thread;
static pthread_barrier_t g_start;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *producer(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&g_start);
    for (long i = 0; i < g_per_thread; i++) omniprof_mark("m");
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    long records = argc > 2 ? atol(argv[2]) : 10000000L;
    if (threads < 1 || threads > 64 || records < threads) {
        fprintf(stderr, "usage: %s THREADS(1-64) RECORDS\n", argv[0]);
        return 2;
    }
    g_per_thread = records / threads;
    pthread_t t[64];
    pthread_barrier_init(&g_start, NULL, (unsigned)threads + 1);
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, producer, NULL);
    double t0 = now_s();
    pthread_barrier_wait(&g_start);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    double dt = now_s() - t0;
    long total = g_per_thread * threads;
    printf("metric=capture_records value=%ld unit=records\n", total);
    printf("metric=capture_seconds value=%.3f unit=s\n", dt);
    printf("metric=capture_records_per_s value=%.0f unit=records/s\n", (double)total / dt);
    printf("metric=capture_ns_per_record_per_thread value=%.1f unit=ns\n", dt * 1e9 * threads / (double)total);
    return 0;
}
