/* cpu_test_tool.c — a minimal omniprof tool for the CPU tests, written against the public API
 * only: one context with one LOSSLESS buffer tracing CPU_SAMPLE, PROCESS_SAMPLE, THREAD,
 * FUNCTION_WRAPPER and REGION_PROFILE (the kinds in $OMNIPROF_CPUTEST_KINDS, default all five); the buffer
 * callback writes each record as a text line (cpu_record_writer.h); at finalization every
 * distinct frame address is resolved with omniprof_query_address_symbols. LD_PRELOADed after
 * libomniprof-backend-cpu.so by tests/cpu/cpu_check.py. */
#include <stdlib.h>
#include <string.h>

#include "cpu_record_writer.h"
#include "omniprof/buffer.h"
#include "omniprof/context.h"
#include "omniprof/registration.h"

static omniprof_context_id_t g_ctx;
static omniprof_buffer_id_t g_buf;

static void on_records(omniprof_context_id_t ctx, omniprof_buffer_id_t buf, omniprof_record_header_t **headers,
                       size_t n, void *data, uint64_t drops)
{
    (void)ctx;
    (void)buf;
    (void)data;
    (void)drops;
    for (size_t i = 0; i < n; i++) rw_record(headers[i]->kind, headers[i]->payload);
}

static int want(const char *what)
{
    const char *k = getenv("OMNIPROF_CPUTEST_KINDS");
    if (!k || !*k) k = "sample,process,wrapper,thread,region";
    return strstr(k, what) != NULL;
}

static int tool_init(omniprof_client_finalize_t fin, void *data)
{
    (void)fin;
    (void)data;
    if (omniprof_create_context(&g_ctx) != OMNIPROF_STATUS_SUCCESS) return 1;
    if (omniprof_create_buffer(g_ctx, 1 << 22, 1 << 21, OMNIPROF_BUFFER_POLICY_LOSSLESS, on_records, NULL, &g_buf) !=
        OMNIPROF_STATUS_SUCCESS)
        return 1;
    static const struct {
        const char *name;
        omniprof_buffer_tracing_kind_t kind;
    } kinds[] = {{"sample", OMNIPROF_BUFFER_TRACING_CPU_SAMPLE},
                 {"process", OMNIPROF_BUFFER_TRACING_PROCESS_SAMPLE},
                 {"thread", OMNIPROF_BUFFER_TRACING_THREAD},
                 {"wrapper", OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER},
                 {"region", OMNIPROF_BUFFER_TRACING_REGION_PROFILE}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (want(kinds[i].name)) omniprof_configure_buffer_tracing_service(g_ctx, kinds[i].kind, NULL, 0, g_buf);
    return omniprof_start_context(g_ctx) == OMNIPROF_STATUS_SUCCESS ? 0 : 1;
}

static void tool_fini(void *data)
{
    (void)data;
    omniprof_flush_buffer(g_buf);
    rw_finish(omniprof_query_address_symbols);
}

static void at_fork_child(void) { rw_at_fork_child(); }

__attribute__((visibility("default"))) omniprof_tool_configure_result_t *
omniprof_configure(uint32_t version, const char *runtime_version, uint32_t priority, omniprof_client_id_t *id)
{
    (void)version;
    (void)runtime_version;
    (void)priority;
    if (id) id->name = "omniprof-cputest";
    pthread_atfork(NULL, NULL, at_fork_child);
    static omniprof_tool_configure_result_t res = {sizeof(omniprof_tool_configure_result_t), tool_init, tool_fini,
                                                   NULL};
    return &res;
}
