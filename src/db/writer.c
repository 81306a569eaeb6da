/* writer.c — the background database writer: SDK records -> spool -> ingest thread -> rows of
 * the rocpd schema version 3 (schema/tables.sql; mapping in docs/database.md).
 *
 * Threads. Producers (SDK buffer callbacks, any number) call op_db_writer_append: one spool
 * reservation per call, a memcpy per record, strings copied beside it (spool.h). One ingest
 * thread, started with every signal blocked, owns the SQLite connection: it reads committed
 * spool batches in order, turns each record into rows with prepared statements inside a
 * transaction, and commits when it is idle, every flush interval, every batch_rows rows, and
 * as soon as it has passed a flush target.
 *
 * Spool record (8-byte aligned, inside a spool batch):
 *     op_db_rec { uint32 len; uint32 category; uint32 kind; uint32 reserved; }
 *     payload   payload->size bytes (rounded up to 8); each `const char *` field of the payload
 *               (see rec_string_fields) holds the offset of its copy from the payload start
 *               (0 = NULL) instead of the pointer
 *     strings   NUL-terminated copies (each at most OP_DB_MAX_STRING bytes)
 *
 * Crash-safety invariants (docs/database.md repeats them):
 *  W1. The database is in WAL mode from its creation, before any data row: a process that dies
 *      at any instant (SIGKILL, abort, SIGSEGV) leaves a database that opens, passes
 *      integrity_check and holds exactly the transactions committed before.
 *  W2. Each transaction leaves the database consistent: every row it adds references only rows
 *      added by the same or an earlier transaction (strings, threads, streams, agents, kernel
 *      symbols and tracks are inserted before the rows that use them), so the views never show
 *      a row whose joins fail because of the crash point.
 *  W3. Records appended more than one flush interval (plus the time to ingest what was ahead of
 *      them) before a SIGKILL are committed: the ingest thread commits at least every interval
 *      while it works, and when it runs out of committed spool batches.
 *  W4. The ingest thread never holds a lock a producer needs while it runs SQLite; producers
 *      take only the spool lock, for a few instructions.
 *  W5. After the first SQLite or I/O error the writer is off: one log line with the database
 *      path and SQLite's message, the open transaction is rolled back (committed data stays),
 *      producers drop and count, the ingest thread keeps draining the spool so memory and disk
 *      are released. The application is never stopped or crashed.
 *  W6. Memory is bounded: the spool's hot chunks, fixed caches (strings, stack nodes, recent
 *      dispatches), maps
 *      whose size grows only with distinct threads / streams / agents / kernels / operations /
 *      metrics / counters of the program, and SQLite's page cache (cache_kib). */
#include "db/db.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/settings.h"
#include "db/spool.h"
#include "omniprof/counters.h"
#include "omniprof/cpu.h"
#include "omniprof/gpu.h"
#include "omniprof/tracing.h"

#define OP_DB_MAX_STRING 4096      /* longest string copied from a record (longer: truncated) */
#define OP_DB_MAX_PAYLOAD (1u << 20)
#define OP_DB_MAX_STRFIELDS 136    /* per record: 2 per argument (64 arguments) + 8 */
#define OP_DB_STRCACHE 4096        /* direct-mapped string cache entries */
#define OP_DB_STRCACHE_MAXLEN 256  /* longer strings are looked up in the database each time */
#define OP_DB_STACKCACHE 16384     /* direct-mapped stack-node cache entries */
#define OP_DB_DISPATCHCACHE 8192   /* direct-mapped dispatch id -> event cache (counters) */

/* Internal record category: writer-side entries that travel through the spool so that they
 * are ordered with the records (agents, run cost, drops, back-pressure). */
#define OP_DB_CAT_INTERNAL 0x4f500000u
enum { INT_AGENT = 1, INT_RUN_COST, INT_DROPS, INT_BACKPRESSURE };

typedef struct int_run_cost { uint64_t size; double value; const char *name; const char *units; } int_run_cost;
typedef struct int_drops { uint64_t size; uint64_t count; const char *buffer; const char *cause; } int_drops;
typedef struct int_backpressure { uint64_t size; uint64_t waits; uint64_t wait_ns; const char *buffer; } int_backpressure;

typedef struct op_db_rec {
    uint32_t len;
    uint32_t category;
    uint32_t kind;
    uint32_t reserved;
} op_db_rec;

/* ------------------------------------------------------------------------------------------ */
/* Small containers                                                                           */

/* u64 -> i64 open-addressing map (linear probing, power-of-two capacity, key 0 kept aside). */
typedef struct u64map {
    uint64_t *keys;
    int64_t *vals;
    uint32_t cap, n;
    int has_zero;
    int64_t zero_val;
} u64map;

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static int u64map_get(const u64map *m, uint64_t key, int64_t *val)
{
    if (key == 0) {
        if (m->has_zero) *val = m->zero_val;
        return m->has_zero;
    }
    if (!m->cap) return 0;
    for (uint32_t i = (uint32_t)mix64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key) {
            *val = m->vals[i];
            return 1;
        }
        if (m->keys[i] == 0) return 0;
    }
}

/* 0, or -ENOMEM (the map is unchanged). */
static int u64map_put(u64map *m, uint64_t key, int64_t val)
{
    if (key == 0) {
        m->has_zero = 1;
        m->zero_val = val;
        return 0;
    }
    if ((m->n + 1) * 2 > m->cap) {
        uint32_t ncap = m->cap ? m->cap * 2 : 64;
        uint64_t *nk = op_calloc(ncap, sizeof *nk);
        int64_t *nv = op_calloc(ncap, sizeof *nv);
        if (!nk || !nv) {
            op_free(nk);
            op_free(nv);
            return -ENOMEM;
        }
        for (uint32_t j = 0; j < m->cap; j++) {
            if (!m->keys[j]) continue;
            uint32_t i = (uint32_t)mix64(m->keys[j]) & (ncap - 1);
            while (nk[i]) i = (i + 1) & (ncap - 1);
            nk[i] = m->keys[j];
            nv[i] = m->vals[j];
        }
        op_free(m->keys);
        op_free(m->vals);
        m->keys = nk;
        m->vals = nv;
        m->cap = ncap;
    }
    uint32_t i = (uint32_t)mix64(key) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) m->n++;
    m->keys[i] = key;
    m->vals[i] = val;
    return 0;
}

static void u64map_free(u64map *m)
{
    op_free(m->keys);
    op_free(m->vals);
    memset(m, 0, sizeof *m);
}

typedef struct strcache_entry {
    uint64_t hash;
    int64_t id;
    uint32_t len;
    char *text; /* op_malloc'd copy, NULL when empty */
} strcache_entry;

/* A recent kernel dispatch: links counter records to the dispatch's event. */
typedef struct dispatch_entry {
    uint64_t dispatch_id; /* 0: empty */
    int64_t event_id;
    int from_counters;    /* the kernel_dispatch row was made from a counter header */
} dispatch_entry;

typedef struct stack_entry {
    int64_t parent;
    uint64_t address;
    int64_t id;
} stack_entry;

/* ------------------------------------------------------------------------------------------ */
/* The writer                                                                                 */

enum {
    ST_STRING_INS, ST_STRING_SEL, ST_EVENT, ST_EVENT_EXT, ST_REGION, ST_SAMPLE, ST_ARG, ST_THREAD_INS,
    ST_THREAD_START, ST_THREAD_END, ST_THREAD_NAME, ST_OTHREAD, ST_TRACK, ST_STREAM, ST_AGENT, ST_CODE_OBJECT,
    ST_KSYM, ST_KSYM_UPD, ST_KERNEL, ST_COPY, ST_ALLOC, ST_METRIC, ST_CPU_SAMPLE, ST_STACK_INS, ST_STACK_SEL,
    ST_SYMBOL, ST_RUN_COST, ST_DROPS, ST_BACKPRESSURE, ST_PMC_INFO, ST_PMC_EVENT, ST_BEGIN, ST_COMMIT, ST__COUNT
};

struct op_db_writer {
    /* configuration (immutable after open) */
    char *path;
    char uuid[40];
    char suffix[48];
    op_db_writer_options opts;
    int64_t pid, ppid;
    uint64_t start_ns;

    op_spool *spool;
    int efd;
    pthread_t thread;
    int thread_started;

    /* state shared with producers and waiters */
    _Atomic int failed;
    _Atomic int stop;          /* 0 run, 1 close (drain), 2 fast close */
    _Atomic int done;          /* ingest thread finished (database closed) */
    _Atomic uint64_t fast_deadline_ns;
    _Atomic uint64_t committed_pos;
    _Atomic uint64_t flush_target;
    pthread_mutex_t mu;
    pthread_cond_t cv;

    _Atomic uint64_t n_appended, n_dropped, n_drop_full, n_drop_invalid, n_drop_off;
    _Atomic uint64_t n_ingested, n_unhandled, n_rows, n_txn, busy_ns, oldest_uncommitted_ns;
    uint64_t spool_file_peak;
    int close_rc;
    char errmsg[512];

    /* ingest thread only */
    sqlite3 *db;
    sqlite3_stmt *st[ST__COUNT];
    int txn_open;
    uint64_t txn_start_ns, txn_rows;
    int64_t cat_id[OMNIPROF_BUFFER_TRACING_LAST];
    int64_t empty_json_id;
    u64map threads, streams, agents, kernels, code_objects, opnames, tracks, metric_tracks, pmcs;
    dispatch_entry *dispatchcache;
    int64_t cat_counter_id, cat_counter_device_id;
    strcache_entry *strcache;
    stack_entry *stackcache;
    char *scratch; /* OP_DB_MAX_STRING * 6 + 256 bytes for JSON text */
    size_t scratch_len;
};

static const char *const k_kind_names[OMNIPROF_BUFFER_TRACING_LAST] = {
    "NONE", "CUDA_RUNTIME_API", "CUDA_DRIVER_API", "MARKER_API", "MARKER_RANGE_API", "KERNEL_DISPATCH",
    "MEMORY_COPY", "MEMORY_SET", "MEMORY_ALLOCATION", "SYNCHRONIZATION", "CORRELATION_ID_RETIREMENT",
    "CODE_OBJECT", "KERNEL_SYMBOL", "CPU_SAMPLE", "PROCESS_SAMPLE", "FUNCTION_WRAPPER", "THREAD",
};
static const char *const k_marker_ops[] = {"NONE", "MARK", "RANGE_PUSH", "RANGE_POP", "RANGE_START",
                                           "RANGE_STOP", "PAUSE", "RESUME", "NAME_THREAD", "PROGRESS",
                                           "PROGRESS_BEGIN", "PROGRESS_END", "NAME_CATEGORY"};
static const char *const k_marker_range_ops[] = {"NONE", "THREAD_RANGE", "PROCESS_RANGE", "MARK"};
static const char *const k_copy_ops[] = {"MEMORY_COPY_NONE", "MEMORY_COPY_HOST_TO_HOST", "MEMORY_COPY_HOST_TO_DEVICE",
                                         "MEMORY_COPY_DEVICE_TO_HOST", "MEMORY_COPY_DEVICE_TO_DEVICE",
                                         "MEMORY_COPY_PEER_TO_PEER"};
static const char *const k_alloc_ops[] = {"MEMORY_ALLOCATION_NONE", "MEMORY_ALLOCATION_ALLOCATE",
                                          "MEMORY_ALLOCATION_FREE", "MEMORY_ALLOCATION_VMEM_ALLOCATE",
                                          "MEMORY_ALLOCATION_VMEM_FREE"};
static const char *const k_sync_ops[] = {"SYNCHRONIZATION_NONE", "EVENT_SYNCHRONIZE", "STREAM_WAIT_EVENT",
                                         "STREAM_SYNCHRONIZE", "CONTEXT_SYNCHRONIZE", "DEVICE_SYNCHRONIZE"};
static const char *const k_wrapper_ops[] = {"NONE", "pthread_create", "pthread_join", "fork", "exit", "_exit", "abort",
                                            "MPI_Init", "MPI_Init_thread", "MPI_Finalize", "pthread_mutex_lock",
                                            "pthread_mutex_trylock", "pthread_rwlock_rdlock", "pthread_rwlock_wrlock",
                                            "pthread_barrier_wait"};
static const char *const k_mem_kinds[] = {"UNKNOWN", "PAGEABLE", "PINNED", "DEVICE", "ARRAY", "MANAGED",
                                          "DEVICE_STATIC", "MANAGED_STATIC"};
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const char *kind_name(const op_db_writer *w, uint32_t kind)
{
    const char *n = w->opts.kind_name ? w->opts.kind_name(kind, w->opts.user) : NULL;
    if (n) return n;
    return kind < OMNIPROF_BUFFER_TRACING_LAST ? k_kind_names[kind] : "UNKNOWN";
}

static const char *mem_kind_name(uint32_t k) { return k < NELEM(k_mem_kinds) ? k_mem_kinds[k] : "UNKNOWN"; }

/* ------------------------------------------------------------------------------------------ */
/* Errors (W5)                                                                                */

static void writer_fail(op_db_writer *w, const char *what, int rc)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&w->failed, &expected, 1)) return;
    /* SQLite's message adds detail only when the failure was SQLite's own and says more. */
    const char *detail = w->db && sqlite3_extended_errcode(w->db) == rc ? sqlite3_errmsg(w->db) : NULL;
    if (detail && strcmp(detail, sqlite3_errstr(rc)) == 0) detail = NULL;
    int sys = w->db && detail ? sqlite3_system_errno(w->db) : 0;
    if (!detail && w->db && (rc & 0xff) == SQLITE_IOERR) sys = sqlite3_system_errno(w->db);
    snprintf(w->errmsg, sizeof w->errmsg,
             "database '%s': %s failed: %s%s%s%s%s%s; the writer is off, data committed before stays valid", w->path,
             what, sqlite3_errstr(rc), detail ? " (" : "", detail ? detail : "", detail ? ")" : "", sys ? ": " : "",
             sys ? strerror(sys) : "");
    op_error("%s", w->errmsg);
    if (w->spool) op_spool_shutdown(w->spool);
    if (w->db && w->txn_open) {
        sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
        w->txn_open = 0;
    }
    pthread_mutex_lock(&w->mu);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static int failed(const op_db_writer *w) { return atomic_load_explicit(&w->failed, memory_order_relaxed); }

/* Run a prepared statement once (bindings already set). Returns 0 or -EIO (writer off). */
static int step(op_db_writer *w, int which, const char *what)
{
    sqlite3_stmt *s = w->st[which];
    int rc = sqlite3_step(s);
    sqlite3_reset(s); /* every statement binds all its parameters: no clear_bindings needed */
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        writer_fail(w, what, rc);
        return -EIO;
    }
    w->txn_rows++;
    return 0;
}

static int64_t last_id(op_db_writer *w) { return sqlite3_last_insert_rowid(w->db); }

/* ------------------------------------------------------------------------------------------ */
/* Interning (ingest thread)                                                                  */

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h ? h : 1;
}

/* The rocpd_string id of s[0..n): cache, then database, then insert. -1 on failure. */
static int64_t intern_n(op_db_writer *w, const char *s, size_t n)
{
    uint64_t h = hash_bytes(s, n);
    strcache_entry *e = &w->strcache[h & (OP_DB_STRCACHE - 1)];
    if (e->hash == h && e->len == n && e->id > 0 && (n == 0 || (e->text && memcmp(e->text, s, n) == 0)))
        return e->id;
    int64_t id = -1;
    sqlite3_stmt *sel = w->st[ST_STRING_SEL];
    sqlite3_bind_text(sel, 1, s, (int)n, SQLITE_STATIC);
    int rc = sqlite3_step(sel);
    if (rc == SQLITE_ROW) id = sqlite3_column_int64(sel, 0);
    sqlite3_reset(sel);
    sqlite3_clear_bindings(sel);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        writer_fail(w, "looking up a string", rc);
        return -1;
    }
    if (id < 0) {
        sqlite3_bind_text(w->st[ST_STRING_INS], 1, s, (int)n, SQLITE_STATIC);
        if (step(w, ST_STRING_INS, "inserting a string") != 0) return -1;
        id = last_id(w);
    }
    if (n <= OP_DB_STRCACHE_MAXLEN) {
        char *copy = n ? op_malloc(n) : NULL;
        if (n == 0 || copy) {
            op_free(e->text);
            if (copy) memcpy(copy, s, n);
            e->text = copy;
            e->hash = h;
            e->len = (uint32_t)n;
            e->id = id;
        }
    }
    return id;
}

static int64_t intern(op_db_writer *w, const char *s) { return intern_n(w, s ? s : "", s ? strnlen(s, OP_DB_MAX_STRING) : 0); }

/* The string id of an operation's name (cached per (kind, operation)). */
static int64_t op_name_id(op_db_writer *w, uint32_t kind, int32_t op)
{
    uint64_t key = ((uint64_t)kind << 32) | (uint32_t)op;
    int64_t id;
    if (u64map_get(&w->opnames, key, &id)) return id;
    const char *n = w->opts.operation_name ? w->opts.operation_name(kind, op, w->opts.user) : NULL;
    char buf[96];
    if (!n) {
        const char *const *table = NULL;
        size_t len = 0;
        switch (kind) {
        case OMNIPROF_BUFFER_TRACING_MARKER_API: table = k_marker_ops; len = NELEM(k_marker_ops); break;
        case OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API: table = k_marker_range_ops; len = NELEM(k_marker_range_ops); break;
        case OMNIPROF_BUFFER_TRACING_MEMORY_COPY: table = k_copy_ops; len = NELEM(k_copy_ops); break;
        case OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION: table = k_alloc_ops; len = NELEM(k_alloc_ops); break;
        case OMNIPROF_BUFFER_TRACING_SYNCHRONIZATION: table = k_sync_ops; len = NELEM(k_sync_ops); break;
        case OMNIPROF_BUFFER_TRACING_MEMORY_SET: n = "MEMORY_SET"; break;
        case OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER: table = k_wrapper_ops; len = NELEM(k_wrapper_ops); break;
        default: break;
        }
        if (table && op >= 0 && (size_t)op < len) n = table[op];
        if (!n) {
            snprintf(buf, sizeof buf, "%s_%d", kind_name(w, kind), (int)op);
            n = buf;
        }
    }
    id = intern(w, n);
    if (id > 0 && u64map_put(&w->opnames, key, id) != 0) {
        writer_fail(w, "caching an operation name (out of memory)", SQLITE_NOMEM);
        return -1;
    }
    return id;
}

/* rocpd_info_thread row of an OS thread, created at first sight (W2). */
static int64_t thread_row(op_db_writer *w, uint64_t tid)
{
    int64_t id;
    if (u64map_get(&w->threads, tid, &id)) return id;
    sqlite3_stmt *s = w->st[ST_THREAD_INS];
    sqlite3_bind_int64(s, 1, w->ppid);
    sqlite3_bind_int64(s, 2, (int64_t)tid);
    if (step(w, ST_THREAD_INS, "inserting a thread") != 0) return -1;
    id = last_id(w);
    if (u64map_put(&w->threads, tid, id) != 0) {
        writer_fail(w, "caching a thread (out of memory)", SQLITE_NOMEM);
        return -1;
    }
    return id;
}

static int64_t stream_row(op_db_writer *w, uint64_t handle)
{
    int64_t id;
    if (u64map_get(&w->streams, handle, &id)) return id;
    char name[48];
    snprintf(name, sizeof name, "stream %llu", (unsigned long long)handle);
    sqlite3_stmt *s = w->st[ST_STREAM];
    sqlite3_bind_text(s, 1, name, -1, SQLITE_TRANSIENT);
    snprintf(name, sizeof name, "{\"handle\":%llu}", (unsigned long long)handle);
    sqlite3_bind_text(s, 2, name, -1, SQLITE_TRANSIENT);
    if (step(w, ST_STREAM, "inserting a stream") != 0) return -1;
    id = last_id(w);
    if (u64map_put(&w->streams, handle, id) != 0) {
        writer_fail(w, "caching a stream (out of memory)", SQLITE_NOMEM);
        return -1;
    }
    return id;
}

/* Agent row id, or 0 (bound as NULL) when the agent was never added. */
static int64_t agent_row(op_db_writer *w, uint64_t handle)
{
    int64_t id;
    return u64map_get(&w->agents, handle, &id) ? id : 0;
}

static void bind_id_or_null(sqlite3_stmt *s, int i, int64_t id)
{
    if (id > 0)
        sqlite3_bind_int64(s, i, id);
    else
        sqlite3_bind_null(s, i);
}

/* Track for instants of (thread row, kind), named by the kind's category name. */
static int64_t instant_track(op_db_writer *w, int64_t thread, uint32_t kind)
{
    uint64_t key = ((uint64_t)thread << 8) | (kind & 0xff);
    int64_t id;
    if (u64map_get(&w->tracks, key, &id)) return id;
    int64_t name_id = w->cat_id[kind < OMNIPROF_BUFFER_TRACING_LAST ? kind : 0];
    sqlite3_stmt *s = w->st[ST_TRACK];
    sqlite3_bind_int64(s, 1, thread);
    sqlite3_bind_int64(s, 2, name_id);
    sqlite3_bind_text(s, 3, "{}", 2, SQLITE_STATIC);
    if (step(w, ST_TRACK, "inserting a track") != 0) return -1;
    id = last_id(w);
    if (u64map_put(&w->tracks, key, id) != 0) {
        writer_fail(w, "caching a track (out of memory)", SQLITE_NOMEM);
        return -1;
    }
    return id;
}

/* JSON string escaping into w->scratch at offset `at`; returns the new end offset. */
static size_t json_escape(op_db_writer *w, size_t at, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    char *o = w->scratch;
    size_t cap = w->scratch_len - 8;
    for (size_t i = 0; i < n && at < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            o[at++] = '\\';
            o[at++] = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            o[at++] = '\\';
            o[at++] = 'u';
            o[at++] = '0';
            o[at++] = '0';
            o[at++] = hex[c >> 4];
            o[at++] = hex[c & 15];
        } else {
            o[at++] = (char)c; /* UTF-8 passes through; invalid bytes are SQLite's text as given */
        }
    }
    return at;
}

/* ------------------------------------------------------------------------------------------ */
/* Record -> rows (ingest thread). Each returns 0, or -1 when the writer turned off.           */

static const char *rec_str(const void *payload, uint64_t psize, const char *const *field)
{
    uint64_t off = (uint64_t)(uintptr_t)*field;
    if (off == 0 || off >= (1u << 24)) return NULL;
    (void)psize;
    return (const char *)payload + off;
}

/* Insert an event row; extdata NULL means '{}'. Returns its id or -1. */
static int64_t insert_event(op_db_writer *w, uint32_t kind, uint64_t stack_id, uint64_t parent, uint64_t corr,
                            const char *extdata, size_t extlen)
{
    int which = extdata ? ST_EVENT_EXT : ST_EVENT;
    sqlite3_stmt *s = w->st[which];
    sqlite3_bind_int64(s, 1, w->cat_id[kind < OMNIPROF_BUFFER_TRACING_LAST ? kind : 0]);
    if (stack_id) sqlite3_bind_int64(s, 2, (int64_t)stack_id); else sqlite3_bind_null(s, 2);
    if (parent) sqlite3_bind_int64(s, 3, (int64_t)parent); else sqlite3_bind_null(s, 3);
    sqlite3_bind_int64(s, 4, (int64_t)corr);
    if (extdata) sqlite3_bind_text(s, 5, extdata, (int)extlen, SQLITE_STATIC);
    if (step(w, which, "inserting an event") != 0) return -1;
    return last_id(w);
}

static int insert_region_or_sample(op_db_writer *w, uint32_t kind, int64_t thread, uint64_t start, uint64_t end,
                                   int64_t name_id, int64_t event_id)
{
    if (start != end) {
        sqlite3_stmt *s = w->st[ST_REGION];
        sqlite3_bind_int64(s, 1, thread);
        sqlite3_bind_int64(s, 2, (int64_t)start);
        sqlite3_bind_int64(s, 3, (int64_t)end);
        sqlite3_bind_int64(s, 4, name_id);
        sqlite3_bind_int64(s, 5, event_id);
        return step(w, ST_REGION, "inserting a region");
    }
    int64_t track = instant_track(w, thread, kind);
    if (track < 0) return -1;
    sqlite3_stmt *s = w->st[ST_SAMPLE];
    sqlite3_bind_int64(s, 1, track);
    sqlite3_bind_int64(s, 2, (int64_t)start);
    sqlite3_bind_int64(s, 3, event_id);
    return step(w, ST_SAMPLE, "inserting a sample");
}

static int ingest_api(op_db_writer *w, const omniprof_buffer_tracing_api_record_t *r, uint64_t psize)
{
    int64_t thread = thread_row(w, r->thread_id);
    int64_t name = op_name_id(w, r->kind, r->operation);
    if (thread < 0 || name < 0) return -1;
    int64_t ev = insert_event(w, r->kind, r->correlation_id.internal, r->correlation_id.ancestor,
                              r->correlation_id.external.value, NULL, 0);
    if (ev < 0) return -1;
    if (insert_region_or_sample(w, r->kind, thread, r->start_timestamp, r->end_timestamp, name, ev) != 0) return -1;
    uint64_t max_args = psize > sizeof *r ? (psize - sizeof *r) / sizeof(omniprof_arg_t) : 0;
    uint32_t nargs = r->num_args < max_args ? r->num_args : (uint32_t)max_args;
    for (uint32_t i = 0; i < nargs; i++) {
        const omniprof_arg_t *a = &r->args[i];
        const char *aname = rec_str(r, psize, &a->name);
        const char *type;
        char val[40];
        const char *v = val;
        switch (a->type) {
        case OMNIPROF_ARG_TYPE_INT: type = "int64_t"; snprintf(val, sizeof val, "%lld", (long long)a->value.i64); break;
        case OMNIPROF_ARG_TYPE_UINT: type = "uint64_t"; snprintf(val, sizeof val, "%llu", (unsigned long long)a->value.u64); break;
        case OMNIPROF_ARG_TYPE_DOUBLE: type = "double"; snprintf(val, sizeof val, "%.17g", a->value.f64); break;
        case OMNIPROF_ARG_TYPE_POINTER: type = "void*"; snprintf(val, sizeof val, "0x%llx", (unsigned long long)a->value.u64); break;
        case OMNIPROF_ARG_TYPE_STRING: type = "const char*"; v = rec_str(r, psize, &a->value.str); break;
        default: type = "unknown"; v = NULL; break;
        }
        sqlite3_stmt *s = w->st[ST_ARG];
        sqlite3_bind_int64(s, 1, ev);
        sqlite3_bind_int(s, 2, (int)i);
        sqlite3_bind_text(s, 3, type, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 4, aname ? aname : "", -1, SQLITE_STATIC);
        if (v) sqlite3_bind_text(s, 5, v, -1, SQLITE_STATIC); else sqlite3_bind_null(s, 5);
        if (step(w, ST_ARG, "inserting an argument") != 0) return -1;
    }
    return 0;
}

static int ingest_marker(op_db_writer *w, const omniprof_buffer_tracing_marker_record_t *r, uint64_t psize)
{
    uint64_t avail = psize > sizeof *r ? psize - sizeof *r : 0;
    size_t mlen = r->message_length < avail ? r->message_length : (size_t)avail;
    mlen = strnlen(r->message, mlen);
    int64_t thread = thread_row(w, r->thread_id);
    int64_t name = mlen ? intern_n(w, r->message, mlen) : op_name_id(w, r->kind, r->operation);
    if (thread < 0 || name < 0) return -1;
    size_t at = 0;
    memcpy(w->scratch, "{\"message\":\"", 12);
    at = json_escape(w, 12, r->message, mlen);
    at += (size_t)snprintf(w->scratch + at, w->scratch_len - at, "\"}");
    int64_t ev = insert_event(w, r->kind, r->correlation_id.internal, r->correlation_id.ancestor,
                              r->correlation_id.external.value, w->scratch, at);
    if (ev < 0) return -1;
    return insert_region_or_sample(w, r->kind, thread, r->start_timestamp, r->end_timestamp, name, ev);
}

static int64_t kernel_symbol_row(op_db_writer *w, uint64_t kernel_id, const char *mangled, const char *demangled,
                                 int64_t code_object, uint32_t shared, uint32_t local, uint32_t regs)
{
    int64_t id;
    if (u64map_get(&w->kernels, kernel_id, &id)) return id;
    sqlite3_stmt *s = w->st[ST_KSYM];
    bind_id_or_null(s, 1, code_object);
    sqlite3_bind_text(s, 2, mangled ? mangled : (demangled ? demangled : ""), -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, demangled && *demangled ? demangled : (mangled ? mangled : ""), -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 4, (int64_t)kernel_id);
    sqlite3_bind_int64(s, 5, shared);
    sqlite3_bind_int64(s, 6, local);
    sqlite3_bind_int64(s, 7, regs);
    char ext[160];
    int n = snprintf(ext, sizeof ext, "{\"kernel_id\":%llu}", (unsigned long long)kernel_id);
    sqlite3_bind_text(s, 8, ext, n, SQLITE_TRANSIENT);
    if (step(w, ST_KSYM, "inserting a kernel symbol") != 0) return -1;
    id = last_id(w);
    if (u64map_put(&w->kernels, kernel_id, id) != 0) {
        writer_fail(w, "caching a kernel symbol (out of memory)", SQLITE_NOMEM);
        return -1;
    }
    return id;
}

static dispatch_entry *dispatch_slot(op_db_writer *w, uint64_t dispatch_id)
{
    return &w->dispatchcache[mix64(dispatch_id) & (OP_DB_DISPATCHCACHE - 1)];
}

static int ingest_kernel(op_db_writer *w, const omniprof_buffer_tracing_kernel_dispatch_record_t *r, uint64_t psize)
{
    dispatch_entry *de = r->dispatch_id ? dispatch_slot(w, r->dispatch_id) : NULL;
    if (de && de->dispatch_id == r->dispatch_id && de->from_counters) return 0; /* row made from its counters */
    const char *mangled = rec_str(r, psize, &r->kernel_name);
    const char *demangled = rec_str(r, psize, &r->kernel_name_demangled);
    int64_t thread = r->thread_id ? thread_row(w, r->thread_id) : 0;
    int64_t stream = stream_row(w, r->stream_id.handle);
    int64_t ksym = kernel_symbol_row(w, r->kernel_id, mangled, demangled, 0, r->static_shared_memory,
                                     r->local_memory_per_thread, r->registers_per_thread);
    const char *display = demangled && *demangled ? demangled : (mangled ? mangled : "");
    int64_t region = intern(w, display);
    if (thread < 0 || stream < 0 || ksym < 0 || region < 0) return -1;
    int64_t ev = insert_event(w, r->kind, r->correlation_id.internal, 0, r->correlation_id.external.value, NULL, 0);
    if (ev < 0) return -1;
    sqlite3_stmt *s = w->st[ST_KERNEL];
    bind_id_or_null(s, 1, thread);
    bind_id_or_null(s, 2, agent_row(w, r->agent_id.handle));
    sqlite3_bind_int64(s, 3, ksym);
    sqlite3_bind_int64(s, 4, (int64_t)r->dispatch_id);
    sqlite3_bind_int64(s, 5, stream);
    sqlite3_bind_int64(s, 6, (int64_t)r->start_timestamp);
    sqlite3_bind_int64(s, 7, (int64_t)r->end_timestamp);
    sqlite3_bind_int64(s, 8, r->local_memory_per_thread);
    sqlite3_bind_int64(s, 9, (int64_t)r->static_shared_memory + r->dynamic_shared_memory);
    sqlite3_bind_int64(s, 10, r->block_size.x);
    sqlite3_bind_int64(s, 11, r->block_size.y);
    sqlite3_bind_int64(s, 12, r->block_size.z);
    sqlite3_bind_int64(s, 13, (int64_t)r->grid_size.x * r->block_size.x);
    sqlite3_bind_int64(s, 14, (int64_t)r->grid_size.y * r->block_size.y);
    sqlite3_bind_int64(s, 15, (int64_t)r->grid_size.z * r->block_size.z);
    sqlite3_bind_int64(s, 16, region);
    sqlite3_bind_int64(s, 17, ev);
    int n = snprintf(w->scratch, w->scratch_len,
                     "{\"device_id\":%u,\"context_id\":%u,\"dynamic_shared_memory\":%u,\"registers_per_thread\":%u",
                     r->device_id, r->context_id, r->dynamic_shared_memory, r->registers_per_thread);
    if (r->graph_id)
        n += snprintf(w->scratch + n, w->scratch_len - (size_t)n, ",\"graph_id\":%llu,\"graph_node_id\":%llu",
                      (unsigned long long)r->graph_id, (unsigned long long)r->graph_node_id);
    w->scratch[n++] = '}';
    sqlite3_bind_text(s, 18, w->scratch, n, SQLITE_STATIC);
    if (step(w, ST_KERNEL, "inserting a kernel dispatch") != 0) return -1;
    if (de) *de = (dispatch_entry){r->dispatch_id, ev, 0};
    return 0;
}

/* COUNTERS / DISPATCH_HEADER: link to the traced dispatch's event when it was already stored,
 * else store the dispatch (kernels view) from the header, with its own event. */
static int ingest_counter_header(op_db_writer *w, const omniprof_counter_dispatch_header_record_t *r, uint64_t psize)
{
    dispatch_entry *de = dispatch_slot(w, r->dispatch_id);
    if (r->dispatch_id && de->dispatch_id == r->dispatch_id) return 0;
    const char *name = rec_str(r, psize, &r->kernel_name);
    int64_t thread = r->thread_id ? thread_row(w, r->thread_id) : 0;
    int64_t ksym = kernel_symbol_row(w, r->kernel_id, name, name, 0, 0, 0, 0);
    int64_t region = intern(w, name ? name : "");
    if (!w->cat_counter_id) w->cat_counter_id = intern_n(w, "COUNTER_COLLECTION", 18);
    if (thread < 0 || ksym < 0 || region < 0 || w->cat_counter_id < 0) return -1;
    int n = snprintf(w->scratch, w->scratch_len, "{\"source\":\"counter_collection\",\"num_passes\":%u,\"config_id\":%llu}",
                     r->num_passes, (unsigned long long)r->config_id.handle);
    sqlite3_stmt *s = w->st[ST_EVENT_EXT];
    sqlite3_bind_int64(s, 1, w->cat_counter_id);
    if (r->correlation_id.internal) sqlite3_bind_int64(s, 2, (int64_t)r->correlation_id.internal); else sqlite3_bind_null(s, 2);
    sqlite3_bind_null(s, 3);
    sqlite3_bind_int64(s, 4, (int64_t)r->correlation_id.external.value);
    sqlite3_bind_text(s, 5, w->scratch, n, SQLITE_STATIC);
    if (step(w, ST_EVENT_EXT, "inserting an event") != 0) return -1;
    int64_t ev = last_id(w);
    s = w->st[ST_KERNEL];
    bind_id_or_null(s, 1, thread);
    bind_id_or_null(s, 2, agent_row(w, r->agent_id.handle));
    sqlite3_bind_int64(s, 3, ksym);
    sqlite3_bind_int64(s, 4, (int64_t)r->dispatch_id);
    sqlite3_bind_null(s, 5);
    sqlite3_bind_int64(s, 6, (int64_t)r->start_timestamp);
    sqlite3_bind_int64(s, 7, (int64_t)r->end_timestamp);
    sqlite3_bind_null(s, 8);
    sqlite3_bind_null(s, 9);
    sqlite3_bind_int64(s, 10, r->block_size.x);
    sqlite3_bind_int64(s, 11, r->block_size.y);
    sqlite3_bind_int64(s, 12, r->block_size.z);
    sqlite3_bind_int64(s, 13, (int64_t)r->grid_size.x * r->block_size.x);
    sqlite3_bind_int64(s, 14, (int64_t)r->grid_size.y * r->block_size.y);
    sqlite3_bind_int64(s, 15, (int64_t)r->grid_size.z * r->block_size.z);
    sqlite3_bind_int64(s, 16, region);
    sqlite3_bind_int64(s, 17, ev);
    sqlite3_bind_text(s, 18, "{\"source\":\"counter_collection\"}", -1, SQLITE_STATIC);
    if (step(w, ST_KERNEL, "inserting a counted kernel dispatch") != 0) return -1;
    if (r->dispatch_id) *de = (dispatch_entry){r->dispatch_id, ev, 1};
    return 0;
}

/* COUNTERS / VALUE: rocpd_info_pmc (once per counter id) + rocpd_pmc_event on the dispatch's
 * event (device samples, dispatch_id 0, get an event of their own). */
static int ingest_counter_value(op_db_writer *w, const omniprof_counter_value_record_t *r, uint64_t psize)
{
    int64_t pmc;
    if (!u64map_get(&w->pmcs, r->counter_id.handle, &pmc)) {
        const char *name = rec_str(r, psize, &r->counter_name);
        sqlite3_stmt *s = w->st[ST_PMC_INFO];
        bind_id_or_null(s, 1, agent_row(w, r->agent_id.handle));
        sqlite3_bind_int64(s, 2, (int64_t)r->counter_id.handle);
        sqlite3_bind_text(s, 3, name ? name : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 4, name ? name : "", -1, SQLITE_STATIC);
        int n = snprintf(w->scratch, w->scratch_len, "{\"counter_id\":%llu}", (unsigned long long)r->counter_id.handle);
        sqlite3_bind_text(s, 5, w->scratch, n, SQLITE_STATIC);
        if (step(w, ST_PMC_INFO, "inserting a counter") != 0) return -1;
        pmc = last_id(w);
        if (u64map_put(&w->pmcs, r->counter_id.handle, pmc) != 0) {
            writer_fail(w, "caching a counter (out of memory)", SQLITE_NOMEM);
            return -1;
        }
    }
    int64_t ev = 0;
    dispatch_entry *de = r->dispatch_id ? dispatch_slot(w, r->dispatch_id) : NULL;
    if (de && de->dispatch_id == r->dispatch_id) {
        ev = de->event_id;
    } else {
        int64_t *cat = r->dispatch_id ? &w->cat_counter_id : &w->cat_counter_device_id;
        if (!*cat) *cat = r->dispatch_id ? intern_n(w, "COUNTER_COLLECTION", 18) : intern_n(w, "COUNTER_DEVICE", 14);
        if (*cat < 0) return -1;
        sqlite3_stmt *s = w->st[ST_EVENT];
        sqlite3_bind_int64(s, 1, *cat);
        if (r->correlation_id.internal) sqlite3_bind_int64(s, 2, (int64_t)r->correlation_id.internal); else sqlite3_bind_null(s, 2);
        sqlite3_bind_null(s, 3);
        sqlite3_bind_int64(s, 4, (int64_t)r->correlation_id.external.value);
        if (step(w, ST_EVENT, "inserting an event") != 0) return -1;
        ev = last_id(w);
        if (de) *de = (dispatch_entry){r->dispatch_id, ev, 0};
    }
    sqlite3_stmt *s = w->st[ST_PMC_EVENT];
    sqlite3_bind_int64(s, 1, ev);
    sqlite3_bind_int64(s, 2, pmc);
    sqlite3_bind_double(s, 3, r->value);
    if (r->instance) {
        int n = snprintf(w->scratch, w->scratch_len, "{\"instance\":%llu}", (unsigned long long)r->instance);
        sqlite3_bind_text(s, 4, w->scratch, n, SQLITE_STATIC);
    } else {
        sqlite3_bind_text(s, 4, "{}", 2, SQLITE_STATIC);
    }
    return step(w, ST_PMC_EVENT, "inserting a counter value");
}

static int insert_copy(op_db_writer *w, uint32_t kind, int32_t op, const omniprof_async_correlation_id_t *corr,
                       uint64_t tid, uint64_t start, uint64_t end, uint64_t dst_agent, uint64_t src_agent, int has_src,
                       uint64_t bytes, uint64_t stream_handle, const char *ext, size_t extlen)
{
    int64_t thread = tid ? thread_row(w, tid) : 0;
    int64_t stream = stream_row(w, stream_handle);
    int64_t name = op_name_id(w, kind, op);
    if (thread < 0 || stream < 0 || name < 0) return -1;
    int64_t ev = insert_event(w, kind, corr->internal, 0, corr->external.value, NULL, 0);
    if (ev < 0) return -1;
    sqlite3_stmt *s = w->st[ST_COPY];
    bind_id_or_null(s, 1, thread);
    sqlite3_bind_int64(s, 2, (int64_t)start);
    sqlite3_bind_int64(s, 3, (int64_t)end);
    sqlite3_bind_int64(s, 4, name);
    bind_id_or_null(s, 5, agent_row(w, dst_agent));
    bind_id_or_null(s, 6, has_src ? agent_row(w, src_agent) : 0);
    sqlite3_bind_int64(s, 7, (int64_t)bytes);
    sqlite3_bind_int64(s, 8, stream);
    sqlite3_bind_int64(s, 9, ev);
    sqlite3_bind_text(s, 10, ext, (int)extlen, SQLITE_STATIC);
    return step(w, ST_COPY, "inserting a memory copy");
}

static int ingest_copy(op_db_writer *w, const omniprof_buffer_tracing_memory_copy_record_t *r)
{
    int n = snprintf(w->scratch, w->scratch_len, "{\"src_memory_kind\":\"%s\",\"dst_memory_kind\":\"%s\",\"is_async\":%u,\"device_id\":%u}",
                     mem_kind_name(r->src_memory_kind), mem_kind_name(r->dst_memory_kind), r->is_async, r->device_id);
    return insert_copy(w, r->kind, r->operation, &r->correlation_id, r->thread_id, r->start_timestamp,
                       r->end_timestamp, r->dst_agent_id.handle, r->src_agent_id.handle, 1, r->bytes,
                       r->stream_id.handle, w->scratch, (size_t)n);
}

static int ingest_memset(op_db_writer *w, const omniprof_buffer_tracing_memory_set_record_t *r)
{
    int n = snprintf(w->scratch, w->scratch_len, "{\"value\":%u,\"memory_kind\":\"%s\",\"is_async\":%u,\"device_id\":%u}",
                     r->value, mem_kind_name(r->memory_kind), r->is_async, r->device_id);
    return insert_copy(w, r->kind, r->operation, &r->correlation_id, r->thread_id, r->start_timestamp,
                       r->end_timestamp, r->agent_id.handle, 0, 0, r->bytes, r->stream_id.handle, w->scratch,
                       (size_t)n);
}

static int ingest_alloc(op_db_writer *w, const omniprof_buffer_tracing_memory_allocation_record_t *r)
{
    int64_t thread = r->thread_id ? thread_row(w, r->thread_id) : 0;
    int64_t stream = r->stream_id.handle ? stream_row(w, r->stream_id.handle) : 0;
    if (thread < 0 || stream < 0) return -1;
    int64_t ev = insert_event(w, r->kind, r->correlation_id.internal, r->correlation_id.ancestor,
                              r->correlation_id.external.value, NULL, 0);
    if (ev < 0) return -1;
    const char *type = "ALLOC", *level = "REAL";
    switch (r->operation) {
    case OMNIPROF_MEMORY_ALLOCATION_FREE: type = "FREE"; break;
    case OMNIPROF_MEMORY_ALLOCATION_VMEM_ALLOCATE: level = "VIRTUAL"; break;
    case OMNIPROF_MEMORY_ALLOCATION_VMEM_FREE: type = "FREE"; level = "VIRTUAL"; break;
    default: break;
    }
    sqlite3_stmt *s = w->st[ST_ALLOC];
    bind_id_or_null(s, 1, thread);
    bind_id_or_null(s, 2, agent_row(w, r->agent_id.handle));
    sqlite3_bind_text(s, 3, type, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, level, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 5, (int64_t)r->start_timestamp);
    sqlite3_bind_int64(s, 6, (int64_t)r->end_timestamp);
    sqlite3_bind_int64(s, 7, (int64_t)r->address);
    sqlite3_bind_int64(s, 8, (int64_t)r->allocation_size);
    bind_id_or_null(s, 9, stream);
    sqlite3_bind_int64(s, 10, ev);
    int n = snprintf(w->scratch, w->scratch_len, "{\"memory_kind\":\"%s\",\"device_id\":%u}", mem_kind_name(r->memory_kind),
                     r->device_id);
    sqlite3_bind_text(s, 11, w->scratch, n, SQLITE_STATIC);
    return step(w, ST_ALLOC, "inserting a memory allocation");
}

static int ingest_sync(op_db_writer *w, const omniprof_buffer_tracing_synchronization_record_t *r)
{
    int64_t thread = thread_row(w, r->thread_id);
    int64_t name = op_name_id(w, r->kind, r->operation);
    if (thread < 0 || name < 0) return -1;
    int n = snprintf(w->scratch, w->scratch_len, "{\"stream\":%llu,\"event\":%llu,\"device_id\":%u,\"context_id\":%u}",
                     (unsigned long long)r->stream_id.handle, (unsigned long long)r->event_id, r->device_id, r->context_id);
    int64_t ev = insert_event(w, r->kind, r->correlation_id.internal, 0, r->correlation_id.external.value, w->scratch,
                              (size_t)n);
    if (ev < 0) return -1;
    return insert_region_or_sample(w, r->kind, thread, r->start_timestamp, r->end_timestamp, name, ev);
}

static int ingest_code_object(op_db_writer *w, const omniprof_buffer_tracing_code_object_record_t *r, uint64_t psize)
{
    if (r->operation != OMNIPROF_CODE_OBJECT_LOAD) return 0; /* unloads: nothing in rocpd for them */
    int64_t id;
    if (u64map_get(&w->code_objects, r->code_object_id, &id)) return 0;
    const char *uri = rec_str(r, psize, &r->uri);
    sqlite3_stmt *s = w->st[ST_CODE_OBJECT];
    bind_id_or_null(s, 1, agent_row(w, r->agent_id.handle));
    if (uri) sqlite3_bind_text(s, 2, uri, -1, SQLITE_STATIC); else sqlite3_bind_null(s, 2);
    sqlite3_bind_int64(s, 3, (int64_t)r->load_base);
    sqlite3_bind_int64(s, 4, (int64_t)r->load_size);
    sqlite3_bind_text(s, 5, uri && strncmp(uri, "memory://", 9) == 0 ? "MEMORY" : "FILE", -1, SQLITE_STATIC);
    int n = snprintf(w->scratch, w->scratch_len, "{\"code_object_id\":%llu,\"load_timestamp\":%llu}",
                     (unsigned long long)r->code_object_id, (unsigned long long)r->timestamp);
    sqlite3_bind_text(s, 6, w->scratch, n, SQLITE_STATIC);
    if (step(w, ST_CODE_OBJECT, "inserting a code object") != 0) return -1;
    if (u64map_put(&w->code_objects, r->code_object_id, last_id(w)) != 0) {
        writer_fail(w, "caching a code object (out of memory)", SQLITE_NOMEM);
        return -1;
    }
    return 0;
}

static int ingest_kernel_symbol(op_db_writer *w, const omniprof_buffer_tracing_kernel_symbol_record_t *r, uint64_t psize)
{
    int64_t co = 0;
    u64map_get(&w->code_objects, r->code_object_id, &co);
    int64_t existing;
    if (u64map_get(&w->kernels, r->kernel_id, &existing)) {
        if (co <= 0) return 0;
        sqlite3_stmt *s = w->st[ST_KSYM_UPD]; /* seen first through a dispatch: attach its code object */
        sqlite3_bind_int64(s, 1, co);
        sqlite3_bind_int64(s, 2, existing);
        return step(w, ST_KSYM_UPD, "updating a kernel symbol");
    }
    return kernel_symbol_row(w, r->kernel_id, rec_str(r, psize, &r->kernel_name),
                             rec_str(r, psize, &r->kernel_name_demangled), co, r->static_shared_memory,
                             r->local_memory_per_thread, r->registers_per_thread) < 0 ? -1 : 0;
}

/* Stack node (parent, address): cache, then database, then insert. */
static int64_t stack_node(op_db_writer *w, int64_t parent, uint64_t address, int depth)
{
    uint64_t h = mix64((uint64_t)parent * 0x9e3779b97f4a7c15ull ^ address);
    stack_entry *e = &w->stackcache[h & (OP_DB_STACKCACHE - 1)];
    if (e->id > 0 && e->parent == parent && e->address == address) return e->id;
    int64_t id = -1;
    sqlite3_stmt *sel = w->st[ST_STACK_SEL];
    sqlite3_bind_int64(sel, 1, parent);
    sqlite3_bind_int64(sel, 2, (int64_t)address);
    int rc = sqlite3_step(sel);
    if (rc == SQLITE_ROW) id = sqlite3_column_int64(sel, 0);
    sqlite3_reset(sel);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        writer_fail(w, "looking up a stack node", rc);
        return -1;
    }
    if (id < 0) {
        sqlite3_stmt *s = w->st[ST_STACK_INS];
        sqlite3_bind_int64(s, 1, parent);
        sqlite3_bind_int64(s, 2, (int64_t)address);
        sqlite3_bind_int(s, 3, depth);
        if (step(w, ST_STACK_INS, "inserting a stack node") != 0) return -1;
        id = last_id(w);
    }
    e->parent = parent;
    e->address = address;
    e->id = id;
    return id;
}

static int ingest_cpu_sample(op_db_writer *w, const omniprof_cpu_sample_record_t *r, uint64_t psize)
{
    uint64_t max_frames = psize > sizeof *r ? (psize - sizeof *r) / sizeof(uint64_t) : 0;
    uint32_t nf = r->num_frames < max_frames ? r->num_frames : (uint32_t)max_frames;
    if (nf > OMNIPROF_CPU_SAMPLE_MAX_FRAMES) nf = OMNIPROF_CPU_SAMPLE_MAX_FRAMES;
    int64_t thread = thread_row(w, r->thread_id);
    if (thread < 0) return -1;
    int64_t node = 0;
    for (uint32_t i = 0; i < nf; i++) { /* outermost frame (last) first: the tree's root side */
        node = stack_node(w, node, r->frames[nf - 1 - i], (int)i);
        if (node < 0) return -1;
    }
    int64_t track = instant_track(w, thread, r->kind);
    if (track < 0) return -1;
    int64_t ev = insert_event(w, r->kind, 0, 0, 0, NULL, 0);
    if (ev < 0) return -1;
    sqlite3_stmt *s = w->st[ST_SAMPLE];
    sqlite3_bind_int64(s, 1, track);
    sqlite3_bind_int64(s, 2, (int64_t)r->timestamp);
    sqlite3_bind_int64(s, 3, ev);
    if (step(w, ST_SAMPLE, "inserting a sample") != 0) return -1;
    int64_t sample = last_id(w);
    uint32_t ne = r->num_events < OMNIPROF_CPU_SAMPLE_MAX_EVENTS ? r->num_events : OMNIPROF_CPU_SAMPLE_MAX_EVENTS;
    size_t at = 0;
    w->scratch[at++] = '[';
    for (uint32_t i = 0; i < ne; i++)
        at += (size_t)snprintf(w->scratch + at, w->scratch_len - at, "%s%llu", i ? "," : "",
                               (unsigned long long)r->event_values[i]);
    w->scratch[at++] = ']';
    s = w->st[ST_CPU_SAMPLE];
    sqlite3_bind_int64(s, 1, thread);
    sqlite3_bind_int64(s, 2, (int64_t)r->timestamp);
    sqlite3_bind_text(s, 3, r->operation == OMNIPROF_CPU_SAMPLE_CPUTIME ? "CPUTIME"
                            : r->operation == OMNIPROF_CPU_SAMPLE_REALTIME ? "REALTIME" : "OTHER", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 4, node);
    sqlite3_bind_int64(s, 5, sample);
    sqlite3_bind_int(s, 6, (int)nf);
    sqlite3_bind_int64(s, 7, (int64_t)r->thread_internal_value);
    sqlite3_bind_int64(s, 8, (int64_t)r->peak_rss_bytes);
    sqlite3_bind_text(s, 9, w->scratch, (int)at, SQLITE_STATIC);
    return step(w, ST_CPU_SAMPLE, "inserting a CPU sample");
}

static int ingest_process_sample(op_db_writer *w, const omniprof_process_sample_record_t *r, uint64_t psize)
{
    const char *metric = rec_str(r, psize, &r->metric_name);
    const char *units = rec_str(r, psize, &r->units);
    int64_t name = metric ? intern(w, metric) : intern_n(w, "unnamed", 7);
    if (name < 0) return -1;
    uint64_t key = ((uint64_t)name << 20) ^ r->device_index;
    int64_t track;
    if (!u64map_get(&w->metric_tracks, key, &track)) {
        size_t at = (size_t)snprintf(w->scratch, w->scratch_len, "{\"units\":\"");
        at = json_escape(w, at, units ? units : "", units ? strlen(units) : 0);
        at += (size_t)snprintf(w->scratch + at, w->scratch_len - at,
                               "\",\"device_index\":%u,\"source\":\"process_sample\",\"operation\":%d}", r->device_index,
                               (int)r->operation);
        sqlite3_stmt *s = w->st[ST_TRACK];
        sqlite3_bind_null(s, 1);
        sqlite3_bind_int64(s, 2, name);
        sqlite3_bind_text(s, 3, w->scratch, (int)at, SQLITE_STATIC);
        if (step(w, ST_TRACK, "inserting a metric track") != 0) return -1;
        track = last_id(w);
        if (u64map_put(&w->metric_tracks, key, track) != 0) {
            writer_fail(w, "caching a metric track (out of memory)", SQLITE_NOMEM);
            return -1;
        }
    }
    sqlite3_stmt *s = w->st[ST_METRIC];
    sqlite3_bind_int64(s, 1, track);
    sqlite3_bind_int64(s, 2, (int64_t)r->timestamp);
    sqlite3_bind_double(s, 3, r->value);
    return step(w, ST_METRIC, "inserting a metric value");
}

static int ingest_thread(op_db_writer *w, const omniprof_thread_record_t *r)
{
    int64_t thread = thread_row(w, r->thread_id);
    if (thread < 0) return -1;
    size_t nlen = strnlen(r->name, sizeof r->name);
    if (r->operation == OMNIPROF_THREAD_CREATE) {
        sqlite3_stmt *s = w->st[ST_THREAD_START];
        sqlite3_bind_int64(s, 1, (int64_t)r->timestamp);
        sqlite3_bind_int64(s, 2, thread);
        if (step(w, ST_THREAD_START, "updating a thread") != 0) return -1;
        s = w->st[ST_OTHREAD];
        sqlite3_bind_int64(s, 1, thread);
        sqlite3_bind_int64(s, 2, (int64_t)r->thread_id);
        sqlite3_bind_int64(s, 3, (int64_t)r->parent_thread_id);
        sqlite3_bind_int64(s, 4, (int64_t)r->internal_value);
        sqlite3_bind_int64(s, 5, (int64_t)r->sequent_value);
        sqlite3_bind_int(s, 6, r->sequent_value >= OMNIPROF_SEQUENT_PROFILER_OFFSET);
        if (step(w, ST_OTHREAD, "inserting thread identity") != 0) return -1;
    } else if (r->operation == OMNIPROF_THREAD_EXIT) {
        sqlite3_stmt *s = w->st[ST_THREAD_END];
        sqlite3_bind_int64(s, 1, (int64_t)r->timestamp);
        sqlite3_bind_int64(s, 2, thread);
        if (step(w, ST_THREAD_END, "updating a thread") != 0) return -1;
    }
    if (nlen && (r->operation == OMNIPROF_THREAD_NAME || r->operation == OMNIPROF_THREAD_CREATE)) {
        sqlite3_stmt *s = w->st[ST_THREAD_NAME];
        sqlite3_bind_text(s, 1, r->name, (int)nlen, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, thread);
        if (step(w, ST_THREAD_NAME, "naming a thread") != 0) return -1;
    }
    return 0;
}

static int ingest_agent(op_db_writer *w, const omniprof_agent_v0_t *a, const char *name, const char *vendor,
                        const char *product, const char *model)
{
    int64_t id;
    if (u64map_get(&w->agents, a->id.handle, &id)) return 0;
    sqlite3_stmt *s = w->st[ST_AGENT];
    sqlite3_bind_text(s, 1, a->type == OMNIPROF_AGENT_TYPE_GPU ? "GPU" : "CPU", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (int64_t)a->id.handle);
    sqlite3_bind_int64(s, 3, a->logical_index);
    sqlite3_bind_int64(s, 4, a->type_index);
    sqlite3_bind_text(s, 5, name ? name : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 6, model ? model : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 7, vendor ? vendor : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 8, product ? product : "", -1, SQLITE_STATIC);
    char uuid[sizeof a->uuid + 1], bus[sizeof a->pci_bus_id + 1];
    memcpy(uuid, a->uuid, sizeof a->uuid);
    uuid[sizeof a->uuid] = 0;
    memcpy(bus, a->pci_bus_id, sizeof a->pci_bus_id);
    bus[sizeof a->pci_bus_id] = 0;
    size_t at = (size_t)snprintf(w->scratch, w->scratch_len, "{\"uuid\":\"");
    at = json_escape(w, at, uuid, strlen(uuid));
    at += (size_t)snprintf(w->scratch + at, w->scratch_len - at, "\",\"pci_bus_id\":\"");
    at = json_escape(w, at, bus, strlen(bus));
    at += (size_t)snprintf(w->scratch + at, w->scratch_len - at,
                           "\",\"node_id\":%u,\"compute_capability\":\"%u.%u\",\"cu_count\":%u,\"simd_per_cu\":%u,"
                           "\"memory_bytes\":%llu,\"core_clock_khz\":%llu,\"memory_clock_khz\":%llu,"
                           "\"memory_bus_width_bits\":%u,\"l2_cache_bytes\":%u,\"max_threads_per_block\":%u,"
                           "\"warp_size\":%u,\"max_shared_memory_per_block\":%u}",
                           a->node_id, a->compute_capability_major, a->compute_capability_minor, a->cu_count,
                           a->simd_per_cu, (unsigned long long)a->memory_bytes, (unsigned long long)a->core_clock_khz,
                           (unsigned long long)a->memory_clock_khz, a->memory_bus_width_bits, a->l2_cache_bytes,
                           a->max_threads_per_block, a->warp_size, a->max_shared_memory_per_block);
    sqlite3_bind_text(s, 9, w->scratch, (int)at, SQLITE_STATIC);
    if (step(w, ST_AGENT, "inserting an agent") != 0) return -1;
    if (u64map_put(&w->agents, a->id.handle, last_id(w)) != 0) {
        writer_fail(w, "caching an agent (out of memory)", SQLITE_NOMEM);
        return -1;
    }
    return 0;
}

static int ingest_internal(op_db_writer *w, uint32_t kind, const void *p, uint64_t psize)
{
    switch (kind) {
    case INT_AGENT: {
        omniprof_agent_v0_t a;
        memset(&a, 0, sizeof a);
        memcpy(&a, p, psize < sizeof a ? psize : sizeof a);
        /* string fields hold offsets from the spool payload (p), not from the local copy */
        const omniprof_agent_v0_t *sp = p;
        return ingest_agent(w, &a, rec_str(p, psize, &sp->name), rec_str(p, psize, &sp->vendor_name),
                            rec_str(p, psize, &sp->product_name), rec_str(p, psize, &sp->model_name));
    }
    case INT_RUN_COST: {
        const int_run_cost *r = p;
        sqlite3_stmt *s = w->st[ST_RUN_COST];
        const char *name = rec_str(r, psize, &r->name), *units = rec_str(r, psize, &r->units);
        sqlite3_bind_text(s, 1, name ? name : "", -1, SQLITE_STATIC);
        sqlite3_bind_double(s, 2, r->value);
        sqlite3_bind_text(s, 3, units ? units : "", -1, SQLITE_STATIC);
        return step(w, ST_RUN_COST, "inserting a run-cost row");
    }
    case INT_DROPS: {
        const int_drops *r = p;
        sqlite3_stmt *s = w->st[ST_DROPS];
        const char *buffer = rec_str(r, psize, &r->buffer), *cause = rec_str(r, psize, &r->cause);
        sqlite3_bind_text(s, 1, buffer ? buffer : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, cause ? cause : "", -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, (int64_t)r->count);
        return step(w, ST_DROPS, "inserting a drops row");
    }
    case INT_BACKPRESSURE: {
        const int_backpressure *r = p;
        sqlite3_stmt *s = w->st[ST_BACKPRESSURE];
        const char *buffer = rec_str(r, psize, &r->buffer);
        sqlite3_bind_text(s, 1, buffer ? buffer : "", -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, (int64_t)r->waits);
        sqlite3_bind_int64(s, 3, (int64_t)r->wait_ns);
        return step(w, ST_BACKPRESSURE, "inserting a back-pressure row");
    }
    default: atomic_fetch_add_explicit(&w->n_unhandled, 1, memory_order_relaxed); return 0;
    }
}

/* One spool record -> rows. The payload is copied into an aligned, zero-padded local struct
 * when it is shorter than ours (an older producer), so every field read is in bounds. */
static int ingest_record(op_db_writer *w, const op_db_rec *rec)
{
    const void *p = rec + 1;
    uint64_t psize = *(const uint64_t *)p;
    if (rec->category == OP_DB_CAT_INTERNAL) return ingest_internal(w, rec->kind, p, psize);
    if (rec->category == OMNIPROF_RECORD_CATEGORY_COUNTERS) {
        if (rec->kind == OMNIPROF_COUNTER_RECORD_DISPATCH_HEADER && psize >= sizeof(omniprof_counter_dispatch_header_record_t))
            return ingest_counter_header(w, p, psize);
        if (rec->kind == OMNIPROF_COUNTER_RECORD_VALUE && psize >= sizeof(omniprof_counter_value_record_t))
            return ingest_counter_value(w, p, psize);
        atomic_fetch_add_explicit(&w->n_unhandled, 1, memory_order_relaxed);
        return 0;
    }
    if (rec->category != OMNIPROF_RECORD_CATEGORY_TRACING && rec->category != OMNIPROF_RECORD_CATEGORY_SAMPLING) {
        atomic_fetch_add_explicit(&w->n_unhandled, 1, memory_order_relaxed);
        return 0;
    }
    union {
        omniprof_buffer_tracing_kernel_dispatch_record_t k;
        omniprof_buffer_tracing_memory_copy_record_t c;
        omniprof_buffer_tracing_memory_set_record_t s;
        omniprof_buffer_tracing_memory_allocation_record_t a;
        omniprof_buffer_tracing_synchronization_record_t y;
        omniprof_thread_record_t t;
        uint64_t align;
    } local;
#define FIXED(T) \
    (psize >= sizeof(T) ? (const T *)p : (memset(&local, 0, sizeof local), memcpy(&local, p, psize), (const T *)&local))
    switch (rec->kind) {
    case OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API:
    case OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API:
    case OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER:
        if (psize < sizeof(omniprof_buffer_tracing_api_record_t)) break;
        return ingest_api(w, p, psize);
    case OMNIPROF_BUFFER_TRACING_MARKER_API:
    case OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API:
        if (psize < sizeof(omniprof_buffer_tracing_marker_record_t)) break;
        return ingest_marker(w, p, psize);
    case OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH:
        return ingest_kernel(w, FIXED(omniprof_buffer_tracing_kernel_dispatch_record_t), psize);
    case OMNIPROF_BUFFER_TRACING_MEMORY_COPY: return ingest_copy(w, FIXED(omniprof_buffer_tracing_memory_copy_record_t));
    case OMNIPROF_BUFFER_TRACING_MEMORY_SET: return ingest_memset(w, FIXED(omniprof_buffer_tracing_memory_set_record_t));
    case OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION:
        return ingest_alloc(w, FIXED(omniprof_buffer_tracing_memory_allocation_record_t));
    case OMNIPROF_BUFFER_TRACING_SYNCHRONIZATION:
        return ingest_sync(w, FIXED(omniprof_buffer_tracing_synchronization_record_t));
    case OMNIPROF_BUFFER_TRACING_CODE_OBJECT:
        if (psize < sizeof(omniprof_buffer_tracing_code_object_record_t)) break;
        return ingest_code_object(w, p, psize);
    case OMNIPROF_BUFFER_TRACING_KERNEL_SYMBOL:
        if (psize < sizeof(omniprof_buffer_tracing_kernel_symbol_record_t)) break;
        return ingest_kernel_symbol(w, p, psize);
    case OMNIPROF_BUFFER_TRACING_CPU_SAMPLE:
        if (psize < sizeof(omniprof_cpu_sample_record_t)) break;
        return ingest_cpu_sample(w, p, psize);
    case OMNIPROF_BUFFER_TRACING_PROCESS_SAMPLE:
        if (psize < sizeof(omniprof_process_sample_record_t)) break;
        return ingest_process_sample(w, p, psize);
    case OMNIPROF_BUFFER_TRACING_THREAD: return ingest_thread(w, FIXED(omniprof_thread_record_t));
    case OMNIPROF_BUFFER_TRACING_CORRELATION_ID_RETIREMENT: return 0; /* nothing to store */
    default: break;
    }
#undef FIXED
    atomic_fetch_add_explicit(&w->n_unhandled, 1, memory_order_relaxed);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Ingest thread                                                                              */

static int txn_begin(op_db_writer *w)
{
    if (w->txn_open) return 0;
    int rc = sqlite3_step(w->st[ST_BEGIN]);
    sqlite3_reset(w->st[ST_BEGIN]);
    if (rc != SQLITE_DONE) {
        writer_fail(w, "BEGIN", rc);
        return -1;
    }
    w->txn_open = 1;
    w->txn_start_ns = op_now_ns();
    w->txn_rows = 0;
    return 0;
}

static int txn_commit(op_db_writer *w)
{
    if (!w->txn_open) return 0;
    int rc = sqlite3_step(w->st[ST_COMMIT]);
    sqlite3_reset(w->st[ST_COMMIT]);
    if (rc != SQLITE_DONE) {
        writer_fail(w, "COMMIT", rc);
        return -1;
    }
    w->txn_open = 0;
    atomic_fetch_add_explicit(&w->n_rows, w->txn_rows, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->n_txn, 1, memory_order_relaxed);
    atomic_store(&w->oldest_uncommitted_ns, 0);
    atomic_store(&w->committed_pos, op_spool_consumed_pos(w->spool));
    pthread_mutex_lock(&w->mu);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

static void process_batch(op_db_writer *w, const op_spool_batch *b)
{
    const uint8_t *p = (const uint8_t *)b + OP_SPOOL_BATCH_HEADER, *end = (const uint8_t *)b + b->len;
    uint32_t n = 0;
    if (!failed(w) && txn_begin(w) == 0) {
        if (!atomic_load_explicit(&w->oldest_uncommitted_ns, memory_order_relaxed))
            atomic_store_explicit(&w->oldest_uncommitted_ns, b->t_ns, memory_order_relaxed);
        while (p < end && n < b->n) {
            const op_db_rec *rec = (const op_db_rec *)p;
            if (rec->len < sizeof *rec + 8 || rec->len > (uint64_t)(end - p)) break; /* cannot happen */
            if (ingest_record(w, rec) != 0) break;
            p += rec->len;
            n++;
        }
    }
    atomic_fetch_add_explicit(&w->n_ingested, n, memory_order_relaxed);
    if (n < b->n) atomic_fetch_add_explicit(&w->n_dropped, b->n - n, memory_order_relaxed);
}

static void write_final_rows(op_db_writer *w);
static void symbolize_stacks(op_db_writer *w);

static void close_database(op_db_writer *w, int checkpoint)
{
    for (int i = 0; i < ST__COUNT; i++) {
        sqlite3_finalize(w->st[i]);
        w->st[i] = NULL;
    }
    if (!w->db) return;
    if (!checkpoint) {
        sqlite3_db_config(w->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    } else if (!failed(w)) {
        int rc = sqlite3_wal_checkpoint_v2(w->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
        if (rc != SQLITE_OK && rc != SQLITE_BUSY) writer_fail(w, "checkpointing the WAL", rc);
    }
    sqlite3_close_v2(w->db);
    w->db = NULL;
}

/* The fork gate (invariant W-F): every stretch of SQLite calls in this module runs with
 * g_fork_gate held, and pthread_atfork's prepare handler takes it too. A fork therefore never
 * happens while one of our threads is inside SQLite, so the child never inherits one of
 * SQLite's global mutexes (memory, VFS inode list) locked by a thread that no longer exists
 * there (seen: a forked child hanging in sqlite3Malloc). Each stretch is bounded (one batch,
 * one commit, or the open/close sequence), so a fork waits at most that long. */
static pthread_mutex_t g_fork_gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_fork_gate_once = PTHREAD_ONCE_INIT;
static void fork_gate_lock(void) { pthread_mutex_lock(&g_fork_gate); }
static void fork_gate_unlock(void) { pthread_mutex_unlock(&g_fork_gate); }
static void fork_gate_install(void) { pthread_atfork(fork_gate_lock, fork_gate_unlock, fork_gate_unlock); }

static void *ingest_main(void *arg)
{
    op_db_writer *w = arg;
    uint64_t interval_ns = w->opts.flush_interval_ms * 1000000ull;
    struct pollfd pfd = {.fd = w->efd, .events = POLLIN};
    for (;;) {
        int stop = atomic_load(&w->stop);
        if (stop == 2 && op_now_ns() >= atomic_load(&w->fast_deadline_ns)) break;
        const op_spool_batch *b = op_spool_peek(w->spool);
        if (b) {
            uint64_t t0 = op_now_ns();
            fork_gate_lock();
            process_batch(w, b);
            op_spool_consume(w->spool, b);
            uint64_t t1 = op_now_ns();
            atomic_fetch_add_explicit(&w->busy_ns, t1 - t0, memory_order_relaxed);
            if (w->txn_open) {
                uint64_t target = atomic_load_explicit(&w->flush_target, memory_order_acquire);
                uint64_t consumed = op_spool_consumed_pos(w->spool);
                if (w->txn_rows >= w->opts.batch_rows || t1 - w->txn_start_ns >= interval_ns ||
                    (target > atomic_load(&w->committed_pos) && consumed >= target))
                    txn_commit(w);
            }
            fork_gate_unlock();
            continue;
        }
        /* Nothing ready: commit what we have (W3), then sleep until woken or the interval. */
        if (w->txn_open) {
            uint64_t t0 = op_now_ns();
            fork_gate_lock();
            txn_commit(w);
            fork_gate_unlock();
            atomic_fetch_add_explicit(&w->busy_ns, op_now_ns() - t0, memory_order_relaxed);
        } else {
            /* No transaction open: everything consumed is committed, unless the writer is off
             * (then consumed records were dropped: committed_pos stays, flush says -ESHUTDOWN). */
            if (!failed(w)) atomic_store(&w->committed_pos, op_spool_consumed_pos(w->spool));
            pthread_mutex_lock(&w->mu);
            pthread_cond_broadcast(&w->cv);
            pthread_mutex_unlock(&w->mu);
        }
        if (stop && op_spool_consumed_pos(w->spool) >= op_spool_reserved_pos(w->spool)) break;
        int timeout_ms = stop ? 1 : (int)(w->opts.flush_interval_ms < 1000 ? w->opts.flush_interval_ms : 1000);
        if (poll(&pfd, 1, timeout_ms) > 0) {
            uint64_t v;
            if (read(w->efd, &v, sizeof v) < 0) { /* spurious: fine */
            }
        }
    }
    fork_gate_lock();
    if (w->txn_open) txn_commit(w);
    int fast = atomic_load(&w->stop) == 2;
    if (w->db && !failed(w)) {
        if (!fast) symbolize_stacks(w);
        write_final_rows(w);
    }
    close_database(w, !fast);
    fork_gate_unlock();
    {
        uint64_t f = op_spool_file_bytes(w->spool);
        if (f > w->spool_file_peak) w->spool_file_peak = f;
    }
    pthread_mutex_lock(&w->mu);
    atomic_store(&w->done, 1);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

typedef struct symbolize_ctx {
    op_db_writer *w;
    int rc;
} symbolize_ctx;

static int symbol_cb(const omniprof_symbol_info_t *info, void *data)
{
    symbolize_ctx *c = data;
    op_db_writer *w = c->w;
    if (!info || failed(w)) return 1;
    sqlite3_stmt *s = w->st[ST_SYMBOL];
    sqlite3_bind_int64(s, 1, (int64_t)info->address);
    sqlite3_bind_int(s, 2, (int)info->inline_depth);
    if (info->function) sqlite3_bind_text(s, 3, info->function, -1, SQLITE_TRANSIENT); else sqlite3_bind_null(s, 3);
    if (info->function_mangled) sqlite3_bind_text(s, 4, info->function_mangled, -1, SQLITE_TRANSIENT); else sqlite3_bind_null(s, 4);
    if (info->file) sqlite3_bind_text(s, 5, info->file, -1, SQLITE_TRANSIENT); else sqlite3_bind_null(s, 5);
    sqlite3_bind_int(s, 6, (int)info->line);
    if (info->module) sqlite3_bind_text(s, 7, info->module, -1, SQLITE_TRANSIENT); else sqlite3_bind_null(s, 7);
    sqlite3_bind_int64(s, 8, (int64_t)info->module_offset);
    c->rc = step(w, ST_SYMBOL, "inserting a symbol");
    return c->rc != 0;
}

/* At close: every distinct stack address -> omniprof_symbol rows (opts.symbolize). */
static void symbolize_stacks(op_db_writer *w)
{
    if (!w->opts.symbolize) return;
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT DISTINCT address FROM \"omniprof_stack%s\"", w->suffix);
    sqlite3_stmt *sel = NULL;
    int rc = sqlite3_prepare_v2(w->db, sql, -1, &sel, NULL);
    if (rc != SQLITE_OK) {
        writer_fail(w, "listing stack addresses", rc);
        return;
    }
    if (txn_begin(w) != 0) {
        sqlite3_finalize(sel);
        return;
    }
    symbolize_ctx ctx = {w, 0};
    while (!failed(w) && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
        uint64_t addr = (uint64_t)sqlite3_column_int64(sel, 0);
        w->opts.symbolize(addr, symbol_cb, &ctx, w->opts.user);
        if (w->txn_rows >= w->opts.batch_rows) { /* keep transactions bounded */
            txn_commit(w);
            txn_begin(w);
        }
    }
    sqlite3_finalize(sel);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW && !failed(w)) writer_fail(w, "listing stack addresses", rc);
    if (!failed(w)) txn_commit(w);
}

static void write_final_rows(op_db_writer *w)
{
    if (txn_begin(w) != 0) return;
    char sql[256];
    snprintf(sql, sizeof sql, "UPDATE \"rocpd_info_process%s\" SET fini = ?, \"end\" = ? WHERE id = 1", w->suffix);
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(w->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        int64_t now = (int64_t)op_now_ns();
        sqlite3_bind_int64(s, 1, now);
        sqlite3_bind_int64(s, 2, now);
        rc = sqlite3_step(s);
        sqlite3_finalize(s);
        if (rc != SQLITE_DONE) {
            writer_fail(w, "writing the process end time", rc);
            return;
        }
    } else {
        writer_fail(w, "writing the process end time", rc);
        return;
    }
    struct {
        const char *name;
        double value;
        const char *units;
    } costs[] = {
        {"db_ingest_busy_ns", (double)atomic_load(&w->busy_ns), "ns"},
        {"db_records_appended", (double)atomic_load(&w->n_appended), "records"},
        {"db_records_ingested", (double)atomic_load(&w->n_ingested), "records"},
        {"db_records_unhandled", (double)atomic_load(&w->n_unhandled), "records"},
        {"db_records_dropped", (double)atomic_load(&w->n_dropped), "records"},
        {"db_rows_written", (double)(atomic_load(&w->n_rows) + w->txn_rows + 8), "rows"},
        {"db_transactions", (double)(atomic_load(&w->n_txn) + 1), "count"},
        {"db_spool_bytes_total", (double)op_spool_total_bytes(w->spool), "bytes"},
        {"db_spool_file_bytes_peak", (double)op_spool_file_bytes(w->spool), "bytes"},
        {"db_spool_bytes_lost", (double)op_spool_lost_bytes(w->spool), "bytes"},
    };
    for (size_t i = 0; i < NELEM(costs); i++) {
        sqlite3_stmt *c = w->st[ST_RUN_COST];
        sqlite3_bind_text(c, 1, costs[i].name, -1, SQLITE_STATIC);
        sqlite3_bind_double(c, 2, costs[i].value);
        sqlite3_bind_text(c, 3, costs[i].units, -1, SQLITE_STATIC);
        if (step(w, ST_RUN_COST, "writing the run cost") != 0) return;
    }
    struct {
        const char *cause;
        uint64_t n;
    } drops[] = {{"spool_full", atomic_load(&w->n_drop_full)},
                 {"invalid_record", atomic_load(&w->n_drop_invalid)},
                 {"writer_off", atomic_load(&w->n_drop_off)}};
    for (size_t i = 0; i < NELEM(drops); i++) {
        if (!drops[i].n) continue;
        sqlite3_stmt *d = w->st[ST_DROPS];
        sqlite3_bind_text(d, 1, "db_writer", -1, SQLITE_STATIC);
        sqlite3_bind_text(d, 2, drops[i].cause, -1, SQLITE_STATIC);
        sqlite3_bind_int64(d, 3, (int64_t)drops[i].n);
        if (step(w, ST_DROPS, "writing the drop counts") != 0) return;
    }
    txn_commit(w);
}

/* ------------------------------------------------------------------------------------------ */
/* Producer side                                                                              */

/* Lists the `const char *` fields of a record: their offsets in the payload. Returns count. */
static size_t rec_string_fields(uint32_t category, uint32_t kind, const void *payload, uint64_t psize,
                                uint32_t *offs)
{
    size_t n = 0;
#define ADD(T, F)                                                          \
    do {                                                                   \
        if (offsetof(T, F) + sizeof(void *) <= psize) offs[n++] = offsetof(T, F); \
    } while (0)
    if (category == OP_DB_CAT_INTERNAL) {
        switch (kind) {
        case INT_AGENT:
            ADD(omniprof_agent_v0_t, name);
            ADD(omniprof_agent_v0_t, vendor_name);
            ADD(omniprof_agent_v0_t, product_name);
            ADD(omniprof_agent_v0_t, model_name);
            break;
        case INT_RUN_COST: ADD(int_run_cost, name); ADD(int_run_cost, units); break;
        case INT_DROPS: ADD(int_drops, buffer); ADD(int_drops, cause); break;
        case INT_BACKPRESSURE: ADD(int_backpressure, buffer); break;
        default: break;
        }
        return n;
    }
    if (category == OMNIPROF_RECORD_CATEGORY_COUNTERS) {
        if (kind == OMNIPROF_COUNTER_RECORD_DISPATCH_HEADER) ADD(omniprof_counter_dispatch_header_record_t, kernel_name);
        if (kind == OMNIPROF_COUNTER_RECORD_VALUE) ADD(omniprof_counter_value_record_t, counter_name);
        return n;
    }
    if (category != OMNIPROF_RECORD_CATEGORY_TRACING && category != OMNIPROF_RECORD_CATEGORY_SAMPLING) return 0;
    switch (kind) {
    case OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API:
    case OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API:
    case OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER: {
        const omniprof_buffer_tracing_api_record_t *r = payload;
        if (psize < sizeof *r) return 0;
        uint64_t max_args = (psize - sizeof *r) / sizeof(omniprof_arg_t);
        uint32_t na = r->num_args < max_args ? r->num_args : (uint32_t)max_args;
        if (na > (OP_DB_MAX_STRFIELDS - 8) / 2) na = (OP_DB_MAX_STRFIELDS - 8) / 2;
        for (uint32_t i = 0; i < na; i++) {
            size_t base = sizeof *r + i * sizeof(omniprof_arg_t);
            offs[n++] = (uint32_t)(base + offsetof(omniprof_arg_t, name));
            if (r->args[i].type == OMNIPROF_ARG_TYPE_STRING) offs[n++] = (uint32_t)(base + offsetof(omniprof_arg_t, value));
        }
        break;
    }
    case OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH:
        ADD(omniprof_buffer_tracing_kernel_dispatch_record_t, kernel_name);
        ADD(omniprof_buffer_tracing_kernel_dispatch_record_t, kernel_name_demangled);
        break;
    case OMNIPROF_BUFFER_TRACING_CODE_OBJECT: ADD(omniprof_buffer_tracing_code_object_record_t, uri); break;
    case OMNIPROF_BUFFER_TRACING_KERNEL_SYMBOL:
        ADD(omniprof_buffer_tracing_kernel_symbol_record_t, kernel_name);
        ADD(omniprof_buffer_tracing_kernel_symbol_record_t, kernel_name_demangled);
        break;
    case OMNIPROF_BUFFER_TRACING_PROCESS_SAMPLE:
        ADD(omniprof_process_sample_record_t, metric_name);
        ADD(omniprof_process_sample_record_t, units);
        break;
    default: break;
    }
#undef ADD
    return n;
}

static inline uint64_t align8(uint64_t x) { return (x + 7) & ~(uint64_t)7; }

/* Bytes the record takes in the spool, or 0 when it is malformed. */
static uint64_t rec_spool_size(uint32_t category, uint32_t kind, const void *payload)
{
    if (!payload) return 0;
    uint64_t psize = *(const uint64_t *)payload;
    if (psize < 16 || psize > OP_DB_MAX_PAYLOAD) return 0;
    uint32_t offs[OP_DB_MAX_STRFIELDS];
    size_t nf = rec_string_fields(category, kind, payload, psize, offs);
    uint64_t total = sizeof(op_db_rec) + align8(psize);
    for (size_t i = 0; i < nf; i++) {
        const char *s = *(const char *const *)((const char *)payload + offs[i]);
        if (s) total += strnlen(s, OP_DB_MAX_STRING - 1) + 1;
    }
    return align8(total);
}

static void rec_spool_write(uint8_t *dst, uint64_t size, uint32_t category, uint32_t kind, const void *payload)
{
    uint64_t psize = *(const uint64_t *)payload;
    op_db_rec *rec = (op_db_rec *)dst;
    rec->len = (uint32_t)size;
    rec->category = category;
    rec->kind = kind;
    rec->reserved = 0;
    uint8_t *p = dst + sizeof *rec;
    memcpy(p, payload, psize);
    uint32_t offs[OP_DB_MAX_STRFIELDS];
    size_t nf = rec_string_fields(category, kind, payload, psize, offs);
    uint64_t at = align8(psize);
    for (size_t i = 0; i < nf; i++) {
        const char *s = *(const char *const *)((const char *)payload + offs[i]);
        uint64_t off = 0;
        if (s) {
            size_t n = strnlen(s, OP_DB_MAX_STRING - 1);
            memcpy(p + at, s, n);
            p[at + n] = 0;
            off = at;
            at += n + 1;
        }
        memcpy(p + offs[i], &off, sizeof off);
    }
    /* For API records, pointers of arguments beyond those listed are cleared. */
    if ((category == OMNIPROF_RECORD_CATEGORY_TRACING) &&
        (kind == OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API || kind == OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API ||
         kind == OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER) &&
        psize >= sizeof(omniprof_buffer_tracing_api_record_t)) {
        omniprof_buffer_tracing_api_record_t *r = (omniprof_buffer_tracing_api_record_t *)p;
        uint64_t max_args = (psize - sizeof *r) / sizeof(omniprof_arg_t);
        uint32_t na = r->num_args < max_args ? r->num_args : (uint32_t)max_args;
        for (uint32_t i = (OP_DB_MAX_STRFIELDS - 8) / 2; i < na; i++) {
            r->args[i].name = NULL;
            if (r->args[i].type == OMNIPROF_ARG_TYPE_STRING) r->args[i].value.str = NULL;
        }
    }
    if (at < size - sizeof *rec) memset(p + at, 0, size - sizeof *rec - at);
}

static void wake_ingest(op_db_writer *w)
{
    uint64_t one = 1;
    ssize_t r = write(w->efd, &one, sizeof one);
    (void)r;
}

/* Core of append: items given as parallel (category, kind, payload). */
#define APPEND_GROUP 256
typedef struct append_item {
    uint32_t category, kind;
    const void *payload;
} append_item;

static int append_items(op_db_writer *w, const append_item *items, size_t n)
{
    if (failed(w) || atomic_load_explicit(&w->stop, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&w->n_dropped, n, memory_order_relaxed);
        atomic_fetch_add_explicit(&w->n_drop_off, n, memory_order_relaxed);
        return 0;
    }
    uint32_t sizes[APPEND_GROUP];
    const append_item *valid[APPEND_GROUP];
    size_t accepted = 0, i = 0;
    int woke = 0;
    while (i < n) {
        size_t m = 0;
        while (i < n && m < APPEND_GROUP) {
            uint64_t sz = rec_spool_size(items[i].category, items[i].kind, items[i].payload);
            if (sz == 0 || sz > op_spool_max_record(w->spool)) {
                atomic_fetch_add_explicit(&w->n_dropped, 1, memory_order_relaxed);
                atomic_fetch_add_explicit(&w->n_drop_invalid, 1, memory_order_relaxed);
            } else {
                sizes[m] = (uint32_t)sz;
                valid[m++] = &items[i];
            }
            i++;
        }
        size_t done = 0;
        while (done < m) {
            size_t fit;
            uint64_t bytes;
            uint64_t before = op_spool_total_bytes(w->spool);
            uint8_t *batch = op_spool_reserve(w->spool, sizes + done, m - done, &fit, &bytes);
            if (!batch) {
                size_t lost = m - done;
                atomic_fetch_add_explicit(&w->n_dropped, lost, memory_order_relaxed);
                atomic_fetch_add_explicit(&w->n_drop_full, lost, memory_order_relaxed);
                done = m;
                break;
            }
            /* A reservation that started a new chunk means one was sealed: wake the ingest. */
            if (!woke && (before / w->opts.spool_chunk_bytes) != ((before + bytes) / w->opts.spool_chunk_bytes)) woke = 1;
            uint8_t *p = batch + OP_SPOOL_BATCH_HEADER;
            for (size_t k = 0; k < fit; k++) {
                const append_item *it = valid[done + k];
                rec_spool_write(p, sizes[done + k], it->category, it->kind, it->payload);
                p += sizes[done + k];
            }
            op_spool_commit(w->spool, batch, (uint32_t)fit, bytes);
            done += fit;
            accepted += fit;
        }
    }
    atomic_fetch_add_explicit(&w->n_appended, accepted, memory_order_relaxed);
    if (woke) wake_ingest(w);
    return (int)accepted;
}

int op_db_writer_append(op_db_writer *w, const omniprof_record_header_t *const *headers, size_t n)
{
    if (!w || (!headers && n)) return -EINVAL;
    append_item items[APPEND_GROUP];
    size_t total = 0;
    for (size_t i = 0; i < n; i += APPEND_GROUP) {
        size_t m = n - i < APPEND_GROUP ? n - i : APPEND_GROUP;
        for (size_t k = 0; k < m; k++) {
            const omniprof_record_header_t *h = headers[i + k];
            items[k].category = h ? h->category : 0;
            items[k].kind = h ? h->kind : 0;
            items[k].payload = h ? h->payload : NULL;
        }
        total += (size_t)append_items(w, items, m);
    }
    return (int)total;
}

int op_db_writer_append_one(op_db_writer *w, uint32_t category, uint32_t kind, const void *payload)
{
    if (!w || !payload) return -EINVAL;
    append_item it = {category, kind, payload};
    return append_items(w, &it, 1);
}

static int append_internal(op_db_writer *w, uint32_t kind, const void *payload)
{
    if (!w || !payload) return -EINVAL;
    if (failed(w)) return -ESHUTDOWN;
    append_item it = {OP_DB_CAT_INTERNAL, kind, payload};
    if (append_items(w, &it, 1) == 1) return 0;
    return failed(w) || atomic_load(&w->stop) ? -ESHUTDOWN : -ENOSPC;
}

int op_db_writer_add_agent(op_db_writer *w, const omniprof_agent_v0_t *agent)
{
    if (!agent || agent->size < offsetof(omniprof_agent_v0_t, uuid)) return -EINVAL;
    return append_internal(w, INT_AGENT, agent);
}

int op_db_writer_add_run_cost(op_db_writer *w, const char *name, double value, const char *units)
{
    if (!name) return -EINVAL;
    int_run_cost r = {sizeof r, value, name, units ? units : ""};
    return append_internal(w, INT_RUN_COST, &r);
}

int op_db_writer_add_drops(op_db_writer *w, const char *buffer, const char *cause, uint64_t count)
{
    if (!buffer || !cause) return -EINVAL;
    int_drops r = {sizeof r, count, buffer, cause};
    return append_internal(w, INT_DROPS, &r);
}

int op_db_writer_add_backpressure(op_db_writer *w, const char *buffer, uint64_t waits, uint64_t wait_ns)
{
    if (!buffer) return -EINVAL;
    int_backpressure r = {sizeof r, waits, wait_ns, buffer};
    return append_internal(w, INT_BACKPRESSURE, &r);
}

/* ------------------------------------------------------------------------------------------ */
/* Open / flush / close                                                                       */

static const char *const k_statements[ST__COUNT] = {
    [ST_STRING_INS] = "INSERT INTO \"rocpd_string%s\" (string) VALUES (?)",
    [ST_STRING_SEL] = "SELECT id FROM \"rocpd_string%s\" WHERE string = ?",
    [ST_EVENT] = "INSERT INTO \"rocpd_event%s\" (category_id, stack_id, parent_stack_id, correlation_id) VALUES (?,?,?,?)",
    [ST_EVENT_EXT] = "INSERT INTO \"rocpd_event%s\" (category_id, stack_id, parent_stack_id, correlation_id, extdata) VALUES (?,?,?,?,?)",
    [ST_REGION] = "INSERT INTO \"rocpd_region%s\" (nid, pid, tid, start, \"end\", name_id, event_id) VALUES (1,1,?,?,?,?,?)",
    [ST_SAMPLE] = "INSERT INTO \"rocpd_sample%s\" (track_id, timestamp, event_id) VALUES (?,?,?)",
    [ST_ARG] = "INSERT INTO \"rocpd_arg%s\" (event_id, position, type, name, value) VALUES (?,?,?,?,?)",
    [ST_THREAD_INS] = "INSERT INTO \"rocpd_info_thread%s\" (nid, ppid, pid, tid) VALUES (1,?,1,?)",
    [ST_THREAD_START] = "UPDATE \"rocpd_info_thread%s\" SET start = ? WHERE id = ?",
    [ST_THREAD_END] = "UPDATE \"rocpd_info_thread%s\" SET \"end\" = ? WHERE id = ?",
    [ST_THREAD_NAME] = "UPDATE \"rocpd_info_thread%s\" SET name = ? WHERE id = ?",
    [ST_OTHREAD] = "INSERT OR REPLACE INTO \"omniprof_thread%s\" (thread_id, tid, parent_tid, internal_value, sequent_value, is_profiler_thread) VALUES (?,?,?,?,?,?)",
    [ST_TRACK] = "INSERT INTO \"rocpd_track%s\" (nid, pid, tid, name_id, extdata) VALUES (1,1,?,?,?)",
    [ST_STREAM] = "INSERT INTO \"rocpd_info_stream%s\" (nid, pid, name, extdata) VALUES (1,1,?,?)",
    [ST_AGENT] = "INSERT INTO \"rocpd_info_agent%s\" (nid, pid, type, absolute_index, logical_index, type_index, name, model_name, vendor_name, product_name, extdata) VALUES (1,1,?,?,?,?,?,?,?,?,?)",
    [ST_CODE_OBJECT] = "INSERT INTO \"rocpd_info_code_object%s\" (nid, pid, agent_id, uri, load_base, load_size, load_delta, storage_type, extdata) VALUES (1,1,?,?,?,?,0,?,?)",
    [ST_KSYM] = "INSERT INTO \"rocpd_info_kernel_symbol%s\" (nid, pid, code_object_id, kernel_name, display_name, kernel_object, group_segment_size, private_segment_size, arch_vgpr_count, sgpr_count, accum_vgpr_count, extdata) VALUES (1,1,?,?,?,?,?,?,?,0,0,?)",
    [ST_KSYM_UPD] = "UPDATE \"rocpd_info_kernel_symbol%s\" SET code_object_id = ? WHERE id = ?",
    [ST_KERNEL] = "INSERT INTO \"rocpd_kernel_dispatch%s\" (nid, pid, tid, agent_id, kernel_id, dispatch_id, stream_id, start, \"end\", private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, region_name_id, event_id, extdata) VALUES (1,1,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_COPY] = "INSERT INTO \"rocpd_memory_copy%s\" (nid, pid, tid, start, \"end\", name_id, dst_agent_id, src_agent_id, size, stream_id, event_id, extdata) VALUES (1,1,?,?,?,?,?,?,?,?,?,?)",
    [ST_ALLOC] = "INSERT INTO \"rocpd_memory_allocate%s\" (nid, pid, tid, agent_id, type, level, start, \"end\", address, size, stream_id, event_id, extdata) VALUES (1,1,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_METRIC] = "INSERT INTO \"omniprof_metric%s\" (track_id, timestamp, value) VALUES (?,?,?)",
    [ST_CPU_SAMPLE] = "INSERT INTO \"omniprof_cpu_sample%s\" (nid, pid, tid, timestamp, clock, stack_id, sample_id, num_frames, thread_internal_value, peak_rss_bytes, event_values) VALUES (1,1,?,?,?,?,?,?,?,?,?)",
    [ST_STACK_INS] = "INSERT INTO \"omniprof_stack%s\" (parent_id, address, depth) VALUES (?,?,?)",
    [ST_STACK_SEL] = "SELECT id FROM \"omniprof_stack%s\" WHERE parent_id = ? AND address = ?",
    [ST_SYMBOL] = "INSERT OR IGNORE INTO \"omniprof_symbol%s\" (address, inline_depth, function, function_mangled, file, line, module, module_offset) VALUES (?,?,?,?,?,?,?,?)",
    [ST_RUN_COST] = "INSERT INTO \"omniprof_run_cost%s\" (pid, name, value, units) VALUES (1,?,?,?)",
    [ST_DROPS] = "INSERT INTO \"omniprof_drops%s\" (pid, buffer, cause, count) VALUES (1,?,?,?)",
    [ST_BACKPRESSURE] = "INSERT INTO \"omniprof_backpressure%s\" (pid, buffer, waits, wait_ns) VALUES (1,?,?,?)",
    [ST_PMC_INFO] = "INSERT INTO \"rocpd_info_pmc%s\" (nid, pid, agent_id, target_arch, event_code, instance_id, name, symbol, description, long_description, component, units, value_type, block, expression, extdata) VALUES (1,1,?,'GPU',?,0,?,?,'','','','','ABS','','',?)",
    [ST_PMC_EVENT] = "INSERT INTO \"rocpd_pmc_event%s\" (event_id, pmc_id, value, extdata) VALUES (?,?,?,?)",
    [ST_BEGIN] = "BEGIN",
    [ST_COMMIT] = "COMMIT",
};

static void seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static size_t json_append_escaped(char *dst, size_t at, size_t cap, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    for (; s && *s && at + 8 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            dst[at++] = '\\';
            dst[at++] = (char)c;
        } else if (c < 0x20) {
            dst[at++] = '\\';
            dst[at++] = 'u';
            dst[at++] = '0';
            dst[at++] = '0';
            dst[at++] = hex[c >> 4];
            dst[at++] = hex[c & 15];
        } else {
            dst[at++] = (char)c;
        }
    }
    return at;
}

static int read_small_file(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = 0;
    return 0;
}

/* Node and process rows (ids 1). */
static int write_identity(op_db_writer *w, const op_db_process_info *info, char *err, size_t errlen)
{
    struct utsname u;
    memset(&u, 0, sizeof u);
    uname(&u);
    char machine_id[128] = "";
    const char *mid = info->machine_id;
    if (!mid || !*mid) {
        if (read_small_file("/etc/machine-id", machine_id, sizeof machine_id) != 0 &&
            read_small_file("/var/lib/dbus/machine-id", machine_id, sizeof machine_id) != 0)
            snprintf(machine_id, sizeof machine_id, "%s", info->hostname ? info->hostname : u.nodename);
        mid = machine_id;
    }
    const char *host = info->hostname && *info->hostname ? info->hostname : u.nodename;
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO \"rocpd_info_node%s\" (id, hash, machine_id, system_name, hostname, release, version, "
             "hardware_name, domain_name) VALUES (1,?,?,?,?,?,?,?,?)",
             w->suffix);
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(w->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, (int64_t)(hash_bytes(mid, strlen(mid)) & 0x7fffffffffffffffull));
        sqlite3_bind_text(s, 2, mid, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 3, u.sysname, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 4, host, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 5, u.release, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 6, u.version, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 7, u.machine, -1, SQLITE_TRANSIENT);
#ifdef _GNU_SOURCE
        sqlite3_bind_text(s, 8, u.domainname, -1, SQLITE_TRANSIENT);
#endif
        rc = sqlite3_step(s);
        sqlite3_finalize(s);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    if (rc != SQLITE_OK) {
        seterr(err, errlen, "database '%s': writing the node row failed: %s (%s)", w->path, sqlite3_errstr(rc),
               sqlite3_errmsg(w->db));
        return -EIO;
    }
    /* environment JSON and extdata JSON, bounded */
    size_t cap = 65536;
    char *env = op_malloc(cap), *ext = op_malloc(4096);
    if (!env || !ext) {
        op_free(env);
        op_free(ext);
        seterr(err, errlen, "database '%s': out of memory", w->path);
        return -ENOMEM;
    }
    size_t at = 0;
    env[at++] = '{';
    for (const char *const *e = info->environment; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq) continue;
        if (at + 16 >= cap) break;
        if (at > 1) env[at++] = ',';
        env[at++] = '"';
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
        at = json_append_escaped(env, at, cap - 4, name);
        env[at++] = '"';
        env[at++] = ':';
        env[at++] = '"';
        at = json_append_escaped(env, at, cap - 4, eq + 1);
        env[at++] = '"';
    }
    env[at++] = '}';
    env[at] = 0;
    size_t xa = (size_t)snprintf(ext, 4096, "{\"realtime_offset_ns\":%lld,\"rank\":%d,\"size\":%d,\"uuid\":\"%s\"",
                                 (long long)info->realtime_offset_ns, info->rank, info->world_size, w->uuid);
    if (info->extdata_json && info->extdata_json[0] == '{') {
        const char *inner = info->extdata_json + 1;
        size_t n = strlen(inner);
        while (n && (inner[n - 1] == '}' || inner[n - 1] == ' ' || inner[n - 1] == '\n')) n--;
        if (n && xa + n + 4 < 4096) {
            ext[xa++] = ',';
            memcpy(ext + xa, inner, n);
            xa += n;
        }
    }
    ext[xa++] = '}';
    ext[xa] = 0;
    snprintf(sql, sizeof sql,
             "INSERT INTO \"rocpd_info_process%s\" (id, nid, ppid, pid, init, start, command, environment, extdata) "
             "VALUES (1,1,?,?,?,?,?,?,?)",
             w->suffix);
    rc = sqlite3_prepare_v2(w->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, info->ppid);
        sqlite3_bind_int64(s, 2, info->pid);
        sqlite3_bind_int64(s, 3, (int64_t)info->init_ns);
        sqlite3_bind_int64(s, 4, (int64_t)(info->start_ns ? info->start_ns : info->init_ns));
        sqlite3_bind_text(s, 5, info->command ? info->command : "", -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 6, env, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 7, ext, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(s);
        sqlite3_finalize(s);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    op_free(env);
    op_free(ext);
    if (rc != SQLITE_OK) {
        seterr(err, errlen, "database '%s': writing the process row failed: %s (%s)", w->path, sqlite3_errstr(rc),
               sqlite3_errmsg(w->db));
        return -EIO;
    }
    return 0;
}

static void writer_free(op_db_writer *w)
{
    if (!w) return;
    close_database(w, 0);
    op_spool_close(w->spool);
    if (w->efd >= 0) close(w->efd);
    u64map *maps[] = {&w->threads, &w->streams, &w->agents, &w->kernels, &w->code_objects, &w->opnames, &w->tracks,
                      &w->metric_tracks, &w->pmcs};
    for (size_t i = 0; i < NELEM(maps); i++) u64map_free(maps[i]);
    if (w->strcache)
        for (size_t i = 0; i < OP_DB_STRCACHE; i++) op_free(w->strcache[i].text);
    op_free(w->strcache);
    op_free(w->stackcache);
    op_free(w->dispatchcache);
    op_free(w->scratch);
    op_free(w->path);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    op_free(w);
}

static void remove_db_files(const char *path)
{
    char buf[4200];
    unlink(path);
    snprintf(buf, sizeof buf, "%s-wal", path);
    unlink(buf);
    snprintf(buf, sizeof buf, "%s-shm", path);
    unlink(buf);
    snprintf(buf, sizeof buf, "%s-journal", path);
    unlink(buf);
}

static op_db_writer *writer_open_gated(const char *path, const op_db_process_info *info,
                                       const op_db_writer_options *opts, char *err, size_t errlen);

op_db_writer *op_db_writer_open(const char *path, const op_db_process_info *info, const op_db_writer_options *opts,
                                char *err, size_t errlen)
{
    pthread_once(&g_fork_gate_once, fork_gate_install);
    fork_gate_lock();
    op_db_writer *w = writer_open_gated(path, info, opts, err, errlen);
    int e = errno;
    fork_gate_unlock();
    errno = e;
    return w;
}

/* op_db_writer_open's body, run with the fork gate held. */
static op_db_writer *writer_open_gated(const char *path, const op_db_process_info *info,
                                       const op_db_writer_options *opts, char *err, size_t errlen)
{
    if (err && errlen) err[0] = 0;
    if (!path || !*path || !info || info->size < offsetof(op_db_process_info, environment)) {
        seterr(err, errlen, "op_db_writer_open: %s", !path || !*path ? "empty database path" : "missing or too small process info");
        errno = EINVAL;
        return NULL;
    }
    if (strlen(path) > 4000) {
        seterr(err, errlen, "database path too long (%zu bytes, at most 4000)", strlen(path));
        errno = ENAMETOOLONG;
        return NULL;
    }
    /* Claim the name atomically: an existing file is never overwritten. */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        if (e == EEXIST)
            seterr(err, errlen, "database '%s' already exists: refusing to overwrite it (choose another output name)", path);
        else
            seterr(err, errlen, "cannot create database '%s': %s%s", path, strerror(e),
                   e == ENOENT ? " (the directory does not exist)" : "");
        errno = e;
        return NULL;
    }
    close(fd);

    int e = ENOMEM;
    op_db_writer *w = op_calloc(1, sizeof *w);
    if (!w) goto fail_nomem_early;
    w->efd = -1;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->path = op_strdup(path);
    w->strcache = op_calloc(OP_DB_STRCACHE, sizeof *w->strcache);
    w->stackcache = op_calloc(OP_DB_STACKCACHE, sizeof *w->stackcache);
    w->dispatchcache = op_calloc(OP_DB_DISPATCHCACHE, sizeof *w->dispatchcache);
    w->scratch_len = OP_DB_MAX_STRING * 6 + 512;
    w->scratch = op_malloc(w->scratch_len);
    if (!w->path || !w->strcache || !w->stackcache || !w->dispatchcache || !w->scratch) goto fail_nomem;
    w->pid = info->pid;
    w->ppid = info->ppid;
    w->start_ns = info->start_ns ? info->start_ns : info->init_ns;

    /* Options with defaults (libbpf OPTS_GET style: fields beyond the caller's size default). */
    memset(&w->opts, 0, sizeof w->opts);
    if (opts) memcpy(&w->opts, opts, opts->size < sizeof w->opts ? opts->size : sizeof w->opts);
    w->opts.size = sizeof w->opts;
    if (!w->opts.spool_chunk_bytes) w->opts.spool_chunk_bytes = op_setting_uint(OP_SET_DB_SPOOL_CHUNK_KB) * 1024;
    if (w->opts.spool_chunk_bytes < 65536) w->opts.spool_chunk_bytes = 65536;
    if (w->opts.spool_chunk_bytes > (64u << 20)) w->opts.spool_chunk_bytes = 64u << 20;
    w->opts.spool_chunk_bytes = (w->opts.spool_chunk_bytes + 4095) & ~(uint64_t)4095;
    if (!w->opts.spool_mapped_chunks) w->opts.spool_mapped_chunks = 16;
    if (!w->opts.spool_max_bytes) w->opts.spool_max_bytes = op_setting_uint(OP_SET_DB_SPOOL_MAX_MB) << 20;
    if (!w->opts.flush_interval_ms) w->opts.flush_interval_ms = op_setting_uint(OP_SET_DB_FLUSH_INTERVAL_MS);
    if (w->opts.flush_interval_ms < 1) w->opts.flush_interval_ms = 1;
    if (w->opts.flush_interval_ms > 60000) w->opts.flush_interval_ms = 60000;
    if (!w->opts.batch_rows) w->opts.batch_rows = 200000;
    if (!w->opts.cache_kib) w->opts.cache_kib = 8192;
    if (!w->opts.close_timeout_ms) w->opts.close_timeout_ms = 30000;

    /* uuid */
    if (info->size > offsetof(op_db_process_info, uuid) && info->uuid && *info->uuid) {
        size_t n = strlen(info->uuid);
        if (n > 36 || strspn(info->uuid, "0123456789abcdefABCDEF-") != n) {
            seterr(err, errlen, "invalid uuid '%.64s' in process info: expected a UUID (hex digits and '-')", info->uuid);
            e = EINVAL;
            goto fail;
        }
        memcpy(w->uuid, info->uuid, n + 1);
    } else {
        op_db_make_uuid(w->uuid, sizeof w->uuid);
    }
    w->suffix[0] = '_';
    for (size_t i = 0; i <= strlen(w->uuid); i++) w->suffix[i + 1] = w->uuid[i] == '-' ? '_' : w->uuid[i];

    /* Spool: OMNIPROF_TMPDIR, else the database's directory. */
    char dir[4096];
    const char *spool_dir = w->opts.spool_dir;
    if (!spool_dir || !*spool_dir) spool_dir = op_setting_str(OP_SET_TMPDIR);
    if (!spool_dir || !*spool_dir) {
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash == dir) slash[1] = 0;
        else if (slash) *slash = 0;
        else snprintf(dir, sizeof dir, ".");
        spool_dir = dir;
    }
    int rc = op_spool_open(&w->spool, spool_dir, w->opts.spool_chunk_bytes, w->opts.spool_mapped_chunks,
                           w->opts.spool_max_bytes, err, errlen);
    if (rc != 0) {
        e = -rc;
        goto fail;
    }
    w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->efd < 0) {
        e = errno;
        seterr(err, errlen, "database '%s': eventfd failed: %s", path, strerror(e));
        goto fail;
    }

    /* SQLite: WAL before any data row (W1). */
    rc = sqlite3_open_v2(path, &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, NULL);
    if (rc != SQLITE_OK) {
        seterr(err, errlen, "cannot open database '%s': %s", path, sqlite3_errstr(rc));
        e = rc == SQLITE_NOMEM ? ENOMEM : EIO;
        goto fail;
    }
    sqlite3_extended_result_codes(w->db, 1);
    sqlite3_busy_timeout(w->db, 2000);
    char pragmas[512];
    snprintf(pragmas, sizeof pragmas,
             "PRAGMA page_size=8192; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-%u; "
             "PRAGMA temp_store=MEMORY; PRAGMA foreign_keys=OFF;",
             w->opts.cache_kib);
    char *msg = NULL;
    rc = sqlite3_exec(w->db, pragmas, NULL, NULL, &msg);
    if (rc == SQLITE_OK) {
        sqlite3_stmt *jm = NULL;
        /* journal_mode=WAL can silently stay "delete" (e.g. no shared memory): check it. */
        if (sqlite3_prepare_v2(w->db, "PRAGMA journal_mode", -1, &jm, NULL) == SQLITE_OK && sqlite3_step(jm) == SQLITE_ROW &&
            strcmp((const char *)sqlite3_column_text(jm, 0), "wal") != 0)
            op_warn("database '%s': WAL journal mode unavailable (%s); readers during the run may block", path,
                    (const char *)sqlite3_column_text(jm, 0));
        sqlite3_finalize(jm);
    }
    if (rc != SQLITE_OK) {
        seterr(err, errlen, "database '%s': setting up SQLite failed: %s (%s)", path, sqlite3_errstr(rc), msg ? msg : "");
        sqlite3_free(msg);
        e = EIO;
        goto fail;
    }
    rc = op_db_schema_create(w->db, w->uuid, err, errlen);
    if (rc != 0) {
        e = -rc;
        goto fail;
    }
    if ((rc = write_identity(w, info, err, errlen)) != 0) {
        e = -rc;
        goto fail;
    }
    for (int i = 0; i < ST__COUNT; i++) {
        char sql[1024];
        snprintf(sql, sizeof sql, k_statements[i], w->suffix);
        rc = sqlite3_prepare_v3(w->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &w->st[i], NULL);
        if (rc != SQLITE_OK) {
            seterr(err, errlen, "database '%s': preparing a statement failed: %s (%s)", path, sqlite3_errstr(rc),
                   sqlite3_errmsg(w->db));
            e = EIO;
            goto fail;
        }
    }
    /* Category strings: interned up front (one transaction). */
    if (txn_begin(w) != 0) goto fail_sqlite;
    for (uint32_t k = 0; k < OMNIPROF_BUFFER_TRACING_LAST; k++) {
        w->cat_id[k] = intern(w, kind_name(w, k));
        if (w->cat_id[k] < 0) goto fail_sqlite;
    }
    if (txn_commit(w) != 0) goto fail_sqlite;
    atomic_store(&w->n_rows, 0);
    atomic_store(&w->n_txn, 0);

    /* Ingest thread, all signals blocked (it never runs application code). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&w->thread, NULL, ingest_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        seterr(err, errlen, "database '%s': cannot start the writer thread: %s", path, strerror(rc));
        e = rc;
        goto fail;
    }
    w->thread_started = 1;
    return w;

fail_sqlite:
    seterr(err, errlen, "%s", w->errmsg[0] ? w->errmsg : "database setup failed");
    e = EIO;
    goto fail;
fail_nomem:
    seterr(err, errlen, "database '%s': out of memory", path);
    e = ENOMEM;
fail:
    writer_free(w);
    remove_db_files(path);
    errno = e;
    return NULL;
fail_nomem_early:
    seterr(err, errlen, "database '%s': out of memory", path);
    remove_db_files(path);
    errno = ENOMEM;
    return NULL;
}

int op_db_writer_flush(op_db_writer *w, uint64_t timeout_ms)
{
    if (!w) return -EINVAL;
    if (failed(w)) return -ESHUTDOWN;
    uint64_t target = op_spool_reserved_pos(w->spool);
    uint64_t cur = atomic_load(&w->flush_target);
    while (cur < target && !atomic_compare_exchange_weak(&w->flush_target, &cur, target)) {
    }
    wake_ingest(w);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    uint64_t ns = (uint64_t)dl.tv_nsec + (timeout_ms % 1000) * 1000000ull;
    dl.tv_sec += (time_t)(timeout_ms / 1000 + ns / 1000000000ull);
    dl.tv_nsec = (long)(ns % 1000000000ull);
    int rc = 0;
    pthread_mutex_lock(&w->mu);
    while (atomic_load(&w->committed_pos) < target && !failed(w) && !atomic_load(&w->done)) {
        if (pthread_cond_timedwait(&w->cv, &w->mu, &dl) == ETIMEDOUT) {
            rc = atomic_load(&w->committed_pos) >= target ? 0 : -ETIMEDOUT;
            break;
        }
    }
    pthread_mutex_unlock(&w->mu);
    if (failed(w)) return -ESHUTDOWN; /* even if the target was reached: say the writer is off */
    if (rc == 0 && atomic_load(&w->committed_pos) < target) rc = -ETIMEDOUT;
    return rc;
}

int op_db_writer_close(op_db_writer *w)
{
    if (!w) return 0;
    if (!w->thread_started) {
        writer_free(w);
        return 0;
    }
    int expected = 0;
    atomic_compare_exchange_strong(&w->stop, &expected, 1);
    op_spool_shutdown(w->spool);
    wake_ingest(w);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    uint64_t ns = (uint64_t)dl.tv_nsec + (w->opts.close_timeout_ms % 1000) * 1000000ull;
    dl.tv_sec += (time_t)(w->opts.close_timeout_ms / 1000 + ns / 1000000000ull);
    dl.tv_nsec = (long)(ns % 1000000000ull);
    pthread_mutex_lock(&w->mu);
    while (!atomic_load(&w->done))
        if (pthread_cond_timedwait(&w->cv, &w->mu, &dl) == ETIMEDOUT) break;
    int done = atomic_load(&w->done);
    pthread_mutex_unlock(&w->mu);
    if (!done) {
        op_error("database '%s': the writer did not finish within %llu ms; it is left to finish in the background "
                 "(everything committed so far is valid)",
                 w->path, (unsigned long long)w->opts.close_timeout_ms);
        pthread_detach(w->thread);
        return -ETIMEDOUT; /* w is leaked on purpose: the thread still uses it */
    }
    pthread_join(w->thread, NULL);
    int rc = failed(w) ? -EIO : 0;
    writer_free(w);
    return rc;
}

int op_db_writer_close_fast(op_db_writer *w, uint64_t timeout_ms)
{
    if (!w || !w->thread_started) return 0;
    uint64_t now = op_now_ns();
    /* Ingest until 3/4 of the budget, then commit and close. */
    uint64_t deadline = now + timeout_ms * 750000ull;
    /* the deadline is published before stop=2, so the ingest thread never reads a stale one */
    uint64_t zero = 0;
    atomic_compare_exchange_strong(&w->fast_deadline_ns, &zero, deadline);
    atomic_store(&w->stop, 2);
    op_spool_shutdown(w->spool);
    wake_ingest(w);
    uint64_t end = now + timeout_ms * 1000000ull;
    while (!atomic_load(&w->done)) {
        if (op_now_ns() >= end) return -ETIMEDOUT;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

void op_db_writer_abandon_after_fork(op_db_writer *w)
{
    (void)w; /* nothing: the parent's thread, locks and connection do not exist in the child */
}

int op_db_writer_get_stats(const op_db_writer *cw, op_db_writer_stats *out)
{
    if (!cw || !out || out->size < sizeof(uint64_t)) return -EINVAL;
    op_db_writer *w = (op_db_writer *)cw;
    op_db_writer_stats s;
    memset(&s, 0, sizeof s);
    s.size = out->size < sizeof s ? out->size : sizeof s;
    s.records_appended = atomic_load(&w->n_appended);
    s.records_dropped = atomic_load(&w->n_dropped);
    s.records_ingested = atomic_load(&w->n_ingested);
    s.records_unhandled = atomic_load(&w->n_unhandled);
    s.rows_written = atomic_load(&w->n_rows);
    s.transactions = atomic_load(&w->n_txn);
    uint64_t reserved = op_spool_reserved_pos(w->spool), consumed = op_spool_consumed_pos(w->spool);
    s.spool_bytes = reserved > consumed ? reserved - consumed : 0;
    s.spool_bytes_total = op_spool_total_bytes(w->spool);
    s.spool_file_bytes = op_spool_file_bytes(w->spool);
    uint64_t oldest = atomic_load(&w->oldest_uncommitted_ns);
    s.ingest_lag_ns = oldest ? op_now_ns() - oldest : 0;
    s.ingest_busy_ns = atomic_load(&w->busy_ns);
    s.failed = failed(w);
    memcpy(out, &s, s.size);
    return 0;
}

const char *op_db_writer_path(const op_db_writer *w) { return w ? w->path : ""; }
const char *op_db_writer_uuid(const op_db_writer *w) { return w ? w->uuid : ""; }
const char *op_db_writer_error(const op_db_writer *w) { return w ? w->errmsg : ""; }
