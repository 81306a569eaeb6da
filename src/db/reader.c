/* reader.c — the reader's inputs (reader.h): opening untrusted rocpd databases and finding their
 * table sets; the extents and markers behind time windows; threads, agents and processes of a
 * set; lookups by id. Events are reader_events.c, stacks reader_stacks.c, statistics
 * reader_stats.c, unions and merges reader_union.c and reader_merge.c.
 *
 * Opening (op_src_open), in this order, each failure reported with the input's name:
 *   1. the file must exist and be readable ("cannot open");
 *   2. its first 16 bytes must be "SQLite format 3\0" ("not a SQLite database");
 *   3. the page count in the header times the page size must not exceed the file size
 *      ("truncated: N bytes, header says M");
 *   4. it is opened as file:PATH?mode=ro with SQLITE_DBCONFIG_DEFENSIVE and trusted_schema off;
 *      reading the schema must succeed ("corrupt: <sqlite message>");
 *   5. it must hold at least one rocpd_metadata<suffix> table whose suffix is [A-Za-z0-9_]*
 *      and a rocpd_string<suffix> table ("lacks the rocpd tables").
 * Each set's table names are kept quoted; tables a set lacks are simply not read (a rocprofv3
 * database has no omniprof_* tables; ours may lack rocpd_arg rows, etc.). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/strtab.h"
#include "db/reader_internal.h"

const char *const op_src_table_base[T_COUNT] = {
#define OP_SRC_TABLE_NAME(E, NAME) [E] = NAME,
    OP_DB_TABLES(OP_SRC_TABLE_NAME)
#undef OP_SRC_TABLE_NAME
};

/* file:PATH?mode=ro, percent-encoded. A database in WAL mode (header bytes 18-19 = 2) with no
 * -wal file beside it is opened with immutable=1 as well: a read-only connection to a WAL
 * database otherwise creates -wal and -shm files it cannot remove, littering the user's
 * directory; with a -wal file present (a run still writing, or one that crashed) it is read
 * normally so that the committed frames in it are seen. */
char *op_src_uri(const char *path) {
    int immutable = 0;
    FILE *f = fopen(path, "rb");
    if (f) {
        unsigned char h[20];
        if (fread(h, 1, sizeof h, f) == sizeof h && h[18] == 2 && h[19] == 2) {
            size_t n = strlen(path);
            char *w = malloc(n + 5);
            if (w) {
                memcpy(w, path, n);
                memcpy(w + n, "-wal", 5);
                struct stat st;
                immutable = stat(w, &st) != 0;
                free(w);
            }
        }
        fclose(f);
    }
    op_buf b = {0};
    op_buf_puts(&b, "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if (*p == '%' || *p == '?' || *p == '#' || *p < 0x20 || *p >= 0x7F)
            op_buf_printf(&b, "%%%02X", *p);
        else
            op_buf_putc(&b, *p);
    }
    op_buf_puts(&b, immutable ? "?mode=ro&immutable=1" : "?mode=ro");
    return op_buf_take(&b);
}

void op_db_harden(sqlite3 *db) {
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)0);
#ifdef SQLITE_DBCONFIG_TRUSTED_SCHEMA
    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)0);
#endif
    sqlite3_exec(db, "PRAGMA trusted_schema=OFF;", NULL, NULL, NULL);
    sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 256 * 1024 * 1024);
}

int op_src_open_db(const char *path, sqlite3 **out, char *err, size_t errlen) {
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        op_seterr(err, errlen, "%s: cannot open: %s", path,
                  errno && stat(path, &st) != 0 ? strerror(errno) : "not a regular file");
        return OP_RD_EINPUT;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        op_seterr(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return OP_RD_EINPUT;
    }
    unsigned char hdr[100];
    size_t got = fread(hdr, 1, sizeof hdr, f);
    fclose(f);
    if (got < 100 || memcmp(hdr, "SQLite format 3", 16) != 0) {
        op_seterr(err, errlen,
                  "%s: not a SQLite database (expected a rocpd .db file written by omniprof run "
                  "or rocprofv3)",
                  path);
        return OP_RD_EINPUT;
    }
    uint32_t page_size = (uint32_t)hdr[16] << 8 | hdr[17];
    if (page_size == 1) page_size = 65536;
    uint32_t n_pages = (uint32_t)hdr[28] << 24 | (uint32_t)hdr[29] << 16 | (uint32_t)hdr[30] << 8 | hdr[31];
    uint32_t change = (uint32_t)hdr[24] << 24 | (uint32_t)hdr[25] << 16 | (uint32_t)hdr[26] << 8 | hdr[27];
    uint32_t valid_for = (uint32_t)hdr[92] << 24 | (uint32_t)hdr[93] << 16 | (uint32_t)hdr[94] << 8 | hdr[95];
    if (page_size < 512 || (page_size & (page_size - 1))) {
        op_seterr(err, errlen, "%s: corrupt: bad page size %u in the database header", path,
                  page_size);
        return OP_RD_EINPUT;
    }
    /* The in-header size is valid only when its change counter matches (SQLite file format
     * §1.3.7); a database in WAL mode may legitimately be shorter. */
    if (n_pages && change == valid_for && (uint64_t)n_pages * page_size > (uint64_t)st.st_size) {
        op_seterr(err, errlen, "%s: truncated: %lld bytes, the header says %llu", path,
                  (long long)st.st_size, (unsigned long long)n_pages * page_size);
        return OP_RD_EINPUT;
    }
    if (st.st_size % page_size) {
        op_seterr(err, errlen, "%s: truncated: %lld bytes is not a whole number of %u-byte pages",
                  path, (long long)st.st_size, page_size);
        return OP_RD_EINPUT;
    }
    char *uri = op_src_uri(path);
    if (!uri) {
        op_seterr(err, errlen, "%s: out of memory", path);
        return OP_RD_EFAIL;
    }
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL);
    free(uri);
    if (rc != SQLITE_OK) {
        op_seterr(err, errlen, "%s: cannot open: %s", path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return OP_RD_EINPUT;
    }
    op_db_harden(db);
    sqlite3_exec(db, "PRAGMA query_only=1;", NULL, NULL, NULL);
    *out = db;
    return OP_RD_OK;
}

void op_src_failed(op_src *s, int rc, char *err, size_t errlen) {
    const char *msg = s && s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);
    const char *what = "read failed";
    switch (rc & 0xFF) {
    case SQLITE_CORRUPT: what = "corrupt"; break;
    case SQLITE_NOTADB: what = "not a SQLite database"; break;
    case SQLITE_IOERR: what = "truncated or unreadable"; break;
    default: break;
    }
    op_seterr(err, errlen, "%s: %s: %s", s ? s->path : "?", what, msg);
}

sqlite3_stmt *op_src_prepare(op_src *s, const char *sql, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) {
        if ((rc & 0xFF) == SQLITE_ERROR)
            op_seterr(err, errlen, "%s: unexpected rocpd schema: %s", s->path, sqlite3_errmsg(s->db));
        else
            op_src_failed(s, rc, err, errlen);
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

static int valid_suffix(const char *s) {
    if (strlen(s) >= 80) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

/* Sets each set's table names and the bits of the tables it has, and drops the sets without a
 * string table. The table names are read in one pass over sqlite_schema (a query per name would
 * scan the schema once per name: quadratic in a merged file of many sets). SQLITE_DONE, or the
 * SQLite error. */
static int find_set_tables(op_src *s) {
    op_strtab names = {0};
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "SELECT name FROM sqlite_schema WHERE type='table'", -1, &st, NULL);
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        if ((rc = sqlite3_step(st)) != SQLITE_ROW) break;
        const char *nm = (const char *)sqlite3_column_text(st, 0);
        uint32_t id;
        if (nm && op_strtab_intern(&names, nm, strlen(nm), &id)) rc = SQLITE_NOMEM;
    }
    sqlite3_finalize(st);
    size_t kept = 0;
    for (size_t i = 0; i < s->n_sets && rc == SQLITE_DONE; i++) {
        op_src_set *set = &s->sets[i];
        for (int t = 0; t < T_COUNT; t++) {
            char name[160];
            uint32_t id;
            snprintf(name, sizeof name, "%s%s", op_src_table_base[t], set->suffix);
            if (op_strtab_find(&names, name, strlen(name), &id)) set->have |= 1ull << t;
            snprintf(set->name[t], sizeof set->name[t], "\"%s\"", name);
        }
        if (!SRC_HAS(set, T_STRING)) continue;
        char merged[160];
        uint32_t id;
        snprintf(merged, sizeof merged, "omniprof_merged%s", set->suffix);
        set->merged = op_strtab_find(&names, merged, strlen(merged), &id) ? -1 : 0; /* expanded later */
        snprintf(set->tables, sizeof set->tables, "%s", set->suffix);
        if (kept != i) s->sets[kept] = *set;
        kept++;
    }
    op_strtab_free(&names);
    if (rc == SQLITE_DONE) s->n_sets = kept;
    return rc;
}

/* op_src_open; *no_sets = 1 when it failed only because the database holds no table set. */
static int src_open(const char *path, op_src **out, int *no_sets, char *err, size_t errlen) {
    *out = NULL;
    *no_sets = 0;
    sqlite3 *db;
    int rc = op_src_open_db(path, &db, err, errlen);
    if (rc) return rc;
    op_src *s = calloc(1, sizeof(*s));
    if (!s || !(s->path = strdup(path))) {
        free(s);
        sqlite3_close(db);
        op_seterr(err, errlen, "%s: out of memory", path);
        return OP_RD_EFAIL;
    }
    s->db = db;
    sqlite3_stmt *st = NULL;
    rc = sqlite3_prepare_v2(db,
                            "SELECT substr(name, 15) FROM sqlite_schema WHERE type='table' AND "
                            "name LIKE 'rocpd\\_metadata%' ESCAPE '\\' ORDER BY name",
                            -1, &st, NULL);
    if (rc != SQLITE_OK) {
        op_src_failed(s, rc, err, errlen);
        sqlite3_finalize(st);
        op_src_close(s);
        return OP_RD_EINPUT;
    }
    size_t cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *suf = (const char *)sqlite3_column_text(st, 0);
        if (!suf || !valid_suffix(suf)) continue;
        if (s->n_sets == cap) {
            cap = cap ? cap * 2 : 4;
            op_src_set *n = realloc(s->sets, cap * sizeof(*n));
            if (!n) {
                rc = SQLITE_NOMEM;
                break;
            }
            s->sets = n;
        }
        op_src_set *set = &s->sets[s->n_sets++];
        memset(set, 0, sizeof(*set));
        snprintf(set->suffix, sizeof set->suffix, "%s", suf);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        op_src_failed(s, rc, err, errlen);
        op_src_close(s);
        return rc == SQLITE_NOMEM ? OP_RD_EFAIL : OP_RD_EINPUT;
    }
    /* Which tables each set has. */
    if ((rc = find_set_tables(s)) != SQLITE_DONE) {
        op_src_failed(s, rc, err, errlen);
        op_src_close(s);
        return rc == SQLITE_NOMEM ? OP_RD_EFAIL : OP_RD_EINPUT;
    }
    if (s->n_sets == 0) {
        *no_sets = 1;
        op_seterr(err, errlen,
                  "%s: lacks the rocpd tables (no rocpd_metadata<uuid>/rocpd_string<uuid> table): "
                  "expected a database written by omniprof run or rocprofv3 (rocpd schema 3)",
                  path);
        op_src_close(s);
        return OP_RD_EINPUT;
    }
    /* guid of each set */
    for (size_t i = 0; i < s->n_sets; i++) {
        op_src_set *set = &s->sets[i];
        char sql[300];
        snprintf(sql, sizeof sql,
                 "SELECT value FROM %s WHERE tag IN ('guid','uuid') ORDER BY tag='guid' DESC LIMIT 1",
                 set->name[T_METADATA]);
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
            int r = sqlite3_step(st);
            if (r == SQLITE_ROW && sqlite3_column_text(st, 0))
                snprintf(set->guid, sizeof set->guid, "%s", (const char *)sqlite3_column_text(st, 0));
            else if (r != SQLITE_DONE) {
                op_src_failed(s, r, err, errlen);
                sqlite3_finalize(st);
                op_src_close(s);
                return OP_RD_EINPUT;
            }
        } else {
            op_seterr(err, errlen, "%s: unexpected rocpd schema: %s", path, sqlite3_errmsg(db));
            sqlite3_finalize(st);
            op_src_close(s);
            return OP_RD_EINPUT;
        }
        sqlite3_finalize(st);
    }
    /* A merged file's table set holds many processes: one set each (reader_merge.c). */
    if ((rc = op_src_expand_merged(s, err, errlen)) != OP_RD_OK) {
        op_src_close(s);
        return rc;
    }
    *out = s;
    return OP_RD_OK;
}

int op_src_open(const char *path, op_src **out, char *err, size_t errlen) {
    int no_sets;
    return src_open(path, out, &no_sets, err, errlen);
}

int op_src_lacks_tables(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    if (st.st_size == 0) return 1; /* SQLite reads an empty file as an empty database */
    op_src *s;
    int no_sets;
    char err[8];
    if (src_open(path, &s, &no_sets, err, sizeof err) == OP_RD_OK) {
        op_src_close(s);
        return 0;
    }
    return no_sets;
}

void op_src_close(op_src *s) {
    if (!s) return;
    sqlite3_close(s->db);
    free(s->sets);
    free(s->path);
    free(s);
}

/* ---- time windows -------------------------------------------------------------------------- */

void op_win_sql(const op_win *w, const char *s, const char *e, char *buf, size_t n) {
    if (!w || !w->active) {
        if (n) buf[0] = 0;
        return;
    }
    if (w->inclusive)
        snprintf(buf, n, " AND ((%s BETWEEN %lld AND %lld) OR (%s BETWEEN %lld AND %lld))", s,
                 (long long)w->t0, (long long)w->t1, e, (long long)w->t0, (long long)w->t1);
    else
        snprintf(buf, n, " AND %s >= %lld AND %s <= %lld", s, (long long)w->t0, e, (long long)w->t1);
}

/* Extent of one set: min start / max end over its event tables. */
int op_rd_extent(op_src *s, op_src_set *set, int64_t *lo, int64_t *hi, char *err, size_t errlen) {
    static const struct { int t; const char *s, *e; } parts[] = {
        {T_REGION, "start", "end"}, {T_KERNEL_DISPATCH, "start", "end"}, {T_MEMORY_COPY, "start", "end"},
        {T_MEMORY_ALLOCATE, "start", "end"}, {T_SAMPLE, "timestamp", "timestamp"},
        {T_OP_METRIC, "timestamp", "timestamp"},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (!SRC_HAS(set, parts[i].t)) continue;
        char sql[400];
        /* GPU operations CUPTI gave no start (0) are not placed in time (docs/output.md) */
        int gpu = parts[i].t == T_KERNEL_DISPATCH || parts[i].t == T_MEMORY_COPY;
        snprintf(sql, sizeof sql, "SELECT min(\"%s\"), max(\"%s\") FROM %s%s", parts[i].s,
                 parts[i].e, set->name[parts[i].t], gpu ? " WHERE start > 0" : "");
        sqlite3_stmt *st = op_src_prepare(s, sql, err, errlen);
        if (!st) return OP_RD_EINPUT;
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            if (sqlite3_column_type(st, 0) != SQLITE_NULL) {
                int64_t a = sqlite3_column_int64(st, 0), b = sqlite3_column_int64(st, 1);
                if (a < *lo) *lo = a;
                if (b > *hi) *hi = b;
            }
        } else {
            op_src_failed(s, rc, err, errlen);
            sqlite3_finalize(st);
            return OP_RD_EINPUT;
        }
        sqlite3_finalize(st);
    }
    return 0;
}

/* Column col of the one row of a "SELECT min(...) ..." (?1 = name, ?2 = after) into *t, unless
 * NULL (no match). 0, or OP_RD_EINPUT with err set. */
static int first_time(op_src *s, const char *sql, const char *name, int64_t after, int col, int64_t *t, char *err,
                      size_t errlen) {
    sqlite3_stmt *st = op_src_prepare(s, sql, err, errlen);
    if (!st) return OP_RD_EINPUT;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, after);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) *t = sqlite3_column_int64(st, col);
    else if (rc != SQLITE_ROW) op_src_failed(s, rc, err, errlen);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : OP_RD_EINPUT;
}

/* First occurrence of a marker: a region or a sample (by its mark message or track name). */
int op_rd_marker(op_src *s, op_src_set *set, const char *name, int want_end, int64_t after, int64_t *found,
                 char *err, size_t errlen) {
    char sql[1200];
    int64_t best = INT64_MAX;
    if (SRC_HAS(set, T_REGION)) {
        snprintf(sql, sizeof sql,
                 "SELECT min(R.start), min(R.\"end\") FROM %s R JOIN %s S ON S.id = R.name_id "
                 "WHERE S.string = ?1 AND R.\"end\" >= ?2",
                 set->name[T_REGION], set->name[T_STRING]);
        if (first_time(s, sql, name, after, want_end ? 1 : 0, &best, err, errlen)) return OP_RD_EINPUT;
    }
    if (SRC_HAS(set, T_SAMPLE) && SRC_HAS(set, T_EVENT)) {
        snprintf(sql, sizeof sql,
                 "SELECT min(X.timestamp) FROM %s X JOIN %s E ON E.id = X.event_id "
                 "WHERE json_valid(E.extdata) AND json_extract(E.extdata, '$.message') = ?1 "
                 "AND X.timestamp >= ?2",
                 set->name[T_SAMPLE], set->name[T_EVENT]);
        int64_t t = INT64_MAX;
        if (first_time(s, sql, name, after, 0, &t, err, errlen)) return OP_RD_EINPUT;
        if (t < best) best = t;
    }
    if (best < *found) *found = best;
    return 0;
}

/* ---- descriptions of a set ---------------------------------------------------------------- */

int op_src_each_row(op_src *src, sqlite3_stmt *st, int (*row)(sqlite3_stmt *, void *), void *arg, char *err,
                    size_t errlen) {
    if (!st) return OP_RD_EINPUT;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (row(st, arg)) {
            rc = SQLITE_DONE;
            break;
        }
    if (rc != SQLITE_DONE) op_src_failed(src, rc, err, errlen);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? OP_RD_OK : OP_RD_EINPUT;
}

static int thread_row(sqlite3_stmt *st, void *arg) {
    op_rd_cb *c = arg;
    const op_src_set *set = c->set;
    op_thread_info ti = {
        .thread_row = op_rd_own_id(set, T_THREAD, sqlite3_column_int64(st, 0)),
        .process_row = op_rd_own_id(set, T_PROCESS, sqlite3_column_int64(st, 1)),
        .pid = sqlite3_column_int64(st, 2),
        .tid = sqlite3_column_int64(st, 3),
        .thread_name = sqlite3_column_text(st, 4),
        .command = sqlite3_column_text(st, 5),
        .hostname = sqlite3_column_text(st, 6),
    };
    return ((int (*)(const op_thread_info *, void *))c->fn)(&ti, c->arg);
}

int op_rd_threads(op_src *src, op_src_set *set, int (*cb)(const op_thread_info *, void *), void *arg,
                  char *err, size_t errlen) {
    if (!SRC_HAS(set, T_THREAD)) return 0;
    char sql[1200];
    if (SRC_HAS(set, T_PROCESS) && SRC_HAS(set, T_NODE))
        snprintf(sql, sizeof sql,
                 "SELECT T.id, T.pid, P.pid, T.tid, T.name, P.command, (SELECT hostname FROM %s N WHERE N.id = P.nid) "
                 "FROM %s T LEFT JOIN %s P ON P.id = T.pid AND P.guid = T.guid ORDER BY T.id",
                 set->name[T_NODE], set->name[T_THREAD], set->name[T_PROCESS]);
    else if (SRC_HAS(set, T_PROCESS))
        snprintf(sql, sizeof sql,
                 "SELECT T.id, T.pid, P.pid, T.tid, T.name, P.command, NULL FROM %s T LEFT JOIN %s P ON P.id = T.pid "
                 "AND P.guid = T.guid ORDER BY T.id",
                 set->name[T_THREAD], set->name[T_PROCESS]);
    else
        snprintf(sql, sizeof sql, "SELECT T.id, T.pid, T.pid, T.tid, T.name, NULL, NULL FROM %s T ORDER BY T.id",
                 set->name[T_THREAD]);
    op_rd_cb c = OP_RD_CB(cb, arg);
    c.set = set;
    return op_src_each_row(src, op_src_prepare(src, sql, err, errlen), thread_row, &c, err, errlen);
}

static int agent_row(sqlite3_stmt *st, void *arg) {
    op_rd_cb *c = arg;
    op_agent_info a = {.absolute_index = sqlite3_column_int64(st, 0),
                       .logical_index = sqlite3_column_int64(st, 1),
                       .type = sqlite3_column_text(st, 2)};
    for (int i = 0; i < 4; i++) {
        a.text[i] = sqlite3_column_text(st, 3 + i);
        a.text_len[i] = sqlite3_column_bytes(st, 3 + i);
    }
    for (int i = 0; i < OP_AGENT_PROPS; i++) a.prop[i] = sqlite3_column_int64(st, 7 + i);
    return ((int (*)(const op_agent_info *, void *))c->fn)(&a, c->arg);
}

/* rocprofv3's agent_info.csv columns (lib/output/generateCSV.cpp) and the extdata keys they read
 * (rocprofiler_agent_v0_t's fields; sdma_fw_version, fw_version and capability are bit-field
 * records there, read as their "Value" when a writer stores one). */
const op_agent_prop op_agent_props[OP_AGENT_PROPS] = {
    {"Cpu_Cores_Count", "cpu_cores_count"},
    {"Simd_Count", "simd_count"},
    {"Cpu_Core_Id_Base", "cpu_core_id_base"},
    {"Simd_Id_Base", "simd_id_base"},
    {"Max_Waves_Per_Simd", "max_waves_per_simd"},
    {"Lds_Size_In_Kb", "lds_size_in_kb"},
    {"Gds_Size_In_Kb", "gds_size_in_kb"},
    {"Num_Gws", "num_gws"},
    {"Wave_Front_Size", "wave_front_size"},
    {"Num_Xcc", "num_xcc"},
    {"Cu_Count", "cu_count"},
    {"Array_Count", "array_count"},
    {"Num_Shader_Banks", "num_shader_banks"},
    {"Simd_Arrays_Per_Engine", "simd_arrays_per_engine"},
    {"Cu_Per_Simd_Array", "cu_per_simd_array"},
    {"Simd_Per_Cu", "simd_per_cu"},
    {"Max_Slots_Scratch_Cu", "max_slots_scratch_cu"},
    {"Gfx_Target_Version", "gfx_target_version"},
    {"Vendor_Id", "vendor_id"},
    {"Device_Id", "device_id"},
    {"Location_Id", "location_id"},
    {"Domain", "domain"},
    {"Drm_Render_Minor", "drm_render_minor"},
    {"Num_Sdma_Engines", "num_sdma_engines"},
    {"Num_Sdma_Xgmi_Engines", "num_sdma_xgmi_engines"},
    {"Num_Sdma_Queues_Per_Engine", "num_sdma_queues_per_engine"},
    {"Num_Cp_Queues", "num_cp_queues"},
    {"Max_Engine_Clk_Ccompute", "max_engine_clk_ccompute"},
    {"Max_Engine_Clk_Fcompute", "max_engine_clk_fcompute"},
    {"Sdma_Fw_Version", "sdma_fw_version.Value"},
    {"Fw_Version", "fw_version.Value"},
    {"Capability", "capability.Value"},
    {"Cu_Per_Engine", "cu_per_engine"},
    {"Max_Waves_Per_Cu", "max_waves_per_cu"},
    {"Family_Id", "family_id"},
    {"Workgroup_Max_Size", "workgroup_max_size"},
    {"Grid_Max_Size", "grid_max_size"},
    {"Local_Mem_Size", "local_mem_size"},
    {"Hive_Id", "hive_id"},
    {"Gpu_Id", "gpu_id"},
    {"Workgroup_Max_Dim_X", "workgroup_max_dim.x"},
    {"Workgroup_Max_Dim_Y", "workgroup_max_dim.y"},
    {"Workgroup_Max_Dim_Z", "workgroup_max_dim.z"},
    {"Grid_Max_Dim_X", "grid_max_dim.x"},
    {"Grid_Max_Dim_Y", "grid_max_dim.y"},
    {"Grid_Max_Dim_Z", "grid_max_dim.z"},
};

int op_rd_agents(op_src *src, op_src_set *set, int (*cb)(const op_agent_info *, void *), void *arg, char *err,
                 size_t errlen) {
    if (!SRC_HAS(set, T_AGENT)) return 0;
    op_buf b = {0};
    op_buf_puts(&b, "SELECT absolute_index, COALESCE(logical_index, absolute_index), type, name, vendor_name, "
                    "product_name, model_name");
    for (int i = 0; i < OP_AGENT_PROPS; i++)
        op_buf_printf(&b, ", COALESCE(CAST(json_extract(CASE WHEN json_valid(extdata) THEN extdata END, '$.%s') AS INTEGER), 0)",
                      op_agent_props[i].json);
    op_buf_printf(&b, " FROM %s ORDER BY id", set->name[T_AGENT]);
    char *sql = op_buf_take(&b);
    sqlite3_stmt *st = sql ? op_src_prepare(src, sql, err, errlen) : NULL;
    free(sql);
    op_rd_cb c = OP_RD_CB(cb, arg);
    return op_src_each_row(src, st, agent_row, &c, err, errlen);
}

int op_rd_process(op_src *src, op_src_set *set, int64_t process_row, op_process_info *info) {
    memset(info, 0, sizeof *info);
    info->os_pid = process_row;
    info->rank = -1;
    if (!SRC_HAS(set, T_PROCESS)) return 0;
    char sql[900], err[8];
#define X_JSON(key) "json_extract(CASE WHEN json_valid(P.extdata) THEN P.extdata END, '$." key "')"
    if (SRC_HAS(set, T_NODE))
        snprintf(sql, sizeof sql,
                 "SELECT P.pid, (SELECT hostname FROM %s N WHERE N.id = P.nid), " X_JSON("rank") ", "
                 X_JSON("realtime_offset_ns") ", " X_JSON("boottime_offset_ns") " FROM %s P WHERE P.id = ?1",
                 set->name[T_NODE], set->name[T_PROCESS]);
    else
        snprintf(sql, sizeof sql,
                 "SELECT P.pid, NULL, NULL, " X_JSON("realtime_offset_ns") ", " X_JSON("boottime_offset_ns")
                 " FROM %s P WHERE P.id = ?1", set->name[T_PROCESS]);
#undef X_JSON
    sqlite3_stmt *st = op_src_prepare(src, sql, err, sizeof err);
    if (!st) return 0;
    sqlite3_bind_int64(st, 1, op_rd_file_id(set, T_PROCESS, process_row));
    if (sqlite3_step(st) == SQLITE_ROW) {
        info->os_pid = sqlite3_column_int64(st, 0);
        if (sqlite3_column_text(st, 1)) snprintf(info->host, sizeof info->host, "%s", (const char *)sqlite3_column_text(st, 1));
        if (sqlite3_column_type(st, 2) != SQLITE_NULL && sqlite3_column_int64(st, 2) >= 0)
            info->rank = sqlite3_column_int64(st, 2);
        if ((info->has_realtime = sqlite3_column_type(st, 3) == SQLITE_INTEGER))
            info->realtime_offset_ns = sqlite3_column_int64(st, 3);
        if ((info->has_boottime = sqlite3_column_type(st, 4) == SQLITE_INTEGER))
            info->boottime_offset_ns = sqlite3_column_int64(st, 4);
    }
    sqlite3_finalize(st);
    return 0;
}

/* ---- lookups by id ------------------------------------------------------------------------- */

op_rd_lookup *op_rd_lookup_new(op_src *src, op_src_set *set) {
    op_rd_lookup *lk = calloc(1, sizeof *lk);
    if (!lk) return NULL;
    lk->src = src;
    lk->set = set;
    return lk;
}

void op_rd_lookup_free(op_rd_lookup *lk) {
    if (!lk) return;
    sqlite3_finalize(lk->str);
    sqlite3_finalize(lk->ksym);
    sqlite3_finalize(lk->agent);
    sqlite3_finalize(lk->stk);
    sqlite3_finalize(lk->sym);
    free(lk);
}

/* Steps *st (prepared from `fmt` over table t on first use) with id bound: the text of column 0
 * ("" when there is no such row or table). */
static const unsigned char *lookup_text(op_rd_lookup *lk, sqlite3_stmt **st, int t, const char *fmt, int64_t id,
                                        int *len) {
    static const unsigned char empty[] = "";
    *len = 0;
    if (!*st) {
        if (!SRC_HAS(lk->set, t)) return empty;
        char sql[300], err[8];
        snprintf(sql, sizeof sql, fmt, lk->set->name[t]);
        if (!(*st = op_src_prepare(lk->src, sql, err, sizeof err))) return empty;
    }
    sqlite3_reset(*st);
    sqlite3_bind_int64(*st, 1, op_rd_file_id(lk->set, t, id));
    if (sqlite3_step(*st) != SQLITE_ROW) return empty;
    const unsigned char *s = sqlite3_column_text(*st, 0);
    *len = sqlite3_column_bytes(*st, 0);
    return s ? s : empty;
}

const unsigned char *op_rd_lookup_string(op_rd_lookup *lk, int64_t id, int *len) {
    return lookup_text(lk, &lk->str, T_STRING, "SELECT string FROM %s WHERE id = ?1", id, len);
}

const unsigned char *op_rd_lookup_kernel(op_rd_lookup *lk, int64_t id, int *len) {
    return lookup_text(lk, &lk->ksym, T_KERNEL_SYMBOL, "SELECT COALESCE(display_name, kernel_name) FROM %s WHERE id = ?1", id,
                       len);
}

int64_t op_rd_lookup_agent_index(op_rd_lookup *lk, int64_t agent_id) {
    if (!lk->agent) {
        if (!SRC_HAS(lk->set, T_AGENT)) return agent_id;
        char sql[300], err[8];
        snprintf(sql, sizeof sql, "SELECT COALESCE(logical_index, absolute_index) FROM %s WHERE id = ?1",
                 lk->set->name[T_AGENT]);
        if (!(lk->agent = op_src_prepare(lk->src, sql, err, sizeof err))) return agent_id;
    }
    sqlite3_reset(lk->agent);
    sqlite3_bind_int64(lk->agent, 1, op_rd_file_id(lk->set, T_AGENT, agent_id));
    if (sqlite3_step(lk->agent) == SQLITE_ROW && sqlite3_column_type(lk->agent, 0) != SQLITE_NULL)
        return sqlite3_column_int64(lk->agent, 0);
    return agent_id;
}
