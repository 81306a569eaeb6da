/* an_work.h — the work of the analyze test programs: spin on the monotonic clock for a number
 * of milliseconds, so that a stage lasts what its knob says however busy the machine is (a
 * what-if that halves a range is then checked against a run whose range really is half). */
#ifndef AN_WORK_H
#define AN_WORK_H

#include <stdlib.h>
#include <time.h>

static inline void an_spin_ms(double ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long long ns = (long long)(ms * 1e6);
    do clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) < ns);
}

static inline double an_arg(int argc, char **argv, int i, double dflt)
{
    return argc > i ? atof(argv[i]) : dflt;
}

#endif
