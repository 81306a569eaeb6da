/* test_buffer.c — src/sdk/buffer.c: every documented status of create/flush/destroy/stats,
 * size rounding, watermark delivery, DISCARD and LOSSLESS accounting, too-big records,
 * flush/destroy from inside a callback, destroy while another thread flushes, callback-thread
 * assignment and record integrity. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "sdk_test.h"

enum { C_DISCARD, C_LOSSLESS, C_WM0, C_WM, C_BIG, C_INSIDE, C_BUSY, C_ASSIGN, C_N };
static omniprof_context_id_t g_ctx[C_N];
static omniprof_buffer_id_t g_buf[C_N], g_assign2;
static omniprof_callback_thread_t g_thread;
static int g_init_ok;

typedef struct sink {
    _Atomic uint64_t records, calls, max_batch;
    _Atomic uint64_t next_seq; /* LOSSLESS: records must arrive in order */
    _Atomic int out_of_order, bad_payload;
    _Atomic uint64_t tid;
    _Atomic int slow_us;
    _Atomic uint64_t drop_count;
} sink;
static sink g_sink[C_N + 1];

static _Atomic int g_inside_flush = -1, g_inside_destroy = -1, g_inside_finalize = -1, g_inside_internal = -1;
static _Atomic int g_busy_entered, g_busy_release;
static _Atomic int g_pre, g_post;

static void cb(omniprof_context_id_t ctx, omniprof_buffer_id_t buf, omniprof_record_header_t **h, size_t n,
               void *data, uint64_t drops)
{
    (void)ctx;
    sink *s = data;
    omniprof_thread_id_t tid;
    omniprof_get_thread_id(&tid);
    atomic_store(&s->tid, tid);
    atomic_store(&s->drop_count, drops);
    for (size_t i = 0; i < n; i++) {
        test_rec *r = h[i]->payload;
        if (h[i]->category != OMNIPROF_RECORD_CATEGORY_TRACING || h[i]->kind != OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API ||
            h[i]->hash != omniprof_record_header_compute_hash(h[i]->category, h[i]->kind) || r->size != sizeof *r ||
            r->producer != 7)
            atomic_store(&s->bad_payload, 1);
        if (s == &g_sink[C_LOSSLESS] && r->seq != atomic_fetch_add(&s->next_seq, 1)) atomic_store(&s->out_of_order, 1);
    }
    atomic_fetch_add(&s->records, n);
    atomic_fetch_add(&s->calls, 1);
    if (n > atomic_load(&s->max_batch)) atomic_store(&s->max_batch, n);
    if (s == &g_sink[C_INSIDE] && atomic_load(&g_inside_flush) < 0) {
        atomic_store(&g_inside_flush, omniprof_flush_buffer(buf));
        atomic_store(&g_inside_destroy, omniprof_destroy_buffer(buf));
        atomic_store(&g_inside_finalize, omniprof_finalize());
        atomic_store(&g_inside_internal, op_sdk_thread_is_internal());
    }
    if (s == &g_sink[C_BUSY]) {
        atomic_store(&g_busy_entered, 1);
        while (!atomic_load(&g_busy_release)) sleep_ms(1);
    }
    int us = atomic_load(&s->slow_us);
    if (us) usleep((useconds_t)us);
}

static void pre(omniprof_runtime_library_t lib, void *d)
{
    (void)d;
    if (lib == OMNIPROF_LIBRARY) atomic_fetch_add(&g_pre, 1);
}
static void post(omniprof_runtime_library_t lib, void *d)
{
    (void)d;
    if (lib == OMNIPROF_LIBRARY) atomic_fetch_add(&g_post, 1);
}

static int init(omniprof_client_finalize_t fini, void *data)
{
    (void)fini;
    (void)data;
    omniprof_context_id_t c;
    omniprof_buffer_id_t b;
    CHECK_ST(omniprof_create_context(&c), OMNIPROF_STATUS_SUCCESS);
    /* argument errors */
    CHECK_ST(omniprof_create_buffer(c, 4096, 0, OMNIPROF_BUFFER_POLICY_DISCARD, cb, NULL, NULL),
             OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_create_buffer(c, 4096, 0, OMNIPROF_BUFFER_POLICY_DISCARD, NULL, NULL, &b),
             OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_create_buffer(c, 0, 0, OMNIPROF_BUFFER_POLICY_DISCARD, cb, NULL, &b),
             OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_create_buffer(c, 4096, 4097, OMNIPROF_BUFFER_POLICY_DISCARD, cb, NULL, &b),
             OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_create_buffer(c, 4096, 0, OMNIPROF_BUFFER_POLICY_NONE, cb, NULL, &b),
             OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_create_buffer(c, 4096, 0, OMNIPROF_BUFFER_POLICY_LAST, cb, NULL, &b),
             OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_create_buffer((omniprof_context_id_t){c.handle + 999}, 4096, 0, OMNIPROF_BUFFER_POLICY_DISCARD,
                                    cb, NULL, &b),
             OMNIPROF_STATUS_ERROR_CONTEXT_NOT_FOUND);
    CHECK_ST(omniprof_create_buffer(OMNIPROF_CONTEXT_NONE, 4096, 0, OMNIPROF_BUFFER_POLICY_DISCARD, cb, NULL, &b),
             OMNIPROF_STATUS_ERROR_CONTEXT_NOT_FOUND);

    static const struct {
        size_t size, wm;
        omniprof_buffer_policy_t pol;
    } spec[C_N] = {
        [C_DISCARD] = {4096, 4096, OMNIPROF_BUFFER_POLICY_DISCARD},
        [C_LOSSLESS] = {4096, 2048, OMNIPROF_BUFFER_POLICY_LOSSLESS},
        [C_WM0] = {4096, 0, OMNIPROF_BUFFER_POLICY_LOSSLESS},
        [C_WM] = {65536, 8192, OMNIPROF_BUFFER_POLICY_LOSSLESS},
        [C_BIG] = {100, 100, OMNIPROF_BUFFER_POLICY_LOSSLESS},
        [C_INSIDE] = {4096, 4096, OMNIPROF_BUFFER_POLICY_LOSSLESS},
        [C_BUSY] = {4096, 4096, OMNIPROF_BUFFER_POLICY_LOSSLESS},
        [C_ASSIGN] = {4096, 4096, OMNIPROF_BUFFER_POLICY_LOSSLESS},
    };
    for (int i = 0; i < C_N; i++) {
        CHECK_ST(omniprof_create_context(&g_ctx[i]), OMNIPROF_STATUS_SUCCESS);
        CHECK_ST(omniprof_create_buffer(g_ctx[i], spec[i].size, spec[i].wm, spec[i].pol, cb, &g_sink[i], &g_buf[i]),
                 OMNIPROF_STATUS_SUCCESS);
        CHECK_ST(omniprof_configure_buffer_tracing_service(g_ctx[i], OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, NULL, 0,
                                                            g_buf[i]),
                 OMNIPROF_STATUS_SUCCESS);
    }
    CHECK_ST(omniprof_create_buffer(g_ctx[C_ASSIGN], 4096, 4096, OMNIPROF_BUFFER_POLICY_LOSSLESS, cb, &g_sink[C_N],
                                    &g_assign2),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_create_callback_thread(NULL), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_create_callback_thread(&g_thread), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_assign_callback_thread(g_buf[C_ASSIGN], g_thread), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_assign_callback_thread(g_assign2, g_thread), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_assign_callback_thread((omniprof_buffer_id_t){1}, g_thread), OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND);
    CHECK_ST(omniprof_assign_callback_thread(g_buf[C_ASSIGN], (omniprof_callback_thread_t){g_thread.handle + 100}),
             OMNIPROF_STATUS_ERROR_THREAD_NOT_FOUND);
    CHECK_ST(omniprof_at_internal_thread_create(NULL, NULL, OMNIPROF_LIBRARY, NULL),
             OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_at_internal_thread_create(pre, post, OMNIPROF_LIBRARY, NULL), OMNIPROF_STATUS_SUCCESS);
    g_init_ok = 1;
    return 0;
}

omniprof_tool_configure_result_t *omniprof_configure(uint32_t v, const char *rv, uint32_t prio, omniprof_client_id_t *id)
{
    (void)v;
    (void)rv;
    (void)prio;
    static omniprof_tool_configure_result_t r = {sizeof r, init, NULL, NULL};
    id->name = "test_buffer";
    return &r;
}

static void run(int which, uint64_t n)
{
    omniprof_start_context(g_ctx[which]);
    for (uint64_t i = 0; i < n; i++) test_emit(i, 7);
    omniprof_stop_context(g_ctx[which]);
}

static void *flusher(void *arg)
{
    (void)arg;
    omniprof_flush_buffer(g_buf[C_BUSY]);
    return NULL;
}

int main(void)
{
    omniprof_initialize();
    CHECK(g_init_ok);
    omniprof_buffer_id_t b;
    omniprof_callback_thread_t th;
    /* configuration is locked now */
    CHECK_ST(omniprof_create_buffer(g_ctx[0], 4096, 0, OMNIPROF_BUFFER_POLICY_DISCARD, cb, NULL, &b),
             OMNIPROF_STATUS_ERROR_CONFIGURATION_LOCKED);
    CHECK_ST(omniprof_create_callback_thread(&th), OMNIPROF_STATUS_ERROR_CONFIGURATION_LOCKED);
    CHECK_ST(omniprof_assign_callback_thread(g_buf[0], g_thread), OMNIPROF_STATUS_ERROR_CONFIGURATION_LOCKED);
    CHECK_ST(omniprof_at_internal_thread_create(pre, post, OMNIPROF_LIBRARY, NULL),
             OMNIPROF_STATUS_ERROR_CONFIGURATION_LOCKED);

    /* stale and unknown ids */
    omniprof_buffer_stats_t stats = {.size = sizeof stats};
    omniprof_buffer_id_t bad[] = {{0}, {1}, {g_assign2.handle + 1}, {g_buf[0].handle - 1}, {UINT64_MAX}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_ST(omniprof_flush_buffer(bad[i]), OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND);
        CHECK_ST(omniprof_destroy_buffer(bad[i]), OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND);
        CHECK_ST(omniprof_buffer_get_stats(bad[i], &stats), OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND);
    }
    CHECK_ST(omniprof_buffer_get_stats(g_buf[0], NULL), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);

    /* size rounded up to the page size */
    CHECK_ST(omniprof_buffer_get_stats(g_buf[C_BIG], &stats), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(stats.capacity, (uint64_t)sysconf(_SC_PAGESIZE));

    /* DISCARD: delivered + dropped == produced, exactly, and something was dropped */
    atomic_store(&g_sink[C_DISCARD].slow_us, 2000);
    run(C_DISCARD, 20000);
    CHECK_ST(omniprof_flush_buffer(g_buf[C_DISCARD]), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_buffer_get_stats(g_buf[C_DISCARD], &stats), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(stats.records_delivered + stats.records_dropped, 20000);
    CHECK_EQ_U(atomic_load(&g_sink[C_DISCARD].records), stats.records_delivered);
    CHECK(stats.records_dropped > 0);
    CHECK_EQ_U(atomic_load(&g_sink[C_DISCARD].drop_count), stats.records_dropped);

    /* LOSSLESS with a slow callback: nothing lost, order kept, producer waited */
    atomic_store(&g_sink[C_LOSSLESS].slow_us, 500);
    run(C_LOSSLESS, 5000);
    CHECK_ST(omniprof_flush_buffer(g_buf[C_LOSSLESS]), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_buffer_get_stats(g_buf[C_LOSSLESS], &stats), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(atomic_load(&g_sink[C_LOSSLESS].records), 5000);
    CHECK_EQ_U(stats.records_dropped, 0);
    CHECK(stats.producer_waits > 0);
    CHECK(!atomic_load(&g_sink[C_LOSSLESS].out_of_order));
    for (int i = 0; i < C_N; i++) CHECK(!atomic_load(&g_sink[i].bad_payload));

    /* watermark 0: one delivery per record */
    run(C_WM0, 3);
    CHECK_ST(omniprof_flush_buffer(g_buf[C_WM0]), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(atomic_load(&g_sink[C_WM0].records), 3);
    CHECK_EQ_U(atomic_load(&g_sink[C_WM0].calls), 3);
    CHECK_EQ_U(atomic_load(&g_sink[C_WM0].max_batch), 1);

    /* watermark 8 KiB of 64 KiB: 50 records (4.4 KB) stay; 200 more trigger delivery unflushed */
    run(C_WM, 50);
    sleep_ms(50);
    CHECK_EQ_U(atomic_load(&g_sink[C_WM].calls), 0);
    run(C_WM, 200);
    for (int i = 0; i < 2000 && atomic_load(&g_sink[C_WM].calls) == 0; i++) sleep_ms(1);
    CHECK(atomic_load(&g_sink[C_WM].calls) >= 1);
    CHECK_ST(omniprof_flush_buffer(g_buf[C_WM]), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(atomic_load(&g_sink[C_WM].records), 250);

    /* a record larger than the buffer: dropped under every policy, counted as too big */
    {
        static char big[8192];
        test_rec *r = (test_rec *)big;
        r->size = sizeof big;
        r->kind = OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API;
        r->operation = OMNIPROF_MARKER_RANGE_OP_MARK;
        omniprof_start_context(g_ctx[C_BIG]);
        op_sdk_emit(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, OMNIPROF_MARKER_RANGE_OP_MARK, big, NULL);
        omniprof_stop_context(g_ctx[C_BIG]);
        CHECK_ST(omniprof_flush_buffer(g_buf[C_BIG]), OMNIPROF_STATUS_SUCCESS);
        CHECK_ST(omniprof_buffer_get_stats(g_buf[C_BIG], &stats), OMNIPROF_STATUS_SUCCESS);
        CHECK_EQ_U(stats.records_too_big, 1);
        CHECK_EQ_U(stats.records_delivered, 0);
    }

    /* flush / destroy / finalize from inside a buffer callback: BUSY, no deadlock */
    run(C_INSIDE, 1);
    CHECK_ST(omniprof_flush_buffer(g_buf[C_INSIDE]), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(atomic_load(&g_inside_flush), OMNIPROF_STATUS_ERROR_BUFFER_BUSY);
    CHECK_EQ_U(atomic_load(&g_inside_destroy), OMNIPROF_STATUS_ERROR_BUFFER_BUSY);
    CHECK_EQ_U(atomic_load(&g_inside_finalize), OMNIPROF_STATUS_ERROR_BUFFER_BUSY);
    CHECK_EQ_U(atomic_load(&g_inside_internal), 1); /* callback threads are marked internal */

    /* destroy while another thread flushes: BUSY; afterwards SUCCESS and the id is stale */
    run(C_BUSY, 1);
    pthread_t t;
    pthread_create(&t, NULL, flusher, NULL);
    for (int i = 0; i < 5000 && !atomic_load(&g_busy_entered); i++) sleep_ms(1);
    CHECK(atomic_load(&g_busy_entered));
    sleep_ms(20); /* the flusher is waiting for the callback now */
    CHECK_ST(omniprof_destroy_buffer(g_buf[C_BUSY]), OMNIPROF_STATUS_ERROR_BUFFER_BUSY);
    atomic_store(&g_busy_release, 1);
    pthread_join(t, NULL);
    CHECK_ST(omniprof_destroy_buffer(g_buf[C_BUSY]), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_destroy_buffer(g_buf[C_BUSY]), OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND);
    CHECK_ST(omniprof_flush_buffer(g_buf[C_BUSY]), OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND);
    run(C_BUSY, 10); /* records for a destroyed buffer are dropped, nothing crashes */

    /* callback-thread assignment: both buffers of the created thread run on one thread that is
     * not the default one */
    run(C_ASSIGN, 10);
    CHECK_ST(omniprof_flush_buffer(g_buf[C_ASSIGN]), OMNIPROF_STATUS_SUCCESS);
    omniprof_start_context(g_ctx[C_ASSIGN]);
    omniprof_stop_context(g_ctx[C_ASSIGN]);
    CHECK(atomic_load(&g_sink[C_ASSIGN].tid) != 0);
    CHECK(atomic_load(&g_sink[C_ASSIGN].tid) != atomic_load(&g_sink[C_LOSSLESS].tid));
    CHECK(atomic_load(&g_pre) >= 2 && atomic_load(&g_pre) == atomic_load(&g_post));

    /* finalize: idempotent; flush afterwards says FINALIZED */
    CHECK_ST(omniprof_finalize(), OMNIPROF_STATUS_SUCCESS);
    int fin = 0;
    CHECK_ST(omniprof_is_finalized(&fin), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(fin, 1);
    CHECK_ST(omniprof_finalize(), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_flush_buffer(g_buf[C_LOSSLESS]), OMNIPROF_STATUS_ERROR_FINALIZED);
    TEST_DONE();
}
