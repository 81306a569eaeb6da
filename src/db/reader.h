/* reader.h — the database reader: every query that the output library (and, through it, the
 * omniprof binary and the Python package) runs over rocpd databases. docs/architecture.md: src/db is the
 * only code that knows SQL; the output sinks consume the rows declared here and never see a
 * statement. Nothing here includes sqlite3.h: callers need not link or know SQLite.
 *
 * The input model: an input FILE holds one or more table SETS. A set is the rocpd tables of one
 * profiled process, all named <base><suffix> where <suffix> is "_<uuid>" (omniprof and
 * rocprofv3) — a merged file holds many sets. Sets are found by their rocpd_metadata<suffix>
 * tables; every query here names the suffixed tables directly, so an input's own views
 * (untrusted SQL) are never executed by conversions. Inputs are untrusted: opened read-only,
 * defensive, trusted_schema off (reader.c says how and in which order they are checked).
 *
 * Statuses: functions returning int give OP_RD_OK, OP_RD_EINPUT (a bad input: not a database,
 * truncated, corrupt, unexpected schema) or OP_RD_EFAIL (out of memory, I/O), with one line in
 * err naming the input. They equal the output library's OP_OUT_* codes.
 *
 * Row pointers (names, texts) stay valid until the next call on the same object. One op_src
 * is used by one thread at a time; different op_src may be used from different threads. */
#ifndef OMNIPROF_DB_READER_H
#define OMNIPROF_DB_READER_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "db/tables_gen.h"

#define OP_RD_OK 0
#define OP_RD_EFAIL 1
#define OP_RD_EINPUT 2

struct sqlite3;
struct sqlite3_stmt;

/* ---- inputs and table sets (reader.c) ---------------------------------------------------- */
/* The tables, T_<NAME> in src/db/schema/tables.sql's order: generated from that file (tables_gen.h,
 * src/db/gen_tables.py), the one list of them. */
enum op_src_table {
#define OP_SRC_TABLE_ENUM(E, NAME) E,
    OP_DB_TABLES(OP_SRC_TABLE_ENUM)
#undef OP_SRC_TABLE_ENUM
    T_COUNT
};
_Static_assert(T_COUNT <= 64, "op_src_set.have is a 64-bit mask of the tables");
/* Base names of the tables, in enum order ("rocpd_metadata", ...). */
extern const char *const op_src_table_base[T_COUNT];

/* A set of a merged file (op_db_merge) is one process's rows inside the file's one table set:
 * per table, a range of ids (reader_merge.c); its name[t] is then a subquery over that range,
 * "(SELECT * FROM "base<tables>" WHERE id BETWEEN lo AND hi)", usable wherever a table name is
 * (FROM / JOIN), and its suffix is the tables' suffix + "_p<k>" (unique, for temporary tables
 * named after a set). Row ids in the file are the process's own plus shift[t]: every id the
 * reader gives out (op_ev, op_thread_info, ...) is the process's own, as in the database it
 * wrote, and every id it takes (lookups) too; SQL inside the reader works on file ids. */
typedef struct op_src_set {
    int flows_built;         /* reader_events.c made its flow tables for this set */
    int mpi_flows_built;     /* reader_mpi.c made its table of MPI message keys for this set */
    char suffix[96];         /* "_0190..." (validated: [A-Za-z0-9_]) */
    char guid[96];           /* from rocpd_metadata guid/uuid, may be "" */
    uint64_t have;           /* bit i: table i exists */
    char name[T_COUNT][200]; /* quoted "base<suffix>", or a merged set's subquery */
    int merged;              /* 1: a process of a merged file (above) */
    char tables[96];         /* the suffix of the physical tables (suffix, unless merged) */
    int64_t lo[T_COUNT], hi[T_COUNT]; /* merged: the ids of the set's rows of table t */
    int64_t shift[T_COUNT];  /* merged: file id - the process's own id (0 otherwise) */
} op_src_set;

typedef struct op_src {
    struct sqlite3 *db;
    char *path;
    size_t n_sets;
    op_src_set *sets;
} op_src;

#define SRC_HAS(set, t) (((set)->have >> (t)) & 1u)

/* Opens one input read-only and defensively and finds its table sets.
 * OP_RD_OK, OP_RD_EINPUT (not a db / truncated / corrupt / no rocpd tables) or OP_RD_EFAIL. */
int op_src_open(const char *path, op_src **out, char *err, size_t errlen);
void op_src_close(op_src *s);
/* 1 when `path` is a database that holds no rocpd table set — an empty (0-byte) file, or a
 * readable SQLite database without rocpd_metadata<uuid>/rocpd_string<uuid> tables (what a
 * process killed before its schema was written leaves) — else 0. */
int op_src_lacks_tables(const char *path);
/* The read-only URI of an input (file:PATH?mode=ro[&immutable=1]; reader.c says when), for a
 * connection with URI filenames on. malloc'ed; NULL when out of memory. */
char *op_src_uri(const char *path);

/* ---- time windows (reader.c) ------------------------------------------------------------- */
/* A resolved window: events are kept per the rule of op_out_window (output.h). active==0: all. */
typedef struct op_win {
    int active;
    int64_t t0, t1;
    int inclusive;
} op_win;
/* Widens [*lo, *hi] by the set's extent: min start / max end over its event tables. */
int op_rd_extent(op_src *s, op_src_set *set, int64_t *lo, int64_t *hi, char *err, size_t errlen);
/* The first region or mark named `name` that ends at or after `after`: *found = min(*found,
 * its start, or its end when want_end). */
int op_rd_marker(op_src *s, op_src_set *set, const char *name, int want_end, int64_t after, int64_t *found,
                 char *err, size_t errlen);

/* ---- events (reader_events.c) -------------------------------------------------------------
 * An op_rd is one statement over one event table of one set, joined (by primary key only) with
 * the tables that give names, threads, processes, agents and correlation ids. Rows come in
 * rowid order, which is the writer's commit order (close to time order; consumers that need
 * strict order — none of the formats does — must sort). Each op_rd_next() fills an op_ev whose
 * pointers stay valid until the next call. */
/* EV_PC: GPU PC samples (omniprof_pc_sample rows: name = kernel, category = stall reason);
 * EV_UM: unified-memory events (omniprof_unified_memory: name = operation, category = cause). */
enum op_ev_kind { EV_REGION, EV_SAMPLE, EV_KERNEL, EV_COPY, EV_ALLOC, EV_PMC, EV_METRIC, EV_PC, EV_UM, EV_KINDS };
extern const char *const op_ev_kind_name[EV_KINDS];

typedef struct op_ev {
    int kind;
    int64_t start, end;            /* samples/metrics/pmc: start == end */
    int64_t name_id;               /* string id (kernels: kernel symbol id; pmc: pmc id; metric: track id) */
    const unsigned char *name;     /* NULL when the reader runs without text */
    int name_len;
    int64_t category_id;           /* regions/samples: rocpd_event.category_id */
    const unsigned char *category; /* text mode */
    int category_len;
    int64_t thread_row, process_row; /* rocpd_info_thread.id, rocpd_info_process.id */
    int64_t pid, tid;              /* OS ids (0 unknown) */
    int64_t corr;                  /* correlation id: rocpd_event.stack_id (0 none) */
    int64_t ext_corr;              /* rocpd_event.correlation_id */
    int64_t agent_id, agent_index; /* row id / logical index (-1 unknown) */
    int64_t stream_id, queue_id, dispatch_id, kernel_id;
    int64_t region_name_id;        /* kernels: the dispatch's own name (string id; 0 none), in
                                    * every mode: text mode names the kernel by it when set */
    int64_t grid[3], block[3];
    int64_t lds, scratch, vgpr, accum_vgpr, sgpr;
    int64_t size, address;
    int64_t src_agent_index, dst_agent_index;
    const char *alloc_type, *alloc_level;
    double value;                  /* pmc, metrics */
    int cpu_sample;                /* samples: 1 when an omniprof_cpu_sample row is this sample (a CPU call-stack sample) */
    int64_t cpu_stack;             /* ... its omniprof_cpu_sample.stack_id (0: empty stack) */
    int flow;                      /* OP_RD_FLOWS: this region starts, this kernel or copy ends the flow of corr */
    /* OP_RD_FLOWS, MPI_API regions: the point-to-point messages this call sends or receives (or, a
     * wait or test, completes), read with op_rd_mpi_flow_next; NULL when none */
    const unsigned char *mpi_flows;
    int mpi_flows_len;
    /* EV_PC: dispatch_id, kernel_id, corr (the dispatch's launching call) and these */
    const unsigned char *instruction, *file; /* text mode; may be NULL */
    int instruction_len, file_len;
    int64_t pc_offset, code_object, line, pc_samples, method;
    int64_t count;                 /* EV_PC: samples of this (PC, stall reason); EV_UM: the record's value */
    /* EV_UM: size = bytes, address, src_agent_index / dst_agent_index (-1: none) */
} op_ev;

typedef struct op_rd {
    op_src *src;
    op_src_set *set;
    struct sqlite3_stmt *st;
    int kind;
    int text;
    int flows;
    int mpi;   /* regions: the MPI message column (OP_RD_FLOWS on a set with MPI rows) */
    int sorted;
} op_rd;

/* Flags of op_rd_open. OP_RD_FLOWS sets op_ev.flow on regions, kernels and copies: a flow joins
 * an API call to the GPU work it caused exactly when both are read (within the window): its start
 * is the first non-marker region with the correlation id, its end the earliest-starting kernel or
 * copy with it; every start has its end and every end its start (reader_events.c). */
/* On regions it also fills op_ev.mpi_flows (reader_mpi.c): each MPI message by a key both of its
 * ends compute alone, from their own process's rows. */
#define OP_RD_TEXT 1
#define OP_RD_FLOWS 2
/* OP_RD_MPI: on regions, op_ev.mpi_flows only (OP_RD_FLOWS's MPI part, without the GPU flows'
 * TEMP tables and joins: `omniprof analyze` pairs launches by correlation id itself). */
#define OP_RD_MPI 8
/* OP_RD_SORTED: rows in the order of their timeline — regions by (thread row, start, end
 * descending: an enclosing region before those it encloses), kernels and copies by (queue id,
 * stream id, start) with NULL ids as 0, allocations and counter values by (agent row, start),
 * samples by (track, timestamp), metric values by timestamp. SQLite sorts in its temporary store
 * (bounded memory, O(n log n)). For writers whose format needs ordered events (OTF2). */
#define OP_RD_SORTED 4
/* Prepares the reader of `kind` over `set` (returns 1 when the set has no such table: *rd is
 * then empty and op_rd_next returns 0). flags: OP_RD_TEXT joins names, OP_RD_FLOWS. Negative
 * status on failure. */
int op_rd_open(op_rd *rd, op_src *src, op_src_set *set, int kind, const op_win *w, int flags,
               char *err, size_t errlen);
/* 1 row, 0 end, -OP_RD_EINPUT on a read failure (err filled). */
int op_rd_next(op_rd *rd, op_ev *ev, char *err, size_t errlen);
void op_rd_close(op_rd *rd);
/* Walks the messages of op_ev.mpi_flows (p = ev->mpi_flows, end = p + ev->mpi_flows_len): for
 * the next one sets *out (1: this region sends it, 0: receives it) and *id (the message's flow
 * id, the same on both ends), and returns where the one after starts; NULL when none is left. */
const unsigned char *op_rd_mpi_flow_next(const unsigned char *p, const unsigned char *end, int *out, uint64_t *id);
/* Pairs the two ends of MPI messages for a writer that must write both or neither (JSON):
 * ends read in any order, from any set or input, wait in a private temporary SQLite database
 * (bounded memory: it spills to a temporary file) until the other end comes. */
typedef struct op_rd_msg_pairs op_rd_msg_pairs;
typedef struct op_rd_msg_end {
    int64_t pid, tid, ts; /* the writer's values for this end */
} op_rd_msg_end;
/* NULL on failure (err filled). */
op_rd_msg_pairs *op_rd_msg_pairs_new(char *err, size_t errlen);
/* One end of message `id` (out 1: the send's). 1 when the other end came before: *other holds
 * it, and the message is done (later ends of it are ignored); 0 when this end now waits (or the
 * message is done, or this end came already); -1 on failure (err filled). */
int op_rd_msg_pairs_add(op_rd_msg_pairs *m, uint64_t id, int out, const op_rd_msg_end *end, op_rd_msg_end *other,
                        char *err, size_t errlen);
void op_rd_msg_pairs_free(op_rd_msg_pairs *m);
/* MPI calls and request completions (omniprof_comm rows of api 'MPI', in row order) for writers
 * that encode communication (OTF2): a row's region is the region of the set whose op_ev.corr is
 * `stack` (calls); a completion has no region, its `parent` is the wait's or test's stack id.
 * Ranks are world ranks; an unknown rank, tag or communicator is -1 (tags: INT64_MIN). */
typedef struct op_mpi_op {
    int64_t thread_row;       /* own rocpd_info_thread id */
    int64_t stack, parent;    /* rocpd_event stack_id, parent_stack_id (0 none) */
    const char *name, *klass; /* "MPI_Isend", "send" */
    int complete;             /* 1: phase 'complete' */
    int64_t start, end;
    int64_t rank, comm, comm_rank, comm_size, dest, source, root;
    int64_t send_tag, recv_tag, bytes_sent, bytes_received, request;
} op_mpi_op;
int op_rd_mpi_ops(op_src *src, op_src_set *set, int (*cb)(const op_mpi_op *, void *), void *arg,
                  char *err, size_t errlen);
/* Number of rows of one kind in a set (within the window): for progress and tests. */
int64_t op_rd_count(op_src *src, op_src_set *set, int kind, const op_win *w);

/* ---- descriptions of a set: threads, agents, processes (reader.c) ------------------------- */
typedef struct op_thread_info {
    int64_t thread_row, process_row, pid, tid;
    const unsigned char *thread_name, *command, *hostname;
} op_thread_info;
/* Calls cb for each thread of the set in id order; stops at a non-zero return. */
int op_rd_threads(op_src *src, op_src_set *set, int (*cb)(const op_thread_info *, void *), void *arg,
                  char *err, size_t errlen);

/* The numeric properties of an agent that rocprofv3's agent_info.csv lists between Agent_Type
 * and Name, in its order: the CSV column name and the key of the agent's extdata JSON (the
 * fields of rocprofiler_agent_v0_t, which omniprof's writer and rocprofv3's both store). */
#define OP_AGENT_PROPS 46
typedef struct op_agent_prop {
    const char *csv, *json;
} op_agent_prop;
extern const op_agent_prop op_agent_props[OP_AGENT_PROPS];

typedef struct op_agent_info {
    int64_t absolute_index, logical_index; /* logical_index: the absolute one when unset */
    const unsigned char *type;             /* "GPU", "CPU", ... (may be NULL) */
    const unsigned char *text[4];          /* name, vendor_name, product_name, model_name (may be NULL) */
    int text_len[4];
    int64_t prop[OP_AGENT_PROPS];          /* op_agent_props from extdata (0 when absent) */
} op_agent_info;
/* Calls cb for each agent of the set in id order; stops at a non-zero return. */
int op_rd_agents(op_src *src, op_src_set *set, int (*cb)(const op_agent_info *, void *), void *arg, char *err,
                 size_t errlen);

typedef struct op_process_info {
    int64_t os_pid;  /* the process row itself when the set has no process table */
    int64_t rank;    /* MPI rank recorded in the process's extdata, -1 when none */
    char host[128];  /* "" when unknown */
    int has_realtime, has_boottime;         /* the offsets below were recorded */
    int64_t realtime_offset_ns, boottime_offset_ns; /* CLOCK_REALTIME / CLOCK_BOOTTIME - CLOCK_MONOTONIC */
} op_process_info;
/* The process of row `process_row` in the set (0 and info filled even when it is absent). */
int op_rd_process(op_src *src, op_src_set *set, int64_t process_row, op_process_info *info);

/* ---- lookups by id within one set (reader.c) ----------------------------------------------
 * Statements prepared on first use and kept until op_rd_lookup_free; a failed lookup gives the
 * documented default, never an error (a dangling id in a damaged input names nothing). */
typedef struct op_rd_lookup op_rd_lookup;
op_rd_lookup *op_rd_lookup_new(op_src *src, op_src_set *set); /* NULL when out of memory */
void op_rd_lookup_free(op_rd_lookup *lk);                     /* NULL is fine */
/* rocpd_string text of `id` ("" when absent). */
const unsigned char *op_rd_lookup_string(op_rd_lookup *lk, int64_t id, int *len);
/* The display (else mangled) name of kernel symbol `id` ("" when absent). */
const unsigned char *op_rd_lookup_kernel(op_rd_lookup *lk, int64_t id, int *len);
/* The logical (else absolute) index of agent row `agent_id`; agent_id itself when unknown. */
int64_t op_rd_lookup_agent_index(op_rd_lookup *lk, int64_t agent_id);
/* Describes CPU call stack `stack` (reader_stacks.c): `leaf` receives the innermost function
 * ("[no stack]" for an empty stack), `text` (emptied first) the frames innermost first, one per
 * line. Bounded: at most 512 frames, text up to about 64 KiB. */
void op_rd_lookup_stack(op_rd_lookup *lk, int64_t stack, op_buf *text, char *leaf, size_t leaflen);

/* ---- statistics (reader_stats.c) -----------------------------------------------------------
 * One aggregate row per (process group, category, name) of the set's regions, kernels, copies
 * and allocations inside the window; the caller merges them across sets. */
typedef struct op_rd_stat_row {
    int table;                     /* T_REGION, T_KERNEL_DISPATCH, T_MEMORY_COPY or T_MEMORY_ALLOCATE */
    int64_t group;                 /* the process row (by_process), else 0 */
    const unsigned char *category; /* regions: the category text (may be NULL) */
    const unsigned char *name;     /* name; kernels without symbols "kernel N"; allocs the type */
    size_t name_len;
    uint64_t calls;
    double total, sumsq;           /* durations in ns, their squares */
    int64_t min, max;
} op_rd_stat_row;
int op_rd_stats(op_src *src, op_src_set *set, const op_win *w, int by_process,
                int (*cb)(const op_rd_stat_row *, void *), void *arg, char *err, size_t errlen);

/* ---- causal profiling (reader_causal.c) --------------------------------------------------- */
/* One (experiment, progress point) pair; the point fields are unset (point NULL) for an
 * experiment without any point. Texts are valid until the next row. */
typedef struct op_rd_causal_row {
    int64_t process;                /* the experiment's pid column (its process row) */
    uint64_t experiment;            /* its index in the process */
    const char *mode;               /* "line", "function", "end_to_end" */
    const char *selected;           /* "file:line" or the function */
    double speedup;                 /* 0..1 */
    int64_t start, end, duration, delay, selected_samples;
    const char *point;              /* the progress point, NULL: none */
    int latency;                    /* 1: a latency point (arrivals, departures, difference) */
    int64_t delta, arrivals, departures, difference;
} op_rd_causal_row;
/* Calls cb for each row of the set's causal tables in experiment order (0 rows when the set
 * has none); cb returns non-zero to stop (negative: a failure, reported as OP_RD_EFAIL). */
int op_rd_causal(op_src *src, op_src_set *set, int (*cb)(const op_rd_causal_row *, void *), void *arg, char *err,
                 size_t errlen);

/* ---- GPU sampling aggregates (reader_gpu.c) ------------------------------------------------ */
/* One row of one question about a set's GPU sampling tables (texts valid until the next row):
 *   OP_RD_GPU_PC_STALLS       a kernel, b stall reason;              v0 samples
 *   OP_RD_GPU_PC_LINES        a kernel, c file, line;                v0 samples
 *   OP_RD_GPU_SASS_LINES      a kernel, c file, line;                v0 inst_executed,
 *                             v1 thread_inst_executed, v2 SASS instructions of the line
 *   OP_RD_GPU_UNIFIED_MEMORY  a operation;                           v0 events, v1 bytes, v2 ns, v3 sum of values
 *   OP_RD_GPU_PM              a metric, b units, line = device;      v0 samples, v1 min, v2 mean, v3 max
 * Rows are grouped within the set and inside the window (NULL: all); the caller merges sets. */
enum { OP_RD_GPU_PC_STALLS, OP_RD_GPU_PC_LINES, OP_RD_GPU_SASS_LINES, OP_RD_GPU_UNIFIED_MEMORY, OP_RD_GPU_PM };
typedef struct op_rd_gpu_row {
    const char *a, *b, *c;
    int64_t line;
    double v[4];
} op_rd_gpu_row;
/* cb returns non-zero to stop (negative: a failure, reported as OP_RD_EFAIL). */
int op_rd_gpu_rows(op_src *src, op_src_set *set, int which, const op_win *w,
                   int (*cb)(const op_rd_gpu_row *, void *), void *arg, char *err, size_t errlen);

/* ---- CPU call-stack samples (reader_stacks.c) ---------------------------------------------- */
/* 1 when the set holds at least one omniprof_cpu_sample row. */
int op_rd_has_cpu_samples(op_src *src, op_src_set *set);
/* The pid of the set's process (its first process row, else its first CPU sample), -1 when
 * none, and its MPI rank (-1 when none). */
void op_rd_cpu_process(op_src *src, op_src_set *set, int64_t *pid, int64_t *rank);
/* Every stack node of the set: (id, parent id, address). */
int op_rd_stack_nodes(op_src *src, op_src_set *set, int (*cb)(int64_t id, int64_t parent, uint64_t address, void *),
                      void *arg, char *err, size_t errlen);
typedef struct op_rd_symbol {
    uint64_t address;
    int inline_depth;             /* 0: the physical frame; > 0: inlined callees */
    const char *function, *file;  /* may be NULL or "" */
    int line;
    const char *module;           /* may be NULL or "" */
    uint64_t module_offset;
} op_rd_symbol;
/* Every symbol row of the set ordered by address then inline depth. */
int op_rd_symbols(op_src *src, op_src_set *set, int (*cb)(const op_rd_symbol *, void *), void *arg, char *err,
                  size_t errlen);
/* Samples per stack: (stack id, count) for clock 0 all, 1 CPU-time, 2 real-time, counting only
 * samples with window[0] <= timestamp <= window[1] (window NULL: all). */
int op_rd_stack_counts(op_src *src, op_src_set *set, int clock, const int64_t *window,
                       int (*cb)(int64_t stack, uint64_t count, void *), void *arg, char *err, size_t errlen);
/* A perf_event counter's count per stack (element event_index of the samples' event_values):
 * each sample weighs its thread's increase since the previous sample (reader_stacks.c). */
int op_rd_stack_weights(op_src *src, op_src_set *set, int event_index, int clock,
                        const int64_t *window, int (*cb)(int64_t stack, uint64_t count, void *),
                        void *arg, char *err, size_t errlen);
/* The counters the set's samples carry (omniprof_cpu_sample_event), by event_index. */
int op_rd_sample_events(op_src *src, op_src_set *set,
                        int (*cb)(int index, const char *name, uint32_t type, uint64_t config,
                                  void *),
                        void *arg, char *err, size_t errlen);

/* The region profile (omniprof_region_profile): one row per (thread, region node, component),
 * in the order they were recorded (per thread, parents before children). */
typedef struct op_rd_region_row {
    int64_t tid;          /* the OS thread id */
    int64_t thread_index; /* creation order of the thread (|NN>>>) */
    int64_t node_id, parent_id; /* parent_id 0: the thread's root */
    int depth;
    const char *label, *component, *units;
    uint64_t count;
    double sum, sum_squares, min, max, self;
} op_rd_region_row;
int op_rd_region_profile(op_src *src, op_src_set *set, int (*cb)(const op_rd_region_row *, void *), void *arg,
                         char *err, size_t errlen);

/* ---- for `omniprof analyze` (reader_analyze.c) ----------------------------------------------- */
/* Calls cb for each copy of the set from or to pageable host memory: its correlation id, 1, and
 * whether the call was asynchronous. cb returns non-zero to stop. */
/* 1 when the set recorded MPI calls' messages (an omniprof_comm row of the MPI API), else 0. */
int op_rd_has_mpi(op_src *src, op_src_set *set);
int op_rd_copy_memory_kinds(op_src *src, op_src_set *set,
                            int (*cb)(int64_t corr, int pageable, int is_async, void *), void *arg,
                            char *err, size_t errlen);
/* Calls cb for each SYNCHRONIZATION_STREAM record of the set (a stream synchronize, CUPTI's
 * synchronization activity): its thread row, start, end and the stream row it waited for (the
 * row whose handle or name is the record's stream; 0 when none matches). cb returns non-zero to
 * stop. Nothing is read when the set has no such record. */
int op_rd_stream_syncs(op_src *src, op_src_set *set,
                       int (*cb)(int64_t thread_row, int64_t start, int64_t end, int64_t stream_row,
                                 void *),
                       void *arg, char *err, size_t errlen);
/* Calls cb for each SYNCHRONIZATION_EVENT (wait 1: an event synchronize) and
 * SYNCHRONIZATION_STREAM_WAIT_EVENT (wait 2: a stream's wait for an event) record of the set:
 * its thread row, start, end, the stream row it names (wait 2: the waiting stream; 0 none), the
 * CUDA event id and the recording it waited for (sync_id, 0 not recorded). */
typedef struct op_rd_event_sync {
    int64_t thread_row, start, end, stream_row, cuda_event, sync_id;
    int wait;
} op_rd_event_sync;
int op_rd_event_syncs(op_src *src, op_src_set *set, int (*cb)(const op_rd_event_sync *, void *),
                      void *arg, char *err, size_t errlen);
/* Calls cb for each omniprof_cuda_event row of the set (an event recorded on a stream): the
 * recording call's correlation id, the stream row, the CUDA event id and its sync_id. */
int op_rd_cuda_events(op_src *src, op_src_set *set,
                      int (*cb)(int64_t corr, int64_t stream_row, int64_t cuda_event,
                                int64_t sync_id, void *),
                      void *arg, char *err, size_t errlen);

/* ---- clocks (reader_clock.c) ------------------------------------------------------------------
 * What each process of a set says about its clock (docs/multinode.md, "Clocks"): its MPI
 * estimates against the reference rank (omniprof_clock), its wall-clock offset and its host. */
typedef struct op_rd_clock_est {
    int64_t local, offset, error; /* at local time `local`, the reference read local - offset */
} op_rd_clock_est;
typedef struct op_rd_process_clock {
    int64_t process_row, pid, rank;  /* rank -1: none */
    int64_t file_row;                /* process_row as stored in the file (reader.h, op_src_set) */
    char guid[96], host[160];        /* host: "<machine id>|<host name>" of its node ("" unknown) */
    char clock_domain[160];          /* processes of one (non-empty) domain share CLOCK_MONOTONIC */
    int has_realtime;
    int64_t realtime_offset;         /* CLOCK_REALTIME - CLOCK_MONOTONIC of the process */
    int n;                           /* MPI estimates, by local time (at most 2: init, finalize) */
    op_rd_clock_est est[2];
    int applied;                     /* a merge already moved its times onto the reference clock */
} op_rd_process_clock;
/* Calls cb for each process of the set; stops at a non-zero return (returned). */
int op_rd_clocks(op_src *src, op_src_set *set, int (*cb)(const op_rd_process_clock *, void *), void *arg, char *err,
                 size_t errlen);

/* A process's times onto the reference clock: t' = t - (offset + rate x (t - at)). */
typedef struct op_rd_clock_map {
    int active;
    int64_t offset, at;
    double rate;
} op_rd_clock_map;
static inline int64_t op_rd_clock_apply(const op_rd_clock_map *m, int64_t t)
{
    if (!m || !m->active) return t;
    return t - m->offset - (int64_t)(m->rate * (double)(t - m->at));
}
/* The local time that op_rd_clock_apply maps to t (to ask a process's rows for a window given
 * on the reference clock). */
static inline int64_t op_rd_clock_unapply(const op_rd_clock_map *m, int64_t t)
{
    if (!m || !m->active) return t;
    if (m->rate == 0) return t + m->offset;
    return m->at + (int64_t)((double)(t + m->offset - m->at) / (1.0 - m->rate));
}

/* ---- many inputs as one (reader_union.c, reader_merge.c) ------------------------------------ */
/* Copies every table set of every input into the new database file `tmp_path` (created empty
 * by the caller), all into one table set whose rows keep their process's guid, with ids shifted
 * to stay unique (reader_merge.c says how and what is bounded; a reader sees each process as a
 * set of its own). Cost linear in the rows. The library call behind `omniprof merge`
 * (op_output_merge adds the checks of inputs and output and the clock plan). When clock(arg, input, set) gives an active map
 * for a set (NULL: none), every time column of its rows moves onto the reference clock and its
 * omniprof_clock rows are marked applied. tick(arg) is called after each input; a non-zero
 * return stops the merge ("interrupted", OP_RD_EFAIL). */
typedef const op_rd_clock_map *(*op_db_merge_clock_fn)(void *arg, size_t input, size_t set);
int op_db_merge(const char *const *inputs, size_t n_inputs, const char *tmp_path, int (*tick)(void *),
                op_db_merge_clock_fn clock, void *arg, char *err, size_t errlen);

/* The union of many inputs in one read-only connection: the plain rocpd views (rocpd_region,
 * rocpd_string, ...) and the data/summary/omniprof views (regions, kernels, top, ...) as TEMP
 * views spanning every set of every input. `script` (when not NULL) receives the SQL that
 * builds the same union on another connection opened on ":memory:" with URI filenames on (the
 * Python package runs it): ATTACH statements then CREATE TEMP VIEW statements, each one that
 * succeeded here. More than OP_DB_UNION_MAX_ATTACHED inputs are first merged into a temporary
 * file (tmp_dir/omniprof-union-*.db): its path is in *tmp_path (remove it when done). */
#define OP_DB_UNION_MAX_ATTACHED 9 /* SQLite's default limit is 10 attached databases; one stays free */
typedef struct op_db_union op_db_union;
int op_db_union_open(const char *const *inputs, size_t n_inputs, const char *tmp_path, op_db_union **out,
                     char **script, char *err, size_t errlen);
void op_db_union_close(op_db_union *u);
/* Makes a statement of the union stop within a few thousand SQLite steps once stop() returns
 * non-zero (a SIGINT arrived): op_db_stmt_step then fails with "query failed: interrupted".
 * A query that computes for minutes before its first row (a recursive CTE, a cross join) would
 * otherwise run to its end. stop NULL: never. */
void op_db_union_set_stop(op_db_union *u, int (*stop)(void));

/* A statement over the union: read-only SQL text, one statement at a time. */
typedef struct op_db_stmt op_db_stmt;
/* Prepares the first statement of *sql and moves *sql past it. *st is NULL (and 0 returned)
 * when only whitespace or comments were left. A statement that would write is refused
 * (OP_RD_EINPUT, "refused: queries are read-only ..."); bad SQL too ("bad SQL: ..."). */
int op_db_prepare(op_db_union *u, const char **sql, op_db_stmt **st, char *err, size_t errlen);
int op_db_stmt_columns(op_db_stmt *st);
const char *op_db_stmt_column_name(op_db_stmt *st, int i);
/* 1 row, 0 done, -OP_RD_EINPUT on failure ("query failed: ..."). */
int op_db_stmt_step(op_db_stmt *st, char *err, size_t errlen);
typedef struct op_db_cell {
    enum { OP_CELL_NULL, OP_CELL_INT, OP_CELL_FLOAT, OP_CELL_TEXT, OP_CELL_BLOB } type;
    int64_t i;
    double d;
    const unsigned char *s; /* text or blob bytes */
    size_t n;
} op_db_cell;
void op_db_stmt_cell(op_db_stmt *st, int i, op_db_cell *cell);
void op_db_stmt_free(op_db_stmt *st);

#endif /* OMNIPROF_DB_READER_H */
