/* test_stuck_producer.c — a producer stopped inside its emplace holds up only its own buffer's
 * delivery, never the callback thread (src/sdk/buffer.c, invariant (7)).
 * The producer's payload ends on a page it may not read yet: the copy faults into the program's
 * SIGSEGV handler, which waits until the test lets it map the page (a program that maps data
 * lazily, or any handler that blocks, does this to a thread inside emplace). Meanwhile:
 *  - a flush of another buffer served by the same callback thread succeeds with all its records
 *    (the callback thread used to wait in the stuck buffer's grace period for as long as the
 *    producer stayed inside: that flush gave up after OMNIPROF_FINALIZE_TIMEOUT_MS);
 *  - a flush of the stuck buffer gives up (ERROR_BUFFER_BUSY): its sub-buffer cannot be read
 *    while the producer may still write into it;
 *  - so does a LOSSLESS producer of the stuck buffer that finds no free sub-buffer: it drops
 *    (counted) after OMNIPROF_FINALIZE_TIMEOUT_MS.
 * Both while a third thread keeps the other buffer delivering on the same callback thread: those
 * deliveries are no progress for the stuck buffer (they used to keep both waiting forever).
 * Then the handler returns, the record completes, and both buffers deliver every record not
 * dropped. A watchdog fails the test instead of letting it hang. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sdk_test.h"

#define BUF_BYTES 65536
#define EARLY 100   /* records the stuck producer stores before the one that faults */
#define OTHER 1000  /* records of the other buffer */
#define FILL 3000   /* records a LOSSLESS producer writes into the stuck buffer: more than fit */

static omniprof_context_id_t g_ctx;
static omniprof_buffer_id_t g_stuck_buf, g_other_buf;
static _Atomic uint64_t g_got_stuck, g_got_other;
static _Atomic uint64_t g_churned; /* records the churn thread wrote into the other buffer */
static _Atomic int g_caught, g_release, g_init_ok, g_churn_stop;
static char *g_page; /* two pages: the second one PROT_NONE until the handler maps it */
static long g_pg;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    char *a = si->si_addr;
    if (a < g_page + g_pg || a >= g_page + 2 * g_pg) {
        signal(sig, SIG_DFL); /* a real crash */
        return;
    }
    atomic_store(&g_caught, 1);
    while (!atomic_load(&g_release)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    mprotect(g_page + g_pg, (size_t)g_pg, PROT_READ | PROT_WRITE);
}

static int init(omniprof_client_finalize_t f, void *d)
{
    (void)f; (void)d;
    omniprof_create_context(&g_ctx);
    CHECK_ST(omniprof_create_buffer(g_ctx, BUF_BYTES, BUF_BYTES / 2, OMNIPROF_BUFFER_POLICY_LOSSLESS, test_count_cb,
                                    (void *)&g_got_stuck, &g_stuck_buf),
             0);
    CHECK_ST(omniprof_create_buffer(g_ctx, BUF_BYTES, BUF_BYTES / 2, OMNIPROF_BUFFER_POLICY_LOSSLESS, test_count_cb,
                                    (void *)&g_got_other, &g_other_buf),
             0);
    omniprof_callback_thread_t th; /* one callback thread serves both buffers */
    CHECK_ST(omniprof_create_callback_thread(&th), 0);
    CHECK_ST(omniprof_assign_callback_thread(g_stuck_buf, th), 0);
    CHECK_ST(omniprof_assign_callback_thread(g_other_buf, th), 0);
    omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_MARKER_API, NULL, 0, g_stuck_buf);
    omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, NULL, 0, g_other_buf);
    atomic_store(&g_init_ok, 1);
    return 0;
}
SDK_TEST_TOOL(init)

static void *stuck_producer(void *arg)
{
    (void)arg;
    for (uint64_t i = 0; i < EARLY; i++) test_emit_kind(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK, i, 0);
    /* a 64-byte record whose last 16 bytes lie on the protected page: its size (offset 0) reads */
    test_rec r = test_rec_make(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK, EARLY, 0);
    char *at = g_page + g_pg - 48;
    memcpy(at, &r, 48);
    op_sdk_emit(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK, at, NULL);
    return NULL;
}

/* Keeps the other buffer delivering (same callback thread) until told to stop. */
static void *churn(void *arg)
{
    (void)arg;
    for (uint64_t i = 0; !atomic_load(&g_churn_stop); i++) {
        test_emit(i, 2);
        atomic_fetch_add(&g_churned, 1);
        if (i % 64 == 63) omniprof_flush_buffer(g_other_buf);
    }
    return NULL;
}

/* A LOSSLESS producer of the stuck buffer: FILL records, more than the free sub-buffer holds. */
static void *filler(void *arg)
{
    (void)arg;
    for (uint64_t i = 0; i < FILL; i++) test_emit_kind(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK, i, 1);
    return NULL;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static omniprof_status_t flush_timed(omniprof_buffer_id_t b, double *secs)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    omniprof_status_t st = omniprof_flush_buffer(b);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    return st;
}

int main(void)
{
    g_pg = sysconf(_SC_PAGESIZE);
    g_page = mmap(NULL, 2 * (size_t)g_pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(g_page != MAP_FAILED);
    CHECK(mprotect(g_page + g_pg, (size_t)g_pg, PROT_NONE) == 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);

    omniprof_initialize();
    CHECK(atomic_load(&g_init_ok));
    pthread_t pr;
    test_watchdog_start(NULL);
    omniprof_start_context(g_ctx);

    test_step("a producer stopped inside emplace");
    pthread_create(&pr, NULL, stuck_producer, NULL);
    while (!atomic_load(&g_caught)) sleep_ms(1);

    test_step("flush of the stuck buffer while the other buffer keeps delivering");
    pthread_t ch, fl;
    pthread_create(&ch, NULL, churn, NULL);
    while (atomic_load(&g_got_other) < 256) sleep_ms(1);
    uint64_t other_before = atomic_load(&g_got_other);
    double secs;
    omniprof_status_t st = flush_timed(g_stuck_buf, &secs);
    uint64_t other_during = atomic_load(&g_got_other) - other_before;
    printf("flush of the stuck buffer: %s after %.2f s (the other buffer delivered %llu records meanwhile)\n",
           omniprof_get_status_name(st), secs, (unsigned long long)other_during);
    CHECK_ST(st, OMNIPROF_STATUS_ERROR_BUFFER_BUSY);
    CHECK(other_during > 0);

    test_step("a LOSSLESS producer of the stuck buffer while the other buffer keeps delivering");
    double t0 = now_s();
    pthread_create(&fl, NULL, filler, NULL);
    pthread_join(fl, NULL);
    omniprof_buffer_stats_t s = {.size = sizeof s};
    omniprof_buffer_get_stats(g_stuck_buf, &s);
    uint64_t dropped = s.records_dropped;
    printf("LOSSLESS producer of the stuck buffer: done after %.2f s, %llu of %d records dropped\n", now_s() - t0,
           (unsigned long long)dropped, FILL);
    CHECK(dropped > 0 && dropped < FILL);
    atomic_store(&g_churn_stop, 1);
    pthread_join(ch, NULL);

    test_step("the other buffer of the same callback thread");
    for (uint64_t i = 0; i < OTHER; i++) test_emit(i, 1);
    st = flush_timed(g_other_buf, &secs);
    printf("flush of the other buffer: %s after %.2f s, %llu of %llu records\n", omniprof_get_status_name(st), secs,
           (unsigned long long)atomic_load(&g_got_other), (unsigned long long)(OTHER + atomic_load(&g_churned)));
    CHECK_ST(st, OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(atomic_load(&g_got_other), OTHER + atomic_load(&g_churned));

    test_step("the producer leaves");
    atomic_store(&g_release, 1);
    pthread_join(pr, NULL);
    CHECK_ST(omniprof_flush_buffer(g_stuck_buf), OMNIPROF_STATUS_SUCCESS);
    /* invariant (6): every record is delivered or counted dropped */
    CHECK_EQ_U(atomic_load(&g_got_stuck) + dropped, EARLY + 1 + FILL);
    omniprof_buffer_get_stats(g_stuck_buf, &s);
    CHECK_EQ_U(s.records_dropped, dropped);
    omniprof_buffer_get_stats(g_other_buf, &s);
    CHECK_EQ_U(s.records_dropped, 0);
    test_step("done");
    TEST_DONE();
}
