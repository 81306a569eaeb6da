/* progress_kinds.c — every kind of progress point in one program, for the functional causal
 * tests: Coz's throughput (COZ_PROGRESS_NAMED) and latency (COZ_BEGIN/COZ_END) points from
 * coz.h, the user API's omniprof_progress and omniprof_progress_begin/end, and user-API
 * ranges (omniprof_range_push: each start is a progress point named after the range).
 * Prints one line and exits with the status given as argv[2] (the runner must keep both).
 * Usage: progress_kinds [iterations] [exit status]. */
#include <coz.h>
#include <stdio.h>
#include <stdlib.h>

#include "causal_work.h"
#include "omniprof/user.h"

static uint64_t g_sink;

static void work(long units)
{
    uint64_t x = g_sink + 1;
    for (long i = 0; i < units; i++) CAUSAL_STEP(x); /* LINE_WORK */
    g_sink = x;
}

int main(int argc, char **argv)
{
    long iterations = argc > 1 ? atol(argv[1]) : 400;
    int status = argc > 2 ? atoi(argv[2]) : 0;
    long units = causal_units_per_ms();
    for (long it = 0; it < iterations; it++) {
        COZ_BEGIN("coz-latency");
        omniprof_progress_begin("user-latency");
        omniprof_range_push("frame");
        work(units);
        omniprof_range_pop();
        omniprof_progress_end("user-latency");
        COZ_END("coz-latency");
        COZ_PROGRESS_NAMED("coz-throughput");
        omniprof_progress("user-throughput");
    }
    printf("progress_kinds: %ld iterations, checksum %llu\n", iterations, (unsigned long long)(g_sink & 0xffff));
    return status;
}
