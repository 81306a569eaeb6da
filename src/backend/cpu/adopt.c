/* adopt.c — sampling the threads of a process the CPU backend was loaded into late
 * (`omniprof attach`: OMNIPROF_ATTACH_MODE), which never went through its pthread_create
 * wrapper and have no thread record of their own.
 *
 * A poller thread looks at /proc/self/task every 50 ms. A thread it has not seen gets an
 * op_cpu_thread made on its behalf (tid, name from /proc; pthread 0, so the sampler uses the
 * kernel's per-thread CPU clock id for it) and its ring and timers (op_cpu_sampler_thread_start,
 * which targets the timers at the tid). The signal handler finds such a thread through
 * op_cpu_adopted_find (a lock-free scan of the published table) the first time it runs on it
 * and caches it in its TLS. A thread that is gone has its timers deleted and is released to
 * its allocator, which drains and frees it. Threads named "omniprof*" are the profiler's own.
 *
 * Invariants:
 *  (1) g_table[i] is written before g_n is raised (release); the handler reads g_n (acquire)
 *      and never a slot beyond it; a slot is never reused (a retired entry's tid is set to 0
 *      first, so the handler cannot pick it again);
 *  (2) only the poller thread adds or retires entries; op_cpu_adopt_pause stops it and disarms
 *      the timers (detach), op_cpu_adopt_resume re-arms them (re-attach);
 *  (3) a scan holds g_scan_gate, and so does a fork (pthread_atfork, installed at the first
 *      start): the descriptors a scan opens (/proc/self/task, a thread's comm) are never open
 *      when the program forks, so its child does not inherit them. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"
#include "common/alloc.h"
#include "common/log.h"
#include "sdk/backend.h"

#define MAX_ADOPTED 4096

typedef struct adopted {
    _Atomic pid_t tid;
    op_cpu_thread *t;
    bool seen;
} adopted;

static adopted g_table[MAX_ADOPTED];
static _Atomic uint32_t g_n;
static _Atomic int g_running, g_paused, g_stop;
static uint64_t g_next_sequent = 1;

op_cpu_thread *op_cpu_adopted_find(pid_t tid)
{
    uint32_t n = atomic_load_explicit(&g_n, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++)
        if (atomic_load_explicit(&g_table[i].tid, memory_order_relaxed) == tid) return g_table[i].t;
    return NULL;
}

typedef struct find_ctx {
    pid_t tid;
    bool found;
} find_ctx;

static void find_cb(op_cpu_thread *t, void *data)
{
    find_ctx *c = data;
    if (t->tid == c->tid) c->found = true;
}

/* Registered already (the thread that loaded the backend registers itself). */
static bool known_elsewhere(pid_t tid)
{
    find_ctx c = {tid, false};
    op_cpu_threads_foreach(find_cb, &c);
    return c.found;
}

static void remake_cb(op_cpu_thread *t, void *data)
{
    (void)data;
    op_cpu_sampler_thread_remake(t);
}

static bool profiler_thread(pid_t tid)
{
    char path[64], comm[32] = "";
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
    FILE *f = fopen(path, "re");
    if (f) {
        if (!fgets(comm, sizeof comm, f)) comm[0] = '\0';
        fclose(f);
    }
    return !strncmp(comm, "omniprof", 8);
}

static void adopt(pid_t tid)
{
    uint32_t n = atomic_load(&g_n);
    if (n >= MAX_ADOPTED || known_elsewhere(tid) || profiler_thread(tid)) return;
    op_cpu_thread *t = op_calloc(1, sizeof *t);
    if (!t) return;
    t->tid = tid;
    t->parent_tid = getpid();
    t->internal_value = 1000000 + n;
    t->sequent_value = g_next_sequent++;
    t->perf_fd = -1;
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) t->clock_fd[i] = -1;
    atomic_store(&t->state, OP_CPU_THREAD_LIVE);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
    FILE *f = fopen(path, "re");
    if (f) {
        if (!fgets(t->name, sizeof t->name, f)) t->name[0] = '\0';
        t->name[strcspn(t->name, "\n")] = '\0';
        fclose(f);
    }
    g_table[n].t = t;
    g_table[n].seen = true;
    atomic_store_explicit(&g_table[n].tid, tid, memory_order_relaxed);
    atomic_store_explicit(&g_n, n + 1, memory_order_release); /* invariant (1) */
    op_cpu_sampler_thread_start(t);
}

static pthread_mutex_t g_scan_gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_gate_once = PTHREAD_ONCE_INIT;

static void gate_lock(void) { pthread_mutex_lock(&g_scan_gate); }
static void gate_unlock(void) { pthread_mutex_unlock(&g_scan_gate); }
static void gate_install(void) { pthread_atfork(gate_lock, gate_unlock, gate_unlock); }

static void scan_locked(void);

/* One look at /proc/self/task, never across a fork (invariant 3). */
static void scan(void)
{
    gate_lock();
    scan_locked();
    gate_unlock();
}

static void scan_locked(void)
{
    uint32_t n = atomic_load(&g_n);
    for (uint32_t i = 0; i < n; i++) g_table[i].seen = false;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        pid_t tid = (pid_t)atoi(e->d_name);
        bool found = false;
        for (uint32_t i = 0; i < n && !found; i++)
            if (atomic_load(&g_table[i].tid) == tid) found = g_table[i].seen = true;
        if (!found) adopt(tid);
    }
    if (d) closedir(d);
    for (uint32_t i = 0; i < n; i++) {
        if (g_table[i].seen || !atomic_load(&g_table[i].tid)) continue;
        atomic_store(&g_table[i].tid, 0); /* gone: the handler can no longer find it */
        op_cpu_sampler_thread_stop(g_table[i].t);
        op_cpu_sampler_release(g_table[i].t);
        g_table[i].t = NULL;
    }
}

static void *poller(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_stop)) {
        if (!atomic_load(&g_paused)) scan();
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    atomic_store(&g_running, 0);
    return NULL;
}

void op_cpu_adopt_start(void)
{
    if (atomic_exchange(&g_running, 1)) return;
    atomic_store(&g_stop, 0);
    pthread_once(&g_gate_once, gate_install);
    scan();
    pthread_t th;
    if (op_sdk_create_thread(&th, poller, NULL, OMNIPROF_LIBRARY, "omniprof-adopt") != 0) {
        atomic_store(&g_running, 0);
        op_warn("cpu: cannot start the thread that follows the threads of an attached process; only the existing ones are sampled");
    }
}

/* The poller ends (bounded wait: it sleeps 50 ms between scans). */
static void poller_end(void)
{
    atomic_store(&g_stop, 1);
    for (int i = 0; i < 400 && atomic_load(&g_running); i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

/* Fork child of an attached process: the poller and the parent's threads are not here. */
void op_cpu_adopt_at_fork_child(void)
{
    atomic_store(&g_running, 0);
    atomic_store(&g_stop, 0);
    atomic_store(&g_n, 0); /* the parent's entries are abandoned (nothing of them is touched) */
}

/* Timers deleted and perf counters closed: a detached process keeps no descriptor of ours. */
static void stop_cb(op_cpu_thread *t, void *data)
{
    (void)data;
    op_cpu_sampler_thread_stop(t);
}

/* Detach: disarm every timer (adopted threads and the registered ones), stop following: the
 * poller thread ends. */
void op_cpu_adopt_pause(void)
{
    atomic_store(&g_paused, 1);
    poller_end();
    op_cpu_threads_foreach(stop_cb, NULL);
    uint32_t n = atomic_load(&g_n);
    for (uint32_t i = 0; i < n; i++)
        if (atomic_load(&g_table[i].tid) && g_table[i].t) stop_cb(g_table[i].t, NULL);
}

/* Re-attach: the timers are made again and run at their period. */
void op_cpu_adopt_resume(void)
{
    uint32_t n = atomic_load(&g_n);
    for (uint32_t i = 0; i < n; i++)
        if (atomic_load(&g_table[i].tid) && g_table[i].t) op_cpu_sampler_thread_remake(g_table[i].t);
    op_cpu_threads_foreach(remake_cb, NULL);
    atomic_store(&g_paused, 0);
    op_cpu_adopt_start(); /* the poller again (it ended at the detach) */
}
