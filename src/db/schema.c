/* schema.c — creates the rocpd schema version 3 (plus omniprof_* tables) in a database.
 *
 * The SQL lives in src/db/schema/ (*.sql) and is embedded at build time (embed_sql.cmake ->
 * schema_sql.c); rocpd_views.sql and the table list are generated from tables.sql first
 * (gen_tables.py -> tables_gen.h, rocpd_views.sql in the build tree). tables.sql and
 * rocpd_views.sql are templates: "{{uuid}}" becomes the table suffix ("_" + the UUID with
 * '-' -> '_'), "{{guid}}" the UUID text. The view files use plain
 * names only, so op_db_schema_create_views can create them as TEMP views over unions of many
 * attached databases. */
#include "db/db.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "db/tables_gen.h"

extern const char op_db_sql_tables[];
extern const char op_db_sql_rocpd_views[];
extern const char op_db_sql_data_views[];
extern const char op_db_sql_summary_views[];
extern const char op_db_sql_marker_views[];
extern const char op_db_sql_omniprof_views[];

/* Generated from tables.sql (tables_gen.h), in its order. */
static const char *const k_table_names[] = {
#define OP_DB_TABLE_NAME(E, NAME) NAME,
    OP_DB_TABLES(OP_DB_TABLE_NAME)
#undef OP_DB_TABLE_NAME
    NULL,
};

const char *const *op_db_schema_table_names(void) { return k_table_names; }
const char *op_db_schema_tables_sql(void) { return op_db_sql_tables; }

/* The view files (data, summary, marker, omniprof), concatenated once (static storage; the text
 * never changes). */
static char *g_views_sql;
static char g_views_sql_fallback[] = "";

const char *op_db_schema_views_sql(void)
{
    char *cur = __atomic_load_n(&g_views_sql, __ATOMIC_ACQUIRE);
    if (cur) return cur;
    const char *parts[] = {op_db_sql_data_views, op_db_sql_summary_views, op_db_sql_marker_views,
                           op_db_sql_omniprof_views};
    size_t len = 1;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) len += strlen(parts[i]) + 1;
    char *text = op_malloc(len), *o = text;
    if (!text) return g_views_sql_fallback;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        size_t n = strlen(parts[i]);
        memcpy(o, parts[i], n);
        o += n;
        *o++ = '\n';
    }
    *o = '\0';
    char *expected = NULL;
    if (!__atomic_compare_exchange_n(&g_views_sql, &expected, text, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        op_free(text);
        return expected;
    }
    return text;
}

int op_db_make_uuid(char *out, size_t outlen)
{
    if (!out || outlen < 37) return -EINVAL;
    unsigned char b[16];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    if (getrandom(b + 6, 10, GRND_NONBLOCK) != 10) {
        /* No entropy yet (early boot): mix time, pid and a counter (still unique per process). */
        static unsigned counter;
        uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ (uint64_t)__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
        for (int i = 6; i < 16; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b[i] = (unsigned char)x;
        }
    }
    for (int i = 0; i < 6; i++) b[i] = (unsigned char)(ms >> (40 - 8 * i));
    b[6] = (unsigned char)(0x70 | (b[6] & 0x0f)); /* version 7 */
    b[8] = (unsigned char)(0x80 | (b[8] & 0x3f)); /* variant 10 */
    snprintf(out, outlen, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
             b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    return 0;
}

/* Replace {{uuid}} and {{guid}}; returns op_malloc'd text or NULL. */
static char *expand_template(const char *tmpl, const char *suffix, const char *guid)
{
    size_t n_suffix = strlen(suffix), n_guid = strlen(guid), n = 0;
    for (const char *p = tmpl; *p;) {
        if (strncmp(p, "{{uuid}}", 8) == 0) {
            n += n_suffix;
            p += 8;
        } else if (strncmp(p, "{{guid}}", 8) == 0) {
            n += n_guid;
            p += 8;
        } else {
            n++;
            p++;
        }
    }
    char *out = op_malloc(n + 1), *o = out;
    if (!out) return NULL;
    for (const char *p = tmpl; *p;) {
        if (strncmp(p, "{{uuid}}", 8) == 0) {
            memcpy(o, suffix, n_suffix);
            o += n_suffix;
            p += 8;
        } else if (strncmp(p, "{{guid}}", 8) == 0) {
            memcpy(o, guid, n_guid);
            o += n_guid;
            p += 8;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    return out;
}

static int exec_sql(sqlite3 *db, const char *sql, const char *what, char *err, size_t errlen)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        if (err && errlen)
            snprintf(err, errlen, "creating the rocpd schema (%s) failed: %s (%s)", what, sqlite3_errstr(rc),
                     msg ? msg : "no detail");
        sqlite3_free(msg);
        return -EIO;
    }
    return 0;
}

/* Removes every occurrence of `pat` from `s` (in place). */
static void strip_all(char *s, const char *pat)
{
    size_t n = strlen(pat);
    for (char *p; (p = strstr(s, pat));) memmove(p, p + n, strlen(p + n) + 1);
}

/* Removes `pat` from the CREATE TABLE statement of table `name` in `s`. */
static void strip_in_table(char *s, const char *name, const char *pat)
{
    char *c = strstr(s, name), *e = c ? strstr(c, ");") : NULL;
    char *p = c ? strstr(c, pat) : NULL;
    size_t n = strlen(pat);
    if (p && p < e) memmove(p, p + n, strlen(p + n) + 1);
}

/* The tables of a merged file (op_db_schema_create_merged): tables.sql where one table set holds
 * the rows of many processes, each row with its process's guid — a stored column in the process
 * and thread tables (their ids are OS pids and tids, which interleave across processes) and in
 * the two tables where it is stored already; elsewhere still a VIRTUAL generated column, whose
 * expression ('' here) reader_merge.c replaces at the end of the merge by one over the id ranges
 * of the processes — and without the UNIQUE constraints, which hold within one process only (the
 * same string, node, stack node or symbol address in two processes); reader_merge.c indexes those
 * columns once at the end of a merge. op_malloc'd template text, or NULL. */
static char *merged_tables_template(void)
{
    size_t n = strlen(op_db_sql_tables);
    char *t = op_malloc(n + 1);
    if (!t) return NULL;
    memcpy(t, op_db_sql_tables, n + 1);
    strip_in_table(t, "\"rocpd_info_process{{uuid}}\"", " GENERATED ALWAYS AS ('{{guid}}') VIRTUAL");
    strip_in_table(t, "\"rocpd_info_thread{{uuid}}\"", " GENERATED ALWAYS AS ('{{guid}}') VIRTUAL");
    for (char *p; (p = strstr(t, "('{{guid}}') VIRTUAL"));) memmove(p + 2, p + 10, strlen(p + 10) + 1);
    strip_all(t, " DEFAULT '{{guid}}'");
    strip_all(t, " UNIQUE ON CONFLICT ABORT");
    /* table constraints ",\n    UNIQUE (a, b)": from the comma before to the closing ')' */
    for (char *p; (p = strstr(t, "UNIQUE ("));) {
        char *c = p, *e = strchr(p, ')');
        while (c > t && *c != ',') c--;
        if (!e) break;
        memmove(c, e + 1, strlen(e + 1) + 1);
    }
    strip_all(t, " UNIQUE");
    return t;
}

static const char k_merged_table[] =
    "CREATE TABLE IF NOT EXISTS \"omniprof_merged%s\" (\"id\" INTEGER NOT NULL PRIMARY KEY, \"set_index\" "
    "INTEGER NOT NULL, \"guid\" TEXT NOT NULL, \"suffix\" TEXT NOT NULL, \"table_name\" TEXT NOT NULL, "
    "\"id_lo\" INTEGER NOT NULL, \"id_hi\" INTEGER NOT NULL, \"id_shift\" INTEGER NOT NULL);";

static int schema_create(sqlite3 *db, const char *uuid, int merged, char *err, size_t errlen)
{
    char made[40];
    if (!db) {
        if (err && errlen) snprintf(err, errlen, "op_db_schema_create: NULL database handle");
        return -EINVAL;
    }
    if (!uuid) {
        op_db_make_uuid(made, sizeof made);
        uuid = made;
    }
    size_t n = strlen(uuid);
    if (n == 0 || n > 64 || strspn(uuid, "0123456789abcdefABCDEF-") != n) {
        if (err && errlen)
            snprintf(err, errlen, "invalid uuid '%.80s': expected 1-64 hex digits and '-' (e.g. a UUIDv7)", uuid);
        return -EINVAL;
    }
    char suffix[72];
    suffix[0] = '_';
    for (size_t i = 0; i <= n; i++) suffix[i + 1] = uuid[i] == '-' ? '_' : uuid[i];

    char *tmpl = merged ? merged_tables_template() : NULL;
    char *tables = merged && !tmpl ? NULL : expand_template(merged ? tmpl : op_db_sql_tables, suffix, uuid);
    op_free(tmpl);
    char *views = expand_template(op_db_sql_rocpd_views, suffix, uuid);
    const char *data_views = op_db_schema_views_sql();
    int rc = 0;
    if (!tables || !views || data_views == g_views_sql_fallback) {
        if (err && errlen) snprintf(err, errlen, "creating the rocpd schema failed: out of memory");
        rc = -ENOMEM;
        goto done;
    }
    if ((rc = exec_sql(db, "BEGIN", "begin", err, errlen)) != 0) goto done;
    if ((rc = exec_sql(db, tables, "tables", err, errlen)) != 0) goto rollback;
    if ((rc = exec_sql(db, views, "rocpd views", err, errlen)) != 0) goto rollback;
    if (merged) {
        char sql[sizeof k_merged_table + 80];
        snprintf(sql, sizeof sql, k_merged_table, suffix);
        if ((rc = exec_sql(db, sql, "merged sets", err, errlen)) != 0) goto rollback;
    }
    if ((rc = exec_sql(db, data_views, "data views", err, errlen)) != 0) goto rollback;
    {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "INSERT INTO \"rocpd_metadata%s\" (tag, value) VALUES ('schema_version', '%d'), ('uuid', '%s'), "
                 "('guid', '%s'), ('writer', 'omniprof %s')",
                 suffix, OP_DB_SCHEMA_VERSION, suffix, uuid, OMNIPROF_VERSION_STRING);
        if ((rc = exec_sql(db, sql, "metadata", err, errlen)) != 0) goto rollback;
    }
    if ((rc = exec_sql(db, "COMMIT", "commit", err, errlen)) != 0) goto rollback;
    goto done;
rollback:
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
done:
    op_free(tables);
    op_free(views);
    return rc;
}

int op_db_schema_create(sqlite3 *db, const char *uuid, char *err, size_t errlen)
{
    return schema_create(db, uuid, 0, err, errlen);
}

int op_db_schema_create_merged(sqlite3 *db, const char *uuid, char *err, size_t errlen)
{
    return schema_create(db, uuid, 1, err, errlen);
}

int op_db_schema_create_views(sqlite3 *db, int temporary, char *err, size_t errlen)
{
    if (!db) return -EINVAL;
    const char *sql = op_db_schema_views_sql();
    if (sql == g_views_sql_fallback) return -ENOMEM;
    if (!temporary) return exec_sql(db, sql, "views", err, errlen);
    /* Rewrite each "CREATE VIEW IF NOT EXISTS" into its TEMP form. */
    static const char from[] = "CREATE VIEW IF NOT EXISTS";
    static const char to[] = "CREATE TEMP VIEW IF NOT EXISTS";
    size_t count = 0;
    for (const char *p = sql; (p = strstr(p, from)); p += sizeof from - 1) count++;
    size_t len = strlen(sql) + count * (sizeof to - sizeof from) + 1;
    char *text = op_malloc(len), *o = text;
    if (!text) return -ENOMEM;
    const char *p = sql;
    for (const char *q; (q = strstr(p, from)); p = q + sizeof from - 1) {
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        memcpy(o, to, sizeof to - 1);
        o += sizeof to - 1;
    }
    strcpy(o, p);
    int rc = exec_sql(db, text, "temporary views", err, errlen);
    op_free(text);
    return rc;
}
