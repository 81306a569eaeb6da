/* test_bounded.c — every wait of src/sdk/buffer.c ends (DESIGN rule 1); a watchdog fails the test
 * instead of letting it hang.
 * 1. A record that fits the buffer's size but not the chunks of one sub-buffer (a size that is not
 *    a multiple of the chunk size: 129 pages make 32 chunks of 16 KiB, 4 KiB short of cap) into a
 *    LOSSLESS buffer: counted too big. It used to seal every sub-buffer in turn and wait for
 *    room forever (the producer's emit never returned).
 * 2. What `omniprof attach` does at detach and re-attach, 300 times, then finalization: producers
 *    keep emitting into a small LOSSLESS buffer (its own callback thread, as the tool's) while a
 *    controller flushes, stops the context, flushes again (detach) and restarts it (re-attach);
 *    three producers start emitting mid-run (threads that existed before the attach), records are
 *    of mixed sizes (some span chunks), a periodic flusher runs alongside (the tool's
 *    omniprof-flush), and the SDK finalizes while producers are inside emplace.
 * 3. A LOSSLESS producer that holds a lock its buffer's consumer needs: CUPTI hands its activity
 *    buffers over under its own lock, on the thread that then emits their records (a flusher at
 *    detach, the CUPTI worker), so a consumer that waits for that lock, directly or through a
 *    thread it waits for, and a producer waiting for room made a cycle that no wait of the
 *    buffer broke. Now the producer gives up once the consumer made no progress for
 *    OMNIPROF_FINALIZE_TIMEOUT_MS (1 s here, CMakeLists.txt): one wait, after which the records
 *    it cannot store are dropped at once and counted; released, every record accepted is
 *    delivered (delivered + dropped = emitted) and the buffer is lossless again. Without that
 *    bound the first emit never returns and the watchdog fails the test. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include "sdk_test.h"

#define NPROD 5
#define ROUNDS 300
#define BUF_BYTES 8192

#define ODD_BYTES (4096 * 129)
#define ODD_RECORD 524300 /* > 32 * 16384, <= ODD_BYTES */

static omniprof_context_id_t g_ctx, g_ctx_odd;
static omniprof_buffer_id_t g_buf, g_buf_odd;
static _Atomic uint64_t g_got, g_emitted;
static _Atomic int g_stop, g_bad, g_init_ok, g_late_go;

typedef struct var_rec {
    uint64_t size;
    uint32_t kind;
    int32_t operation;
    uint64_t corr[2];
    uint64_t seq, producer;
    unsigned char body[1200];
} var_rec;

static void cb(omniprof_context_id_t c, omniprof_buffer_id_t b, omniprof_record_header_t **h, size_t n, void *d,
               uint64_t drops)
{
    (void)c; (void)b; (void)d; (void)drops;
    for (size_t i = 0; i < n; i++) {
        const var_rec *r = h[i]->payload;
        if (r->size < 48 || r->size > sizeof(var_rec) || r->producer >= NPROD) atomic_store(&g_bad, 1);
    }
    atomic_fetch_add(&g_got, n);
    if ((atomic_load(&g_got) & 63) == 0) usleep(200); /* a slowish consumer: producers wait (LOSSLESS) */
}

static _Atomic uint64_t g_got_odd;

static omniprof_context_id_t g_ctx_cyc;
static omniprof_buffer_id_t g_buf_cyc;
static pthread_mutex_t g_cyc_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t g_got_cyc;
#define CYC_RECORDS 3000

static void cyc_cb(omniprof_context_id_t c, omniprof_buffer_id_t b, omniprof_record_header_t **h, size_t n, void *d,
                   uint64_t drops)
{
    (void)c; (void)b; (void)h; (void)d; (void)drops;
    pthread_mutex_lock(&g_cyc_lock); /* the lock the producer holds while it emits */
    atomic_fetch_add(&g_got_cyc, n);
    pthread_mutex_unlock(&g_cyc_lock);
}

static int init(omniprof_client_finalize_t f, void *d)
{
    (void)f; (void)d;
    omniprof_create_context(&g_ctx);
    CHECK_ST(omniprof_create_buffer(g_ctx, BUF_BYTES, BUF_BYTES - BUF_BYTES / 8, OMNIPROF_BUFFER_POLICY_LOSSLESS, cb,
                                    NULL, &g_buf),
             0);
    omniprof_callback_thread_t th;
    CHECK_ST(omniprof_create_callback_thread(&th), 0);
    CHECK_ST(omniprof_assign_callback_thread(g_buf, th), 0);
    omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, NULL, 0, g_buf);
    omniprof_create_context(&g_ctx_odd);
    CHECK_ST(omniprof_create_buffer(g_ctx_odd, ODD_BYTES, ODD_BYTES / 2, OMNIPROF_BUFFER_POLICY_LOSSLESS, test_count_cb,
                                    (void *)&g_got_odd, &g_buf_odd),
             0);
    omniprof_configure_buffer_tracing_service(g_ctx_odd, OMNIPROF_BUFFER_TRACING_MARKER_API, NULL, 0, g_buf_odd);
    omniprof_create_context(&g_ctx_cyc);
    CHECK_ST(omniprof_create_buffer(g_ctx_cyc, BUF_BYTES, BUF_BYTES / 2, OMNIPROF_BUFFER_POLICY_LOSSLESS, cyc_cb, NULL,
                                    &g_buf_cyc),
             0);
    omniprof_callback_thread_t th2;
    CHECK_ST(omniprof_create_callback_thread(&th2), 0);
    CHECK_ST(omniprof_assign_callback_thread(g_buf_cyc, th2), 0);
    omniprof_configure_buffer_tracing_service(g_ctx_cyc, OMNIPROF_BUFFER_TRACING_MARKER_API, NULL, 0, g_buf_cyc);
    atomic_store(&g_init_ok, 1);
    return 0;
}
SDK_TEST_TOOL(init)

static void *producer(void *arg)
{
    uint64_t p = (uintptr_t)arg;
    if (p >= 2)
        while (!atomic_load(&g_late_go) && !atomic_load(&g_stop)) sleep_ms(1); /* starts emitting mid-run */
    var_rec r;
    memset(&r, 0, sizeof r);
    r.kind = OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API;
    r.operation = OMNIPROF_MARKER_RANGE_OP_MARK;
    r.producer = p;
    for (uint64_t i = 0; !atomic_load(&g_stop); i++) {
        static const uint64_t sizes[] = {64, 200, 48, 136, 600, 64, 1100, 88};
        r.size = sizes[(i + p) % 8];
        r.seq = i;
        op_sdk_emit(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, OMNIPROF_MARKER_RANGE_OP_MARK, &r, NULL);
        atomic_fetch_add_explicit(&g_emitted, 1, memory_order_relaxed);
        if ((i & 255) == 0) sched_yield();
    }
    return NULL;
}

static void *periodic_flusher(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_stop)) {
        omniprof_flush_buffer(g_buf);
        sleep_ms(1);
    }
    return NULL;
}

static void hang_extra(void)
{
    fprintf(stderr, "records delivered %llu, emits returned %llu\n", (unsigned long long)atomic_load(&g_got),
            (unsigned long long)atomic_load(&g_emitted));
}

int main(void)
{
    omniprof_initialize();
    CHECK(atomic_load(&g_init_ok));
    pthread_t fl, pr[NPROD];
    test_watchdog_start(hang_extra);

    /* 1. a record larger than one sub-buffer's chunks, smaller than the buffer */
    test_step("oversize record into a LOSSLESS buffer");
    {
        static char big[ODD_RECORD];
        uint64_t sz = sizeof big;
        memcpy(big, &sz, 8);
        omniprof_start_context(g_ctx_odd);
        op_sdk_emit(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK, big, NULL);
        test_rec r = test_rec_make(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK, 0, 0);
        op_sdk_emit(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK, &r, NULL);
        omniprof_stop_context(g_ctx_odd);
        CHECK_ST(omniprof_flush_buffer(g_buf_odd), 0);
        omniprof_buffer_stats_t so = {.size = sizeof so};
        omniprof_buffer_get_stats(g_buf_odd, &so);
        CHECK_EQ_U(so.records_too_big, 1);
        CHECK_EQ_U(atomic_load(&g_got_odd), 1);
    }

    /* 3. a LOSSLESS producer holding a lock its consumer needs (before 2, which finalizes) */
    omniprof_start_context(g_ctx_cyc);
    for (int phase = 0; phase < 2; phase++) {
        test_step(phase ? "LOSSLESS again once the consumer moves" : "LOSSLESS producer holding its consumer's lock");
        omniprof_buffer_stats_t before = {.size = sizeof before};
        omniprof_buffer_get_stats(g_buf_cyc, &before);
        if (phase == 0) pthread_mutex_lock(&g_cyc_lock);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (uint64_t i = 0; i < CYC_RECORDS; i++) {
            test_emit_kind(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK, i, 0);
            if (i % 64 == 0) test_step(phase ? "LOSSLESS again once the consumer moves" : "LOSSLESS producer holding its consumer's lock");
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        if (phase == 0) pthread_mutex_unlock(&g_cyc_lock);
        CHECK_ST(omniprof_flush_buffer(g_buf_cyc), 0);
        omniprof_buffer_stats_t after = {.size = sizeof after};
        omniprof_buffer_get_stats(g_buf_cyc, &after);
        uint64_t dropped = after.records_dropped - before.records_dropped;
        printf("phase %d: %d emits in %.2f s, %llu dropped, %llu delivered in all\n", phase, CYC_RECORDS, secs,
               (unsigned long long)dropped, (unsigned long long)atomic_load(&g_got_cyc));
        if (phase == 0) {
            CHECK(dropped > 0);    /* the producer gave up */
            CHECK(secs < 10);      /* after one stall of ~1 s, not one per record */
        } else {
            CHECK_EQ_U(dropped, 0); /* the consumer moved: LOSSLESS again */
        }
        CHECK_EQ_U(atomic_load(&g_got_cyc) + after.records_dropped, (phase + 1) * (uint64_t)CYC_RECORDS);
    }
    omniprof_stop_context(g_ctx_cyc);

    /* 2. detach, re-attach, finalize while producers emit */
    omniprof_start_context(g_ctx);
    for (int i = 0; i < NPROD; i++) pthread_create(&pr[i], NULL, producer, (void *)(uintptr_t)i);
    pthread_create(&fl, NULL, periodic_flusher, NULL);
    for (int round = 0; round < ROUNDS; round++) {
        test_step("collecting");
        sleep_ms(1 + round % 3);
        if (round == ROUNDS / 10) atomic_store(&g_late_go, 1);
        test_step("detach: flush");
        omniprof_flush_buffer(g_buf);
        test_step("detach: stop context");
        omniprof_stop_context(g_ctx);
        test_step("detach: flush after stop");
        omniprof_flush_buffer(g_buf);
        test_step("re-attach: start context");
        omniprof_start_context(g_ctx);
    }
    test_step("finalize with producers inside emplace");
    omniprof_finalize();
    test_step("join producers");
    atomic_store(&g_stop, 1);
    for (int i = 0; i < NPROD; i++) pthread_join(pr[i], NULL);
    pthread_join(fl, NULL);
    test_step("done");
    omniprof_buffer_stats_t s = {.size = sizeof s};
    omniprof_buffer_get_stats(g_buf, &s);
    CHECK(!atomic_load(&g_bad));
    CHECK(atomic_load(&g_got) > 0);
    printf("rounds %d, emits %llu, delivered %llu, dropped %llu, producer waits %llu\n", ROUNDS,
           (unsigned long long)atomic_load(&g_emitted), (unsigned long long)atomic_load(&g_got),
           (unsigned long long)s.records_dropped, (unsigned long long)s.producer_waits);
    TEST_DONE();
}
