/* sdk_test.h — tiny helpers shared by the SDK unit tests: CHECK macros that print the failing
 * expression and status name, a test record for the emit path, and a wait helper. Each test
 * program is its own tool: it defines omniprof_configure (SDK_TEST_TOOL) and configures in
 * initialize. */
#ifndef OMNIPROF_TESTS_SDK_TEST_H
#define OMNIPROF_TESTS_SDK_TEST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "omniprof/omniprof.h"
#include "sdk/backend.h"

#include "../common/check.h" /* g_failures, CHECK, CHECK_DONE */

#define CHECK_ST(call, want)                                                                                  \
    do {                                                                                                      \
        omniprof_status_t st_ = (call);                                                                       \
        if (st_ != (want)) {                                                                                  \
            fprintf(stderr, "%s:%d: %s returned %s, want %s\n", __FILE__, __LINE__, #call,                    \
                    omniprof_get_status_name(st_), omniprof_get_status_name(want));                           \
            g_failures++;                                                                                     \
        }                                                                                                     \
    } while (0)

#define TEST_DONE()                                                              \
    do {                                                                         \
        if (!g_failures) printf("all checks passed\n");                          \
        return CHECK_DONE();                                                     \
    } while (0)

/* The test program is its own tool: omniprof_configure hands the SDK `init_fn` as initialize. */
#define SDK_TEST_TOOL(init_fn)                                                                                   \
    omniprof_tool_configure_result_t *omniprof_configure(uint32_t v, const char *rv, uint32_t p,                \
                                                         omniprof_client_id_t *id)                               \
    {                                                                                                            \
        (void)v; (void)rv; (void)p; (void)id;                                                                    \
        static omniprof_tool_configure_result_t r = {sizeof r, init_fn, NULL, NULL};                            \
        return &r;                                                                                               \
    }

/* A record of kind MARKER_RANGE_API (a core kind: no backend gets loaded). Offsets 16..31 are
 * the correlation id the SDK patches; the test data lives after it. */
typedef struct test_rec {
    uint64_t size;
    uint32_t kind;
    int32_t operation;
    uint64_t corr_internal;
    uint64_t corr_external;
    uint64_t seq;
    uint64_t producer;
    char pad[16];
} test_rec;
_Static_assert(sizeof(test_rec) == 64, "64-byte test record");

static inline test_rec test_rec_make(uint32_t kind, int32_t operation, uint64_t seq, uint64_t producer)
{
    test_rec r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = kind;
    r.operation = operation;
    r.seq = seq;
    r.producer = producer;
    return r;
}
static inline void test_emit_kind(uint32_t kind, int32_t operation, uint64_t seq, uint64_t producer)
{
    test_rec r = test_rec_make(kind, operation, seq, producer);
    op_sdk_emit(kind, operation, &r, NULL);
}

/* Check a delivered batch of test_rec: the size and producer id (<= max_producer) of each, and,
 * when `next` is given, the order per producer (seq == next[producer], then next[producer]++). */
static inline void test_check_batch(omniprof_record_header_t **h, size_t n, uint64_t max_producer, uint64_t *next,
                                    _Atomic int *bad, _Atomic int *disorder)
{
    for (size_t i = 0; i < n; i++) {
        test_rec *r = h[i]->payload;
        if (r->size != sizeof *r || r->producer > max_producer) {
            atomic_store(bad, 1);
            continue;
        }
        if (next) {
            if (r->seq != next[r->producer]) atomic_store(disorder, 1);
            next[r->producer] = r->seq + 1;
        }
    }
}
/* A buffer callback that only counts: each batch's size is added to the _Atomic uint64_t that the
 * buffer's `data` points to (omniprof_create_buffer(..., test_count_cb, &counter, ...)). */
static inline void test_count_cb(omniprof_context_id_t c, omniprof_buffer_id_t b, omniprof_record_header_t **h,
                                 size_t n, void *data, uint64_t drops)
{
    (void)c; (void)b; (void)h; (void)drops;
    atomic_fetch_add((_Atomic uint64_t *)data, n);
}

static inline void test_emit(uint64_t seq, uint64_t producer)
{
    test_emit_kind(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, OMNIPROF_MARKER_RANGE_OP_MARK, seq, producer);
}

static inline void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A watchdog for tests whose failure would be a hang: test_step(what) marks progress; the thread
 * that test_watchdog_start starts ends the process (exit 3, the last step named, then what
 * `extra` prints) once no step came for 20 s, so that the test fails instead of hanging ctest. */
typedef struct test_watchdog {
    _Atomic uint64_t progress;
    const char *_Atomic step;
    void (*extra)(void);
} test_watchdog;
static inline test_watchdog *test_wd(void)
{
    static test_watchdog w;
    return &w;
}
static inline void test_step(const char *what)
{
    atomic_store(&test_wd()->step, what);
    atomic_fetch_add(&test_wd()->progress, 1);
}
static inline void *test_watchdog_main(void *arg)
{
    (void)arg;
    test_watchdog *w = test_wd();
    uint64_t last = atomic_load(&w->progress);
    for (int idle = 0;; sleep_ms(100)) {
        uint64_t now = atomic_load(&w->progress);
        if (now != last) { last = now; idle = 0; continue; }
        if (++idle > 200) {
            const char *at = atomic_load(&w->step);
            fprintf(stderr, "HANG: no progress for 20 s at step '%s'\n", at ? at : "start");
            if (w->extra) w->extra();
            _exit(3);
        }
    }
    return NULL;
}
static inline void test_watchdog_start(void (*extra)(void))
{
    test_wd()->extra = extra;
    pthread_t th;
    pthread_create(&th, NULL, test_watchdog_main, NULL);
    pthread_detach(th);
}

#endif
