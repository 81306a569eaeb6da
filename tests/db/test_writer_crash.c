/* test_writer_crash.c — db.writer_crash: a child process writes and then dies (SIGKILL, abort,
 * SIGSEGV); the database opens, passes integrity_check, and holds every record flushed before
 * the death — and every record the periodic flush committed before it, without a flush call
 * (invariant W3; the test waits for that commit, as an event, not for a number of intervals). Also close_fast from a signal handler path, and a fork whose
 * child abandons the parent's writer and writes its own database. */
#include <signal.h>
#include <sys/wait.h>

#include "db_test.h"

#define INTERVAL_MS 50

static void append_range(op_db_writer *w, uint64_t first, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        omniprof_buffer_tracing_api_record_t r = make_api(first + i, 4242, (first + i) * 10, (first + i) * 10 + 3);
        op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_TRACING, OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API, &r);
    }
}

enum { DIE_KILL, DIE_ABORT, DIE_SEGV, DIE_FAST_CLOSE };

static op_db_writer *g_w;
static void on_term(int sig)
{
    (void)sig;
    op_db_writer_close_fast(g_w, 2000); /* the tool's signal path */
    _exit(0);
}

/* Child: 20000 flushed + 5000 appended and left to the periodic flush (waited for) + 5000
 * appended just before dying (may or may not be there). */
static void child(const char *path, int how)
{
    op_db_process_info info = test_process_info();
    OMNIPROF_OPTS(op_db_writer_options, opts, .flush_interval_ms = INTERVAL_MS);
    char err[512];
    g_w = op_db_writer_open(path, &info, &opts, err, sizeof err);
    if (!g_w) {
        fprintf(stderr, "child open: %s\n", err);
        _exit(3);
    }
    append_range(g_w, 1, 20000);
    if (op_db_writer_flush(g_w, 10000) != 0) _exit(4);
    append_range(g_w, 20001, 5000);
    /* The periodic flush (no flush call) commits them: wait for that event, not for a time (on a
     * busy machine the ingest thread may not run for several intervals). 60 s at most. */
    sqlite3 *r = test_open_ro(path);
    if (!r) _exit(6);
    for (int i = 0; q_i64(r, "SELECT count(*) FROM regions") < 25000; i++) {
        if (i == 12000) _exit(7);
        struct timespec ts = {0, 5000000L};
        nanosleep(&ts, NULL);
    }
    sqlite3_close(r);
    append_range(g_w, 25001, 5000);
    switch (how) {
    case DIE_KILL: raise(SIGKILL); break;
    case DIE_ABORT: abort();
    case DIE_SEGV: {
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
        break;
    }
    case DIE_FAST_CLOSE: signal(SIGTERM, on_term); raise(SIGTERM); break;
    }
    _exit(5);
}

static void run_case(const char *dir, int how, const char *name, int expect_signal)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s.db", dir, name);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) child(path, how);
    int status = 0;
    waitpid(pid, &status, 0);
    if (expect_signal) {
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == expect_signal);
    } else {
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    sqlite3 *r = NULL;
    CHECK(sqlite3_open(path, &r) == SQLITE_OK); /* read-write: replays the WAL like any reader with access */
    CHECK_EQ_STR(q_text(r, "PRAGMA integrity_check"), "ok");
    CHECK_EQ_STR(q_text(r, "SELECT value FROM rocpd_metadata WHERE tag='schema_version'"), "3");
    long long n = q_i64(r, "SELECT count(*) FROM regions");
    fprintf(stderr, "%s: %lld regions after the death\n", name, n);
    CHECK(n >= 25000 && n <= 30000);
    /* the rows are a prefix: no gaps, each complete (region joined to its event) */
    CHECK_EQ_INT(q_i64(r, "SELECT max(stack_id) FROM regions"), n);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM rocpd_event"), n);
    if (how == DIE_FAST_CLOSE) {
        CHECK(q_i64(r, "SELECT fini FROM processes") > 0);
    }
    sqlite3_close(r);
}

/* fork: the child forgets the parent's writer and writes its own database; both complete. */
static void fork_case(const char *dir)
{
    char ppath[700], cpath[700], err[512];
    snprintf(ppath, sizeof ppath, "%s/parent.db", dir);
    snprintf(cpath, sizeof cpath, "%s/child.db", dir);
    op_db_process_info info = test_process_info();
    OMNIPROF_OPTS(op_db_writer_options, opts, .flush_interval_ms = INTERVAL_MS);
    op_db_writer *w = op_db_writer_open(ppath, &info, &opts, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return;
    append_range(w, 1, 100);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        op_db_writer_abandon_after_fork(w);
        op_db_process_info ci = test_process_info();
        op_db_writer *cw = op_db_writer_open(cpath, &ci, &opts, err, sizeof err);
        if (!cw) _exit(3);
        append_range(cw, 1, 50);
        _exit(op_db_writer_close(cw) == 0 ? 0 : 4);
    }
    append_range(w, 101, 100);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(op_db_writer_close(w) == 0);
    sqlite3 *r = test_open_ro(ppath);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM regions"), 200);
    sqlite3_close(r);
    r = test_open_ro(cpath);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM regions"), 50);
    CHECK_EQ_STR(q_text(r, "PRAGMA integrity_check"), "ok");
    sqlite3_close(r);
}

int main(void)
{
    char dir[512];
    test_tmpdir(dir, sizeof dir, "crash");
    fork_case(dir);
    run_case(dir, DIE_KILL, "kill", SIGKILL);
    run_case(dir, DIE_ABORT, "abort", SIGABRT);
    run_case(dir, DIE_SEGV, "segv", SIGSEGV);
    run_case(dir, DIE_FAST_CLOSE, "fastclose", 0);
    test_rmtree(dir);
    return CHECK_DONE();
}
