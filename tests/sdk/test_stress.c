/* test_stress.c — many threads against the buffer and context machinery at once (label
 * 'threading', run under TSan by `make test-sanitize`): 4 producers emit into a LOSSLESS and a
 * DISCARD buffer on two callback threads while another thread starts/stops a third context
 * and flushes. Exact accounting: LOSSLESS delivers everything in per-producer order; DISCARD
 * delivered + dropped == produced. */
#include <pthread.h>
#include <stdatomic.h>

#include "sdk_test.h"

#ifdef OMNIPROF_SANITIZER_BUILD
#define PER_THREAD 5000
#else
#define PER_THREAD 50000
#endif
#define NPROD 4

static omniprof_context_id_t g_ctx_l, g_ctx_d, g_ctx_t;
static omniprof_buffer_id_t g_buf_l, g_buf_d, g_buf_t;
static omniprof_callback_thread_t g_th;
static _Atomic uint64_t g_got_l, g_got_d, g_got_t;
static uint64_t g_next[NPROD + 1]; /* touched only by buffer L's callback thread */
static _Atomic int g_disorder, g_bad;
static _Atomic int g_stop;

static void cb(omniprof_context_id_t c, omniprof_buffer_id_t b, omniprof_record_header_t **h, size_t n, void *d,
               uint64_t drops)
{
    (void)c; (void)drops;
    test_check_batch(h, n, NPROD, b.handle == g_buf_l.handle ? g_next : NULL, &g_bad, &g_disorder);
    atomic_fetch_add((_Atomic uint64_t *)d, n);
}

static int init(omniprof_client_finalize_t f, void *d)
{
    (void)f; (void)d;
    omniprof_create_context(&g_ctx_l);
    omniprof_create_context(&g_ctx_d);
    omniprof_create_context(&g_ctx_t);
    CHECK_ST(omniprof_create_buffer(g_ctx_l, 16384, 8192, OMNIPROF_BUFFER_POLICY_LOSSLESS, cb, &g_got_l, &g_buf_l), 0);
    CHECK_ST(omniprof_create_buffer(g_ctx_d, 8192, 8192, OMNIPROF_BUFFER_POLICY_DISCARD, cb, &g_got_d, &g_buf_d), 0);
    CHECK_ST(omniprof_create_buffer(g_ctx_t, 8192, 4096, OMNIPROF_BUFFER_POLICY_DISCARD, cb, &g_got_t, &g_buf_t), 0);
    CHECK_ST(omniprof_create_callback_thread(&g_th), 0);
    CHECK_ST(omniprof_assign_callback_thread(g_buf_d, g_th), 0);
    omniprof_configure_buffer_tracing_service(g_ctx_l, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, NULL, 0, g_buf_l);
    omniprof_configure_buffer_tracing_service(g_ctx_d, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, NULL, 0, g_buf_d);
    omniprof_configure_buffer_tracing_service(g_ctx_t, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, NULL, 0, g_buf_t);
    omniprof_start_context(g_ctx_l);
    omniprof_start_context(g_ctx_d);
    return 0;
}

SDK_TEST_TOOL(init)

static void *producer(void *arg)
{
    uint64_t p = (uint64_t)(uintptr_t)arg;
    for (uint64_t i = 0; i < PER_THREAD; i++) test_emit(i, p);
    return NULL;
}

static void *toggler(void *arg)
{
    (void)arg;
    int i = 0;
    while (!atomic_load(&g_stop)) {
        omniprof_start_context(g_ctx_t);
        sleep_ms(1);
        omniprof_stop_context(g_ctx_t);
        if (++i % 5 == 0) {
            CHECK_ST(omniprof_flush_buffer(g_buf_d), OMNIPROF_STATUS_SUCCESS);
            CHECK_ST(omniprof_flush_buffer(g_buf_t), OMNIPROF_STATUS_SUCCESS);
        }
    }
    return NULL;
}

int main(void)
{
    omniprof_initialize();
    pthread_t prod[NPROD], tog;
    pthread_create(&tog, NULL, toggler, NULL);
    for (int i = 0; i < NPROD; i++) pthread_create(&prod[i], NULL, producer, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < NPROD; i++) pthread_join(prod[i], NULL);
    atomic_store(&g_stop, 1);
    pthread_join(tog, NULL);
    omniprof_stop_context(g_ctx_l);
    omniprof_stop_context(g_ctx_d);
    CHECK_ST(omniprof_flush_buffer(g_buf_l), 0);
    CHECK_ST(omniprof_flush_buffer(g_buf_d), 0);
    CHECK_ST(omniprof_flush_buffer(g_buf_t), 0);
    omniprof_buffer_stats_t sl = {.size = sizeof sl}, sd = {.size = sizeof sd}, st = {.size = sizeof st};
    omniprof_buffer_get_stats(g_buf_l, &sl);
    omniprof_buffer_get_stats(g_buf_d, &sd);
    omniprof_buffer_get_stats(g_buf_t, &st);
    const uint64_t produced = (uint64_t)NPROD * PER_THREAD;
    CHECK_EQ_U(atomic_load(&g_got_l), produced);
    CHECK_EQ_U(sl.records_dropped, 0);
    CHECK(!atomic_load(&g_disorder));
    CHECK(!atomic_load(&g_bad));
    for (int p = 1; p <= NPROD; p++) CHECK_EQ_U(g_next[p], PER_THREAD);
    CHECK_EQ_U(atomic_load(&g_got_d) + sd.records_dropped, produced);
    CHECK_EQ_U(atomic_load(&g_got_t), st.records_delivered);
    printf("lossless %llu, discard delivered %llu dropped %llu, toggled %llu+%llu\n",
           (unsigned long long)atomic_load(&g_got_l), (unsigned long long)atomic_load(&g_got_d),
           (unsigned long long)sd.records_dropped, (unsigned long long)st.records_delivered,
           (unsigned long long)st.records_dropped);
    TEST_DONE();
}
