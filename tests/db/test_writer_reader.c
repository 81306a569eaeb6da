/* test_writer_reader.c — db.writer_reader: another process reads the database while the writer
 * runs: it sees committed rows grow (never shrink), every read is consistent (each region
 * joins its event), and after the writer's flush the reader sees every appended record. */
#include <signal.h>
#include <sys/wait.h>

#include "db_test.h"

int main(void)
{
    char dir[512], path[600];
    op_db_writer *w = test_writer_open("reader", "r.db", 20, dir, sizeof dir, path, sizeof path);
    if (!w) return CHECK_DONE();
    int pipefd[2];
    CHECK(pipe(pipefd) == 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        /* reader process: poll until it has seen 50000 rows or 20 s passed */
        close(pipefd[1]);
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
        _exit(bad == 0 && last == 50000 ? 0 : 1);
    }
    close(pipefd[0]);
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
    close(pipefd[1]);
    test_rmtree(dir);
    return CHECK_DONE();
}
