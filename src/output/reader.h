/* reader.h — typed, streaming iteration over the events of one table set (reader.c).
 *
 * An op_rd is one SQLite statement over one event table of one set, joined (by primary key
 * only) with the tables that give names, threads, processes, agents and correlation ids. Rows
 * come in rowid order, which is the writer's commit order (close to time order; consumers that
 * need strict order — none of the formats here does — must sort). Each op_rd_next() fills an
 * op_ev whose pointers stay valid until the next call. */
#ifndef OMNIPROF_OUTPUT_READER_H
#define OMNIPROF_OUTPUT_READER_H

#include "output/internal.h"

enum op_ev_kind { EV_REGION, EV_SAMPLE, EV_KERNEL, EV_COPY, EV_ALLOC, EV_PMC, EV_METRIC, EV_KINDS };
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
    int64_t grid[3], block[3];
    int64_t lds, scratch, vgpr, accum_vgpr, sgpr;
    int64_t size, address;
    int64_t src_agent_index, dst_agent_index;
    const char *alloc_type, *alloc_level;
    double value;                  /* pmc, metrics */
    int cpu_sample;                /* samples: 1 when an omniprof_cpu_sample row is this sample (a CPU call-stack sample) */
    int64_t cpu_stack;             /* ... its omniprof_cpu_sample.stack_id (0: empty stack) */
} op_ev;

typedef struct op_rd {
    op_src *src;
    op_src_set *set;
    sqlite3_stmt *st;
    int kind;
    int text;
} op_rd;

/* Prepares the reader of `kind` over `set` (returns 1 when the set has no such table: *rd is
 * then empty and op_rd_next returns 0). text: join names. */
int op_rd_open(op_rd *rd, op_src *src, op_src_set *set, int kind, const op_win *w, int text,
               char *err, size_t errlen);
/* 1 row, 0 end, -OP_OUT_EINPUT on a read failure (err filled). */
int op_rd_next(op_rd *rd, op_ev *ev, char *err, size_t errlen);
void op_rd_close(op_rd *rd);

/* Number of rows of one kind in a set (within the window): for progress and tests. */
int64_t op_rd_count(op_src *src, op_src_set *set, int kind, const op_win *w);

/* One process/thread of a set (for descriptors). */
typedef struct op_thread_info {
    int64_t thread_row, process_row, pid, tid;
    const unsigned char *thread_name, *command, *hostname;
} op_thread_info;
/* Iterates threads (calls cb for each; stops on non-zero return). */
int op_rd_threads(op_src *src, op_src_set *set, int (*cb)(const op_thread_info *, void *), void *arg,
                  char *err, size_t errlen);
/* Looks up a string by id ("" when absent); result valid until the next call. */
const unsigned char *op_rd_string(op_src *src, op_src_set *set, sqlite3_stmt **cache, int64_t id,
                                  int *len);

/* Describes CPU call stack `stack` of the set (stacks.c): `leaf` receives the innermost
 * function ("[no stack]" for an empty stack), `text` (emptied first) the frames innermost
 * first, one per line. *stk_st and *sym_st are statements prepared on first use and kept by
 * the caller for the set (finalize them at its end). */
void op_stack_describe(op_src *src, op_src_set *set, sqlite3_stmt **stk_st, sqlite3_stmt **sym_st, int64_t stack,
                       op_buf *text, char *leaf, size_t leaflen);

#endif /* OMNIPROF_OUTPUT_READER_H */
