/* reader_report.c — the queries behind `omniprof report` (reader_report.h): process and host
 * descriptions, run cost, losses, lean activity rows for the timeline, counters and metric
 * series. Each statement scans one table of one set once; aggregation happens in SQLite
 * (GROUP BY over few groups: costs, losses, counters, metric bins) or in the caller (the
 * timeline's bins, which need an event's time spread over the bins it covers). */
#include <stdio.h>
#include <string.h>

#include "db/reader_internal.h"
#include "db/reader_report.h"

static const char *text_or_empty(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

/* Steps `sql` over the input (op_src_each_row), calling row(st, arg) per row; a non-zero return
 * stops the walk and is returned. */
typedef struct stop_ctx {
    int (*row)(sqlite3_stmt *, void *);
    void *arg;
    int stop;
} stop_ctx;

static int stop_row(sqlite3_stmt *st, void *arg)
{
    stop_ctx *s = arg;
    return s->stop = s->row(st, s->arg);
}

static int each_row(op_src *src, const char *sql, int (*row)(sqlite3_stmt *, void *), void *arg, char *err,
                    size_t errlen)
{
    stop_ctx s = {row, arg, 0};
    int rc = op_src_each_row(src, op_src_prepare(src, sql, err, errlen), stop_row, &s, err, errlen);
    return s.stop ? s.stop : rc;
}

/* ---- processes -------------------------------------------------------------------------- */
static int proc_row(sqlite3_stmt *st, void *arg)
{
    op_rd_cb *c = arg;
    op_rd_proc_desc d = {
        .process_row = op_rd_own_id(c->set, T_PROCESS, sqlite3_column_int64(st, 0)),
        .pid = sqlite3_column_int64(st, 1),
        .ppid = sqlite3_column_int64(st, 2),
        .start = sqlite3_column_int64(st, 3),
        .end = sqlite3_column_int64(st, 4),
        .command = text_or_empty(st, 5),
        .rank = sqlite3_column_type(st, 6) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 6),
        .size = sqlite3_column_type(st, 7) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 7),
        .threads = sqlite3_column_int64(st, 8),
        .host = text_or_empty(st, 9),
        .system = text_or_empty(st, 10),
        .release = text_or_empty(st, 11),
        .hardware = text_or_empty(st, 12),
        .machine_id = text_or_empty(st, 13),
    };
    return ((int (*)(const op_rd_proc_desc *, void *))c->fn)(&d, c->arg);
}

int op_rd_report_processes(op_src *src, op_src_set *set, int (*cb)(const op_rd_proc_desc *, void *), void *arg,
                           char *err, size_t errlen)
{
    if (!SRC_HAS(set, T_PROCESS)) return 0;
    char threads[300], node[700], sql[2400];
    if (SRC_HAS(set, T_THREAD))
        snprintf(threads, sizeof threads, "(SELECT count(*) FROM %s T WHERE T.pid = P.id)", set->name[T_THREAD]);
    else
        snprintf(threads, sizeof threads, "0");
    if (SRC_HAS(set, T_NODE))
        snprintf(node, sizeof node, "N.hostname, N.system_name, N.release, N.hardware_name, N.machine_id FROM %s P "
                 "LEFT JOIN %s N ON N.id = P.nid", set->name[T_PROCESS], set->name[T_NODE]);
    else
        snprintf(node, sizeof node, "NULL, NULL, NULL, NULL, NULL FROM %s P", set->name[T_PROCESS]);
    snprintf(sql, sizeof sql,
             "SELECT P.id, P.pid, P.ppid, COALESCE(P.start, P.init, 0), COALESCE(P.\"end\", P.fini, 0), P.command, "
             "json_extract(CASE WHEN json_valid(P.extdata) THEN P.extdata END, '$.rank'), "
             "json_extract(CASE WHEN json_valid(P.extdata) THEN P.extdata END, '$.size'), %s, %s ORDER BY P.id",
             threads, node);
    op_rd_cb c = OP_RD_CB(cb, arg);
    c.set = set;
    return each_row(src, sql, proc_row, &c, err, errlen);
}

/* ---- run cost and losses ------------------------------------------------------------------- */
static int cost_row(sqlite3_stmt *st, void *arg)
{
    op_rd_cb *c = arg;
    op_rd_cost_row r = {text_or_empty(st, 0), text_or_empty(st, 1), sqlite3_column_double(st, 2)};
    return ((int (*)(const op_rd_cost_row *, void *))c->fn)(&r, c->arg);
}

int op_rd_report_cost(op_src *src, op_src_set *set, int (*cb)(const op_rd_cost_row *, void *), void *arg, char *err,
                      size_t errlen)
{
    if (!SRC_HAS(set, T_OP_RUN_COST)) return 0;
    char sql[400];
    snprintf(sql, sizeof sql, "SELECT name, units, total(value) FROM %s GROUP BY name, units ORDER BY name",
             set->name[T_OP_RUN_COST]);
    op_rd_cb c = OP_RD_CB(cb, arg);
    return each_row(src, sql, cost_row, &c, err, errlen);
}

static int loss_row(sqlite3_stmt *st, void *arg)
{
    op_rd_cb *c = arg;
    op_rd_loss_row r = {text_or_empty(st, 0), sqlite3_column_type(st, 1) == SQLITE_NULL ? NULL : text_or_empty(st, 1),
                        sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4)};
    return ((int (*)(const op_rd_loss_row *, void *))c->fn)(&r, c->arg);
}

int op_rd_report_losses(op_src *src, op_src_set *set, int (*cb)(const op_rd_loss_row *, void *), void *arg,
                        char *err, size_t errlen)
{
    op_rd_cb c = OP_RD_CB(cb, arg);
    char sql[400];
    int rc = 0;
    if (SRC_HAS(set, T_OP_DROPS)) {
        snprintf(sql, sizeof sql, "SELECT buffer, cause, sum(count), 0, 0 FROM %s GROUP BY buffer, cause "
                 "ORDER BY buffer, cause", set->name[T_OP_DROPS]);
        rc = each_row(src, sql, loss_row, &c, err, errlen);
    }
    if (!rc && SRC_HAS(set, T_OP_BACKPRESSURE)) {
        snprintf(sql, sizeof sql, "SELECT buffer, NULL, 0, sum(waits), sum(wait_ns) FROM %s GROUP BY buffer "
                 "ORDER BY buffer", set->name[T_OP_BACKPRESSURE]);
        rc = each_row(src, sql, loss_row, &c, err, errlen);
    }
    return rc;
}

/* ---- activity rows ------------------------------------------------------------------------ */
/* Ids of table t as the process's own; a negative value v stands for row -1 - v (op_rd_span). */
static int64_t own_signed(const op_src_set *set, int t, int64_t v)
{
    return v < 0 ? -1 - op_rd_own_id(set, t, -1 - v) : op_rd_own_id(set, t, v);
}

typedef struct span_ctx {
    op_rd_cb cb;
    int table;
} span_ctx;

static int span_row(sqlite3_stmt *st, void *arg)
{
    span_ctx *c = arg;
    const op_src_set *set = c->cb.set;
    op_rd_span s = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
                    sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5),
                    sqlite3_column_int64(st, 6), NULL, 0};
    if (sqlite3_column_count(st) > 7 && sqlite3_column_type(st, 7) == SQLITE_TEXT) {
        s.mpi_flows = sqlite3_column_text(st, 7);
        s.mpi_flows_len = sqlite3_column_bytes(st, 7);
    }
    if (set && set->merged) {
        int gpu = c->table == T_KERNEL_DISPATCH || c->table == T_MEMORY_COPY;
        s.lane = gpu ? (s.lane < 0 ? own_signed(set, T_AGENT, s.lane) : op_rd_own_id(set, T_STREAM, s.lane))
                     : op_rd_own_id(set, T_THREAD, s.lane);
        s.group = gpu ? op_rd_own_id(set, T_AGENT, s.group) : op_rd_own_id(set, T_STRING, s.group);
        s.name = c->table == T_KERNEL_DISPATCH ? (s.name < 0 ? own_signed(set, T_STRING, s.name) : op_rd_own_id(set, T_KERNEL_SYMBOL, s.name))
                                      : op_rd_own_id(set, T_STRING, s.name);
    }
    return ((int (*)(const op_rd_span *, void *))c->cb.fn)(&s, c->cb.arg);
}

int op_rd_report_spans(op_src *src, op_src_set *set, int table, int (*cb)(const op_rd_span *, void *), void *arg,
                       char *err, size_t errlen)
{
    if (!SRC_HAS(set, table)) return 0;
    op_buf b = {0};
    /* the event's correlation id, where the set has events */
    int ev = SRC_HAS(set, T_EVENT);
    const char *E = ev ? set->name[T_EVENT] : "";
    switch (table) {
    case T_REGION: {
        int flows = op_rd_mpi_flows_possible(set);
        if (flows) {
            int rc = op_rd_mpi_flow_table(src, set, err, errlen);
            if (rc) return rc;
        }
        int comm = SRC_HAS(set, T_OP_COMM);
        if (ev) {
            op_buf_printf(&b, "SELECT X.tid, COALESCE(E.category_id, 0), X.name_id, X.start, X.\"end\", "
                              "COALESCE(E.stack_id, 0), ");
            op_buf_puts(&b, comm ? "COALESCE(C.b, 0)" : "0");
            if (flows) op_rd_mpi_flow_column(&b, set);
            op_buf_printf(&b, " FROM %s X LEFT JOIN %s E ON E.id = X.event_id", set->name[T_REGION], E);
            /* an MPI call's bytes: its rows' sent + received (one aggregate, joined) */
            if (comm)
                op_buf_printf(&b, " LEFT JOIN (SELECT event_id, sum(bytes_sent + bytes_received) AS b FROM %s "
                                  "WHERE phase = 'call' AND event_id IS NOT NULL GROUP BY event_id HAVING b > 0) C "
                                  "ON C.event_id = X.event_id", set->name[T_OP_COMM]);
        } else {
            op_buf_printf(&b, "SELECT tid, 0, name_id, start, \"end\", 0, 0 FROM %s", set->name[T_REGION]);
        }
        break;
    }
    case T_KERNEL_DISPATCH:
        op_buf_printf(&b,
                      "SELECT COALESCE(X.stream_id, -1 - COALESCE(X.agent_id, 0)), COALESCE(X.agent_id, 0), "
                      "CASE WHEN X.region_name_id IS NOT NULL THEN -1 - X.region_name_id ELSE X.kernel_id END, "
                      "X.start, X.\"end\", %s, 0 FROM %s X",
                      ev ? "COALESCE(E.stack_id, 0)" : "0", set->name[T_KERNEL_DISPATCH]);
        if (ev) op_buf_printf(&b, " LEFT JOIN %s E ON E.id = X.event_id", E);
        break;
    case T_MEMORY_COPY:
        op_buf_printf(&b,
                      "SELECT COALESCE(X.stream_id, -1 - COALESCE(X.dst_agent_id, X.src_agent_id, 0)), "
                      "COALESCE(X.dst_agent_id, X.src_agent_id, 0), X.name_id, X.start, X.\"end\", %s, X.size "
                      "FROM %s X",
                      ev ? "COALESCE(E.stack_id, 0)" : "0", set->name[T_MEMORY_COPY]);
        if (ev) op_buf_printf(&b, " LEFT JOIN %s E ON E.id = X.event_id", E);
        break;
    case T_OP_CPU_SAMPLE:
        op_buf_printf(&b, "SELECT tid, 0, 0, timestamp, timestamp, 0, 0 FROM %s", set->name[T_OP_CPU_SAMPLE]);
        break;
    default:
        op_seterr(err, errlen, "op_rd_report_spans: table %d has no activity rows", table);
        return OP_RD_EFAIL;
    }
    op_buf_putc(&b, 0);
    if (b.oom) {
        op_buf_free(&b);
        op_seterr(err, errlen, "out of memory");
        return OP_RD_EFAIL;
    }
    span_ctx c = {OP_RD_CB(cb, arg), table};
    c.cb.set = set;
    int rc = each_row(src, (const char *)b.p, span_row, &c, err, errlen);
    op_buf_free(&b);
    return rc;
}

static int thread_stack_row(sqlite3_stmt *st, void *arg)
{
    op_rd_cb *c = arg;
    return ((int (*)(int64_t, int64_t, uint64_t, void *))c->fn)(
        op_rd_own_id(c->set, T_THREAD, sqlite3_column_int64(st, 0)),
        op_rd_own_id(c->set, T_OP_STACK, sqlite3_column_int64(st, 1)), (uint64_t)sqlite3_column_int64(st, 2), c->arg);
}

int op_rd_report_stack_counts_by_thread(op_src *src, op_src_set *set,
                                        int (*cb)(int64_t thread, int64_t stack, uint64_t count, void *), void *arg,
                                        char *err, size_t errlen)
{
    if (!SRC_HAS(set, T_OP_CPU_SAMPLE)) return 0;
    char sql[400];
    snprintf(sql, sizeof sql, "SELECT tid, stack_id, COUNT(*) FROM %s GROUP BY tid, stack_id ORDER BY tid",
             set->name[T_OP_CPU_SAMPLE]);
    op_rd_cb c = OP_RD_CB(cb, arg);
    c.set = set;
    return each_row(src, sql, thread_stack_row, &c, err, errlen);
}

typedef struct bytes_ctx {
    int (*cb)(int, const char *, double, void *);
    void *arg;
} bytes_ctx;

static int bytes_row(sqlite3_stmt *st, void *arg)
{
    bytes_ctx *c = arg;
    return c->cb(sqlite3_column_int(st, 0), text_or_empty(st, 1), sqlite3_column_double(st, 2), c->arg);
}

int op_rd_report_bytes(op_src *src, op_src_set *set, int (*cb)(int kind, const char *name, double bytes, void *),
                       void *arg, char *err, size_t errlen)
{
    bytes_ctx c = {cb, arg};
    char sql[800];
    int rc = 0;
    if (SRC_HAS(set, T_MEMORY_COPY) && SRC_HAS(set, T_STRING)) {
        snprintf(sql, sizeof sql,
                 "SELECT 0, S.string, total(X.size) FROM %s X JOIN %s S ON S.id = X.name_id GROUP BY X.name_id",
                 set->name[T_MEMORY_COPY], set->name[T_STRING]);
        rc = each_row(src, sql, bytes_row, &c, err, errlen);
    }
    if (!rc && SRC_HAS(set, T_OP_COMM)) {
        snprintf(sql, sizeof sql,
                 "SELECT 1, name, total(bytes_sent + bytes_received) FROM %s WHERE phase = 'call' GROUP BY name",
                 set->name[T_OP_COMM]);
        rc = each_row(src, sql, bytes_row, &c, err, errlen);
    }
    return rc;
}

void op_rd_report_stream_name(op_src *src, op_src_set *set, int64_t id, char *buf, size_t n)
{
    buf[0] = 0;
    if (!SRC_HAS(set, T_STREAM)) return;
    char sql[300], err[8];
    snprintf(sql, sizeof sql, "SELECT name FROM %s WHERE id = ?1", set->name[T_STREAM]);
    sqlite3_stmt *st = op_src_prepare(src, sql, err, sizeof err);
    if (!st) return;
    sqlite3_bind_int64(st, 1, op_rd_file_id(set, T_STREAM, id));
    if (sqlite3_step(st) == SQLITE_ROW) snprintf(buf, n, "%s", text_or_empty(st, 0));
    sqlite3_finalize(st);
}

/* ---- counters ----------------------------------------------------------------------------- */
static int counter_row(sqlite3_stmt *st, void *arg)
{
    op_rd_cb *c = arg;
    op_rd_counter_row r = {
        .kind = sqlite3_column_int(st, 0),
        .track = op_rd_own_id(c->set, T_TRACK, sqlite3_column_int64(st, 1)),
        .name = text_or_empty(st, 2),
        .units = text_or_empty(st, 3),
        .count = (uint64_t)sqlite3_column_int64(st, 4),
        .sum = sqlite3_column_double(st, 5),
        .min = sqlite3_column_double(st, 6),
        .max = sqlite3_column_double(st, 7),
    };
    return ((int (*)(const op_rd_counter_row *, void *))c->fn)(&r, c->arg);
}

int op_rd_report_counters(op_src *src, op_src_set *set, int (*cb)(const op_rd_counter_row *, void *), void *arg,
                          char *err, size_t errlen)
{
    op_rd_cb c = OP_RD_CB(cb, arg);
    c.set = set;
    char sql[1200];
    int rc = 0;
    if (SRC_HAS(set, T_PMC_EVENT) && SRC_HAS(set, T_PMC)) {
        snprintf(sql, sizeof sql,
                 "SELECT 0, 0, P.name, COALESCE(P.units, ''), count(*), total(E.value), min(E.value), max(E.value) "
                 "FROM %s E JOIN %s P ON P.id = E.pmc_id GROUP BY P.name, P.units ORDER BY P.name",
                 set->name[T_PMC_EVENT], set->name[T_PMC]);
        rc = each_row(src, sql, counter_row, &c, err, errlen);
    }
    if (!rc && SRC_HAS(set, T_OP_METRIC) && SRC_HAS(set, T_TRACK) && SRC_HAS(set, T_STRING)) {
        snprintf(sql, sizeof sql,
                 "SELECT 1, K.id, (SELECT string FROM %s WHERE id = K.name_id) || "
                 "COALESCE(' [' || json_extract(CASE WHEN json_valid(K.extdata) THEN K.extdata END, '$.device_index') "
                 "|| ']', ''), "
                 "COALESCE(json_extract(CASE WHEN json_valid(K.extdata) THEN K.extdata END, '$.units'), ''), "
                 "count(*), total(M.value), min(M.value), max(M.value) FROM %s M JOIN %s K ON K.id = M.track_id "
                 "GROUP BY K.id ORDER BY K.id",
                 set->name[T_STRING], set->name[T_OP_METRIC], set->name[T_TRACK]);
        rc = each_row(src, sql, counter_row, &c, err, errlen);
    }
    return rc;
}

typedef struct series_ctx {
    int (*cb)(int64_t, double, void *);
    void *arg;
} series_ctx;

static int series_row(sqlite3_stmt *st, void *arg)
{
    series_ctx *c = arg;
    return c->cb((int64_t)sqlite3_column_double(st, 0), sqlite3_column_double(st, 1), c->arg);
}

int op_rd_report_metric_series(op_src *src, op_src_set *set, int64_t track, int64_t t0, int64_t t1, int bins,
                               int (*cb)(int64_t t, double value, void *), void *arg, char *err, size_t errlen)
{
    if (!SRC_HAS(set, T_OP_METRIC) || bins < 1) return 0;
    double width = (double)(t1 > t0 ? t1 - t0 : 1) / bins;
    char sql[600];
    snprintf(sql, sizeof sql,
             "SELECT avg(timestamp), avg(value) FROM %s WHERE track_id = %lld "
             "GROUP BY CAST((timestamp - %lld) / %.17g AS INTEGER) ORDER BY 1",
             set->name[T_OP_METRIC], (long long)op_rd_file_id(set, T_TRACK, track), (long long)t0, width);
    series_ctx c = {cb, arg};
    return each_row(src, sql, series_row, &c, err, errlen);
}
