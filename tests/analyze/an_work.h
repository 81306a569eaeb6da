/* an_work.h — the work of the analyze test programs: a stage lasts a number of milliseconds on
 * the monotonic clock, so that it lasts what its knob says however busy the machine is (a
 * what-if that halves a range is then checked against a run whose range really is half). The
 * stage sleeps to its deadline rather than spinning: spinning threads on a 2-core machine shared
 * with other work stretch each other (CPU contention, which the graph does not model: see
 * docs/analyze.md), and the tests check the graph's dependencies, not the scheduler. */
#ifndef AN_WORK_H
#define AN_WORK_H

#include <stdlib.h>
#include <time.h>

static inline void an_work_ms(double ms)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long long ns = t.tv_nsec + (long long)(ms * 1e6);
    t.tv_sec += (time_t)(ns / 1000000000LL);
    t.tv_nsec = (long)(ns % 1000000000LL);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0) {
    }
}

static inline double an_arg(int argc, char **argv, int i, double dflt)
{
    return argc > i ? atof(argv[i]) : dflt;
}

#endif
