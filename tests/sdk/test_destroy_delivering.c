/* test_destroy_delivering.c — omniprof_destroy_buffer while its callback thread is inside a slow
 * callback of that buffer (src/sdk/buffer_api.c): destroy waits for the delivery to end (bounded
 * by time, not by a count of sched_yield()s, which is far shorter than one callback), so the
 * callback never reads records whose pages destroy dropped, and no callback of the buffer runs
 * after destroy returned. A producer keeps sealing sub-buffers (watermark 0) so that a delivery
 * follows right after destroy's own flush; each callback sleeps SLOW_MS before it reads its
 * records. A watchdog fails the test instead of letting it hang. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "sdk_test.h"

#define ROUNDS 3
#define SLOW_MS 300

static omniprof_context_id_t g_ctx[ROUNDS]; /* one context and buffer per round */
static omniprof_buffer_id_t g_buf[ROUNDS];
static _Atomic int g_init_ok, g_stop, g_in_cb, g_destroyed, g_bad, g_after;
static _Atomic uint64_t g_batches;

static void slow_cb(omniprof_context_id_t c, omniprof_buffer_id_t b, omniprof_record_header_t **h, size_t n,
                    void *data, uint64_t drops)
{
    (void)c; (void)b; (void)data; (void)drops;
    atomic_fetch_add(&g_in_cb, 1);
    atomic_fetch_add(&g_batches, 1);
    sleep_ms(SLOW_MS);
    for (size_t i = 0; i < n; i++) {
        test_rec *r = h[i]->payload;
        if (r->size != sizeof *r || r->producer != 7) atomic_store(&g_bad, 1); /* pages dropped under it */
    }
    if (atomic_load(&g_destroyed)) atomic_fetch_add(&g_after, 1); /* still running after destroy returned */
    atomic_fetch_sub(&g_in_cb, 1);
}

static int init(omniprof_client_finalize_t f, void *d)
{
    (void)f; (void)d;
    for (int i = 0; i < ROUNDS; i++) {
        CHECK_ST(omniprof_create_context(&g_ctx[i]), 0);
        CHECK_ST(omniprof_create_buffer(g_ctx[i], 16384, 0, OMNIPROF_BUFFER_POLICY_DISCARD, slow_cb, NULL, &g_buf[i]),
                 0);
        CHECK_ST(omniprof_configure_buffer_tracing_service(g_ctx[i], OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, NULL, 0,
                                                           g_buf[i]),
                 0);
    }
    atomic_store(&g_init_ok, 1);
    return 0;
}
SDK_TEST_TOOL(init)

static void *producer(void *arg)
{
    (void)arg;
    for (uint64_t i = 0; !atomic_load(&g_stop); i++) {
        test_emit(i, 7);
        if (i % 16 == 15) sleep_ms(1);
    }
    return NULL;
}

int main(void)
{
    omniprof_initialize();
    CHECK(atomic_load(&g_init_ok));
    test_watchdog_start(NULL);
    pthread_t pr;
    pthread_create(&pr, NULL, producer, NULL);
    for (int round = 0; round < ROUNDS; round++) {
        test_step("a buffer whose callback is slow, destroyed while its producer emits");
        CHECK_ST(omniprof_start_context(g_ctx[round]), 0);
        uint64_t b0 = atomic_load(&g_batches);
        while (atomic_load(&g_batches) < b0 + 2) sleep_ms(1);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        CHECK_ST(omniprof_destroy_buffer(g_buf[round]), OMNIPROF_STATUS_SUCCESS);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        int inside = atomic_load(&g_in_cb);
        atomic_store(&g_destroyed, 1);
        printf("round %d: destroy returned after %.3f s, callbacks still running: %d\n", round,
               (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, inside);
        CHECK_EQ_U(inside, 0);
        sleep_ms(2 * SLOW_MS); /* a callback that was still running would end (and be seen) by now */
        CHECK_EQ_U(atomic_load(&g_after), 0);
        CHECK_EQ_U(atomic_load(&g_bad), 0);
        omniprof_stop_context(g_ctx[round]);
        atomic_store(&g_destroyed, 0);
    }
    atomic_store(&g_stop, 1);
    pthread_join(pr, NULL);
    test_step("done");
    TEST_DONE();
}
