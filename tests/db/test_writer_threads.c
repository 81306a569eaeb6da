/* test_writer_threads.c — db.writer_threads (label threading): several producer threads append
 * at once, with batches of 1..1000 records, into a small spool (64 KiB chunks, 2 kept in RAM,
 * so chunks are sealed and spilled to the file constantly) while another thread flushes and
 * reads stats; every record arrives exactly once. */
#include <pthread.h>
#include <stdatomic.h>

#include "db_test.h"

#define THREADS 4
#define PER_THREAD 40000

static op_db_writer *g_w;
static _Atomic int g_stop_flusher;

static void *producer(void *arg)
{
    int t = (int)(intptr_t)arg;
    static const size_t batch_sizes[] = {1, 7, 256, 1000, 3};
    omniprof_buffer_tracing_api_record_t *recs = calloc(1000, sizeof *recs);
    omniprof_record_header_t *hdr = calloc(1000, sizeof *hdr);
    const omniprof_record_header_t **ptrs = calloc(1000, sizeof *ptrs);
    uint64_t next = 0;
    int accepted = 0;
    for (size_t b = 0; next < PER_THREAD; b++) {
        size_t n = batch_sizes[b % 5];
        if (n > PER_THREAD - next) n = PER_THREAD - next;
        for (size_t i = 0; i < n; i++) {
            uint64_t corr = (uint64_t)t * PER_THREAD + next + i + 1;
            recs[i] = make_api(corr, 1000 + (uint64_t)t, corr * 10, corr * 10 + 5);
            hdr[i] = (omniprof_record_header_t){.category = OMNIPROF_RECORD_CATEGORY_TRACING,
                                                .kind = OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API, .payload = &recs[i]};
            ptrs[i] = &hdr[i];
        }
        accepted += op_db_writer_append(g_w, ptrs, n);
        next += n;
    }
    free(recs);
    free(hdr);
    free(ptrs);
    return (void *)(intptr_t)accepted;
}

static void *flusher(void *arg)
{
    (void)arg;
    while (!g_stop_flusher) {
        op_db_writer_flush(g_w, 2000);
        op_db_writer_stats st = {.size = sizeof st};
        op_db_writer_get_stats(g_w, &st);
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int main(void)
{
    char dir[512], path[600], err[512];
    test_tmpdir(dir, sizeof dir, "threads");
    snprintf(path, sizeof path, "%s/t.db", dir);
    op_db_process_info info = test_process_info();
    OMNIPROF_OPTS(op_db_writer_options, opts, .spool_chunk_bytes = 65536, .spool_mapped_chunks = 2,
                  .flush_interval_ms = 20, .batch_rows = 5000);
    g_w = op_db_writer_open(path, &info, &opts, err, sizeof err);
    if (!g_w) fprintf(stderr, "open: %s\n", err);
    CHECK(g_w != NULL);
    if (!g_w) return CHECK_DONE();
    pthread_t th[THREADS], fl;
    pthread_create(&fl, NULL, flusher, NULL);
    for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, producer, (void *)(intptr_t)t);
    long total = 0;
    for (int t = 0; t < THREADS; t++) {
        void *ret;
        pthread_join(th[t], &ret);
        total += (long)(intptr_t)ret;
    }
    g_stop_flusher = 1;
    pthread_join(fl, NULL);
    CHECK_EQ_INT(total, THREADS * PER_THREAD);
    CHECK(op_db_writer_flush(g_w, 30000) == 0);
    op_db_writer_stats st = {.size = sizeof st};
    CHECK(op_db_writer_get_stats(g_w, &st) == 0);
    CHECK_EQ_INT(st.records_appended, THREADS * PER_THREAD);
    CHECK_EQ_INT(st.records_ingested, THREADS * PER_THREAD);
    CHECK_EQ_INT(st.records_dropped, 0);
    CHECK_EQ_INT(st.spool_bytes, 0);
    CHECK(op_db_writer_close(g_w) == 0);

    sqlite3 *r = test_open_ro(path);
    const long long n = (long long)THREADS * PER_THREAD;
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM rocpd_region"), n);
    CHECK_EQ_INT(q_i64(r, "SELECT count(DISTINCT stack_id) FROM regions"), n);
    CHECK_EQ_INT(q_i64(r, "SELECT min(stack_id) FROM regions"), 1);
    CHECK_EQ_INT(q_i64(r, "SELECT max(stack_id) FROM regions"), n);
    CHECK_EQ_INT(q_i64(r, "SELECT sum(duration) FROM regions"), 5 * n);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM regions WHERE start != stack_id * 10"), 0);
    CHECK_EQ_INT(q_i64(r, "SELECT count(*) FROM threads"), THREADS);
    CHECK_EQ_STR(q_text(r, "PRAGMA integrity_check"), "ok");
    sqlite3_close(r);
    test_rmtree(dir);
    return CHECK_DONE();
}
