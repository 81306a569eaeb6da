/* reader_merge.c — many rocpd databases into one (op_db_merge, behind op_output_merge), the
 * merged file's processes as table sets of the reader (op_src_expand_merged), and the union
 * views shared with reader_union.c (op_union_view_sql).
 *
 * Merged file layout (docs/database.md "Merged files"): ONE table set (op_db_schema_create_merged:
 * the rocpd tables and views, guid a stored column, no UNIQUE constraints) holding the rows of
 * every process of every input. Each input set's rows are appended with their integer ids shifted
 * by the table's highest id so far (ids stay unique in the file, and a process's rows of a table
 * are one contiguous id range), every column that refers to a row (the declared foreign keys,
 * read from the schema, plus the columns tables.sql marks -- @ref / -- @json-ref) shifted by the
 * referenced table's shift (0 and NULL stay: "none"), and guid set to the process's guid.
 * omniprof_merged<suffix> records per (process, table) its id range, so a reader sees each
 * process as a set of its own (op_src_expand_merged: name[t] is a subquery over that range) and
 * every reader of a per-process set works unchanged; AMD's rocpd views join on (id, guid) and
 * work over the one set. Values that are not row ids stay as written (OS pids and tids, dispatch
 * and correlation ids, stack ids of rocpd_event, addresses). Cost: linear in rows — no table is
 * created per input (a schema of N table sets made every CREATE and every union view cost
 * O(N), the merge O(N^2)).
 *
 * Bounds: inputs are attached one at a time (SQLite's limit of 10 attached databases never
 * matters), rows move with INSERT ... SELECT inside SQLite (no row is held here), one
 * transaction per input, the page cache is capped (OP_MERGE_CACHE_KIB), the indexes that replace
 * the per-process UNIQUE constraints are built once at the end, and the output is a temporary
 * file that the caller (output/merge.c) links into place once it is whole, so a failed merge
 * leaves nothing behind.
 *
 * Clocks: when the caller gives a set an active clock map (src/output/clocks.c: the process's
 * MPI estimates against rank 0, or its wall-clock offset against the reference host's), every
 * time column (tables.sql's -- @time columns) of the set's rows moves onto the reference clock as
 * it is copied and its
 * omniprof_clock rows are marked applied, so that no reader applies them again.
 *
 * Invariants: (1) the output is never an input (it must not exist: the caller checks, and the
 * temporary file is created exclusively); (2) a set whose guid is already in the output (the
 * same input given twice) gets a fresh guid — its rows are still copied. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/strtab.h"
#include "db/db.h"
#include "db/reader_internal.h"

#define UNION_CHUNK 400
#define OP_MERGE_CACHE_KIB 32768

static int exec(sqlite3 *db, const char *sql, char *err, size_t errlen, const char *what) {
    char *m = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &m);
    if (rc != SQLITE_OK) {
        op_seterr(err, errlen, "%s: %s", what, m ? m : sqlite3_errstr(rc));
        sqlite3_free(m);
        return -1;
    }
    return 0;
}

char *op_union_view_sql(int temp, const char *base, char *const *tables, size_t n, const char *cols) {
    op_buf b = {0};
    const char *tv = temp ? "TEMP " : "";
    op_buf_printf(&b, "DROP VIEW IF EXISTS %s\"%s\";", temp ? "temp." : "", base);
    if (n <= UNION_CHUNK) {
        op_buf_printf(&b, "CREATE %sVIEW \"%s\" AS ", tv, base);
        for (size_t i = 0; i < n; i++) op_buf_printf(&b, "%sSELECT %s FROM %s", i ? " UNION ALL " : "", cols, tables[i]);
        op_buf_putc(&b, ';');
        return op_buf_take(&b);
    }
    size_t parts = (n + UNION_CHUNK - 1) / UNION_CHUNK;
    for (size_t p = 0; p < parts; p++) {
        op_buf_printf(&b, "DROP VIEW IF EXISTS %s\"%s__part%zu\";", temp ? "temp." : "", base, p);
        op_buf_printf(&b, "CREATE %sVIEW \"%s__part%zu\" AS ", tv, base, p);
        for (size_t i = p * UNION_CHUNK; i < n && i < (p + 1) * UNION_CHUNK; i++)
            op_buf_printf(&b, "%sSELECT %s FROM %s", i % UNION_CHUNK ? " UNION ALL " : "", cols, tables[i]);
        op_buf_putc(&b, ';');
    }
    op_buf_printf(&b, "CREATE %sVIEW \"%s\" AS ", tv, base);
    for (size_t p = 0; p < parts; p++) op_buf_printf(&b, "%sSELECT * FROM \"%s__part%zu\"", p ? " UNION ALL " : "", base, p);
    op_buf_putc(&b, ';');
    return op_buf_take(&b);
}

static int table_index(const char *base) {
    for (int t = 0; t < T_COUNT; t++)
        if (!strcmp(op_src_table_base[t], base)) return t;
    return -1;
}

/* ---- a merged file's processes as sets ----------------------------------------------------- */

/* Tables whose ids are natural keys (a process row's id is its OS pid, a thread row's its tid):
 * a merge keeps them unless another process already has one of them (two hosts), and a
 * process's rows are told apart by guid as well (the ids of two processes interleave). */
#define NATURAL_ID(t) ((t) == T_PROCESS || (t) == T_THREAD)

/* The condition that selects a merged set's rows of table t ("" for a set of its own). */
static void set_filter(const op_src_set *set, int t, char *buf, size_t n) {
    if (!set->merged) {
        buf[0] = 0;
        return;
    }
    int len = snprintf(buf, n, "id BETWEEN %lld AND %lld", (long long)set->lo[t], (long long)set->hi[t]);
    size_t gl = strlen(set->guid);
    if (NATURAL_ID(t) && gl && gl <= 40 && strspn(set->guid, "0123456789abcdefABCDEF-") == gl && len > 0)
        snprintf(buf + len, n - (size_t)len, " AND guid = '%s'", set->guid);
}

static int add_set(op_src_set **v, size_t *n, size_t *cap, const op_src_set *set) {
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        op_src_set *nv = realloc(*v, c * sizeof *nv);
        if (!nv) return -1;
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = *set;
    return 0;
}

/* Appends the processes of merged table set `phys` (its omniprof_merged rows) to v. */
static int expand_one(op_src *s, const op_src_set *phys, op_src_set **v, size_t *n, size_t *cap, char *err,
                      size_t errlen) {
    char sql[300];
    snprintf(sql, sizeof sql,
             "SELECT set_index, guid, table_name, id_lo, id_hi, id_shift FROM \"omniprof_merged%s\" "
             "ORDER BY set_index, id",
             phys->tables);
    sqlite3_stmt *st = op_src_prepare(s, sql, err, errlen);
    if (!st) return OP_RD_EINPUT;
    op_src_set cur;
    int64_t cur_index = 0;
    int have_cur = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t idx = sqlite3_column_int64(st, 0);
        const char *guid = (const char *)sqlite3_column_text(st, 1);
        const char *tn = (const char *)sqlite3_column_text(st, 2);
        if (!have_cur || idx != cur_index) {
            if (have_cur && add_set(v, n, cap, &cur)) break;
            memset(&cur, 0, sizeof cur);
            cur.merged = 1;
            snprintf(cur.tables, sizeof cur.tables, "%s", phys->tables);
            snprintf(cur.suffix, sizeof cur.suffix, "%.60s_p%lld", phys->tables, (long long)idx);
            snprintf(cur.guid, sizeof cur.guid, "%s", guid ? guid : "");
            cur_index = idx;
            have_cur = 1;
        }
        int t = tn ? table_index(tn) : -1;
        if (t < 0 || !SRC_HAS(phys, t)) continue; /* a table this reader does not know */
        cur.have |= 1ull << t;
        cur.lo[t] = sqlite3_column_int64(st, 3);
        cur.hi[t] = sqlite3_column_int64(st, 4);
        cur.shift[t] = sqlite3_column_int64(st, 5);
        char where[120];
        set_filter(&cur, t, where, sizeof where);
        if (snprintf(cur.name[t], sizeof cur.name[t], "(SELECT * FROM \"%s%s\" WHERE %s)", op_src_table_base[t],
                     phys->tables, where) >= (int)sizeof cur.name[t]) { /* never run a cut query */
            op_seterr(err, errlen, "%s: process %lld of the merged file: the query of %s%s is over %zu bytes", s->path,
                      (long long)idx, op_src_table_base[t], phys->tables, sizeof cur.name[t]);
            sqlite3_finalize(st);
            return OP_RD_EINPUT;
        }
    }
    if (rc == SQLITE_DONE && have_cur && add_set(v, n, cap, &cur)) rc = SQLITE_NOMEM;
    if (rc == SQLITE_ROW) rc = SQLITE_NOMEM; /* add_set failed inside the loop */
    if (rc != SQLITE_DONE && rc != SQLITE_NOMEM) op_src_failed(s, rc, err, errlen);
    if (rc == SQLITE_NOMEM) op_seterr(err, errlen, "%s: out of memory", s->path);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? OP_RD_OK : rc == SQLITE_NOMEM ? OP_RD_EFAIL : OP_RD_EINPUT;
}

int op_src_expand_merged(op_src *s, char *err, size_t errlen) {
    size_t k = 0;
    while (k < s->n_sets && s->sets[k].merged != -1) k++;
    if (k == s->n_sets) return OP_RD_OK;
    op_src_set *v = NULL;
    size_t n = 0, cap = 0;
    int rc = OP_RD_OK;
    for (size_t i = 0; i < s->n_sets && !rc; i++) {
        if (s->sets[i].merged != -1) {
            if (add_set(&v, &n, &cap, &s->sets[i])) rc = OP_RD_EFAIL;
        } else {
            rc = expand_one(s, &s->sets[i], &v, &n, &cap, err, errlen);
        }
    }
    if (rc) {
        if (rc == OP_RD_EFAIL) op_seterr(err, errlen, "%s: out of memory", s->path);
        free(v);
        return rc;
    }
    free(s->sets);
    s->sets = v;
    s->n_sets = n;
    return OP_RD_OK;
}

/* ---- the merge ------------------------------------------------------------------------------ */

/* The columns tables.sql marks (tables_gen.h, generated from it by gen_tables.py):
 *   k_times      CLOCK_MONOTONIC times of the row's process (-- @time); omniprof_clock's
 *                local_timestamp is not one: it stays local, it is what the estimate was
 *                measured at;
 *   k_refs       row references the schema does not declare (-- @ref; 0: none);
 *   k_json_refs  row ids inside JSON text (-- @json-ref): a queue's stream and agent, a PM
 *                track's agent, a stream argument's stream (rocpd's stream_args view). */
static const struct {
    int table;
    const char *col;
} k_times[] = {
#define MG_TIME(T, COL) {T, COL},
    OP_DB_TIME_COLUMNS(MG_TIME)
#undef MG_TIME
};

static const struct {
    int table;
    const char *col;
    int ref;
} k_refs[] = {
#define MG_REF(T, COL, REF) {T, COL, REF},
    OP_DB_REF_COLUMNS(MG_REF)
#undef MG_REF
};

static const struct {
    int table;
    const char *col, *key;
    int ref;
} k_json_refs[] = {
#define MG_JSON_REF(T, COL, KEY, REF) {T, COL, KEY, REF},
    OP_DB_JSON_REF_COLUMNS(MG_JSON_REF)
#undef MG_JSON_REF
};

/* `expr` (JSON text) with the integer row ids at its k_json_refs keys shifted: valid JSON whose
 * key holds an integer > 0 gets it replaced (json_replace never adds a key); anything else
 * passes unchanged. */
static void json_shift(op_buf *b, int t, const char *col, const int64_t *delta) {
    op_buf e = {0};
    char expr[80];
    snprintf(expr, sizeof expr, "\"%s\"", col);
    op_buf_puts(&e, expr);
    for (size_t k = 0; k < sizeof k_json_refs / sizeof k_json_refs[0]; k++) {
        if (k_json_refs[k].table != t || strcmp(k_json_refs[k].col, col)) continue;
        char *x = op_buf_take(&e);
        if (!x) break;
        const char *key = k_json_refs[k].key;
        op_buf_printf(&e,
                      "(CASE WHEN json_valid(%s) THEN (CASE WHEN json_type(%s, '$.%s') = 'integer' AND "
                      "json_extract(%s, '$.%s') > 0 THEN json_replace(%s, '$.%s', json_extract(%s, '$.%s') + %lld) "
                      "ELSE %s END) ELSE %s END)",
                      x, x, key, x, key, x, key, x, key, (long long)delta[k_json_refs[k].ref], x, x);
        free(x);
    }
    char *x = op_buf_take(&e);
    op_buf_puts(b, x ? x : expr);
    free(x);
}

/* The indexes that stand in for the per-process UNIQUE constraints (and the lookups they served:
 * a symbol by address within a process's id range, a stack node's children, a thread's row). */
static const struct {
    int table;
    const char *cols;
} k_indexes[] = {
    {T_STRING, "\"string\""}, {T_OP_STACK, "\"parent_id\", \"address\""},
    {T_OP_SYMBOL, "\"address\", \"id\""}, {T_OP_THREAD, "\"thread_id\""},
};

#define MG_MAX_COLS 48

typedef struct mg_table {
    int n_cols;
    char *cols[MG_MAX_COLS]; /* the output table's columns */
    int ref[MG_MAX_COLS];    /* the table a column refers to, -1 none */
    int time[MG_MAX_COLS];   /* a time column (k_times) */
    int json_ref[MG_MAX_COLS]; /* JSON text holding row ids (k_json_refs) */
    int virtual_guid;        /* guid is a VIRTUAL generated column (set_guid_columns) */
} mg_table;

typedef struct mg {
    sqlite3 *db;
    char suffix[72];          /* the output tables' suffix */
    mg_table t[T_COUNT];
    int64_t max[T_COUNT];     /* the highest id of each output table */
    op_strtab guids;          /* the guids written so far */
    sqlite3_stmt *rec;        /* INSERT INTO omniprof_merged */
    int64_t n_sets;
} mg;

static void mg_free(mg *m) {
    for (int t = 0; t < T_COUNT; t++)
        for (int c = 0; c < m->t[t].n_cols; c++) free(m->t[t].cols[c]);
    op_strtab_free(&m->guids);
    sqlite3_finalize(m->rec);
}

/* Reads the output tables' columns and references. */
static int mg_describe(mg *m, char *err, size_t errlen) {
    sqlite3_stmt *ci = NULL, *fk = NULL;
    int rc = sqlite3_prepare_v2(m->db, "SELECT name, hidden FROM pragma_table_xinfo(?1, 'main')", -1, &ci, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(m->db, "SELECT \"from\", \"table\" FROM pragma_foreign_key_list(?1, 'main')", -1, &fk,
                                NULL);
    for (int t = 0; t < T_COUNT && rc == SQLITE_OK; t++) {
        char name[160];
        snprintf(name, sizeof name, "%s%s", op_src_table_base[t], m->suffix);
        mg_table *mt = &m->t[t];
        sqlite3_reset(ci);
        sqlite3_bind_text(ci, 1, name, -1, SQLITE_TRANSIENT);
        while (sqlite3_step(ci) == SQLITE_ROW && mt->n_cols < MG_MAX_COLS) {
            const char *c = (const char *)sqlite3_column_text(ci, 0);
            int j = mt->n_cols;
            if (c && !strcmp(c, "guid") && sqlite3_column_int(ci, 1) == 2) { /* virtual: not copied */
                mt->virtual_guid = 1;
                continue;
            }
            if (!c || strchr(c, '"') || !(mt->cols[j] = strdup(c))) continue;
            mt->ref[j] = -1;
            mt->time[j] = 0;
            for (size_t k = 0; k < sizeof k_refs / sizeof k_refs[0]; k++)
                if (k_refs[k].table == t && !strcmp(k_refs[k].col, c)) mt->ref[j] = k_refs[k].ref;
            mt->json_ref[j] = 0;
            for (size_t k = 0; k < sizeof k_times / sizeof k_times[0]; k++)
                if (k_times[k].table == t && !strcmp(k_times[k].col, c)) mt->time[j] = 1;
            for (size_t k = 0; k < sizeof k_json_refs / sizeof k_json_refs[0]; k++)
                if (k_json_refs[k].table == t && !strcmp(k_json_refs[k].col, c)) mt->json_ref[j] = 1;
            mt->n_cols++;
        }
        sqlite3_reset(fk);
        sqlite3_bind_text(fk, 1, name, -1, SQLITE_TRANSIENT);
        while (sqlite3_step(fk) == SQLITE_ROW) {
            const char *from = (const char *)sqlite3_column_text(fk, 0), *to = (const char *)sqlite3_column_text(fk, 1);
            size_t tl = to ? strlen(to) : 0, sl = strlen(m->suffix);
            if (!from || tl <= sl || strcmp(to + tl - sl, m->suffix)) continue;
            char base[160];
            snprintf(base, sizeof base, "%.*s", (int)(tl - sl), to);
            int r = table_index(base);
            for (int j = 0; j < mt->n_cols && r >= 0; j++)
                if (!strcmp(mt->cols[j], from)) mt->ref[j] = r;
        }
        char sql[240];
        snprintf(sql, sizeof sql, "SELECT coalesce(max(id), 0) FROM main.\"%s\"", name);
        sqlite3_stmt *mx = NULL;
        if ((rc = sqlite3_prepare_v2(m->db, sql, -1, &mx, NULL)) == SQLITE_OK && sqlite3_step(mx) == SQLITE_ROW)
            m->max[t] = sqlite3_column_int64(mx, 0);
        sqlite3_finalize(mx);
    }
    sqlite3_finalize(ci);
    sqlite3_finalize(fk);
    if (rc == SQLITE_OK) {
        char sql[300];
        snprintf(sql, sizeof sql,
                 "INSERT INTO main.\"omniprof_merged%s\" (set_index, guid, suffix, table_name, id_lo, id_hi, id_shift) "
                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                 m->suffix);
        rc = sqlite3_prepare_v2(m->db, sql, -1, &m->rec, NULL);
    }
    if (rc != SQLITE_OK) op_seterr(err, errlen, "reading the merged schema: %s", sqlite3_errmsg(m->db));
    return rc == SQLITE_OK ? 0 : -1;
}

/* The columns of the input's table `in_name` (schema src), interned in `have`. */
static int src_columns(sqlite3 *db, const char *in_name, op_strtab *have) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_xinfo(?1, 'src')", -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_text(st, 1, in_name, -1, SQLITE_STATIC);
    uint32_t id;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(st, 0);
        if (c) op_strtab_intern(have, c, strlen(c), &id);
    }
    sqlite3_finalize(st);
    return 0;
}

/* One scalar of "SELECT ... FROM src..." into v[0..n) (NULL: 0). */
static int src_ints(sqlite3 *db, const char *sql, int64_t *v, int n) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW)
        for (int i = 0; i < n; i++) v[i] = sqlite3_column_int64(st, i);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : -1;
}

/* The guid the set's rows get: its own, a uuid-like suffix's, or a fresh one when it has none or
 * when it is already in the output (invariant 2). */
static void set_guid(mg *m, const op_src_set *set, char *uuid, size_t n) {
    const char *g = set->guid;
    size_t gl = strlen(g);
    if (gl > 0 && gl <= 40 && strspn(g, "0123456789abcdefABCDEF-") == gl) snprintf(uuid, n, "%s", g);
    else {
        const char *sx = set->suffix[0] == '_' ? set->suffix + 1 : set->suffix;
        size_t j = 0;
        for (; sx[j] && j + 1 < n; j++) uuid[j] = sx[j] == '_' ? '-' : sx[j];
        uuid[j] = 0;
        if (!j || j > 40 || strspn(uuid, "0123456789abcdefABCDEF-") != j) op_db_make_uuid(uuid, n);
    }
    uint32_t id;
    if (op_strtab_find(&m->guids, uuid, strlen(uuid), &id)) op_db_make_uuid(uuid, n);
    op_strtab_intern(&m->guids, uuid, strlen(uuid), &id);
}

/* The INSERT ... SELECT that copies table t of `set` (src."<in_name>", rows of ids base+1 on)
 * with ids shifted by delta[]. */
static char *copy_sql(const mg *m, int t, const op_src_set *set, const char *in_name, const op_strtab *have,
                      const int64_t *delta, const char *guid, const op_rd_clock_map *clk) {
    const mg_table *mt = &m->t[t];
    op_buf cols = {0}, sel = {0};
    uint32_t id;
    int n = 0;
    for (int j = 0; j < mt->n_cols; j++) {
        const char *c = mt->cols[j];
        int is_guid = !strcmp(c, "guid");
        if (!is_guid && !op_strtab_find(have, c, strlen(c), &id)) continue; /* the output's default */
        op_buf_printf(&cols, "%s\"%s\"", n ? ", " : "", c);
        op_buf_puts(&sel, n++ ? ", " : "");
        if (is_guid) op_buf_printf(&sel, "'%s'", guid);
        else if (!strcmp(c, "id")) op_buf_printf(&sel, "\"id\" + %lld", (long long)delta[t]);
        else if (mt->ref[j] >= 0)
            op_buf_printf(&sel, "CASE WHEN \"%s\" > 0 THEN \"%s\" + %lld ELSE \"%s\" END", c, c,
                          (long long)delta[mt->ref[j]], c);
        else if (t == T_OP_CLOCK && !strcmp(c, "applied") && clk && clk->active) op_buf_puts(&sel, "1");
        else if (mt->json_ref[j]) json_shift(&sel, t, c, delta);
        else if (mt->time[j] && clk && clk->active) {
            op_buf_printf(&sel, "\"%s\" - %lld", c, (long long)clk->offset);
            if (clk->rate != 0)
                op_buf_printf(&sel, " - CAST(%.17g * (\"%s\" - %lld) AS INTEGER)", clk->rate, c, (long long)clk->at);
        } else
            op_buf_printf(&sel, "\"%s\"", c);
    }
    char *c = op_buf_take(&cols), *v = op_buf_take(&sel);
    op_buf q = {0};
    if (n && c && v) {
        op_buf_printf(&q, "INSERT INTO main.\"%s%s\" (%s) SELECT %s FROM src.\"%s\"", op_src_table_base[t], m->suffix, c,
                      v, in_name);
        char where[120];
        set_filter(set, t, where, sizeof where);
        if (where[0]) op_buf_printf(&q, " WHERE %s", where);
        op_buf_puts(&q, " ORDER BY id");
    }
    free(c);
    free(v);
    return q.len ? op_buf_take(&q) : (op_buf_free(&q), NULL);
}

/* Appends one table set (attached as "src") to the output's tables. */
static int copy_set(mg *m, const char *path, const op_src_set *set, const op_rd_clock_map *clk, char *err,
                    size_t errlen) {
    char guid[112], e3[512];
    set_guid(m, set, guid, sizeof guid);
    /* per table: the new ids are the set's plus delta, in [lo, hi] */
    int64_t delta[T_COUNT] = {0}, lo[T_COUNT] = {0}, hi[T_COUNT] = {0};
    for (int t = 0; t < T_COUNT; t++) {
        if (!SRC_HAS(set, t)) continue;
        char sql[600], where[120];
        int64_t v[3] = {0, 0, 0}; /* min, max, a natural key already in the output */
        set_filter(set, t, where, sizeof where);
        int len;
        if (!NATURAL_ID(t))
            len = snprintf(sql, sizeof sql, "SELECT coalesce(min(id), 1), coalesce(max(id), 0), 0 FROM src.\"%s%s\"%s%s",
                           op_src_table_base[t], set->tables, where[0] ? " WHERE " : "", where);
        else /* ... and whether one of the ids is in the output already */
            len = snprintf(sql, sizeof sql,
                           "SELECT coalesce(min(id), 1), coalesce(max(id), 0), EXISTS (SELECT 1 FROM src.\"%s%s\" S "
                           "WHERE %s%sEXISTS (SELECT 1 FROM main.\"%s%s\" M WHERE M.id = S.id)) FROM src.\"%s%s\"%s%s",
                           op_src_table_base[t], set->tables, where, where[0] ? " AND " : "", op_src_table_base[t],
                           m->suffix, op_src_table_base[t], set->tables, where[0] ? " WHERE " : "", where);
        if (len >= (int)sizeof sql) { /* never run a cut query */
            op_seterr(err, errlen, "%s: the query of %s%s is over %zu bytes", path, op_src_table_base[t], set->tables,
                      sizeof sql);
            return OP_RD_EINPUT;
        }
        if (src_ints(m->db, sql, v, 3)) {
            op_seterr(err, errlen, "%s: reading %s%s: %s", path, op_src_table_base[t], set->tables, sqlite3_errmsg(m->db));
            return OP_RD_EINPUT;
        }
        if (NATURAL_ID(t) && !v[2]) { /* kept */
            lo[t] = v[0];
            hi[t] = v[1];
            continue;
        }
        /* appended after the output's rows: plain sets keep the distance of their ids from 0,
         * a merged file's sets from the start of their range */
        int64_t base = set->merged ? set->lo[t] - 1 : NATURAL_ID(t) ? v[0] - 1 : v[0] < 1 ? v[0] - 1 : 0;
        int64_t top = set->merged && !NATURAL_ID(t) ? set->hi[t] : v[1];
        delta[t] = m->max[t] - base;
        lo[t] = m->max[t] + 1;
        hi[t] = (top > base ? top : base) + delta[t];
    }
    for (int t = 0; t < T_COUNT; t++) {
        if (!SRC_HAS(set, t) || !m->t[t].n_cols) continue;
        char in_name[160];
        snprintf(in_name, sizeof in_name, "%s%s", op_src_table_base[t], set->tables);
        op_strtab have = {0};
        char *sql = src_columns(m->db, in_name, &have) ? NULL : copy_sql(m, t, set, in_name, &have, delta, guid, clk);
        op_strtab_free(&have);
        int bad = !sql || exec(m->db, sql, e3, sizeof e3, in_name);
        if (!sql) snprintf(e3, sizeof e3, "%s: cannot read its columns: %s", in_name, sqlite3_errmsg(m->db));
        free(sql);
        if (!bad) {
            sqlite3_reset(m->rec);
            sqlite3_bind_int64(m->rec, 1, m->n_sets);
            sqlite3_bind_text(m->rec, 2, guid, -1, SQLITE_STATIC);
            sqlite3_bind_text(m->rec, 3, set->suffix, -1, SQLITE_STATIC);
            sqlite3_bind_text(m->rec, 4, op_src_table_base[t], -1, SQLITE_STATIC);
            sqlite3_bind_int64(m->rec, 5, lo[t]);
            sqlite3_bind_int64(m->rec, 6, hi[t]);
            sqlite3_bind_int64(m->rec, 7, delta[t] + set->shift[t]); /* new id - the process's own */
            if (sqlite3_step(m->rec) != SQLITE_DONE) {
                snprintf(e3, sizeof e3, "recording the set: %s", sqlite3_errmsg(m->db));
                bad = 1;
            }
        }
        if (bad) {
            op_seterr(err, errlen, "%s: copying %s", path, e3);
            return OP_RD_EINPUT;
        }
        if (hi[t] > m->max[t]) m->max[t] = hi[t];
    }
    m->n_sets++;
    return 0;
}

/* Copies every set of input `path` (attached as "src") into the output, in one transaction. */
static int copy_input(mg *m, size_t idx, const char *path, op_db_merge_clock_fn clock, void *arg, char *err,
                      size_t errlen) {
    op_src *s;
    if (op_src_open(path, &s, err, errlen)) return OP_RD_EINPUT;
    char *uri = op_src_uri(path);
    sqlite3_stmt *at = NULL;
    int ok = uri && sqlite3_prepare_v2(m->db, "ATTACH ?1 AS src", -1, &at, NULL) == SQLITE_OK;
    if (ok) {
        sqlite3_bind_text(at, 1, uri, -1, SQLITE_STATIC);
        ok = sqlite3_step(at) == SQLITE_DONE;
    }
    sqlite3_finalize(at);
    free(uri);
    if (!ok) {
        op_seterr(err, errlen, "%s: cannot attach: %s", path, sqlite3_errmsg(m->db));
        op_src_close(s);
        return OP_RD_EINPUT;
    }
    int rc = exec(m->db, "BEGIN", err, errlen, path) ? OP_RD_EFAIL : 0;
    for (size_t k = 0; k < s->n_sets && !rc; k++)
        rc = copy_set(m, path, &s->sets[k], clock ? clock(arg, idx, k) : NULL, err, errlen);
    if (!rc && exec(m->db, "COMMIT", err, errlen, path)) rc = OP_RD_EFAIL;
    if (rc) sqlite3_exec(m->db, "ROLLBACK", NULL, NULL, NULL);
    op_src_close(s);
    char e2[256];
    if (exec(m->db, "DETACH src", e2, sizeof e2, path) && !rc) {
        op_seterr(err, errlen, "%s", e2);
        rc = OP_RD_EFAIL;
    }
    return rc;
}

/* The guid expression of a table over the id ranges of its processes (`rg`: lo and guid of
 * each non-empty range, ascending): a balanced tree of CASEs, log2(processes) comparisons a row. */
typedef struct guid_range {
    int64_t lo;
    char guid[48];
} guid_range;

static void guid_tree(op_buf *b, const guid_range *rg, size_t a, size_t z) {
    if (z - a == 1) {
        op_buf_printf(b, "'%s'", rg[a].guid);
        return;
    }
    size_t mid = a + (z - a) / 2;
    op_buf_printf(b, "CASE WHEN \"id\" < %lld THEN ", (long long)rg[mid].lo);
    guid_tree(b, rg, a, mid);
    op_buf_puts(b, " ELSE ");
    guid_tree(b, rg, mid, z);
    op_buf_puts(b, " END");
}

/* Gives every table whose guid is VIRTUAL its expression over the processes' id ranges (the
 * schema says ('') until now): an edit of sqlite_schema's text (writable_schema), safe because a
 * VIRTUAL column is not stored — the rows do not change, only how guid is computed. Last step
 * of a merge: the connection is closed right after. */
static int set_guid_columns(mg *m, char *err, size_t errlen) {
    char sql[300];
    sqlite3_stmt *rs = NULL, *up = NULL;
    snprintf(sql, sizeof sql,
             "SELECT id_lo, guid FROM main.\"omniprof_merged%s\" WHERE table_name = ?1 AND id_hi >= id_lo ORDER BY id_lo",
             m->suffix);
    sqlite3_db_config(m->db, SQLITE_DBCONFIG_DEFENSIVE, 0, (int *)0); /* our own new file */
    int rc = sqlite3_exec(m->db, "PRAGMA writable_schema=ON; BEGIN;", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(m->db, sql, -1, &rs, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(m->db,
                                "UPDATE sqlite_schema SET sql = replace(sql, 'GENERATED ALWAYS AS ('''') VIRTUAL', "
                                "'GENERATED ALWAYS AS (' || ?2 || ') VIRTUAL') WHERE type = 'table' AND name = ?1",
                                -1, &up, NULL);
    guid_range *rg = NULL;
    size_t cap = 0;
    for (int t = 0; t < T_COUNT && rc == SQLITE_OK; t++) {
        if (!m->t[t].virtual_guid) continue;
        size_t n = 0;
        sqlite3_bind_text(rs, 1, op_src_table_base[t], -1, SQLITE_STATIC);
        while (rc == SQLITE_OK && sqlite3_step(rs) == SQLITE_ROW) {
            if (n == cap) {
                guid_range *v = realloc(rg, (cap = cap ? cap * 2 : 256) * sizeof *rg);
                if (!v) rc = SQLITE_NOMEM;
                else rg = v;
            }
            if (rc != SQLITE_OK) break;
            rg[n].lo = sqlite3_column_int64(rs, 0);
            const char *g = (const char *)sqlite3_column_text(rs, 1); /* set_guid's: hex digits and '-' */
            snprintf(rg[n].guid, sizeof rg[n].guid, "%s", g ? g : "");
            n++;
        }
        sqlite3_reset(rs);
        op_buf e = {0};
        if (n) guid_tree(&e, rg, 0, n);
        else op_buf_puts(&e, "''");
        char *expr = op_buf_take(&e), name[160];
        snprintf(name, sizeof name, "%s%s", op_src_table_base[t], m->suffix);
        if (!expr) rc = SQLITE_NOMEM;
        if (rc == SQLITE_OK) {
            sqlite3_bind_text(up, 1, name, -1, SQLITE_STATIC);
            sqlite3_bind_text(up, 2, expr, -1, SQLITE_STATIC);
            rc = sqlite3_step(up) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(m->db);
            sqlite3_reset(up);
        }
        free(expr);
    }
    if (rc == SQLITE_OK) rc = sqlite3_exec(m->db, "COMMIT; PRAGMA writable_schema=OFF;", NULL, NULL, NULL);
    if (rc != SQLITE_OK) op_seterr(err, errlen, "recording the guids: %s", sqlite3_errmsg(m->db));
    free(rg);
    sqlite3_finalize(rs);
    sqlite3_finalize(up);
    return rc == SQLITE_OK ? 0 : -1;
}

/* The indexes of k_indexes, once all rows are in. */
static int create_indexes(mg *m, char *err, size_t errlen) {
    op_buf q = {0};
    op_buf_puts(&q, "BEGIN;");
    for (size_t k = 0; k < sizeof k_indexes / sizeof k_indexes[0]; k++) {
        const char *b = op_src_table_base[k_indexes[k].table];
        op_buf_printf(&q, "CREATE INDEX \"%s_merged%s\" ON \"%s%s\" (%s);", b, m->suffix, b, m->suffix,
                      k_indexes[k].cols);
    }
    op_buf_puts(&q, "COMMIT;");
    char *sql = op_buf_take(&q);
    int rc = sql ? exec(m->db, sql, err, errlen, "creating the indexes") : -1;
    free(sql);
    return rc;
}

int op_db_merge(const char *const *inputs, size_t n_inputs, const char *tmp_path, int (*tick)(void *),
                op_db_merge_clock_fn clock, void *arg, char *err, size_t errlen) {
    mg m = {0};
    int rc = OP_RD_EFAIL;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE; /* the caller created it exclusively */
    if (sqlite3_open_v2(tmp_path, &m.db, flags, NULL) != SQLITE_OK) {
        op_seterr(err, errlen, "%s: cannot create: %s", tmp_path, m.db ? sqlite3_errmsg(m.db) : "out of memory");
        goto out;
    }
    op_db_harden(m.db);
    char uuid[64], pragmas[160], e2[512];
    snprintf(pragmas, sizeof pragmas, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-%d;",
             OP_MERGE_CACHE_KIB);
    if (exec(m.db, pragmas, err, errlen, tmp_path)) goto out;
    op_db_make_uuid(uuid, sizeof uuid);
    m.suffix[0] = '_';
    for (size_t j = 0; j <= strlen(uuid); j++) m.suffix[j + 1] = uuid[j] == '-' ? '_' : uuid[j];
    if (op_db_schema_create_merged(m.db, uuid, e2, sizeof e2) != 0) {
        op_seterr(err, errlen, "%s: %s", tmp_path, e2);
        goto out;
    }
    if (mg_describe(&m, err, errlen)) goto out;
    for (size_t i = 0; i < n_inputs; i++) {
        if ((rc = copy_input(&m, i, inputs[i], clock, arg, err, errlen)) != 0) goto out;
        rc = OP_RD_EFAIL;
        if (tick && tick(arg)) {
            op_seterr(err, errlen, "%s: interrupted", tmp_path);
            goto out;
        }
    }
    if (create_indexes(&m, err, errlen) || set_guid_columns(&m, err, errlen)) goto out;
    sqlite3_finalize(m.rec);
    m.rec = NULL;
    int crc = sqlite3_close(m.db);
    m.db = NULL;
    if (crc != SQLITE_OK) {
        op_seterr(err, errlen, "%s: closing failed: %s", tmp_path, sqlite3_errstr(crc));
        goto out;
    }
    rc = OP_RD_OK;
out:
    mg_free(&m);
    if (m.db) sqlite3_close(m.db);
    return rc;
}
