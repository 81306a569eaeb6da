/* test_time_window.c — unit test of src/backend/cpu/time_window.c (compiled into this test
 * with stand-ins for the two backend symbols it uses): the TRACE_PERIODS parser (both entry
 * orders, errors naming the entry and the valid form) and the published windows of a
 * schedule (delay/duration/cycles, the switch to the next entry, closed after the last). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/cpu_internal.h"

#include "../common/check.h" /* CHECK, g_failures */

/* stand-ins for the rest of the backend */
_Atomic int g_op_cpu_stopping;
int op_sdk_create_thread(pthread_t *t, void *(*fn)(void *), void *arg, omniprof_runtime_library_t lib,
                         const char *name)
{
    (void)t, (void)fn, (void)arg, (void)lib, (void)name;
    return 0; /* no thread: the test drives op_cpu_window_tick itself */
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(void)
{
    op_cpu_period p[8];
    char err[256];
    int n = op_cpu_window_parse("realtime:10:1:5 cputime:10:2:20", p, 8, err, sizeof err);
    CHECK(n == 2, "two entries (%d: %s)", n, err);
    CHECK(p[0].clock == CLOCK_REALTIME && p[0].delay == 10 && p[0].duration == 1 && p[0].cycles == 5, "entry 0");
    CHECK(p[1].clock == CLOCK_PROCESS_CPUTIME_ID && p[1].cycles == 20, "entry 1");
    n = op_cpu_window_parse("0.5:2;1:3:0:monotonic\t4:5:realtime", p, 8, err, sizeof err);
    CHECK(n == 3, "rocprof-sys order, ';' and tab separators (%d: %s)", n, err);
    CHECK(p[0].clock == CLOCK_REALTIME && p[0].delay == 0.5 && p[0].cycles == 1, "default clock and cycles");
    CHECK(p[1].clock == CLOCK_MONOTONIC && p[1].cycles == 0, "cycles 0 = forever");
    CHECK(p[2].clock == CLOCK_REALTIME && p[2].delay == 4, "delay:duration:clock");
    n = op_cpu_window_parse("soon:1:2", p, 8, err, sizeof err);
    CHECK(n == -1 && strstr(err, "'soon:1:2'") && strstr(err, "realtime|monotonic|cputime"), "bad clock: %s", err);
    n = op_cpu_window_parse("monotonic:-1:2", p, 8, err, sizeof err);
    CHECK(n == -1, "negative delay refused");
    n = op_cpu_window_parse("monotonic:1", p, 8, err, sizeof err);
    CHECK(n == -1, "missing duration refused");
    /* not numbers, out of range, fractional cycles (fuzz.window found NaN and infinity accepted) */
    const char *bad[] = {"nan:1", "1:nan", "inf:1", "1:infinity", "1e300:1", "monotonic:1:2:1.5", "1:2:1e30",
                         "0x10:1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        n = op_cpu_window_parse(bad[i], p, 8, err, sizeof err);
        CHECK(n == -1 && strstr(err, "[0,31536000]"), "'%s' refused (%d): %s", bad[i], n, err);
    }
    n = op_cpu_window_parse("1:1 1:1 1:1", p, 2, err, sizeof err);
    CHECK(n == -1 && strstr(err, "more than 2"), "too many entries: %s", err);
    CHECK(op_cpu_window_parse("", p, 8, err, sizeof err) == 0, "empty = no entries");

    /* schedule: 2 cycles of (40 ms closed, 40 ms open), then a 60 ms open window after 20 ms */
    setenv("OMNIPROF_TRACE_PERIODS", "monotonic:0.04:0.04:2 monotonic:0.02:0.06:1", 1);
    CHECK(op_cpu_window_setup() == 0 && op_cpu_window_configured(), "setup");
    /* sample the published state for 320 ms of wall time; durations are measured, so a
     * slow machine changes the number of probes, not the result */
    enum { MAXP = 100000 };
    static int states[MAXP];
    static double at[MAXP];
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int np = 0;
    double now = 0;
    while (np < MAXP && now < 0.32) {
        op_cpu_window_tick();
        states[np] = op_cpu_window_open();
        clock_gettime(CLOCK_MONOTONIC, &t);
        now = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9;
        at[np++] = now;
        sleep_ms(1);
    }
    /* The open time lies between the probe gaps open at both ends and those open at either end;
     * on a busy machine a gap can last tens of ms (the bounds widen, and a gap longer than the
     * shortest phase, 20 ms, may hide a whole window: then the edges are not counted). */
    int edges = 0;
    double open_lo = 0, open_hi = 0, max_gap = 0;
    for (int i = 1; i < np; i++) {
        double gap = at[i] - at[i - 1];
        edges += states[i] != states[i - 1];
        if (states[i - 1] && states[i]) open_lo += gap;
        if (states[i - 1] || states[i]) open_hi += gap;
        if (gap > max_gap) max_gap = gap;
    }
    CHECK(!states[0], "closed during the first delay");
    if (max_gap < 0.02) CHECK(edges == 6, "three windows open and close (%d edges)", edges);
    else printf("note: probes up to %.0f ms apart (machine busy): %d edges, count not checked\n", max_gap * 1e3, edges);
    CHECK(open_lo < 0.15 && open_hi > 0.13, "about 0.14 s open in total (between %.3f and %.3f)", open_lo, open_hi);
    CHECK(!states[np - 1], "closed after the last entry");
    printf(g_failures ? "%d failure(s)\n" : "PASS\n", g_failures);
    return g_failures ? 1 : 0;
}
