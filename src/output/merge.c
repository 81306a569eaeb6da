/* merge.c — many rocpd databases into one (op_output_merge) and the union views shared with
 * query.c (op_union_views).
 *
 * Merged file layout: every input table set (one per profiled process) is copied under its own
 * uuid suffix, created by op_db_schema_create (the real schema), so every row keeps its id, guid
 * and pid, and (id, guid) joins of the rocpd views still pair rows of one process. The plain
 * views (rocpd_region, rocpd_string, ...) are then re-created as UNION ALL over all sets; the
 * data views (regions, kernels, top, ...) read the plain views and so span all processes.
 *
 * Bounds: inputs are attached one at a time (SQLite's limit of 10 attached databases never
 * matters), rows move with INSERT ... SELECT inside SQLite (no row is held here), the page cache
 * is capped (8 MiB), and the output is written under a temporary name and renamed at the end,
 * so a failed merge leaves nothing behind. A UNION ALL has at most 500 terms in SQLite
 * (SQLITE_MAX_COMPOUND_SELECT): beyond 400 sets the views are built from part views of 400.
 *
 * Invariants: (1) the output is never an input (it must not exist); (2) a set whose suffix is
 * already in the output (the same input given twice) gets a fresh uuid suffix — its rows are
 * still copied, with their guids. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/db.h"
#include "output/internal.h"

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

/* Creates (TEMP when temp) view `base` = UNION ALL of `tables` (each "schema"."name" text),
 * selecting `cols` (a column list, or "*"). */
int op_union_view(sqlite3 *db, int temp, const char *base, char *const *tables, size_t n, const char *cols, char *err,
                  size_t errlen) {
    op_buf b = {0};
    const char *tv = temp ? "TEMP " : "";
    int rc = 0;
    op_buf_printf(&b, "DROP VIEW IF EXISTS %s\"%s\";", temp ? "temp." : "", base);
    if (n <= UNION_CHUNK) {
        op_buf_printf(&b, "CREATE %sVIEW \"%s\" AS ", tv, base);
        for (size_t i = 0; i < n; i++) op_buf_printf(&b, "%sSELECT %s FROM %s", i ? " UNION ALL " : "", cols, tables[i]);
        op_buf_putc(&b, ';');
    } else {
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
    }
    op_buf_putc(&b, 0);
    if (b.oom) rc = -1;
    else rc = exec(db, (const char *)b.p, err, errlen, base);
    op_buf_free(&b);
    return rc;
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
    op_buf_putc(&b, 0);
    if (b.oom || n == 0) {
        op_buf_free(&b);
        return NULL;
    }
    return (char *)b.p;
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
            sprintf(tables[i], "main.\"%s%s\"", op_src_table_base[t], sl->v[i]);
        }
        if (!rc) rc = op_union_view(db, 0, op_src_table_base[t], tables, sl->n, "*", err, errlen);
        for (size_t i = 0; i < sl->n; i++) {
            free(tables[i]);
            tables[i] = NULL;
        }
    }
    free(tables);
    return rc;
}

/* Open every input once (each a valid rocpd database) and refuse a process (guid) found in two
 * of them: the same database given twice would count every row twice. */
int op_out_inputs_distinct(const char *const *inputs, size_t n_inputs, char *err, size_t errlen)
{
    op_guid_set seen = {0};
    int rc = 0;
    for (size_t i = 0; i < n_inputs && !rc; i++) {
        op_src *s;
        rc = op_src_open(inputs[i], &s, err, errlen);
        if (rc) break;
        for (size_t k = 0; k < s->n_sets && !rc; k++)
            if (guid_seen(&seen, s->sets[k].guid, inputs[i], err, errlen)) rc = OP_OUT_EINPUT;
        op_src_close(s);
    }
    guid_seen_free(&seen);
    return rc;
}

int op_output_merge(const char *const *inputs, size_t n_inputs, const char *out_path, int progress, char *err,
                    size_t errlen) {
    if (!inputs || n_inputs == 0) {
        op_seterr(err, errlen, "no input database given (-i DB...)");
        return OP_OUT_EINPUT;
    }
    if (!out_path || !*out_path) {
        op_seterr(err, errlen, "no output given (-o merged.db)");
        return OP_OUT_EINPUT;
    }
    struct stat st_out;
    if (stat(out_path, &st_out) == 0) {
        /* Invariant (1). Says whether it is one of the inputs, the worse mistake. */
        for (size_t i = 0; i < n_inputs; i++) {
            struct stat st_in;
            if (stat(inputs[i], &st_in) == 0 && st_in.st_dev == st_out.st_dev && st_in.st_ino == st_out.st_ino) {
                op_seterr(err, errlen, "%s: refusing to overwrite an input database", out_path);
                return OP_OUT_EINPUT;
            }
        }
        op_seterr(err, errlen, "%s: exists; refusing to overwrite it (remove it or choose another -o)", out_path);
        return OP_OUT_EINPUT;
    }
    /* Validate every input before writing anything. */
    int vrc = op_out_inputs_distinct(inputs, n_inputs, err, errlen);
    if (vrc) return vrc;
    size_t tl = strlen(out_path) + 64;
    char *tmp = malloc(tl);
    if (!tmp) return OP_OUT_EFAIL;
    snprintf(tmp, tl, "%s.tmp-%ld", out_path, (long)getpid());
    unlink(tmp);
    sqlite3 *db = NULL;
    int rc = OP_OUT_EFAIL;
    suffix_list sl = {0};
    op_progress prog;
    op_progress_init(&prog, progress, "merge: databases", n_inputs);
    prog.next = 1;
    if (sqlite3_open_v2(tmp, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
        op_seterr(err, errlen, "%s: cannot create: %s", out_path, db ? sqlite3_errmsg(db) : "out of memory");
        goto out;
    }
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)0);
#ifdef SQLITE_DBCONFIG_TRUSTED_SCHEMA
    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)0);
#endif
    if (exec(db, "PRAGMA trusted_schema=OFF; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-8192;",
             err, errlen, out_path))
        goto out;
    for (size_t i = 0; i < n_inputs; i++) {
        op_src *s;
        if (op_src_open(inputs[i], &s, err, errlen)) {
            rc = OP_OUT_EINPUT;
            goto out;
        }
        char *uri = op_src_uri(inputs[i]);
        sqlite3_stmt *at = NULL;
        int ok = uri && sqlite3_prepare_v2(db, "ATTACH ?1 AS src", -1, &at, NULL) == SQLITE_OK;
        if (ok) {
            sqlite3_bind_text(at, 1, uri, -1, SQLITE_STATIC);
            ok = sqlite3_step(at) == SQLITE_DONE;
        }
        sqlite3_finalize(at);
        free(uri);
        if (!ok) {
            op_seterr(err, errlen, "%s: cannot attach: %s", inputs[i], sqlite3_errmsg(db));
            op_src_close(s);
            rc = OP_OUT_EINPUT;
            goto out;
        }
        for (size_t k = 0; k < s->n_sets; k++) {
            op_src_set *set = &s->sets[k];
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
            if (sl_has(&sl, suffix)) { /* invariant (2) */
                op_db_make_uuid(uuid, sizeof uuid);
                for (size_t j = 0; j <= strlen(uuid); j++) suffix[j + 1] = uuid[j] == '-' ? '_' : uuid[j];
            }
            char e2[512];
            if (op_db_schema_create(db, uuid, e2, sizeof e2) != 0) {
                op_seterr(err, errlen, "%s: creating tables for set %s: %s", out_path, set->suffix, e2);
                op_src_close(s);
                goto out;
            }
            if (sl_add(&sl, suffix)) {
                op_src_close(s);
                goto out;
            }
            if (exec(db, "BEGIN", err, errlen, out_path)) {
                op_src_close(s);
                goto out;
            }
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
                op_buf_putc(&q, 0);
                free(cols);
                char e3[512];
                int bad = q.oom || exec(db, (const char *)q.p, e3, sizeof e3, in_name);
                op_buf_free(&q);
                if (bad) {
                    op_seterr(err, errlen, "%s: copying %s", inputs[i], e3);
                    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
                    op_src_close(s);
                    rc = OP_OUT_EINPUT;
                    goto out;
                }
            }
            if (exec(db, "COMMIT", err, errlen, out_path)) {
                op_src_close(s);
                goto out;
            }
        }
        op_src_close(s);
        if (exec(db, "DETACH src", err, errlen, out_path)) goto out;
        op_progress_tick(&prog, 1);
    }
    if (exec(db, "BEGIN", err, errlen, out_path) || rebuild_views(db, &sl, err, errlen) ||
        exec(db, "COMMIT", err, errlen, out_path))
        goto out;
    if (sqlite3_close(db) != SQLITE_OK) {
        op_seterr(err, errlen, "%s: closing failed", out_path);
        db = NULL;
        goto out;
    }
    db = NULL;
    if (link(tmp, out_path) != 0) { /* link, not rename: never replaces a file created meanwhile */
        op_seterr(err, errlen, "%s: cannot create: %s", out_path, strerror(errno));
        rc = errno == EEXIST ? OP_OUT_EINPUT : OP_OUT_EFAIL;
        goto out;
    }
    rc = OP_OUT_OK;
    op_progress_done(&prog);
out:
    if (db) sqlite3_close(db);
    unlink(tmp);
    free(tmp);
    sl_free(&sl);
    return rc;
}
