/* ocl_test_tool.c — the omniprof tool of the OpenCL backend's tests (LD_PRELOAD it, with
 * OPENCL_LAYERS naming libomniprof-backend-opencl.so or not: the SDK adds the layer itself).
 *
 * One context, one buffer: OPENCL_API, KERNEL_DISPATCH, MEMORY_COPY, MEMORY_SET and
 * MEMORY_ALLOCATION records, one JSON line each, to $OCL_TEST_OUTPUT. Options (environment):
 *   OCL_TEST_CALLBACKS=1  also OPENCL_API and KERNEL_DISPATCH callbacks ("cb" lines: phase,
 *                         operation, correlation id, function and symbol name)
 *   OCL_TEST_INTERCEPT=1  also ask for the OpenCL intercept table and wrap clEnqueueNDRangeKernel
 *                         (counts its calls and chains to the previous entry; a "summary" line
 *                         at the end gives the count)
 *   OCL_TEST_KINDS=api    only OPENCL_API (=gpu: only the activity kinds; =none: nothing, the
 *                         intercept table alone)
 * Exports ocl_test_tool_push_external/pop_external so the workload can push external ids. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl_icd.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "omniprof/omniprof.h"
#include "omniprof/opencl.h"

#define EXPORT __attribute__((visibility("default")))

static omniprof_context_id_t g_ctx;
static omniprof_buffer_id_t g_buf;
static FILE *g_out;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_wrapped_calls, g_records, g_drops;
static cl_api_clEnqueueNDRangeKernel g_prev_ndrange;

EXPORT void ocl_test_tool_push_external(uint64_t v)
{
    omniprof_push_external_correlation_id(g_ctx, (omniprof_thread_id_t)syscall(SYS_gettid), (omniprof_user_data_t){.value = v});
}
EXPORT void ocl_test_tool_pop_external(void)
{
    omniprof_pop_external_correlation_id(g_ctx, (omniprof_thread_id_t)syscall(SYS_gettid), NULL);
}

static const char *opname(uint32_t kind, int32_t op)
{
    const char *n = NULL;
    if (omniprof_query_buffer_tracing_kind_operation_name((omniprof_buffer_tracing_kind_t)kind, op, &n, NULL) !=
            OMNIPROF_STATUS_SUCCESS || !n)
        return "?";
    return n;
}

#define ASYNC_FIELDS(r)                                                                                          \
    fprintf(g_out, "\"op\":%d,\"corr\":%" PRIu64 ",\"ext\":%" PRIu64 ",\"tid\":%" PRIu64 ",\"s\":%" PRIu64     \
                   ",\"e\":%" PRIu64,                                                                            \
            (r)->operation, (r)->correlation_id.internal, (r)->correlation_id.external.value, (r)->thread_id,     \
            (r)->start_timestamp, (r)->end_timestamp)

static void write_record(const omniprof_record_header_t *h)
{
    const void *p = h->payload;
    switch (h->kind) {
    case OMNIPROF_BUFFER_TRACING_OPENCL_API: {
        const omniprof_buffer_tracing_api_record_t *r = p;
        fprintf(g_out, "{\"k\":\"api\",\"name\":\"%s\",\"op\":%d,\"corr\":%" PRIu64 ",\"anc\":%" PRIu64 ",\"ext\":%" PRIu64
                       ",\"tid\":%" PRIu64 ",\"s\":%" PRIu64 ",\"e\":%" PRIu64 ",\"ret\":%d,\"args\":{",
                opname(h->kind, r->operation), r->operation, r->correlation_id.internal, r->correlation_id.ancestor,
                r->correlation_id.external.value, r->thread_id, r->start_timestamp, r->end_timestamp, r->return_value);
        for (uint32_t i = 0; i < r->num_args; i++) {
            const omniprof_arg_t *a = &r->args[i];
            fprintf(g_out, "%s\"%s\":", i ? "," : "", a->name);
            if (a->type == OMNIPROF_ARG_TYPE_STRING) fprintf(g_out, "\"%s\"", a->value.str ? a->value.str : "");
            else if (a->type == OMNIPROF_ARG_TYPE_INT) fprintf(g_out, "%" PRId64, a->value.i64);
            else fprintf(g_out, "%" PRIu64, a->value.u64);
        }
        fputs("}}\n", g_out);
        break;
    }
    case OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH: {
        const omniprof_buffer_tracing_kernel_dispatch_record_t *r = p;
        fputs("{\"k\":\"kernel\",", g_out);
        ASYNC_FIELDS(r);
        fprintf(g_out, ",\"name\":\"%s\",\"agent\":%" PRIu64 ",\"queue\":%" PRIu64 ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u]}\n",
                r->kernel_name ? r->kernel_name : "", r->agent_id.handle, r->stream_id.handle, r->grid_size.x,
                r->grid_size.y, r->grid_size.z, r->block_size.x, r->block_size.y, r->block_size.z);
        break;
    }
    case OMNIPROF_BUFFER_TRACING_MEMORY_COPY: {
        const omniprof_buffer_tracing_memory_copy_record_t *r = p;
        fputs("{\"k\":\"copy\",", g_out);
        ASYNC_FIELDS(r);
        fprintf(g_out, ",\"bytes\":%" PRIu64 ",\"src_agent\":%" PRIu64 ",\"dst_agent\":%" PRIu64 ",\"queue\":%" PRIu64 "}\n",
                r->bytes, r->src_agent_id.handle, r->dst_agent_id.handle, r->stream_id.handle);
        break;
    }
    case OMNIPROF_BUFFER_TRACING_MEMORY_SET: {
        const omniprof_buffer_tracing_memory_set_record_t *r = p;
        fputs("{\"k\":\"set\",", g_out);
        ASYNC_FIELDS(r);
        fprintf(g_out, ",\"bytes\":%" PRIu64 ",\"value\":%u,\"agent\":%" PRIu64 "}\n", r->bytes, r->value, r->agent_id.handle);
        break;
    }
    case OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION: {
        const omniprof_buffer_tracing_memory_allocation_record_t *r = p;
        fputs("{\"k\":\"alloc\",", g_out);
        ASYNC_FIELDS(r);
        fprintf(g_out, ",\"bytes\":%" PRIu64 ",\"address\":%" PRIu64 ",\"agent\":%" PRIu64 "}\n", r->allocation_size,
                r->address, r->agent_id.handle);
        break;
    }
    default: break;
    }
}

static void on_buffer(omniprof_context_id_t ctx, omniprof_buffer_id_t buf, omniprof_record_header_t **headers,
                      size_t n, void *data, uint64_t drops)
{
    (void)ctx, (void)buf, (void)data;
    pthread_mutex_lock(&g_lock);
    g_drops += drops;
    for (size_t i = 0; g_out && i < n; i++) { /* g_out: NULL once finalized */
        if (headers[i]->category != OMNIPROF_RECORD_CATEGORY_TRACING) continue;
        g_records++;
        write_record(headers[i]);
    }
    pthread_mutex_unlock(&g_lock);
}

static void on_callback(omniprof_callback_tracing_record_t rec, omniprof_user_data_t *user, void *data)
{
    (void)data;
    const char *fn = "", *sym = "";
    if (rec.kind == OMNIPROF_CALLBACK_TRACING_OPENCL_API) {
        const omniprof_callback_tracing_api_data_t *p = rec.payload;
        fn = p->function_name ? p->function_name : "";
        sym = p->symbol_name ? p->symbol_name : "";
        if (rec.phase == OMNIPROF_CALLBACK_PHASE_ENTER) user->value = rec.correlation_id.internal;
        else if (user->value != rec.correlation_id.internal) fn = "USER_DATA_MISMATCH";
    } else {
        const omniprof_buffer_tracing_kernel_dispatch_record_t *r = rec.payload;
        sym = r->kernel_name ? r->kernel_name : "";
    }
    pthread_mutex_lock(&g_lock);
    if (g_out)
        fprintf(g_out, "{\"k\":\"cb\",\"kind\":\"%s\",\"phase\":%d,\"op\":%d,\"corr\":%" PRIu64 ",\"tid\":%" PRIu64
                   ",\"fn\":\"%s\",\"sym\":\"%s\"}\n",
            rec.kind == OMNIPROF_CALLBACK_TRACING_OPENCL_API ? "api" : "dispatch", (int)rec.phase, rec.operation,
            rec.correlation_id.internal, rec.thread_id, fn, sym);
    pthread_mutex_unlock(&g_lock);
}

static cl_int CL_API_CALL wrapped_ndrange(cl_command_queue q, cl_kernel k, cl_uint dim, const size_t *off,
                                          const size_t *gws, const size_t *lws, cl_uint nw, const cl_event *wl,
                                          cl_event *ev)
{
    __atomic_fetch_add(&g_wrapped_calls, 1, __ATOMIC_RELAXED);
    return g_prev_ndrange(q, k, dim, off, gws, lws, nw, wl, ev);
}

static void on_table(omniprof_intercept_table_t type, uint64_t version, uint64_t instance, void **tables, uint64_t n,
                     void *data)
{
    (void)instance, (void)data;
    if (type != OMNIPROF_INTERCEPT_TABLE_OPENCL || version != OMNIPROF_OPENCL_TABLE_VERSION || n < 1) return;
    cl_icd_dispatch *t = tables[0];
    g_prev_ndrange = t->clEnqueueNDRangeKernel;
    t->clEnqueueNDRangeKernel = wrapped_ndrange;
}

static int tool_init(omniprof_client_finalize_t fini, void *data)
{
    (void)fini, (void)data;
    const char *kinds = getenv("OCL_TEST_KINDS");
    int api = !kinds || !strcmp(kinds, "api") || !strcmp(kinds, "all");
    int gpu = !kinds || !strcmp(kinds, "gpu") || !strcmp(kinds, "all");
    if (omniprof_create_context(&g_ctx) != OMNIPROF_STATUS_SUCCESS) return -1;
    if (omniprof_create_buffer(g_ctx, 1 << 22, 1 << 21, OMNIPROF_BUFFER_POLICY_LOSSLESS, on_buffer, NULL, &g_buf) !=
        OMNIPROF_STATUS_SUCCESS)
        return -1;
    if (api) omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_OPENCL_API, NULL, 0, g_buf);
    if (gpu) {
        omniprof_buffer_tracing_kind_t k[] = {OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH, OMNIPROF_BUFFER_TRACING_MEMORY_COPY,
                                              OMNIPROF_BUFFER_TRACING_MEMORY_SET, OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION};
        for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) omniprof_configure_buffer_tracing_service(g_ctx, k[i], NULL, 0, g_buf);
    }
    const char *cb = getenv("OCL_TEST_CALLBACKS");
    if (cb && !strcmp(cb, "1")) {
        omniprof_configure_callback_tracing_service(g_ctx, OMNIPROF_CALLBACK_TRACING_OPENCL_API, NULL, 0, on_callback, NULL);
        omniprof_configure_callback_tracing_service(g_ctx, OMNIPROF_CALLBACK_TRACING_KERNEL_DISPATCH, NULL, 0,
                                                    on_callback, NULL);
    }
    return omniprof_start_context(g_ctx) == OMNIPROF_STATUS_SUCCESS ? 0 : -1;
}

static void tool_fini(void *data)
{
    (void)data;
    omniprof_flush_buffer(g_buf);
    pthread_mutex_lock(&g_lock);
    fprintf(g_out, "{\"k\":\"summary\",\"records\":%" PRIu64 ",\"drops\":%" PRIu64 ",\"wrapped_ndrange\":%" PRIu64 "}\n",
            g_records, g_drops, __atomic_load_n(&g_wrapped_calls, __ATOMIC_RELAXED));
    fclose(g_out);
    g_out = NULL;
    pthread_mutex_unlock(&g_lock);
}

EXPORT omniprof_tool_configure_result_t *omniprof_configure(uint32_t version, const char *runtime_version,
                                                            uint32_t priority, omniprof_client_id_t *id)
{
    (void)version, (void)runtime_version, (void)priority;
    static omniprof_tool_configure_result_t res;
    const char *path = getenv("OCL_TEST_OUTPUT");
    g_out = fopen(path && *path ? path : "/dev/null", "w");
    if (!g_out) return NULL;
    id->name = "ocl-test-tool";
    const char *ic = getenv("OCL_TEST_INTERCEPT");
    if (ic && !strcmp(ic, "1"))
        omniprof_at_intercept_table_registration(on_table, OMNIPROF_INTERCEPT_TABLE_OPENCL, NULL);
    res = (omniprof_tool_configure_result_t){sizeof res, tool_init, tool_fini, NULL};
    return &res;
}
