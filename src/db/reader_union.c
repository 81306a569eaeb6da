/* reader_union.c — many rocpd databases as one read-only connection (op_db_union_open), and
 * read-only statements over it (op_db_prepare ...). The one implementation of the union: the
 * `omniprof query` command runs on the connection built here, and the Python package's
 * connect() runs the script recorded here on its own sqlite3 connection.
 *
 * How the inputs become one: an in-memory connection ATTACHes each input read-only (by the URI
 * of op_src_uri: mode=ro, immutable for a WAL database without a -wal file, so reading leaves
 * no -wal/-shm files), builds TEMP views named like the plain rocpd views as UNION ALL over
 * every set of every input (columns common to all sets, so a rocprofv3 set and an omniprof set
 * combine), then re-creates the data/summary/omniprof views as TEMP views over them (rocpd's
 * importer does the same). A view the inputs cannot support (a column missing in a foreign
 * database) is left out; the others still work. More than OP_DB_UNION_MAX_ATTACHED inputs
 * (SQLite's limit of attached databases) are first merged (op_db_merge, bounded memory) into
 * the caller's temporary file, which is then attached alone. Identifiers in the recorded SQL
 * are always quoted (table names carry validated suffixes; column names with a '"' are left
 * out), and string literals have their quotes doubled.
 *
 * Read-only: the connection is put in query_only mode after the views are built, every user
 * statement must satisfy sqlite3_stmt_readonly(), and an authorizer refuses ATTACH, DETACH and
 * PRAGMAs that change settings. A write statement gets "refused: ... read-only". */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "db/db.h"
#include "db/reader_internal.h"

struct op_db_union {
    sqlite3 *db;
    int (*stop)(void); /* op_db_union_set_stop */
};

struct op_db_stmt {
    sqlite3_stmt *st;
};

/* The union being built: its connection and the script of what succeeded. */
typedef struct ubuild {
    sqlite3 *db;
    op_buf script;
    char **tables[T_COUNT]; /* per base table: "dbI"."base<suffix>" of every set */
    size_t n_tables[T_COUNT];
} ubuild;

/* Runs one statement; on success appends it to the script. 0, or -1 with err filled (when
 * err is not NULL). */
static int run(ubuild *b, const char *sql, char *err, size_t errlen) {
    char *m = NULL;
    if (sqlite3_exec(b->db, sql, NULL, NULL, &m) != SQLITE_OK) {
        op_seterr(err, errlen, "%s", m ? m : sqlite3_errmsg(b->db));
        sqlite3_free(m);
        return -1;
    }
    op_buf_puts(&b->script, sql);
    op_buf_puts(&b->script, sql[0] && sql[strlen(sql) - 1] == ';' ? "\n" : ";\n");
    return 0;
}

static void put_literal(op_buf *q, const char *s) {
    op_buf_putc(q, '\'');
    for (; *s; s++) {
        if (*s == '\'') op_buf_putc(q, '\'');
        op_buf_putc(q, *s);
    }
    op_buf_putc(q, '\'');
}

static int add_table(ubuild *b, int t, size_t input, const char *suffix) {
    char **v = realloc(b->tables[t], (b->n_tables[t] + 1) * sizeof *v);
    if (!v) return -1;
    b->tables[t] = v;
    op_buf q = {0};
    op_buf_printf(&q, "db%zu.\"%s%s\"", input, op_src_table_base[t], suffix);
    if (!(v[b->n_tables[t]] = op_buf_take(&q))) return -1;
    b->n_tables[t]++;
    return 0;
}

/* Attaches input `i` as db<i> and lists the tables of its sets. */
static int attach(ubuild *b, size_t i, const char *path, char *err, size_t errlen) {
    op_src *s;
    int rc = op_src_open(path, &s, err, errlen);
    if (rc) return rc;
    char *uri = op_src_uri(path);
    op_buf q = {0};
    op_buf_puts(&q, "ATTACH ");
    put_literal(&q, uri ? uri : "");
    op_buf_printf(&q, " AS db%zu", i);
    char *sql = uri ? op_buf_take(&q) : NULL;
    op_buf_free(&q);
    free(uri);
    char e2[400];
    if (!sql) rc = OP_RD_EFAIL;
    else if (run(b, sql, e2, sizeof e2)) {
        op_seterr(err, errlen, "%s: cannot attach: %s", path, e2);
        rc = OP_RD_EINPUT;
    }
    free(sql);
    for (size_t k = 0; k < s->n_sets && !rc; k++) {
        const op_src_set *set = &s->sets[k];
        /* the processes of a merged file share its tables: those are added once */
        if (set->merged && k > 0 && s->sets[k - 1].merged && !strcmp(s->sets[k - 1].tables, set->tables)) continue;
        for (int t = 0; t < T_COUNT && !rc; t++) {
            int has = SRC_HAS(set, t);
            for (size_t j = k + 1; set->merged && j < s->n_sets && !strcmp(s->sets[j].tables, set->tables); j++)
                has |= SRC_HAS(&s->sets[j], t);
            if (has && add_table(b, t, i, set->tables)) rc = OP_RD_EFAIL;
        }
    }
    op_src_close(s);
    return rc;
}

/* Splits `qualified` ("dbI"."name") into its schema and table name. */
static void split_name(const char *qualified, char *schema, size_t ns, char *name, size_t nn) {
    const char *dot = strchr(qualified, '.');
    snprintf(schema, ns, "%.*s", (int)(dot - qualified), qualified);
    snprintf(name, nn, "%.*s", (int)strlen(dot + 2) - 1, dot + 2);
}

static int has_column(sqlite3 *db, const char *qualified, const char *col) {
    char schema[32], name[200];
    split_name(qualified, schema, sizeof schema, name, sizeof name);
    sqlite3_stmt *q = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_xinfo(?1, ?2) WHERE name = ?3", -1, &q, NULL) == SQLITE_OK) {
        sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, schema, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 3, col, -1, SQLITE_STATIC);
        found = sqlite3_step(q) == SQLITE_ROW;
    }
    sqlite3_finalize(q);
    return found;
}

/* The quoted columns of the first table that every other table of the list has too (table_xinfo:
 * generated columns such as guid included). */
static char *common_columns(sqlite3 *db, char *const *tables, size_t n) {
    char schema[32], name[200];
    split_name(tables[0], schema, sizeof schema, name, sizeof name);
    sqlite3_stmt *st = NULL;
    op_buf cols = {0};
    int nc = 0;
    if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_xinfo(?1, ?2)", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, schema, -1, SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *c = (const char *)sqlite3_column_text(st, 0);
            if (!c || strchr(c, '"')) continue;
            int everywhere = 1;
            for (size_t j = 1; j < n && everywhere; j++) everywhere = has_column(db, tables[j], c);
            if (everywhere) op_buf_printf(&cols, "%s\"%s\"", nc++ ? ", " : "", c);
        }
    }
    sqlite3_finalize(st);
    if (!nc) {
        op_buf_free(&cols);
        return NULL;
    }
    return op_buf_take(&cols);
}

/* The union views of the plain rocpd tables. */
static int union_views(ubuild *b, char *err, size_t errlen) {
    for (int t = 0; t < T_COUNT; t++) {
        if (!b->n_tables[t]) continue;
        char *cols = common_columns(b->db, b->tables[t], b->n_tables[t]);
        if (!cols) {
            op_seterr(err, errlen, "%s: no column common to every input", op_src_table_base[t]);
            return OP_RD_EINPUT;
        }
        char *sql = op_union_view_sql(1, op_src_table_base[t], b->tables[t], b->n_tables[t], cols);
        free(cols);
        if (!sql) return OP_RD_EFAIL;
        int rc = run(b, sql, err, errlen);
        free(sql);
        if (rc) return OP_RD_EINPUT;
    }
    return 0;
}

/* The first byte of s that is neither white space nor inside an SQL comment ("-- ..." to the end
 * of the line, or a block comment). A view's statement may follow the comment that describes
 * it: the CREATE keyword is looked for after both. */
static const char *skip_space_and_comments(const char *s) {
    for (;;) {
        s += strspn(s, " \t\r\n");
        if (s[0] == '-' && s[1] == '-') {
            s += strcspn(s, "\n");
        } else if (s[0] == '/' && s[1] == '*') {
            const char *end = strstr(s + 2, "*/");
            s = end ? end + 2 : s + strlen(s);
        } else {
            return s;
        }
    }
}

/* Re-creates the data, summary and omniprof views as TEMP views, one statement at a time; a
 * statement that fails over these inputs is left out. Each statement is rewritten after its
 * leading comments: were a commented statement left as a plain CREATE VIEW, it would be made in
 * the in-memory main schema, where the TEMP views it reads do not resolve ("no such table:
 * main.kernels"), and be left out silently. */
static int data_views(ubuild *b) {
    static const char from[] = "CREATE VIEW IF NOT EXISTS", to[] = "CREATE TEMP VIEW IF NOT EXISTS";
    const char *text = op_db_schema_views_sql();
    op_buf stmt = {0};
    const char *start = text;
    for (const char *p = text; *p; p++) {
        if (*p != ';') continue;
        stmt.len = 0;
        op_buf_put(&stmt, start, (size_t)(p - start + 1));
        op_buf_putc(&stmt, 0);
        if (stmt.oom) break;
        if (!sqlite3_complete((const char *)stmt.p)) continue; /* a ';' inside a literal or trigger */
        const char *s = skip_space_and_comments((const char *)stmt.p);
        op_buf one = {0};
        if (!strncmp(s, from, sizeof from - 1)) {
            op_buf_puts(&one, to);
            op_buf_puts(&one, s + sizeof from - 1);
        } else {
            op_buf_puts(&one, s);
        }
        one.len--; /* the ';': run() adds its own */
        char *sql = op_buf_take(&one);
        if (sql && *sql) run(b, sql, NULL, 0);
        free(sql);
        start = p + 1;
    }
    int oom = stmt.oom;
    op_buf_free(&stmt);
    return oom ? -1 : 0;
}

static int deny_changes(void *arg, int action, const char *a, const char *b, const char *c, const char *d) {
    (void)arg, (void)a, (void)c, (void)d;
    if (action == SQLITE_ATTACH || action == SQLITE_DETACH) return SQLITE_DENY;
    if (action == SQLITE_PRAGMA && b) return SQLITE_DENY; /* "PRAGMA x = value" */
    return SQLITE_OK;
}

static void ubuild_free(ubuild *b) {
    for (int t = 0; t < T_COUNT; t++) {
        for (size_t j = 0; j < b->n_tables[t]; j++) free(b->tables[t][j]);
        free(b->tables[t]);
    }
    op_buf_free(&b->script);
    if (b->db) sqlite3_close(b->db);
}

int op_db_union_open(const char *const *inputs, size_t n_inputs, const char *tmp_path, op_db_union **out,
                     char **script, char *err, size_t errlen) {
    *out = NULL;
    if (script) *script = NULL;
    const char *merged[1] = {tmp_path};
    if (n_inputs > OP_DB_UNION_MAX_ATTACHED) {
        if (!tmp_path) {
            op_seterr(err, errlen, "more than %d inputs need a temporary file", OP_DB_UNION_MAX_ATTACHED);
            return OP_RD_EFAIL;
        }
        int rc = op_db_merge(inputs, n_inputs, tmp_path, NULL, NULL, NULL, err, errlen);
        if (rc) return rc;
        inputs = merged;
        n_inputs = 1;
    }
    ubuild b = {0};
    if (sqlite3_open_v2(":memory:", &b.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
        ubuild_free(&b);
        op_seterr(err, errlen, "cannot open an in-memory database");
        return OP_RD_EFAIL;
    }
    op_db_harden(b.db);
    int rc = 0;
    for (size_t i = 0; i < n_inputs && !rc; i++) rc = attach(&b, i, inputs[i], err, errlen);
    if (!rc) rc = union_views(&b, err, errlen);
    if (!rc && data_views(&b)) rc = OP_RD_EFAIL;
    op_db_union *u = rc ? NULL : calloc(1, sizeof *u);
    if (!rc && !u) rc = OP_RD_EFAIL;
    if (!rc && script && !(*script = op_buf_take(&b.script))) rc = OP_RD_EFAIL;
    if (rc) {
        if (rc == OP_RD_EFAIL && err && !*err) op_seterr(err, errlen, "out of memory");
        free(u);
        ubuild_free(&b);
        return rc;
    }
    sqlite3_exec(b.db, "PRAGMA query_only=1", NULL, NULL, NULL);
    sqlite3_set_authorizer(b.db, deny_changes, NULL);
    u->db = b.db;
    b.db = NULL;
    ubuild_free(&b);
    *out = u;
    return 0;
}

static int union_progress(void *arg) { return ((op_db_union *)arg)->stop(); }

void op_db_union_set_stop(op_db_union *u, int (*stop)(void)) {
    if (!u) return;
    u->stop = stop;
    /* every 4096 virtual machine instructions: microseconds apart, not measurable in a query */
    sqlite3_progress_handler(u->db, stop ? 4096 : 0, stop ? union_progress : NULL, u);
}

void op_db_union_close(op_db_union *u) {
    if (!u) return;
    sqlite3_close(u->db);
    free(u);
}

/* ---- statements ------------------------------------------------------------------------------ */

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

int op_db_prepare(op_db_union *u, const char **sql, op_db_stmt **out, char *err, size_t errlen) {
    *out = NULL;
    sqlite3_stmt *st = NULL;
    const char *next = NULL;
    int prc = sqlite3_prepare_v2(u->db, *sql, -1, &st, &next);
    if (prc != SQLITE_OK) {
        const char *m = sqlite3_errmsg(u->db);
        if (prc == SQLITE_AUTH || strstr(m, "not authorized") || strstr(m, "readonly") || strstr(m, "read-only") ||
            strstr(m, "cannot modify") || is_write_keyword(*sql))
            op_seterr(err, errlen, "refused: queries are read-only (%s)", m);
        else
            op_seterr(err, errlen, "bad SQL: %s", m);
        return OP_RD_EINPUT;
    }
    *sql = next;
    if (!st) return 0; /* whitespace or a comment */
    if (!sqlite3_stmt_readonly(st)) {
        op_seterr(err, errlen, "refused: queries are read-only, and this statement writes: %.200s", sqlite3_sql(st));
        sqlite3_finalize(st);
        return OP_RD_EINPUT;
    }
    op_db_stmt *s = calloc(1, sizeof *s);
    if (!s) {
        sqlite3_finalize(st);
        op_seterr(err, errlen, "out of memory");
        return OP_RD_EFAIL;
    }
    s->st = st;
    *out = s;
    return 0;
}

int op_db_stmt_columns(op_db_stmt *st) { return sqlite3_column_count(st->st); }

const char *op_db_stmt_column_name(op_db_stmt *st, int i) {
    const char *n = sqlite3_column_name(st->st, i);
    return n ? n : "";
}

int op_db_stmt_step(op_db_stmt *st, char *err, size_t errlen) {
    int rc = sqlite3_step(st->st);
    if (rc == SQLITE_ROW) return 1;
    if (rc == SQLITE_DONE) return 0;
    op_seterr(err, errlen, "query failed: %s", sqlite3_errmsg(sqlite3_db_handle(st->st)));
    return -OP_RD_EINPUT;
}

void op_db_stmt_cell(op_db_stmt *st, int i, op_db_cell *c) {
    memset(c, 0, sizeof *c);
    switch (sqlite3_column_type(st->st, i)) {
    case SQLITE_NULL: c->type = OP_CELL_NULL; break;
    case SQLITE_INTEGER:
        c->type = OP_CELL_INT;
        c->i = sqlite3_column_int64(st->st, i);
        break;
    case SQLITE_FLOAT:
        c->type = OP_CELL_FLOAT;
        c->d = sqlite3_column_double(st->st, i);
        break;
    case SQLITE_BLOB:
        c->type = OP_CELL_BLOB;
        c->s = sqlite3_column_blob(st->st, i);
        c->n = (size_t)sqlite3_column_bytes(st->st, i);
        break;
    default:
        c->type = OP_CELL_TEXT;
        c->s = sqlite3_column_text(st->st, i);
        c->n = (size_t)sqlite3_column_bytes(st->st, i);
        if (!c->s) c->s = (const unsigned char *)"";
        break;
    }
}

void op_db_stmt_free(op_db_stmt *st) {
    if (!st) return;
    sqlite3_finalize(st->st);
    free(st);
}
