/* perf_events.c — per-thread perf_event counters read by every sample.
 *
 * OMNIPROF_SAMPLING_PERF_EVENTS names up to 8 events as perf(1) does (common/perf_event_names.h:
 * software: task-clock, context-switches, page-faults, ...; hardware: cycles, instructions, ...;
 * cache events such as L1-dcache-load-misses; raw events r<hex>; the last three need a PMU).
 * At setup each is opened once on the calling thread to learn whether the kernel accepts it; one
 * that is refused (no PMU: ENOENT/EOPNOTSUPP; perf_event_paranoid: EACCES) is said in one
 * warning line and left out, so the record's event_values[] hold the accepted events in list order.
 * That list is announced to the database by one CPU_SAMPLE_EVENT record per event
 * (op_cpu_perf_emit_events: the table omniprof_cpu_sample_event names every value).
 * Each sampled thread then gets one counter group (PERF_FORMAT_GROUP, counting user and,
 * where permitted, kernel time), which the signal handler reads with a single read(2)
 * (async-signal-safe). Counts are cumulative for the thread since its sampler started. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/cpu/cpu_catalog.h"
#include "backend/cpu/cpu_internal.h"
#include "common/fd_guard.h"
#include "common/log.h"
#include "common/perf_event_names.h"
#include "common/settings.h"
#include "sdk/backend.h"

/* the events (cpu_catalog.h); op_cpu_perf_event_desc has the same layout */
#define g_known ((const op_cpu_perf_event_desc *)op_cpu_catalog_events)
#define N_KNOWN OP_CPU_CATALOG_N_EVENTS

typedef struct active_event {
    char name[64]; /* as the user gave it */
    uint32_t type;
    uint64_t config;
} active_event;
static active_event g_active[OMNIPROF_CPU_SAMPLE_MAX_EVENTS];
static uint32_t g_n_active;
static int g_exclude_kernel;

_Static_assert(sizeof(op_cpu_perf_event_desc) == sizeof(op_cpu_catalog_event), "same layout");

const op_cpu_perf_event_desc *op_cpu_perf_known(size_t *n)
{
    *n = N_KNOWN;
    return g_known;
}

static int open_event(uint32_t type, uint64_t config, pid_t tid, int group_fd, int exclude_kernel)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = type;
    attr.config = config;
    attr.read_format = PERF_FORMAT_GROUP;
    attr.exclude_kernel = (unsigned)exclude_kernel;
    attr.exclude_hv = 1;
    attr.disabled = 0;
    return (int)syscall(SYS_perf_event_open, &attr, tid, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
}

int op_cpu_perf_probe(const op_cpu_perf_event_desc *d)
{
    int fd = open_event(d->type, d->config, 0, -1, 0);
    if (fd < 0) fd = open_event(d->type, d->config, 0, -1, 1);
    if (fd < 0) return -errno;
    close(fd);
    return 0;
}

void op_cpu_perf_setup(void)
{
    g_n_active = 0;
    const char *list = op_setting_str(OP_SET_SAMPLING_PERF_EVENTS);
    char buf[512];
    strncpy(buf, list ? list : "", sizeof buf - 1);
    buf[sizeof buf - 1] = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
        active_event e;
        char why[600];
        if (op_perf_event_parse(tok, strlen(tok), &e.type, &e.config, why, sizeof why) != 0) {
            op_warn("cpu: OMNIPROF_SAMPLING_PERF_EVENTS: %s; left out", why);
            continue;
        }
        if (g_n_active == OMNIPROF_CPU_SAMPLE_MAX_EVENTS) {
            op_warn("cpu: OMNIPROF_SAMPLING_PERF_EVENTS: at most %d events; '%s' left out",
                    OMNIPROF_CPU_SAMPLE_MAX_EVENTS, tok);
            continue;
        }
        snprintf(e.name, sizeof e.name, "%s", tok);
        int fd = open_event(e.type, e.config, 0, -1, g_exclude_kernel);
        if (fd < 0 && !g_exclude_kernel && (errno == EACCES || errno == EPERM)) {
            g_exclude_kernel = 1;
            fd = open_event(e.type, e.config, 0, -1, 1);
        }
        if (fd < 0) {
            /* one clear line: no PMU (a VM) refuses every hardware, cache and raw event */
            op_warn("cpu: perf event '%s' not supported here (%s%s); left out of the samples, "
                    "which go on on their timer",
                    e.name, strerror(errno),
                    errno == ENOENT || errno == EOPNOTSUPP ? ": no PMU or no such event" : "");
            continue;
        }
        close(fd);
        g_active[g_n_active++] = e;
    }
}

uint32_t op_cpu_perf_count(void) { return g_n_active; }

const char *op_cpu_perf_event_name(uint32_t i)
{
    return i < g_n_active ? g_active[i].name : NULL;
}

void op_cpu_perf_emit_events(void)
{
    for (uint32_t i = 0; i < g_n_active; i++) {
        omniprof_cpu_sample_event_record_t r;
        memset(&r, 0, sizeof r);
        r.size = sizeof r;
        r.kind = OMNIPROF_BUFFER_TRACING_CPU_SAMPLE_EVENT;
        r.operation = OMNIPROF_CPU_SAMPLE_EVENT_COUNTER;
        r.index = i;
        r.type = g_active[i].type;
        r.config = g_active[i].config;
        r.name = g_active[i].name;
        op_sdk_emit(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE_EVENT, r.operation, &r, NULL);
    }
}

/* The profiler's perf fds are capped at a quarter of RLIMIT_NOFILE (and 8192), so that
 * thousands of threads never use up descriptors the program needs; threads beyond the cap
 * are sampled without counters (logged once). */
static _Atomic long g_fds_open;
static long fd_cap(void)
{
    static long cap;
    if (!cap) {
        struct rlimit rl;
        long c = 1024;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) c = (long)rl.rlim_cur / 4;
        if (c > 8192) c = 8192;
        cap = c;
    }
    return cap;
}

int op_cpu_perf_open_thread(pid_t tid, int *fds, uint32_t *n_open)
{
    *n_open = 0;
    if (!g_n_active) return -1;
    if (atomic_load(&g_fds_open) + (long)g_n_active > fd_cap()) {
        static _Atomic int warned;
        if (!atomic_exchange(&warned, 1))
            op_info("cpu: perf counters use %ld descriptors, the most allowed; further threads are sampled "
                    "without counters", (long)atomic_load(&g_fds_open));
        return -1;
    }
    /* each fd is adopted (common/fd_guard.h): above the program's fds, protected from its closes */
    int leader = open_event(g_active[0].type, g_active[0].config, tid, -1, g_exclude_kernel);
    if (leader >= 0) leader = op_fd_adopt(leader, OP_FD_IDENTITY);
    if (leader < 0) return -1;
    fds[0] = leader;
    uint32_t n = 1;
    for (uint32_t i = 1; i < g_n_active; i++) {
        int fd = open_event(g_active[i].type, g_active[i].config, tid, leader, g_exclude_kernel);
        if (fd >= 0) fd = op_fd_adopt(fd, OP_FD_IDENTITY);
        if (fd < 0) break; /* keep the prefix that opened: values stay in list order */
        fds[n++] = fd;
    }
    atomic_fetch_add(&g_fds_open, (long)n);
    *n_open = n;
    return leader;
}

void op_cpu_perf_close_thread(int *fds, uint32_t n)
{
    for (uint32_t i = n; i-- > 0;)
        if (fds[i] >= 0) op_fd_close(fds[i]);
    atomic_fetch_sub(&g_fds_open, (long)n);
}

uint32_t op_cpu_perf_read(int fd, uint32_t n, uint64_t *values)
{
    uint64_t buf[1 + OMNIPROF_CPU_SAMPLE_MAX_EVENTS];
    /* never a read of a file the program put on the number behind the interposers */
    ssize_t r = op_fd_read_checked(fd, buf, sizeof(uint64_t) * (1 + n), false);
    if (r < (ssize_t)sizeof(uint64_t)) return 0;
    uint32_t got = (uint32_t)buf[0];
    if (got > n) got = n;
    for (uint32_t i = 0; i < got; i++) values[i] = buf[1 + i];
    return got;
}
