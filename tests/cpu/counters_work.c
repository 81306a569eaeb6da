/* counters_work.c — a fixed amount of single-threaded work that counts its own hardware events
 * (for the `cpucounters` part of tests/gpu/run.sh, which compares them with what omniprof's
 * OMNIPROF_SAMPLING_PERF_EVENTS recorded and with `perf stat`). It opens `instructions` and
 * `cycles` on itself (user and kernel where permitted, as omniprof does), runs N rounds of a
 * dependent multiply-add, and prints
 *     window <start ns> <end ns>       CLOCK_MONOTONIC around the work (omniprof's clock)
 *     self <instructions> <cycles>     its own counts over the window
 * or "nopmu <errno text>" (exit 77) where the kernel has no hardware counters.
 * Usage: counters_work [rounds in millions, default 2000]. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int open_counter(uint64_t config)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_HARDWARE;
    a.config = config;
    a.disabled = 1;
    a.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    if (fd < 0) { /* perf_event_paranoid: user space only */
        a.exclude_kernel = 1;
        fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    }
    return fd;
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv)
{
    long rounds = (argc > 1 ? atol(argv[1]) : 2000) * 1000000L;
    int fi = open_counter(PERF_COUNT_HW_INSTRUCTIONS), fc = open_counter(PERF_COUNT_HW_CPU_CYCLES);
    if (fi < 0 || fc < 0) {
        printf("nopmu %s\n", strerror(errno));
        return 77;
    }
    uint64_t x = 7;
    uint64_t t0 = now_ns();
    ioctl(fi, PERF_EVENT_IOC_ENABLE, 0);
    ioctl(fc, PERF_EVENT_IOC_ENABLE, 0);
    for (long i = 0; i < rounds; i++) {
        __asm__ volatile("" : "+r"(x));
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    }
    ioctl(fi, PERF_EVENT_IOC_DISABLE, 0);
    ioctl(fc, PERF_EVENT_IOC_DISABLE, 0);
    uint64_t t1 = now_ns(), ni = 0, nc = 0;
    if (read(fi, &ni, sizeof ni) != sizeof ni || read(fc, &nc, sizeof nc) != sizeof nc) return 1;
    printf("window %llu %llu\nself %llu %llu\nsink %llu\n", (unsigned long long)t0, (unsigned long long)t1,
           (unsigned long long)ni, (unsigned long long)nc, (unsigned long long)(x & 1));
    return 0;
}
