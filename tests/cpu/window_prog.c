/* window_prog.c — spins on the main thread for argv[1] seconds (default 1.2) of wall time, or,
 * with argv[2] = "cpu", of the main thread's CPU time (a sample count per CPU second then does
 * not depend on how busy the machine is). With CPUTEST_CPU_TRACE=FILE it writes, at exit,
 * "MONOTONIC_NS THREAD_CPU_NS" lines taken about every millisecond of its spin, so a test can
 * tell how much CPU the thread got inside a wall-time window. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_POINTS 200000

static int64_t now_ns(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int64_t g_trace[MAX_POINTS][2];
static size_t g_n;

__attribute__((noinline)) double spin_until(double secs, clockid_t clock, int trace)
{
    int64_t start = now_ns(clock), last = 0;
    volatile double x = 0;
    for (;;) {
        for (int i = 0; i < 10000; i++) x += i;
        int64_t t = now_ns(clock);
        if (trace && g_n < MAX_POINTS) {
            int64_t mono = now_ns(CLOCK_MONOTONIC);
            if (mono - last >= 1000000) {
                g_trace[g_n][0] = mono;
                g_trace[g_n++][1] = now_ns(CLOCK_THREAD_CPUTIME_ID);
                last = mono;
            }
        }
        if ((double)(t - start) * 1e-9 >= secs) break;
    }
    return x;
}

int main(int argc, char **argv)
{
    double s = argc > 1 ? atof(argv[1]) : 1.2;
    int cpu = argc > 2 && strcmp(argv[2], "cpu") == 0;
    const char *trace = getenv("CPUTEST_CPU_TRACE");
    spin_until(s, cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, trace != NULL);
    if (trace) {
        FILE *f = fopen(trace, "w");
        if (!f) return 3;
        for (size_t i = 0; i < g_n; i++) fprintf(f, "%lld %lld\n", (long long)g_trace[i][0], (long long)g_trace[i][1]);
        fclose(f);
    }
    printf("window done\n");
    return 0;
}
