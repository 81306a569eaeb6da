/* test_pc_sampling.c — PC sampling without a GPU (runs in CI):
 *  - the service (src/sdk/pc_sampling.c): bad method, unit, interval and buffer are refused with
 *    their status; a valid configuration is accepted once; another context asking for another
 *    interval gets ERROR_CONTEXT_CONFLICT; the configuration query refuses a CPU agent;
 *  - the database (src/db/ingest_pc.c and the pc_* views): PC_SAMPLE records become
 *    omniprof_pc_sample rows with their names, and pc_sampling_stalls / pc_sampling_lines give
 *    the exact totals and shares. */
#include "../db/db_test.h"
#include "omniprof/omniprof.h"

static omniprof_context_id_t g_ctx[2];
static omniprof_buffer_id_t g_buf[2];

static void on_buffer(omniprof_context_id_t c, omniprof_buffer_id_t b, omniprof_record_header_t **h, size_t n, void *d,
                      uint64_t drops)
{
    (void)c, (void)b, (void)h, (void)n, (void)d, (void)drops;
}

static omniprof_status_t first_cpu(omniprof_agent_version_t v, const void **agents, size_t n, void *data)
{
    (void)v;
    for (size_t i = 0; i < n; i++) {
        const omniprof_agent_v0_t *a = agents[i];
        if (a->type == OMNIPROF_AGENT_TYPE_CPU && !((omniprof_agent_id_t *)data)->handle) *(omniprof_agent_id_t *)data = a->id;
    }
    return OMNIPROF_STATUS_SUCCESS;
}

static omniprof_status_t no_configs(const omniprof_pc_sampling_configuration_t *c, size_t n, void *d)
{
    (void)c, (void)n, (void)d;
    return OMNIPROF_STATUS_SUCCESS;
}

static int tool_init(omniprof_client_finalize_t f, void *d)
{
    (void)f, (void)d;
    const omniprof_agent_id_t all = {0};
    const omniprof_pc_sampling_unit_t cyc = OMNIPROF_PC_SAMPLING_UNIT_CYCLES;
    const omniprof_pc_sampling_method_t ser = OMNIPROF_PC_SAMPLING_METHOD_KERNEL_SERIALIZED;
    for (int i = 0; i < 2; i++) {
        CHECK(omniprof_create_context(&g_ctx[i]) == OMNIPROF_STATUS_SUCCESS);
        CHECK(omniprof_create_buffer(g_ctx[i], 1 << 16, 1 << 15, OMNIPROF_BUFFER_POLICY_LOSSLESS, on_buffer, NULL,
                                     &g_buf[i]) == OMNIPROF_STATUS_SUCCESS);
    }
    CHECK(omniprof_configure_pc_sampling_service(g_ctx[0], all, OMNIPROF_PC_SAMPLING_METHOD_NONE, cyc, 0, g_buf[0], 0) ==
          OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK(omniprof_configure_pc_sampling_service(g_ctx[0], all, ser, OMNIPROF_PC_SAMPLING_UNIT_NONE, 0, g_buf[0], 0) ==
          OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK(omniprof_configure_pc_sampling_service(g_ctx[0], all, ser, cyc, 7, g_buf[0], 0) ==
          OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK(omniprof_configure_pc_sampling_service(g_ctx[0], all, ser, cyc, 1ull << 32, g_buf[0], 0) ==
          OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK(omniprof_configure_pc_sampling_service(g_ctx[0], all, ser, cyc, 1024, (omniprof_buffer_id_t){999}, 0) ==
          OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND);
    CHECK(omniprof_configure_pc_sampling_service((omniprof_context_id_t){999}, all, ser, cyc, 1024, g_buf[0], 0) ==
          OMNIPROF_STATUS_ERROR_CONTEXT_NOT_FOUND);
    CHECK(omniprof_configure_pc_sampling_service(g_ctx[0], all, ser, cyc, 1024, g_buf[0], 0) == OMNIPROF_STATUS_SUCCESS);
    CHECK(omniprof_configure_pc_sampling_service(g_ctx[0], all, ser, cyc, 1024, g_buf[0], 0) ==
          OMNIPROF_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED);
    CHECK(omniprof_configure_pc_sampling_service(g_ctx[1], all, ser, cyc, 2048, g_buf[1], 0) ==
          OMNIPROF_STATUS_ERROR_CONTEXT_CONFLICT);
    omniprof_agent_id_t cpu = {0};
    omniprof_query_available_agents(OMNIPROF_AGENT_INFO_VERSION_0, first_cpu, sizeof(omniprof_agent_v0_t), &cpu);
    CHECK(cpu.handle != 0);
    CHECK(omniprof_query_pc_sampling_agent_configurations(cpu, no_configs, NULL) == OMNIPROF_STATUS_ERROR_NOT_AVAILABLE);
    CHECK(omniprof_query_pc_sampling_agent_configurations((omniprof_agent_id_t){987654}, no_configs, NULL) ==
          OMNIPROF_STATUS_ERROR_AGENT_NOT_FOUND);
    return 0;
}

__attribute__((visibility("default"))) omniprof_tool_configure_result_t *
omniprof_configure(uint32_t v, const char *rv, uint32_t p, omniprof_client_id_t *id)
{
    (void)v, (void)rv, (void)p;
    static omniprof_tool_configure_result_t r = {sizeof r, tool_init, NULL, NULL};
    id->name = "test_pc_sampling";
    return &r;
}

static omniprof_pc_sample_record_t rec(const char *kernel, const char *reason, uint32_t line, uint64_t pc,
                                       uint32_t samples)
{
    omniprof_pc_sample_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = OMNIPROF_BUFFER_TRACING_PC_SAMPLE;
    r.operation = OMNIPROF_PC_SAMPLING_METHOD_KERNEL_SERIALIZED;
    r.correlation_id.internal = 42;
    r.timestamp = 5000;
    r.dispatch_id = 42;
    r.kernel_id = 7;
    r.kernel_name = kernel;
    r.kernel_name_demangled = kernel;
    r.stall_reason = reason;
    r.instruction = "FFMA R1, R2, R3, R4";
    r.source_file = line ? "/src/k.cu" : "";
    r.source_line = line;
    r.pc_offset = pc;
    r.samples = samples;
    r.pc_samples = samples;
    return r;
}

static void database(void)
{
    char dir[512], path[600], err[512];
    test_tmpdir(dir, sizeof dir, "pcs");
    snprintf(path, sizeof path, "%s/p_results.db", dir);
    op_db_process_info info = test_process_info();
    op_db_writer *w = op_db_writer_open(path, &info, NULL, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return;
    omniprof_pc_sample_record_t rs[] = {
        rec("kmem", "stall_long_scoreboard", 10, 0x10, 60), rec("kmem", "stall_wait", 11, 0x20, 20),
        rec("kmem", "stall_long_scoreboard", 11, 0x30, 20), rec("kfma", "stall_wait", 0, 0x40, 9),
        rec("kfma", "selected", 0, 0x50, 1)};
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++)
        CHECK(op_db_writer_append_one(w, OMNIPROF_RECORD_CATEGORY_TRACING, OMNIPROF_BUFFER_TRACING_PC_SAMPLE, &rs[i]) == 1);
    CHECK(op_db_writer_close(w) == 0);
    sqlite3 *db = test_open_ro(path);
    CHECK(db != NULL);
    if (!db) return;
    CHECK_EQ_I64(q_i64(db, "SELECT count(*) FROM pc_samples"), 5);
    CHECK_EQ_I64(q_i64(db, "SELECT sum(samples) FROM pc_samples WHERE kernel = 'kmem'"), 100);
    CHECK_EQ_I64(q_i64(db, "SELECT samples FROM pc_sampling_stalls WHERE kernel = 'kmem' AND stall_reason = 'stall_long_scoreboard'"), 80);
    CHECK_EQ_I64(q_i64(db, "SELECT round(percent) FROM pc_sampling_stalls WHERE kernel = 'kfma' AND stall_reason = 'stall_wait'"), 90);
    CHECK_EQ_I64(q_i64(db, "SELECT line FROM pc_sampling_lines WHERE kernel = 'kmem' ORDER BY samples DESC LIMIT 1"), 10);
    CHECK_EQ_I64(q_i64(db, "SELECT count(*) FROM pc_sampling_lines WHERE kernel = 'kfma'"), 0);
    CHECK_EQ_STR(q_text(db, "SELECT instruction FROM pc_samples LIMIT 1"), "FFMA R1, R2, R3, R4");
    CHECK_EQ_STR(q_text(db, "SELECT file FROM pc_samples WHERE pc_offset = 16"), "/src/k.cu");
    CHECK_EQ_I64(q_i64(db, "SELECT count(DISTINCT stack_id) FROM pc_samples"), 1);
    sqlite3_close(db);
    test_rmtree(dir);
}

int main(void)
{
    omniprof_initialize();
    database();
    return CHECK_DONE();
}
