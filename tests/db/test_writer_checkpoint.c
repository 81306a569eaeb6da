/* test_writer_checkpoint.c — db.writer_checkpoint: the WAL is checkpointed while the writer is
 * idle (writer.c, issue 12), so that the checkpoint at close has little left to copy. 40,000 API
 * records (about 3 MiB of pages, under SQLite's own 1,000-page auto-checkpoint) are appended and
 * flushed; with nothing more to ingest the writer copies the WAL into the database file while it
 * is still open: the file grows past 2 MiB (it would stay at its first image, about 100 KiB,
 * until close without the idle checkpoint). Every record is there, before and after close. */
#include <sys/stat.h>

#include "db_test.h"

static long long file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

int main(void)
{
    char dir[512], path[600];
    op_db_writer *w = test_writer_open("ckpt", "c.db", 20, dir, sizeof dir, path, sizeof path);
    if (!w) return CHECK_DONE();
    long long first = file_size(path);
    enum { N = 40000 };
    for (uint64_t i = 0; i < N; i++) {
        omniprof_buffer_tracing_api_record_t a = make_api(i + 1, 100 + i % 4, 1000 + i * 10, 1005 + i * 10);
        CHECK_EQ_INT(append1(w, a.kind, &a), 1);
    }
    CHECK_EQ_INT(op_db_writer_flush(w, 60000), 0);
    /* the idle checkpoint follows the commit that flush waited for: poll for it (busy machine) */
    long long size = file_size(path);
    for (int i = 0; i < 2000 && size < (2ll << 20); i++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
        size = file_size(path);
    }
    fprintf(stderr, "database file: %lld bytes at open, %lld after the flush (writer still open)\n", first, size);
    CHECK(size >= (2ll << 20));
    sqlite3 *r = test_open_ro(path);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM regions"), N);
    sqlite3_close(r);
    CHECK_EQ_INT(op_db_writer_close(w), 0);
    r = test_open_ro(path);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM regions"), N);
    CHECK_EQ_STR(q_text(r, "PRAGMA integrity_check"), "ok");
    sqlite3_close(r);
    test_rmtree(dir);
    return CHECK_DONE();
}
