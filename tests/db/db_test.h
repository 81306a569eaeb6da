/* db_test.h — helpers of the database tests: CHECK macros, a fresh temporary directory,
 * one-value SQL queries on a separate read connection, and builders for each record kind. */
#ifndef OMNIPROF_TESTS_DB_TEST_H
#define OMNIPROF_TESTS_DB_TEST_H

#include <errno.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "db/db.h"
#include "omniprof/cpu.h"
#include "omniprof/gpu.h"
#include "omniprof/tracing.h"

#include "../common/check.h" /* g_failures, CHECK, CHECK_DONE */

static inline void test_rmtree(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* The directory test_tmpdir made, and the process that made it. */
static char g_test_tmpdir[4096];
static pid_t g_test_tmpdir_pid;

/* At exit (main returning early included): the directory is removed when every check held, and
 * kept, its path printed, when one failed; a forked child's exit leaves it alone. */
static inline void test_tmpdir_at_exit(void)
{
    if (getpid() != g_test_tmpdir_pid || access(g_test_tmpdir, F_OK) != 0) return;
    if (g_failures)
        fprintf(stderr, "temporary files kept: %s\n", g_test_tmpdir);
    else
        test_rmtree(g_test_tmpdir);
}

/* A fresh directory under $TMPDIR (or /tmp); path in out. Removed at exit (above). */
static inline void test_tmpdir(char *out, size_t len, const char *tag)
{
    const char *base = getenv("TMPDIR");
    snprintf(out, len, "%s/omniprof-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    if (!mkdtemp(out)) {
        perror("mkdtemp");
        exit(2);
    }
    if (!g_test_tmpdir_pid) atexit(test_tmpdir_at_exit);
    snprintf(g_test_tmpdir, sizeof g_test_tmpdir, "%s", out);
    g_test_tmpdir_pid = getpid();
}

static inline sqlite3 *test_open_ro(const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fprintf(stderr, "cannot open %s: %s\n", path, db ? sqlite3_errmsg(db) : "?");
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 5000);
    return db;
}

/* First column of the first row as int64; -999999 on error or no row. */
static inline long long q_i64(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s = NULL;
    long long v = -999999;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
        fprintf(stderr, "SQL error: %s in: %s\n", sqlite3_errmsg(db), sql);
        return v;
    }
    if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* First column of the first row as text (static buffer); "<none>" when absent. */
static inline const char *q_text(sqlite3 *db, const char *sql)
{
    static char buf[8192];
    sqlite3_stmt *s = NULL;
    snprintf(buf, sizeof buf, "<none>");
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
        fprintf(stderr, "SQL error: %s in: %s\n", sqlite3_errmsg(db), sql);
        return buf;
    }
    if (sqlite3_step(s) == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(s, 0);
        snprintf(buf, sizeof buf, "%s", t ? (const char *)t : "<null>");
    }
    sqlite3_finalize(s);
    return buf;
}

static inline op_db_process_info test_process_info(void)
{
    static const char *env[] = {"OMNIPROF_KERNEL_TRACE=1", "WEIRD=a\"b\\c", NULL};
    op_db_process_info info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    info.pid = getpid();
    info.ppid = getppid();
    info.init_ns = 1000;
    info.start_ns = 2000;
    info.realtime_offset_ns = 1700000000000000000ll;
    info.hostname = "testhost";
    info.machine_id = "machine-0123";
    info.command = "./app --flag";
    info.environment = env;
    info.rank = 3;
    info.world_size = 8;
    return info;
}

/* A writer on a fresh temporary folder named after tag (into dir, dir_len >= 512) and its file
 * there (into path, path_len >= 600), committing every flush_ms; NULL with a failed check when
 * it cannot be opened. */
static inline op_db_writer *test_writer_open(const char *tag, const char *file, uint32_t flush_ms, char *dir,
                                             size_t dir_len, char *path, size_t path_len)
{
    char err[512];
    test_tmpdir(dir, dir_len, tag);
    snprintf(path, path_len, "%s/%s", dir, file);
    op_db_process_info info = test_process_info();
    OMNIPROF_OPTS(op_db_writer_options, opts, .flush_interval_ms = flush_ms);
    op_db_writer *w = op_db_writer_open(path, &info, &opts, err, sizeof err);
    CHECK(w != NULL);
    if (!w) fprintf(stderr, "cannot open the writer on %s: %s\n", path, err);
    return w;
}

/* An API record (CUDA runtime kind) without arguments. */
static inline omniprof_buffer_tracing_api_record_t make_api(uint64_t corr, uint64_t tid, uint64_t start, uint64_t end)
{
    omniprof_buffer_tracing_api_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API;
    r.operation = 7;
    r.correlation_id.internal = corr;
    r.correlation_id.external.value = 0;
    r.correlation_id.ancestor = 0;
    r.start_timestamp = start;
    r.end_timestamp = end;
    r.thread_id = tid;
    return r;
}

static inline int append1(op_db_writer *w, uint32_t kind, const void *payload)
{
    return op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_TRACING, kind, payload);
}

#endif
