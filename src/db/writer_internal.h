/* writer_internal.h — what the files of the database writer share; not API (db.h is).
 *
 * The writer is split by job:
 *   writer.c          open / flush / close, the ingest thread, transactions, errors (W1-W6)
 *   writer_process.c  the node and process rows, the closing rows (run cost, drops), symbols
 *   writer_append.c   the producer side: records -> spool (string fields copied beside them)
 *   ingest.c          one spool record -> its kind's ingest function (generated from
 *                     include/omniprof/kinds.def and ingest_kinds.def), shared row helpers
 *   ingest_gpu.c      kernel dispatches, copies, sets, allocations, synchronization, code
 *                     objects, kernel symbols, counters
 *   ingest_host.c     API calls, markers, CPU and process samples, threads, agents, the
 *                     writer's internal kinds
 *   ingest_causal.c   causal-profiling experiments and progress points
 *   ingest_comm.c     MPI and NCCL calls, clock estimates
 *   strings.c         interning (rocpd_string), names, the caches and rows that many kinds
 *                     share (threads, streams, agents, tracks, stack nodes), JSON escaping
 *   rows.c            batched inserts: the rows of the busiest tables, written 32 at a time
 *
 * Spool record (8-byte aligned, inside a spool batch):
 *     op_db_rec { uint32 len; uint32 category; uint32 kind; uint32 reserved; }
 *     payload   payload->size bytes (rounded up to 8); each `const char *` field of the payload
 *               (the kind's STRINGS in kinds.def, and the names and string values of the
 *               arguments of an ARGS kind) holds the offset of its copy from the payload start
 *               (0 = NULL) instead of the pointer; op_db_str turns it back into a pointer
 *     strings   NUL-terminated copies (each at most OP_DB_MAX_STRING bytes) */
#ifndef OMNIPROF_DB_WRITER_INTERNAL_H
#define OMNIPROF_DB_WRITER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "db/db.h"
#include "common/escape.h"
#include "common/kinds.h"
#include "common/u64map.h"
#include "db/spool.h"
#include "db/tables_gen.h"
#include "omniprof/omniprof.h"

#define OP_DB_MAX_STRING 4096      /* longest string copied from a record (longer: truncated) */
#define OP_DB_MAX_PAYLOAD (1u << 20)
#define OP_DB_MAX_ARG_STRINGS 64   /* arguments whose name and string value are copied */
#define OP_DB_MAX_STRFIELDS (2 * OP_DB_MAX_ARG_STRINGS + 8) /* per record */
#define OP_DB_STRCACHE 4096        /* direct-mapped string cache entries */
#define OP_DB_STRCACHE_MAXLEN 256  /* longer strings are looked up in the database each time */
#define OP_DB_STACKCACHE 16384     /* direct-mapped stack-node cache entries */
#define OP_DB_DISPATCHCACHE 8192   /* direct-mapped dispatch id -> event cache (counters) */
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#ifndef OP_DB_PAGE_SIZE
#define OP_DB_PAGE_SIZE 8192 /* bytes per database page (fixed when the file is made) */
#endif
#define OP_DB_STR_(x) #x
#define OP_DB_STR(x) OP_DB_STR_(x)
#define OP_DB_NO_THREAD_ID (1ll << 32) /* + pid: the thread row of GPU work without a launching thread */

/* Internal record category: writer-side entries that travel through the spool so that they
 * are ordered with the records (agents, run cost, drops, back-pressure): ingest_kinds.def. */
#define OP_DB_CAT_INTERNAL 0x4f500000u

typedef struct op_db_int_run_cost { uint64_t size; double value; const char *name; const char *units; } op_db_int_run_cost;
typedef struct op_db_int_drops { uint64_t size; uint64_t count; const char *buffer; const char *cause; } op_db_int_drops;
typedef struct op_db_int_backpressure { uint64_t size; uint64_t waits; uint64_t wait_ns; const char *buffer; } op_db_int_backpressure;

enum {
#define OP_DB_INTERNAL_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) OP_DB_INT_##NAME = VALUE,
#include "db/ingest_kinds.def"
};

typedef struct op_db_rec {
    uint32_t len;
    uint32_t category;
    uint32_t kind;
    uint32_t reserved;
} op_db_rec;

/* ------------------------------------------------------------------------------------------ */
/* Small containers (ingest thread only)                                                      */

/* Row ids in common/u64map.h maps (key -> id >= 1). */
static inline int op_db_map_get(const op_u64map *m, uint64_t key, int64_t *id)
{
    uint64_t v;
    if (!op_u64map_get(m, key, &v)) return 0;
    *id = (int64_t)v;
    return 1;
}
static inline int op_db_map_put(op_u64map *m, uint64_t key, int64_t id) { return op_u64map_put(m, key, (uint64_t)id); }

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

/* Batched inserts (rows.c): a queue of rows for one table, written by multi-row INSERTs. */
enum { Q_EVENT, Q_REGION, Q_SAMPLE, Q_ARG, Q_KERNEL, Q_COPY, Q_CPU_SAMPLE, Q__COUNT };
#ifndef OP_DB_ROWQ_SIZES
/* statements for 1, 2, 4, ..., 128 rows: 128-row statements wrote GPU-like records 1.17x faster
 * than 32-row ones (bench_db_gpu, median of 9 alternating runs, VM; issue 12). A build with
 * -DOP_DB_ROWQ_SIZES=6 makes the former 32-row writer, for such comparisons. */
#define OP_DB_ROWQ_SIZES 8
#endif
#define OP_DB_ROWQ_MAX (1u << (OP_DB_ROWQ_SIZES - 1)) /* rows queued at most per table */
enum { OP_DB_CELL_NULL, OP_DB_CELL_INT, OP_DB_CELL_REAL, OP_DB_CELL_TEXT, OP_DB_CELL_ARENA };
typedef struct op_db_cell {
    union {
        int64_t i;  /* INT; ARENA: offset of the text in the queue's arena */
        double d;   /* REAL */
    };
    const char *s;  /* TEXT: valid until the queue is written */
    uint32_t n;     /* TEXT, ARENA: bytes */
    uint32_t type;  /* OP_DB_CELL_* */
} op_db_cell;
typedef struct op_db_rowq {
    int st;         /* the one-row statement it stands for (k_statements) */
    int ids;        /* rows referenced by id: check that SQLite gives the ids announced */
    uint32_t ncols; /* parameters per row */
    uint32_t n;     /* rows queued */
    int64_t next_id; /* id of the next row queued */
    sqlite3_stmt *multi[OP_DB_ROWQ_SIZES];
    op_db_cell *cells; /* OP_DB_ROWQ_MAX rows of ncols */
    char *arena;       /* copies of the queued rows' texts */
    size_t arena_len, arena_cap;
} op_db_rowq;

/* ------------------------------------------------------------------------------------------ */
/* The writer                                                                                 */

/* Prepared statements: the one-row insert of every table, generated from tables.sql
 * (OP_DB_INSERTS, tables_gen.h: ST_<TABLE>, parameters P_<TABLE>_<COLUMN>), then the writer's
 * other statements (their text: k_other_statements in writer.c). */
#define OP_DB_ST_ENUM(ST, SQL) ST,
enum {
    OP_DB_INSERTS(OP_DB_ST_ENUM)
    ST_STRING_SEL, ST_THREAD_START, ST_THREAD_END, ST_THREAD_NAME, ST_KSYM_UPD, ST_STACK_SEL,
    ST_PROCESS_RANK, ST_QUEUE_CTX, ST_BEGIN, ST_COMMIT, ST__COUNT
};
#undef OP_DB_ST_ENUM

struct op_db_writer {
    /* configuration (immutable after open) */
    char *path;
    char uuid[40];
    char suffix[48];
    op_db_writer_options opts;
    uint64_t replaced_at_open; /* op_db_files_replaced() when it opened */
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
    _Atomic uint64_t stop_ns;  /* when close was asked (the close's trace line) */
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
    op_db_rowq rowq[Q__COUNT];
    int txn_open;
    uint64_t txn_start_ns, txn_rows;
    int wal_pages; /* pages in the WAL after the last commit (writer.c: checkpoints) */
    int64_t cat_id[OMNIPROF_BUFFER_TRACING_LAST];
    op_u64map threads, streams, queues, queue_ctx, stream_agents, agents, kernels, kernel_names, code_objects, opnames, tracks, metric_tracks,
        pmcs;
    int64_t cpu_agent_row; /* the first CPU agent's row: the host side of copies */
    dispatch_entry *dispatchcache;
    int64_t cat_counter_id, cat_counter_device_id;
    strcache_entry *strcache;
    stack_entry *stackcache;
    char *scratch; /* OP_DB_MAX_STRING * 6 + 512 bytes for JSON text */
    size_t scratch_len;
    char *kname;   /* OP_DB_MAX_STRING bytes: a kernel's display name (op_db_kernel_display_name) */
    const uint8_t *rec_base; /* the payload being ingested, in the spool (op_db_str) */
    uint64_t rec_span;       /* its bytes, strings included */
};

/* ---------------------------------------------------------------- writer.c */
void op_db_writer_fail(op_db_writer *w, const char *what, int rc); /* W5: once, then off */
int op_db_failed(const op_db_writer *w);
/* Run a prepared statement once (bindings already set). Returns 0 or -EIO (writer off). */
int op_db_step(op_db_writer *w, int which, const char *what);
int op_db_txn_begin(op_db_writer *w);
int op_db_txn_commit(op_db_writer *w);
void op_db_seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline int64_t op_db_last_id(op_db_writer *w) { return sqlite3_last_insert_rowid(w->db); }

/* ---------------------------------------------------------------- writer_process.c */
int op_db_write_identity(op_db_writer *w, const op_db_process_info *info, char *err, size_t errlen);
void op_db_write_final_rows(op_db_writer *w);
void op_db_symbolize_stacks(op_db_writer *w);

/* ---------------------------------------------------------------- writer_append.c */
void op_db_wake_ingest(op_db_writer *w);

/* ---------------------------------------------------------------- ingest.c */
/* One spool record -> rows. 0, or -1 when the writer turned off. */
int op_db_ingest_record(op_db_writer *w, const op_db_rec *rec);
/* The row of (category, kind) in kinds.def or ingest_kinds.def; NULL if none declares it. */
const op_kind_info *op_db_kind_info(uint32_t category, uint32_t kind);
/* Offsets of its `const char *` members within psize bytes (op_kind_string_fields). */
size_t op_db_string_fields(uint32_t category, uint32_t kind, uint64_t psize, uint32_t *out);
/* The string a `const char *` field of the record being ingested stands for (NULL for none). */
const char *op_db_str(const op_db_writer *w, const char *const *field);
/* An event row; extdata NULL means '{}'. Returns its id or -1. */
int64_t op_db_insert_event(op_db_writer *w, uint32_t kind, uint64_t stack_id, uint64_t parent, uint64_t corr,
                           const char *extdata, size_t extlen);
/* A region (start != end) or an instant: marks on the thread's track of their kind (the message
 * is in the event's extdata), other zero-length calls on a track named by the call. */
int op_db_insert_region_or_sample(op_db_writer *w, uint32_t kind, int64_t thread, uint64_t start, uint64_t end,
                                  int64_t name_id, int64_t event_id);
/* An instant (rocpd_sample) on a track. Returns its id or -1. */
int64_t op_db_insert_sample(op_db_writer *w, int64_t track, uint64_t timestamp, int64_t event_id);

int op_db_insert_run_cost(op_db_writer *w, const char *name, double value, const char *units); /* ingest_host.c */
/* The counter track of metric `name_id` under `key` (unique per metric and device), created
 * at first use with extdata ext[0..extlen) (ingest_host.c). Its row id, or -1. */
int64_t op_db_metric_track(op_db_writer *w, int64_t name_id, uint64_t key, const char *ext, size_t extlen);
/* One value on a counter track (omniprof_metric); `what` names the insert in the error line. 0 or -1. */
int op_db_insert_metric_value(op_db_writer *w, int64_t track, uint64_t timestamp, double value, const char *what);
int op_db_insert_drops(op_db_writer *w, const char *buffer, const char *cause, uint64_t count);

/* Ingest functions, one per INGEST name of kinds.def / ingest_kinds.def (declared there). */
#define OP_DB_INGEST_DECL(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) \
    int op_db_ingest_##INGEST(op_db_writer *w, const PAYLOAD *r, uint64_t psize);
#define OMNIPROF_BUFFER_KIND OP_DB_INGEST_DECL
#define OMNIPROF_COUNTER_KIND OP_DB_INGEST_DECL
#include "omniprof/kinds.def"
#define OP_DB_INTERNAL_KIND OP_DB_INGEST_DECL
#include "db/ingest_kinds.def"

/* ---------------------------------------------------------------- rows.c */
/* Queue q's statements from the one-row statement `st` (its SQL, expanded); ids: the table's
 * rows are referenced by id. 0 or an errno value with err set. */
int op_db_rows_prepare(op_db_writer *w, int q, int st, const char *one_row_sql, int ids, char *err, size_t errlen);
void op_db_rows_free(op_db_writer *w);
/* Drops what is queued (the writer turned off: the transaction is rolled back). */
void op_db_rows_discard(op_db_writer *w);
/* Writes queue q / every queue. 0, or -EIO when the writer turned off. */
int op_db_rows_flush(op_db_writer *w, int q);
int op_db_rows_flush_all(op_db_writer *w);
/* Room for one row of queue q (its cells, in the statement's parameter order), writing the
 * queue first when it is full; *id (if id) = the row's id. NULL when the writer is off. Every
 * cell must be set. */
op_db_cell *op_db_row(op_db_writer *w, int q, int64_t *id);
static inline void op_db_set_int(op_db_cell *c, int64_t v) { c->type = OP_DB_CELL_INT; c->i = v; }
static inline void op_db_set_real(op_db_cell *c, double v) { c->type = OP_DB_CELL_REAL; c->d = v; }
static inline void op_db_set_null(op_db_cell *c) { c->type = OP_DB_CELL_NULL; }
static inline void op_db_set_id(op_db_cell *c, int64_t id) /* id <= 0: NULL */
{
    c->type = id > 0 ? OP_DB_CELL_INT : OP_DB_CELL_NULL;
    c->i = id;
}
/* Text s[0..n) (n < 0: up to its NUL; NULL: SQL NULL) into cell c of queue q's last row.
 * OP_DB_TEXT_STABLE: s stays valid until the queue is written (a literal, a string of the spool
 * record being ingested), else it is copied; OP_DB_TEXT_CLEAN: s is known to be valid UTF-8
 * (text the writer built), else it is checked and escaped when it must be. */
#define OP_DB_TEXT_STABLE 1u
#define OP_DB_TEXT_CLEAN 2u
void op_db_set_text(op_db_writer *w, int q, op_db_cell *c, const char *s, int n, unsigned flags);

/* ---------------------------------------------------------------- strings.c */
/* The rocpd_string id of s[0..n) / of s: cache, then database, then insert. -1 on failure. */
int64_t op_db_intern_n(op_db_writer *w, const char *s, size_t n);
int64_t op_db_intern(op_db_writer *w, const char *s);
const char *op_db_kind_name(const op_db_writer *w, uint32_t kind);
const char *op_db_mem_kind_name(uint32_t k);
/* Keep a new row's id in one of the writer's maps: the id, or -1 (the writer turns off) when
 * memory runs out. `what` names the row for the error ("a thread"). */
int64_t op_db_remember(op_db_writer *w, op_u64map *m, uint64_t key, int64_t id, const char *what);
int64_t op_db_op_name_id(op_db_writer *w, uint32_t kind, int32_t op); /* cached per (kind, op) */
int64_t op_db_thread_row(op_db_writer *w, uint64_t tid);               /* created at first sight (W2) */
int64_t op_db_stream_row(op_db_writer *w, uint64_t handle);
/* The rocpd_info_queue row of (stream handle, agent row): one queue per CUDA stream and device,
 * as AMD models a HSA queue. agent_row 0: the device of the stream's first queue (work that names
 * no device, e.g. a host-to-host copy). OP_DB_UNKNOWN_STREAM: work whose stream is not known. */
#define OP_DB_UNKNOWN_STREAM UINT64_MAX
int64_t op_db_queue_row(op_db_writer *w, uint64_t stream_handle, int64_t stream_row, int64_t agent_row);
int64_t op_db_agent_row(op_db_writer *w, uint64_t handle);             /* 0 when never added */
void op_db_bind_id_or_null(sqlite3_stmt *s, int i, int64_t id);        /* id <= 0: NULL */
int64_t op_db_instant_track(op_db_writer *w, int64_t thread, uint32_t kind, int64_t name_id);
int64_t op_db_stack_node(op_db_writer *w, int64_t parent, uint64_t address, int depth);
/* Text columns hold valid UTF-8 (common/text.h: invalid bytes escaped reversibly). Binds s[0..n)
 * (n < 0: up to its NUL; s NULL: SQL NULL) as text, escaped when it must be; `d` as for
 * sqlite3_bind_text when it needs no escaping. */
void op_db_bind_text(sqlite3_stmt *st, int i, const char *s, int n, sqlite3_destructor_type d);
/* The text of s[0..n) JSON-escaped (common/escape.h) into dst[0..cap) at `at`, keeping 8 bytes
 * free; the new end offset. */
size_t op_db_json_text(char *dst, size_t at, size_t cap, const char *s, size_t n);
/* op_db_json_text into w->scratch. */
static inline size_t op_db_json_escape(op_db_writer *w, size_t at, const char *s, size_t n)
{
    return op_db_json_text(w->scratch, at, w->scratch_len, s, n);
}
/* The name a kernel is shown by (opts.kernel_names, opts.truncate_kernel_names). */
const char *op_db_kernel_display_name(op_db_writer *w, const char *mangled, const char *demangled);

#endif /* OMNIPROF_DB_WRITER_INTERNAL_H */
