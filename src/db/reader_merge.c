/* reader_merge.c — many rocpd databases into one (op_db_merge, behind op_output_merge) and the
 * union views shared with reader_union.c (op_union_view_sql).
 *
 * Merged file layout: every input table set (one per profiled process) is copied under its own
 * uuid suffix, created by op_db_schema_create (the real schema), so every row keeps its id, guid
 * and pid, and (id, guid) joins of the rocpd views still pair rows of one process. The plain
 * views (rocpd_region, rocpd_string, ...) are then re-created as UNION ALL over all sets; the
 * data views (regions, kernels, top, ...) read the plain views and so span all processes.
 *
 * Bounds: inputs are attached one at a time (SQLite's limit of 10 attached databases never
 * matters), rows move with INSERT ... SELECT inside SQLite (no row is held here), the page cache
 * is capped (8 MiB), and the output is a temporary file that the caller (output/merge.c) links
 * into place once it is whole, so a failed merge leaves nothing behind. A UNION ALL has at most 500 terms in SQLite
 * (SQLITE_MAX_COMPOUND_SELECT): beyond 400 sets the views are built from part views of 400.
 *
 * Clocks: when the caller gives a set an active clock map (src/output/clocks.c: the process's
 * MPI estimates against rank 0, or its wall-clock offset against the reference host's), every
 * time column of the set's copied rows moves onto the reference clock (one UPDATE per table that
 * has times) and its omniprof_clock rows are marked applied, so that no reader applies them again.
 *
 * Invariants: (1) the output is never an input (it must not exist: the caller checks, and the
 * temporary file is created exclusively); (2) a set whose suffix is already in the output (the
 * same input given twice) gets a fresh uuid suffix — its rows are still copied, and read that
 * suffix's guid (guid is a generated column of the schema, never copied). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/db.h"
#include "db/reader_internal.h"

#define UNION_CHUNK 400

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

/* Comma-separated quoted column names of table `name` in schema `schema` that also exist in
 * main.`out_name` (out_name NULL: all). */
static char *common_columns(sqlite3 *db, const char *schema, const char *name, const char *out_name) {
    sqlite3_stmt *st = NULL;
    op_buf b = {0};
    const char *sql = out_name
                          ? "SELECT name FROM pragma_table_info(?1, ?2) WHERE name IN (SELECT name FROM pragma_table_info(?3, 'main'))"
                          : "SELECT name FROM pragma_table_info(?1, ?2)";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return NULL;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, schema, -1, SQLITE_STATIC);
    if (out_name) sqlite3_bind_text(st, 3, out_name, -1, SQLITE_STATIC);
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(st, 0);
        if (!c) continue;
        op_buf_puts(&b, n++ ? ", \"" : "\"");
        for (; *c; c++) {
            if (*c == '"') op_buf_putc(&b, '"');
            op_buf_putc(&b, *c);
        }
        op_buf_putc(&b, '"');
    }
    sqlite3_finalize(st);
    if (n == 0) {
        op_buf_free(&b);
        return NULL;
    }
    return op_buf_take(&b);
}

static int is_uuid_text(const char *s) {
    size_t n = strlen(s);
    return n > 0 && n <= 64 && strspn(s, "0123456789abcdefABCDEF-") == n;
}

typedef struct suffix_list {
    char **v;
    size_t n, cap;
} suffix_list;

static int sl_has(const suffix_list *l, const char *s) {
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i], s)) return 1;
    return 0;
}

static int sl_add(suffix_list *l, const char *s) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        char **v = realloc(l->v, cap * sizeof(char *));
        if (!v) return -1;
        l->v = v;
        l->cap = cap;
    }
    return (l->v[l->n++] = strdup(s)) ? 0 : -1;
}

static void sl_free(suffix_list *l) {
    for (size_t i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
}

/* Rebuilds every plain view of `db` (main schema) as the union of the sets in `sl`. */
static int rebuild_views(sqlite3 *db, const suffix_list *sl, char *err, size_t errlen) {
    char **tables = calloc(sl->n + 1, sizeof(char *));
    if (!tables) return -1;
    int rc = 0;
    for (int t = 0; t < T_COUNT && !rc; t++) {
        for (size_t i = 0; i < sl->n; i++) {
            tables[i] = malloc(strlen(op_src_table_base[t]) + strlen(sl->v[i]) + 16);
            if (!tables[i]) {
                rc = -1;
                break;
            }
            sprintf(tables[i], "\"%s%s\"", op_src_table_base[t], sl->v[i]); /* unqualified: the file may be attached */
        }
        char *sql = rc ? NULL : op_union_view_sql(0, op_src_table_base[t], tables, sl->n, "*");
        if (!rc) rc = sql ? exec(db, sql, err, errlen, op_src_table_base[t]) : -1;
        free(sql);
        for (size_t i = 0; i < sl->n; i++) {
            free(tables[i]);
            tables[i] = NULL;
        }
    }
    free(tables);
    return rc;
}

/* Columns holding CLOCK_MONOTONIC times of the row's process (omniprof_clock's local_timestamp
 * stays local: it is what the estimate was measured at). */
static const struct {
    int table;
    const char *cols[4];
} k_times[] = {
    {T_PROCESS, {"init", "fini", "start", "end"}}, {T_THREAD, {"start", "end"}}, {T_REGION, {"start", "end"}},
    {T_SAMPLE, {"timestamp"}}, {T_KERNEL, {"start", "end"}}, {T_COPY, {"start", "end"}}, {T_ALLOC, {"start", "end"}},
    {T_OP_CPU_SAMPLE, {"timestamp"}}, {T_OP_METRIC, {"timestamp"}}, {T_OP_PC_SAMPLE, {"timestamp"}},
    {T_OP_CAUSAL_EXPERIMENT, {"start", "end"}}, {T_OP_COMM, {"start", "end"}},
};

/* Moves the times of the copied table t (output table `out`) onto the reference clock:
 * t' = t - (offset + rate x (t - at)), as op_rd_clock_apply. */
static int clock_table(sqlite3 *db, int t, const char *out, const op_rd_clock_map *clk, char *err, size_t errlen) {
    op_buf q = {0};
    if (t == T_OP_CLOCK) op_buf_printf(&q, "UPDATE main.\"%s\" SET applied = 1", out);
    for (size_t k = 0; k < sizeof k_times / sizeof k_times[0]; k++) {
        if (k_times[k].table != t) continue;
        op_buf_printf(&q, "UPDATE main.\"%s\" SET ", out);
        for (int c = 0; c < 4 && k_times[k].cols[c]; c++) {
            const char *n = k_times[k].cols[c];
            op_buf_printf(&q, "%s\"%s\" = \"%s\" - %lld", c ? ", " : "", n, n, (long long)clk->offset);
            if (clk->rate != 0)
                op_buf_printf(&q, " - CAST(%.17g * (\"%s\" - %lld) AS INTEGER)", clk->rate, n, (long long)clk->at);
        }
    }
    if (!q.len) return 0;
    char *sql = op_buf_take(&q);
    int rc = sql ? exec(db, sql, err, errlen, out) : -1;
    free(sql);
    return rc;
}

/* Copies one table set (tables of `set` in the attached "src") under a suffix of its own. */
static int copy_set(sqlite3 *db, const char *path, op_src_set *set, suffix_list *sl, const op_rd_clock_map *clk,
                    char *err, size_t errlen) {
    char uuid[112];
    if (is_uuid_text(set->guid)) snprintf(uuid, sizeof uuid, "%s", set->guid);
    else {
        const char *sx = set->suffix[0] == '_' ? set->suffix + 1 : set->suffix;
        size_t j = 0;
        for (; sx[j] && j + 1 < sizeof uuid; j++) uuid[j] = sx[j] == '_' ? '-' : sx[j];
        uuid[j] = 0;
        if (!is_uuid_text(uuid)) op_db_make_uuid(uuid, sizeof uuid);
    }
    char suffix[96];
    suffix[0] = '_';
    for (size_t j = 0; j <= strlen(uuid); j++) suffix[j + 1] = uuid[j] == '-' ? '_' : uuid[j];
    if (sl_has(sl, suffix)) { /* invariant (2) */
        op_db_make_uuid(uuid, sizeof uuid);
        for (size_t j = 0; j <= strlen(uuid); j++) suffix[j + 1] = uuid[j] == '-' ? '_' : uuid[j];
    }
    char e2[512];
    if (op_db_schema_create(db, uuid, e2, sizeof e2) != 0) {
        op_seterr(err, errlen, "creating tables for set %s of %s: %s", set->suffix, path, e2);
        return OP_RD_EFAIL;
    }
    if (sl_add(sl, suffix) || exec(db, "BEGIN", err, errlen, path)) return OP_RD_EFAIL;
    for (int t = 0; t < T_COUNT; t++) {
        if (!SRC_HAS(set, t)) continue;
        char in_name[160], out_name[160];
        snprintf(in_name, sizeof in_name, "%s%s", op_src_table_base[t], set->suffix);
        snprintf(out_name, sizeof out_name, "%s%s", op_src_table_base[t], suffix);
        char *cols = common_columns(db, "src", in_name, out_name);
        if (!cols) continue;
        op_buf q = {0};
        if (t == T_METADATA)
            op_buf_printf(&q, "INSERT INTO main.\"%s\" (tag, value) SELECT tag, value FROM src.\"%s\" WHERE tag NOT IN "
                              "(SELECT tag FROM main.\"%s\")",
                          out_name, in_name, out_name);
        else
            op_buf_printf(&q, "INSERT INTO main.\"%s\" (%s) SELECT %s FROM src.\"%s\"", out_name, cols, cols, in_name);
        free(cols);
        char *sql = op_buf_take(&q), e3[512];
        int bad = !sql || exec(db, sql, e3, sizeof e3, in_name);
        free(sql);
        if (!bad && clk && clk->active) bad = clock_table(db, t, out_name, clk, e3, sizeof e3);
        if (bad) {
            op_seterr(err, errlen, "%s: copying %s", path, e3);
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            return OP_RD_EINPUT;
        }
    }
    return exec(db, "COMMIT", err, errlen, path) ? OP_RD_EFAIL : 0;
}

/* Copies every set of input `path` (attached as "src") into the output. */
static int copy_input(sqlite3 *db, size_t idx, const char *path, suffix_list *sl, op_db_merge_clock_fn clock, void *arg,
                      char *err, size_t errlen) {
    op_src *s;
    if (op_src_open(path, &s, err, errlen)) return OP_RD_EINPUT;
    char *uri = op_src_uri(path);
    sqlite3_stmt *at = NULL;
    int ok = uri && sqlite3_prepare_v2(db, "ATTACH ?1 AS src", -1, &at, NULL) == SQLITE_OK;
    if (ok) {
        sqlite3_bind_text(at, 1, uri, -1, SQLITE_STATIC);
        ok = sqlite3_step(at) == SQLITE_DONE;
    }
    sqlite3_finalize(at);
    free(uri);
    if (!ok) {
        op_seterr(err, errlen, "%s: cannot attach: %s", path, sqlite3_errmsg(db));
        op_src_close(s);
        return OP_RD_EINPUT;
    }
    int rc = 0;
    for (size_t k = 0; k < s->n_sets && !rc; k++)
        rc = copy_set(db, path, &s->sets[k], sl, clock ? clock(arg, idx, k) : NULL, err, errlen);
    op_src_close(s);
    if (!rc && exec(db, "DETACH src", err, errlen, path)) rc = OP_RD_EFAIL;
    return rc;
}

int op_db_merge(const char *const *inputs, size_t n_inputs, const char *tmp_path, int (*tick)(void *),
                op_db_merge_clock_fn clock, void *arg, char *err, size_t errlen) {
    sqlite3 *db = NULL;
    int rc = OP_RD_EFAIL;
    suffix_list sl = {0};
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE; /* the caller created it exclusively */
    if (sqlite3_open_v2(tmp_path, &db, flags, NULL) != SQLITE_OK) {
        op_seterr(err, errlen, "%s: cannot create: %s", tmp_path, db ? sqlite3_errmsg(db) : "out of memory");
        goto out;
    }
    op_db_harden(db);
    if (exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-8192;", err, errlen, tmp_path))
        goto out;
    for (size_t i = 0; i < n_inputs; i++) {
        if ((rc = copy_input(db, i, inputs[i], &sl, clock, arg, err, errlen)) != 0) goto out;
        rc = OP_RD_EFAIL;
        if (tick && tick(arg)) {
            op_seterr(err, errlen, "%s: interrupted", tmp_path);
            goto out;
        }
    }
    if (exec(db, "BEGIN", err, errlen, tmp_path) || rebuild_views(db, &sl, err, errlen) ||
        exec(db, "COMMIT", err, errlen, tmp_path))
        goto out;
    int crc = sqlite3_close(db);
    db = NULL;
    if (crc != SQLITE_OK) {
        op_seterr(err, errlen, "%s: closing failed: %s", tmp_path, sqlite3_errstr(crc));
        goto out;
    }
    rc = OP_RD_OK;
out:
    if (db) sqlite3_close(db);
    sl_free(&sl);
    return rc;
}
