/* test_context.c — src/sdk/context.c: the context state machine and its statuses, stale ids,
 * the context limit, configuration after the lock, and that only active contexts receive. */
#include <stdatomic.h>

#include "sdk_test.h"

static omniprof_context_id_t g_a, g_b;
static omniprof_buffer_id_t g_buf;
static _Atomic uint64_t g_got;
static int g_created = 2, g_limit_status = -1;

static int init(omniprof_client_finalize_t f, void *d)
{
    (void)f; (void)d;
    CHECK_ST(omniprof_create_context(NULL), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_create_context(&g_a), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_create_context(&g_b), OMNIPROF_STATUS_SUCCESS);
    CHECK(g_a.handle != 0 && g_b.handle != 0 && g_a.handle != g_b.handle);
    CHECK_ST(omniprof_create_buffer(g_a, 4096, 4096, OMNIPROF_BUFFER_POLICY_LOSSLESS, test_count_cb, (void *)&g_got, &g_buf),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_configure_buffer_tracing_service(g_a, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, NULL, 0, g_buf),
             OMNIPROF_STATUS_SUCCESS);
    /* contexts may start during initialize */
    CHECK_ST(omniprof_start_context(g_b), OMNIPROF_STATUS_SUCCESS);
    /* the limit: OP_SDK_MAX_CONTEXTS per process */
    omniprof_context_id_t c;
    omniprof_status_t st;
    while ((st = omniprof_create_context(&c)) == OMNIPROF_STATUS_SUCCESS) g_created++;
    g_limit_status = st;
    return 0;
}

SDK_TEST_TOOL(init)

int main(void)
{
    CHECK_ST(omniprof_initialize(), OMNIPROF_STATUS_SUCCESS);
    int init_done = 0;
    CHECK_ST(omniprof_is_initialized(&init_done), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(init_done, 1);
    CHECK_EQ_U(g_created, OP_SDK_MAX_CONTEXTS);
    CHECK_EQ_U(g_limit_status, OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES);

    int s = -1;
    CHECK_ST(omniprof_context_is_active(g_a, &s), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(s, 0);
    CHECK_ST(omniprof_context_is_active(g_b, &s), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(s, 1);
    CHECK_ST(omniprof_context_is_active(g_a, NULL), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_context_is_valid(g_a, &s), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(s, 1);

    /* stale / foreign ids */
    omniprof_context_id_t bad[] = {OMNIPROF_CONTEXT_NONE, {1}, {g_a.handle - 1}, {g_a.handle + 1000}, {UINT64_MAX}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_ST(omniprof_context_is_valid(bad[i], &s), OMNIPROF_STATUS_SUCCESS);
        CHECK_EQ_U(s, 0);
        CHECK_ST(omniprof_start_context(bad[i]), OMNIPROF_STATUS_ERROR_CONTEXT_NOT_FOUND);
        CHECK_ST(omniprof_stop_context(bad[i]), OMNIPROF_STATUS_ERROR_CONTEXT_NOT_FOUND);
        CHECK_ST(omniprof_context_is_active(bad[i], &s), OMNIPROF_STATUS_ERROR_CONTEXT_NOT_FOUND);
    }

    /* configuration is locked */
    omniprof_context_id_t c;
    CHECK_ST(omniprof_create_context(&c), OMNIPROF_STATUS_ERROR_CONFIGURATION_LOCKED);
    CHECK_ST(omniprof_configure_buffer_tracing_service(g_b, OMNIPROF_BUFFER_TRACING_MARKER_API, NULL, 0, g_buf),
             OMNIPROF_STATUS_ERROR_CONFIGURATION_LOCKED);

    /* inactive -> nothing; active -> records; start/stop are idempotent */
    test_emit(0, 7);
    CHECK_ST(omniprof_start_context(g_a), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_start_context(g_a), OMNIPROF_STATUS_SUCCESS);
    test_emit(1, 7);
    test_emit(2, 7);
    CHECK_ST(omniprof_stop_context(g_a), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_stop_context(g_a), OMNIPROF_STATUS_SUCCESS);
    test_emit(3, 7);
    CHECK_ST(omniprof_flush_buffer(g_buf), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(atomic_load(&g_got), 2);
    CHECK_ST(omniprof_context_is_active(g_a, &s), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(s, 0);

    /* after finalization contexts cannot start and report inactive */
    CHECK_ST(omniprof_finalize(), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_start_context(g_a), OMNIPROF_STATUS_ERROR_FINALIZED);
    CHECK_ST(omniprof_context_is_active(g_b, &s), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(s, 0);
    CHECK_ST(omniprof_create_context(&c), OMNIPROF_STATUS_ERROR_FINALIZED);
    TEST_DONE();
}
