/* gpu_test_tool.c — a minimal omniprof tool for the GPU tests: one context tracing every CUDA
 * kind, markers, code objects and retirements into one buffer, written as one JSON line per
 * record to $OMNIPROF_GPU_TEST_OUTPUT (tests/gpu/validate.py reads it). LD_PRELOAD it.
 *
 * It exports gpu_test_tool_context() so that a test program can push external correlation ids
 * on the tool's context. OMNIPROF_GPU_TEST_KINDS=kernel limits the tool to KERNEL_DISPATCH
 * (benchmark mode "omniprof kernel tracing"); =api adds runtime+driver API; =none writes nothing
 * (records are counted and dropped in the callback). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omniprof/omniprof.h"
#include "omniprof/cuda.h"

static omniprof_context_id_t g_ctx;
static omniprof_buffer_id_t g_buf;
static FILE *g_out;
static int g_quiet;
static uint64_t g_records, g_drops;

__attribute__((visibility("default"))) uint64_t gpu_test_tool_context(void) { return g_ctx.handle; }

static void jstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static const char *opname(uint32_t kind, int32_t op)
{
    const char *n = NULL;
    uint64_t len = 0;
    if (omniprof_query_buffer_tracing_kind_operation_name((omniprof_buffer_tracing_kind_t)kind, op, &n, &len) !=
            OMNIPROF_STATUS_SUCCESS || !n)
        return "?";
    return n;
}

static void write_record(FILE *f, const omniprof_record_header_t *h)
{
    const void *p = h->payload;
    switch (h->kind) {
    case OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API:
    case OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API: {
        const omniprof_buffer_tracing_api_record_t *r = p;
        fprintf(f, "{\"k\":\"api\",\"dom\":\"%s\",\"op\":%d,\"name\":",
                h->kind == OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API ? "rt" : "drv", r->operation);
        jstr(f, opname(h->kind, r->operation));
        fprintf(f, ",\"corr\":%" PRIu64 ",\"anc\":%" PRIu64 ",\"ext\":%" PRIu64 ",\"tid\":%" PRIu64 ",\"s\":%" PRIu64
                   ",\"e\":%" PRIu64 ",\"ret\":%d,\"args\":{",
                r->correlation_id.internal, r->correlation_id.ancestor, r->correlation_id.external.value, r->thread_id,
                r->start_timestamp, r->end_timestamp, r->return_value);
        for (uint32_t i = 0; i < r->num_args; i++) {
            if (i) fputc(',', f);
            jstr(f, r->args[i].name);
            fputc(':', f);
            if (r->args[i].type == OMNIPROF_ARG_TYPE_STRING) jstr(f, r->args[i].value.str);
            else if (r->args[i].type == OMNIPROF_ARG_TYPE_INT) fprintf(f, "%" PRId64, r->args[i].value.i64);
            else fprintf(f, "%" PRIu64, r->args[i].value.u64);
        }
        fputs("}}\n", f);
        break;
    }
    case OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH: {
        const omniprof_buffer_tracing_kernel_dispatch_record_t *r = p;
        fprintf(f, "{\"k\":\"kernel\",\"corr\":%" PRIu64 ",\"ext\":%" PRIu64 ",\"tid\":%" PRIu64 ",\"s\":%" PRIu64
                   ",\"e\":%" PRIu64 ",\"agent\":%" PRIu64 ",\"dev\":%u,\"stream\":%" PRIu64 ",\"kid\":%" PRIu64
                   ",\"did\":%" PRIu64 ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"smem\":%u,\"dsmem\":%u,\"regs\":%u"
                   ",\"graph\":%" PRIu64 ",\"node\":%" PRIu64 ",\"name\":",
                r->correlation_id.internal, r->correlation_id.external.value, r->thread_id, r->start_timestamp,
                r->end_timestamp, r->agent_id.handle, r->device_id, r->stream_id.handle, r->kernel_id, r->dispatch_id,
                r->grid_size.x, r->grid_size.y, r->grid_size.z, r->block_size.x, r->block_size.y, r->block_size.z,
                r->static_shared_memory, r->dynamic_shared_memory, r->registers_per_thread, r->graph_id,
                r->graph_node_id);
        jstr(f, r->kernel_name);
        fputs(",\"dname\":", f);
        jstr(f, r->kernel_name_demangled);
        fputs("}\n", f);
        break;
    }
    case OMNIPROF_BUFFER_TRACING_MEMORY_COPY: {
        const omniprof_buffer_tracing_memory_copy_record_t *r = p;
        fprintf(f, "{\"k\":\"copy\",\"op\":\"%s\",\"corr\":%" PRIu64 ",\"ext\":%" PRIu64 ",\"tid\":%" PRIu64
                   ",\"s\":%" PRIu64 ",\"e\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"src\":%u,\"dst\":%u,\"async\":%u,"
                   "\"stream\":%" PRIu64 "}\n",
                opname(h->kind, r->operation), r->correlation_id.internal, r->correlation_id.external.value,
                r->thread_id, r->start_timestamp, r->end_timestamp, r->bytes, r->src_memory_kind, r->dst_memory_kind,
                r->is_async, r->stream_id.handle);
        break;
    }
    case OMNIPROF_BUFFER_TRACING_MEMORY_SET: {
        const omniprof_buffer_tracing_memory_set_record_t *r = p;
        fprintf(f, "{\"k\":\"memset\",\"corr\":%" PRIu64 ",\"tid\":%" PRIu64 ",\"s\":%" PRIu64 ",\"e\":%" PRIu64
                   ",\"bytes\":%" PRIu64 ",\"value\":%u}\n",
                r->correlation_id.internal, r->thread_id, r->start_timestamp, r->end_timestamp, r->bytes, r->value);
        break;
    }
    case OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION: {
        const omniprof_buffer_tracing_memory_allocation_record_t *r = p;
        fprintf(f, "{\"k\":\"alloc\",\"op\":\"%s\",\"corr\":%" PRIu64 ",\"tid\":%" PRIu64 ",\"s\":%" PRIu64
                   ",\"addr\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"mkind\":%u}\n",
                opname(h->kind, r->operation), r->correlation_id.internal, r->thread_id, r->start_timestamp,
                r->address, r->allocation_size, r->memory_kind);
        break;
    }
    case OMNIPROF_BUFFER_TRACING_SYNCHRONIZATION: {
        const omniprof_buffer_tracing_synchronization_record_t *r = p;
        fprintf(f, "{\"k\":\"sync\",\"op\":\"%s\",\"corr\":%" PRIu64 ",\"tid\":%" PRIu64 ",\"s\":%" PRIu64
                   ",\"e\":%" PRIu64 "}\n",
                opname(h->kind, r->operation), r->correlation_id.internal, r->thread_id, r->start_timestamp,
                r->end_timestamp);
        break;
    }
    case OMNIPROF_BUFFER_TRACING_MARKER_API:
    case OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API: {
        const omniprof_buffer_tracing_marker_record_t *r = p;
        fprintf(f, "{\"k\":\"%s\",\"op\":%d,\"corr\":%" PRIu64 ",\"tid\":%" PRIu64 ",\"etid\":%" PRIu64
                   ",\"s\":%" PRIu64 ",\"e\":%" PRIu64 ",\"rid\":%" PRIu64 ",\"level\":%d,\"src\":%u,\"msg\":",
                h->kind == OMNIPROF_BUFFER_TRACING_MARKER_API ? "marker" : "range", r->operation,
                r->correlation_id.internal, r->thread_id, r->end_thread_id, r->start_timestamp, r->end_timestamp,
                r->range_id, r->nesting_level, r->source);
        jstr(f, r->message);
        fputs("}\n", f);
        break;
    }
    case OMNIPROF_BUFFER_TRACING_CODE_OBJECT: {
        const omniprof_buffer_tracing_code_object_record_t *r = p;
        fprintf(f, "{\"k\":\"code\",\"op\":%d,\"id\":%" PRIu64 ",\"size\":%" PRIu64 ",\"uri\":", r->operation,
                r->code_object_id, r->load_size);
        jstr(f, r->uri);
        fputs("}\n", f);
        break;
    }
    case OMNIPROF_BUFFER_TRACING_KERNEL_SYMBOL: {
        const omniprof_buffer_tracing_kernel_symbol_record_t *r = p;
        fprintf(f, "{\"k\":\"sym\",\"kid\":%" PRIu64 ",\"module\":%" PRIu64 ",\"name\":", r->kernel_id, r->code_object_id);
        jstr(f, r->kernel_name);
        fputs(",\"dname\":", f);
        jstr(f, r->kernel_name_demangled);
        fputs("}\n", f);
        break;
    }
    case OMNIPROF_BUFFER_TRACING_CORRELATION_ID_RETIREMENT: {
        const omniprof_buffer_tracing_correlation_id_retirement_record_t *r = p;
        fprintf(f, "{\"k\":\"retire\",\"corr\":%" PRIu64 ",\"ts\":%" PRIu64 "}\n", r->internal_correlation_id,
                r->timestamp);
        break;
    }
    default: fprintf(f, "{\"k\":\"other\",\"kind\":%u}\n", h->kind); break;
    }
}

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* OMNIPROF_GPU_TEST_INTERCEPT=1: wrap the launch entries of the CUDA driver intercept table and
 * count the calls that go through them. */
static uint64_t g_wrapped_launches;
static int g_table_seen;
static omniprof_cuda_driver_table_t g_prev;

static omniprof_cu_result_t my_launch(void *f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e, unsigned g,
                                      unsigned sm, void *s, void **p, void **x)
{
    __atomic_add_fetch(&g_wrapped_launches, 1, __ATOMIC_RELAXED);
    return g_prev.cuLaunchKernel(f, a, b, c, d, e, g, sm, s, p, x);
}
static omniprof_cu_result_t my_launch_ptsz(void *f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e,
                                           unsigned g, unsigned sm, void *s, void **p, void **x)
{
    __atomic_add_fetch(&g_wrapped_launches, 1, __ATOMIC_RELAXED);
    return g_prev.cuLaunchKernel_ptsz(f, a, b, c, d, e, g, sm, s, p, x);
}
static omniprof_cu_result_t my_launchex(const void *cfg, void *f, void **p, void **x)
{
    __atomic_add_fetch(&g_wrapped_launches, 1, __ATOMIC_RELAXED);
    return g_prev.cuLaunchKernelEx(cfg, f, p, x);
}
static omniprof_cu_result_t my_launchex_ptsz(const void *cfg, void *f, void **p, void **x)
{
    __atomic_add_fetch(&g_wrapped_launches, 1, __ATOMIC_RELAXED);
    return g_prev.cuLaunchKernelEx_ptsz(cfg, f, p, x);
}

static void on_table(omniprof_intercept_table_t type, uint64_t ver, uint64_t inst, void **tables, uint64_t n, void *data)
{
    (void)ver, (void)inst, (void)data;
    if (type != OMNIPROF_INTERCEPT_TABLE_CUDA_DRIVER || n < 1) return;
    omniprof_cuda_driver_table_t *t = tables[0];
    g_prev = *t;
    t->cuLaunchKernel = my_launch;
    t->cuLaunchKernel_ptsz = my_launch_ptsz;
    t->cuLaunchKernelEx = my_launchex;
    t->cuLaunchKernelEx_ptsz = my_launchex_ptsz;
    g_table_seen = 1;
}

static void on_buffer(omniprof_context_id_t ctx, omniprof_buffer_id_t id, omniprof_record_header_t **headers,
                      size_t n, void *data, uint64_t drop_count)
{
    (void)ctx, (void)id, (void)data;
    pthread_mutex_lock(&g_lock);
    g_records += n;
    g_drops += drop_count;
    if (g_out && !g_quiet)
        for (size_t i = 0; i < n; i++)
            if (headers[i]->category == OMNIPROF_RECORD_CATEGORY_TRACING) write_record(g_out, headers[i]);
    if (g_out) fflush(g_out);
    pthread_mutex_unlock(&g_lock);
}

static int tool_init(omniprof_client_finalize_t fini, void *data)
{
    (void)fini, (void)data;
    const char *path = getenv("OMNIPROF_GPU_TEST_OUTPUT");
    const char *kinds = getenv("OMNIPROF_GPU_TEST_KINDS");
    if (!kinds) kinds = "all";
    g_quiet = !path || !strcmp(kinds, "kernel-quiet") || !strcmp(kinds, "api-quiet") ||
              !strcmp(kinds, "marker-quiet");
    if (path) g_out = fopen(path, "w");
    if (omniprof_create_context(&g_ctx) != OMNIPROF_STATUS_SUCCESS) return -1;
    omniprof_status_t st = omniprof_create_buffer(g_ctx, 64u << 20, 48u << 20, OMNIPROF_BUFFER_POLICY_LOSSLESS,
                                                  on_buffer, NULL, &g_buf);
    if (st != OMNIPROF_STATUS_SUCCESS) {
        fprintf(stderr, "gpu_test_tool: create_buffer: %s\n", omniprof_get_status_string(st));
        return -1;
    }
    static const omniprof_buffer_tracing_kind_t all[] = {
        OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API,  OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API,
        OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH,   OMNIPROF_BUFFER_TRACING_MEMORY_COPY,
        OMNIPROF_BUFFER_TRACING_MEMORY_SET,        OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION,
        OMNIPROF_BUFFER_TRACING_SYNCHRONIZATION,   OMNIPROF_BUFFER_TRACING_MARKER_API,
        OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API,  OMNIPROF_BUFFER_TRACING_CODE_OBJECT,
        OMNIPROF_BUFFER_TRACING_KERNEL_SYMBOL,     OMNIPROF_BUFFER_TRACING_CORRELATION_ID_RETIREMENT};
    static const omniprof_buffer_tracing_kind_t kernel_only[] = {OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH,
                                                                 OMNIPROF_BUFFER_TRACING_MEMORY_COPY};
    static const omniprof_buffer_tracing_kind_t api[] = {OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API,
                                                         OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API,
                                                         OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH,
                                                         OMNIPROF_BUFFER_TRACING_MEMORY_COPY};
    const omniprof_buffer_tracing_kind_t *k = all;
    size_t nk = sizeof all / sizeof all[0];
    static const omniprof_buffer_tracing_kind_t marker[] = {OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API};
    if (!strncmp(kinds, "kernel", 6)) k = kernel_only, nk = 2;
    else if (!strncmp(kinds, "marker", 6)) k = marker, nk = 1;
    else if (!strncmp(kinds, "api", 3)) k = api, nk = 4;
    for (size_t i = 0; i < nk; i++) {
        st = omniprof_configure_buffer_tracing_service(g_ctx, k[i], NULL, 0, g_buf);
        if (st != OMNIPROF_STATUS_SUCCESS)
            fprintf(stderr, "gpu_test_tool: kind %d: %s\n", (int)k[i], omniprof_get_status_string(st));
    }
    st = omniprof_start_context(g_ctx);
    if (st != OMNIPROF_STATUS_SUCCESS) fprintf(stderr, "gpu_test_tool: start_context: %s\n", omniprof_get_status_string(st));
    return 0;
}

static void tool_fini(void *data)
{
    (void)data;
    omniprof_flush_buffer(g_buf);
    pthread_mutex_lock(&g_lock);
    if (g_out) {
        /* the file stays open: the SDK may deliver the last records after this (at its final flush) */
        if (getenv("OMNIPROF_GPU_TEST_INTERCEPT"))
            fprintf(g_out, "{\"k\":\"intercept\",\"table\":%d,\"launches\":%" PRIu64 "}\n", g_table_seen,
                    g_wrapped_launches);
        fprintf(g_out, "{\"k\":\"stats\",\"records\":%" PRIu64 ",\"drops\":%" PRIu64 "}\n", g_records, g_drops);
        fflush(g_out);
    }
    pthread_mutex_unlock(&g_lock);
}

static omniprof_tool_configure_result_t g_result = {sizeof(omniprof_tool_configure_result_t), tool_init, tool_fini,
                                                     NULL};

__attribute__((visibility("default"))) omniprof_tool_configure_result_t *
omniprof_configure(uint32_t version, const char *runtime_version, uint32_t priority, omniprof_client_id_t *id)
{
    (void)version, (void)runtime_version, (void)priority;
    if (id) id->name = "gpu-test-tool";
    if (getenv("OMNIPROF_GPU_TEST_INTERCEPT")) {
        omniprof_status_t st = omniprof_at_intercept_table_registration(on_table, OMNIPROF_INTERCEPT_TABLE_CUDA_DRIVER, NULL);
        if (st != OMNIPROF_STATUS_SUCCESS)
            fprintf(stderr, "gpu_test_tool: intercept registration: %s\n", omniprof_get_status_string(st));
    }
    return &g_result;
}
