/* writer.c — the background database writer: SDK records -> spool -> ingest thread -> rows of
 * the rocpd schema version 3 (schema/tables.sql; mapping in docs/database.md).
 *
 * Threads. Producers (SDK buffer callbacks, any number) call op_db_writer_append: one spool
 * reservation per call, a memcpy per record, strings copied beside it (spool.h). One ingest
 * thread, started with every signal blocked, owns the SQLite connection: it reads committed
 * spool batches in order, turns each record into rows with prepared statements inside a
 * transaction, and commits when it is idle, every flush interval, every batch_rows rows, and
 * as soon as it has passed a flush target.
 *
 * This file: open / flush / close, the ingest thread and its transactions, errors. The other
 * jobs live beside it (writer_internal.h lists the files); the spool record's layout is in
 * writer_internal.h.
 *
 * Crash-safety invariants (docs/database.md repeats them):
 *  W1. The database is in WAL mode from its creation, before any data row: a process that dies
 *      at any instant (SIGKILL, abort, SIGSEGV) leaves a database that opens, passes
 *      integrity_check and holds exactly the transactions committed before.
 *  W2. Each transaction leaves the database consistent: every row it adds references only rows
 *      added by the same or an earlier transaction (strings, threads, streams, agents, kernel
 *      symbols and tracks are inserted before the rows that use them), so the views never show
 *      a row whose joins fail because of the crash point.
 *  W3. Records appended more than one flush interval (plus the time to ingest what was ahead of
 *      them) before a SIGKILL are committed: the ingest thread commits at least every interval
 *      while it works, and when it runs out of committed spool batches.
 *  W4. The ingest thread never holds a lock a producer needs while it runs SQLite; producers
 *      take only the spool lock, for a few instructions.
 *  W5. After the first SQLite or I/O error the writer is off: one log line with the database
 *      path and SQLite's message, the open transaction is rolled back (committed data stays),
 *      producers drop and count, the ingest thread keeps draining the spool so memory and disk
 *      are released. The application is never stopped or crashed.
 *  W6. Memory is bounded: the spool's hot chunks, fixed caches (strings, stack nodes, recent
 *      dispatches), maps whose size grows only with distinct threads / streams / agents /
 *      kernels / operations / metrics / counters of the program, and SQLite's page cache
 *      (cache_kib). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/number.h"
#include "common/affinity.h"
#include "common/alloc.h"
#include "common/clock.h"
#include "common/fd_guard.h"
#include "common/log.h"
#include "common/settings.h"
#include "db/db_files.h"
#include "db/writer_internal.h"

/* ------------------------------------------------------------------------------------------ */
/* Errors (W5)                                                                                */

void op_db_writer_fail(op_db_writer *w, const char *what, int rc)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&w->failed, &expected, 1)) return;
    /* SQLite's message adds detail only when the failure was SQLite's own and says more. */
    const char *detail = w->db && sqlite3_extended_errcode(w->db) == rc ? sqlite3_errmsg(w->db) : NULL;
    if (detail && strcmp(detail, sqlite3_errstr(rc)) == 0) detail = NULL;
    int sys = w->db && detail ? sqlite3_system_errno(w->db) : 0;
    if (!detail && w->db && (rc & 0xff) == SQLITE_IOERR) sys = sqlite3_system_errno(w->db);
    snprintf(w->errmsg, sizeof w->errmsg,
             "database '%s': %s failed: %s%s%s%s%s%s; the writer is off, data committed before stays valid", w->path,
             what, sqlite3_errstr(rc), detail ? " (" : "", detail ? detail : "", detail ? ")" : "", sys ? ": " : "",
             sys ? strerror(sys) : "");
    op_error("%s", w->errmsg);
    if (w->spool) op_spool_shutdown(w->spool);
    op_db_rows_discard(w);
    if (w->db && w->txn_open) {
        sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
        w->txn_open = 0;
    }
    pthread_mutex_lock(&w->mu);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

int op_db_failed(const op_db_writer *w) { return atomic_load_explicit(&w->failed, memory_order_relaxed); }

int op_db_step(op_db_writer *w, int which, const char *what)
{
    sqlite3_stmt *s = w->st[which];
    int rc = sqlite3_step(s);
    sqlite3_reset(s); /* every statement binds all its parameters: no clear_bindings needed */
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        op_db_writer_fail(w, what, rc);
        return -EIO;
    }
    w->txn_rows++;
    return 0;
}


/* ------------------------------------------------------------------------------------------ */
/* Ingest thread                                                                              */

int op_db_txn_begin(op_db_writer *w)
{
    if (w->txn_open) return 0;
    if (op_db_files_check() != 0) {
        op_db_writer_fail(w, "checking the database's files", SQLITE_IOERR);
        return -1;
    }
    int rc = sqlite3_step(w->st[ST_BEGIN]);
    sqlite3_reset(w->st[ST_BEGIN]);
    if (rc != SQLITE_DONE) {
        op_db_writer_fail(w, "BEGIN", rc);
        return -1;
    }
    w->txn_open = 1;
    w->txn_start_ns = op_now_ns();
    w->txn_rows = 0;
    return 0;
}

int op_db_txn_commit(op_db_writer *w)
{
    if (!w->txn_open) return 0;
    if (op_db_rows_flush_all(w) != 0) return -1; /* W2: the queued rows belong to this transaction */
    int rc = sqlite3_step(w->st[ST_COMMIT]);
    sqlite3_reset(w->st[ST_COMMIT]);
    if (rc != SQLITE_DONE) {
        op_db_writer_fail(w, "COMMIT", rc);
        return -1;
    }
    w->txn_open = 0;
    atomic_fetch_add_explicit(&w->n_rows, w->txn_rows, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->n_txn, 1, memory_order_relaxed);
    atomic_store(&w->oldest_uncommitted_ns, 0);
    atomic_store(&w->committed_pos, op_spool_consumed_pos(w->spool));
    pthread_mutex_lock(&w->mu);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

static void process_batch(op_db_writer *w, const op_spool_batch *b)
{
    const uint8_t *p = (const uint8_t *)b + OP_SPOOL_BATCH_HEADER, *end = (const uint8_t *)b + b->len;
    uint32_t n = 0;
    if (!op_db_failed(w) && op_db_txn_begin(w) == 0) {
        if (!atomic_load_explicit(&w->oldest_uncommitted_ns, memory_order_relaxed))
            atomic_store_explicit(&w->oldest_uncommitted_ns, b->t_ns, memory_order_relaxed);
        while (p < end && n < b->n) {
            const op_db_rec *rec = (const op_db_rec *)p;
            if (rec->len < sizeof *rec + 8 || rec->len > (uint64_t)(end - p)) break; /* cannot happen */
            if (op_db_ingest_record(w, rec) != 0) break;
            p += rec->len;
            n++;
        }
        /* queued rows point at this batch's strings: written before it is released */
        if (op_db_rows_flush_all(w) != 0) n = 0;
    }
    atomic_fetch_add_explicit(&w->n_ingested, n, memory_order_relaxed);
    if (n < b->n) atomic_fetch_add_explicit(&w->n_dropped, b->n - n, memory_order_relaxed);
}


/* The WAL stays small, so that the checkpoint at close has little to copy (issue 12: the
 * database complete soon after the program ends). SQLite's own rule (a PASSIVE checkpoint by
 * the committing connection once the WAL holds 1,000 pages) stays; besides, when the ingest
 * thread has caught up (nothing left in the spool), it checkpoints a WAL of OP_DB_IDLE_CKPT_PAGES
 * or more: the copy and its two fsyncs happen while the thread would wait anyway, and the WAL
 * left at close holds only what came after. A PASSIVE checkpoint never waits for a reader. */
#ifndef OP_DB_AUTO_CKPT_PAGES
#define OP_DB_AUTO_CKPT_PAGES 1000
#endif
#ifndef OP_DB_IDLE_CKPT_PAGES
#define OP_DB_IDLE_CKPT_PAGES 128 /* 1 MiB of 8 KiB pages */
#endif

static int wal_hook(void *arg, sqlite3 *db, const char *schema, int pages)
{
    op_db_writer *w = arg;
    w->wal_pages = pages;
    if (pages >= OP_DB_AUTO_CKPT_PAGES) { /* what sqlite3_wal_autocheckpoint(1000) does */
        sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        w->wal_pages = 0;
    }
    return SQLITE_OK;
}

static void idle_checkpoint(op_db_writer *w)
{
    if (op_db_failed(w) || !w->db) return;
    int rc = sqlite3_wal_checkpoint_v2(w->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY) op_db_writer_fail(w, "checkpointing the WAL", rc);
    w->wal_pages = 0;
}

static void close_database(op_db_writer *w, int checkpoint)
{
    op_db_rows_free(w);
    for (int i = 0; i < ST__COUNT; i++) {
        sqlite3_finalize(w->st[i]);
        w->st[i] = NULL;
    }
    if (!w->db) return;
    if (!checkpoint) {
        sqlite3_db_config(w->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    } else if (!op_db_failed(w)) {
        uint64_t t0 = op_now_ns();
        char wal[4200];
        struct stat st;
        snprintf(wal, sizeof wal, "%s-wal", w->path);
        char size[OP_FMT_BYTES_LEN] = "no";
        if (stat(wal, &st) == 0) op_fmt_bytes(size, sizeof size, (uint64_t)st.st_size);
        int rc = sqlite3_wal_checkpoint_v2(w->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
        if (rc != SQLITE_OK && rc != SQLITE_BUSY) op_db_writer_fail(w, "checkpointing the WAL", rc);
        op_info("database '%s': final checkpoint of a %s WAL: %.1f ms", w->path, size,
                 (double)(op_now_ns() - t0) / 1e6);
    }
    sqlite3_close_v2(w->db);
    w->db = NULL;
}

/* The fork gate (invariant W-F): every stretch of SQLite calls in this module runs with
 * g_fork_gate held, and pthread_atfork's prepare handler takes it too. A fork therefore never
 * happens while one of our threads is inside SQLite, so the child never inherits one of
 * SQLite's global mutexes (memory, VFS inode list) locked by a thread that no longer exists
 * there (seen: a forked child hanging in sqlite3Malloc). Each stretch is bounded (one batch,
 * one commit, or the open/close sequence), so a fork waits at most that long. */
static pthread_mutex_t g_fork_gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_fork_gate_once = PTHREAD_ONCE_INIT;
static void fork_gate_lock(void) { pthread_mutex_lock(&g_fork_gate); }
static void fork_gate_unlock(void) { pthread_mutex_unlock(&g_fork_gate); }
static void fork_gate_install(void) { pthread_atfork(fork_gate_lock, fork_gate_unlock, fork_gate_unlock); }

static void *ingest_main(void *arg)
{
    op_db_writer *w = arg;
    uint64_t interval_ns = w->opts.flush_interval_ms * 1000000ull;
    struct pollfd pfd = {.fd = w->efd, .events = POLLIN};
    op_db_files_scope(1); /* this thread runs the writer's SQLite for good */
    prctl(PR_SET_NAME, "omniprof-db", 0, 0, 0); /* top -H, /proc/PID/task/TID/comm */
    for (;;) {
        int stop = atomic_load(&w->stop);
        if (stop == 2 && op_now_ns() >= atomic_load(&w->fast_deadline_ns)) break;
        const op_spool_batch *b = op_spool_peek(w->spool);
        if (b) {
            uint64_t t0 = op_now_ns();
            fork_gate_lock();
            process_batch(w, b);
            op_spool_consume(w->spool, b);
            uint64_t t1 = op_now_ns();
            atomic_fetch_add_explicit(&w->busy_ns, t1 - t0, memory_order_relaxed);
            if (w->txn_open) {
                uint64_t target = atomic_load_explicit(&w->flush_target, memory_order_acquire);
                uint64_t consumed = op_spool_consumed_pos(w->spool);
                if (w->txn_rows >= w->opts.batch_rows || t1 - w->txn_start_ns >= interval_ns ||
                    (target > atomic_load(&w->committed_pos) && consumed >= target))
                    op_db_txn_commit(w);
            }
            fork_gate_unlock();
            continue;
        }
        /* Nothing ready: commit what we have (W3), then sleep until woken or the interval. */
        if (w->txn_open) {
            uint64_t t0 = op_now_ns();
            fork_gate_lock();
            op_db_txn_commit(w);
            fork_gate_unlock();
            atomic_fetch_add_explicit(&w->busy_ns, op_now_ns() - t0, memory_order_relaxed);
        } else {
            /* No transaction open: everything consumed is committed, unless the writer is off
             * (then consumed records were dropped: committed_pos stays, flush says -ESHUTDOWN). */
            if (!op_db_failed(w)) atomic_store(&w->committed_pos, op_spool_consumed_pos(w->spool));
            pthread_mutex_lock(&w->mu);
            pthread_cond_broadcast(&w->cv);
            pthread_mutex_unlock(&w->mu);
        }
        if (!stop && w->wal_pages >= OP_DB_IDLE_CKPT_PAGES) {
            fork_gate_lock();
            idle_checkpoint(w);
            fork_gate_unlock();
        }
        if (stop && op_spool_consumed_pos(w->spool) >= op_spool_reserved_pos(w->spool)) break;
        int timeout_ms = stop ? 1 : (int)(w->opts.flush_interval_ms < 1000 ? w->opts.flush_interval_ms : 1000);
        pfd.fd = op_fd_usable(w->efd); /* -1 (replaced behind the interposers): poll just waits */
        if (poll(&pfd, 1, timeout_ms) > 0) {
            uint64_t v;
            /* through the checked read, not the number polled: it may have moved since */
            if (op_fd_read_checked(w->efd, &v, sizeof v, true) < 0) { /* spurious: fine */
            }
        }
    }
    /* The close, step by step; OMNIPROF_LOG_LEVEL=info prints each step's time (issue 12). */
    uint64_t c0 = op_now_ns();
    fork_gate_lock();
    if (w->txn_open) op_db_txn_commit(w);
    uint64_t c1 = op_now_ns();
    int fast = atomic_load(&w->stop) == 2;
    if (w->db && !op_db_failed(w) && !fast) op_db_symbolize_stacks(w);
    uint64_t c2 = op_now_ns();
    if (w->db && !op_db_failed(w)) op_db_write_final_rows(w);
    uint64_t c3 = op_now_ns();
    close_database(w, !fast);
    fork_gate_unlock();
    uint64_t c4 = op_now_ns();
    op_info("database '%s' closed: last commit %.1f ms, symbols %.1f ms, closing rows %.1f ms, checkpoint and close "
             "%.1f ms (from the stop: %.1f ms)", w->path, (double)(c1 - c0) / 1e6, (double)(c2 - c1) / 1e6,
             (double)(c3 - c2) / 1e6, (double)(c4 - c3) / 1e6,
             (double)(c4 - atomic_load(&w->stop_ns)) / 1e6);
    {
        uint64_t f = op_spool_file_bytes(w->spool);
        if (f > w->spool_file_peak) w->spool_file_peak = f;
    }
    pthread_mutex_lock(&w->mu);
    atomic_store(&w->done, 1);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Open / flush / close                                                                       */

/* "%s": the table suffix; "$PID": the process row's id, the OS pid (expand_statement). The
 * inserts are generated from tables.sql (OP_DB_INSERTS); these are the other statements. */
#define OP_DB_ST_TEXT(ST, SQL) [ST] = SQL,
static const char *const k_statements[ST__COUNT] = {
    OP_DB_INSERTS(OP_DB_ST_TEXT)
    [ST_STRING_SEL] = "SELECT id FROM \"rocpd_string%s\" WHERE string = ?",
    [ST_THREAD_START] = "UPDATE \"rocpd_info_thread%s\" SET start = ? WHERE id = ?",
    [ST_THREAD_END] = "UPDATE \"rocpd_info_thread%s\" SET \"end\" = ? WHERE id = ?",
    [ST_THREAD_NAME] = "UPDATE \"rocpd_info_thread%s\" SET name = ? WHERE id = ?",
    [ST_KSYM_UPD] = "UPDATE \"rocpd_info_kernel_symbol%s\" SET code_object_id = ? WHERE id = ?",
    [ST_STACK_SEL] = "SELECT id FROM \"omniprof_stack%s\" WHERE parent_id = ? AND address = ?",
    [ST_PROCESS_RANK] = "UPDATE \"rocpd_info_process%s\" SET extdata = json_set(extdata, '$.rank', ?, '$.size', ?) WHERE id = $PID",
    [ST_QUEUE_CTX] = "UPDATE \"rocpd_info_queue%s\" SET extdata = json_set(extdata, '$.context_id', ?) WHERE id = ?",
    [ST_BEGIN] = "BEGIN",
    [ST_COMMIT] = "COMMIT",
};
#undef OP_DB_ST_TEXT

void op_db_seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static void writer_free(op_db_writer *w)
{
    if (!w) return;
    close_database(w, 0);
    op_spool_close(w->spool);
    if (w->efd >= 0) op_fd_close(w->efd);
    op_u64map *maps[] = {&w->threads, &w->streams, &w->queues, &w->stream_agents, &w->agents, &w->kernels,
                         &w->kernel_names, &w->queue_ctx, &w->code_objects, &w->opnames, &w->tracks, &w->metric_tracks, &w->pmcs};
    for (size_t i = 0; i < NELEM(maps); i++) op_u64map_free(maps[i]);
    if (w->strcache)
        for (size_t i = 0; i < OP_DB_STRCACHE; i++) op_free(w->strcache[i].text);
    op_free(w->strcache);
    op_free(w->stackcache);
    op_free(w->dispatchcache);
    op_free(w->scratch);
    op_free(w->kname);
    op_free(w->path);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    op_free(w);
}

static void remove_db_files(const char *path)
{
    char buf[4200];
    unlink(path);
    snprintf(buf, sizeof buf, "%s-wal", path);
    unlink(buf);
    snprintf(buf, sizeof buf, "%s-shm", path);
    unlink(buf);
    snprintf(buf, sizeof buf, "%s-journal", path);
    unlink(buf);
}

static op_db_writer *writer_open_gated(const char *path, const op_db_process_info *info,
                                       const op_db_writer_options *opts, char *err, size_t errlen);

op_db_writer *op_db_writer_open(const char *path, const op_db_process_info *info, const op_db_writer_options *opts,
                                char *err, size_t errlen)
{
    pthread_once(&g_fork_gate_once, fork_gate_install);
    op_db_files_install();
    fork_gate_lock();
    op_db_files_scope(1); /* the files SQLite opens here are the profiler's (db_files.c) */
    uint64_t replaced = op_db_files_replaced();
    op_db_writer *w = writer_open_gated(path, info, opts, err, errlen);
    int e = errno;
    if (w) w->replaced_at_open = replaced;
    op_db_files_scope(-1);
    fork_gate_unlock();
    errno = e;
    return w;
}

/* The name must be free: an existing file is never overwritten (the final claim is the link
 * of op_db_files_publish, which fails on a name that appeared meanwhile). 0 or an errno value. */
static int claim_path(const char *path, char *err, size_t errlen)
{
    if (strlen(path) > 4000) {
        op_db_seterr(err, errlen, "database path too long (%zu bytes, at most 4000)", strlen(path));
        return ENAMETOOLONG;
    }
    struct stat st;
    int e = lstat(path, &st) == 0 ? EEXIST : errno == ENOENT ? 0 : errno;
    if (e == 0) { /* the directory must exist (before the spool is made in it) */
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash) slash[slash == dir ? 1 : 0] = 0;
        if (slash && stat(dir, &st) != 0) e = errno;
    }
    if (e) {
        if (e == EEXIST)
            op_db_seterr(err, errlen, "database '%s' already exists: refusing to overwrite it (choose another output name)",
                         path);
        else
            op_db_seterr(err, errlen, "cannot create database '%s': %s%s", path, strerror(e),
                         e == ENOENT ? " (the directory does not exist)" : "");
        return e;
    }
    return 0;
}

/* The database's first image — schema and identity rows, built in memory — published whole
 * under its name (db_files.c): a reader never sees it without tables, a kill at any moment
 * leaves no database or a valid one (issue 11 item 3). 0 or an errno value. */
static int publish_database(op_db_writer *w, const op_db_process_info *info, char *err, size_t errlen)
{
    sqlite3 *mem = NULL;
    int rc = sqlite3_open_v2(":memory:", &mem, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_EXRESCODE, NULL);
    if (rc != SQLITE_OK) {
        op_db_seterr(err, errlen, "database '%s': cannot build it in memory: %s", w->path, sqlite3_errstr(rc));
        sqlite3_close(mem);
        return rc == SQLITE_NOMEM ? ENOMEM : EIO;
    }
    int e = sqlite3_exec(mem, "PRAGMA page_size=" OP_DB_STR(OP_DB_PAGE_SIZE), NULL, NULL, NULL) == SQLITE_OK ? 0 : EIO;
    w->db = mem;
    if (e == 0) e = -op_db_schema_create(mem, w->uuid, err, errlen);
    if (e == 0) e = -op_db_write_identity(w, info, err, errlen);
    w->db = NULL;
    sqlite3_int64 size = 0;
    unsigned char *img = e == 0 ? sqlite3_serialize(mem, "main", &size, 0) : NULL;
    sqlite3_close(mem);
    if (e == 0 && (!img || size < 100)) {
        op_db_seterr(err, errlen, "database '%s': out of memory", w->path);
        e = ENOMEM;
    }
    /* WAL from the first byte on disk (W1): the file format's write/read versions (header
     * offsets 18 and 19) are 2, what PRAGMA journal_mode=WAL writes; so the switch never needs
     * a rollback journal that a kill could leave behind. */
    if (e == 0) img[18] = img[19] = 2;
    if (e == 0) e = op_db_files_publish(w->path, img, (size_t)size, err, errlen);
    sqlite3_free(img);
    return e;
}

/* Options with defaults (libbpf OPTS_GET style: fields beyond the caller's size default). */
static void apply_options(op_db_writer *w, const op_db_writer_options *opts)
{
    memset(&w->opts, 0, sizeof w->opts);
    if (opts) memcpy(&w->opts, opts, opts->size < sizeof w->opts ? opts->size : sizeof w->opts);
    w->opts.size = sizeof w->opts;
    if (!w->opts.spool_chunk_bytes) w->opts.spool_chunk_bytes = op_setting_uint(OP_SET_DB_SPOOL_CHUNK_KB) * 1024;
    if (w->opts.spool_chunk_bytes < 65536) w->opts.spool_chunk_bytes = 65536;
    if (w->opts.spool_chunk_bytes > (64u << 20)) w->opts.spool_chunk_bytes = 64u << 20;
    w->opts.spool_chunk_bytes = (w->opts.spool_chunk_bytes + 4095) & ~(uint64_t)4095;
    if (!w->opts.spool_mapped_chunks) w->opts.spool_mapped_chunks = 16;
    if (!w->opts.spool_max_bytes) w->opts.spool_max_bytes = op_setting_uint(OP_SET_DB_SPOOL_MAX_MB) << 20;
    if (!w->opts.flush_interval_ms) w->opts.flush_interval_ms = op_setting_uint(OP_SET_DB_FLUSH_INTERVAL_MS);
    if (w->opts.flush_interval_ms < 1) w->opts.flush_interval_ms = 1;
    if (w->opts.flush_interval_ms > 60000) w->opts.flush_interval_ms = 60000;
    if (!w->opts.batch_rows) w->opts.batch_rows = 200000;
    if (!w->opts.cache_kib) w->opts.cache_kib = 8192;
    if (!w->opts.close_timeout_ms) w->opts.close_timeout_ms = 30000;
}

/* The writer's memory, options and uuid (table suffix). NULL with *e set. */
static op_db_writer *writer_alloc(const char *path, const op_db_process_info *info, const op_db_writer_options *opts,
                                  char *err, size_t errlen, int *e)
{
    op_db_writer *w = op_calloc(1, sizeof *w);
    if (!w) {
        op_db_seterr(err, errlen, "database '%s': out of memory", path);
        *e = ENOMEM;
        return NULL;
    }
    w->efd = -1;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->path = op_strdup(path);
    w->strcache = op_calloc(OP_DB_STRCACHE, sizeof *w->strcache);
    w->stackcache = op_calloc(OP_DB_STACKCACHE, sizeof *w->stackcache);
    w->dispatchcache = op_calloc(OP_DB_DISPATCHCACHE, sizeof *w->dispatchcache);
    w->scratch_len = OP_DB_MAX_STRING * 6 + 512;
    w->scratch = op_malloc(w->scratch_len);
    w->kname = op_malloc(OP_DB_MAX_STRING);
    if (!w->path || !w->strcache || !w->stackcache || !w->dispatchcache || !w->scratch || !w->kname) {
        op_db_seterr(err, errlen, "database '%s': out of memory", path);
        *e = ENOMEM;
        writer_free(w);
        return NULL;
    }
    w->pid = info->pid;
    w->ppid = info->ppid;
    w->start_ns = info->start_ns ? info->start_ns : info->init_ns;
    apply_options(w, opts);
    if (info->size > offsetof(op_db_process_info, uuid) && info->uuid && *info->uuid) {
        size_t n = strlen(info->uuid);
        if (n > 36 || strspn(info->uuid, "0123456789abcdefABCDEF-") != n) {
            op_db_seterr(err, errlen, "invalid uuid '%.64s' in process info: expected a UUID (hex digits and '-')",
                         info->uuid);
            *e = EINVAL;
            writer_free(w);
            return NULL;
        }
        memcpy(w->uuid, info->uuid, n + 1);
    } else {
        op_db_make_uuid(w->uuid, sizeof w->uuid);
    }
    w->suffix[0] = '_';
    for (size_t i = 0; i <= strlen(w->uuid); i++) w->suffix[i + 1] = w->uuid[i] == '-' ? '_' : w->uuid[i];
    return w;
}

/* The spool (OMNIPROF_TMPDIR, else the database's directory) and the wake-up eventfd. */
static int open_spool(op_db_writer *w, char *err, size_t errlen)
{
    char dir[4096];
    const char *spool_dir = w->opts.spool_dir;
    if (!spool_dir || !*spool_dir) spool_dir = op_setting_str(OP_SET_TMPDIR);
    if (!spool_dir || !*spool_dir) {
        snprintf(dir, sizeof dir, "%s", w->path);
        char *slash = strrchr(dir, '/');
        if (slash == dir) slash[1] = 0;
        else if (slash) *slash = 0;
        else snprintf(dir, sizeof dir, ".");
        spool_dir = dir;
    }
    int rc = op_spool_open(&w->spool, spool_dir, w->opts.spool_chunk_bytes, w->opts.spool_mapped_chunks,
                           w->opts.spool_max_bytes, err, errlen);
    if (rc != 0) return -rc;
    w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->efd >= 0) w->efd = op_fd_adopt(w->efd, OP_FD_IDENTITY); /* above the program's fds, protected */
    if (w->efd < 0) {
        int e = errno;
        op_db_seterr(err, errlen, "database '%s': eventfd failed: %s", w->path, strerror(e));
        return e;
    }
    return 0;
}

/* SQLite: the connection, WAL before any data row (W1), the pragmas. 0 or an errno value. */
static int open_connection(op_db_writer *w, char *err, size_t errlen)
{
    int rc = sqlite3_open_v2(w->path, &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, NULL);
    if (rc != SQLITE_OK) {
        op_db_seterr(err, errlen, "cannot open database '%s': %s", w->path, sqlite3_errstr(rc));
        return rc == SQLITE_NOMEM ? ENOMEM : EIO;
    }
    sqlite3_extended_result_codes(w->db, 1);
    sqlite3_busy_timeout(w->db, 2000);
    sqlite3_wal_hook(w->db, wal_hook, w); /* replaces the auto-checkpoint, which it does itself */
    char pragmas[512];
    snprintf(pragmas, sizeof pragmas,
             "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-%u; "
             "PRAGMA temp_store=MEMORY; PRAGMA foreign_keys=OFF;",
             w->opts.cache_kib);
    char *msg = NULL;
    rc = sqlite3_exec(w->db, pragmas, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        op_db_seterr(err, errlen, "database '%s': setting up SQLite failed: %s (%s)", w->path, sqlite3_errstr(rc),
                     msg ? msg : "");
        sqlite3_free(msg);
        return EIO;
    }
    sqlite3_stmt *jm = NULL;
    /* journal_mode=WAL can silently stay "delete" (e.g. no shared memory): check it. */
    if (sqlite3_prepare_v2(w->db, "PRAGMA journal_mode", -1, &jm, NULL) == SQLITE_OK && sqlite3_step(jm) == SQLITE_ROW &&
        strcmp((const char *)sqlite3_column_text(jm, 0), "wal") != 0)
        op_warn("database '%s': WAL journal mode unavailable (%s); readers during the run may block", w->path,
                (const char *)sqlite3_column_text(jm, 0));
    sqlite3_finalize(jm);
    return 0;
}

/* Prepared statements, category strings (schema and identity rows came with the image). 0 or an
 * errno value. */
/* A statement of k_statements with "%s" -> the table suffix and "$PID" -> the process row id
 * (the OS pid, docs/database.md). 0, or -1 when it does not fit. */
static int expand_statement(char *out, size_t cap, const char *tmpl, const char *suffix, int64_t pid)
{
    size_t at = 0;
    for (const char *p = tmpl; *p; p++) {
        char num[24];
        const char *put = NULL;
        size_t n = 1;
        if (p[0] == '%' && p[1] == 's') put = suffix, n = strlen(suffix), p++;
        else if (!strncmp(p, "$PID", 4)) n = (size_t)snprintf(num, sizeof num, "%lld", (long long)pid), put = num, p += 3;
        if (at + n + 1 > cap) return -1;
        memcpy(out + at, put ? put : p, n);
        at += n;
    }
    out[at] = 0;
    return 0;
}

/* The batched tables (rows.c): their one-row statement, and whether other rows reference theirs. */
static const struct {
    int st, ids;
} k_rowq[Q__COUNT] = {
    [Q_EVENT] = {ST_EVENT, 1}, [Q_REGION] = {ST_REGION, 0}, [Q_SAMPLE] = {ST_SAMPLE, 1}, [Q_ARG] = {ST_ARG, 0},
    [Q_KERNEL] = {ST_KERNEL_DISPATCH, 0}, [Q_COPY] = {ST_MEMORY_COPY, 0}, [Q_CPU_SAMPLE] = {ST_OP_CPU_SAMPLE, 0},
};

static int prepare_database(op_db_writer *w, char *err, size_t errlen)
{
    int rc;
    for (int i = 0; i < ST__COUNT; i++) {
        char sql[1024];
        if (expand_statement(sql, sizeof sql, k_statements[i], w->suffix, w->pid) != 0) {
            op_db_seterr(err, errlen, "database '%s': statement %d too long", w->path, i);
            return EIO;
        }
        rc = sqlite3_prepare_v3(w->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &w->st[i], NULL);
        if (rc != SQLITE_OK) {
            op_db_seterr(err, errlen, "database '%s': preparing a statement failed: %s (%s)", w->path,
                         sqlite3_errstr(rc), sqlite3_errmsg(w->db));
            return EIO;
        }
        int e = 0;
        for (int q = 0; q < Q__COUNT && !e; q++)
            if (k_rowq[q].st == i) e = op_db_rows_prepare(w, q, i, sql, k_rowq[q].ids, err, errlen);
        if (e) return e;
    }
    /* Category strings: interned up front (one transaction). */
    int ok = op_db_txn_begin(w) == 0;
    for (uint32_t k = 0; ok && k < OMNIPROF_BUFFER_TRACING_LAST; k++) {
        w->cat_id[k] = op_db_intern(w, op_db_kind_name(w, k));
        ok = w->cat_id[k] >= 0;
    }
    if (!ok || op_db_txn_commit(w) != 0) {
        op_db_seterr(err, errlen, "%s", w->errmsg[0] ? w->errmsg : "database setup failed");
        return EIO;
    }
    atomic_store(&w->n_rows, 0);
    atomic_store(&w->n_txn, 0);
    return 0;
}

/* op_db_writer_open's body, run with the fork gate held. */
static op_db_writer *writer_open_gated(const char *path, const op_db_process_info *info,
                                       const op_db_writer_options *opts, char *err, size_t errlen)
{
    if (err && errlen) err[0] = 0;
    if (!path || !*path || !info || info->size < offsetof(op_db_process_info, environment)) {
        op_db_seterr(err, errlen, "op_db_writer_open: %s",
                     !path || !*path ? "empty database path" : "missing or too small process info");
        errno = EINVAL;
        return NULL;
    }
    int e = claim_path(path, err, errlen);
    if (e) {
        errno = e;
        return NULL;
    }
    int published = 0;
    op_db_writer *w = writer_alloc(path, info, opts, err, errlen, &e);
    if (!w) goto fail;
    if ((e = open_spool(w, err, errlen)) != 0 || (e = publish_database(w, info, err, errlen)) != 0) goto fail;
    published = 1;
    if ((e = open_connection(w, err, errlen)) != 0 || (e = prepare_database(w, err, errlen)) != 0) goto fail;
    /* Ingest thread, all signals blocked (it never runs application code). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = op_worker_thread_create(&w->thread, NULL, ingest_main, w); /* on OMNIPROF_WORKER_CPUS */
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        op_db_seterr(err, errlen, "database '%s': cannot start the writer thread: %s", path, strerror(rc));
        e = rc;
        goto fail;
    }
    w->thread_started = 1;
    return w;

fail:
    writer_free(w);
    if (published) remove_db_files(path); /* only what this writer created */
    errno = e;
    return NULL;
}

int op_db_writer_flush(op_db_writer *w, uint64_t timeout_ms)
{
    if (!w) return -EINVAL;
    if (op_db_failed(w)) return -ESHUTDOWN;
    uint64_t target = op_spool_reserved_pos(w->spool);
    uint64_t cur = atomic_load(&w->flush_target);
    while (cur < target && !atomic_compare_exchange_weak(&w->flush_target, &cur, target)) {
    }
    op_db_wake_ingest(w);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    uint64_t ns = (uint64_t)dl.tv_nsec + (timeout_ms % 1000) * 1000000ull;
    dl.tv_sec += (time_t)(timeout_ms / 1000 + ns / 1000000000ull);
    dl.tv_nsec = (long)(ns % 1000000000ull);
    int rc = 0;
    pthread_mutex_lock(&w->mu);
    while (atomic_load(&w->committed_pos) < target && !op_db_failed(w) && !atomic_load(&w->done)) {
        if (pthread_cond_timedwait(&w->cv, &w->mu, &dl) == ETIMEDOUT) {
            rc = atomic_load(&w->committed_pos) >= target ? 0 : -ETIMEDOUT;
            break;
        }
    }
    pthread_mutex_unlock(&w->mu);
    if (op_db_failed(w)) return -ESHUTDOWN; /* even if the target was reached: say the writer is off */
    if (rc == 0 && atomic_load(&w->committed_pos) < target) rc = -ETIMEDOUT;
    return rc;
}

int op_db_writer_close(op_db_writer *w)
{
    if (!w) return 0;
    if (!w->thread_started) {
        writer_free(w);
        return 0;
    }
    int expected = 0;
    atomic_store(&w->stop_ns, op_now_ns());
    atomic_compare_exchange_strong(&w->stop, &expected, 1);
    op_spool_shutdown(w->spool);
    op_db_wake_ingest(w);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    uint64_t ns = (uint64_t)dl.tv_nsec + (w->opts.close_timeout_ms % 1000) * 1000000ull;
    dl.tv_sec += (time_t)(w->opts.close_timeout_ms / 1000 + ns / 1000000000ull);
    dl.tv_nsec = (long)(ns % 1000000000ull);
    pthread_mutex_lock(&w->mu);
    while (!atomic_load(&w->done))
        if (pthread_cond_timedwait(&w->cv, &w->mu, &dl) == ETIMEDOUT) break;
    int done = atomic_load(&w->done);
    pthread_mutex_unlock(&w->mu);
    if (!done) {
        op_error("database '%s': the writer did not finish within %llu ms; it is left to finish in the background "
                 "(everything committed so far is valid)",
                 w->path, (unsigned long long)w->opts.close_timeout_ms);
        pthread_detach(w->thread);
        return -ETIMEDOUT; /* w is leaked on purpose: the thread still uses it */
    }
    pthread_join(w->thread, NULL);
    int rc = op_db_failed(w) ? -EIO : 0;
    writer_free(w);
    return rc;
}

int op_db_writer_close_fast(op_db_writer *w, uint64_t timeout_ms)
{
    if (!w || !w->thread_started) return 0;
    uint64_t now = op_now_ns();
    /* Ingest until 3/4 of the budget, then commit and close. */
    uint64_t deadline = now + timeout_ms * 750000ull;
    /* the deadline is published before stop=2, so the ingest thread never reads a stale one */
    uint64_t zero = 0;
    atomic_compare_exchange_strong(&w->fast_deadline_ns, &zero, deadline);
    atomic_store(&w->stop_ns, now);
    atomic_store(&w->stop, 2);
    op_spool_shutdown(w->spool);
    op_db_wake_ingest(w);
    uint64_t end = now + timeout_ms * 1000000ull;
    while (!atomic_load(&w->done)) {
        if (op_now_ns() >= end) return -ETIMEDOUT;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

void op_db_writer_abandon_after_fork(op_db_writer *w)
{
    (void)w; /* nothing: the parent's thread, locks and connection do not exist in the child */
}

int op_db_writer_get_stats(const op_db_writer *cw, op_db_writer_stats *out)
{
    if (!cw || !out || out->size < sizeof(uint64_t)) return -EINVAL;
    op_db_writer *w = (op_db_writer *)cw;
    op_db_writer_stats s;
    memset(&s, 0, sizeof s);
    s.size = out->size < sizeof s ? out->size : sizeof s;
    s.records_appended = atomic_load(&w->n_appended);
    s.records_dropped = atomic_load(&w->n_dropped);
    s.records_ingested = atomic_load(&w->n_ingested);
    s.records_unhandled = atomic_load(&w->n_unhandled);
    s.rows_written = atomic_load(&w->n_rows);
    s.transactions = atomic_load(&w->n_txn);
    uint64_t reserved = op_spool_reserved_pos(w->spool), consumed = op_spool_consumed_pos(w->spool);
    s.spool_bytes = reserved > consumed ? reserved - consumed : 0;
    s.spool_bytes_total = op_spool_total_bytes(w->spool);
    s.spool_file_bytes = op_spool_file_bytes(w->spool);
    uint64_t oldest = atomic_load(&w->oldest_uncommitted_ns);
    s.ingest_lag_ns = oldest ? op_now_ns() - oldest : 0;
    s.ingest_busy_ns = atomic_load(&w->busy_ns);
    s.failed = op_db_failed(w);
    memcpy(out, &s, s.size);
    return 0;
}

const char *op_db_writer_path(const op_db_writer *w) { return w ? w->path : ""; }
const char *op_db_writer_uuid(const op_db_writer *w) { return w ? w->uuid : ""; }
const char *op_db_writer_error(const op_db_writer *w) { return w ? w->errmsg : ""; }

bool op_db_writer_files_lost(const op_db_writer *w)
{
    return w && op_db_failed(w) && op_db_files_replaced() > w->replaced_at_open;
}
