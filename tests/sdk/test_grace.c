/* test_grace.c — the buffer protocol's corner cases around its grace period (label 'threading',
 * run under TSan by `make test-sanitize`): chunks owned by threads that exit mid-chunk, more
 * live producer threads than the static per-thread pool and the first epoch block hold (256),
 * records emitted from a signal handler that interrupts producers, and a buffer destroyed while
 * its producers run. Exact accounting everywhere: LOSSLESS delivers every record, in order
 * per producer; delivered + dropped == produced. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>

#include "sdk_test.h"

#define NTHREADS 300 /* > OP_TLS_POOL and > one epoch block */
#define PER_PHASE 20
#ifdef OMNIPROF_SANITIZER_BUILD
#define SIG_ROUNDS 20000
#else
#define SIG_ROUNDS 200000
#endif

static omniprof_context_id_t g_ctx_l, g_ctx_d, g_ctx_x;
static omniprof_buffer_id_t g_buf_l, g_buf_d, g_buf_x;
static _Atomic uint64_t g_got_l, g_got_d, g_got_x;
static uint64_t g_next[NTHREADS + 3]; /* touched only by buffer L's callback thread */
static _Atomic int g_disorder, g_bad;
static pthread_barrier_t g_all_alive;
static _Atomic uint64_t g_sig_emitted;
static _Atomic int g_stop, g_signaller_done;

static void cb(omniprof_context_id_t c, omniprof_buffer_id_t b, omniprof_record_header_t **h, size_t n, void *d,
               uint64_t drops)
{
    (void)c; (void)drops;
    test_check_batch(h, n, NTHREADS + 2, b.handle == g_buf_l.handle ? g_next : NULL, &g_bad, &g_disorder);
    atomic_fetch_add((_Atomic uint64_t *)d, n);
}

static int init(omniprof_client_finalize_t f, void *d)
{
    (void)f; (void)d;
    omniprof_create_context(&g_ctx_l);
    omniprof_create_context(&g_ctx_d);
    omniprof_create_context(&g_ctx_x);
    /* small buffers: many deliveries, so many grace periods while producers run */
    CHECK_ST(omniprof_create_buffer(g_ctx_l, 16384, 4096, OMNIPROF_BUFFER_POLICY_LOSSLESS, cb, &g_got_l, &g_buf_l), 0);
    CHECK_ST(omniprof_create_buffer(g_ctx_d, 8192, 4096, OMNIPROF_BUFFER_POLICY_DISCARD, cb, &g_got_d, &g_buf_d), 0);
    CHECK_ST(omniprof_create_buffer(g_ctx_x, 8192, 4096, OMNIPROF_BUFFER_POLICY_LOSSLESS, cb, &g_got_x, &g_buf_x), 0);
    omniprof_configure_buffer_tracing_service(g_ctx_l, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, NULL, 0, g_buf_l);
    omniprof_configure_buffer_tracing_service(g_ctx_d, OMNIPROF_BUFFER_TRACING_MARKER_API, NULL, 0, g_buf_d);
    omniprof_configure_buffer_tracing_service(g_ctx_x, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, NULL, 0, g_buf_x);
    return 0;
}

SDK_TEST_TOOL(init)

/* Emit a few records (the thread's chunk stays open), wait until every thread is alive, emit
 * more, exit: the records of chunks whose thread is gone must still be delivered. */
static void *short_lived(void *arg)
{
    uint64_t p = (uint64_t)(uintptr_t)arg;
    for (uint64_t i = 0; i < PER_PHASE; i++) test_emit(i, p);
    pthread_barrier_wait(&g_all_alive);
    for (uint64_t i = PER_PHASE; i < 2 * PER_PHASE; i++) test_emit(i, p);
    return NULL;
}

/* The signal handler emits into the DISCARD buffer (MARKER_API): it never waits, and drops
 * (counted) when it interrupted an emplace of its own thread. */
static void on_signal(int sig)
{
    (void)sig;
    test_rec r = test_rec_make(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK, 0, NTHREADS + 2);
    op_sdk_emit_from_signal(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK, &r);
    atomic_fetch_add(&g_sig_emitted, 1);
}

static void *signalled_producer(void *arg)
{
    (void)arg;
    for (uint64_t i = 0; i < SIG_ROUNDS; i++) {
        test_emit(i, NTHREADS + 1); /* LOSSLESS buffer L */
        test_emit_kind(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK, i, NTHREADS + 1); /* DISCARD D */
    }
    /* stay alive (and take pending signals) until the signaller stopped sending */
    atomic_store(&g_stop, 1);
    while (!atomic_load(&g_signaller_done)) sleep_ms(1);
    sleep_ms(5);
    return NULL;
}

static void *signaller(void *arg)
{
    pthread_t target = *(pthread_t *)arg;
    while (!atomic_load(&g_stop)) {
        pthread_kill(target, SIGUSR1);
        sched_yield();
    }
    atomic_store(&g_signaller_done, 1);
    return NULL;
}

static void *destroyed_producer(void *arg)
{
    (void)arg;
    for (uint64_t i = 0; !atomic_load(&g_stop); i++) test_emit(i, 0);
    return NULL;
}

int main(void)
{
    omniprof_initialize();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);

    /* 1. 300 threads alive at once, each leaving a chunk behind at exit */
    omniprof_start_context(g_ctx_l);
    pthread_barrier_init(&g_all_alive, NULL, NTHREADS);
    pthread_t th[NTHREADS];
    int started = 0;
    for (int i = 0; i < NTHREADS; i++)
        if (pthread_create(&th[i], NULL, short_lived, (void *)(uintptr_t)(i + 1)) == 0) started++;
    CHECK_EQ_U(started, NTHREADS);
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    CHECK_ST(omniprof_flush_buffer(g_buf_l), 0);
    CHECK_EQ_U(atomic_load(&g_got_l), (uint64_t)NTHREADS * 2 * PER_PHASE);
    for (int p = 1; p <= NTHREADS; p++) CHECK_EQ_U(g_next[p], 2 * PER_PHASE);

    /* 2. a signal handler emits while its thread emits into two buffers */
    omniprof_start_context(g_ctx_d);
    pthread_t prod, sig;
    pthread_create(&prod, NULL, signalled_producer, NULL);
    pthread_create(&sig, NULL, signaller, &prod);
    pthread_join(sig, NULL);
    pthread_join(prod, NULL);
    omniprof_stop_context(g_ctx_l);
    omniprof_stop_context(g_ctx_d);
    CHECK_ST(omniprof_flush_buffer(g_buf_l), 0);
    CHECK_ST(omniprof_flush_buffer(g_buf_d), 0);
    omniprof_buffer_stats_t sl = {.size = sizeof sl}, sd = {.size = sizeof sd};
    omniprof_buffer_get_stats(g_buf_l, &sl);
    omniprof_buffer_get_stats(g_buf_d, &sd);
    CHECK_EQ_U(atomic_load(&g_got_l), (uint64_t)NTHREADS * 2 * PER_PHASE + SIG_ROUNDS);
    CHECK_EQ_U(sl.records_dropped, 0);
    CHECK_EQ_U(g_next[NTHREADS + 1], SIG_ROUNDS);
    CHECK(!atomic_load(&g_disorder));
    CHECK(!atomic_load(&g_bad));
    CHECK(atomic_load(&g_sig_emitted) > 0);
    CHECK_EQ_U(atomic_load(&g_got_d) + sd.records_dropped, SIG_ROUNDS + atomic_load(&g_sig_emitted));

    /* 3. destroy a buffer while two threads keep emitting into it: no crash, no hang */
    atomic_store(&g_stop, 0);
    omniprof_start_context(g_ctx_x);
    pthread_t dp[2];
    for (int i = 0; i < 2; i++) pthread_create(&dp[i], NULL, destroyed_producer, NULL);
    while (atomic_load(&g_got_x) < 1000) sleep_ms(1);
    CHECK_ST(omniprof_destroy_buffer(g_buf_x), OMNIPROF_STATUS_SUCCESS);
    sleep_ms(20);
    atomic_store(&g_stop, 1);
    for (int i = 0; i < 2; i++) pthread_join(dp[i], NULL);
    CHECK_ST(omniprof_flush_buffer(g_buf_x), OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND);

    printf("threads %d, lossless %llu, signal records %llu, discard delivered %llu dropped %llu\n", NTHREADS,
           (unsigned long long)atomic_load(&g_got_l), (unsigned long long)atomic_load(&g_sig_emitted),
           (unsigned long long)atomic_load(&g_got_d), (unsigned long long)sd.records_dropped);
    TEST_DONE();
}
