/* reader_report.h — the queries behind `omniprof report` (src/output/report*.c): processes and
 * hosts, what the run cost and dropped, the activity of every thread and stream as lean rows
 * for the timeline's bins, and counters. Like every reader query (reader.h), each names one
 * table set's suffixed tables, checks that they exist (a rocprofv3 set may lack some), and
 * reports a read failure as OP_RD_EINPUT with err naming the input.
 *
 * Callbacks return 0 to go on; non-zero stops the walk and is returned (the caller's status).
 * Text pointers in a row stay valid until the callback returns. */
#ifndef OMNIPROF_DB_READER_REPORT_H
#define OMNIPROF_DB_READER_REPORT_H

#include <stdint.h>

#include "db/reader.h"

/* One process of a set, with its host. */
typedef struct op_rd_proc_desc {
    int64_t process_row;            /* rocpd_info_process.id */
    int64_t pid, ppid;              /* OS ids */
    int64_t rank, size;             /* MPI rank and size from extdata, -1 when none */
    int64_t start, end;             /* ns, 0 when unknown */
    int64_t threads;                /* rocpd_info_thread rows of the process */
    const char *command;            /* "" when unknown */
    const char *host, *system, *release, *hardware; /* rocpd_info_node; "" when unknown */
    const char *machine_id;         /* rocpd_info_node.machine_id; "" when unknown */
} op_rd_proc_desc;
int op_rd_report_processes(op_src *src, op_src_set *set, int (*cb)(const op_rd_proc_desc *, void *), void *arg,
                           char *err, size_t errlen);

/* What the run cost (omniprof_run_cost), summed per (name, units) over the set's processes. */
typedef struct op_rd_cost_row {
    const char *name, *units;
    double value;
} op_rd_cost_row;
int op_rd_report_cost(op_src *src, op_src_set *set, int (*cb)(const op_rd_cost_row *, void *), void *arg, char *err,
                      size_t errlen);

/* Records lost (omniprof_drops, per buffer and cause: count) and back-pressure
 * (omniprof_backpressure, per buffer: waits, wait_ns; cause NULL). */
typedef struct op_rd_loss_row {
    const char *buffer, *cause;     /* cause NULL: a back-pressure row */
    int64_t count, waits, wait_ns;
} op_rd_loss_row;
int op_rd_report_losses(op_src *src, op_src_set *set, int (*cb)(const op_rd_loss_row *, void *), void *arg,
                        char *err, size_t errlen);

/* Lean rows of one activity table, in row order, for binning: T_REGION (lane = thread row,
 * group = category string id, 0 when the set has no event table), T_KERNEL_DISPATCH and T_MEMORY_COPY (lane =
 * stream row, or -1 - agent row when the stream is unknown; group = agent row), T_OP_CPU_SAMPLE
 * (lane = thread row, start == end). name = string id (kernels: kernel symbol id, or the
 * region name id of a renamed dispatch as -1 - id). corr: the event's internal correlation id
 * (rocpd_event.stack_id; 0: none; an API call and the kernel or copy it launched share it); bytes: a copy's size, an MPI call's
 * bytes sent + received (0: none); mpi_flows: on regions of MPI calls, the keys of the messages
 * they send or receive (read with op_rd_mpi_flow_next, reader.h), else NULL. */
typedef struct op_rd_span {
    int64_t lane, group, name;
    int64_t start, end;
    int64_t corr, bytes;
    const unsigned char *mpi_flows;
    int mpi_flows_len;
} op_rd_span;
int op_rd_report_spans(op_src *src, op_src_set *set, int table, int (*cb)(const op_rd_span *, void *), void *arg,
                       char *err, size_t errlen);

/* CPU samples per (thread row, stack id), all clocks, in thread order. */
int op_rd_report_stack_counts_by_thread(op_src *src, op_src_set *set,
                                        int (*cb)(int64_t thread, int64_t stack, uint64_t count, void *), void *arg,
                                        char *err, size_t errlen);

/* Bytes moved per name: copies and memsets (kind 0: by their name, the summary's MEMORY_COPY /
 * MEMORY_SET rows) and MPI calls (kind 1: bytes sent + received by each call, by the call's
 * name). */
int op_rd_report_bytes(op_src *src, op_src_set *set, int (*cb)(int kind, const char *name, double bytes, void *),
                       void *arg, char *err, size_t errlen);

/* The name of stream row `id` (rocpd_info_stream.name) into buf ("" when unknown). */
void op_rd_report_stream_name(op_src *src, op_src_set *set, int64_t id, char *buf, size_t n);

/* Counters: hardware counters (kind 0: rocpd_pmc_event per rocpd_info_pmc name) and metrics
 * (kind 1: omniprof_metric per track name, with their units), aggregated. */
typedef struct op_rd_counter_row {
    int kind;
    int64_t track;                  /* metrics: the track row (for op_rd_report_metric_series) */
    const char *name, *units;
    uint64_t count;
    double sum, min, max;
} op_rd_counter_row;
int op_rd_report_counters(op_src *src, op_src_set *set, int (*cb)(const op_rd_counter_row *, void *), void *arg,
                          char *err, size_t errlen);
/* The values of metric track `track` averaged over `bins` equal bins of [t0, t1]: cb(t, value)
 * per non-empty bin, in time order (t: the mean timestamp of the bin's values). */
int op_rd_report_metric_series(op_src *src, op_src_set *set, int64_t track, int64_t t0, int64_t t1, int bins,
                               int (*cb)(int64_t t, double value, void *), void *arg, char *err, size_t errlen);

#endif /* OMNIPROF_DB_READER_REPORT_H */
