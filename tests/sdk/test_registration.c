/* test_registration.c — src/sdk/registration.c: lazy initialization (OMNIPROF_INIT_AT_LOAD=0),
 * discovery of every omniprof_configure (the program's own through RTLD_DEFAULT, a linked
 * library's through the link map, one from OMNIPROF_TOOL_LIBRARIES, one forced), call order
 * and priorities, a declining tool, a failing initialize, early client finalization, the lock,
 * and finalize in reverse order. Run with OMNIPROF_INIT_AT_LOAD=0 and
 * OMNIPROF_TOOL_LIBRARIES=<libsdk_test_tool_env.so> (set by CTest). */
#include "sdk_test.h"

void linked_tool_finalize_now(void);

static char g_log[64][64];
static int g_nlog;

OMNIPROF_API void test_registration_note(const char *who, const char *what, uint32_t priority);
OMNIPROF_API void test_registration_note(const char *who, const char *what, uint32_t priority)
{
    if (g_nlog < 64) snprintf(g_log[g_nlog++], 64, "%s:%s:%u", who, what, priority);
}

static int self_init(omniprof_client_finalize_t f, void *d)
{
    (void)f; (void)d;
    test_registration_note("self", "initialize", 0);
    return 0;
}
static void self_fini(void *d)
{
    (void)d;
    test_registration_note("self", "finalize", 0);
}
omniprof_tool_configure_result_t *omniprof_configure(uint32_t v, const char *rv, uint32_t p, omniprof_client_id_t *id)
{
    CHECK_EQ_U(v, OMNIPROF_VERSION_NUMBER);
    CHECK(strcmp(rv, OMNIPROF_VERSION_STRING) == 0);
    CHECK(id && id->size == sizeof *id && id->handle == p);
    test_registration_note("self", "configure", p);
    static omniprof_tool_configure_result_t r = {sizeof r, self_init, self_fini, NULL};
    return &r;
}

static omniprof_context_id_t g_failing_ctx;
static int failing_init(omniprof_client_finalize_t f, void *d)
{
    (void)f; (void)d;
    test_registration_note("failing", "initialize", 0);
    omniprof_create_context(&g_failing_ctx);
    omniprof_start_context(g_failing_ctx);
    return -1;
}
static void failing_fini(void *d)
{
    (void)d;
    test_registration_note("failing", "finalize", 0);
}
static omniprof_tool_configure_result_t *forced(uint32_t v, const char *rv, uint32_t p, omniprof_client_id_t *id)
{
    (void)v; (void)rv;
    id->name = "forced";
    test_registration_note("forced", "configure", p);
    static omniprof_tool_configure_result_t r = {sizeof r, failing_init, failing_fini, NULL};
    return &r;
}
static omniprof_tool_configure_result_t *declining(uint32_t v, const char *rv, uint32_t p, omniprof_client_id_t *id)
{
    (void)v; (void)rv; (void)id;
    test_registration_note("declining", "configure", p);
    return NULL;
}

static int log_has(const char *s)
{
    for (int i = 0; i < g_nlog; i++)
        if (strcmp(g_log[i], s) == 0) return i;
    return -1;
}

int main(void)
{
    int st = -1;
    CHECK_ST(omniprof_is_initialized(&st), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(st, 0); /* OMNIPROF_INIT_AT_LOAD=0: nothing ran at load */
    CHECK_EQ_U(g_nlog, 0);
    CHECK_ST(omniprof_force_configure(NULL), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(omniprof_force_configure(forced), OMNIPROF_STATUS_SUCCESS); /* initializes now */
    CHECK_ST(omniprof_is_initialized(&st), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(st, 1);
    CHECK_ST(omniprof_force_configure(declining), OMNIPROF_STATUS_ERROR_CONFIGURATION_LOCKED);
    for (int i = 0; i < g_nlog; i++) printf("  %s\n", g_log[i]);
    /* order: RTLD_DEFAULT (this program), link map (linked tool), OMNIPROF_TOOL_LIBRARIES, forced */
    const char *want[] = {"self:configure:0", "linked:configure:1", "env:configure:2", "forced:configure:3",
                          "self:initialize:0", "linked:initialize:1", "env:initialize:2", "failing:initialize:0"};
    CHECK_EQ_U(g_nlog, 8);
    for (int i = 0; i < 8 && i < g_nlog; i++) CHECK(strcmp(g_log[i], want[i]) == 0);
    /* the failing tool's context was stopped */
    int active = 1;
    CHECK_ST(omniprof_context_is_active(g_failing_ctx, &active), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(active, 0);
    CHECK_ST(omniprof_initialize(), OMNIPROF_STATUS_SUCCESS); /* idempotent */
    CHECK_EQ_U(g_nlog, 8);

    /* early finalization of one client; it is not finalized again at the end */
    linked_tool_finalize_now();
    CHECK(log_has("linked:finalize:1") == 8);
    linked_tool_finalize_now();
    CHECK_EQ_U(g_nlog, 9);

    int fin = 0;
    CHECK_ST(omniprof_is_finalized(&fin), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(fin, 0);
    CHECK_ST(omniprof_finalize(), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_is_finalized(&fin), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(fin, 1);
    /* reverse order; the failing tool is never finalized */
    CHECK_EQ_U(g_nlog, 11);
    CHECK(log_has("env:finalize:2") == 9);
    CHECK(log_has("self:finalize:0") == 10);
    CHECK(log_has("failing:finalize:0") < 0);
    CHECK_ST(omniprof_force_configure(declining), OMNIPROF_STATUS_ERROR_FINALIZED);
    CHECK_ST(omniprof_initialize(), OMNIPROF_STATUS_ERROR_FINALIZED);
    TEST_DONE();
}
