/* test_clock.c — the record clock is monotonic and the realtime offset is consistent. */
#include <time.h>

#include "check.h"
#include "common/clock.h"

int main(void)
{
    uint64_t a = op_now_ns();
    uint64_t b = op_now_ns();
    CHECK(b >= a);
    int64_t off = op_realtime_offset_ns();
    uint64_t mono = op_now_ns();
    uint64_t real = op_realtime_ns();
    int64_t diff = (int64_t)real - (int64_t)mono - off;
    if (diff < 0) diff = -diff;
    CHECK(diff < 50 * 1000 * 1000); /* within 50 ms */
    return CHECK_DONE();
}
