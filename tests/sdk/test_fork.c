/* test_fork.c — fork() in a multi-threaded traced process: three threads
 * keep emitting into a LOSSLESS buffer while the main thread forks. In the child only the
 * forking thread exists; its buffer starts empty, its callback thread is restarted lazily, and
 * exactly the records the child emits are delivered, in the child, on a thread other than the
 * child's main thread. The parent keeps working and loses nothing. */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sdk_test.h"

static omniprof_context_id_t g_ctx;
static omniprof_buffer_id_t g_buf;
static _Atomic uint64_t g_got, g_got_child, g_bad;
static _Atomic long g_cb_pid, g_cb_tid;
static _Atomic int g_stop;
static _Atomic uint64_t g_produced;

static void cb(omniprof_context_id_t c, omniprof_buffer_id_t b, omniprof_record_header_t **h, size_t n, void *d,
               uint64_t drops)
{
    (void)c; (void)b; (void)d; (void)drops;
    atomic_store(&g_cb_pid, (long)getpid());
    atomic_store(&g_cb_tid, (long)syscall(SYS_gettid));
    for (size_t i = 0; i < n; i++) {
        test_rec *r = h[i]->payload;
        if (r->producer == 99) atomic_fetch_add(&g_got_child, 1);
        else if (r->producer > 3) atomic_fetch_add(&g_bad, 1);
    }
    atomic_fetch_add(&g_got, n);
}

static int init(omniprof_client_finalize_t f, void *d)
{
    (void)f; (void)d;
    omniprof_create_context(&g_ctx);
    CHECK_ST(omniprof_create_buffer(g_ctx, 8192, 4096, OMNIPROF_BUFFER_POLICY_LOSSLESS, cb, NULL, &g_buf), 0);
    omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, NULL, 0, g_buf);
    omniprof_start_context(g_ctx);
    return 0;
}

SDK_TEST_TOOL(init)

static void *producer(void *arg)
{
    uint64_t p = (uint64_t)(uintptr_t)arg, i = 0;
    while (!atomic_load(&g_stop)) {
        test_emit(i++, p);
        atomic_fetch_add(&g_produced, 1);
    }
    return NULL;
}

int main(void)
{
    omniprof_initialize();
    pthread_t t[3];
    for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, producer, (void *)(uintptr_t)(i + 1));
    sleep_ms(50);
    pid_t pid = fork();
    if (pid == 0) {
        /* child: single-threaded copy */
        atomic_store(&g_got, 0);
        atomic_store(&g_got_child, 0);
        atomic_store(&g_cb_pid, 0);
        for (uint64_t i = 0; i < 1000; i++) test_emit(i, 99);
        int rc = 0;
        if (omniprof_flush_buffer(g_buf) != OMNIPROF_STATUS_SUCCESS) rc |= 1;
        if (atomic_load(&g_got) != 1000 || atomic_load(&g_got_child) != 1000) rc |= 2;
        if (atomic_load(&g_cb_pid) != (long)getpid()) rc |= 4;
        if (atomic_load(&g_cb_tid) == (long)getpid()) rc |= 8; /* delivered by a callback thread */
        omniprof_buffer_stats_t s = {.size = sizeof s};
        omniprof_buffer_get_stats(g_buf, &s);
        if (s.records_dropped != 0 || s.records_delivered != 1000) rc |= 16;
        if (rc) fprintf(stderr, "child: rc=%d got=%llu child=%llu\n", rc, (unsigned long long)atomic_load(&g_got),
                        (unsigned long long)atomic_load(&g_got_child));
        exit(rc); /* exit(): the SDK finalizes in the child too */
    }
    CHECK(pid > 0);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    sleep_ms(20);
    atomic_store(&g_stop, 1);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    CHECK_ST(omniprof_flush_buffer(g_buf), OMNIPROF_STATUS_SUCCESS);
    omniprof_buffer_stats_t s = {.size = sizeof s};
    omniprof_buffer_get_stats(g_buf, &s);
    CHECK_EQ_U(atomic_load(&g_got), atomic_load(&g_produced));
    CHECK_EQ_U(s.records_dropped, 0);
    CHECK_EQ_U(atomic_load(&g_got_child), 0);
    CHECK_EQ_U(atomic_load(&g_bad), 0);
    CHECK_EQ_U(atomic_load(&g_cb_pid), (long)getpid());
    TEST_DONE();
}
