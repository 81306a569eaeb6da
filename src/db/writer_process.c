/* writer_process.c — the rows the database writer writes about its process rather than from
 * records: the node and process rows at open (rocpd_info_node id 1; rocpd_info_process, whose id
 * is the OS pid as in rocprofv3's databases, docs/database.md), and
 * at close the process end time, the writer's own run cost and drop counts, and the symbols of
 * every distinct CPU stack address (omniprof_symbol, through opts.symbolize). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "db/writer_internal.h"

static int read_small_file(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = 0;
    return 0;
}

/* The node row (id 1): uname, machine id, host name. */
static int write_node(op_db_writer *w, const op_db_process_info *info, char *err, size_t errlen)
{
    struct utsname u;
    memset(&u, 0, sizeof u);
    uname(&u);
    char machine_id[128] = "";
    const char *mid = info->machine_id;
    if (!mid || !*mid) {
        if (read_small_file("/etc/machine-id", machine_id, sizeof machine_id) != 0 &&
            read_small_file("/var/lib/dbus/machine-id", machine_id, sizeof machine_id) != 0)
            snprintf(machine_id, sizeof machine_id, "%s", info->hostname ? info->hostname : u.nodename);
        mid = machine_id;
    }
    const char *host = info->hostname && *info->hostname ? info->hostname : u.nodename;
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO \"rocpd_info_node%s\" (id, hash, machine_id, system_name, hostname, release, version, "
             "hardware_name, domain_name) VALUES (1,?,?,?,?,?,?,?,?)",
             w->suffix);
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(w->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, (int64_t)(op_hash_bytes(mid, strlen(mid)) & 0x7fffffffffffffffull));
        op_db_bind_text(s, 2, mid, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 3, u.sysname, -1, SQLITE_TRANSIENT);
        op_db_bind_text(s, 4, host, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 5, u.release, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 6, u.version, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 7, u.machine, -1, SQLITE_TRANSIENT);
#ifdef _GNU_SOURCE
        sqlite3_bind_text(s, 8, u.domainname, -1, SQLITE_TRANSIENT);
#endif
        rc = sqlite3_step(s);
        sqlite3_finalize(s);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    if (rc != SQLITE_OK) {
        op_db_seterr(err, errlen, "database '%s': writing the node row failed: %s (%s)", w->path, sqlite3_errstr(rc),
               sqlite3_errmsg(w->db));
        return -EIO;
    }
    return 0;
}

/* s JSON-escaped into dst at `at`, keeping 8 bytes of dst[cap] free; the new end. */
static size_t escape_into(char *dst, size_t at, size_t cap, const char *s)
{
    return op_db_json_text(dst, at, cap, s, strlen(s));
}

/* The process row (id = OS pid): command, a subset of the environment and extdata, both JSON. */
static int write_process(op_db_writer *w, const op_db_process_info *info, char *err, size_t errlen)
{
    char sql[512];
    sqlite3_stmt *s = NULL;
    int rc;
    /* environment JSON and extdata JSON, bounded */
    size_t cap = 65536;
    char *env = op_malloc(cap), *ext = op_malloc(4096);
    if (!env || !ext) {
        op_free(env);
        op_free(ext);
        op_db_seterr(err, errlen, "database '%s': out of memory", w->path);
        return -ENOMEM;
    }
    size_t at = 0;
    env[at++] = '{';
    for (const char *const *e = info->environment; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq) continue;
        if (at + 16 >= cap) break;
        if (at > 1) env[at++] = ',';
        env[at++] = '"';
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
        at = escape_into(env, at, cap, name);
        env[at++] = '"';
        env[at++] = ':';
        env[at++] = '"';
        at = escape_into(env, at, cap, eq + 1);
        env[at++] = '"';
    }
    env[at++] = '}';
    env[at] = 0;
    char domain[160];
    op_clock_domain(domain, sizeof domain); /* hex, digits, '-', '/', ':' only: no escaping */
    size_t xa = (size_t)snprintf(ext, 4096,
                                 "{\"realtime_offset_ns\":%lld,\"boottime_offset_ns\":%lld,\"clock_domain\":\"%s\","
                                 "\"rank\":%d,\"size\":%d,\"uuid\":\"%s\"",
                                 (long long)info->realtime_offset_ns, (long long)op_boottime_offset_ns(), domain,
                                 info->rank, info->world_size, w->uuid);
    if (info->extdata_json && info->extdata_json[0] == '{') {
        const char *inner = info->extdata_json + 1;
        size_t n = strlen(inner);
        while (n && (inner[n - 1] == '}' || inner[n - 1] == ' ' || inner[n - 1] == '\n')) n--;
        if (n && xa + n + 4 < 4096) {
            ext[xa++] = ',';
            memcpy(ext + xa, inner, n);
            xa += n;
        }
    }
    ext[xa++] = '}';
    ext[xa] = 0;
    snprintf(sql, sizeof sql,
             "INSERT INTO \"rocpd_info_process%s\" (nid, ppid, pid, init, start, command, environment, extdata, id) "
             "VALUES (1,?,?,?,?,?,?,?,?2)",
             w->suffix);
    rc = sqlite3_prepare_v2(w->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, info->ppid);
        sqlite3_bind_int64(s, 2, info->pid);
        sqlite3_bind_int64(s, 3, (int64_t)info->init_ns);
        sqlite3_bind_int64(s, 4, (int64_t)(info->start_ns ? info->start_ns : info->init_ns));
        op_db_bind_text(s, 5, info->command ? info->command : "", -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 6, env, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 7, ext, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(s);
        sqlite3_finalize(s);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    op_free(env);
    op_free(ext);
    if (rc != SQLITE_OK) {
        op_db_seterr(err, errlen, "database '%s': writing the process row failed: %s (%s)", w->path, sqlite3_errstr(rc),
               sqlite3_errmsg(w->db));
        return -EIO;
    }
    return 0;
}


/* Node and process rows. */
int op_db_write_identity(op_db_writer *w, const op_db_process_info *info, char *err, size_t errlen)
{
    int rc = write_node(w, info, err, errlen);
    return rc ? rc : write_process(w, info, err, errlen);
}

/* ------------------------------------------------------------------------------------------ */
/* At close                                                                                    */

typedef struct symbolize_ctx {
    op_db_writer *w;
    int rc;
} symbolize_ctx;

static int symbol_cb(const omniprof_symbol_info_t *info, void *data)
{
    symbolize_ctx *c = data;
    op_db_writer *w = c->w;
    if (!info || op_db_failed(w)) return 1;
    sqlite3_stmt *s = w->st[ST_OP_SYMBOL];
    sqlite3_bind_int64(s, 1, (int64_t)info->address);
    sqlite3_bind_int(s, 2, (int)info->inline_depth);
    op_db_bind_text(s, 3, info->function, -1, SQLITE_TRANSIENT);
    op_db_bind_text(s, 4, info->function_mangled, -1, SQLITE_TRANSIENT);
    op_db_bind_text(s, 5, info->file, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 6, (int)info->line);
    op_db_bind_text(s, 7, info->module, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 8, (int64_t)info->module_offset);
    c->rc = op_db_step(w, ST_OP_SYMBOL, "inserting a symbol");
    return c->rc != 0;
}

/* At close: every distinct stack address -> omniprof_symbol rows (opts.symbolize). */
void op_db_symbolize_stacks(op_db_writer *w)
{
    if (!w->opts.symbolize) return;
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT DISTINCT address FROM \"omniprof_stack%s\"", w->suffix);
    sqlite3_stmt *sel = NULL;
    int rc = sqlite3_prepare_v2(w->db, sql, -1, &sel, NULL);
    if (rc != SQLITE_OK) {
        op_db_writer_fail(w, "listing stack addresses", rc);
        return;
    }
    if (op_db_txn_begin(w) != 0) {
        sqlite3_finalize(sel);
        return;
    }
    symbolize_ctx ctx = {w, 0};
    while (!op_db_failed(w) && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
        uint64_t addr = (uint64_t)sqlite3_column_int64(sel, 0);
        w->opts.symbolize(addr, symbol_cb, &ctx, w->opts.user);
        if (w->txn_rows >= w->opts.batch_rows) { /* keep transactions bounded */
            op_db_txn_commit(w);
            op_db_txn_begin(w);
        }
    }
    sqlite3_finalize(sel);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW && !op_db_failed(w)) op_db_writer_fail(w, "listing stack addresses", rc);
    if (!op_db_failed(w)) op_db_txn_commit(w);
}

void op_db_write_final_rows(op_db_writer *w)
{
    if (op_db_txn_begin(w) != 0) return;
    char sql[256];
    snprintf(sql, sizeof sql, "UPDATE \"rocpd_info_process%s\" SET fini = ?, \"end\" = ? WHERE id = %lld", w->suffix,
             (long long)w->pid);
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(w->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        int64_t now = (int64_t)op_now_ns();
        sqlite3_bind_int64(s, 1, now);
        sqlite3_bind_int64(s, 2, now);
        rc = sqlite3_step(s);
        sqlite3_finalize(s);
        if (rc != SQLITE_DONE) {
            op_db_writer_fail(w, "writing the process end time", rc);
            return;
        }
    } else {
        op_db_writer_fail(w, "writing the process end time", rc);
        return;
    }
    struct {
        const char *name;
        double value;
        const char *units;
    } costs[] = {
        {"db_ingest_busy_ns", (double)atomic_load(&w->busy_ns), "ns"},
        {"db_records_appended", (double)atomic_load(&w->n_appended), "records"},
        {"db_records_ingested", (double)atomic_load(&w->n_ingested), "records"},
        {"db_records_unhandled", (double)atomic_load(&w->n_unhandled), "records"},
        {"db_records_dropped", (double)atomic_load(&w->n_dropped), "records"},
        {"db_rows_written", (double)(atomic_load(&w->n_rows) + w->txn_rows + 8), "rows"},
        {"db_transactions", (double)(atomic_load(&w->n_txn) + 1), "count"},
        {"db_spool_bytes_total", (double)op_spool_total_bytes(w->spool), "bytes"},
        {"db_spool_file_bytes_peak", (double)op_spool_file_bytes(w->spool), "bytes"},
        {"db_spool_bytes_lost", (double)op_spool_lost_bytes(w->spool), "bytes"},
    };
    for (size_t i = 0; i < NELEM(costs); i++)
        if (op_db_insert_run_cost(w, costs[i].name, costs[i].value, costs[i].units) != 0) return;
    struct {
        const char *cause;
        uint64_t n;
    } drops[] = {{"spool_full", atomic_load(&w->n_drop_full)},
                 {"invalid_record", atomic_load(&w->n_drop_invalid)},
                 {"writer_off", atomic_load(&w->n_drop_off)}};
    for (size_t i = 0; i < NELEM(drops); i++)
        if (drops[i].n && op_db_insert_drops(w, "db_writer", drops[i].cause, drops[i].n) != 0) return;
    op_db_txn_commit(w);
}
