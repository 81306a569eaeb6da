/* test_writer_faults.c — db.writer_faults: failures leave a valid database and one clear
 * error, never a crash: each allocation of op_db_writer_open failing in turn (no file left
 * behind), an allocation failing inside the ingest thread, the disk refusing writes
 * (RLIMIT_FSIZE in a child: SQLite gets EFBIG), an unusable spool directory, and appends after
 * the writer was closed. */
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common/alloc.h"
#include "db_test.h"

static int file_exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

static void append_api(op_db_writer *w, uint64_t first, uint64_t n, int distinct_threads)
{
    for (uint64_t i = 0; i < n; i++) {
        omniprof_buffer_tracing_api_record_t r =
            make_api(first + i, distinct_threads ? 10000 + first + i : 1, (first + i) * 10, (first + i) * 10 + 2);
        op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_TRACING, OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API, &r);
    }
}

int main(void)
{
    char dir[512], path[600], err[512];
    test_tmpdir(dir, sizeof dir, "faults");
    op_db_process_info info = test_process_info();

    /* 1. every allocation of open failing in turn */
    int opened = 0, k;
    for (k = 1; k < 200 && !opened; k++) {
        snprintf(path, sizeof path, "%s/oom%d.db", dir, k);
        op_alloc_fail_at((uint64_t)k);
        op_db_writer *w = op_db_writer_open(path, &info, NULL, err, sizeof err);
        int e = errno;
        op_alloc_fail_at(0);
        if (w) {
            opened = 1;
            CHECK(op_db_writer_close(w) == 0);
        } else {
            CHECK(e == ENOMEM);
            CHECK(strstr(err, "out of memory") != NULL);
            CHECK(!file_exists(path));
        }
    }
    CHECK(opened);
    fprintf(stderr, "open succeeded once allocation #%d was the one to fail (after it)\n", k - 1);

    /* 2. an allocation failing in the ingest thread (a thread map growing) */
    snprintf(path, sizeof path, "%s/ingest-oom.db", dir);
    OMNIPROF_OPTS(op_db_writer_options, opts, .flush_interval_ms = 20);
    op_db_writer *w = op_db_writer_open(path, &info, &opts, err, sizeof err);
    CHECK(w != NULL);
    append_api(w, 1, 1000, 0);
    CHECK(op_db_writer_flush(w, 5000) == 0);
    op_alloc_fail_at(1);
    append_api(w, 1001, 2000, 1); /* 2000 new threads: the map grows, the allocation fails */
    int frc = op_db_writer_flush(w, 5000);
    op_alloc_fail_at(0);
    op_db_writer_stats st = {.size = sizeof st};
    op_db_writer_get_stats(w, &st);
    if (st.failed) {
        CHECK(frc == -ESHUTDOWN);
        CHECK(strstr(op_db_writer_error(w), "out of memory") != NULL);
        CHECK(strstr(op_db_writer_error(w), path) != NULL);
        CHECK(op_db_writer_close(w) == -EIO);
    } else {
        /* the failing allocation hit a tolerant path (string cache): still a valid run */
        CHECK(frc == 0);
        CHECK(op_db_writer_close(w) == 0);
    }
    sqlite3 *r = test_open_ro(path);
    CHECK_EQ_STR(q_text(r, "PRAGMA integrity_check"), "ok");
    CHECK(q_i64(r, "SELECT count(*) FROM regions") >= 1000);
    sqlite3_close(r);

    /* 3. the disk refuses writes: RLIMIT_FSIZE 1.5 MiB in a child */
    snprintf(path, sizeof path, "%s/full.db", dir);
    int pfd[2];
    CHECK(pipe(pfd) == 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {1536 * 1024, 1536 * 1024};
        setrlimit(RLIMIT_FSIZE, &rl);
        op_db_writer *cw = op_db_writer_open(path, &info, &opts, err, sizeof err);
        if (!cw) _exit(3);
        long long flushed = 0;
        for (uint64_t b = 0; b < 200; b++) {
            append_api(cw, b * 1000 + 1, 1000, 0);
            if (op_db_writer_flush(cw, 5000) != 0) break;
            flushed = (long long)(b + 1) * 1000;
        }
        int failed = op_db_writer_close(cw) == -EIO;
        char msg[256];
        int n = snprintf(msg, sizeof msg, "%lld %d", flushed, failed);
        if (write(pfd[1], msg, (size_t)n) != n) _exit(4);
        _exit(0);
    }
    close(pfd[1]);
    char msg[256] = "";
    ssize_t got = read(pfd[0], msg, sizeof msg - 1);
    msg[got > 0 ? got : 0] = 0;
    close(pfd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    long long flushed = -1;
    int failed = 0;
    CHECK(sscanf(msg, "%lld %d", &flushed, &failed) == 2);
    fprintf(stderr, "disk full: %lld records flushed before the failure, writer off: %d\n", flushed, failed);
    CHECK(failed == 1);
    CHECK(flushed > 0 && flushed < 200000);
    r = NULL;
    CHECK(sqlite3_open(path, &r) == SQLITE_OK);
    CHECK_EQ_STR(q_text(r, "PRAGMA integrity_check"), "ok");
    CHECK(q_i64(r, "SELECT count(*) FROM regions") >= flushed);
    sqlite3_close(r);

    /* 4. an unusable spool directory: clear error, no database left behind */
    snprintf(path, sizeof path, "%s/nospool.db", dir);
    OMNIPROF_OPTS(op_db_writer_options, bad, .spool_dir = "/nonexistent/omniprof-spool");
    CHECK(op_db_writer_open(path, &info, &bad, err, sizeof err) == NULL);
    CHECK(strstr(err, "cannot create the spool file in '/nonexistent/omniprof-spool'") != NULL);
    CHECK(strstr(err, "OMNIPROF_TMPDIR") != NULL);
    CHECK(!file_exists(path));

    /* 5. appends after close_fast are dropped and counted */
    snprintf(path, sizeof path, "%s/late.db", dir);
    w = op_db_writer_open(path, &info, &opts, err, sizeof err);
    CHECK(w != NULL);
    append_api(w, 1, 10, 0);
    CHECK(op_db_writer_close_fast(w, 2000) == 0);
    omniprof_buffer_tracing_api_record_t late = make_api(99, 1, 5, 6);
    CHECK(op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_TRACING, OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API, &late) == 0);
    CHECK(op_db_writer_close_fast(w, 100) == 0); /* idempotent */
    CHECK(op_db_writer_close(w) == 0);
    r = test_open_ro(path);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM regions"), 10);
    sqlite3_close(r);

    test_rmtree(dir);
    return CHECK_DONE();
}
