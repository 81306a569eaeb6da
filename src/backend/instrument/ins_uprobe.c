/* ins_uprobe.c — function entry and return through uprobes and uretprobes, placed with
 * perf_event_open on the kernel's `uprobe` PMU (no tracefs, no debugfs), read from perf ring
 * buffers by one reader thread.
 *
 * Events. For each selected function two events (entry: config 0; return: the PMU's
 * `retprobe` format bit) with config1 = the file's path and config2 = the entry's file offset,
 * sample_period 1, sample_type IDENTIFIER|TID|TIME, CLOCK_MONOTONIC timestamps (the project's
 * one clock). They are opened per thread (pid = tid, any CPU), without inheritance, and write
 * into one ring per thread owned by a software "dummy" event of that thread
 * (PERF_EVENT_IOC_SET_OUTPUT). Why not inherited per-CPU events, as `perf record` uses: when a
 * thread that inherited uprobe events exits, the kernel (6.x) drops the breakpoint of the
 * whole process for a while and the other threads' calls are not seen (measured: 5 of 44
 * thousand hits lost with one thread starting and ending every 5 ms); per-thread events have
 * no such gap, and a thread's entries and returns arrive in order in its own ring.
 *
 * Threads. At start every thread of the process gets its events; after that the reader looks
 * at /proc/self/task every 5 ms and adds the new ones (a thread's calls in the first
 * milliseconds of its life, before it is seen, are not recorded: docs/instrument.md, "Limits").
 * A thread that is gone has its ring drained and its descriptors closed. The kernel places a
 * breakpoint only in processes with a matching event: other processes running the same binary
 * are not slowed.
 *
 * Budget: events = functions x threads x 2, each a descriptor. The function list is cut so
 * that 8 threads' events fit in half the descriptors still free (OP_INS_LIMIT, logged); a
 * thread that would go over the budget is not followed (logged once).
 *
 * Reading: the reader drains every ring each pass and feeds each sample to its thread's
 * shadow stack (ins_calls.c). PERF_RECORD_LOST (a ring full) is counted and reported at stop:
 * counts are then not exact, and the log says so. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "backend/instrument/ins_internal.h"
#include "common/alloc.h"
#include "common/clock.h"
#include "common/log.h"
#include "sdk/backend.h"

/* 2 MiB of samples (65 thousand hits) per thread between passes: on a loaded machine the
 * reader may not run for a second while the program goes on trapping (measured: 843 of
 * fib(20)'s 43,782 hits lost with 512 KiB at a load average of 1,000 on 2 cores). Where the
 * perf mlock limit refuses that much (CAP_PERFMON without CAP_IPC_LOCK: perf_event_mlock_kb,
 * 516 KiB by default), 512 KiB; threads beyond the first 8 get 512 KiB too (bounded memory). */
#define RING_PAGES 512
#define RING_PAGES_MIN 128
#define RING_BIG_THREADS 8
#define POLL_NS 5000000ull

typedef struct probe {
    uint32_t func;
    const char *path; /* interned */
    uint64_t offset;
} probe;

typedef struct thr {
    pid_t tid;
    int leader;
    void *ring;
    size_t ring_bytes;
    int *fds; /* [probe][2] */
    op_ins_stack stack;
    bool seen; /* in the last /proc/self/task scan */
    struct thr *next;
} thr;

typedef struct id_slot {
    uint64_t id; /* 0 = empty */
    uint32_t func;
    uint32_t is_return;
} id_slot;

static struct {
    probe *probes;
    int nprobes, cap_probes;
    thr *threads;
    int nthreads;
    long fd_budget; /* descriptors we may still take */
    size_t ring_bytes;
    id_slot *ids;
    size_t ids_cap, ids_used;
    uint64_t lost, samples;
    pid_t reader_tid;
    pthread_mutex_t lock; /* threads, rings, stacks */
    _Atomic int stop;
    _Atomic int running;
    bool warned_budget;
    int retprobe_bit, pmu_type;
} U = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---------------------------------------------------------------------------------------- */

int op_ins_uprobe_available(char *why, size_t len)
{
    FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "re");
    int ok = f && fscanf(f, "%d", &U.pmu_type) == 1;
    if (f) fclose(f);
    if (!ok) {
        snprintf(why, len, "the kernel has no uprobe PMU (/sys/bus/event_source/devices/uprobe)");
        return -1;
    }
    char fmt[64] = "";
    f = fopen("/sys/bus/event_source/devices/uprobe/format/retprobe", "re");
    ok = f && fgets(fmt, sizeof fmt, f) && sscanf(fmt, "config:%d", &U.retprobe_bit) == 1;
    if (f) fclose(f);
    if (!ok) {
        snprintf(why, len, "the uprobe PMU has no retprobe format bit");
        return -1;
    }
    return 0;
}

static void base_attr(struct perf_event_attr *a)
{
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->use_clockid = 1;
    a->clockid = CLOCK_MONOTONIC;
    a->watermark = 1;
    a->wakeup_watermark = (uint32_t)(RING_PAGES_MIN * 4096 / 4);
}

static int open_probe(const probe *p, int is_return, pid_t tid, int group)
{
    struct perf_event_attr a;
    base_attr(&a);
    a.type = (uint32_t)U.pmu_type;
    a.config = is_return ? (1ull << U.retprobe_bit) : 0;
    a.config1 = (uint64_t)(uintptr_t)p->path;
    a.config2 = p->offset;
    a.sample_period = 1;
    a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
    int fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) return -errno;
    if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, group) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

static void id_put(uint64_t id, uint32_t func, uint32_t is_return)
{
    if ((U.ids_used + 1) * 2 > U.ids_cap) {
        size_t cap = U.ids_cap ? U.ids_cap * 2 : 1024;
        id_slot *n = op_calloc(cap, sizeof *n);
        if (!n) return;
        for (size_t i = 0; i < U.ids_cap; i++) {
            if (!U.ids[i].id) continue;
            size_t j = (size_t)(U.ids[i].id * 0x9E3779B97F4A7C15ull) & (cap - 1);
            while (n[j].id) j = (j + 1) & (cap - 1);
            n[j] = U.ids[i];
        }
        op_free(U.ids);
        U.ids = n;
        U.ids_cap = cap;
    }
    size_t mask = U.ids_cap - 1;
    for (size_t i = (size_t)(id * 0x9E3779B97F4A7C15ull) & mask;; i = (i + 1) & mask)
        if (U.ids[i].id == 0) {
            U.ids[i] = (id_slot){id, func, is_return};
            U.ids_used++;
            return;
        }
}

static const id_slot *id_get(uint64_t id)
{
    if (!U.ids_cap) return NULL;
    size_t mask = U.ids_cap - 1;
    for (size_t i = (size_t)(id * 0x9E3779B97F4A7C15ull) & mask;; i = (i + 1) & mask) {
        if (U.ids[i].id == id) return &U.ids[i];
        if (U.ids[i].id == 0) return NULL;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Threads.                                                                                 */

static void drain(thr *t);

static void thr_close(thr *t)
{
    if (t->ring) drain(t);
    for (int i = 0; t->fds && i < U.nprobes * 2; i++)
        if (t->fds[i] >= 0) close(t->fds[i]), U.fd_budget++;
    if (t->ring) munmap(t->ring, t->ring_bytes);
    if (t->leader >= 0) close(t->leader), U.fd_budget++;
    op_free(t->fds);
    t->fds = NULL;
    t->ring = NULL;
    t->leader = -1;
}

/* Give thread `tid` its ring and its probes. Holds U.lock. Returns 0, or -errno. */
static int thr_add(pid_t tid)
{
    if (U.fd_budget < 1 + 2L * U.nprobes) {
        if (!U.warned_budget)
            op_warn("instrument: thread %d and later ones not followed: %d functions need %d descriptors per thread; "
                    "narrow the selection with -i/-e/-m",
                    (int)tid, U.nprobes, 1 + 2 * U.nprobes);
        U.warned_budget = true;
        return -EMFILE;
    }
    thr *t = op_calloc(1, sizeof *t);
    if (!t) return -ENOMEM;
    t->tid = tid;
    t->stack.tid = (uint64_t)tid;
    t->fds = op_malloc((size_t)(U.nprobes ? U.nprobes : 1) * 2 * sizeof(int));
    struct perf_event_attr a;
    base_attr(&a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_DUMMY;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    t->leader = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    int err = t->leader < 0 ? -errno : 0;
    if (!err) {
        size_t small = (RING_PAGES_MIN + 1) * 4096ul;
        t->ring_bytes = U.nthreads < RING_BIG_THREADS ? U.ring_bytes : small;
        t->ring = mmap(NULL, t->ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, t->leader, 0);
        if (t->ring == MAP_FAILED && t->ring_bytes > small) {
            U.ring_bytes = t->ring_bytes = small; /* over the mlock limit: the smaller size from now on */
            t->ring = mmap(NULL, t->ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, t->leader, 0);
        }
        if (t->ring == MAP_FAILED) err = -errno, t->ring = NULL;
    }
    if (!t->fds && !err) err = -ENOMEM;
    for (int i = 0; t->fds && i < U.nprobes * 2; i++) t->fds[i] = -1;
    if (!err) U.fd_budget--;
    for (int p = 0; !err && p < U.nprobes; p++)
        for (int r = 0; r < 2 && !err; r++) {
            op_ins_func *pf = op_ins_func_get(U.probes[p].func);
            if (pf && atomic_load(&pf->disabled)) continue; /* throttled: no probe any more */
            int fd = open_probe(&U.probes[p], r, tid, t->leader);
            if (fd < 0) {
                err = fd;
                break;
            }
            t->fds[p * 2 + r] = fd;
            U.fd_budget--;
            uint64_t id = 0;
            if (ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0) id_put(id, U.probes[p].func, (uint32_t)r);
        }
    if (err) {
        thr_close(t);
        op_free(t);
        return err;
    }
    t->seen = true;
    t->next = U.threads;
    U.threads = t;
    U.nthreads++;
    return 0;
}

/* Follow the threads that appeared, drop the ones that are gone. Holds U.lock. */
static void scan_threads(void)
{
    for (thr *t = U.threads; t; t = t->next) t->seen = false;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid == U.reader_tid) continue;
        thr *t = U.threads;
        while (t && t->tid != tid) t = t->next;
        if (t) t->seen = true;
        else thr_add(tid);
    }
    if (d) closedir(d);
    uint64_t now = op_now_ns();
    for (thr **pp = &U.threads; *pp;) {
        thr *t = *pp;
        if (t->seen) {
            pp = &t->next;
            continue;
        }
        thr_close(t);
        op_ins_stack_close(&t->stack, now); /* calls left open by a thread that ended */
        *pp = t->next;
        U.nthreads--;
        op_free(t);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Reading.                                                                                 */

static void drain(thr *t)
{
    struct perf_event_mmap_page *meta = t->ring;
    const uint8_t *data = (const uint8_t *)t->ring + 4096;
    uint64_t size = t->ring_bytes - 4096;
    uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail;
    while (tail < head) {
        uint8_t buf[32];
        struct perf_event_header h;
        for (size_t i = 0; i < sizeof h; i++) ((uint8_t *)&h)[i] = data[(tail + i) % size];
        if (h.size < sizeof h) break;
        size_t n = h.size < sizeof buf ? h.size : sizeof buf;
        for (size_t i = 0; i < n; i++) buf[i] = data[(tail + i) % size];
        if (h.type == PERF_RECORD_SAMPLE && h.size >= 32) {
            uint64_t id, time;
            memcpy(&id, buf + 8, 8);
            memcpy(&time, buf + 24, 8);
            const id_slot *slot = id_get(id);
            if (slot) {
                U.samples++;
                if (slot->is_return) {
                    op_ins_stack_exit(&t->stack, slot->func, time);
                } else {
                    op_ins_func *f = op_ins_func_get(slot->func);
                    if (f && !atomic_load_explicit(&f->disabled, memory_order_relaxed))
                        op_ins_stack_enter(&t->stack, slot->func, time);
                }
            }
        } else if (h.type == PERF_RECORD_LOST && h.size >= 24) {
            uint64_t lost;
            memcpy(&lost, buf + 16, 8);
            U.lost += lost;
        }
        tail += h.size;
    }
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

static void pass(bool scan)
{
    if (scan) scan_threads();
    for (thr *t = U.threads; t; t = t->next)
        if (t->ring) drain(t);
}

static void *reader_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&U.lock);
    U.reader_tid = (pid_t)syscall(SYS_gettid);
    pthread_mutex_unlock(&U.lock);
    while (!atomic_load(&U.stop)) {
        struct timespec ts = {0, (long)POLL_NS};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&U.lock);
        if (!atomic_load(&U.stop)) pass(true);
        pthread_mutex_unlock(&U.lock);
    }
    atomic_store(&U.running, 0);
    return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* Selecting the functions.                                                                 */

typedef struct select_ctx {
    int cut, limit;
} select_ctx;

static void select_module(const char *path, uint64_t bias, bool is_main, void *data)
{
    select_ctx *sc = data;
    if (!op_ins_module_selected(&g_op_ins_filter, path, is_main, NULL)) return;
    op_ins_module m;
    char err[512];
    if (op_ins_module_read(path, is_main, &m, err, sizeof err) != 0) {
        op_warn("instrument: %s", err);
        return;
    }
    op_ins_module_select(&m, &g_op_ins_filter, NULL, 0);
    const char *ipath = op_sdk_intern(path);
    for (size_t i = 0; i < m.n_fns; i++) {
        const op_ins_fn *fn = &m.fns[i];
        if (fn->status != OP_INS_OK) continue;
        if (U.nprobes >= sc->limit) {
            sc->cut++;
            continue;
        }
        int id = op_ins_func_add(fn->name, path, bias + fn->vaddr, fn->forced, OMNIPROF_FUNCTION_CALL_UPROBE);
        if (id < 0) {
            sc->cut++;
            continue;
        }
        op_ins_func *f = op_ins_func_get((uint32_t)id);
        if (f) f->probe_index = U.nprobes;
        U.probes[U.nprobes++] = (probe){(uint32_t)id, ipath, fn->file_offset};
    }
    op_ins_module_free(&m);
}

static long free_descriptors(void)
{
    struct rlimit rl;
    long open_now = 0;
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d && (e = readdir(d));) open_now++;
    if (d) closedir(d);
    return getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (long)rl.rlim_cur - open_now : 1024;
}

int op_ins_uprobe_start(void)
{
    char why[256];
    if (op_ins_uprobe_available(why, sizeof why) != 0) {
        op_warn("instrument: uprobes unavailable: %s", why);
        return -1;
    }
    U.ring_bytes = (size_t)(RING_PAGES + 1) * 4096;
    U.fd_budget = free_descriptors() / 2;
    int limit = (int)((U.fd_budget / 8 - 1) / 2); /* 8 threads' worth */
    uint64_t maxf = g_op_ins_cfg.max_functions ? g_op_ins_cfg.max_functions : 1024;
    if ((uint64_t)limit > maxf) limit = (int)maxf;
    if (limit < 1) limit = 1;
    U.probes = op_calloc((size_t)limit, sizeof(probe));
    if (!U.probes) return -1;
    select_ctx sc = {0, limit};
    op_ins_foreach_module(select_module, &sc);
    if (sc.cut)
        op_warn("instrument: %d functions left out: %d fit the limit (OMNIPROF_INSTRUMENT_MAX_FUNCTIONS, or the "
                "descriptors free: %ld); narrow the selection with -i/-e/-m",
                sc.cut, U.nprobes, U.fd_budget * 2);
    if (!U.nprobes) {
        op_info("instrument: no function selected for uprobes");
        return 0;
    }
    /* the calling thread first: a refusal here is a permission problem, said once */
    pthread_mutex_lock(&U.lock);
    int rc = thr_add((pid_t)syscall(SYS_gettid));
    if (rc == -EACCES || rc == -EPERM) {
        pthread_mutex_unlock(&U.lock);
        op_warn("instrument: uprobes not permitted (%s): perf_event_open on the uprobe PMU needs root or "
                "CAP_PERFMON; use --method audit (calls into shared libraries) or build with -finstrument-functions",
                strerror(-rc));
        op_ins_uprobe_stop();
        return -1;
    }
    if (rc < 0) {
        pthread_mutex_unlock(&U.lock);
        op_warn("instrument: cannot place uprobes (%s)", strerror(-rc));
        op_ins_uprobe_stop();
        return -1;
    }
    scan_threads();
    pthread_mutex_unlock(&U.lock);
    op_info("instrument: %d functions probed with uprobes in %d threads", U.nprobes, U.nthreads);
    atomic_store(&U.stop, 0);
    atomic_store(&U.running, 1);
    pthread_t t;
    if (op_sdk_create_thread(&t, reader_main, NULL, OMNIPROF_LIBRARY, "omniprof-uprobe") != 0) {
        atomic_store(&U.running, 0);
        op_warn("instrument: cannot start the uprobe reader thread; uprobes off");
        op_ins_uprobe_stop();
        return -1;
    }
    return 0;
}

typedef struct closer {
    int n;
    int fds[];
} closer;

/* Closing a uprobe event waits for an SRCU grace period (the kernel unregisters the probe),
 * which takes milliseconds to seconds on a loaded machine: done on a helper thread so that the
 * reader goes on draining meanwhile. */
static void *close_fds(void *arg)
{
    closer *c = arg;
    for (int i = 0; i < c->n; i++) close(c->fds[i]);
    op_free(c);
    return NULL;
}

/* The uprobe breakpoint the kernel writes at a probed entry (one int3 on x86-64, BRK #5 on
 * aarch64). */
#if defined(__x86_64__)
static const uint8_t SWBP[] = {0xcc};
#elif defined(__aarch64__)
static const uint8_t SWBP[] = {0xa0, 0x00, 0x20, 0xd4};
#endif

/* Put the function's own first instruction back at its entry in this process, where the
 * kernel's breakpoint is, from the file the probe names (the bytes the kernel replaced):
 * written through /proc/self/mem, as a debugger does, one aligned instruction (a single
 * store). Only the breakpoint is replaced, and only where the file's bytes at the probe's
 * offset are those of the mapped entry once the breakpoint is put aside (the same file).
 * true when the entry no longer traps (restored, or no breakpoint there). */
static bool restore_entry(const probe *p, uint64_t address)
{
#ifdef __x86_64__
    const size_t n = sizeof SWBP;
#elif defined(__aarch64__)
    const size_t n = sizeof SWBP;
    if (address % 4) return false;
#else
    (void)p, (void)address;
    return false;
#endif
#if defined(__x86_64__) || defined(__aarch64__)
    uint8_t cur[4], orig[4];
    memcpy(cur, (const void *)(uintptr_t)address, n); /* a mapped, readable entry */
    if (memcmp(cur, SWBP, n) != 0) return true;       /* no breakpoint there (any more) */
    int fd = open(p->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = pread(fd, orig, n, (off_t)p->offset) == (ssize_t)n && memcmp(orig, SWBP, n) != 0;
    close(fd);
    if (!ok) return false;
    fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
    if (fd < 0) return false;
    ok = pwrite(fd, orig, n, (off_t)address) == (ssize_t)n;
    close(fd);
    return ok && memcmp((const void *)(uintptr_t)address, SWBP, n) != 0;
#endif
}

void op_ins_uprobe_disable_func(op_ins_func *f)
{
    /* called from the reader (holding U.lock) through the throttle */
    if (f->probe_index < 0 || f->probe_index >= U.nprobes) return;
    /* Disabled at once (no more samples). A disabled event keeps its uprobe registered and
     * the breakpoint traps on every call (measured: 6 us per call for nothing; a uretprobe is
     * a breakpoint at the entry too), and closing the events does not remove it in time:
     * the kernel (6.x) unregisters under its trace event mutex and then waits for the
     * uretprobes SRCU grace period, which a return probe pending for the whole run (main's)
     * holds for as long as the same thread makes new return instances, i.e. for as long as
     * the throttled function keeps trapping (measured on 6.18: a hot function throttled
     * after 100 calls trapped until the end, 1 us of kernel time per call, and the reader
     * waited on that mutex meanwhile). So the entry is first made to stop trapping here
     * (restore_entry) and the events stay open, disabled, until the thread or the run ends;
     * where that cannot be done (no writable /proc/self/mem) they are closed by a helper
     * thread, as before. A call of the function still open loses its return and is dropped
     * by the next outer return (ins_calls.c (1)). */
    for (thr *t = U.threads; t; t = t->next)
        for (int r = 0; r < 2; r++)
            if (t->fds && t->fds[f->probe_index * 2 + r] >= 0)
                ioctl(t->fds[f->probe_index * 2 + r], PERF_EVENT_IOC_DISABLE, 0);
    if (restore_entry(&U.probes[f->probe_index], f->address)) {
        op_info("instrument: %s: its entry no longer traps (breakpoint removed in this process)",
                f->name);
        return;
    }
    closer *c = op_malloc(sizeof *c + (size_t)U.nthreads * 2 * sizeof(int));
    int n = 0;
    for (thr *t = U.threads; t; t = t->next)
        for (int r = 0; r < 2; r++) {
            int *fd = t->fds ? &t->fds[f->probe_index * 2 + r] : NULL;
            if (!fd || *fd < 0) continue;
            if (c && n < U.nthreads * 2) c->fds[n++] = *fd;
            else close(*fd);
            *fd = -1;
            U.fd_budget++;
        }
    pthread_t th;
    if (c) {
        c->n = n;
        if (op_sdk_create_thread(&th, close_fds, c, OMNIPROF_LIBRARY, "omniprof-unprobe") != 0) close_fds(c);
    }
}

void op_ins_uprobe_flush(void)
{
    if (!U.probes) return;
    pthread_mutex_lock(&U.lock);
    pass(false);
    pthread_mutex_unlock(&U.lock);
}

void op_ins_uprobe_stop(void)
{
    if (!U.probes) return;
    atomic_store(&U.stop, 1);
    /* the reader exits within one poll period; wait for it, bounded */
    for (int i = 0; i < 100 && atomic_load(&U.running); i++) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&U.lock);
    uint64_t now = op_now_ns();
    for (thr *t = U.threads; t; t = t->next)
        for (int i = 0; t->fds && i < U.nprobes * 2; i++)
            if (t->fds[i] >= 0) ioctl(t->fds[i], PERF_EVENT_IOC_DISABLE, 0);
    while (U.threads) {
        thr *t = U.threads;
        thr_close(t);
        op_ins_stack_close(&t->stack, now);
        U.threads = t->next;
        op_free(t);
    }
    U.nthreads = 0;
    if (U.lost)
        op_warn("instrument: %llu uprobe hits were lost (ring buffer full): call counts are not exact",
                (unsigned long long)U.lost);
    op_info("instrument: %llu uprobe hits read", (unsigned long long)U.samples);
    op_free(U.probes);
    op_free(U.ids);
    U.probes = NULL, U.ids = NULL;
    U.ids_cap = U.ids_used = 0;
    U.nprobes = 0;
    pthread_mutex_unlock(&U.lock);
}

/* A forked child holds descriptors of its parent's events (the parent's threads): close them
 * without reading, forget the state; the backend places the child's own probes. */
void op_ins_uprobe_at_fork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    U.lock = fresh;
    if (!U.probes) return;
    while (U.threads) {
        thr *t = U.threads;
        for (int i = 0; t->fds && i < U.nprobes * 2; i++)
            if (t->fds[i] >= 0) close(t->fds[i]);
        if (t->ring) munmap(t->ring, t->ring_bytes);
        if (t->leader >= 0) close(t->leader);
        U.threads = t->next; /* the parent's memory: leaked on purpose, it may be mid-update */
    }
    U.nthreads = 0;
    U.probes = NULL, U.ids = NULL;
    U.ids_cap = U.ids_used = 0;
    U.nprobes = 0;
    U.lost = U.samples = 0;
    atomic_store(&U.running, 0);
}
