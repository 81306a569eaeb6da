/* clock.c — the offsets between the monotonic clock of records and wall time (so that databases
 * from several hosts line up after a merge) and boot time (Perfetto's trace clock), stored per
 * process. */
#include "common/clock.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Two processes read the same CLOCK_MONOTONIC exactly when they run on one kernel since one boot
 * (the kernel's boot id) in one time namespace (which can move CLOCK_MONOTONIC: unshare --time,
 * containers). Kernels without time namespaces have no /proc/self/ns/time: one boot, one clock. */
int op_clock_domain(char *buf, size_t len)
{
    if (!buf || len < 2) return -1;
    buf[0] = 0;
    char boot[64] = "";
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, boot, sizeof boot - 1);
    close(fd);
    while (n > 0 && (boot[n - 1] == '\n' || boot[n - 1] == ' ')) n--;
    if (n <= 0) return -1;
    boot[n] = 0;
    struct stat st;
    if (stat("/proc/self/ns/time", &st) == 0)
        snprintf(buf, len, "%s/time:%llu:%llu", boot, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    else
        snprintf(buf, len, "%s", boot);
    return 0;
}
