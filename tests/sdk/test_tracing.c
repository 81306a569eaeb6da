/* test_tracing.c — src/sdk/tracing.c and correlation.c: kind/operation names and iteration,
 * service configuration statuses, operation filters, callback tracing with per-call
 * user_data, argument iteration, correlation ids (ancestor, retirement with retain/release)
 * and external correlation stacks (push/pop, main-thread inheritance, async capture). */
#include <pthread.h>
#include <stdatomic.h>

#include "sdk_test.h"

static omniprof_context_id_t g_ctx, g_ctx2;
static omniprof_buffer_id_t g_buf, g_retire_buf;

#define MAXR 256
static struct {
    uint32_t kind;
    int32_t op;
    uint64_t external, internal;
    uint64_t seq;
} g_recs[MAXR];
static _Atomic int g_nrecs;
static uint64_t g_retired[MAXR];
static _Atomic int g_nretired;

static void cb(omniprof_context_id_t c, omniprof_buffer_id_t b, omniprof_record_header_t **h, size_t n, void *d,
               uint64_t drops)
{
    (void)c; (void)b; (void)d; (void)drops;
    for (size_t i = 0; i < n; i++) {
        if (h[i]->kind == OMNIPROF_BUFFER_TRACING_CORRELATION_ID_RETIREMENT) {
            const omniprof_buffer_tracing_correlation_id_retirement_record_t *r = h[i]->payload;
            int k = atomic_fetch_add(&g_nretired, 1);
            if (k < MAXR) g_retired[k] = r->internal_correlation_id;
            continue;
        }
        const test_rec *r = h[i]->payload;
        int k = atomic_fetch_add(&g_nrecs, 1);
        if (k < MAXR) {
            g_recs[k].kind = h[i]->kind;
            g_recs[k].op = r->operation;
            g_recs[k].internal = r->corr_internal;
            g_recs[k].external = r->corr_external;
            g_recs[k].seq = r->seq;
        }
    }
}

static int g_cb_enter, g_cb_exit, g_cb_notify, g_cb_bad_user_data;
static void cbt(omniprof_callback_tracing_record_t rec, omniprof_user_data_t *ud, void *data)
{
    CHECK(data == (void *)&g_cb_enter);
    CHECK(rec.context_id.handle == g_ctx.handle);
    if (rec.phase == OMNIPROF_CALLBACK_PHASE_ENTER) {
        g_cb_enter++;
        ud->value = 1000 + rec.correlation_id.internal;
    } else if (rec.phase == OMNIPROF_CALLBACK_PHASE_EXIT) {
        g_cb_exit++;
        if (ud->value != 1000 + rec.correlation_id.internal) g_cb_bad_user_data++;
    } else {
        g_cb_notify++;
    }
}

static int init(omniprof_client_finalize_t f, void *d)
{
    (void)f; (void)d;
    CHECK_ST(omniprof_create_context(&g_ctx), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_create_context(&g_ctx2), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_create_buffer(g_ctx, 1 << 16, 1 << 16, OMNIPROF_BUFFER_POLICY_LOSSLESS, cb, NULL, &g_buf),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_create_buffer(g_ctx2, 1 << 16, 1 << 16, OMNIPROF_BUFFER_POLICY_LOSSLESS, cb, NULL, &g_retire_buf),
             OMNIPROF_STATUS_SUCCESS);
    omniprof_tracing_operation_t ops[] = {OMNIPROF_MARKER_OP_MARK, OMNIPROF_MARKER_OP_RANGE_POP};
    omniprof_tracing_operation_t bad_ops[] = {OMNIPROF_MARKER_OP_MARK, OMNIPROF_MARKER_OP_LAST};
    omniprof_tracing_operation_t zero_op[] = {0};
    /* statuses */
    CHECK_ST(omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_NONE, NULL, 0, g_buf),
             OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND);
    CHECK_ST(omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_LAST, NULL, 0, g_buf),
             OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND);
    CHECK_ST(omniprof_configure_buffer_tracing_service(g_ctx, (omniprof_buffer_tracing_kind_t)-3, NULL, 0, g_buf),
             OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND);
    CHECK_ST(omniprof_configure_buffer_tracing_service(OMNIPROF_CONTEXT_NONE, OMNIPROF_BUFFER_TRACING_MARKER_API, NULL,
                                                        0, g_buf),
             OMNIPROF_STATUS_ERROR_CONTEXT_NOT_FOUND);
    CHECK_ST(omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_MARKER_API, NULL, 0,
                                                        (omniprof_buffer_id_t){3}),
             OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND);
    CHECK_ST(omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_MARKER_API, bad_ops, 2, g_buf),
             OMNIPROF_STATUS_ERROR_OPERATION_NOT_FOUND);
    CHECK_ST(omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_MARKER_API, zero_op, 1, g_buf),
             OMNIPROF_STATUS_ERROR_OPERATION_NOT_FOUND);
    CHECK_ST(omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_MARKER_API, NULL, 2, g_buf),
             OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_MARKER_API, ops, 2, g_buf),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_MARKER_API, NULL, 0, g_buf),
             OMNIPROF_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED);
    CHECK_ST(omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, NULL, 0, g_buf),
             OMNIPROF_STATUS_SUCCESS);
    /* retirement is its own context so its records do not mix with the others */
    CHECK_ST(omniprof_configure_buffer_tracing_service(g_ctx2, OMNIPROF_BUFFER_TRACING_CORRELATION_ID_RETIREMENT, NULL,
                                                        0, g_retire_buf),
             OMNIPROF_STATUS_SUCCESS);
    /* callback services */
    CHECK_ST(omniprof_configure_callback_tracing_service(g_ctx, OMNIPROF_CALLBACK_TRACING_MARKER_API, NULL, 0, NULL, NULL),
             OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_configure_callback_tracing_service(g_ctx, OMNIPROF_CALLBACK_TRACING_LAST, NULL, 0, cbt, NULL),
             OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND);
    CHECK_ST(omniprof_configure_callback_tracing_service(g_ctx, OMNIPROF_CALLBACK_TRACING_MARKER_API, bad_ops, 2, cbt,
                                                          NULL),
             OMNIPROF_STATUS_ERROR_OPERATION_NOT_FOUND);
    omniprof_tracing_operation_t mark_only[] = {OMNIPROF_MARKER_OP_MARK};
    CHECK_ST(omniprof_configure_callback_tracing_service(g_ctx, OMNIPROF_CALLBACK_TRACING_MARKER_API, mark_only, 1, cbt,
                                                          &g_cb_enter),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_configure_callback_tracing_service(g_ctx, OMNIPROF_CALLBACK_TRACING_MARKER_API, NULL, 0, cbt, NULL),
             OMNIPROF_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED);
    return 0;
}

SDK_TEST_TOOL(init)

static int count_kinds(omniprof_buffer_tracing_kind_t k, void *d)
{
    (void)k;
    (*(int *)d)++;
    return 0;
}
static int count_cb_kinds(omniprof_callback_tracing_kind_t k, void *d)
{
    (void)k;
    (*(int *)d)++;
    return 0;
}
static int stop_after_two(omniprof_buffer_tracing_kind_t k, void *d)
{
    (void)k;
    return ++(*(int *)d) == 2;
}
static int count_ops(omniprof_buffer_tracing_kind_t k, omniprof_tracing_operation_t op, void *d)
{
    const char *n = NULL;
    CHECK_ST(omniprof_query_buffer_tracing_kind_operation_name(k, op, &n, NULL), OMNIPROF_STATUS_SUCCESS);
    CHECK(n && n[0]);
    (*(int *)d)++;
    return 0;
}
static int count_cb_ops(omniprof_callback_tracing_kind_t k, omniprof_tracing_operation_t op, void *d)
{
    (void)k; (void)op;
    (*(int *)d)++;
    return 0;
}

static void emit_marker(uint32_t kind, int32_t op, uint64_t seq, const op_sdk_external *ext)
{
    test_rec r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = kind;
    r.operation = op;
    r.seq = seq;
    r.corr_internal = seq;
    r.corr_external = 0xdead; /* overwritten per context */
    op_sdk_emit(kind, op, &r, ext);
}

static int find_seq(uint64_t seq)
{
    int n = atomic_load(&g_nrecs);
    for (int i = 0; i < n && i < MAXR; i++)
        if (g_recs[i].seq == seq) return i;
    return -1;
}

typedef struct arg_seen {
    int n;
    char text[4][64];
} arg_seen;
static int on_arg(uint32_t kind, omniprof_tracing_operation_t op, uint32_t i, const omniprof_arg_t *a, const char *v,
                  void *d)
{
    (void)kind; (void)op; (void)a;
    arg_seen *s = d;
    if (i < 4) snprintf(s->text[i], sizeof s->text[i], "%s=%s", a->name, v);
    s->n++;
    return 0;
}

static void *other_thread(void *arg)
{
    (void)arg;
    /* never pushed: inherits the main thread's top */
    emit_marker(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, 1, 101, NULL);
    omniprof_thread_id_t tid;
    omniprof_get_thread_id(&tid);
    CHECK_ST(omniprof_push_external_correlation_id(g_ctx, tid, (omniprof_user_data_t){.value = 77}),
             OMNIPROF_STATUS_SUCCESS);
    emit_marker(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, 1, 102, NULL);
    CHECK_ST(omniprof_pop_external_correlation_id(g_ctx, tid, NULL), OMNIPROF_STATUS_SUCCESS);
    emit_marker(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, 1, 103, NULL); /* pushed before: own (empty) stack */
    return NULL;
}

int main(void)
{
    omniprof_initialize();
    /* ---- names ---- */
    const char *n = NULL;
    uint64_t len = 0;
    CHECK_ST(omniprof_query_buffer_tracing_kind_name(OMNIPROF_BUFFER_TRACING_MARKER_API, &n, &len),
             OMNIPROF_STATUS_SUCCESS);
    CHECK(n && strcmp(n, "MARKER_API") == 0 && len == 10);
    CHECK_ST(omniprof_query_buffer_tracing_kind_name(OMNIPROF_BUFFER_TRACING_LAST, &n, &len),
             OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND);
    CHECK_ST(omniprof_query_buffer_tracing_kind_name(OMNIPROF_BUFFER_TRACING_NONE, &n, &len),
             OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND);
    CHECK_ST(omniprof_query_buffer_tracing_kind_name(OMNIPROF_BUFFER_TRACING_MARKER_API, NULL, &len),
             OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_query_callback_tracing_kind_name(OMNIPROF_CALLBACK_TRACING_MARKER_API, &n, NULL),
             OMNIPROF_STATUS_SUCCESS);
    CHECK(strcmp(n, "MARKER_API") == 0);
    CHECK_ST(omniprof_query_callback_tracing_kind_name(OMNIPROF_CALLBACK_TRACING_LAST, &n, NULL),
             OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND);
    CHECK_ST(omniprof_query_buffer_tracing_kind_operation_name(OMNIPROF_BUFFER_TRACING_MARKER_API,
                                                               OMNIPROF_MARKER_OP_RANGE_PUSH, &n, &len),
             OMNIPROF_STATUS_SUCCESS);
    CHECK(strcmp(n, "omniprof_range_push") == 0 && len == strlen(n));
    CHECK_ST(omniprof_query_buffer_tracing_kind_operation_name(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API,
                                                               OMNIPROF_MARKER_RANGE_OP_THREAD_RANGE, &n, NULL),
             OMNIPROF_STATUS_SUCCESS);
    CHECK(strcmp(n, "thread_range") == 0);
    CHECK_ST(omniprof_query_buffer_tracing_kind_operation_name(OMNIPROF_BUFFER_TRACING_MARKER_API,
                                                               OMNIPROF_MARKER_OP_LAST, &n, NULL),
             OMNIPROF_STATUS_ERROR_OPERATION_NOT_FOUND);
    CHECK_ST(omniprof_query_buffer_tracing_kind_operation_name(OMNIPROF_BUFFER_TRACING_MARKER_API, 0, &n, NULL),
             OMNIPROF_STATUS_ERROR_OPERATION_NOT_FOUND);
    CHECK_ST(omniprof_query_buffer_tracing_kind_operation_name(OMNIPROF_BUFFER_TRACING_LAST, 1, &n, NULL),
             OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND);
    CHECK_ST(omniprof_query_callback_tracing_kind_operation_name(OMNIPROF_CALLBACK_TRACING_MARKER_API,
                                                                 OMNIPROF_MARKER_OP_MARK, &n, NULL),
             OMNIPROF_STATUS_SUCCESS);
    CHECK(strcmp(n, "omniprof_mark") == 0);

    /* ---- iteration ---- */
    int k = 0;
    CHECK_ST(omniprof_iterate_buffer_tracing_kinds(count_kinds, &k), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(k, OMNIPROF_BUFFER_TRACING_LAST - 1);
    k = 0;
    CHECK_ST(omniprof_iterate_buffer_tracing_kinds(stop_after_two, &k), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(k, 2);
    k = 0;
    CHECK_ST(omniprof_iterate_callback_tracing_kinds(count_cb_kinds, &k), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(k, OMNIPROF_CALLBACK_TRACING_LAST - 1);
    CHECK_ST(omniprof_iterate_buffer_tracing_kinds(NULL, NULL), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    k = 0;
    CHECK_ST(omniprof_iterate_buffer_tracing_kind_operations(OMNIPROF_BUFFER_TRACING_MARKER_API, count_ops, &k),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(k, OMNIPROF_MARKER_OP_LAST - 1);
    k = 0;
    CHECK_ST(omniprof_iterate_buffer_tracing_kind_operations(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, count_ops, &k),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(k, OMNIPROF_MARKER_RANGE_OP_LAST - 1);
    k = 0;
    CHECK_ST(omniprof_iterate_buffer_tracing_kind_operations(OMNIPROF_BUFFER_TRACING_CORRELATION_ID_RETIREMENT,
                                                             count_ops, &k),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(k, 0);
    CHECK_ST(omniprof_iterate_buffer_tracing_kind_operations(OMNIPROF_BUFFER_TRACING_LAST, count_ops, &k),
             OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND);
    k = 0;
    CHECK_ST(omniprof_iterate_callback_tracing_kind_operations(OMNIPROF_CALLBACK_TRACING_MARKER_API, count_cb_ops, &k),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(k, OMNIPROF_MARKER_OP_LAST - 1);

    /* ---- buffer services: operation filter (MARK and RANGE_POP only) ---- */
    omniprof_start_context(g_ctx);
    omniprof_start_context(g_ctx2);
    CHECK(op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK));
    CHECK(!op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_RANGE_PUSH));
    CHECK(op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_MARKER_API));
    CHECK(!op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_MEMORY_COPY));
    /* per operation: the filters' operations, never "every operation" for a filtered kind */
    CHECK(op_sdk_kind_op_configured(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK));
    CHECK(op_sdk_kind_op_configured(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_RANGE_POP));
    CHECK(!op_sdk_kind_op_configured(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_RANGE_PUSH));
    CHECK(!op_sdk_kind_op_configured(OMNIPROF_BUFFER_TRACING_MARKER_API, -1));
    CHECK(op_sdk_kind_op_configured(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, -1));
    CHECK(!op_sdk_kind_op_configured(OMNIPROF_BUFFER_TRACING_MEMORY_COPY, -1));
    for (int op = 1; op < OMNIPROF_MARKER_OP_LAST; op++) emit_marker(OMNIPROF_BUFFER_TRACING_MARKER_API, op, op, NULL);
    CHECK_ST(omniprof_flush_buffer(g_buf), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(atomic_load(&g_nrecs), 2);
    CHECK(find_seq(OMNIPROF_MARKER_OP_MARK) >= 0 && find_seq(OMNIPROF_MARKER_OP_RANGE_POP) >= 0);
    CHECK(g_recs[0].external == 0); /* patched: no external id pushed */

    /* ---- external correlation ---- */
    omniprof_thread_id_t me;
    omniprof_get_thread_id(&me);
    omniprof_user_data_t popped = {0};
    CHECK_ST(omniprof_pop_external_correlation_id(g_ctx, me, &popped), OMNIPROF_STATUS_ERROR);
    CHECK_ST(omniprof_push_external_correlation_id(OMNIPROF_CONTEXT_NONE, me, (omniprof_user_data_t){.value = 1}),
             OMNIPROF_STATUS_ERROR_CONTEXT_NOT_FOUND);
    CHECK_ST(omniprof_push_external_correlation_id(g_ctx, me + 1, (omniprof_user_data_t){.value = 1}),
             OMNIPROF_STATUS_ERROR_THREAD_NOT_FOUND);
    CHECK_ST(omniprof_push_external_correlation_id(g_ctx, me, (omniprof_user_data_t){.value = 41}),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_push_external_correlation_id(g_ctx, me, (omniprof_user_data_t){.value = 42}),
             OMNIPROF_STATUS_SUCCESS);
    emit_marker(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, 1, 100, NULL);
    op_sdk_external ext;
    op_sdk_external_capture(&ext); /* launch-time capture for async activity */
    CHECK_EQ_U(ext.count, 1);
    pthread_t t;
    pthread_create(&t, NULL, other_thread, NULL);
    pthread_join(t, NULL);
    CHECK_ST(omniprof_pop_external_correlation_id(g_ctx, me, &popped), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(popped.value, 42);
    emit_marker(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, 1, 104, NULL);
    emit_marker(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, 1, 105, &ext); /* async: the captured value */
    CHECK_ST(omniprof_pop_external_correlation_id(g_ctx, me, &popped), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(popped.value, 41);
    emit_marker(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, 1, 106, NULL);
    CHECK_ST(omniprof_flush_buffer(g_buf), OMNIPROF_STATUS_SUCCESS);
    static const uint64_t want_ext[][2] = {{100, 42}, {101, 42}, {102, 77}, {103, 0}, {104, 41}, {105, 42}, {106, 0}};
    for (size_t i = 0; i < sizeof want_ext / sizeof want_ext[0]; i++) {
        int j = find_seq(want_ext[i][0]);
        CHECK(j >= 0);
        if (j >= 0 && g_recs[j].external != want_ext[i][1]) {
            fprintf(stderr, "record %llu: external %llu, want %llu\n", (unsigned long long)want_ext[i][0],
                    (unsigned long long)g_recs[j].external, (unsigned long long)want_ext[i][1]);
            g_failures++;
        }
    }

    /* ---- callback tracing: filter (MARK only), ENTER/EXIT share user_data ---- */
    CHECK(op_sdk_callback_enabled(OMNIPROF_CALLBACK_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK));
    CHECK(!op_sdk_callback_enabled(OMNIPROF_CALLBACK_TRACING_MARKER_API, OMNIPROF_MARKER_OP_PAUSE));
    for (int i = 0; i < 3; i++) {
        omniprof_correlation_id_t corr;
        op_sdk_callback_state st;
        op_sdk_correlation_begin(&corr);
        op_sdk_callback_enter(OMNIPROF_CALLBACK_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK, &corr, NULL, &st);
        op_sdk_callback_exit(OMNIPROF_CALLBACK_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK, &corr, NULL, &st);
        op_sdk_callback_enter(OMNIPROF_CALLBACK_TRACING_MARKER_API, OMNIPROF_MARKER_OP_PAUSE, &corr, NULL, &st);
        op_sdk_callback_exit(OMNIPROF_CALLBACK_TRACING_MARKER_API, OMNIPROF_MARKER_OP_PAUSE, &corr, NULL, &st);
        op_sdk_correlation_end(&corr);
    }
    op_sdk_callback_notify(OMNIPROF_CALLBACK_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK, OMNIPROF_CALLBACK_PHASE_NONE,
                           NULL, NULL);
    CHECK_EQ_U(g_cb_enter, 3);
    CHECK_EQ_U(g_cb_exit, 3);
    CHECK_EQ_U(g_cb_notify, 1);
    CHECK_EQ_U(g_cb_bad_user_data, 0);

    /* ---- correlation ids: ancestor, retirement ---- */
    CHECK_ST(omniprof_flush_buffer(g_retire_buf), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(atomic_load(&g_nretired), 3); /* the three calls above */
    atomic_store(&g_nretired, 0);
    omniprof_correlation_id_t a, b;
    op_sdk_correlation_begin(&a);
    op_sdk_correlation_begin(&b);
    CHECK(a.internal != 0 && b.internal > a.internal);
    CHECK_EQ_U(a.ancestor, 0);
    CHECK_EQ_U(b.ancestor, a.internal);
    op_sdk_correlation_retain(b.internal); /* an async record will carry b */
    op_sdk_correlation_end(&b);
    op_sdk_correlation_end(&a);
    CHECK_ST(omniprof_flush_buffer(g_retire_buf), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(atomic_load(&g_nretired), 1);
    CHECK_EQ_U(g_retired[0], a.internal);
    op_sdk_correlation_release(b.internal);
    CHECK_ST(omniprof_flush_buffer(g_retire_buf), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(atomic_load(&g_nretired), 2);
    CHECK_EQ_U(g_retired[1], b.internal);
    /* a dangling id is retired at finalization */
    omniprof_correlation_id_t c;
    op_sdk_correlation_begin(&c);
    op_sdk_correlation_retain(c.internal);
    op_sdk_correlation_end(&c);

    /* ---- argument iteration ---- */
    struct {
        omniprof_buffer_tracing_api_record_t r;
        omniprof_arg_t args[2];
    } api;
    memset(&api, 0, sizeof api);
    api.r.size = sizeof api;
    api.r.kind = OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER;
    api.r.num_args = 2;
    api.args[0] = (omniprof_arg_t){.name = "bytes", .type = OMNIPROF_ARG_TYPE_UINT, .value.u64 = 4096};
    api.args[1] = (omniprof_arg_t){.name = "path", .type = OMNIPROF_ARG_TYPE_STRING, .value.str = "/tmp/x"};
    omniprof_record_header_t h = {.category = OMNIPROF_RECORD_CATEGORY_TRACING,
                                  .kind = OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER, .payload = &api};
    arg_seen seen = {0};
    if (op_sdk_backend_for_kind(OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER) &&
        !op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER)) {
        CHECK_ST(omniprof_iterate_buffer_tracing_record_args(&h, on_arg, &seen), OMNIPROF_STATUS_SUCCESS);
        CHECK_EQ_U(seen.n, 2);
        CHECK(strcmp(seen.text[0], "bytes=4096") == 0 && strcmp(seen.text[1], "path=/tmp/x") == 0);
    }
    /* callback records: an API payload gives its decoded args; a RECORD payload (kinds.def:
     * KERNEL_DISPATCH at ENQUEUE carries a dispatch record) is read as that record, never as
     * an API payload */
    omniprof_callback_tracing_api_data_t cbd = {.size = sizeof cbd, .num_args = 2, .decoded_args = api.args};
    omniprof_callback_tracing_record_t cbr = {.kind = OMNIPROF_CALLBACK_TRACING_FUNCTION_WRAPPER, .payload = &cbd};
    memset(&seen, 0, sizeof seen);
    CHECK_ST(omniprof_iterate_callback_tracing_record_args(&cbr, on_arg, &seen), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(seen.n, 2);
    omniprof_buffer_tracing_kernel_dispatch_record_t kd;
    memset(&kd, 0xff, sizeof kd); /* as an API payload this would be a wild decoded_args pointer */
    kd.size = sizeof kd;
    kd.kind = OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH;
    cbr.kind = OMNIPROF_CALLBACK_TRACING_KERNEL_DISPATCH;
    cbr.payload = &kd;
    CHECK_ST(omniprof_iterate_callback_tracing_record_args(&cbr, on_arg, &seen), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_iterate_buffer_tracing_record_args(NULL, on_arg, &seen), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    h.kind = OMNIPROF_BUFFER_TRACING_LAST;
    CHECK_ST(omniprof_iterate_buffer_tracing_record_args(&h, on_arg, &seen), OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND);

    atomic_store(&g_nretired, 0);
    omniprof_finalize();
    CHECK_EQ_U(atomic_load(&g_nretired), 1);
    CHECK_EQ_U(g_retired[0], c.internal);
    TEST_DONE();
}
