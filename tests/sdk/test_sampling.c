/* test_sampling.c — src/sdk/pc_sampling.c, gpu_sampling.c and the sampling services' claim
 * (context.c): one configuration per process and service, the first context's; a context asking
 * for other values gets ERROR_CONTEXT_CONFLICT and the kept configuration does not change; the
 * same values again are accepted; bad arguments are refused before anything is kept. */
#include "omniprof/pc_sampling.h"
#include "omniprof/pm_sampling.h"
#include "omniprof/sass_metrics.h"
#include "sdk_test.h"

static omniprof_context_id_t g_a, g_b;
static omniprof_buffer_id_t g_buf_a, g_buf_b;

static void cb(omniprof_context_id_t c, omniprof_buffer_id_t b, omniprof_record_header_t **h, size_t n, void *d,
               uint64_t drops)
{
    (void)c; (void)b; (void)h; (void)n; (void)d; (void)drops;
}

static void pm(void)
{
    const char *m1[] = {"dram__bytes_read.sum", "sm__cycles_active.avg"};
    const char *m2[] = {"dram__bytes_read.sum"};
    omniprof_agent_id_t any = {0};
    CHECK(!op_sdk_pm_sampling_get_config(NULL));
    CHECK_ST(omniprof_configure_pm_sampling_service(g_a, any, m1, 2, 10, g_buf_a, 0), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    const char *empty[] = {""};
    CHECK_ST(omniprof_configure_pm_sampling_service(g_a, any, empty, 1, 100000, g_buf_a, 0),
             OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK(!op_sdk_pm_sampling_get_config(NULL));
    CHECK_ST(omniprof_configure_pm_sampling_service(g_a, any, m1, 2, 100000, g_buf_a, 0), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_configure_pm_sampling_service(g_b, any, m1, 2, 200000, g_buf_b, 0), OMNIPROF_STATUS_ERROR_CONTEXT_CONFLICT);
    CHECK_ST(omniprof_configure_pm_sampling_service(g_b, any, m2, 1, 100000, g_buf_b, 0), OMNIPROF_STATUS_ERROR_CONTEXT_CONFLICT);
    CHECK_ST(omniprof_configure_pm_sampling_service(g_b, any, m1, 2, 100000, g_buf_b, 0), OMNIPROF_STATUS_SUCCESS);
    op_sdk_pm_sampling_config c;
    CHECK(op_sdk_pm_sampling_get_config(&c));
    CHECK_EQ_U(c.n_metrics, 2);
    CHECK_EQ_U(c.interval_ns, 100000);
    CHECK(c.metrics[0] != m1[0] && strcmp(c.metrics[0], m1[0]) == 0 && strcmp(c.metrics[1], m1[1]) == 0);
}

static void sass(void)
{
    omniprof_agent_id_t any = {0};
    CHECK_ST(omniprof_configure_sass_metrics_service(g_a, any, "([", NULL, 0, g_buf_a, 0), OMNIPROF_STATUS_ERROR_PARSE);
    CHECK(!op_sdk_sass_metrics_get_config(NULL));
    CHECK_ST(omniprof_configure_sass_metrics_service(g_a, any, "gemm", NULL, 0, g_buf_a, 0), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_configure_sass_metrics_service(g_b, any, "axpy", NULL, 0, g_buf_b, 0),
             OMNIPROF_STATUS_ERROR_CONTEXT_CONFLICT);
    const char *one[] = {OMNIPROF_SASS_METRIC_INST_EXECUTED};
    CHECK_ST(omniprof_configure_sass_metrics_service(g_b, any, "gemm", one, 1, g_buf_b, 0),
             OMNIPROF_STATUS_ERROR_CONTEXT_CONFLICT);
    CHECK_ST(omniprof_configure_sass_metrics_service(g_b, any, "gemm", NULL, 0, g_buf_b, 0), OMNIPROF_STATUS_SUCCESS);
    op_sdk_sass_metrics_config c;
    CHECK(op_sdk_sass_metrics_get_config(&c));
    CHECK_EQ_U(c.n_metrics, 2);
    CHECK(strcmp(c.kernel_filter, "gemm") == 0);
    CHECK(strcmp(c.metrics[0], OMNIPROF_SASS_METRIC_INST_EXECUTED) == 0 &&
          strcmp(c.metrics[1], OMNIPROF_SASS_METRIC_THREAD_INST_EXECUTED) == 0);
}

static void pc(void)
{
    omniprof_agent_id_t any = {0};
    CHECK_ST(omniprof_configure_pc_sampling_service(g_a, any, OMNIPROF_PC_SAMPLING_METHOD_CONTINUOUS,
                                                    OMNIPROF_PC_SAMPLING_UNIT_CYCLES, 16, g_buf_a, 0),
             OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK(!op_sdk_pc_sampling_get_config(NULL));
    CHECK_ST(omniprof_configure_pc_sampling_service(g_a, any, OMNIPROF_PC_SAMPLING_METHOD_CONTINUOUS,
                                                    OMNIPROF_PC_SAMPLING_UNIT_CYCLES, 1024, g_buf_a, 0),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_configure_pc_sampling_service(g_b, any, OMNIPROF_PC_SAMPLING_METHOD_KERNEL_SERIALIZED,
                                                    OMNIPROF_PC_SAMPLING_UNIT_CYCLES, 1024, g_buf_b, 0),
             OMNIPROF_STATUS_ERROR_CONTEXT_CONFLICT);
    CHECK_ST(omniprof_configure_pc_sampling_service(g_b, any, OMNIPROF_PC_SAMPLING_METHOD_CONTINUOUS,
                                                    OMNIPROF_PC_SAMPLING_UNIT_CYCLES, 1024, g_buf_b, 0),
             OMNIPROF_STATUS_SUCCESS);
    op_sdk_pc_sampling_config c;
    CHECK(op_sdk_pc_sampling_get_config(&c));
    CHECK_EQ_U(c.method, OMNIPROF_PC_SAMPLING_METHOD_CONTINUOUS);
    CHECK_EQ_U(c.interval, 1024);
}

static int init(omniprof_client_finalize_t f, void *d)
{
    (void)f; (void)d;
    CHECK_ST(omniprof_create_context(&g_a), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_create_context(&g_b), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_create_buffer(g_a, 4096, 4096, OMNIPROF_BUFFER_POLICY_LOSSLESS, cb, NULL, &g_buf_a),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_create_buffer(g_b, 4096, 4096, OMNIPROF_BUFFER_POLICY_LOSSLESS, cb, NULL, &g_buf_b),
             OMNIPROF_STATUS_SUCCESS);
    pm();
    sass();
    pc();
    return 0;
}

SDK_TEST_TOOL(init)

int main(void)
{
    CHECK_ST(omniprof_initialize(), OMNIPROF_STATUS_SUCCESS);
    CHECK(op_sdk_pm_sampling_get_config(NULL) && op_sdk_sass_metrics_get_config(NULL) &&
          op_sdk_pc_sampling_get_config(NULL));
    return CHECK_DONE();
}
