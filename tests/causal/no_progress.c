/* no_progress.c — a program without any progress point (the runner must say so and suggest
 * end-to-end mode), and, built without -g, a binary without line information. Usage:
 * no_progress [ms of work]. */
#include <stdio.h>
#include <stdlib.h>

#include "causal_work.h"

__attribute__((noinline)) static uint64_t busy(long units)
{
    uint64_t x = 3;
    for (long i = 0; i < units; i++) CAUSAL_STEP(x);
    return x;
}

int main(int argc, char **argv)
{
    long ms = argc > 1 ? atol(argv[1]) : 1000;
    uint64_t x = busy(ms * 400000); /* about a ms each (no calibration: all the time is in busy) */
    printf("no_progress: checksum %llu\n", (unsigned long long)(x & 0xffff));
    return 0;
}
