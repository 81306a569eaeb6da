/* test_intercept_table.c — src/sdk/intercept_table.c and marker.c through libomniprof-user:
 * the user-API table is handed to the SDK on the first call, filled with the SDK's
 * implementations, then wrapped by each registered tool in registration order (chaining);
 * statuses of registration and set_api_table; marker records and pause/resume. */
#include <stdatomic.h>

#include "omniprof/user.h"
#include "sdk_test.h"

static omniprof_context_id_t g_ctx;
static omniprof_buffer_id_t g_buf;
static _Atomic int g_marks, g_ranges;
static char g_order[16];
static int g_norder;
static void (*g_prev_mark_a)(const char *);
static void (*g_prev_mark_b)(const char *);
static int g_tables_a, g_tables_b;

static void wrap_a(const char *m)
{
    if (g_norder < 15) g_order[g_norder++] = 'a';
    g_prev_mark_a(m);
}
static void wrap_b(const char *m)
{
    if (g_norder < 15) g_order[g_norder++] = 'b';
    g_prev_mark_b(m);
}
static void on_table_a(omniprof_intercept_table_t type, uint64_t ver, uint64_t inst, void **tables, uint64_t n, void *d)
{
    (void)ver; (void)inst; (void)d;
    CHECK(type == OMNIPROF_INTERCEPT_TABLE_USER_API && n == 1);
    omniprof_user_api_table_t *t = tables[0];
    CHECK(t->size >= sizeof *t);
    g_prev_mark_a = t->mark;
    t->mark = wrap_a;
    g_tables_a++;
}
static void on_table_b(omniprof_intercept_table_t type, uint64_t ver, uint64_t inst, void **tables, uint64_t n, void *d)
{
    (void)type; (void)ver; (void)inst; (void)n; (void)d;
    omniprof_user_api_table_t *t = tables[0];
    g_prev_mark_b = t->mark;
    t->mark = wrap_b;
    g_tables_b++;
}

static void cb(omniprof_context_id_t c, omniprof_buffer_id_t b, omniprof_record_header_t **h, size_t n, void *d,
               uint64_t drops)
{
    (void)c; (void)b; (void)d; (void)drops;
    for (size_t i = 0; i < n; i++) {
        if (h[i]->kind == OMNIPROF_BUFFER_TRACING_MARKER_API) atomic_fetch_add(&g_marks, 1);
        if (h[i]->kind == OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API) atomic_fetch_add(&g_ranges, 1);
    }
}

static int init(omniprof_client_finalize_t f, void *d)
{
    (void)f; (void)d;
    CHECK_ST(omniprof_create_context(&g_ctx), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_create_buffer(g_ctx, 65536, 65536, OMNIPROF_BUFFER_POLICY_LOSSLESS, cb, NULL, &g_buf),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_MARKER_API, NULL, 0, g_buf),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, NULL, 0, g_buf),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_at_intercept_table_registration(NULL, OMNIPROF_INTERCEPT_TABLE_USER_API, NULL),
             OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_at_intercept_table_registration(on_table_a, 0, NULL), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_at_intercept_table_registration(on_table_a, OMNIPROF_INTERCEPT_TABLE_LAST, NULL),
             OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_at_intercept_table_registration(on_table_a, OMNIPROF_INTERCEPT_TABLE_USER_API, NULL),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_at_intercept_table_registration(on_table_b, OMNIPROF_INTERCEPT_TABLE_USER_API, NULL),
             OMNIPROF_STATUS_SUCCESS);
    return omniprof_start_context(g_ctx) == OMNIPROF_STATUS_SUCCESS ? 0 : 1;
}

SDK_TEST_TOOL(init)

int main(void)
{
    omniprof_initialize();
    CHECK_EQ_U(g_tables_a + g_tables_b, 0); /* the user library hands its table over at its first call */
    omniprof_mark("one");
    CHECK_EQ_U(g_tables_a, 1);
    CHECK_EQ_U(g_tables_b, 1);
    /* b registered last, wraps outermost: b -> a -> SDK */
    CHECK(strcmp(g_order, "ba") == 0);
    omniprof_pause();
    omniprof_mark("paused");
    omniprof_resume();
    CHECK(omniprof_range_push("r") == 0);
    CHECK(omniprof_range_pop() == 0);
    CHECK(omniprof_range_pop() == -1);
    omniprof_range_id_t id = omniprof_range_start("p");
    CHECK(id != 0);
    omniprof_range_stop(id);
    CHECK(omniprof_range_start("q") == id + 1);
    CHECK_ST(omniprof_flush_buffer(g_buf), OMNIPROF_STATUS_SUCCESS);
    /* MARKER_API: mark, pause, resume, push, pop, start, stop, start = 8 ("paused" mark dropped);
     * MARKER_RANGE_API: mark, thread range, process range = 3 */
    CHECK_EQ_U(atomic_load(&g_marks), 8);
    CHECK_EQ_U(atomic_load(&g_ranges), 3);

    /* statuses after the lock / of set_api_table */
    CHECK_ST(omniprof_at_intercept_table_registration(on_table_a, OMNIPROF_INTERCEPT_TABLE_USER_API, NULL),
             OMNIPROF_STATUS_ERROR_CONFIGURATION_LOCKED);
    omniprof_user_api_table_t t = {.size = sizeof t};
    void *tables[1] = {&t};
    CHECK_ST(omniprof_set_api_table(NULL, 0, 0, tables, 1), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_set_api_table("nosuch", 0, 0, tables, 1), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_set_api_table("user", 0, 0, NULL, 1), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_set_api_table("user", 0, 0, tables, 0), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    /* a second user table (another instance) is filled and chained too */
    CHECK_ST(omniprof_set_api_table("user", OMNIPROF_VERSION_NUMBER, 1, tables, 1), OMNIPROF_STATUS_SUCCESS);
    CHECK(t.mark == wrap_b && t.range_push != NULL && t.progress_end != NULL);
    CHECK_EQ_U(g_tables_a, 2);
    const char *n = NULL;
    CHECK_ST(omniprof_query_intercept_table_name(OMNIPROF_INTERCEPT_TABLE_USER_API, &n, NULL), OMNIPROF_STATUS_SUCCESS);
    CHECK(strcmp(n, "USER_API") == 0);
    CHECK_ST(omniprof_query_intercept_table_name(OMNIPROF_INTERCEPT_TABLE_LAST, &n, NULL),
             OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND);
    CHECK(op_sdk_intercept_requested(OMNIPROF_INTERCEPT_TABLE_USER_API));
    CHECK(!op_sdk_intercept_requested(OMNIPROF_INTERCEPT_TABLE_CUDA_DRIVER));
    omniprof_finalize();
    CHECK_ST(omniprof_set_api_table("user", 0, 0, tables, 1), OMNIPROF_STATUS_ERROR_FINALIZED);
    omniprof_mark("after finalize"); /* harmless no-op */
    TEST_DONE();
}
