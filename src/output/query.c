/* query.c — `omniprof query` (op_output_query): read-only SQL over the union of many rocpd
 * databases (the database reader builds the union: src/db/reader_union.c), its rows written as
 * console columns, CSV, JSON or Markdown. More inputs than SQLite can attach are merged first
 * into a temporary database in $TMPDIR, removed when the query ends. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/db.h"
#include "output/internal.h"

const char *op_output_views_sql(void) { return op_db_schema_views_sql(); }

/* ---- result printing ------------------------------------------------------------------------ */

static void cell_text(op_buf *b, op_db_stmt *st, int i, int fmt) {
    op_db_cell c;
    op_db_stmt_cell(st, i, &c);
    if (c.type == OP_CELL_NULL) {
        if (fmt == OP_OUT_QUERY_JSON) op_buf_puts(b, "null");
        else if (fmt != OP_OUT_QUERY_CSV) op_buf_puts(b, "NULL");
        return;
    }
    if (c.type == OP_CELL_INT) {
        op_buf_printf(b, "%lld", (long long)c.i);
        return;
    }
    if (c.type == OP_CELL_FLOAT) {
        char d[40];
        op_buf_puts(b, fmt == OP_OUT_QUERY_JSON && !isfinite(c.d) ? "null" : op_fmt_double(d, sizeof d, c.d));
        return;
    }
    const unsigned char *s = c.s;
    size_t n = c.n;
    op_buf hex = {0};
    if (c.type == OP_CELL_BLOB) {
        op_buf_puts(&hex, "x'");
        for (size_t k = 0; k < c.n; k++) op_buf_printf(&hex, "%02x", c.s[k]);
        op_buf_putc(&hex, '\'');
        s = hex.p;
        n = hex.len;
    }
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
        op_buf_term_str(b, s, n, "|");
        break;
    default: /* console: no text may act on the terminal (internal.h) */
        op_buf_term_str(b, s, n, NULL);
        break;
    }
    op_buf_free(&hex);
}

static void console_row(op_buf *line, op_buf *cells, const size_t *w, int nc) {
    for (int i = 0; i < nc; i++) {
        if (i) op_buf_puts(line, " | ");
        op_buf_put(line, cells[i].p, cells[i].len);
        for (size_t k = cells[i].len; k < w[i]; k++) op_buf_putc(line, ' ');
        op_buf_free(&cells[i]);
    }
    op_buf_putc(line, '\n');
}

#define CONSOLE_PEEK 200

/* Columns as wide as their widest cell among the first CONSOLE_PEEK rows (at most 80). r is
 * the status of the first step. */
static int print_console(op_db_stmt *st, FILE *out, int r, char *err, size_t errlen) {
    int nc = op_db_stmt_columns(st);
    size_t *w = calloc((size_t)nc, sizeof(size_t));
    op_buf *cells = calloc((size_t)nc * (CONSOLE_PEEK + 1), sizeof(op_buf));
    if (!w || !cells) {
        free(w);
        free(cells);
        return OP_OUT_EFAIL;
    }
    op_buf name = {0};
    for (int i = 0; i < nc; i++) w[i] = strlen(op_term_text(&name, op_db_stmt_column_name(st, i)));
    int nrows = 0;
    while (r == 1 && nrows < CONSOLE_PEEK) {
        for (int i = 0; i < nc; i++) {
            op_buf *c = &cells[(size_t)nrows * nc + i];
            cell_text(c, st, i, OP_OUT_QUERY_CONSOLE);
            if (c->len > w[i]) w[i] = c->len > 80 ? 80 : c->len;
        }
        nrows++;
        r = op_db_stmt_step(st, err, errlen);
    }
    op_buf line = {0};
    for (int i = 0; i < nc; i++)
        op_buf_printf(&line, "%s%-*s", i ? " | " : "", (int)w[i], op_term_text(&name, op_db_stmt_column_name(st, i)));
    op_buf_free(&name);
    op_buf_putc(&line, '\n');
    for (int i = 0; i < nc; i++) {
        op_buf_puts(&line, i ? "-+-" : "");
        for (size_t k = 0; k < w[i]; k++) op_buf_putc(&line, '-');
    }
    op_buf_putc(&line, '\n');
    for (int row = 0; row < nrows; row++) console_row(&line, &cells[(size_t)row * nc], w, nc);
    op_buf *rest = &cells[(size_t)CONSOLE_PEEK * nc];
    while (r == 1) {
        for (int i = 0; i < nc; i++) cell_text(&rest[i], st, i, OP_OUT_QUERY_CONSOLE);
        console_row(&line, rest, w, nc);
        if (line.len > (1u << 16) && op_buf_write(&line, out)) break;
        r = op_db_stmt_step(st, err, errlen);
    }
    int bad = op_buf_write(&line, out);
    op_buf_free(&line);
    free(w);
    free(cells);
    if (r < 0) return OP_OUT_EINPUT;
    return bad ? OP_OUT_EFAIL : 0;
}

/* The header of a CSV or Markdown table. */
static void table_header(op_buf *b, op_db_stmt *st, int format) {
    int nc = op_db_stmt_columns(st);
    for (int i = 0; i < nc; i++) {
        const char *cn = op_db_stmt_column_name(st, i);
        if (format == OP_OUT_QUERY_CSV) {
            if (i) op_buf_putc(b, ',');
            op_buf_csv_str(b, (const unsigned char *)cn, strlen(cn), 0);
        } else {
            op_buf_puts(b, "| ");
            op_buf_term_str(b, (const unsigned char *)cn, strlen(cn), "|");
            op_buf_putc(b, ' ');
        }
    }
    if (format == OP_OUT_QUERY_MD) {
        op_buf_puts(b, "|\n");
        for (int i = 0; i < nc; i++) op_buf_puts(b, "|---");
        op_buf_puts(b, "|");
    }
    op_buf_putc(b, '\n');
}

static void table_row(op_buf *b, op_db_stmt *st, int format, int *first_json_row) {
    int nc = op_db_stmt_columns(st);
    if (format == OP_OUT_QUERY_JSON) {
        op_buf_puts(b, *first_json_row ? "\n{" : ",\n{");
        *first_json_row = 0;
        for (int i = 0; i < nc; i++) {
            const char *cn = op_db_stmt_column_name(st, i);
            op_buf_puts(b, i ? ",\"" : "\"");
            op_buf_json_str(b, (const unsigned char *)cn, strlen(cn));
            op_buf_puts(b, "\":");
            cell_text(b, st, i, format);
        }
        op_buf_putc(b, '}');
        return;
    }
    for (int i = 0; i < nc; i++) {
        if (format == OP_OUT_QUERY_CSV) {
            if (i) op_buf_putc(b, ',');
        } else
            op_buf_puts(b, "| ");
        cell_text(b, st, i, format);
        if (format == OP_OUT_QUERY_MD) op_buf_putc(b, ' ');
    }
    op_buf_puts(b, format == OP_OUT_QUERY_MD ? "|\n" : "\n");
}

/* Writes the rows of one statement (r: the first step's status). */
static int print_rows(op_db_stmt *st, int format, FILE *out, int r, int *any_json, int *first_json_row, char *err,
                      size_t errlen) {
    if (format == OP_OUT_QUERY_CONSOLE) return print_console(st, out, r, err, errlen);
    op_buf b = {0};
    int rc = 0;
    if (format == OP_OUT_QUERY_CSV || format == OP_OUT_QUERY_MD) table_header(&b, st, format);
    else if (!*any_json) {
        op_buf_puts(&b, "[");
        *any_json = 1;
    }
    while (r == 1) {
        table_row(&b, st, format, first_json_row);
        if (op_out_interrupted()) {
            op_seterr(err, errlen, "interrupted");
            rc = OP_OUT_EFAIL;
            break;
        }
        if (b.len > (1u << 16) && op_buf_write(&b, out)) {
            rc = OP_OUT_EFAIL;
            break;
        }
        r = op_db_stmt_step(st, err, errlen);
    }
    if (!rc && r < 0) rc = OP_OUT_EINPUT;
    if (op_buf_write(&b, out) && !rc) rc = OP_OUT_EFAIL;
    op_buf_free(&b);
    return rc;
}

/* A new empty file for the merged union of many inputs: $TMPDIR/omniprof-query-<pid>-N.db
 * (malloc'ed path; NULL with errno set). */
static char *temp_db(void) {
    const char *dir = getenv("TMPDIR");
    return op_out_tmp_new(dir && *dir ? dir : "/tmp", "omniprof-query-", ".db");
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
    op_out_inputs in;
    int rc = op_out_inputs_begin(&in, inputs, n_inputs, err, errlen);
    char *tmp = NULL;
    if (!rc && in.n > OP_DB_UNION_MAX_ATTACHED && !(tmp = temp_db())) {
        op_seterr(err, errlen, "cannot create a temporary database in %s: %s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
                  strerror(errno));
        rc = OP_OUT_EFAIL;
    }
    op_db_union *u = NULL;
    if (!rc) rc = op_db_union_open(in.v, in.n, tmp, &u, NULL, err, errlen);
    if (rc) goto out;
    /* SIGINT/SIGTERM/SIGHUP (op_out_signals_install) stop a long statement. In the omniprof
     * binary the signal's default action ends the process anyway; in a process whose handler
     * only records the signal (Python's: python3 -m omniprof query) the query would otherwise
     * run to its end before the caller could act on it. */
    op_db_union_set_stop(u, op_out_interrupted);
    const char *tail = sql;
    int first_json_row = 1, any_json = 0;
    while (!rc && tail && *tail) {
        op_db_stmt *st;
        if ((rc = op_db_prepare(u, &tail, &st, err, errlen)) != 0) break;
        if (!st) continue; /* whitespace or comment */
        int r = op_db_stmt_step(st, err, errlen);
        if (op_db_stmt_columns(st) == 0) rc = r < 0 ? OP_OUT_EINPUT : 0;
        else rc = print_rows(st, format, out, r, &any_json, &first_json_row, err, errlen);
        op_db_stmt_free(st);
    }
    if (rc && op_out_interrupted()) { /* a statement stopped by a signal is no bad input */
        op_seterr(err, errlen, "interrupted");
        rc = OP_OUT_EFAIL;
    }
    if (format == OP_OUT_QUERY_JSON) fputs(any_json ? "\n]\n" : "[]\n", out);
    if (fflush(out) && !rc) {
        op_seterr(err, errlen, "writing the result failed: %s", strerror(errno));
        rc = OP_OUT_EFAIL;
    }
    op_db_union_close(u);
out:
    if (tmp) {
        unlink(tmp);
        op_out_tmp_unregister(tmp);
        free(tmp);
    }
    op_out_inputs_end(&in);
    return rc;
}

int op_output_query_path(const char *const *inputs, size_t n_inputs, const char *sql, int format, const char *path,
                         char *err, size_t errlen) {
    if (!path || !strcmp(path, "-")) return op_output_query(inputs, n_inputs, sql, format, stdout, err, errlen);
    /* the inputs are checked before the output exists: a refused command writes nothing */
    op_out_inputs in;
    op_outfile of = {0};
    int rc = op_out_inputs_begin(&in, inputs, n_inputs, err, errlen);
    if (!rc) rc = op_outfile_open_path(&of, path, &in.ids, err, errlen);
    if (!rc) rc = op_output_query(in.v, in.n, sql, format, of.f, err, errlen);
    int crc = op_outfile_close(&of, rc == 0, err, errlen);
    op_out_inputs_end(&in);
    return rc ? rc : crc;
}

char *op_output_union_sql(const char *const *inputs, size_t n_inputs, char **tmp_path, int *status, char *err,
                          size_t errlen) {
    int dummy;
    if (!status) status = &dummy;
    if (tmp_path) *tmp_path = NULL;
    *status = OP_OUT_EINPUT;
    if (!inputs || n_inputs == 0 || !tmp_path) {
        op_seterr(err, errlen, "no input database given");
        return NULL;
    }
    op_out_inputs in;
    char *tmp = NULL, *script = NULL;
    if ((*status = op_out_inputs_begin(&in, inputs, n_inputs, err, errlen)) == 0 && in.n > OP_DB_UNION_MAX_ATTACHED &&
        !(tmp = temp_db())) {
        op_seterr(err, errlen, "cannot create a temporary database: %s", strerror(errno));
        *status = OP_OUT_EFAIL;
    }
    op_db_union *u = NULL;
    if (!*status) *status = op_db_union_open(in.v, in.n, tmp, &u, &script, err, errlen);
    op_db_union_close(u);
    op_out_inputs_end(&in);
    if (tmp) op_out_tmp_unregister(tmp); /* the caller removes it from now on */
    if (*status) {
        if (tmp) unlink(tmp);
        free(tmp);
        return NULL;
    }
    *tmp_path = tmp;
    return script;
}

void op_output_free(void *p) { free(p); }
