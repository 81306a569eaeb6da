/* test_emit_shortcut.c — src/sdk/tracing.c's shortcut for one wanting buffer (g_op_solo,
 * op_buffer_emplace_fast) never goes stale: between emits, contexts started and stopped, a
 * second context of the same kind, an operation filter, an external correlation id pushed and
 * popped (and one captured by the caller), a pause and a resume each change what gets recorded,
 * exactly as the full path would; payloads of 16-300 bytes (the shortcut takes 16-256) arrive
 * byte for byte with the external id written at offset 24 of a kind that carries one, and
 * untouched in a kind that does not; records from a second thread take the same routes. */
#include <pthread.h>
#include <stdatomic.h>

#include "sdk_test.h"

#define MAGIC 0x5eedull
#define MAXR 2048
enum { B_A, B_B, B_F, B_N };

static omniprof_context_id_t g_ctx[B_N];
static omniprof_buffer_id_t g_buf[B_N];
static _Atomic int g_init_ok;

typedef struct got {
    uint32_t kind;
    int32_t op;
    uint64_t seq, external, size;
    int bytes_ok;
} got;
static got g_got[B_N][MAXR];
static _Atomic int g_ngot[B_N];

/* payload bytes 48.. of a record of `size` bytes (seq, size and the offset decide them) */
static unsigned char pattern(uint64_t seq, uint64_t size, size_t off) { return (unsigned char)(seq * 29 + size * 3 + off); }

static void cb(omniprof_context_id_t c, omniprof_buffer_id_t b, omniprof_record_header_t **h, size_t n, void *data,
               uint64_t drops)
{
    (void)c; (void)b; (void)drops;
    int which = (int)(intptr_t)data;
    for (size_t i = 0; i < n; i++) {
        const test_rec *r = h[i]->payload;
        uint64_t size = r->size;
        /* only this test's records (a pause also records a marker of its own) */
        if (size < 48 ? size < 16 || ((const uint32_t *)r)[3] != (uint32_t)MAGIC : r->producer != MAGIC) continue;
        int k = atomic_fetch_add(&g_ngot[which], 1);
        if (k >= MAXR) continue;
        got *g = &g_got[which][k];
        g->kind = h[i]->kind;
        g->size = size;
        g->op = size >= 48 ? r->operation : 0;
        g->seq = size >= 48 ? r->seq : ((const uint32_t *)r)[2];
        g->external = size >= 32 ? r->corr_external : 0;
        g->bytes_ok = 1;
        const unsigned char *p = (const unsigned char *)r;
        for (size_t off = 48; off < size; off++)
            if (p[off] != pattern(g->seq, size, off)) g->bytes_ok = 0;
    }
}

static int init(omniprof_client_finalize_t f, void *d)
{
    (void)f; (void)d;
    omniprof_tracing_operation_t only_mark[] = {OMNIPROF_MARKER_OP_MARK};
    for (int i = 0; i < B_N; i++)
        if (omniprof_create_context(&g_ctx[i]) ||
            omniprof_create_buffer(g_ctx[i], 1 << 16, 1 << 16, OMNIPROF_BUFFER_POLICY_LOSSLESS, cb, (void *)(intptr_t)i,
                                   &g_buf[i]))
            return 1;
    /* A: RANGE, MARKER and CODE_OBJECT (no correlation id) unfiltered; B: RANGE; F: MARKER, MARK only */
    if (omniprof_configure_buffer_tracing_service(g_ctx[B_A], OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, NULL, 0,
                                                  g_buf[B_A]) ||
        omniprof_configure_buffer_tracing_service(g_ctx[B_A], OMNIPROF_BUFFER_TRACING_MARKER_API, NULL, 0, g_buf[B_A]) ||
        omniprof_configure_buffer_tracing_service(g_ctx[B_A], OMNIPROF_BUFFER_TRACING_CODE_OBJECT, NULL, 0, g_buf[B_A]) ||
        omniprof_configure_buffer_tracing_service(g_ctx[B_B], OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, NULL, 0,
                                                  g_buf[B_B]) ||
        omniprof_configure_buffer_tracing_service(g_ctx[B_F], OMNIPROF_BUFFER_TRACING_MARKER_API, only_mark, 1,
                                                  g_buf[B_F]))
        return 1;
    atomic_store(&g_init_ok, 1);
    return 0;
}
SDK_TEST_TOOL(init)

/* A record of `size` bytes: size, kind, operation, (internal, external = 0xdead), seq, MAGIC,
 * then the pattern; below 48 bytes seq and MAGIC sit at bytes 8 and 12 instead. */
static void emit(uint32_t kind, int32_t op, uint64_t seq, uint64_t size, const op_sdk_external *ext)
{
    static __thread _Alignas(8) unsigned char p[512];
    memset(p, 0, sizeof p);
    if (size >= 48) {
        test_rec r = test_rec_make(kind, op, seq, MAGIC);
        r.corr_external = 0xdead; /* the SDK writes the external id here (kinds with a correlation id) */
        memcpy(p, &r, 48);
        for (size_t off = 48; off < size; off++) p[off] = pattern(seq, size, off);
    } else {
        uint32_t w[2] = {(uint32_t)seq, (uint32_t)MAGIC};
        memcpy(p + 8, w, 8);
        if (size >= 32) memset(p + 24, 0xad, 8);
    }
    memcpy(p, &size, 8);
    op_sdk_emit(kind, op, p, ext);
}
/* Twice, as seq and seq + TWIN: the first record after a change takes the full path (it rebuilds
 * the kind's route), the second the route; both must go where the full path sends them. */
#define TWIN 5000
static void emit64(uint32_t kind, int32_t op, uint64_t seq)
{
    emit(kind, op, seq, 64, NULL);
    emit(kind, op, seq + TWIN, 64, NULL);
}

static void flush_all(void)
{
    for (int i = 0; i < B_N; i++) CHECK_ST(omniprof_flush_buffer(g_buf[i]), OMNIPROF_STATUS_SUCCESS);
}

/* the record of `seq` in buffer `which`, NULL if it has none (a second copy fails the check) */
static const got *find(int which, uint64_t seq)
{
    const got *hit = NULL;
    int n = atomic_load(&g_ngot[which]);
    for (int i = 0; i < n && i < MAXR; i++)
        if (g_got[which][i].seq == seq) {
            CHECK(hit == NULL);
            hit = &g_got[which][i];
        }
    return hit;
}

/* seq went exactly to the buffers of `mask` (bit i: buffer i) */
#define WENT_TO1(seq, mask)                                                                                        \
    do {                                                                                                           \
        for (int i_ = 0; i_ < B_N; i_++)                                                                           \
            if ((find(i_, (seq)) != NULL) != (((mask) >> i_) & 1)) {                                               \
                fprintf(stderr, "%s:%d: record %d %s buffer %d\n", __FILE__, __LINE__, (int)(seq),                 \
                        find(i_, (seq)) ? "reached" : "missed", i_);                                               \
                g_failures++;                                                                                      \
            }                                                                                                      \
    } while (0)
/* the same for both records of an emit64 */
#define WENT_TO(seq, mask)                                                                                         \
    do {                                                                                                           \
        WENT_TO1((seq), (mask));                                                                                   \
        WENT_TO1((seq) + TWIN, (mask));                                                                            \
    } while (0)

static void *second_thread(void *arg)
{
    (void)arg;
    emit64(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, OMNIPROF_MARKER_RANGE_OP_MARK, 40); /* A and B */
    CHECK_ST(omniprof_stop_context(g_ctx[B_B]), OMNIPROF_STATUS_SUCCESS);
    emit64(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, OMNIPROF_MARKER_RANGE_OP_MARK, 41); /* A */
    return NULL;
}

int main(void)
{
    CHECK_ST(omniprof_initialize(), OMNIPROF_STATUS_SUCCESS);
    CHECK(atomic_load(&g_init_ok));
    const uint32_t RANGE = OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, MARKER = OMNIPROF_BUFFER_TRACING_MARKER_API;
    const int32_t RMARK = OMNIPROF_MARKER_RANGE_OP_MARK;

    /* contexts started (1) and stopped (0) between emits: record seq follows the step */
    static const struct {
        int which, on;
        uint64_t seq;
    } k_steps[] = {{B_A, 1, 1}, {B_B, 1, 2}, {B_A, 0, 3}, {B_B, 0, 4}, {B_B, 1, 5}, {B_B, 0, 6}};
    for (size_t i = 0; i < sizeof k_steps / sizeof k_steps[0]; i++) {
        CHECK_ST((k_steps[i].on ? omniprof_start_context : omniprof_stop_context)(g_ctx[k_steps[i].which]),
                 OMNIPROF_STATUS_SUCCESS);
        emit64(RANGE, RMARK, k_steps[i].seq);
    }
    CHECK_ST(omniprof_start_context(g_ctx[B_B]), OMNIPROF_STATUS_SUCCESS);

    /* an operation filter: F alone wants MARKER (MARK only), then with A, then A alone */
    CHECK_ST(omniprof_start_context(g_ctx[B_F]), OMNIPROF_STATUS_SUCCESS);
    emit64(MARKER, OMNIPROF_MARKER_OP_MARK, 10);
    emit64(MARKER, OMNIPROF_MARKER_OP_RANGE_PUSH, 11);
    CHECK_ST(omniprof_start_context(g_ctx[B_A]), OMNIPROF_STATUS_SUCCESS);
    emit64(MARKER, OMNIPROF_MARKER_OP_RANGE_PUSH, 12);
    emit64(MARKER, OMNIPROF_MARKER_OP_MARK, 13);
    CHECK_ST(omniprof_stop_context(g_ctx[B_F]), OMNIPROF_STATUS_SUCCESS);
    emit64(MARKER, OMNIPROF_MARKER_OP_RANGE_PUSH, 14);
    CHECK_ST(omniprof_stop_context(g_ctx[B_B]), OMNIPROF_STATUS_SUCCESS);

    /* paused, resumed (A alone wants RANGE: its route was in use) */
    emit64(RANGE, RMARK, 29);
    op_sdk_set_paused(1);
    emit64(RANGE, RMARK, 30);
    op_sdk_set_paused(0);
    emit64(RANGE, RMARK, 31);

    /* a second thread: B started for it, stopped by it between its two records */
    CHECK_ST(omniprof_start_context(g_ctx[B_B]), OMNIPROF_STATUS_SUCCESS);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, second_thread, NULL) == 0);
    pthread_join(th, NULL);

    /* every size from 16 to 300 bytes, A alone: RANGE carries a correlation id, CODE_OBJECT none */
    for (uint64_t size = 16; size <= 300; size++) {
        emit(RANGE, RMARK, 1000 + size, size, NULL);
        emit(OMNIPROF_BUFFER_TRACING_CODE_OBJECT, 0, 2000 + size, size, NULL);
    }
    /* external correlation, last (from the first push on, records of kinds with a correlation id
     * take the full path): pushed, captured by the caller, popped (A alone wants RANGE) */
    omniprof_thread_id_t tid;
    CHECK_ST(omniprof_get_thread_id(&tid), OMNIPROF_STATUS_SUCCESS);
    emit64(RANGE, RMARK, 20);
    CHECK_ST(omniprof_push_external_correlation_id(g_ctx[B_A], tid, (omniprof_user_data_t){.value = 55}),
             OMNIPROF_STATUS_SUCCESS);
    emit64(RANGE, RMARK, 21);
    op_sdk_external captured;
    op_sdk_external_capture(&captured);
    CHECK_ST(omniprof_pop_external_correlation_id(g_ctx[B_A], tid, NULL), OMNIPROF_STATUS_SUCCESS);
    emit64(RANGE, RMARK, 22);
    emit(RANGE, RMARK, 23, 64, &captured);

    flush_all();

    WENT_TO(1, 1u << B_A);
    WENT_TO(2, 1u << B_A | 1u << B_B);
    WENT_TO(3, 1u << B_B);
    WENT_TO(4, 0u);
    WENT_TO(5, 1u << B_B);
    WENT_TO(6, 0u);
    WENT_TO(10, 1u << B_F);
    WENT_TO(11, 0u);
    WENT_TO(12, 1u << B_A);
    WENT_TO(13, 1u << B_A | 1u << B_F);
    WENT_TO(14, 1u << B_A);
    for (uint64_t s = 20; s <= 22; s++) WENT_TO(s, 1u << B_A);
    WENT_TO1(23, 1u << B_A);
    const got *g;
    for (uint64_t twin = 0; twin <= TWIN; twin += TWIN) {
        if ((g = find(B_A, 20 + twin))) CHECK_EQ_U(g->external, 0);
        if ((g = find(B_A, 21 + twin))) CHECK_EQ_U(g->external, 55);
        if ((g = find(B_A, 22 + twin))) CHECK_EQ_U(g->external, 0);
    }
    if ((g = find(B_A, 23))) CHECK_EQ_U(g->external, 55);
    WENT_TO(29, 1u << B_A);
    WENT_TO(30, 0u);
    WENT_TO(31, 1u << B_A);
    WENT_TO(40, 1u << B_A | 1u << B_B);
    WENT_TO(41, 1u << B_A);
    for (uint64_t size = 16; size <= 300; size++) {
        for (int k = 0; k < 2; k++) {
            uint64_t seq = (k ? 2000 : 1000) + size;
            WENT_TO1(seq, 1u << B_A);
            if (!(g = find(B_A, seq))) continue;
            CHECK_EQ_U(g->size, size);
            CHECK_EQ_U(g->kind, k ? OMNIPROF_BUFFER_TRACING_CODE_OBJECT : RANGE);
            CHECK(g->bytes_ok);
            /* offset 24: the external id (0) for RANGE, the payload's own bytes for CODE_OBJECT */
            if (size >= 32) CHECK_EQ_U(g->external, k ? (size >= 48 ? 0xdead : 0xadadadadadadadadull) : 0);
        }
    }
    omniprof_buffer_stats_t st = {.size = sizeof st};
    CHECK_ST(omniprof_buffer_get_stats(g_buf[B_A], &st), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(st.records_dropped + st.records_too_big, 0);
    CHECK_EQ_U(st.records_delivered, st.records_committed);
    TEST_DONE();
}
