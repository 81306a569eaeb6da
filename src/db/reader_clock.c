/* reader_clock.c — what the processes of a set say about their clocks (op_rd_clocks, reader.h):
 * one row per process with its rank, host, clock domain, wall-clock offset and its MPI clock estimates
 * (omniprof_clock, CLOCK_SYNC records), for the clock plan of src/output/clocks.c. Two
 * statements per set; the estimates of a process are found by (pid, guid). */
#include <stdio.h>
#include <string.h>

#include "db/reader_internal.h"

#define X_JSON(key) "json_extract(CASE WHEN json_valid(P.extdata) THEN P.extdata END, '$." key "')"

static void copy_text(char *dst, size_t cap, const unsigned char *s)
{
    snprintf(dst, cap, "%s", s ? (const char *)s : "");
}

/* The estimates of process (row, guid), oldest first (at most 2 kept: the first and the last). */
static void read_estimates(sqlite3_stmt *c, op_rd_process_clock *pc)
{
    sqlite3_bind_int64(c, 1, pc->file_row);
    sqlite3_bind_text(c, 2, pc->guid, -1, SQLITE_STATIC);
    while (sqlite3_step(c) == SQLITE_ROW) {
        op_rd_clock_est e = {sqlite3_column_int64(c, 0), sqlite3_column_int64(c, 1), sqlite3_column_int64(c, 2)};
        if (sqlite3_column_int64(c, 3)) pc->applied = 1;
        if (pc->n < 2) pc->est[pc->n++] = e;
        else pc->est[1] = e;
    }
    sqlite3_reset(c);
}

int op_rd_clocks(op_src *src, op_src_set *set, int (*cb)(const op_rd_process_clock *, void *), void *arg, char *err,
                 size_t errlen)
{
    if (!SRC_HAS(set, T_PROCESS)) return 0;
    char sql[1200];
    if (SRC_HAS(set, T_NODE))
        snprintf(sql, sizeof sql,
                 "SELECT P.id, P.pid, " X_JSON("rank") ", " X_JSON("realtime_offset_ns") ", P.guid, "
                 "(SELECT COALESCE(N.machine_id, '') || '|' || COALESCE(N.hostname, '') FROM %s N "
                 "WHERE N.id = P.nid AND N.guid = P.guid), " X_JSON("clock_domain") " "
                 "FROM %s P ORDER BY P.id",
                 set->name[T_NODE], set->name[T_PROCESS]);
    else
        snprintf(sql, sizeof sql,
                 "SELECT P.id, P.pid, " X_JSON("rank") ", " X_JSON("realtime_offset_ns") ", P.guid, NULL, "
                 X_JSON("clock_domain") " FROM %s P ORDER BY P.id",
                 set->name[T_PROCESS]);
    sqlite3_stmt *p = op_src_prepare(src, sql, err, errlen), *c = NULL;
    if (!p) return OP_RD_EINPUT;
    if (SRC_HAS(set, T_OP_CLOCK)) {
        snprintf(sql, sizeof sql,
                 "SELECT local_timestamp, \"offset\", error, applied FROM %s WHERE pid = ?1 AND guid = ?2 "
                 "ORDER BY local_timestamp",
                 set->name[T_OP_CLOCK]);
        if (!(c = op_src_prepare(src, sql, err, errlen))) {
            sqlite3_finalize(p);
            return OP_RD_EINPUT;
        }
    }
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(p)) == SQLITE_ROW) {
        op_rd_process_clock pc;
        memset(&pc, 0, sizeof pc);
        pc.file_row = sqlite3_column_int64(p, 0);
        pc.process_row = op_rd_own_id(set, T_PROCESS, pc.file_row);
        pc.pid = sqlite3_column_int64(p, 1);
        pc.rank = sqlite3_column_type(p, 2) == SQLITE_INTEGER ? sqlite3_column_int64(p, 2) : -1;
        if ((pc.has_realtime = sqlite3_column_type(p, 3) == SQLITE_INTEGER)) pc.realtime_offset = sqlite3_column_int64(p, 3);
        copy_text(pc.guid, sizeof pc.guid, sqlite3_column_text(p, 4));
        copy_text(pc.host, sizeof pc.host, sqlite3_column_text(p, 5));
        if (sqlite3_column_type(p, 6) == SQLITE_TEXT)
            copy_text(pc.clock_domain, sizeof pc.clock_domain, sqlite3_column_text(p, 6));
        if (c) read_estimates(c, &pc);
        stop = cb(&pc, arg);
    }
    if (!stop && rc != SQLITE_DONE) {
        op_src_failed(src, rc, err, errlen);
        stop = OP_RD_EINPUT;
    }
    sqlite3_finalize(p);
    sqlite3_finalize(c);
    return stop;
}
