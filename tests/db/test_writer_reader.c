/* test_writer_reader.c — db.writer_reader: another process reads the database while the writer
 * runs: it sees committed rows grow (never shrink), every read is consistent (each region
 * joins its event), and after the writer's flush the reader sees every appended record. */
#include <signal.h>
#include <sys/wait.h>

#include "db_test.h"

/* The reader process: poll the database at path until it has seen 50000 rows or 2000 polls
 * (about 20 s) passed. A fresh program (the parent forks and execs this one with --reader): a
 * child that only forked would inherit the writer thread's locks as they were, held ones too
 * (under ASan its allocator's: the child hung in its first malloc, 1 run in 8). */
static int reader_main(const char *path)
{
    sqlite3 *r = test_open_ro(path);
    long long last = 0, polls = 0, bad = 0;
    for (int i = 0; i < 2000 && last < 50000; i++) {
        sqlite3_exec(r, "BEGIN", NULL, NULL, NULL); /* one snapshot for the three reads */
        long long n = q_i64(r, "SELECT count(*) FROM regions");
        long long ev = q_i64(r, "SELECT count(*) FROM rocpd_region R JOIN rocpd_event E ON E.id = R.event_id");
        long long raw = q_i64(r, "SELECT count(*) FROM rocpd_region");
        sqlite3_exec(r, "COMMIT", NULL, NULL, NULL);
        if (n < last || n < 0 || ev != raw) bad++;
        last = n > last ? n : last;
        polls++;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    sqlite3_close(r);
    fprintf(stderr, "reader: %lld polls, last count %lld, %lld inconsistent\n", polls, last, bad);
    return bad == 0 && last == 50000 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--reader") == 0) return reader_main(argv[2]);
    char dir[512], path[600];
    op_db_writer *w = test_writer_open("reader", "r.db", 20, dir, sizeof dir, path, sizeof path);
    if (!w) return CHECK_DONE();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", argv[0], "--reader", path, (char *)NULL);
        _exit(127);
    }
    for (uint64_t i = 1; i <= 50000; i++) {
        omniprof_buffer_tracing_api_record_t rec = make_api(i, 7, i * 10, i * 10 + 1);
        op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_TRACING, OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API, &rec);
        if (i % 1000 == 0) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL); /* spread over ~500 ms so the reader sees several commits */
        }
    }
    CHECK(op_db_writer_flush(w, 10000) == 0);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(op_db_writer_close(w) == 0);
    test_rmtree(dir);
    return CHECK_DONE();
}
