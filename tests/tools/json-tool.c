/* json-tool.c — the reference SDK client (libomniprof-json-tool.so): subscribes to every
 * buffer tracing kind and every callback tracing kind and writes each record it receives as
 * one JSON line. LD_PRELOAD it (with libomniprof-sdk.so on its runpath) into any program;
 * integration tests read its output to check the SDK's invariants, as upstream's json-tool.
 *
 * Settings (environment, read once in initialize):
 *   OMNIPROF_JSON_TOOL_OUTPUT   output path (default omniprof-json-tool.<pid>.jsonl in the
 *                               current directory; never stdout, so the program's output is
 *                               unchanged). "%pid%" in the path is replaced by the pid.
 *   OMNIPROF_JSON_TOOL_BUFFER   buffer size in bytes (default 65536), LOSSLESS, watermark
 *                               at half the size.
 *
 * Line shapes:
 *   {"category":"buffer","kind":3,"kind_name":"MARKER_API","operation":2,
 *    "operation_name":"omniprof_range_push","correlation_id":{...},"start":..,"end":..,
 *    "thread_id":..,"message":"..","args":{..}}
 *   {"category":"callback","phase":"enter"|"exit"|"none",...}
 *   {"category":"summary","pid":..,"records":..,"callbacks":..,"drop_count":..,
 *    "kinds_configured":..,"callback_kinds_configured":..}   (last line, at finalize) */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "omniprof/omniprof.h"

static FILE *g_out;
static pthread_mutex_t g_out_lock = PTHREAD_MUTEX_INITIALIZER;
static omniprof_context_id_t g_ctx;
static omniprof_buffer_id_t g_buf;
static uint64_t g_records, g_callbacks, g_drops;
static int g_nkinds, g_ncbkinds;

static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static const char *kind_name(uint32_t kind)
{
    const char *n = NULL;
    if (omniprof_query_buffer_tracing_kind_name((omniprof_buffer_tracing_kind_t)kind, &n, NULL) != OMNIPROF_STATUS_SUCCESS)
        return "unknown";
    return n;
}

static const char *op_name(uint32_t kind, int32_t op)
{
    const char *n = NULL;
    if (omniprof_query_buffer_tracing_kind_operation_name((omniprof_buffer_tracing_kind_t)kind, op, &n, NULL) !=
        OMNIPROF_STATUS_SUCCESS)
        return "";
    return n;
}

typedef struct args_ctx {
    FILE *f;
    int n;
} args_ctx;

static int put_arg(uint32_t kind, omniprof_tracing_operation_t op, uint32_t i, const omniprof_arg_t *arg,
                   const char *value_str, void *data)
{
    (void)kind;
    (void)op;
    (void)i;
    args_ctx *a = data;
    fputs(a->n++ ? "," : "", a->f);
    put_string(a->f, arg->name ? arg->name : "?");
    fputc(':', a->f);
    put_string(a->f, value_str);
    return 0;
}

static void put_corr(FILE *f, const omniprof_correlation_id_t *c)
{
    fprintf(f, ",\"correlation_id\":{\"internal\":%" PRIu64 ",\"external\":%" PRIu64 ",\"ancestor\":%" PRIu64 "}",
            c->internal, c->external.value, c->ancestor);
}

static void write_record(FILE *f, omniprof_record_header_t *h)
{
    const uint64_t *p = h->payload;
    uint32_t kind = h->kind;
    int32_t op = (int32_t)(p[1] >> 32);
    fprintf(f, "{\"category\":\"buffer\",\"record_category\":%u,\"kind\":%u", h->category, kind);
    if (h->category != OMNIPROF_RECORD_CATEGORY_TRACING) {
        fprintf(f, ",\"size\":%" PRIu64 "}\n", p[0]);
        return;
    }
    fputs(",\"kind_name\":", f);
    put_string(f, kind_name(kind));
    fprintf(f, ",\"operation\":%d,\"operation_name\":", op);
    put_string(f, op_name(kind, op));
    switch (kind) {
    case OMNIPROF_BUFFER_TRACING_MARKER_API:
    case OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API: {
        const omniprof_buffer_tracing_marker_record_t *r = h->payload;
        put_corr(f, &r->correlation_id);
        fprintf(f,
                ",\"start\":%" PRIu64 ",\"end\":%" PRIu64 ",\"thread_id\":%" PRIu64 ",\"end_thread_id\":%" PRIu64
                ",\"range_id\":%" PRIu64 ",\"nesting_level\":%d,\"source\":%u,\"message_length\":%u,\"message\":",
                r->start_timestamp, r->end_timestamp, r->thread_id, r->end_thread_id, r->range_id, r->nesting_level,
                r->source, r->message_length);
        put_string(f, r->message);
        break;
    }
    case OMNIPROF_BUFFER_TRACING_CORRELATION_ID_RETIREMENT: {
        const omniprof_buffer_tracing_correlation_id_retirement_record_t *r = h->payload;
        fprintf(f, ",\"timestamp\":%" PRIu64 ",\"internal_correlation_id\":%" PRIu64, r->timestamp,
                r->internal_correlation_id);
        break;
    }
    case OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API:
    case OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API:
    case OMNIPROF_BUFFER_TRACING_OPENCL_API:
    case OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER: {
        const omniprof_buffer_tracing_api_record_t *r = h->payload;
        put_corr(f, &r->correlation_id);
        fprintf(f, ",\"start\":%" PRIu64 ",\"end\":%" PRIu64 ",\"thread_id\":%" PRIu64 ",\"return_value\":%d",
                r->start_timestamp, r->end_timestamp, r->thread_id, r->return_value);
        break;
    }
#define PUT_ASYNC(TYPE)                                                                                   \
    {                                                                                                     \
        const TYPE *r = h->payload;                                                                       \
        fprintf(f,                                                                                        \
                ",\"correlation_id\":{\"internal\":%" PRIu64 ",\"external\":%" PRIu64 "},\"start\":%" PRIu64       \
                ",\"end\":%" PRIu64 ",\"thread_id\":%" PRIu64,                                                    \
                r->correlation_id.internal, r->correlation_id.external.value, r->start_timestamp,          \
                r->end_timestamp, r->thread_id);                                                          \
        break;                                                                                            \
    }
    case OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH: PUT_ASYNC(omniprof_buffer_tracing_kernel_dispatch_record_t)
    case OMNIPROF_BUFFER_TRACING_MEMORY_COPY: PUT_ASYNC(omniprof_buffer_tracing_memory_copy_record_t)
    case OMNIPROF_BUFFER_TRACING_MEMORY_SET: PUT_ASYNC(omniprof_buffer_tracing_memory_set_record_t)
    case OMNIPROF_BUFFER_TRACING_SYNCHRONIZATION: PUT_ASYNC(omniprof_buffer_tracing_synchronization_record_t)
#undef PUT_ASYNC
    case OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION: {
        const omniprof_buffer_tracing_memory_allocation_record_t *r = h->payload;
        put_corr(f, &r->correlation_id);
        fprintf(f, ",\"start\":%" PRIu64 ",\"end\":%" PRIu64 ",\"thread_id\":%" PRIu64, r->start_timestamp,
                r->end_timestamp, r->thread_id);
        break;
    }
    default: fprintf(f, ",\"size\":%" PRIu64, p[0]); break;
    }
    fputs(",\"args\":{", f);
    args_ctx a = {f, 0};
    omniprof_iterate_buffer_tracing_record_args(h, put_arg, &a);
    fputs("}}\n", f);
}

static void buffer_cb(omniprof_context_id_t ctx, omniprof_buffer_id_t buf, omniprof_record_header_t **headers,
                      size_t n, void *data, uint64_t drop_count)
{
    (void)ctx;
    (void)buf;
    (void)data;
    pthread_mutex_lock(&g_out_lock);
    if (g_out) {
        for (size_t i = 0; i < n; i++) write_record(g_out, headers[i]);
    }
    g_records += n;
    g_drops = drop_count;
    pthread_mutex_unlock(&g_out_lock);
}

static void callback_cb(omniprof_callback_tracing_record_t rec, omniprof_user_data_t *user_data, void *data)
{
    (void)data;
    static const char *const phases[] = {"none", "enter", "exit"};
    if (rec.phase == OMNIPROF_CALLBACK_PHASE_ENTER) user_data->value = rec.correlation_id.internal;
    pthread_mutex_lock(&g_out_lock);
    g_callbacks++;
    if (g_out) {
        const char *kn = NULL, *on = NULL;
        omniprof_query_callback_tracing_kind_name((omniprof_callback_tracing_kind_t)rec.kind, &kn, NULL);
        omniprof_query_callback_tracing_kind_operation_name((omniprof_callback_tracing_kind_t)rec.kind, rec.operation,
                                                            &on, NULL);
        fprintf(g_out, "{\"category\":\"callback\",\"kind\":%u,\"kind_name\":", rec.kind);
        put_string(g_out, kn ? kn : "unknown");
        fprintf(g_out, ",\"operation\":%d,\"operation_name\":", rec.operation);
        put_string(g_out, on ? on : "");
        fprintf(g_out, ",\"phase\":\"%s\",\"thread_id\":%" PRIu64 ",\"user_data\":%" PRIu64,
                rec.phase < 3 ? phases[rec.phase] : "?", rec.thread_id, user_data->value);
        put_corr(g_out, &rec.correlation_id);
        fputs(",\"args\":{", g_out);
        args_ctx a = {g_out, 0};
        omniprof_iterate_callback_tracing_record_args(&rec, put_arg, &a);
        fputs("}}\n", g_out);
    }
    pthread_mutex_unlock(&g_out_lock);
}

static int configure_kind(omniprof_buffer_tracing_kind_t kind, void *data)
{
    (void)data;
    if (omniprof_configure_buffer_tracing_service(g_ctx, kind, NULL, 0, g_buf) == OMNIPROF_STATUS_SUCCESS) g_nkinds++;
    return 0;
}

static int configure_cb_kind(omniprof_callback_tracing_kind_t kind, void *data)
{
    (void)data;
    if (omniprof_configure_callback_tracing_service(g_ctx, kind, NULL, 0, callback_cb, NULL) == OMNIPROF_STATUS_SUCCESS)
        g_ncbkinds++;
    return 0;
}

static int tool_init(omniprof_client_finalize_t fini, void *tool_data)
{
    (void)fini;
    (void)tool_data;
    const char *path = getenv("OMNIPROF_JSON_TOOL_OUTPUT");
    char buf[4096];
    if (!path || !*path) {
        snprintf(buf, sizeof buf, "omniprof-json-tool.%d.jsonl", (int)getpid());
    } else {
        const char *pid = strstr(path, "%pid%");
        if (pid)
            snprintf(buf, sizeof buf, "%.*s%d%s", (int)(pid - path), path, (int)getpid(), pid + 5);
        else
            snprintf(buf, sizeof buf, "%s", path);
    }
    g_out = fopen(buf, "w");
    if (!g_out) {
        fprintf(stderr, "json-tool: cannot open %s\n", buf);
        return -1;
    }
    size_t size = 65536;
    const char *sz = getenv("OMNIPROF_JSON_TOOL_BUFFER");
    if (sz && atol(sz) > 0) size = (size_t)atol(sz);
    if (omniprof_create_context(&g_ctx) != OMNIPROF_STATUS_SUCCESS) return -1;
    if (omniprof_create_buffer(g_ctx, size, size / 2, OMNIPROF_BUFFER_POLICY_LOSSLESS, buffer_cb, NULL, &g_buf) !=
        OMNIPROF_STATUS_SUCCESS)
        return -1;
    omniprof_iterate_buffer_tracing_kinds(configure_kind, NULL);
    omniprof_iterate_callback_tracing_kinds(configure_cb_kind, NULL);
    return omniprof_start_context(g_ctx) == OMNIPROF_STATUS_SUCCESS ? 0 : -1;
}

static void tool_fini(void *tool_data)
{
    (void)tool_data;
    omniprof_flush_buffer(g_buf);
    pthread_mutex_lock(&g_out_lock);
    if (g_out) {
        fprintf(g_out,
                "{\"category\":\"summary\",\"pid\":%d,\"records\":%" PRIu64 ",\"callbacks\":%" PRIu64
                ",\"drop_count\":%" PRIu64 ",\"kinds_configured\":%d,\"callback_kinds_configured\":%d}\n",
                (int)getpid(), g_records, g_callbacks, g_drops, g_nkinds, g_ncbkinds);
        fclose(g_out);
        g_out = NULL;
    }
    pthread_mutex_unlock(&g_out_lock);
}

OMNIPROF_API omniprof_tool_configure_result_t *omniprof_configure(uint32_t version, const char *runtime_version,
                                                                  uint32_t priority, omniprof_client_id_t *client_id)
{
    (void)version;
    (void)runtime_version;
    (void)priority;
    static omniprof_tool_configure_result_t result = {sizeof(result), tool_init, tool_fini, NULL};
    if (client_id) client_id->name = "json-tool";
    return &result;
}
