/* tool.c — libomniprof-tool.so, omniprof's own SDK client: configuration from the settings
 * registry, one context, LOSSLESS buffers, the rocpd database writer, periodic flushes,
 * collection periods, fork and exec handling, and the exit path. Which kinds go into which
 * buffer (the enable loop and the services' set-ups) is tool_kinds.c's (tool.h).
 *
 * Lifecycle (the states of g.state):
 *
 *     OFF ──omniprof_configure/tool_init──▶ ACTIVE ──finalize (atexit, SDK fini, fatal signal)──▶ DONE
 *      │                                     │  ▲
 *      └── a part failed: one log line,      │  └── fork child: parent's writer abandoned, a new
 *          the tool stays OFF (the program   │      database is opened lazily with the child's pid
 *          runs untouched)                   └── exec: flushed (committed) first
 *
 * Invariants:
 *  (1) The program is never broken: every failure logs one line and turns the failing part off;
 *      no wait is unbounded (flushes and closes take a timeout from the settings).
 *  (2) Buffer callbacks reach the writer only between writer_acquire/writer_release; the
 *      finalizer takes the writer pointer away first and then waits (bounded) for callbacks in
 *      flight, so no append ever touches a closed writer.
 *  (3) One database per process image: the path gets a numeric suffix ("-1", "-2", ...) when
 *      the file exists, never overwriting (op_db_writer_open refuses existing files, so the
 *      check is race-free across processes).
 *  (4) The tool's threads (periodic flush, collection periods, signal helper) start with every
 *      signal blocked, are detached, and are never joined: at exit they are told to stop and
 *      left alone.
 *  (5) The configuration is read only through the settings registry (settings.def). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/number.h"
#include "common/affinity.h"
#include "common/alloc.h"
#include "common/clock.h"
#include "common/fd_guard.h"
#include "common/kinds.h"
#include "common/log.h"
#include "common/path_template.h"
#include "common/settings.h"
#include "db/db.h"
#include "omniprof/omniprof.h"
#include "preload/preload.h"
#include "sdk/backend.h"
#include "tool/tool.h"

extern char **environ;

enum { ST_OFF = 0, ST_ACTIVE = 1, ST_DONE = 2 };

static struct tool_state {
    _Atomic int state;
    _Atomic int finalizing; /* no lazy database open any more */
    _Atomic int fini_entered;
    omniprof_context_id_t ctx;
    tool_buffer buf[TB__COUNT];
    _Atomic(op_db_writer *) writer;
    _Atomic int inflight;   /* callbacks between writer_acquire and writer_release */
    _Atomic int need_open;  /* open the database at the next delivery (start-up, fork child) */
    _Atomic int open_failed;
    _Atomic int quick_exit; /* the process leaves through _exit/_Exit */
    _Atomic uint64_t agents_written; /* agent handles up to it are in the database */
    _Atomic uint64_t records_lost;   /* appended to writers whose files the program closed */
    _Atomic int writers_lost;
    _Atomic int exec_closed; /* before_exec closed the database; exec_failed reopens */
    pthread_mutex_t open_lock;
    uint64_t init_ns;
    uint64_t init_cost_ns;
    pid_t pid; /* of this process image (updated in a forked child) */
    char **argv; /* from /proc/self/cmdline, read once */
    int argc;
    char command[4096];
    char db_path[PATH_MAX];
    /* threads */
    pthread_mutex_t thr_lock;
    pthread_cond_t thr_cond;
    _Atomic int threads_stop;
    _Atomic int flush_running; /* the flush thread runs (omniprof attach's detach waits for its end) */
    uint64_t flush_interval_ms;
    /* collection periods */
    uint64_t periods[32][3];
    int n_periods;
    bool benchmark_discard;
} g = {.open_lock = PTHREAD_MUTEX_INITIALIZER, .thr_lock = PTHREAD_MUTEX_INITIALIZER};

/* ------------------------------------------------------------------------------------------ */
/* Small helpers.                                                                              */

/* Create a thread with every signal blocked (invariant 4), detached. */
int op_tool_start_thread(void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_t t;
    int rc = op_worker_thread_create(&t, &attr, fn, arg); /* on OMNIPROF_WORKER_CPUS */
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

static void sleep_ms(uint64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* Wait on the thread condition until `deadline_ns` (monotonic) or stop. Returns 1 if stopping. */
static int wait_until(uint64_t deadline_ns)
{
    pthread_mutex_lock(&g.thr_lock);
    while (!atomic_load(&g.threads_stop)) {
        uint64_t now = op_now_ns();
        if (now >= deadline_ns) break;
        struct timespec ts = {(time_t)(deadline_ns / 1000000000ull), (long)(deadline_ns % 1000000000ull)};
        pthread_cond_timedwait(&g.thr_cond, &g.thr_lock, &ts);
    }
    int stop = atomic_load(&g.threads_stop);
    pthread_mutex_unlock(&g.thr_lock);
    return stop;
}

static void read_cmdline(void)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    size_t cap = 1 << 16, len = 0;
    char *buf = op_malloc(cap + 1);
    if (!buf) {
        close(fd);
        return;
    }
    ssize_t n;
    while (len < cap && (n = read(fd, buf + len, cap - len)) > 0) len += (size_t)n;
    close(fd);
    buf[len] = '\0';
    int argc = 0;
    for (size_t i = 0; i < len; i++)
        if (buf[i] == '\0') argc++;
    if (len && buf[len - 1] != '\0') argc++;
    char **argv = op_calloc((size_t)argc + 1, sizeof(char *));
    if (!argv) return;
    int k = 0;
    for (size_t i = 0; i < len && k < argc; k++) {
        argv[k] = buf + i;
        i += strlen(buf + i) + 1;
    }
    g.argv = argv;
    g.argc = k;
    size_t used = 0;
    for (int i = 0; i < k && used + 2 < sizeof(g.command); i++) {
        int w = snprintf(g.command + used, sizeof(g.command) - used, "%s%s", i ? " " : "", argv[i]);
        if (w < 0) break;
        used += (size_t)w;
        if (used >= sizeof(g.command)) used = sizeof(g.command) - 1;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* The database.                                                                               */

static omniprof_status_t add_agents_cb(omniprof_agent_version_t version, const void **agents, size_t n, void *data)
{
    op_db_writer *w = data;
    if (version != OMNIPROF_AGENT_INFO_VERSION_0) return OMNIPROF_STATUS_ERROR_INCOMPATIBLE_ABI;
    uint64_t done = atomic_load(&g.agents_written);
    for (size_t i = 0; i < n; i++) {
        const omniprof_agent_v0_t *a = agents[i];
        if (a->id.handle <= done) continue;
        op_db_writer_add_agent(w, a); /* the writer keeps one row per handle: a race adds nothing twice */
        if (a->id.handle > atomic_load(&g.agents_written)) atomic_store(&g.agents_written, a->id.handle);
    }
    return OMNIPROF_STATUS_SUCCESS;
}

/* The agents known so far without initializing a device driver (no cuInit of ours: a program
 * that forks before its first CUDA call must not find CUDA initialized; docs/cuda.md). A GPU's
 * agent appears once the program initialized its driver, before the first record of that GPU:
 * each delivery of the GPU buffer adds the new rows before its records (a few loads when
 * nothing is new), so a record's row names its agent. */
static void add_new_agents(op_db_writer *w)
{
    omniprof_query_ready_agents(OMNIPROF_AGENT_INFO_VERSION_0, add_agents_cb, sizeof(omniprof_agent_v0_t), w);
}

/* Open <dir>/<name>[-k]_results.db (invariant 3). Called with open_lock held. */
static op_db_writer *open_database(void)
{
    op_path_context pc;
    memset(&pc, 0, sizeof(pc));
    op_path_context_init_self(&pc);
    pc.argv = g.argv;
    pc.argc = g.argc;
    char err[1024], dir[4096], name[4096], base[8192];
    if (op_path_expand(op_setting_str(OP_SET_OUTPUT_PATH), &pc, dir, sizeof(dir), err, sizeof(err)) != 0 ||
        op_path_expand(op_setting_str(OP_SET_OUTPUT_FILE), &pc, name, sizeof(name), err, sizeof(err)) != 0) {
        op_error("output path: %s; no database is written", err);
        return NULL;
    }
    if (name[0] == '/') snprintf(base, sizeof(base), "%s", name); /* an absolute -o wins over -d */
    else snprintf(base, sizeof(base), "%s/%s", dir, name);
    char parent[8192];
    snprintf(parent, sizeof(parent), "%s", base);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        if (op_path_mkdirs(parent, err, sizeof(err)) != 0) {
            op_error("%s; no database is written", err);
            return NULL;
        }
    }
    int64_t rank = op_path_mpi_rank(), size = op_path_mpi_size();
    /* Store the omniprof settings that were set (a subset of the environment). */
    const char *envs[64];
    int ne = 0;
    for (char **e = environ; e && *e && ne < 62; e++)
        if (strncmp(*e, "OMNIPROF_", 9) == 0 || strncmp(*e, "LD_PRELOAD=", 11) == 0) envs[ne++] = *e;
    envs[ne] = NULL;
    op_db_process_info info;
    memset(&info, 0, sizeof(info));
    info.size = sizeof(info);
    info.pid = getpid();
    info.ppid = getppid();
    info.init_ns = g.init_ns;
    info.start_ns = op_now_ns();
    info.realtime_offset_ns = op_realtime_offset_ns();
    info.hostname = pc.hostname;
    info.command = g.command;
    info.environment = envs;
    info.rank = (int32_t)rank;
    info.world_size = (int32_t)size;
    /* the rank on the node and the launcher variable the rank came from (docs/multinode.md) */
    char ext[160];
    const char *rank_src = op_path_rank_source();
    snprintf(ext, sizeof ext, "{\"local_rank\":%ld,\"rank_source\":\"%s\"}", op_path_local_rank(),
             rank_src ? rank_src : "");
    info.extdata_json = ext;
    op_db_writer_options opts;
    memset(&opts, 0, sizeof(opts));
    opts.size = sizeof(opts);
    /* --flush-interval also bounds the writer's commit interval; otherwise the writer keeps its
     * own (OMNIPROF_DB_FLUSH_INTERVAL_MS). 0 ("only at exit") becomes the writer's maximum. */
    if (op_setting_is_set(OP_SET_FLUSH_INTERVAL)) {
        uint64_t fi = op_setting_uint(OP_SET_FLUSH_INTERVAL);
        opts.flush_interval_ms = fi == 0 || fi > 60000 ? 60000 : fi;
    }
    opts.close_timeout_ms = op_setting_uint(OP_SET_EXIT_FLUSH_TIMEOUT_MS);
    opts.kind_name = op_tool_db_kind_name;
    opts.operation_name = op_tool_db_operation_name;
    opts.symbolize = op_tool_db_symbolize;
    opts.kernel_names_mangled = !op_setting_bool(OP_SET_DEMANGLE_KERNELS); /* -M */
    opts.truncate_kernel_names = op_setting_bool(OP_SET_TRUNCATE_KERNELS); /* -T */
    if (op_setting_bool(OP_SET_KERNEL_RENAME)) opts.kernel_rename = op_tool_db_kernel_rename; /* --kernel-rename */
    op_db_writer *w = NULL;
    for (int k = 0; k < 10000; k++) {
        char path[PATH_MAX];
        int n = k == 0 ? snprintf(path, sizeof(path), "%s_results.db", base)
                       : snprintf(path, sizeof(path), "%s-%d_results.db", base, k);
        if (n < 0 || (size_t)n >= sizeof(path)) {
            op_error("database path '%s_results.db' is too long; no database is written", base);
            return NULL;
        }
        err[0] = '\0';
        w = op_db_writer_open(path, &info, &opts, err, sizeof(err));
        if (w) {
            snprintf(g.db_path, sizeof(g.db_path), "%s", path);
            break;
        }
        if (errno != EEXIST) {
            op_error("cannot open the database %s: %s; nothing is recorded", path, err[0] ? err : strerror(errno));
            return NULL;
        }
    }
    if (!w) return NULL;
    atomic_store(&g.agents_written, 0);
    add_new_agents(w);
    op_tool_manifest_append(g.db_path);
    op_info("writing %s", g.db_path);
    return w;
}

/* Invariant 2. Returns the writer (and counts this caller in flight) or NULL. */
/* The program closed or replaced the writer's files behind the interposers (a raw close_range
 * system call): that writer is off and its database keeps what it committed (W5). It is set
 * aside, never closed (closing would reach numbers that may be the program's files now; its
 * thread idles), and the next delivery opens the next database (the next free name), where
 * omniprof_drops says how many records were lost (cause "files_closed_by_program"). */
static void writer_set_aside_if_lost(op_db_writer *w)
{
    if (!op_db_writer_files_lost(w)) return;
    pthread_mutex_lock(&g.open_lock);
    if (atomic_load(&g.writer) == w && !atomic_load(&g.finalizing)) {
        atomic_store(&g.writer, NULL);
        op_db_writer_stats st;
        memset(&st, 0, sizeof st);
        st.size = sizeof st;
        op_db_writer_get_stats(w, &st);
        uint64_t lost = st.records_dropped + (st.records_appended - st.records_ingested);
        atomic_fetch_add(&g.records_lost, lost ? lost : 1);
        atomic_fetch_add(&g.writers_lost, 1);
        op_warn("%s: the program closed or replaced the database's files behind omniprof's back (a raw "
                "close_range?); what was committed stays there, at least %llu records are lost, recording goes on "
                "in a new database",
                g.db_path, (unsigned long long)lost);
        g.db_path[0] = '\0';
        atomic_store(&g.open_failed, 0);
        atomic_store(&g.need_open, 1);
    }
    pthread_mutex_unlock(&g.open_lock);
}

static op_db_writer *writer_acquire_ex(bool allow_open)
{
    atomic_fetch_add(&g.inflight, 1);
    op_db_writer *w = atomic_load(&g.writer);
    if (w && op_db_writer_files_lost(w)) {
        writer_set_aside_if_lost(w);
        w = atomic_load(&g.writer);
    }
    if (!w && allow_open && atomic_load(&g.need_open) && !atomic_load(&g.finalizing) && !atomic_load(&g.open_failed)) {
        pthread_mutex_lock(&g.open_lock);
        w = atomic_load(&g.writer);
        if (!w && atomic_load(&g.need_open) && !atomic_load(&g.finalizing)) {
            w = open_database();
            if (w) atomic_store(&g.writer, w);
            else atomic_store(&g.open_failed, 1);
            atomic_store(&g.need_open, 0);
        }
        pthread_mutex_unlock(&g.open_lock);
    }
    if (!w) atomic_fetch_sub(&g.inflight, 1);
    return w;
}

static op_db_writer *writer_acquire(void) { return writer_acquire_ex(true); }

static void writer_release(void) { atomic_fetch_sub(&g.inflight, 1); }

/* Take the writer away and wait (bounded) for callbacks in flight. */
static op_db_writer *writer_detach(uint64_t timeout_ms)
{
    pthread_mutex_lock(&g.open_lock);
    atomic_store(&g.need_open, 0);
    op_db_writer *w = atomic_exchange(&g.writer, NULL);
    pthread_mutex_unlock(&g.open_lock);
    uint64_t deadline = op_now_ns() + timeout_ms * 1000000ull;
    while (atomic_load(&g.inflight) > 0 && op_now_ns() < deadline) sleep_ms(1);
    return w;
}

/* ------------------------------------------------------------------------------------------ */
/* Buffer delivery.                                                                            */

static void on_buffer(omniprof_context_id_t context, omniprof_buffer_id_t buffer_id, omniprof_record_header_t **headers,
                      size_t n, void *data, uint64_t drop_count)
{
    (void)context;
    (void)buffer_id;
    tool_buffer *b = data;
    uint64_t t0 = op_now_ns();
    atomic_store_explicit(&b->drops, drop_count, memory_order_relaxed);
    op_db_writer *w = g.benchmark_discard ? NULL : writer_acquire();
    if (w) {
        if (b == &g.buf[TB_GPU]) add_new_agents(w);
        op_db_writer_append(w, (const omniprof_record_header_t *const *)headers, n);
        writer_release();
    }
    atomic_fetch_add_explicit(&b->records, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&b->callbacks, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&b->cb_ns, op_now_ns() - t0, memory_order_relaxed);
}

static void flush_buffers(void)
{
    for (int i = 0; i < TB__COUNT; i++) {
        if (!g.buf[i].used) continue;
        omniprof_status_t st = omniprof_flush_buffer(g.buf[i].id);
        if (st != OMNIPROF_STATUS_SUCCESS && st != OMNIPROF_STATUS_ERROR_FINALIZED)
            op_trace("flush of buffer %s: %s", g.buf[i].name, omniprof_get_status_string(st));
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Threads: periodic flush, collection periods.                                                */

static void *flush_thread(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "omniprof-flush", 0, 0, 0); /* top -H; /proc/PID/task/TID/comm */
    for (;;) {
        if (wait_until(op_now_ns() + g.flush_interval_ms * 1000000ull)) break;
        if (atomic_load(&g.finalizing)) break;
        flush_buffers();
    }
    atomic_store(&g.flush_running, 0);
    return NULL;
}

static void start_flush_thread(void)
{
    atomic_store(&g.flush_running, 1);
    if (op_tool_start_thread(flush_thread, NULL) == 0) return;
    atomic_store(&g.flush_running, 0);
    op_warn("cannot start the flush thread; data is written at exit only");
}

static void *period_thread(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "omniprof-period", 0, 0, 0);
    uint64_t t = op_now_ns();
    for (int p = 0; p < g.n_periods; p++) {
        uint64_t delay = g.periods[p][0], duration = g.periods[p][1], repeat = g.periods[p][2];
        for (uint64_t r = 0; repeat == 0 || r < repeat; r++) {
            t += delay;
            if (wait_until(t)) return NULL;
            omniprof_start_context(g.ctx);
            t += duration;
            if (wait_until(t)) return NULL;
            omniprof_stop_context(g.ctx);
        }
    }
    return NULL;
}

static int parse_periods(const char *text)
{
    g.n_periods = 0;
    const char *p = text;
    while (*p) {
        while (*p == ';' || *p == ' ' || *p == ',') p++;
        if (!*p) break;
        unsigned long long a, b, c;
        int used = 0;
        if (sscanf(p, "%llu:%llu:%llu%n", &a, &b, &c, &used) != 3 || used == 0 || b == 0) {
            op_error("OMNIPROF_COLLECTION_PERIOD='%s' is not valid; expected DELAY:DURATION:REPEAT in ns, "
                     "';'-separated; collecting all the time instead",
                     text);
            g.n_periods = 0;
            return -1;
        }
        if (g.n_periods < 32) {
            g.periods[g.n_periods][0] = a;
            g.periods[g.n_periods][1] = b;
            g.periods[g.n_periods][2] = c;
            g.n_periods++;
        }
        p += used;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Finalization.                                                                               */

static void record_costs(op_db_writer *w)
{
    uint64_t cb_ns = 0, records = 0, callbacks = 0;
    for (int i = 0; i < TB__COUNT; i++) {
        tool_buffer *b = &g.buf[i];
        if (!b->used) continue;
        cb_ns += atomic_load(&b->cb_ns);
        records += atomic_load(&b->records);
        callbacks += atomic_load(&b->callbacks);
        omniprof_buffer_stats_t st;
        memset(&st, 0, sizeof(st));
        st.size = sizeof(st);
        uint64_t drops = atomic_load(&b->drops);
        if (omniprof_buffer_get_stats(b->id, &st) == OMNIPROF_STATUS_SUCCESS) {
            op_db_writer_add_backpressure(w, b->name, st.producer_waits, 0);
            if (st.records_dropped + st.records_too_big > drops) drops = st.records_dropped + st.records_too_big;
            char key[96];
            snprintf(key, sizeof(key), "buffer_%s_producer_waits", b->name);
            op_db_writer_add_run_cost(w, key, (double)st.producer_waits, "count");
            snprintf(key, sizeof(key), "buffer_%s_deliveries", b->name);
            op_db_writer_add_run_cost(w, key, (double)st.deliveries, "count");
        }
        if (drops) op_db_writer_add_drops(w, b->name, "buffer_full", drops);
        if (st.size >= offsetof(omniprof_buffer_stats_t, records_lost_at_source) + sizeof(uint64_t) &&
            st.records_lost_at_source) /* the CPU sampler's rings: shown by the summary's CPU profile */
            op_db_writer_add_drops(w, b->name, "lost_at_source", st.records_lost_at_source);
    }
    uint64_t lost = atomic_load(&g.records_lost);
    if (lost) op_db_writer_add_drops(w, "all", "files_closed_by_program", lost);
    op_db_writer_add_run_cost(w, "tool_init_ns", (double)g.init_cost_ns, "ns");
    op_db_writer_add_run_cost(w, "tool_callback_ns", (double)cb_ns, "ns");
    op_db_writer_add_run_cost(w, "tool_records", (double)records, "count");
    op_db_writer_add_run_cost(w, "tool_deliveries", (double)callbacks, "count");
    op_db_writer_add_run_cost(w, "tool_memory_bytes", (double)op_alloc_bytes(), "bytes");
}

/* Wait for the writer to commit everything appended, for as long as it makes progress: a run
 * whose database fell behind (the spool holds a backlog) is completed, while a writer that
 * makes no progress for `stall_ms` is given up on (invariant 1: bounded by the stall time). */
static void drain_writer(op_db_writer *w, uint64_t stall_ms)
{
    op_db_writer_stats st;
    memset(&st, 0, sizeof(st));
    st.size = sizeof(st);
    op_db_writer_get_stats(w, &st);
    uint64_t last = st.records_ingested, last_progress = op_now_ns();
    bool told = false;
    for (;;) {
        int rc = op_db_writer_flush(w, 250);
        if (rc != -ETIMEDOUT) break;
        memset(&st, 0, sizeof(st));
        st.size = sizeof(st);
        op_db_writer_get_stats(w, &st);
        uint64_t now = op_now_ns();
        if (st.records_ingested != last) {
            last = st.records_ingested;
            last_progress = now;
        } else if (now - last_progress > stall_ms * 1000000ull) {
            op_warn("the database writer made no progress for %llu ms; %s is closed with what it has",
                    (unsigned long long)stall_ms, g.db_path);
            break;
        }
        if (!told && st.records_appended > st.records_ingested) {
            op_info("finishing %s (%llu records to store)", g.db_path,
                    (unsigned long long)(st.records_appended - st.records_ingested));
            told = true;
        }
    }
}

/* Stop the context and close the database, what the buffers hold delivered: flush while the
 * context is still active (a backend's flush, cuptiActivityFlushAll, emits the GPU activity it
 * holds only into active contexts), stop, flush again; with open_empty, a forked child that
 * recorded nothing yet still gets its database, unless it leaves through _exit (final: a
 * daemon's middle process, a failed exec); then drain (bounded by timeout_ms), record the costs and close. false if there
 * was no database; else *st holds the writer's statistics and *rc the close status. */
static bool stop_and_close(uint64_t timeout_ms, bool final, bool open_empty, op_db_writer_stats *st, int *rc)
{
    uint64_t t0 = op_now_ns();
    flush_buffers();
    omniprof_stop_context(g.ctx);
    flush_buffers();
    uint64_t t1 = op_now_ns();
    op_db_writer *cur = writer_acquire_ex(false);
    if (cur) { /* a writer whose files the program closed finds out at its next transaction */
        op_db_writer_flush(cur, timeout_ms);
        writer_release();
        writer_set_aside_if_lost(cur);
    }
    if (open_empty && !atomic_load(&g.writer) && atomic_load(&g.need_open) && !(final && atomic_load(&g.quick_exit))) {
        if (writer_acquire()) writer_release();
    }
    if (final) atomic_store(&g.finalizing, 1);
    op_db_writer *w = writer_detach(timeout_ms);
    if (!w) return false;
    memset(st, 0, sizeof(*st));
    st->size = sizeof(*st);
    op_db_writer_get_stats(w, st);
    add_new_agents(w); /* a device the program initialized without any record of it */
    uint64_t backlog = st->records_appended - st->records_ingested, t2 = op_now_ns();
    drain_writer(w, timeout_ms);
    uint64_t t3 = op_now_ns();
    record_costs(w);
    memset(st, 0, sizeof(*st));
    st->size = sizeof(*st);
    op_db_writer_get_stats(w, st);
    *rc = op_db_writer_close(w);
    /* where the end of a run goes (OMNIPROF_LOG_LEVEL=info; issue 12) */
    op_info("closing %s: buffers delivered %.1f ms, %llu records not yet stored then, stored in %.1f ms, "
             "database closed in %.1f ms", g.db_path, (double)(t1 - t0) / 1e6, (unsigned long long)backlog,
             (double)(t3 - t2) / 1e6, (double)(op_now_ns() - t3) / 1e6);
    /* a writer that turned itself off already said why, in one line (W5) */
    if (*rc != 0 && !st->failed) op_warn("closing %s: %s", g.db_path, strerror(-*rc));
    return true;
}

/* Stop collecting, deliver what the buffers hold, and close the database (bounded). */
static void finalize_tool(void)
{
    if (atomic_load(&g.state) != ST_ACTIVE) return;
    if (atomic_exchange(&g.fini_entered, 1)) return;
    uint64_t timeout = op_setting_uint(OP_SET_EXIT_FLUSH_TIMEOUT_MS);
    pthread_mutex_lock(&g.thr_lock);
    atomic_store(&g.threads_stop, 1);
    pthread_cond_broadcast(&g.thr_cond);
    pthread_mutex_unlock(&g.thr_lock);
    op_db_writer_stats st;
    int rc;
    if (stop_and_close(timeout, true, true, &st, &rc)) {
        /* --minimum-output-data: a database with less recorded data than asked is not kept */
        uint64_t min_kb = op_setting_uint(OP_SET_MINIMUM_OUTPUT_DATA);
        if (rc == 0 && min_kb && st.spool_bytes_total < min_kb * 1024) {
            char have[OP_FMT_BYTES_LEN], want[OP_FMT_BYTES_LEN];
            op_info("%s: %s of records, below --minimum-output-data %s: not kept", g.db_path,
                    op_fmt_bytes(have, sizeof have, st.spool_bytes_total),
                    op_fmt_bytes(want, sizeof want, min_kb * 1024));
            unlink(g.db_path);
        } else if (rc == 0 && !(op_setting_str(OP_SET_RUN_MANIFEST) &&
                                *op_setting_str(OP_SET_RUN_MANIFEST))) {
            /* where the database went: said here when the launcher exec'ed the program (it
             * says it itself, with the derived files, when it stays: cmd_run_post.c) */
            struct stat sb;
            char size[OP_FMT_BYTES_LEN] = "?";
            if (stat(g.db_path, &sb) == 0) op_fmt_bytes(size, sizeof size, (uint64_t)sb.st_size);
            op_warn("database: %s (%s)", g.db_path, size);
        }
    }
    atomic_store(&g.state, ST_DONE);
}

/* The process ends: the SDK's finalization flushes every backend one last time while the
 * context still delivers (the CPU backend's final samples, THREAD and REGION_PROFILE records),
 * then calls tool_fini, which closes the database. Where the SDK refuses (called from inside
 * one of its callbacks), the tool closes what it has itself. */
static void finalize_through_sdk(void)
{
    if (omniprof_finalize() != OMNIPROF_STATUS_SUCCESS || atomic_load(&g.state) == ST_ACTIVE) finalize_tool();
}

void op_tool_flush_now(bool final, uint64_t timeout_ms)
{
    if (atomic_load(&g.state) != ST_ACTIVE) return;
    if (final) {
        finalize_through_sdk();
        return;
    }
    flush_buffers();
    /* Only commit: a forked child that has not opened its database yet does not open one
     * here (it may be about to exec, and the new image writes its own). */
    op_db_writer *w = writer_acquire_ex(false);
    if (w) {
        op_db_writer_flush(w, timeout_ms);
        writer_release();
    }
}

bool op_tool_active(void) { return atomic_load(&g.state) == ST_ACTIVE; }

/* omniprof attach: after a detach no thread of the profiler runs in the process (the flush
 * thread, the signal helper, the SDK's callback threads; the CPU backend's poller and allocator
 * threads ended when the context stopped). Each wait is bounded (invariant 1). */
static void park_threads(void)
{
    pthread_mutex_lock(&g.thr_lock);
    atomic_store(&g.threads_stop, 1);
    pthread_cond_broadcast(&g.thr_cond);
    pthread_mutex_unlock(&g.thr_lock);
    for (int i = 0; i < 2000 && atomic_load(&g.flush_running); i++) sleep_ms(1);
    op_tool_signals_park();
    op_sdk_park_threads();
    omniprof_preload_log_reopen(NULL); /* nor a descriptor (the log's was the last) */
}

/* omniprof attach (tool_attach.c): stop collecting, deliver what the buffers hold and close
 * the database; the process goes on and the tool stays loaded (ACTIVE) for a re-attach. */
int op_tool_detach(uint64_t timeout_ms, char *db, size_t n)
{
    if (atomic_load(&g.state) != ST_ACTIVE) return -1;
    op_db_writer_stats st;
    int rc;
    bool closed = stop_and_close(timeout_ms, false, true, &st, &rc);
    snprintf(db, n, "%s", closed ? g.db_path : "");
    park_threads();
    return 0;
}

/* A new attach to a process whose tool is loaded: the attach's settings (output path...) are
 * read again, a new database opens at the first delivery, collection restarts. The services
 * are those of the first attach (configuration is locked after it). */
int op_tool_reattach(void)
{
    if (atomic_load(&g.state) != ST_ACTIVE) return -1;
    op_settings_reset();
    op_settings_load();
    omniprof_preload_log_reopen(op_setting_str(OP_SET_ATTACH_LOG)); /* this attach's file */
    g.db_path[0] = '\0';
    g.init_ns = op_now_ns();
    atomic_store(&g.open_failed, 0);
    atomic_store(&g.need_open, 1);
    atomic_store(&g.threads_stop, 0);
    if (g.flush_interval_ms > 0 && !atomic_load(&g.flush_running)) start_flush_thread();
    op_tool_signals_unpark();
    return omniprof_start_context(g.ctx) == OMNIPROF_STATUS_SUCCESS ? 0 : -1;
}

static void tool_fini(void *tool_data)
{
    (void)tool_data;
    finalize_tool();
}

static void tool_atexit(void) { finalize_through_sdk(); }

/* ------------------------------------------------------------------------------------------ */
/* fork and exec.                                                                              */

static void at_fork_child(void)
{
    if (atomic_load(&g.state) != ST_ACTIVE) return;
    /* The parent's writer, threads and locks do not exist here: forget them, open a new
     * database lazily with this pid (invariant 3; a child that execs at once writes none). */
    op_db_writer *w = atomic_exchange(&g.writer, NULL);
    if (w) op_db_writer_abandon_after_fork(w);
    pthread_mutex_init(&g.open_lock, NULL);
    pthread_mutex_init(&g.thr_lock, NULL);
    pthread_cond_init(&g.thr_cond, NULL);
    g.pid = getpid();
    atomic_store(&g.inflight, 0);
    atomic_store(&g.open_failed, 0);
    atomic_store(&g.quick_exit, 0);
    atomic_store(&g.fini_entered, 0);
    atomic_store(&g.finalizing, 0);
    atomic_store(&g.need_open, 1);
    for (int i = 0; i < TB__COUNT; i++) {
        atomic_store(&g.buf[i].records, 0);
        atomic_store(&g.buf[i].callbacks, 0);
        atomic_store(&g.buf[i].cb_ns, 0);
    }
    g.init_ns = op_now_ns();
    g.db_path[0] = '\0';
    atomic_store(&g.flush_running, 0);
    if (op_tool_attach_after_fork_child()) {
        /* A child of an attached process: nothing is collected (no thread, no database, no
         * timer) until the launcher attaches to it (--attach-children), which re-attaches. */
        atomic_store(&g.need_open, 0);
        atomic_store(&g.threads_stop, 1);
        omniprof_stop_context(g.ctx);
        op_tool_signals_after_fork_child(false);
        omniprof_preload_fd_close_all(); /* the parent's database, counters, eventfds */
        return;
    }
    if (!atomic_load(&g.threads_stop) && g.flush_interval_ms > 0) start_flush_thread();
    op_tool_signals_after_fork_child(true);
}

/* Before exec replaces this image, stop collecting and close the database as at exit: every
 * record delivered and committed, the WAL checkpointed and removed, so the database is one
 * whole file (the new image is traced by its own copy of the tool, through the inherited
 * LD_PRELOAD and OMNIPROF_* variables). Other threads still running meanwhile record nothing
 * more (the context is stopped). Called by libomniprof-preload.so's exec interposers. */
static void before_exec(void)
{
    if (atomic_load(&g.state) != ST_ACTIVE) return;
    /* A vfork child shares the parent's memory and runs no fork handlers: leave it alone. */
    if (getpid() != g.pid) return;
    op_db_writer_stats st;
    int rc;
    /* a forked child about to exec that recorded nothing writes no database (open_empty false) */
    stop_and_close(op_setting_uint(OP_SET_EXIT_FLUSH_TIMEOUT_MS), false, false, &st, &rc);
    atomic_store(&g.exec_closed, 1);
}

/* The exec failed: this image goes on, recording into a new database (the next free name). */
static void exec_failed(void)
{
    if (atomic_load(&g.state) != ST_ACTIVE || getpid() != g.pid || !atomic_exchange(&g.exec_closed, 0)) return;
    g.db_path[0] = '\0';
    atomic_store(&g.open_failed, 0);
    atomic_store(&g.need_open, 1);
    omniprof_start_context(g.ctx);
}

/* _exit/_Exit: the preload library finalizes the SDK (and so the tool) after this hook. */
static void process_end(op_preload_end how, int status)
{
    (void)status;
    if (how == OP_PRELOAD_END__EXIT) atomic_store(&g.quick_exit, 1);
}

/* The tool's part of the libc interposers (src/preload): exit, exec and the signals it owns. */
static const op_preload_hooks g_tool_hooks = {
    .size = sizeof(op_preload_hooks),
    .name = "tool",
    .order = 10, /* after the backends: they hand over what they hold before the tool closes */
    .process_end = process_end,
    .before_exec = before_exec,
    .exec_failed = exec_failed,
    .sigaction = op_tool_sigaction_hook,
};

/* ------------------------------------------------------------------------------------------ */
/* Configuration.                                                                              */

static int tool_init(omniprof_client_finalize_t finalize_func, void *tool_data)
{
    (void)finalize_func;
    (void)tool_data;
    uint64_t t0 = op_now_ns();
    g.init_ns = t0;
    g.pid = getpid();
    op_settings_load();
    read_cmdline();
    g.flush_interval_ms = op_setting_uint(OP_SET_FLUSH_INTERVAL);
    g.benchmark_discard = op_setting_bool(OP_SET_BENCHMARK_DISCARD);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g.thr_cond, &ca);
    pthread_condattr_destroy(&ca);

    omniprof_status_t st = omniprof_create_context(&g.ctx);
    if (st != OMNIPROF_STATUS_SUCCESS) {
        op_error("cannot create a context: %s; nothing is recorded", omniprof_get_status_string(st));
        return -1;
    }
    if (op_setting_bool(OP_SET_KERNEL_RENAME)) op_tool_rename_setup(g.ctx);
    /* Every kind the settings turn on (kinds.def's SWITCH column): markers are one record per
     * range or mark (MARKER_RANGE_API), as rocprofv3's marker trace; the per-call MARKER_API
     * records would store every push and pop a second time, so no setting turns them on. */
    if (op_tool_enable_kinds(g.ctx, g.buf, on_buffer) == 0) {
        op_info("nothing to trace (no OMNIPROF_*_TRACE setting is on); the tool stays off");
        return -1;
    }
    const char *periods = op_setting_str(OP_SET_COLLECTION_PERIOD);
    if (periods && *periods) parse_periods(periods);

    /* The database is opened here, before the program's main; a forked child opens its own. */
    pthread_mutex_lock(&g.open_lock);
    op_db_writer *w = open_database();
    pthread_mutex_unlock(&g.open_lock);
    if (!w) return -1; /* logged; the program runs untraced (invariant 1) */
    atomic_store(&g.writer, w);
    atomic_store(&g.state, ST_ACTIVE);

    pthread_atfork(NULL, NULL, at_fork_child);
    atexit(tool_atexit);
    if (omniprof_preload_register(&g_tool_hooks) != 0) op_warn("cannot register with the preload library: %s", strerror(errno));
    if (op_setting_bool(OP_SET_SIGNAL_HANDLERS)) op_tool_signals_install();
    if (g.flush_interval_ms > 0) start_flush_thread();
    if (g.n_periods > 0) {
        if (op_tool_start_thread(period_thread, NULL) != 0) {
            op_warn("cannot start the collection-period thread; collecting all the time");
            omniprof_start_context(g.ctx);
        }
    } else {
        st = omniprof_start_context(g.ctx);
        if (st != OMNIPROF_STATUS_SUCCESS) op_warn("starting the context: %s", omniprof_get_status_string(st));
    }
    g.init_cost_ns = op_now_ns() - t0;
    return 0;
}

OMNIPROF_API omniprof_tool_configure_result_t *omniprof_configure(uint32_t version, const char *runtime_version,
                                                                  uint32_t priority, omniprof_client_id_t *client_id)
{
    (void)version;
    (void)runtime_version;
    (void)priority;
    static omniprof_tool_configure_result_t result = {sizeof(omniprof_tool_configure_result_t), tool_init, tool_fini,
                                                      NULL};
    static atomic_int configured;
    if (atomic_exchange(&configured, 1)) return NULL; /* once per process image */
    if (client_id) client_id->name = "omniprof-tool";
    return &result;
}

/* Pin the library (it owns signal handlers and interposers) and make sure the SDK runs its
 * registration even when nothing else triggers it. */
__attribute__((constructor)) static void tool_ctor(void)
{
    Dl_info info;
    if (dladdr((void *)tool_ctor, &info) && info.dli_fname) dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    omniprof_initialize();
}
