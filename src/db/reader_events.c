/* reader_events.c — the SQL behind op_rd (reader.h): one statement per (set, event kind).
 *
 * Column order of every statement (so that op_rd_next reads them by position):
 *   0 start  1 end  2 name_id  3 name  4 category_id  5 category  6 thread_row  7 process_row
 *   8 pid  9 tid  10 corr  11 ext_corr  12 agent_id  13 agent_index  then kind-specific columns.
 * Joins use primary keys only: a table set holds one process, so every row of it has the same
 * guid (the (id, guid) pairs the rocpd views need over UNIONs of sets are implied here; a
 * merged file keeps each process in its own set). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "db/reader_internal.h"

const char *const op_ev_kind_name[EV_KINDS] = {"region", "sample", "kernel", "copy", "alloc", "pmc", "metric",
                                               "pc_sample", "unified_memory"};

/* Each part below writes some of the columns listed at the head of this file; TB(t) is the
 * quoted name of table t of `set`. */
#define TB(t) set->name[t]

/* 2 name_id, 3 name */
static void sql_name(op_buf *b, op_src_set *set, int kind, int text) {
    int has_ev = SRC_HAS(set, T_EVENT);
    switch (kind) {
    case EV_REGION:
    case EV_COPY:
        op_buf_printf(b, "X.name_id, ");
        if (text) op_buf_printf(b, "(SELECT string FROM %s S WHERE S.id = X.name_id), ", TB(T_STRING));
        else op_buf_puts(b, "NULL, ");
        break;
    case EV_ALLOC:
        op_buf_puts(b, "0, NULL, ");
        break;
    case EV_SAMPLE:
        op_buf_printf(b, "TR.name_id, ");
        if (text) {
            op_buf_puts(b, "COALESCE(");
            if (has_ev)
                op_buf_puts(b, "CASE WHEN E.extdata IS NOT NULL AND E.extdata != '{}' AND json_valid(E.extdata) "
                               "THEN json_extract(E.extdata, '$.message') END, ");
            op_buf_printf(b, "(SELECT string FROM %s S WHERE S.id = TR.name_id)), ", TB(T_STRING));
        } else
            op_buf_puts(b, "NULL, ");
        break;
    case EV_KERNEL:
        op_buf_puts(b, "X.kernel_id, ");
        /* the dispatch's region name first: a renamed dispatch (--kernel-rename) is shown by it */
        if (text && SRC_HAS(set, T_KERNEL_SYMBOL))
            op_buf_printf(b, "COALESCE((SELECT string FROM %s RS WHERE RS.id = X.region_name_id), "
                             "(SELECT COALESCE(KS.display_name, KS.kernel_name) FROM %s KS WHERE KS.id = X.kernel_id)), ",
                          TB(T_STRING), TB(T_KERNEL_SYMBOL));
        else
            op_buf_puts(b, "NULL, ");
        break;
    case EV_PMC:
        op_buf_printf(b, "X.pmc_id, (SELECT name FROM %s M WHERE M.id = X.pmc_id), ", TB(T_PMC));
        break;
    case EV_METRIC:
        op_buf_printf(b, "X.track_id, (SELECT string FROM %s S WHERE S.id = TR.name_id), ", TB(T_STRING));
        break;
    case EV_PC:
        op_buf_puts(b, "X.kernel_name_id, ");
        if (text) op_buf_printf(b, "(SELECT string FROM %s S WHERE S.id = X.kernel_name_id), ", TB(T_STRING));
        else op_buf_puts(b, "NULL, ");
        break;
    case EV_UM:
        op_buf_puts(b, "0, X.operation, ");
        break;
    }
}

/* 4 category_id 5 category 6 thread_row 7 process_row 8 pid 9 tid 10 corr 11 ext_corr
 * 12 agent_id 13 agent_index */
static void sql_ids(op_buf *b, op_src_set *set, int kind, int text) {
    char um_agent[512];
    snprintf(um_agent, sizeof um_agent,
             "(CASE WHEN (SELECT A.type FROM %s A WHERE A.id = X.dst_agent_id) = 'GPU' THEN X.dst_agent_id "
             "ELSE X.src_agent_id END)",
             TB(T_AGENT));
    int has_ev = SRC_HAS(set, T_EVENT), has_th = SRC_HAS(set, T_THREAD), has_pr = SRC_HAS(set, T_PROCESS);
    int has_ag = SRC_HAS(set, T_AGENT);
    if ((kind == EV_REGION || kind == EV_SAMPLE) && has_ev) {
        op_buf_puts(b, "E.category_id, ");
        if (text) op_buf_printf(b, "(SELECT string FROM %s C WHERE C.id = E.category_id), ", TB(T_STRING));
        else op_buf_puts(b, "NULL, ");
    } else if (kind == EV_PC) { /* the stall reason */
        op_buf_puts(b, "X.stall_reason_id, ");
        if (text) op_buf_printf(b, "(SELECT string FROM %s C WHERE C.id = X.stall_reason_id), ", TB(T_STRING));
        else op_buf_puts(b, "NULL, ");
    } else if (kind == EV_UM) { /* the cause */
        op_buf_puts(b, "NULL, X.cause, ");
    } else
        op_buf_puts(b, "NULL, NULL, ");
    /* 6 thread_row 7 process_row 8 pid 9 tid */
    const char *xt = "X.tid", *xp = "X.pid";
    if (kind == EV_SAMPLE || kind == EV_METRIC) xt = "TR.tid", xp = "TR.pid";
    if (kind == EV_PMC) xt = "K.tid", xp = "K.pid";
    if (kind == EV_PC || kind == EV_UM) xt = "NULL";
    op_buf_printf(b, "%s, %s, ", xt, xp);
    /* OS ids: only in text mode (the Perfetto sink names tracks by row id and writes the OS
     * ids once, in the thread descriptors) */
    if (!text) op_buf_puts(b, "NULL, NULL, ");
    else {
        if (has_pr) op_buf_printf(b, "(SELECT P.pid FROM %s P WHERE P.id = %s), ", TB(T_PROCESS), xp);
        else op_buf_printf(b, "%s, ", xp);
        if (has_th) op_buf_printf(b, "(SELECT T.tid FROM %s T WHERE T.id = %s), ", TB(T_THREAD), xt);
        else op_buf_printf(b, "%s, ", xt);
    }
    /* 10 corr 11 ext_corr */
    if (kind == EV_PC) op_buf_puts(b, "X.stack_id, NULL, ");
    else if (has_ev && kind != EV_METRIC && kind != EV_UM) op_buf_puts(b, "E.stack_id, E.correlation_id, ");
    else op_buf_puts(b, "NULL, NULL, ");
    /* 12 agent_id 13 agent_index */
    const char *xa = NULL;
    if (kind == EV_KERNEL || kind == EV_ALLOC) xa = "X.agent_id";
    if (kind == EV_COPY) xa = "X.dst_agent_id";
    if (kind == EV_PMC) xa = "K.agent_id";
    if (kind == EV_PC) xa = "X.agent_id";
    if (kind == EV_UM) /* the GPU side: the destination of a migration to a GPU, else the source */
        xa = has_ag ? um_agent : "X.src_agent_id";
    if (xa && has_ag && text)
        op_buf_printf(b, "%s, (SELECT COALESCE(A.logical_index, A.absolute_index) FROM %s A WHERE A.id = %s), ", xa,
                      TB(T_AGENT), xa);
    else
        op_buf_printf(b, "%s, NULL, ", xa ? xa : "NULL");
}

/* kind-specific columns from 14 */
static void sql_kind_columns(op_buf *b, op_src_set *set, int kind, int text) {
    int has_ag = SRC_HAS(set, T_AGENT);
    switch (kind) {
    case EV_KERNEL:
        /* 14 stream 15 queue 16 dispatch 17..19 grid 20..22 block 23 lds 24 scratch 25 vgpr 26 accum 27 sgpr
         * 28 region name id */
        op_buf_puts(b, "X.stream_id, X.queue_id, X.dispatch_id, X.grid_size_x, X.grid_size_y, X.grid_size_z, "
                       "X.workgroup_size_x, X.workgroup_size_y, X.workgroup_size_z, X.group_segment_size, "
                       "X.private_segment_size, ");
        if (SRC_HAS(set, T_KERNEL_SYMBOL) && text)
            op_buf_printf(b, "KS.arch_vgpr_count, KS.accum_vgpr_count, KS.sgpr_count, ");
        else
            op_buf_puts(b, "NULL, NULL, NULL, ");
        op_buf_puts(b, "X.region_name_id ");
        break;
    case EV_COPY:
        /* 14 stream 15 queue 16 size 17 src agent index 18 dst address */
        op_buf_puts(b, "X.stream_id, X.queue_id, X.size, ");
        if (has_ag)
            op_buf_printf(b, "(SELECT COALESCE(A.logical_index, A.absolute_index) FROM %s A WHERE A.id = X.src_agent_id), ",
                          TB(T_AGENT));
        else
            op_buf_puts(b, "NULL, ");
        op_buf_puts(b, "X.dst_address ");
        break;
    case EV_ALLOC:
        /* 14 stream 15 queue 16 size 17 address 18 type 19 level */
        op_buf_puts(b, "X.stream_id, X.queue_id, X.size, X.address, X.type, X.level ");
        break;
    case EV_PMC:
        /* 14 value 15 dispatch 16 stream 17 queue 18 kernel id 19 grid 20 block 21 lds 22 scratch
         * 23 kernel name 24..26 vgpr, accum vgpr, sgpr */
        op_buf_puts(b, "X.value, K.dispatch_id, K.stream_id, K.queue_id, K.kernel_id, "
                       "K.grid_size_x * K.grid_size_y * K.grid_size_z, "
                       "K.workgroup_size_x * K.workgroup_size_y * K.workgroup_size_z, K.group_segment_size, "
                       "K.private_segment_size, ");
        if (SRC_HAS(set, T_KERNEL_SYMBOL))
            op_buf_puts(b, "COALESCE(KS.display_name, KS.kernel_name), KS.arch_vgpr_count, KS.accum_vgpr_count, "
                           "KS.sgpr_count ");
        else
            op_buf_puts(b, "NULL, NULL, NULL, NULL ");
        break;
    case EV_METRIC:
        op_buf_puts(b, "X.value ");
        break;
    case EV_PC:
        /* 14 dispatch 15 kernel id 16 pc offset 17 code object 18 line 19 samples 20 pc samples
         * 21 method 22 instruction 23 file */
        op_buf_puts(b, "X.dispatch_id, X.kernel_id, X.pc_offset, X.code_object_id, X.line, X.samples, X.pc_samples, "
                       "X.method, ");
        if (text)
            op_buf_printf(b, "(SELECT string FROM %s S WHERE S.id = X.instruction_id), "
                             "(SELECT string FROM %s S WHERE S.id = X.file_id) ",
                          TB(T_STRING), TB(T_STRING));
        else
            op_buf_puts(b, "NULL, NULL ");
        break;
    case EV_UM:
        /* 14 bytes 15 address 16 value 17 src agent index 18 dst agent index */
        op_buf_puts(b, "X.bytes, X.address, X.value, ");
        if (has_ag)
            op_buf_printf(b, "(SELECT COALESCE(A.logical_index, A.absolute_index) FROM %s A WHERE A.id = X.src_agent_id), "
                             "(SELECT COALESCE(A.logical_index, A.absolute_index) FROM %s A WHERE A.id = X.dst_agent_id) ",
                          TB(T_AGENT), TB(T_AGENT));
        else
            op_buf_puts(b, "NULL, NULL ");
        break;
    case EV_SAMPLE:
        /* 14 the CPU call stack of a CPU sample (omniprof_cpu_sample.sample_id -> this row) */
        op_buf_puts(b, SRC_HAS(set, T_OP_CPU_SAMPLE) ? "CS.stack_id, CS.id IS NOT NULL " : "NULL, 0 ");
        break;
    default:
        op_buf_puts(b, "NULL ");
        break;
    }
}

/* Flows (OP_RD_FLOWS, reader.h): two TEMP tables per set and connection, made once over the
 * window — op_fg<suffix>: correlation id -> the first stored kernel (kind 2, else copy: 3) with
 * it; op_fa<suffix>: correlation id -> the first stored non-marker region with it, for the ids
 * of op_fg only — one pass over the kernels and copies and one over the regions, in row order
 * (no sort), kept in SQLite's temporary store (about 0.6 s of CPU per million events, in each
 * part of a conversion that reads flows). The flow column of regions, kernels and copies joins
 * them on their primary keys, so a flow is written only where both of its ends are. The
 * connection is read-only (SQLITE_OPEN_READONLY); query_only is lifted only while the TEMP
 * tables are made. */
static int flows_possible(op_src_set *set, int kind) {
    return (kind == EV_REGION || kind == EV_KERNEL || kind == EV_COPY) && SRC_HAS(set, T_EVENT) &&
           SRC_HAS(set, T_REGION) && SRC_HAS(set, T_STRING) && (SRC_HAS(set, T_KERNEL_DISPATCH) || SRC_HAS(set, T_MEMORY_COPY));
}

static int make_flow_tables(op_src *src, op_src_set *set, const op_win *w, char *err, size_t errlen) {
    if (set->flows_built) return 0;
    op_buf b = {0};
    char win[256];
    const char *sx = set->suffix;
    op_buf_printf(&b, "CREATE TEMP TABLE \"op_fg%s\" (corr INTEGER PRIMARY KEY, kind INTEGER, row INTEGER);"
                      "CREATE TEMP TABLE \"op_fa%s\" (corr INTEGER PRIMARY KEY, row INTEGER);", sx, sx);
    if (SRC_HAS(set, T_KERNEL_DISPATCH)) {
        op_win_sql(w, "K.start", "K.\"end\"", win, sizeof win);
        op_buf_printf(&b, "INSERT OR IGNORE INTO \"op_fg%s\" SELECT E.stack_id, 2, K.id FROM %s K JOIN %s E ON "
                          "E.id = K.event_id WHERE E.stack_id > 0 %s;", sx, set->name[T_KERNEL_DISPATCH], set->name[T_EVENT], win);
    }
    if (SRC_HAS(set, T_MEMORY_COPY)) {
        op_win_sql(w, "M.start", "M.\"end\"", win, sizeof win);
        op_buf_printf(&b, "INSERT OR IGNORE INTO \"op_fg%s\" SELECT E.stack_id, 3, M.id FROM %s M JOIN %s E ON "
                          "E.id = M.event_id WHERE E.stack_id > 0 %s;", sx, set->name[T_MEMORY_COPY], set->name[T_EVENT], win);
    }
    op_win_sql(w, "R.start", "R.\"end\"", win, sizeof win);
    op_buf_printf(&b, "INSERT OR IGNORE INTO \"op_fa%s\" SELECT E.stack_id, R.id FROM %s R JOIN %s E ON E.id = "
                      "R.event_id WHERE E.stack_id IN (SELECT corr FROM \"op_fg%s\") AND E.category_id NOT IN "
                      "(SELECT id FROM %s WHERE string LIKE '%%MARKER%%' OR string LIKE '%%NVTX%%') %s;",
                  sx, set->name[T_REGION], set->name[T_EVENT], sx, set->name[T_STRING], win);
    int rc = op_src_exec_temp(src, &b, "reading the flows", err, errlen);
    if (!rc) set->flows_built = 1;
    return rc;
}

int op_src_exec_temp(op_src *src, op_buf *b, const char *what, char *err, size_t errlen) {
    char *sql = op_buf_take(b);
    if (!sql) {
        op_seterr(err, errlen, "out of memory");
        return -OP_RD_EFAIL;
    }
    char *msg = NULL;
    sqlite3_exec(src->db, "PRAGMA query_only=0", NULL, NULL, NULL);
    int rc = sqlite3_exec(src->db, sql, NULL, NULL, &msg);
    sqlite3_exec(src->db, "PRAGMA query_only=1", NULL, NULL, NULL);
    free(sql);
    if (rc != SQLITE_OK) {
        op_seterr(err, errlen, "%s: %s: %s", src->path, what, msg ? msg : sqlite3_errstr(rc));
        sqlite3_free(msg);
        return -OP_RD_EINPUT;
    }
    return 0;
}

/* The flow column (last): 1 when this row is the start (region) or the end (kernel, copy); its
 * joins (sql_flow_joins) come after the others of sql_from, on the TEMP tables' primary keys. */
static void sql_flow_column(op_buf *b, int kind) {
    if (kind == EV_REGION)
        op_buf_puts(b, ", FA.row IS X.id ");
    else
        op_buf_printf(b, ", FG.kind IS %d AND FG.row IS X.id AND FA.corr IS NOT NULL ", kind == EV_KERNEL ? 2 : 3);
}

static void sql_flow_joins(op_buf *b, op_src_set *set, int kind) {
    op_buf_printf(b, "LEFT JOIN temp.\"op_fa%s\" FA ON FA.corr = E.stack_id ", set->suffix);
    if (kind != EV_REGION) op_buf_printf(b, "LEFT JOIN temp.\"op_fg%s\" FG ON FG.corr = E.stack_id ", set->suffix);
}

/* FROM and the joins (tbl: the kind's own table) */
static void sql_from(op_buf *b, op_src_set *set, int kind, int text, const char *tbl) {
    int has_ev = SRC_HAS(set, T_EVENT);
    /* PMC values: kernels drive the join (CROSS JOIN fixes the order) so that SQLite's
     * automatic index is built over the small pmc table, not over the kernels. */
    if (kind == EV_PMC)
        op_buf_printf(b, "FROM %s K CROSS JOIN %s X ON X.event_id = K.event_id ", TB(T_KERNEL_DISPATCH), tbl);
    else
        op_buf_printf(b, "FROM %s X ", tbl);
    if (kind == EV_SAMPLE || kind == EV_METRIC)
        op_buf_printf(b, "JOIN %s TR ON TR.id = X.track_id ", TB(T_TRACK));
    if (kind == EV_SAMPLE && SRC_HAS(set, T_OP_CPU_SAMPLE))
        op_buf_printf(b, "LEFT JOIN %s CS ON CS.sample_id = X.id ", TB(T_OP_CPU_SAMPLE));
    if (kind == EV_KERNEL && SRC_HAS(set, T_KERNEL_SYMBOL) && text)
        op_buf_printf(b, "LEFT JOIN %s KS ON KS.id = X.kernel_id ", TB(T_KERNEL_SYMBOL));
    if (kind == EV_PMC && SRC_HAS(set, T_KERNEL_SYMBOL))
        op_buf_printf(b, "LEFT JOIN %s KS ON KS.id = K.kernel_id ", TB(T_KERNEL_SYMBOL));
    if (has_ev && kind != EV_METRIC && kind != EV_PMC && kind != EV_PC && kind != EV_UM)
        op_buf_printf(b, "LEFT JOIN %s E ON E.id = X.event_id ", TB(T_EVENT));
    if (has_ev && kind == EV_PMC)
        op_buf_printf(b, "LEFT JOIN %s E ON E.id = K.event_id ", TB(T_EVENT));
}

/* OP_RD_SORTED's order (reader.h). */
static void sql_order(op_buf *b, int kind) {
    static const char *const order[EV_KINDS] = {
        [EV_REGION] = "X.tid, X.start, X.\"end\" DESC",
        [EV_SAMPLE] = "X.track_id, X.timestamp",
        [EV_KERNEL] = "COALESCE(X.queue_id, 0), COALESCE(X.stream_id, 0), X.start",
        [EV_COPY] = "COALESCE(X.queue_id, 0), COALESCE(X.stream_id, 0), X.start",
        [EV_ALLOC] = "X.agent_id, X.start",
        [EV_PMC] = "K.agent_id, K.start",
        [EV_METRIC] = "X.timestamp",
        [EV_PC] = "X.agent_id, X.timestamp",
        [EV_UM] = "X.start",
    };
    op_buf_printf(b, " ORDER BY %s", order[kind]);
}

static int make_sql(op_src_set *set, int kind, const op_win *w, int text, int flows, int mpi, int sorted, op_buf *b) {
    static const int tables[EV_KINDS] = {T_REGION, T_SAMPLE, T_KERNEL_DISPATCH, T_MEMORY_COPY, T_MEMORY_ALLOCATE, T_PMC_EVENT, T_OP_METRIC,
                                         T_OP_PC_SAMPLE, T_OP_UNIFIED_MEMORY};
    if (kind < 0 || kind >= EV_KINDS || !SRC_HAS(set, tables[kind])) return 1;
    if ((kind == EV_SAMPLE || kind == EV_METRIC) && !SRC_HAS(set, T_TRACK)) return 1;
    if (kind == EV_PMC && (!SRC_HAS(set, T_KERNEL_DISPATCH) || !SRC_HAS(set, T_PMC))) return 1;
    /* columns 0..1 and the window over them */
    const char *ts = "X.start", *te = "X.\"end\"";
    if (kind == EV_SAMPLE || kind == EV_METRIC || kind == EV_PC) ts = te = "X.timestamp";
    if (kind == EV_PMC) ts = "K.start", te = "K.\"end\"";
    char win[256];
    op_win_sql(w, ts, te, win, sizeof win);
    op_buf_printf(b, "SELECT %s, %s, ", ts, te);
    sql_name(b, set, kind, text);
    sql_ids(b, set, kind, text);
    sql_kind_columns(b, set, kind, text);
    if (mpi) op_rd_mpi_flow_column(b, set);
    if (flows) sql_flow_column(b, kind);
    sql_from(b, set, kind, text, TB(tables[kind]));
    if (flows) sql_flow_joins(b, set, kind);
    op_buf_printf(b, "WHERE 1 %s", win);
    if (sorted) sql_order(b, kind);
    return 0;
}
#undef TB

int op_rd_open(op_rd *rd, op_src *src, op_src_set *set, int kind, const op_win *w, int flags,
               char *err, size_t errlen) {
    memset(rd, 0, sizeof(*rd));
    rd->src = src;
    rd->set = set;
    rd->kind = kind;
    rd->text = flags & OP_RD_TEXT;
    rd->sorted = (flags & OP_RD_SORTED) != 0;
    rd->flows = (flags & OP_RD_FLOWS) && kind >= 0 && kind < EV_KINDS && flows_possible(set, kind);
    if (rd->flows) {
        int frc = make_flow_tables(src, set, w, err, errlen);
        if (frc) return frc;
    }
    rd->mpi = (flags & (OP_RD_FLOWS | OP_RD_MPI)) && kind == EV_REGION &&
              op_rd_mpi_flows_possible(set);
    if (rd->mpi) {
        int frc = op_rd_mpi_flow_table(src, set, err, errlen);
        if (frc) return frc;
    }
    op_buf b = {0};
    int rc = make_sql(set, kind, w, rd->text, rd->flows, rd->mpi, rd->sorted, &b);
    if (rc == 1) {
        op_buf_free(&b);
        return 1;
    }
    char *sql = op_buf_take(&b);
    if (!sql) {
        op_seterr(err, errlen, "out of memory");
        return -OP_RD_EFAIL;
    }
    rd->st = op_src_prepare(src, sql, err, errlen);
    free(sql);
    return rd->st ? 0 : -OP_RD_EINPUT;
}

static int64_t col_i64(sqlite3_stmt *st, int i, int64_t dflt) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? dflt : sqlite3_column_int64(st, i);
}

/* A text column (NULL for SQL NULL) and its length in bytes. */
static const unsigned char *col_text(sqlite3_stmt *st, int i, int *len) {
    const unsigned char *t = sqlite3_column_text(st, i); /* first: bytes then count its UTF-8 form */
    *len = sqlite3_column_bytes(st, i);
    return t;
}

/* The ids of a merged file's event as the process's own (reader.h, op_src_set). */
static void own_ids(const op_src_set *set, op_ev *ev) {
    static const int name_table[EV_KINDS] = {
        [EV_REGION] = T_STRING, [EV_SAMPLE] = T_STRING, [EV_KERNEL] = T_KERNEL_SYMBOL, [EV_COPY] = T_STRING,
        [EV_ALLOC] = -1, [EV_PMC] = T_PMC, [EV_METRIC] = T_TRACK, [EV_PC] = T_STRING, [EV_UM] = -1,
    };
    if (name_table[ev->kind] >= 0) ev->name_id = op_rd_own_id(set, name_table[ev->kind], ev->name_id);
    ev->category_id = op_rd_own_id(set, T_STRING, ev->category_id);
    ev->thread_row = op_rd_own_id(set, T_THREAD, ev->thread_row);
    ev->process_row = op_rd_own_id(set, T_PROCESS, ev->process_row);
    if (ev->agent_index == ev->agent_id) { /* no index known: the reader gives the agent's row */
        ev->agent_index = op_rd_own_id(set, T_AGENT, ev->agent_index);
        if (ev->kind == EV_COPY) ev->dst_agent_index = ev->agent_index;
    }
    ev->agent_id = op_rd_own_id(set, T_AGENT, ev->agent_id);
    ev->stream_id = op_rd_own_id(set, T_STREAM, ev->stream_id);
    ev->queue_id = op_rd_own_id(set, T_QUEUE, ev->queue_id);
    if (ev->kind == EV_KERNEL || ev->kind == EV_PMC) ev->kernel_id = op_rd_own_id(set, T_KERNEL_SYMBOL, ev->kernel_id);
    if (ev->kind == EV_KERNEL) ev->region_name_id = op_rd_own_id(set, T_STRING, ev->region_name_id);
    ev->cpu_stack = op_rd_own_id(set, T_OP_STACK, ev->cpu_stack);
}

int op_rd_next(op_rd *rd, op_ev *ev, char *err, size_t errlen) {
    if (!rd->st) return 0;
    sqlite3_stmt *st = rd->st;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) return 0;
    if (rc != SQLITE_ROW) {
        op_src_failed(rd->src, rc, err, errlen);
        return -OP_RD_EINPUT;
    }
    memset(ev, 0, offsetof(op_ev, grid));
    ev->lds = ev->scratch = ev->vgpr = ev->accum_vgpr = ev->sgpr = 0;
    ev->kind = rd->kind;
    ev->start = sqlite3_column_int64(st, 0);
    ev->end = sqlite3_column_int64(st, 1);
    ev->name_id = sqlite3_column_int64(st, 2);
    /* Columns that are constant NULL without text mode are not read (column calls are a
     * tenth of a conversion's CPU time). */
    if (rd->text) {
        ev->name = col_text(st, 3, &ev->name_len);
        ev->category = col_text(st, 5, &ev->category_len);
        ev->pid = sqlite3_column_int64(st, 8);
        ev->tid = sqlite3_column_int64(st, 9);
        ev->ext_corr = sqlite3_column_int64(st, 11);
    }
    ev->category_id = sqlite3_column_int64(st, 4);
    ev->thread_row = sqlite3_column_int64(st, 6);
    ev->process_row = sqlite3_column_int64(st, 7);
    ev->corr = sqlite3_column_int64(st, 10);
    ev->agent_id = col_i64(st, 12, -1);
    ev->flow = rd->flows ? sqlite3_column_int(st, sqlite3_column_count(st) - 1) : 0;
    ev->agent_index = rd->text ? col_i64(st, 13, ev->agent_id) : ev->agent_id;
    ev->mpi_flows = rd->mpi ? col_text(st, 15, &ev->mpi_flows_len) : NULL; /* after the region's one NULL column */
    if (!ev->mpi_flows) ev->mpi_flows_len = 0;
    switch (rd->kind) {
    case EV_KERNEL:
        ev->stream_id = sqlite3_column_int64(st, 14);
        ev->queue_id = sqlite3_column_int64(st, 15);
        ev->dispatch_id = sqlite3_column_int64(st, 16);
        ev->kernel_id = ev->name_id;
        for (int i = 0; i < 3; i++) {
            ev->grid[i] = sqlite3_column_int64(st, 17 + i);
            ev->block[i] = sqlite3_column_int64(st, 20 + i);
        }
        if (rd->text) {
            ev->lds = sqlite3_column_int64(st, 23);
            ev->scratch = sqlite3_column_int64(st, 24);
            ev->vgpr = sqlite3_column_int64(st, 25);
            ev->accum_vgpr = sqlite3_column_int64(st, 26);
            ev->sgpr = sqlite3_column_int64(st, 27);
        }
        ev->region_name_id = sqlite3_column_int64(st, 28);
        break;
    case EV_COPY:
        ev->stream_id = sqlite3_column_int64(st, 14);
        ev->queue_id = sqlite3_column_int64(st, 15);
        ev->size = sqlite3_column_int64(st, 16);
        ev->src_agent_index = col_i64(st, 17, -1);
        ev->dst_agent_index = ev->agent_index;
        ev->address = sqlite3_column_int64(st, 18);
        break;
    case EV_ALLOC:
        ev->stream_id = sqlite3_column_int64(st, 14);
        ev->queue_id = sqlite3_column_int64(st, 15);
        ev->size = sqlite3_column_int64(st, 16);
        ev->address = sqlite3_column_int64(st, 17);
        ev->alloc_type = (const char *)sqlite3_column_text(st, 18);
        ev->alloc_level = (const char *)sqlite3_column_text(st, 19);
        break;
    case EV_PMC:
        ev->value = sqlite3_column_double(st, 14);
        ev->dispatch_id = sqlite3_column_int64(st, 15);
        ev->stream_id = sqlite3_column_int64(st, 16);
        ev->queue_id = sqlite3_column_int64(st, 17);
        ev->kernel_id = sqlite3_column_int64(st, 18);
        ev->grid[0] = sqlite3_column_int64(st, 19);
        ev->block[0] = sqlite3_column_int64(st, 20);
        ev->lds = sqlite3_column_int64(st, 21);
        ev->scratch = sqlite3_column_int64(st, 22);
        ev->category = col_text(st, 23, &ev->category_len); /* PMC: the kernel's name */
        ev->vgpr = sqlite3_column_int64(st, 24); /* ... and its register counts */
        ev->accum_vgpr = sqlite3_column_int64(st, 25);
        ev->sgpr = sqlite3_column_int64(st, 26);
        break;
    case EV_METRIC:
        ev->value = sqlite3_column_double(st, 14);
        break;
    case EV_SAMPLE:
        ev->cpu_stack = sqlite3_column_int64(st, 14);
        ev->cpu_sample = sqlite3_column_int(st, 15);
        break;
    case EV_PC:
        ev->dispatch_id = sqlite3_column_int64(st, 14);
        ev->kernel_id = sqlite3_column_int64(st, 15);
        ev->pc_offset = sqlite3_column_int64(st, 16);
        ev->code_object = sqlite3_column_int64(st, 17);
        ev->line = sqlite3_column_int64(st, 18);
        ev->count = sqlite3_column_int64(st, 19);
        ev->pc_samples = sqlite3_column_int64(st, 20);
        ev->method = sqlite3_column_int64(st, 21);
        if (rd->text) {
            ev->instruction = col_text(st, 22, &ev->instruction_len);
            ev->file = col_text(st, 23, &ev->file_len);
        } else {
            ev->instruction = ev->file = NULL;
            ev->instruction_len = ev->file_len = 0;
        }
        break;
    case EV_UM:
        ev->size = sqlite3_column_int64(st, 14);
        ev->address = sqlite3_column_int64(st, 15);
        ev->count = sqlite3_column_int64(st, 16);
        ev->src_agent_index = col_i64(st, 17, -1);
        ev->dst_agent_index = col_i64(st, 18, -1);
        if (!rd->text) { /* names are columns of the table itself: read in every mode */
            ev->name = col_text(st, 3, &ev->name_len);
            ev->category = col_text(st, 5, &ev->category_len);
        }
        break;
    default:
        break;
    }
    if (rd->set->merged) own_ids(rd->set, ev);
    return 1;
}

void op_rd_close(op_rd *rd) {
    sqlite3_finalize(rd->st);
    rd->st = NULL;
}

int64_t op_rd_count(op_src *src, op_src_set *set, int kind, const op_win *w) {
    op_rd rd;
    char err[8];
    if (!w || !w->active) {
        static const int tab[EV_KINDS] = {T_REGION, T_SAMPLE, T_KERNEL_DISPATCH, T_MEMORY_COPY, T_MEMORY_ALLOCATE, T_PMC_EVENT, T_OP_METRIC,
                                          T_OP_PC_SAMPLE, T_OP_UNIFIED_MEMORY};
        if (!SRC_HAS(set, tab[kind])) return 0;
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", set->name[tab[kind]]);
        sqlite3_stmt *st = op_src_prepare(src, sql, err, sizeof err);
        int64_t n = (st && sqlite3_step(st) == SQLITE_ROW) ? sqlite3_column_int64(st, 0) : 0;
        sqlite3_finalize(st);
        return n;
    }
    if (op_rd_open(&rd, src, set, kind, w, 0, err, sizeof err) != 0) return 0;
    int64_t n = 0;
    op_ev ev;
    while (op_rd_next(&rd, &ev, err, sizeof err) == 1) n++;
    op_rd_close(&rd);
    return n;
}
