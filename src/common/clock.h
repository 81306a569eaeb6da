/* clock.h — the one clock of every record: CLOCK_MONOTONIC nanoseconds (DESIGN rule 3). */
#ifndef OMNIPROF_COMMON_CLOCK_H
#define OMNIPROF_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Async-signal-safe (clock_gettime is on POSIX's list). */
static inline uint64_t op_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t op_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME - CLOCK_MONOTONIC in ns, sampled tightly (the smallest of a few tries). */
int64_t op_realtime_offset_ns(void);
/* CLOCK_BOOTTIME - CLOCK_MONOTONIC in ns (the time the machine was suspended; the clock of
 * Perfetto's system traces is BOOTTIME), sampled the same way. */
int64_t op_boottime_offset_ns(void);
/* This process's clock domain: "<kernel boot id>/time:<dev>:<inode of its time namespace>";
 * processes of one domain share CLOCK_MONOTONIC exactly. 0, or -1 (buf "") where unknown. */
int op_clock_domain(char *buf, size_t len);

#endif /* OMNIPROF_COMMON_CLOCK_H */
