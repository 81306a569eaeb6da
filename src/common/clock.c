/* clock.c — the offset between the monotonic clock of records and wall time, stored per process
 * so that databases from several hosts line up after a merge. */
#include "common/clock.h"

int64_t op_realtime_offset_ns(void)
{
    int64_t best_offset = 0;
    uint64_t best_gap = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t a = op_now_ns();
        uint64_t r = op_realtime_ns();
        uint64_t b = op_now_ns();
        if (b - a < best_gap) {
            best_gap = b - a;
            best_offset = (int64_t)r - (int64_t)(a + (b - a) / 2);
        }
    }
    return best_offset;
}
