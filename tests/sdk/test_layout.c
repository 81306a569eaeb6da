/* test_layout.c — src/sdk/buffer.c's chunk layout (payloads from the front of a chunk, the index
 * from its back): records of mixed sizes, sizes that are not multiples of 8, and records larger
 * than a chunk (a lane of several chunks, whose index sits at the end of the last one) arrive
 * intact, 8-byte aligned, with their category and kind, in order per producer, none lost
 * (LOSSLESS), from one producer and from two at once; and every payload size from 16 to 300
 * bytes (the inline copy's cases: 16-31, 32-64, 65-256 bytes with overlapping moves, then
 * memcpy) arrives byte for byte. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "sdk_test.h"

/* the buffer is 16 KiB: chunks of 512 bytes, so 513 bytes and more span several chunks */
#define BUF_BYTES 16384
#define PER_PRODUCER 3000
static const size_t k_sizes[] = {48, 56, 60, 64, 100, 72, 500, 513, 1000, 64, 1500, 3000, 5000, 8184, 48, 4097};
#define NSIZES (sizeof k_sizes / sizeof k_sizes[0])

/* payload: size (0), kind (8), operation (12), correlation ids (16..31, patched by the SDK),
 * seq (32), producer (40), then a pattern derived from seq, producer and the offset */
typedef struct head {
    uint64_t size;
    uint32_t kind;
    int32_t operation;
    uint64_t corr[2];
    uint64_t seq, producer;
} head;

static omniprof_context_id_t g_ctx;
static omniprof_buffer_id_t g_buf;
static _Atomic uint64_t g_records, g_bytes;
static _Atomic int g_bad, g_disorder, g_init_ok;
static _Atomic int g_small; /* phase 3: records of every size, checked by size alone */
static _Atomic uint64_t g_small_records;
static uint64_t g_next[2]; /* only the callback thread touches these */

static unsigned char pattern(uint64_t seq, uint64_t producer, size_t off)
{
    return (unsigned char)(seq * 31 + producer * 7 + off);
}

/* Phase 3: bytes 8..size-1 of a record of `size` bytes, as small_record wrote them; bytes 24..31
 * (when size >= 32) carry the external correlation id the SDK writes for this kind (0 here). */
static void fill_small(unsigned char *p, size_t size)
{
    uint64_t sz = size;
    memcpy(p, &sz, 8);
    for (size_t off = 8; off < size; off++) p[off] = (unsigned char)(size * 13 + off);
    uint32_t kind = OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API;
    memcpy(p + 8, &kind, 4); /* the emit path reads the size only; kind for the reader's eyes */
}

static void check_small(const omniprof_record_header_t *h)
{
    const unsigned char *p = h->payload;
    uint64_t size;
    memcpy(&size, p, 8);
    unsigned char want[512];
    if (size < 16 || size > sizeof want || ((uintptr_t)p & 7)) {
        atomic_store(&g_bad, 1);
        return;
    }
    fill_small(want, size);
    if (size >= 32) memset(want + 24, 0, 8);
    if (memcmp(p, want, size) != 0) atomic_store(&g_bad, 1);
}

static void cb(omniprof_context_id_t ctx, omniprof_buffer_id_t buf, omniprof_record_header_t **h, size_t n,
               void *data, uint64_t drops)
{
    (void)ctx;
    (void)buf;
    (void)data;
    if (drops) atomic_store(&g_bad, 1);
    if (atomic_load(&g_small)) {
        for (size_t i = 0; i < n; i++) check_small(h[i]);
        atomic_fetch_add(&g_small_records, n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const head *r = h[i]->payload;
        if (h[i]->category != OMNIPROF_RECORD_CATEGORY_TRACING || h[i]->kind != OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API ||
            ((uintptr_t)r & 7) || r->producer > 1 || r->size != k_sizes[r->seq % NSIZES]) {
            atomic_store(&g_bad, 1);
            continue;
        }
        if (r->seq != g_next[r->producer]++) atomic_store(&g_disorder, 1);
        const unsigned char *p = (const unsigned char *)r;
        for (size_t off = sizeof(head); off < r->size; off++)
            if (p[off] != pattern(r->seq, r->producer, off)) {
                atomic_store(&g_bad, 1);
                break;
            }
        atomic_fetch_add(&g_bytes, r->size);
    }
    atomic_fetch_add(&g_records, n);
}

static int init(omniprof_client_finalize_t fini, void *data)
{
    (void)fini;
    (void)data;
    if (omniprof_create_context(&g_ctx) ||
        omniprof_create_buffer(g_ctx, BUF_BYTES, BUF_BYTES / 2, OMNIPROF_BUFFER_POLICY_LOSSLESS, cb, NULL, &g_buf) ||
        omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, NULL, 0, g_buf))
        return 1;
    atomic_store(&g_init_ok, 1);
    return 0;
}
SDK_TEST_TOOL(init)

static void *producer(void *arg)
{
    uint64_t id = (uint64_t)(uintptr_t)arg;
    static _Alignas(8) unsigned char storage[2][8192];
    unsigned char *buf = storage[id];
    for (uint64_t seq = 0; seq < PER_PRODUCER; seq++) {
        size_t size = k_sizes[seq % NSIZES];
        head h = {size, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, OMNIPROF_MARKER_RANGE_OP_MARK, {0, 0}, seq, id};
        memcpy(buf, &h, sizeof h);
        for (size_t off = sizeof h; off < size; off++) buf[off] = pattern(seq, id, off);
        op_sdk_emit(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, OMNIPROF_MARKER_RANGE_OP_MARK, buf, NULL);
    }
    return NULL;
}

static uint64_t expected_bytes(uint64_t producers)
{
    uint64_t sum = 0;
    for (uint64_t seq = 0; seq < PER_PRODUCER; seq++) sum += k_sizes[seq % NSIZES];
    return sum * producers;
}

int main(void)
{
    CHECK_ST(omniprof_initialize(), OMNIPROF_STATUS_SUCCESS);
    CHECK(atomic_load(&g_init_ok));
    omniprof_buffer_stats_t st = {.size = sizeof st};

    /* one producer, on the main thread */
    omniprof_start_context(g_ctx);
    producer((void *)0);
    CHECK_ST(omniprof_flush_buffer(g_buf), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(atomic_load(&g_records), PER_PRODUCER);
    CHECK_EQ_U(atomic_load(&g_bytes), expected_bytes(1));
    CHECK_EQ_U(g_next[0], PER_PRODUCER);

    /* two producers at once, each in its own order */
    g_next[0] = 0;
    pthread_t t[2];
    for (uintptr_t i = 0; i < 2; i++) pthread_create(&t[i], NULL, producer, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    omniprof_stop_context(g_ctx);
    CHECK_ST(omniprof_flush_buffer(g_buf), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(atomic_load(&g_records), 3 * PER_PRODUCER);
    CHECK_EQ_U(atomic_load(&g_bytes), expected_bytes(3));
    CHECK_EQ_U(g_next[0], PER_PRODUCER);
    CHECK_EQ_U(g_next[1], PER_PRODUCER);

    /* every size from 16 to 300 bytes, byte for byte */
    atomic_store(&g_small, 1);
    omniprof_start_context(g_ctx);
    uint64_t nsmall = 0;
    for (size_t size = 16; size <= 300; size++, nsmall++) {
        static _Alignas(8) unsigned char rec[512];
        fill_small(rec, size);
        op_sdk_emit(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, OMNIPROF_MARKER_RANGE_OP_MARK, rec, NULL);
    }
    omniprof_stop_context(g_ctx);
    CHECK_ST(omniprof_flush_buffer(g_buf), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(atomic_load(&g_small_records), nsmall);

    CHECK(!atomic_load(&g_bad));
    CHECK(!atomic_load(&g_disorder));
    CHECK_ST(omniprof_buffer_get_stats(g_buf, &st), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(st.records_dropped, 0);
    CHECK_EQ_U(st.records_too_big, 0);
    CHECK_EQ_U(st.records_delivered, 3 * PER_PRODUCER + nsmall);
    TEST_DONE();
}
