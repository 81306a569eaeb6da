/* test_emit_route_race.c — src/sdk/tracing.c's route per kind under concurrency: two emitter
 * threads emit without pause (both rebuilding the kind's route at once after each change) while
 * the main thread starts and stops a second context of the same kind, pauses and resumes
 * collection, and stops and starts the first context (its route in use), and sends the emitters
 * signals whose handlers emit (op_sdk_emit_from_signal, into a buffer of its own) while they are
 * inside the shortcut or rebuilding. After each change the main thread waits until each
 * emitter has seen it (a handshake: the emitter stores the
 * seq of its next record, release; the main thread loads it, acquire): from that record on, the
 * change must be in effect (the route built before it is stale) — every record reaches exactly
 * the buffers of the contexts that want it, once, byte for byte. Records emitted between a
 * change and its handshake may go either way. The signal handlers' records are all accounted
 * for (delivered + dropped as interrupted = emitted). */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "sdk_test.h"

#define MAGIC 0x7ace
#define ROUNDS 150
#define NEMIT 2
#define MAXSEQ (1u << 21) /* per emitter */
enum { B_A, B_B, B_S, B_N };  /* A: RANGE (always on); B: RANGE (toggled); S: MARKER from signals */

static omniprof_context_id_t g_ctx[B_N];
static omniprof_buffer_id_t g_buf[B_N];
static _Atomic int g_init_ok;
static _Atomic uint8_t g_seen[2][NEMIT][MAXSEQ]; /* [A or B][emitter][seq]: deliveries */
static _Atomic int g_bad;
static _Atomic uint64_t g_sig_got, g_sig_emitted;

typedef struct rec {
    uint64_t size;
    uint32_t kind;
    int32_t op;
    uint64_t corr_internal, corr_external;
    uint64_t seq, producer;
    uint64_t check[4]; /* seq * 7 + i */
} rec;

static void cb(omniprof_context_id_t c, omniprof_buffer_id_t b, omniprof_record_header_t **h, size_t n, void *data,
               uint64_t drops)
{
    (void)c; (void)b; (void)drops;
    int which = (int)(intptr_t)data;
    for (size_t i = 0; i < n; i++) {
        const rec *r = h[i]->payload;
        if (which == B_S) {
            if (r->size == sizeof *r && (r->producer >> 8) == MAGIC) atomic_fetch_add(&g_sig_got, 1);
            continue;
        }
        if (r->size != sizeof *r || (r->producer >> 8) != MAGIC) continue; /* a pause's own marker */
        uint64_t e = r->producer & 0xff;
        int ok = e < NEMIT && r->seq < MAXSEQ && r->corr_external == 0;
        for (int k = 0; ok && k < 4; k++) ok = r->check[k] == r->seq * 7 + (uint64_t)k;
        if (!ok || atomic_fetch_add(&g_seen[which][e][r->seq], 1) != 0) atomic_fetch_add(&g_bad, 1);
    }
}

static int init(omniprof_client_finalize_t f, void *d)
{
    (void)f; (void)d;
    for (int i = 0; i < B_N; i++)
        if (omniprof_create_context(&g_ctx[i]) ||
            omniprof_create_buffer(g_ctx[i], 1 << 20, 1 << 19, OMNIPROF_BUFFER_POLICY_LOSSLESS, cb,
                                   (void *)(intptr_t)i, &g_buf[i]))
            return 1;
    for (int i = B_A; i <= B_B; i++)
        if (omniprof_configure_buffer_tracing_service(g_ctx[i], OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, NULL, 0,
                                                      g_buf[i]))
            return 1;
    if (omniprof_configure_buffer_tracing_service(g_ctx[B_S], OMNIPROF_BUFFER_TRACING_MARKER_API, NULL, 0, g_buf[B_S]))
        return 1;
    atomic_store(&g_init_ok, 1);
    return 0;
}
SDK_TEST_TOOL(init)

static rec make(uint32_t kind, uint64_t seq, uint64_t e)
{
    rec r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = kind;
    r.op = 1;
    r.corr_external = 0xdead; /* the SDK writes 0 here: no external id */
    r.seq = seq;
    r.producer = (uint64_t)MAGIC << 8 | e;
    for (int k = 0; k < 4; k++) r.check[k] = seq * 7 + (uint64_t)k;
    return r;
}

static void on_signal(int sig)
{
    (void)sig;
    rec r = make(OMNIPROF_BUFFER_TRACING_MARKER_API, 0, 0);
    atomic_fetch_add(&g_sig_emitted, 1);
    op_sdk_emit_from_signal(OMNIPROF_BUFFER_TRACING_MARKER_API, 1, &r);
}

static _Atomic int g_req, g_stop;
static _Atomic int g_ack[NEMIT];
static _Atomic uint64_t g_ack_seq[NEMIT], g_done[NEMIT];

static void *emitter(void *arg)
{
    uint64_t e = (uint64_t)(intptr_t)arg, seq = 0;
    while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
        int q = atomic_load_explicit(&g_req, memory_order_acquire);
        if (q != atomic_load_explicit(&g_ack[e], memory_order_relaxed)) {
            atomic_store_explicit(&g_ack_seq[e], seq, memory_order_relaxed);
            atomic_store_explicit(&g_ack[e], q, memory_order_release);
        }
        if (seq % 128 == 127) sched_yield(); /* the main thread's changes come often enough */
        if (seq >= MAXSEQ) continue;
        rec r = make(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, seq++, e);
        op_sdk_emit(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, 1, &r, NULL);
        atomic_store_explicit(&g_done[e], seq, memory_order_release); /* records < seq are emitted */
    }
    return NULL;
}

/* Step k: records [g_from[k][e], g_until[k][e]) of emitter e were emitted after it saw change
 * k and before change k + 1 was made: they must reach the buffers of g_want[k] (bit 0 A, bit
 * 1 B). The others (emitted while a change was under way) may go either way. */
#define NSTEP (ROUNDS * 6 + 1)
static uint8_t g_want[NSTEP];
static uint64_t g_from[NSTEP][NEMIT], g_until[NSTEP][NEMIT];

int main(void)
{
    CHECK_ST(omniprof_initialize(), OMNIPROF_STATUS_SUCCESS);
    CHECK(atomic_load(&g_init_ok));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    CHECK_ST(omniprof_start_context(g_ctx[B_A]), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_start_context(g_ctx[B_S]), OMNIPROF_STATUS_SUCCESS);
    pthread_t th[NEMIT];
    for (int e = 0; e < NEMIT; e++) CHECK(pthread_create(&th[e], NULL, emitter, (void *)(intptr_t)e) == 0);

    int step = 0;
    for (int round = 0; round < ROUNDS; round++) {
        for (int s = 0; s < 6; s++) {
            uint8_t want;
            for (int e = 0; e < NEMIT; e++) g_until[step][e] = atomic_load_explicit(&g_done[e], memory_order_acquire);
            switch (s) {
            case 0: CHECK_ST(omniprof_start_context(g_ctx[B_B]), OMNIPROF_STATUS_SUCCESS); want = 3; break;
            case 1: CHECK_ST(omniprof_stop_context(g_ctx[B_B]), OMNIPROF_STATUS_SUCCESS); want = 1; break;
            case 2: op_sdk_set_paused(1); want = 0; break;
            case 3: op_sdk_set_paused(0); want = 1; break;
            case 4: CHECK_ST(omniprof_stop_context(g_ctx[B_A]), OMNIPROF_STATUS_SUCCESS); want = 0; break;
            default: CHECK_ST(omniprof_start_context(g_ctx[B_A]), OMNIPROF_STATUS_SUCCESS); want = 1; break;
            }
            step++;
            atomic_store_explicit(&g_req, step, memory_order_release);
            for (int e = 0; e < NEMIT; e++) {
                for (int spin = 0; atomic_load_explicit(&g_ack[e], memory_order_acquire) != step; spin++) {
                    if (spin % 64 == 0) pthread_kill(th[e], SIGUSR1);
                    sched_yield();
                }
                g_from[step][e] = atomic_load_explicit(&g_ack_seq[e], memory_order_relaxed);
            }
            g_want[step] = want;
        }
    }
    atomic_store(&g_stop, 1);
    for (int e = 0; e < NEMIT; e++) pthread_join(th[e], NULL);
    for (int i = 0; i < B_N; i++) CHECK_ST(omniprof_flush_buffer(g_buf[i]), OMNIPROF_STATUS_SUCCESS);

    CHECK_EQ_U(atomic_load(&g_bad), 0);
    for (int e = 0; e < NEMIT; e++) g_until[step][e] = atomic_load(&g_done[e]);
    uint64_t wrong = 0, checked = 0;
    for (int k = 1; k <= step; k++)
        for (int e = 0; e < NEMIT; e++)
            for (uint64_t q = g_from[k][e]; q < g_until[k][e] && q < MAXSEQ; q++, checked++)
                for (int w = 0; w < 2; w++)
                    if ((atomic_load(&g_seen[w][e][q]) != 0) != ((g_want[k] >> w) & 1) && wrong++ < 10)
                        fprintf(stderr, "step %d (want %u) emitter %d record %llu: %s buffer %s\n", k, g_want[k], e,
                                (unsigned long long)q, atomic_load(&g_seen[w][e][q]) ? "reached" : "missed",
                                w ? "B" : "A");
    CHECK_EQ_U(wrong, 0);
    CHECK(checked > 0);
    fprintf(stderr, "%llu records checked, %llu signal records\n", (unsigned long long)checked,
            (unsigned long long)atomic_load(&g_sig_got));
    omniprof_buffer_stats_t st = {.size = sizeof st};
    CHECK_ST(omniprof_buffer_get_stats(g_buf[B_S], &st), OMNIPROF_STATUS_SUCCESS);
    /* a handler's record is delivered or counted as dropped, or it came while paused (neither) */
    CHECK(atomic_load(&g_sig_got) + st.records_dropped <= atomic_load(&g_sig_emitted));
    for (int i = B_A; i <= B_B; i++) {
        CHECK_ST(omniprof_buffer_get_stats(g_buf[i], &st), OMNIPROF_STATUS_SUCCESS);
        CHECK_EQ_U(st.records_dropped + st.records_too_big, 0);
    }
    TEST_DONE();
}
