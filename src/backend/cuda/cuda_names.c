/* cuda_names.c — classes of CUDA API calls, operation names of the CUDA kinds, the decoded
 * arguments of a call, and kernel-name demangling.
 *
 * Operations of CUDA_RUNTIME_API / CUDA_DRIVER_API are CUPTI's callback ids. Their names and
 * argument decoders are the generated rows of cuda_api.c (from CUPTI's headers, at build time):
 * the id's name without CUPTI's version suffix ("cudaLaunchKernel_v7000" → "cudaLaunchKernel";
 * "_ptsz" variants keep their suffix). Each id also gets a class (launch, graph launch, copy,
 * set, allocation, synchronization) decided from its name once, so the per-call path is one
 * table lookup.
 *
 * Kernel names: CUPTI gives the mangled name; the demangled one comes from libstdc++'s
 * __cxa_demangle (looked up at run time, so that a plain C program does not need libstdc++;
 * if it is absent the demangled name equals the mangled one). Both are interned once per
 * distinct name (a small hash table keyed by the name's FNV-1a hash); kernel_id is that hash,
 * so a dispatch record and the KERNEL_SYMBOL record of the same kernel share it. */
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_api.h"
#include "backend/cuda/cuda_internal.h"
#include "common/alloc.h"
#include "common/op_names.h"
#include "common/log.h"

static op_cuda_cbinfo g_rt[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static op_cuda_cbinfo g_drv[CUPTI_DRIVER_TRACE_CBID_SIZE];
static pthread_once_t g_names_once = PTHREAD_ONCE_INIT;

static int contains(const char *s, const char *w) { return strstr(s, w) != NULL; }

static uint8_t classify(const char *n)
{
    if (contains(n, "GraphLaunch")) return OP_CUDA_CLS_GRAPH;
    if (contains(n, "LaunchHostFunc")) return 0;
    if (contains(n, "LaunchKernel") || contains(n, "LaunchCooperativeKernel") || !strcmp(n, "cudaLaunch") ||
        !strcmp(n, "cudaLaunch_ptsz") || !strcmp(n, "cuLaunch") || !strcmp(n, "cuLaunchGrid") ||
        !strcmp(n, "cuLaunchGridAsync"))
        return OP_CUDA_CLS_LAUNCH;
    if (contains(n, "Memcpy")) return OP_CUDA_CLS_MEMCPY;
    if (contains(n, "Memset")) return OP_CUDA_CLS_MEMSET;
    if (contains(n, "Malloc") || contains(n, "MemAlloc") || contains(n, "HostAlloc") || contains(n, "Free"))
        return OP_CUDA_CLS_ALLOC;
    size_t len = strlen(n);
    if ((len > 11 && !strcmp(n + len - 11, "Synchronize")) || contains(n, "StreamWaitEvent") ||
        contains(n, "EventRecord"))
        return OP_CUDA_CLS_SYNC;
    return 0;
}

static void fill(CUpti_CallbackDomain dom, op_cuda_cbinfo *tab, uint32_t n)
{
    for (uint32_t id = 1; id < n; id++) {
        tab[id].name = op_cuda_api_name(dom, id); /* generated rows: static strings */
        if (tab[id].name) tab[id].cls = classify(tab[id].name);
    }
}

static void names_init_once(void)
{
    fill(CUPTI_CB_DOMAIN_RUNTIME_API, g_rt, CUPTI_RUNTIME_TRACE_CBID_SIZE);
    fill(CUPTI_CB_DOMAIN_DRIVER_API, g_drv, CUPTI_DRIVER_TRACE_CBID_SIZE);
}

void op_cuda_names_init(void) { pthread_once(&g_names_once, names_init_once); }

static const op_cuda_cbinfo g_none = {NULL, 0};

const op_cuda_cbinfo *op_cuda_cbinfo_get(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE) return &g_rt[cbid];
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE) return &g_drv[cbid];
    return &g_none;
}

/* ------------------------------------------------------------------------------------------ */
/* Operation names of the kinds this backend owns.                                            */

#define NOPS(a) ((int32_t)(sizeof(a) / sizeof((a)[0])))

/* The kinds this backend owns whose operations are a fixed list: their names are
 * common/op_names.c's, the one table every producer and the writer read. */
static const char *const *fixed_ops(uint32_t kind, int32_t *n)
{
    switch (kind) {
    case OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH:
    case OMNIPROF_BUFFER_TRACING_MEMORY_COPY:
    case OMNIPROF_BUFFER_TRACING_MEMORY_SET:
    case OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION:
    case OMNIPROF_BUFFER_TRACING_SYNCHRONIZATION:
    case OMNIPROF_BUFFER_TRACING_CUDA_EVENT:
    case OMNIPROF_BUFFER_TRACING_CODE_OBJECT:
    case OMNIPROF_BUFFER_TRACING_KERNEL_SYMBOL: return op_fixed_operation_names(kind, n);
    default: *n = 0; return NULL;
    }
}

const char *op_cuda_operation_name(uint32_t kind, int32_t op)
{
    op_cuda_names_init();
    if (op <= 0) return NULL;
    if (kind == OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API)
        return op < CUPTI_RUNTIME_TRACE_CBID_SIZE ? g_rt[op].name : NULL;
    if (kind == OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API)
        return op < CUPTI_DRIVER_TRACE_CBID_SIZE ? g_drv[op].name : NULL;
    int32_t n;
    const char *const *t = fixed_ops(kind, &n);
    return (t && op < n) ? t[op] : NULL;
}

int op_cuda_iterate_operations(uint32_t kind, int (*cb)(int32_t, void *), void *data)
{
    op_cuda_names_init();
    const op_cuda_cbinfo *tab = NULL;
    int32_t n = 0;
    if (kind == OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API) tab = g_rt, n = CUPTI_RUNTIME_TRACE_CBID_SIZE;
    else if (kind == OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API) tab = g_drv, n = CUPTI_DRIVER_TRACE_CBID_SIZE;
    if (tab) {
        for (int32_t i = 1; i < n; i++)
            if (tab[i].name && cb(i, data)) break;
        return 0;
    }
    const char *const *t = fixed_ops(kind, &n);
    if (!t) return -1;
    for (int32_t i = 1; i < n; i++)
        if (cb(i, data)) break;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Argument decoding.                                                                          */

#define ARG_U(NAME, V) do { if (n < max) { out[n].name = NAME; out[n].type = OMNIPROF_ARG_TYPE_UINT; out[n].reserved = 0; out[n].value.u64 = (uint64_t)(V); n++; } } while (0)
#define ARG_P(NAME, V) do { if (n < max) { out[n].name = NAME; out[n].type = OMNIPROF_ARG_TYPE_POINTER; out[n].reserved = 0; out[n].value.u64 = (uint64_t)(uintptr_t)(V); n++; } } while (0)
#define ARG_S(NAME, V) do { if (n < max && (V)) { out[n].name = NAME; out[n].type = OMNIPROF_ARG_TYPE_STRING; out[n].reserved = 0; out[n].value.str = (V); n++; } } while (0)

/* The kernel's name (launches: CUPTI's symbolName, interned), then every argument of the call
 * as its row decodes it; string arguments are interned, as the record outlives the call. */
uint32_t op_cuda_decode_args(CUpti_CallbackDomain dom, CUpti_CallbackId id, const void *p, const char *symbol,
                             omniprof_arg_t *out, uint32_t max)
{
    uint32_t n = 0;
    if (!p) return 0;
    if (symbol) {
        /* CUPTI's symbolName pointer is stable per function: intern once per thread and name */
        static __thread const char *t_sym, *t_interned;
        if (symbol != t_sym) t_interned = op_sdk_intern(symbol), t_sym = symbol;
        ARG_S("kernel", t_interned);
    }
    uint32_t first = n;
    n += op_cuda_api_decode(dom, id, p, out + n, max - n);
    for (uint32_t i = first; i < n; i++)
        if (out[i].type == OMNIPROF_ARG_TYPE_STRING)
            out[i].value.str = op_sdk_intern(out[i].value.str);
    return n;
}

/* ------------------------------------------------------------------------------------------ */
/* Arguments of records (API records carry theirs inline; GPU records expose their fields).   */

static int emit_arg(omniprof_arg_iterate_cb_t cb, void *data, uint32_t kind, int32_t op, uint32_t idx,
                    const omniprof_arg_t *a)
{
    char text[64];
    const char *s = text;
    switch (a->type) {
    case OMNIPROF_ARG_TYPE_INT: snprintf(text, sizeof text, "%" PRId64, a->value.i64); break;
    case OMNIPROF_ARG_TYPE_UINT: snprintf(text, sizeof text, "%" PRIu64, a->value.u64); break;
    case OMNIPROF_ARG_TYPE_DOUBLE: snprintf(text, sizeof text, "%g", a->value.f64); break;
    case OMNIPROF_ARG_TYPE_POINTER: snprintf(text, sizeof text, "0x%" PRIx64, a->value.u64); break;
    case OMNIPROF_ARG_TYPE_STRING: s = a->value.str ? a->value.str : ""; break;
    default: text[0] = 0; break;
    }
    return cb(kind, op, idx, a, s, data);
}

omniprof_status_t op_cuda_iterate_record_args(const omniprof_record_header_t *h, omniprof_arg_iterate_cb_t cb,
                                              void *data)
{
    if (!h || !h->payload || !cb) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    omniprof_arg_t a[16];
    uint32_t n = 0, max = 16;
    omniprof_arg_t *out = a;
    int32_t op = ((const int32_t *)h->payload)[3];
    switch (h->kind) {
    case OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API:
    case OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API: {
        const omniprof_buffer_tracing_api_record_t *r = h->payload;
        for (uint32_t i = 0; i < r->num_args; i++)
            if (emit_arg(cb, data, h->kind, op, i, &r->args[i])) break;
        return OMNIPROF_STATUS_SUCCESS;
    }
    case OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH: {
        const omniprof_buffer_tracing_kernel_dispatch_record_t *r = h->payload;
        ARG_S("kernel", r->kernel_name);
        ARG_U("gridDimX", r->grid_size.x); ARG_U("gridDimY", r->grid_size.y); ARG_U("gridDimZ", r->grid_size.z);
        ARG_U("blockDimX", r->block_size.x); ARG_U("blockDimY", r->block_size.y); ARG_U("blockDimZ", r->block_size.z);
        ARG_U("staticSharedMemory", r->static_shared_memory);
        ARG_U("dynamicSharedMemory", r->dynamic_shared_memory);
        ARG_U("registersPerThread", r->registers_per_thread);
        ARG_U("stream", r->stream_id.handle);
        break;
    }
    case OMNIPROF_BUFFER_TRACING_MEMORY_COPY: {
        const omniprof_buffer_tracing_memory_copy_record_t *r = h->payload;
        ARG_U("bytes", r->bytes); ARG_U("srcKind", r->src_memory_kind); ARG_U("dstKind", r->dst_memory_kind);
        ARG_U("stream", r->stream_id.handle); ARG_U("async", r->is_async);
        break;
    }
    case OMNIPROF_BUFFER_TRACING_MEMORY_SET: {
        const omniprof_buffer_tracing_memory_set_record_t *r = h->payload;
        ARG_U("bytes", r->bytes); ARG_U("value", r->value); ARG_U("stream", r->stream_id.handle);
        break;
    }
    case OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION: {
        const omniprof_buffer_tracing_memory_allocation_record_t *r = h->payload;
        ARG_P("ptr", r->address); ARG_U("bytes", r->allocation_size); ARG_U("memoryKind", r->memory_kind);
        break;
    }
    default: return OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND;
    }
    for (uint32_t i = 0; i < n; i++)
        if (emit_arg(cb, data, h->kind, op, i, &a[i])) break;
    return OMNIPROF_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* Kernel names.                                                                               */

typedef char *(*cxa_demangle_t)(const char *, char *, size_t *, int *);

typedef struct kname {
    struct kname *next;
    uint64_t hash;
    const char *mangled;
    const char *demangled;
} kname;

#define KNAME_BUCKETS 1024
static kname *g_kn[KNAME_BUCKETS];
static pthread_mutex_t g_kn_lock = PTHREAD_MUTEX_INITIALIZER;
static cxa_demangle_t g_demangle;
static int g_demangle_looked;

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ? h : 1;
}

static const char *demangle(const char *m)
{
    if (!g_demangle_looked) {
        g_demangle_looked = 1;
        g_demangle = (cxa_demangle_t)dlsym(RTLD_DEFAULT, "__cxa_demangle");
        if (!g_demangle) {
            void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
            if (h) g_demangle = (cxa_demangle_t)dlsym(h, "__cxa_demangle");
        }
    }
    if (!g_demangle || m[0] != '_' || m[1] != 'Z') return op_sdk_intern(m);
    int status = -1;
    char *d = g_demangle(m, NULL, NULL, &status);
    if (!d || status != 0) {
        free(d);
        return op_sdk_intern(m);
    }
    const char *r = op_sdk_intern(d);
    free(d); /* allocated by libstdc++ with malloc */
    return r;
}

void op_cuda_kernel_names(const char *name, const char **mangled, const char **demangled, uint64_t *kernel_id)
{
    if (!name) name = "<unknown kernel>";
    uint64_t h = fnv1a(name);
    pthread_mutex_lock(&g_kn_lock);
    for (kname *k = g_kn[h % KNAME_BUCKETS]; k; k = k->next)
        if (k->hash == h && !strcmp(k->mangled, name)) {
            *mangled = k->mangled, *demangled = k->demangled, *kernel_id = h;
            pthread_mutex_unlock(&g_kn_lock);
            return;
        }
    kname *k = op_malloc(sizeof *k);
    const char *m = op_sdk_intern(name), *d = demangle(name);
    if (k) {
        k->hash = h, k->mangled = m, k->demangled = d;
        k->next = g_kn[h % KNAME_BUCKETS];
        g_kn[h % KNAME_BUCKETS] = k;
    }
    pthread_mutex_unlock(&g_kn_lock);
    *mangled = m, *demangled = d, *kernel_id = h;
}
