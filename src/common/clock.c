/* clock.c — the offsets between the monotonic clock of records and wall time (so that databases
 * from several hosts line up after a merge) and boot time (Perfetto's trace clock), stored per
 * process. */
#include "common/clock.h"

static uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* other - CLOCK_MONOTONIC: `other` read between two monotonic reads, from the tightest of 5 tries. */
static int64_t offset_to_monotonic(clockid_t other)
{
    int64_t best_offset = 0;
    uint64_t best_gap = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t a = op_now_ns();
        uint64_t r = clock_ns(other);
        uint64_t b = op_now_ns();
        if (b - a < best_gap) {
            best_gap = b - a;
            best_offset = (int64_t)r - (int64_t)(a + (b - a) / 2);
        }
    }
    return best_offset;
}

int64_t op_realtime_offset_ns(void) { return offset_to_monotonic(CLOCK_REALTIME); }

int64_t op_boottime_offset_ns(void) { return offset_to_monotonic(CLOCK_BOOTTIME); }
