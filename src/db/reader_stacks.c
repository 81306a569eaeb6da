/* reader_stacks.c — CPU call-stack samples of a table set: each stack as text for the trace
 * sinks (pftrace.c, json.c), and the rows the CPU profiles aggregate (profile_cpu.c); and the
 * CPU backend's region profile (omniprof_region_profile, for wall_clock.c).
 * op_rd_lookup_stack (reader.h) walks omniprof_stack from a sample's innermost node outwards
 * and names each address from omniprof_symbol (inlined callees first, then the physical
 * frame), giving the innermost function and the frames innermost first, one per line.
 *
 * Invariants:
 *  (1) Lookups go by primary key / UNIQUE index (stack id; symbol address), one row at a time,
 *      with two statements prepared once per lookup (the caller keeps it): no scan per sample.
 *  (2) Bounded: at most 512 stack nodes are walked and the text stops growing past 64 KiB, so a
 *      corrupt (cyclic) parent chain cannot loop or grow without end.
 *  (3) Addresses without a symbol row show as 0xADDR; a symbol row without a function name as
 *      module+0xOFF; an empty stack (id 0) as "[no stack]" with empty text. */
#include <stdio.h>
#include <string.h>

#include "db/reader_internal.h"

static void add_frame(op_buf *text, char *leaf, size_t leaflen, const char *frame) {
    if (!leaf[0]) snprintf(leaf, leaflen, "%s", frame);
    if (text->len) op_buf_putc(text, '\n');
    op_buf_puts(text, frame);
}

void op_rd_lookup_stack(op_rd_lookup *lk, int64_t stack, op_buf *text, char *leaf, size_t leaflen) {
    op_src *src = lk->src;
    op_src_set *set = lk->set;
    sqlite3_stmt **stk_st = &lk->stk, **sym_st = &lk->sym;
    char e[8], sql[400];
    if (!*stk_st && SRC_HAS(set, T_OP_STACK)) {
        snprintf(sql, sizeof sql, "SELECT parent_id, address FROM %s WHERE id = ?1", set->name[T_OP_STACK]);
        *stk_st = op_src_prepare(src, sql, e, sizeof e);
    }
    if (!*sym_st && SRC_HAS(set, T_OP_SYMBOL)) {
        snprintf(sql, sizeof sql,
                 "SELECT function, inline_depth, module, module_offset FROM %s WHERE address = ?1 "
                 "ORDER BY inline_depth DESC",
                 set->name[T_OP_SYMBOL]);
        *sym_st = op_src_prepare(src, sql, e, sizeof e);
    }
    text->len = 0;
    leaf[0] = 0;
    int64_t node = op_rd_file_id(set, T_OP_STACK, stack);
    for (int depth = 0; node > 0 && depth < 512 && *stk_st && text->len < 65536; depth++) {
        sqlite3_stmt *st = *stk_st;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, node);
        if (sqlite3_step(st) != SQLITE_ROW) break;
        int64_t parent = sqlite3_column_int64(st, 0), addr = sqlite3_column_int64(st, 1);
        int named = 0;
        if (*sym_st) {
            sqlite3_stmt *sy = *sym_st;
            sqlite3_reset(sy);
            sqlite3_bind_int64(sy, 1, addr);
            while (sqlite3_step(sy) == SQLITE_ROW) {
                const char *fn = (const char *)sqlite3_column_text(sy, 0);
                const char *mod = (const char *)sqlite3_column_text(sy, 2);
                char frame[4200];
                if (fn && *fn) {
                    snprintf(frame, sizeof frame, "%s%s", fn, sqlite3_column_int(sy, 1) > 0 ? " [inlined]" : "");
                } else if (mod && *mod) {
                    const char *b = strrchr(mod, '/');
                    snprintf(frame, sizeof frame, "%s+0x%llx", b ? b + 1 : mod,
                             (unsigned long long)sqlite3_column_int64(sy, 3));
                } else {
                    snprintf(frame, sizeof frame, "0x%llx", (unsigned long long)addr);
                }
                add_frame(text, leaf, leaflen, frame);
                named = 1;
            }
        }
        if (!named) {
            char frame[32];
            snprintf(frame, sizeof frame, "0x%llx", (unsigned long long)addr);
            add_frame(text, leaf, leaflen, frame);
        }
        node = parent;
    }
    if (!leaf[0]) snprintf(leaf, leaflen, "[no stack]");
}

/* ---- rows for the CPU profiles ------------------------------------------------------------- */

int op_rd_has_cpu_samples(op_src *src, op_src_set *set) {
    if (!SRC_HAS(set, T_OP_CPU_SAMPLE)) return 0;
    char sql[300], err[8];
    snprintf(sql, sizeof sql, "SELECT 1 FROM %s LIMIT 1", set->name[T_OP_CPU_SAMPLE]);
    sqlite3_stmt *st = op_src_prepare(src, sql, err, sizeof err);
    int found = st && sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

void op_rd_cpu_process(op_src *src, op_src_set *set, int64_t *pid, int64_t *rank) {
    char sql[400], err[8];
    sqlite3_stmt *st;
    *pid = *rank = -1;
    if (SRC_HAS(set, T_OP_CPU_SAMPLE)) {
        snprintf(sql, sizeof sql, "SELECT pid FROM %s LIMIT 1", set->name[T_OP_CPU_SAMPLE]);
        if ((st = op_src_prepare(src, sql, err, sizeof err)) && sqlite3_step(st) == SQLITE_ROW)
            *pid = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    if (SRC_HAS(set, T_PROCESS)) {
        snprintf(sql, sizeof sql,
                 "SELECT pid, json_extract(CASE WHEN json_valid(extdata) THEN extdata END, '$.rank') FROM %s "
                 "ORDER BY id LIMIT 1",
                 set->name[T_PROCESS]);
        if ((st = op_src_prepare(src, sql, err, sizeof err)) && sqlite3_step(st) == SQLITE_ROW) {
            *pid = sqlite3_column_int64(st, 0);
            if (sqlite3_column_type(st, 1) != SQLITE_NULL) *rank = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
    }
}

static int node_row(sqlite3_stmt *st, void *arg) {
    op_rd_cb *c = arg;
    int (*cb)(int64_t, int64_t, uint64_t, void *) = (int (*)(int64_t, int64_t, uint64_t, void *))c->fn;
    return cb(op_rd_own_id(c->set, T_OP_STACK, sqlite3_column_int64(st, 0)),
              op_rd_own_id(c->set, T_OP_STACK, sqlite3_column_int64(st, 1)), (uint64_t)sqlite3_column_int64(st, 2), c->arg);
}

int op_rd_stack_nodes(op_src *src, op_src_set *set, int (*cb)(int64_t id, int64_t parent, uint64_t address, void *),
                      void *arg, char *err, size_t errlen) {
    if (!SRC_HAS(set, T_OP_STACK)) return 0;
    char sql[300];
    snprintf(sql, sizeof sql, "SELECT id, parent_id, address FROM %s", set->name[T_OP_STACK]);
    op_rd_cb c = OP_RD_CB(cb, arg);
    c.set = set;
    return op_src_each_row(src, op_src_prepare(src, sql, err, errlen), node_row, &c, err, errlen);
}

static int sym_row(sqlite3_stmt *st, void *arg) {
    op_rd_cb *c = arg;
    op_rd_symbol s = {
        .address = (uint64_t)sqlite3_column_int64(st, 0),
        .inline_depth = sqlite3_column_int(st, 1),
        .function = (const char *)sqlite3_column_text(st, 2),
        .file = (const char *)sqlite3_column_text(st, 3),
        .line = sqlite3_column_int(st, 4),
        .module = (const char *)sqlite3_column_text(st, 5),
        .module_offset = (uint64_t)sqlite3_column_int64(st, 6),
    };
    return ((int (*)(const op_rd_symbol *, void *))c->fn)(&s, c->arg);
}

int op_rd_symbols(op_src *src, op_src_set *set, int (*cb)(const op_rd_symbol *, void *), void *arg, char *err,
                  size_t errlen) {
    if (!SRC_HAS(set, T_OP_SYMBOL)) return 0;
    char sql[400];
    snprintf(sql, sizeof sql,
             "SELECT address, inline_depth, function, file, line, module, module_offset FROM %s "
             "ORDER BY address, inline_depth",
             set->name[T_OP_SYMBOL]);
    op_rd_cb c = OP_RD_CB(cb, arg);
    return op_src_each_row(src, op_src_prepare(src, sql, err, errlen), sym_row, &c, err, errlen);
}

static int count_row(sqlite3_stmt *st, void *arg) {
    op_rd_cb *c = arg;
    return ((int (*)(int64_t, uint64_t, void *))c->fn)(op_rd_own_id(c->set, T_OP_STACK, sqlite3_column_int64(st, 0)),
                                                      (uint64_t)sqlite3_column_int64(st, 1), c->arg);
}

int op_rd_stack_counts(op_src *src, op_src_set *set, int clock, const int64_t *window,
                       int (*cb)(int64_t stack, uint64_t count, void *), void *arg, char *err, size_t errlen) {
    if (!SRC_HAS(set, T_OP_CPU_SAMPLE)) return 0;
    char where[160] = "", sql[512]; /* name (200) + where (160) + the statement */
    size_t wl = 0;
    if (clock == 1) wl += (size_t)snprintf(where + wl, sizeof where - wl, " AND clock = 'CPUTIME'");
    else if (clock == 2) wl += (size_t)snprintf(where + wl, sizeof where - wl, " AND clock = 'REALTIME'");
    if (window)
        snprintf(where + wl, sizeof where - wl, " AND timestamp BETWEEN %lld AND %lld", (long long)window[0],
                 (long long)window[1]);
    snprintf(sql, sizeof sql, "SELECT stack_id, COUNT(*) FROM %s WHERE 1%s GROUP BY stack_id",
             set->name[T_OP_CPU_SAMPLE], where);
    op_rd_cb c = OP_RD_CB(cb, arg);
    c.set = set;
    return op_src_each_row(src, op_src_prepare(src, sql, err, errlen), count_row, &c, err, errlen);
}

/* A counter's count per stack: each sample carries its thread's cumulative count, so a sample
 * is weighted by the increase since the thread's previous sample (of either clock; the first
 * sample of a thread by its whole count, counted since its sampler started; a count lower than
 * the previous one, counters made anew at a re-attach, by itself). */
int op_rd_stack_weights(op_src *src, op_src_set *set, int event_index, int clock,
                        const int64_t *window, int (*cb)(int64_t stack, uint64_t count, void *),
                        void *arg, char *err, size_t errlen)
{
    if (!SRC_HAS(set, T_OP_CPU_SAMPLE) || event_index < 0 || event_index >= 8) return 0;
    char where[160] = "", sql[1200];
    size_t wl = 0;
    if (clock == 1)
        wl += (size_t)snprintf(where + wl, sizeof where - wl, " AND clock = 'CPUTIME'");
    else if (clock == 2)
        wl += (size_t)snprintf(where + wl, sizeof where - wl, " AND clock = 'REALTIME'");
    if (window)
        snprintf(where + wl, sizeof where - wl, " AND timestamp BETWEEN %lld AND %lld",
                 (long long)window[0], (long long)window[1]);
    snprintf(sql, sizeof sql,
             "SELECT stack_id, SUM(CASE WHEN v >= p THEN v - p ELSE v END) FROM ("
             "SELECT stack_id, clock, timestamp, v, "
             "coalesce(lag(v) OVER (PARTITION BY tid ORDER BY timestamp, id), 0) AS p FROM ("
             "SELECT id, tid, stack_id, clock, timestamp, json_extract(event_values, '$[%d]') AS v "
             "FROM %s "
             "WHERE json_array_length(event_values) > %d)) WHERE 1%s GROUP BY stack_id",
             event_index, set->name[T_OP_CPU_SAMPLE], event_index, where);
    op_rd_cb c = OP_RD_CB(cb, arg);
    c.set = set;
    return op_src_each_row(src, op_src_prepare(src, sql, err, errlen), count_row, &c, err, errlen);
}

static int event_row(sqlite3_stmt *st, void *arg)
{
    op_rd_cb *c = arg;
    return ((int (*)(int, const char *, uint32_t, uint64_t, void *))c->fn)(
        sqlite3_column_int(st, 0), (const char *)sqlite3_column_text(st, 1),
        (uint32_t)sqlite3_column_int64(st, 2), (uint64_t)sqlite3_column_int64(st, 3), c->arg);
}

int op_rd_sample_events(op_src *src, op_src_set *set,
                        int (*cb)(int index, const char *name, uint32_t type, uint64_t config,
                                  void *),
                        void *arg, char *err, size_t errlen)
{
    if (!SRC_HAS(set, T_OP_CPU_SAMPLE_EVENT)) return 0;
    char sql[400];
    snprintf(
        sql, sizeof sql,
        "SELECT event_index, name, type, config FROM %s GROUP BY event_index ORDER BY event_index",
        set->name[T_OP_CPU_SAMPLE_EVENT]);
    op_rd_cb c = OP_RD_CB(cb, arg);
    return op_src_each_row(src, op_src_prepare(src, sql, err, errlen), event_row, &c, err, errlen);
}

static int region_row(sqlite3_stmt *st, void *arg) {
    op_rd_cb *c = arg;
    op_rd_region_row r;
    r.tid = sqlite3_column_int64(st, 0);
    r.thread_index = sqlite3_column_int64(st, 1);
    r.node_id = sqlite3_column_int64(st, 2);
    r.parent_id = sqlite3_column_int64(st, 3);
    r.depth = sqlite3_column_int(st, 4);
    r.label = (const char *)sqlite3_column_text(st, 5);
    r.component = (const char *)sqlite3_column_text(st, 6);
    r.units = (const char *)sqlite3_column_text(st, 7);
    r.count = (uint64_t)sqlite3_column_int64(st, 8);
    r.sum = sqlite3_column_double(st, 9);
    r.sum_squares = sqlite3_column_double(st, 10);
    r.min = sqlite3_column_double(st, 11);
    r.max = sqlite3_column_double(st, 12);
    r.self = sqlite3_column_double(st, 13);
    return ((int (*)(const op_rd_region_row *, void *))c->fn)(&r, c->arg);
}

int op_rd_region_profile(op_src *src, op_src_set *set, int (*cb)(const op_rd_region_row *, void *), void *arg,
                         char *err, size_t errlen) {
    if (!SRC_HAS(set, T_OP_REGION_PROFILE)) return 0;
    char sql[1000], thread[260];
    if (SRC_HAS(set, T_THREAD)) snprintf(thread, sizeof thread, "%s", set->name[T_THREAD]);
    else snprintf(thread, sizeof thread, "(SELECT 0 AS id, 0 AS tid)");
    snprintf(sql, sizeof sql,
             "SELECT coalesce(t.tid, 0), r.thread_index, r.node_id, r.parent_id, r.depth, r.label, r.component, r.units, "
             "r.count, r.sum, r.sum_squares, r.min, r.max, r.self FROM %s r LEFT JOIN %s t ON t.id = r.tid ORDER BY r.id",
             set->name[T_OP_REGION_PROFILE], thread);
    op_rd_cb c = OP_RD_CB(cb, arg);
    return op_src_each_row(src, op_src_prepare(src, sql, err, errlen), region_row, &c, err, errlen);
}
