/* query.c — read-only SQL over the union of many rocpd databases (op_output_query).
 *
 * How the inputs become one: with one input, it is opened read-only and its own views are
 * used. With up to 9 (SQLITE_MAX_ATTACHED is 10 in Debian's SQLite, and one slot stays free),
 * an in-memory connection ATTACHes each input read-only, builds TEMP views named like the
 * plain rocpd views as UNION ALL over every set of every input (columns common to all sets, so
 * a rocprofv3 set and an omniprof set combine), then re-creates the data/summary views as TEMP
 * views over them (rocpd's importer does the same). Beyond 9 inputs they are first merged
 * (op_output_merge, bounded memory) into a temporary file, which is then queried alone.
 *
 * Read-only: the connection is put in query_only mode after the views are built, every user
 * statement must satisfy sqlite3_stmt_readonly(), and an authorizer refuses ATTACH, DETACH and
 * PRAGMAs that change settings. A write statement gets "refused: ... read-only". */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "db/db.h"
#include "output/internal.h"

int op_union_view(sqlite3 *db, int temp, const char *base, char *const *tables, size_t n, const char *cols, char *err,
                  size_t errlen);

const char *op_output_views_sql(void) { return op_db_schema_views_sql(); }

static int deny_changes(void *arg, int action, const char *a, const char *b, const char *c, const char *d) {
    (void)arg;
    (void)b;
    (void)c;
    (void)d;
    if (action == SQLITE_ATTACH || action == SQLITE_DETACH) return SQLITE_DENY;
    if (action == SQLITE_PRAGMA && b) return SQLITE_DENY; /* "PRAGMA x = value" */
    (void)a;
    return SQLITE_OK;
}

/* Opens the union connection of inputs. *tmp_path receives a temp file to unlink (or NULL). */
static int open_union(const char *const *inputs, size_t n, sqlite3 **out, char **tmp_path, char *err, size_t errlen) {
    *out = NULL;
    *tmp_path = NULL;
    for (size_t i = 0; i < n; i++) {
        op_src *s;
        int rc = op_src_open(inputs[i], &s, err, errlen);
        if (rc) return rc;
        op_src_close(s);
    }
    if (n > 9) {
        const char *dir = getenv("TMPDIR");
        op_buf b = {0};
        op_buf_printf(&b, "%s/omniprof-query-%ld-%p.db", dir && *dir ? dir : "/tmp", (long)getpid(), (void *)&b);
        op_buf_putc(&b, 0);
        if (b.oom) return OP_OUT_EFAIL;
        int rc = op_output_merge(inputs, n, (const char *)b.p, 0, err, errlen);
        if (rc) {
            op_buf_free(&b);
            return rc;
        }
        *tmp_path = (char *)b.p;
        const char *one[1] = {*tmp_path};
        return open_union(one, 1, out, &(char *){NULL}, err, errlen);
    }
    if (n == 1) {
        int rc = op_src_open_db(inputs[0], out, err, errlen);
        if (rc) return rc;
        sqlite3_set_authorizer(*out, deny_changes, NULL);
        return 0;
    }
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        op_seterr(err, errlen, "cannot open an in-memory database");
        return OP_OUT_EFAIL;
    }
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)0);
#ifdef SQLITE_DBCONFIG_TRUSTED_SCHEMA
    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)0);
#endif
    sqlite3_exec(db, "PRAGMA trusted_schema=OFF", NULL, NULL, NULL);
    /* tables[t] = list of "dbI"."base<suffix>" */
    char **tables[T_COUNT] = {0};
    size_t nt[T_COUNT] = {0};
    size_t cap = 0;
    int rc = 0;
    op_guid_set seen = {0};
    for (size_t i = 0; i < n && !rc; i++) {
        op_src *s;
        rc = op_src_open(inputs[i], &s, err, errlen);
        if (rc) break;
        char *uri = op_src_uri(inputs[i]);
        char sql[64];
        snprintf(sql, sizeof sql, "ATTACH ?1 AS db%zu", i);
        sqlite3_stmt *at = NULL;
        if (!uri || sqlite3_prepare_v2(db, sql, -1, &at, NULL) != SQLITE_OK) rc = OP_OUT_EFAIL;
        else {
            sqlite3_bind_text(at, 1, uri, -1, SQLITE_STATIC);
            if (sqlite3_step(at) != SQLITE_DONE) {
                op_seterr(err, errlen, "%s: cannot attach: %s", inputs[i], sqlite3_errmsg(db));
                rc = OP_OUT_EINPUT;
            }
        }
        sqlite3_finalize(at);
        free(uri);
        for (size_t k = 0; k < s->n_sets && !rc; k++) {
            if (guid_seen(&seen, s->sets[k].guid, inputs[i], err, errlen)) {
                rc = OP_OUT_EINPUT;
                break;
            }
            for (int t = 0; t < T_COUNT; t++) {
                if (!SRC_HAS(&s->sets[k], t)) continue;
                if (nt[t] == cap || !tables[t]) {
                    /* grow all lists to the same capacity */
                }
                char **v = realloc(tables[t], (nt[t] + 1) * sizeof(char *));
                if (!v) {
                    rc = OP_OUT_EFAIL;
                    break;
                }
                tables[t] = v;
                size_t len = strlen(s->sets[k].suffix) + 64;
                v[nt[t]] = malloc(len);
                if (!v[nt[t]]) {
                    rc = OP_OUT_EFAIL;
                    break;
                }
                snprintf(v[nt[t]], len, "db%zu.\"%s%s\"", i, op_src_table_base[t], s->sets[k].suffix);
                nt[t]++;
            }
        }
        op_src_close(s);
    }
    (void)cap;
    guid_seen_free(&seen);
    /* Union views over the columns every set's table has (intersection by name). */
    for (int t = 0; t < T_COUNT && !rc; t++) {
        if (!nt[t]) continue;
        op_buf cols = {0};
        sqlite3_stmt *st = NULL;
        /* columns of the first table, kept when every other table has them */
        char schema[32], name[200];
        const char *first = tables[t][0];
        const char *dot = strchr(first, '.');
        snprintf(schema, sizeof schema, "%.*s", (int)(dot - first), first);
        snprintf(name, sizeof name, "%.*s", (int)strlen(dot + 2) - 1, dot + 2);
        if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?1, ?2)", -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, schema, -1, SQLITE_STATIC);
            int nc = 0;
            while (sqlite3_step(st) == SQLITE_ROW) {
                const char *c = (const char *)sqlite3_column_text(st, 0);
                int everywhere = 1;
                for (size_t j = 1; j < nt[t] && everywhere; j++) {
                    char s2[32], n2[200];
                    const char *d2 = strchr(tables[t][j], '.');
                    snprintf(s2, sizeof s2, "%.*s", (int)(d2 - tables[t][j]), tables[t][j]);
                    snprintf(n2, sizeof n2, "%.*s", (int)strlen(d2 + 2) - 1, d2 + 2);
                    sqlite3_stmt *q = NULL;
                    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1, ?2) WHERE name = ?3", -1, &q, NULL) == SQLITE_OK) {
                        sqlite3_bind_text(q, 1, n2, -1, SQLITE_STATIC);
                        sqlite3_bind_text(q, 2, s2, -1, SQLITE_STATIC);
                        sqlite3_bind_text(q, 3, c, -1, SQLITE_STATIC);
                        everywhere = sqlite3_step(q) == SQLITE_ROW;
                    }
                    sqlite3_finalize(q);
                }
                if (!everywhere || !c || strchr(c, '"')) continue;
                op_buf_printf(&cols, "%s\"%s\"", nc++ ? ", " : "", c);
            }
            op_buf_putc(&cols, 0);
        }
        sqlite3_finalize(st);
        if (cols.oom || cols.len <= 1) rc = OP_OUT_EINPUT;
        else if (op_union_view(db, 1, op_src_table_base[t], tables[t], nt[t], (const char *)cols.p, err, errlen))
            rc = OP_OUT_EINPUT;
        op_buf_free(&cols);
    }
    for (int t = 0; t < T_COUNT; t++) {
        for (size_t j = 0; j < nt[t]; j++) free(tables[t][j]);
        free(tables[t]);
    }
    if (!rc) {
        char e2[512] = "";
        if (op_db_schema_create_views(db, 1, e2, sizeof e2) != 0) {
            /* A view that cannot be built over these inputs (e.g. a column missing in a foreign
             * database) is left out; the plain views and the others still work. */
            (void)e2;
        }
        sqlite3_exec(db, "PRAGMA query_only=1", NULL, NULL, NULL);
        sqlite3_set_authorizer(db, deny_changes, NULL);
        *out = db;
        return 0;
    }
    sqlite3_close(db);
    return rc;
}

/* Whether a statement starts with a keyword that writes (for a clear refusal when SQLite
 * cannot even prepare it, e.g. DELETE on a view). */
static int is_write_keyword(const char *sql) {
    static const char *const kw[] = {"INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER",
                                     "ATTACH", "DETACH", "VACUUM", "REINDEX", "UPSERT", NULL};
    while (*sql == ' ' || *sql == '\t' || *sql == '\n' || *sql == '\r' || *sql == '(') sql++;
    for (int i = 0; kw[i]; i++) {
        size_t n = strlen(kw[i]);
        if (!strncasecmp(sql, kw[i], n) && !((sql[n] >= 'A' && sql[n] <= 'Z') || (sql[n] >= 'a' && sql[n] <= 'z')))
            return 1;
    }
    return 0;
}

/* ---- result printing ------------------------------------------------------------------------ */

static void cell_text(op_buf *b, sqlite3_stmt *st, int i, int fmt) {
    int t = sqlite3_column_type(st, i);
    if (t == SQLITE_NULL) {
        if (fmt == OP_OUT_QUERY_JSON) op_buf_puts(b, "null");
        else if (fmt != OP_OUT_QUERY_CSV) op_buf_puts(b, "NULL");
        return;
    }
    if (t == SQLITE_INTEGER) {
        op_buf_printf(b, "%lld", (long long)sqlite3_column_int64(st, i));
        return;
    }
    if (t == SQLITE_FLOAT) {
        char d[40];
        double v = sqlite3_column_double(st, i);
        op_buf_puts(b, fmt == OP_OUT_QUERY_JSON && !isfinite(v) ? "null" : op_fmt_double(d, sizeof d, v));
        return;
    }
    const unsigned char *s;
    size_t n;
    op_buf hex = {0};
    if (t == SQLITE_BLOB) {
        const unsigned char *p = sqlite3_column_blob(st, i);
        n = (size_t)sqlite3_column_bytes(st, i);
        op_buf_puts(&hex, "x'");
        for (size_t k = 0; k < n; k++) op_buf_printf(&hex, "%02x", p[k]);
        op_buf_putc(&hex, '\'');
        s = hex.p;
        n = hex.len;
    } else {
        s = sqlite3_column_text(st, i);
        n = (size_t)sqlite3_column_bytes(st, i);
    }
    if (!s) s = (const unsigned char *)"";
    switch (fmt) {
    case OP_OUT_QUERY_JSON:
        op_buf_putc(b, '"');
        op_buf_json_str(b, s, n);
        op_buf_putc(b, '"');
        break;
    case OP_OUT_QUERY_CSV:
        op_buf_csv_str(b, s, n, 0);
        break;
    case OP_OUT_QUERY_MD:
        for (size_t k = 0; k < n; k++) {
            if (s[k] == '|') op_buf_puts(b, "\\|");
            else if (s[k] == '\n' || s[k] == '\r') op_buf_putc(b, ' ');
            else op_buf_putc(b, s[k]);
        }
        break;
    default:
        for (size_t k = 0; k < n; k++) op_buf_putc(b, s[k] == '\n' || s[k] == '\r' || s[k] == '\t' ? ' ' : s[k]);
        break;
    }
    op_buf_free(&hex);
}

#define CONSOLE_PEEK 200

static int print_console(sqlite3_stmt *st, FILE *out, int rc0, char *err, size_t errlen) {
    int nc = sqlite3_column_count(st);
    size_t *w = calloc((size_t)nc, sizeof(size_t));
    op_buf *cells = calloc((size_t)nc * CONSOLE_PEEK, sizeof(op_buf));
    if (!w || !cells) {
        free(w);
        free(cells);
        return OP_OUT_EFAIL;
    }
    for (int i = 0; i < nc; i++) w[i] = strlen(sqlite3_column_name(st, i));
    int rc = rc0, nrows = 0;
    while (rc == SQLITE_ROW && nrows < CONSOLE_PEEK) {
        for (int i = 0; i < nc; i++) {
            op_buf *c = &cells[(size_t)nrows * nc + i];
            cell_text(c, st, i, OP_OUT_QUERY_CONSOLE);
            if (c->len > w[i]) w[i] = c->len > 80 ? 80 : c->len;
        }
        nrows++;
        rc = sqlite3_step(st);
    }
    op_buf line = {0};
    for (int i = 0; i < nc; i++) op_buf_printf(&line, "%s%-*s", i ? " | " : "", (int)w[i], sqlite3_column_name(st, i));
    op_buf_putc(&line, '\n');
    for (int i = 0; i < nc; i++) {
        op_buf_puts(&line, i ? "-+-" : "");
        for (size_t k = 0; k < w[i]; k++) op_buf_putc(&line, '-');
    }
    op_buf_putc(&line, '\n');
    for (int r = 0; r < nrows; r++) {
        for (int i = 0; i < nc; i++) {
            op_buf *c = &cells[(size_t)r * nc + i];
            if (i) op_buf_puts(&line, " | ");
            op_buf_put(&line, c->p, c->len);
            for (size_t k = c->len; k < w[i]; k++) op_buf_putc(&line, ' ');
            op_buf_free(c);
        }
        op_buf_putc(&line, '\n');
    }
    while (rc == SQLITE_ROW) {
        for (int i = 0; i < nc; i++) {
            op_buf c = {0};
            cell_text(&c, st, i, OP_OUT_QUERY_CONSOLE);
            if (i) op_buf_puts(&line, " | ");
            op_buf_put(&line, c.p, c.len);
            for (size_t k = c.len; k < w[i]; k++) op_buf_putc(&line, ' ');
            op_buf_free(&c);
        }
        op_buf_putc(&line, '\n');
        if (line.len > (1u << 16) && op_buf_write(&line, out)) break;
        rc = sqlite3_step(st);
        nrows++;
    }
    int bad = op_buf_write(&line, out);
    op_buf_free(&line);
    free(w);
    free(cells);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        op_seterr(err, errlen, "query failed: %s", sqlite3_errmsg(sqlite3_db_handle(st)));
        return OP_OUT_EINPUT;
    }
    return bad ? OP_OUT_EFAIL : 0;
}

int op_output_query(const char *const *inputs, size_t n_inputs, const char *sql, int format, FILE *out, char *err,
                    size_t errlen) {
    if (!inputs || n_inputs == 0) {
        op_seterr(err, errlen, "no input database given (-i DB...)");
        return OP_OUT_EINPUT;
    }
    if (!sql || !*sql) {
        op_seterr(err, errlen, "no SQL given (--sql \"SELECT ...\")");
        return OP_OUT_EINPUT;
    }
    sqlite3 *db;
    char *tmp = NULL;
    int rc = open_union(inputs, n_inputs, &db, &tmp, err, errlen);
    if (rc) return rc;
    const char *tail = sql;
    int first_json_row = 1, any_json = 0;
    while (!rc && tail && *tail) {
        sqlite3_stmt *st = NULL;
        const char *next = NULL;
        int prc = sqlite3_prepare_v2(db, tail, -1, &st, &next);
        if (prc != SQLITE_OK) {
            const char *m = sqlite3_errmsg(db);
            if (prc == SQLITE_AUTH || strstr(m, "not authorized") || strstr(m, "readonly") || strstr(m, "read-only") ||
                strstr(m, "cannot modify") || is_write_keyword(tail))
                op_seterr(err, errlen, "refused: queries are read-only (%s)", m);
            else
                op_seterr(err, errlen, "bad SQL: %s", m);
            rc = OP_OUT_EINPUT;
            break;
        }
        tail = next;
        if (!st) continue; /* whitespace or comment */
        if (!sqlite3_stmt_readonly(st)) {
            op_seterr(err, errlen, "refused: queries are read-only, and this statement writes: %.200s", sqlite3_sql(st));
            sqlite3_finalize(st);
            rc = OP_OUT_EINPUT;
            break;
        }
        int nc = sqlite3_column_count(st);
        int s = sqlite3_step(st);
        if (nc == 0) {
            sqlite3_finalize(st);
            if (s != SQLITE_DONE && s != SQLITE_ROW) {
                op_seterr(err, errlen, "query failed: %s", sqlite3_errmsg(db));
                rc = OP_OUT_EINPUT;
            }
            continue;
        }
        if (format == OP_OUT_QUERY_CONSOLE) {
            rc = print_console(st, out, s, err, errlen);
            sqlite3_finalize(st);
            continue;
        }
        op_buf b = {0};
        if (format == OP_OUT_QUERY_CSV || format == OP_OUT_QUERY_MD) {
            for (int i = 0; i < nc; i++) {
                const char *cn = sqlite3_column_name(st, i);
                if (format == OP_OUT_QUERY_CSV) {
                    if (i) op_buf_putc(&b, ',');
                    op_buf_csv_str(&b, (const unsigned char *)cn, strlen(cn), 0);
                } else
                    op_buf_printf(&b, "| %s ", cn);
            }
            if (format == OP_OUT_QUERY_MD) {
                op_buf_puts(&b, "|\n");
                for (int i = 0; i < nc; i++) op_buf_puts(&b, "|---");
                op_buf_puts(&b, "|");
            }
            op_buf_putc(&b, '\n');
        } else if (!any_json) {
            op_buf_puts(&b, "[");
            any_json = 1;
        }
        while (s == SQLITE_ROW) {
            if (format == OP_OUT_QUERY_JSON) {
                op_buf_puts(&b, first_json_row ? "\n{" : ",\n{");
                first_json_row = 0;
                for (int i = 0; i < nc; i++) {
                    const char *cn = sqlite3_column_name(st, i);
                    op_buf_puts(&b, i ? ",\"" : "\"");
                    op_buf_json_str(&b, (const unsigned char *)cn, strlen(cn));
                    op_buf_puts(&b, "\":");
                    cell_text(&b, st, i, format);
                }
                op_buf_putc(&b, '}');
            } else {
                for (int i = 0; i < nc; i++) {
                    if (format == OP_OUT_QUERY_CSV) {
                        if (i) op_buf_putc(&b, ',');
                    } else
                        op_buf_puts(&b, "| ");
                    cell_text(&b, st, i, format);
                    if (format == OP_OUT_QUERY_MD) op_buf_putc(&b, ' ');
                }
                op_buf_puts(&b, format == OP_OUT_QUERY_MD ? "|\n" : "\n");
            }
            if (b.len > (1u << 16) && op_buf_write(&b, out)) {
                rc = OP_OUT_EFAIL;
                break;
            }
            s = sqlite3_step(st);
        }
        if (!rc && s != SQLITE_DONE) {
            op_seterr(err, errlen, "query failed: %s", sqlite3_errmsg(db));
            rc = OP_OUT_EINPUT;
        }
        if (op_buf_write(&b, out) && !rc) rc = OP_OUT_EFAIL;
        op_buf_free(&b);
        sqlite3_finalize(st);
    }
    if (format == OP_OUT_QUERY_JSON) fputs(any_json ? "\n]\n" : "[]\n", out);
    if (fflush(out) && !rc) {
        op_seterr(err, errlen, "writing the result failed: %s", strerror(errno));
        rc = OP_OUT_EFAIL;
    }
    sqlite3_close(db);
    if (tmp) {
        unlink(tmp);
        free(tmp);
    }
    return rc;
}
