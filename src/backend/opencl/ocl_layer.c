/* ocl_layer.c — libomniprof-backend-opencl.so as an OpenCL ICD-loader layer (cl_loader_layers)
 * and as an omniprof backend: the two layer entry points, the front dispatch table handed to
 * the loader, the intercept table handed to tools, and the backend descriptor.
 *
 * How the layer gets into the loader's chain. The ICD loader (ocl-icd ≥ 2.3, Khronos loader
 * ≥ 2020.12) reads OPENCL_LAYERS (':'-separated paths) once, at its first call, dlopens each
 * layer, asks clGetLayerInfo(CL_LAYER_API_VERSION) for 100 and calls clInitLayer with the
 * dispatch table of what comes after the layer; the layer returns its own table, which the
 * loader copies and calls for every cl* function. `omniprof run` puts this library into
 * OPENCL_LAYERS. A tool preloaded without the launcher makes the SDK load the backend (for an
 * OpenCL kind or the OpenCL intercept table); its start then adds the library to OPENCL_LAYERS,
 * which works when the program has not called OpenCL yet (docs/opencl.md says so). The loader's
 * dlopen of the same file finds the library the SDK loaded: one instance, one state.
 *
 * State machine (ocl_on):
 *
 *    LOADED ──start()──▶ ON ──finalize()/fork child──▶ OFF
 *
 * The layer forwards every call in every state; only ON traces. clInitLayer may come before or
 * after start (the loader initializes at the program's first OpenCL call). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <CL/cl_layer.h>

#include "backend/opencl/ocl_internal.h"
#include "common/log.h"

#define LAYER_API __attribute__((visibility("default")))

cl_icd_dispatch ocl_next;
cl_icd_dispatch ocl_table;
_Atomic int ocl_on;
_Atomic int ocl_activity;
_Atomic int ocl_layer_ready;
__thread int ocl_internal_calls;

static cl_icd_dispatch g_front;
static __thread omniprof_thread_id_t t_tid;

omniprof_thread_id_t ocl_tid(void)
{
    if (!t_tid) t_tid = (omniprof_thread_id_t)syscall(SYS_gettid);
    return t_tid;
}

/* ------------------------------------------------------------------------------------------ */
/* Front entries: what the loader calls. Each calls through the intercept table.              */

#define OCL_FRONT_ERR(RET, NAME, PARAMS, ARGS) \
    static RET CL_API_CALL front_##NAME PARAMS { return ocl_table.NAME ARGS; }
#define OCL_FRONT_OBJ OCL_FRONT_ERR
#define OCL_FRONT_PTR OCL_FRONT_ERR
#define OCL_FRONT_VOID(RET, NAME, PARAMS, ARGS) \
    static RET CL_API_CALL front_##NAME PARAMS { ocl_table.NAME ARGS; }
#define OCL_API(IDX, NAME, RK, RET, S, PARAMS, ARGS, ADDRS, DECODE) OCL_FRONT_##RK(RET, NAME, PARAMS, ARGS)
#define OCL_API_NONE(IDX, NAME)
#include "backend/opencl/ocl_api.def"
#undef OCL_API
#undef OCL_API_NONE

static void build_front(void)
{
#define OCL_API(IDX, NAME, RK, RET, S, PARAMS, ARGS, ADDRS, DECODE) g_front.NAME = ocl_next.NAME ? front_##NAME : NULL;
#define OCL_API_NONE(IDX, NAME) g_front.NAME = ocl_next.NAME;
#include "backend/opencl/ocl_api.def"
#undef OCL_API
#undef OCL_API_NONE
}

/* ------------------------------------------------------------------------------------------ */
/* The layer entry points (CL/cl_layer.h).                                                     */

LAYER_API cl_int CL_API_CALL clGetLayerInfo(cl_layer_info param_name, size_t param_value_size, void *param_value,
                                            size_t *param_value_size_ret)
{
    static const cl_layer_api_version version = CL_LAYER_API_VERSION_100;
    static const char name[] = "omniprof";
    const void *src;
    size_t n;
    switch (param_name) {
    case CL_LAYER_API_VERSION: src = &version, n = sizeof version; break;
    case CL_LAYER_NAME: src = name, n = sizeof name; break;
    default: return CL_INVALID_VALUE;
    }
    if (param_value) {
        if (param_value_size < n) return CL_INVALID_VALUE;
        memcpy(param_value, src, n);
    }
    if (param_value_size_ret) *param_value_size_ret = n;
    return CL_SUCCESS;
}

LAYER_API cl_int CL_API_CALL clInitLayer(cl_uint num_entries, const cl_icd_dispatch *target_dispatch,
                                         cl_uint *num_entries_ret, const cl_icd_dispatch **layer_dispatch_ret)
{
    if (!target_dispatch || !num_entries_ret || !layer_dispatch_ret) return CL_INVALID_VALUE;
    /* invariant (1): entries past what the loader knows stay NULL */
    uint32_t n = num_entries < OCL_NUM_ENTRIES ? num_entries : OCL_NUM_ENTRIES;
    memset(&ocl_next, 0, sizeof ocl_next);
    memcpy(&ocl_next, target_dispatch, n * sizeof(void *));
    build_front();
    atomic_store(&ocl_layer_ready, 1);
    *num_entries_ret = OCL_NUM_ENTRIES;
    *layer_dispatch_ret = &g_front;
    op_info("opencl: layer initialized by the ICD loader (%u entries from the next layer)", (unsigned)n);
    return CL_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* Backend.                                                                                    */

/* Path of this library, for OPENCL_LAYERS. */
static int own_path(char *out, size_t n)
{
    Dl_info info;
    if (!dladdr((void *)&clInitLayer, &info) || !info.dli_fname || info.dli_fname[0] != '/') return -1;
    snprintf(out, n, "%s", info.dli_fname);
    return 0;
}

static int list_has(const char *list, const char *path)
{
    size_t len = strlen(path);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && strncmp(p, path, n) == 0) return 1;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

/* Loaded by the SDK rather than by the loader: put the layer into OPENCL_LAYERS so that the
 * loader, when the program first calls OpenCL, inserts it. The loader calls the layers in
 * reverse order of the list (the last is outermost): ours goes last, to see the program's
 * calls as made. */
void ocl_join_loader_chain(void)
{
    if (atomic_load(&ocl_layer_ready)) return;
    char path[4096];
    if (own_path(path, sizeof path) != 0) {
        op_warn("opencl: cannot find the path of libomniprof-backend-opencl.so; the layer is not added to "
                "OPENCL_LAYERS and OpenCL calls stay untraced");
        return;
    }
    const char *old = getenv("OPENCL_LAYERS");
    if (old && list_has(old, path)) return;
    char value[8192];
    int w = old && *old ? snprintf(value, sizeof value, "%s:%s", old, path) : snprintf(value, sizeof value, "%s", path);
    if (w < 0 || (size_t)w >= sizeof value || setenv("OPENCL_LAYERS", value, 1) != 0) {
        op_warn("opencl: OPENCL_LAYERS cannot take the layer's path; OpenCL calls stay untraced");
        return;
    }
    void *h = dlopen("libOpenCL.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
        op_info("opencl: layer added to OPENCL_LAYERS after libOpenCL was loaded; calls are traced only if the "
                "program had not called OpenCL yet");
        dlclose(h);
    }
}

static void hand_over_table(void)
{
    if (!op_sdk_intercept_requested(OMNIPROF_INTERCEPT_TABLE_OPENCL)) return;
    void *tables[1] = {&ocl_table};
    omniprof_status_t st = omniprof_set_api_table("opencl", OMNIPROF_OPENCL_TABLE_VERSION, 0, tables, 1);
    if (st != OMNIPROF_STATUS_SUCCESS)
        op_warn("opencl: handing over the OpenCL intercept table failed: %s", omniprof_get_status_string(st));
}

static pthread_mutex_t g_start_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_started;

static omniprof_status_t ocl_start(void)
{
    pthread_mutex_lock(&g_start_lock);
    if (g_started) {
        pthread_mutex_unlock(&g_start_lock);
        return OMNIPROF_STATUS_SUCCESS;
    }
    g_started = 1;
    int act = 0;
    if (op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH)) act |= OCL_ACT_KERNEL;
    if (op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_MEMORY_COPY)) act |= OCL_ACT_COPY;
    if (op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_MEMORY_SET)) act |= OCL_ACT_SET;
    if (op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION)) act |= OCL_ACT_ALLOC;
    atomic_store(&ocl_activity, act);
    ocl_join_loader_chain();
    hand_over_table();
    atomic_store(&ocl_on, 1);
    pthread_mutex_unlock(&g_start_lock);
    op_info("opencl backend on (API %s, activity 0x%x, layer %s)",
            op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_OPENCL_API) ? "traced" : "not traced", (unsigned)act,
            atomic_load(&ocl_layer_ready) ? "in the loader's chain" : "waiting for the loader");
    return OMNIPROF_STATUS_SUCCESS;
}

/* The ICD loader the program loaded never called clInitLayer: say so once, naming the loader's
 * file (a loader without layer support, such as the libOpenCL.so.1 the CUDA toolkit ships, forwards
 * every call straight to the driver, and nothing of OpenCL is traced). */
static void warn_layer_never_initialized(void)
{
    if (atomic_load(&ocl_layer_ready)) return;
    void *h = dlopen("libOpenCL.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return; /* the program never loaded OpenCL: nothing to say */
    void *sym = dlsym(h, "clGetPlatformIDs");
    Dl_info info;
    const char *file = sym && dladdr(sym, &info) && info.dli_fname ? info.dli_fname : "libOpenCL.so.1";
    op_warn("opencl: the program loaded %s, whose ICD loader never initialized omniprof's layer: either the "
            "program made no OpenCL call, or this loader ignores OPENCL_LAYERS; OpenCL was not traced (use a loader "
            "with layer support first on the library path: ocl-icd >= 2.3 or the Khronos loader >= 2020.06)",
            file);
    dlclose(h);
}

static void ocl_finalize(void)
{
    if (!atomic_load(&ocl_on)) return;
    warn_layer_never_initialized();
    ocl_activity_finalize(); /* completes what can complete (bounded), then stops */
    atomic_store(&ocl_on, 0);
}

static void ocl_at_fork_child(void)
{
    /* The child inherits the parent's queues and events only by address; OpenCL drivers do not
     * survive fork. The layer keeps forwarding and traces nothing. */
    atomic_store(&ocl_on, 0);
    ocl_queues_at_fork_child();
}

/* What this backend serves (backend.h): the SDK reads it from the library file and loads the
 * library for these kinds or the table. The GPU activity kinds are shared with other device
 * backends: the SDK loads every backend that lists a configured kind. */
OP_BACKEND_MANIFEST(g_manifest) = {
    .magic = OP_BACKEND_MANIFEST_MAGIC,
    .size = sizeof(op_backend_manifest),
    .name = "opencl",
    .buffer_kinds = {OMNIPROF_BUFFER_TRACING_OPENCL_API, OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH,
                     OMNIPROF_BUFFER_TRACING_MEMORY_COPY, OMNIPROF_BUFFER_TRACING_MEMORY_SET,
                     OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION},
    .intercept_tables = OMNIPROF_INTERCEPT_TABLE_OPENCL,
};

static const op_backend g_desc = {
    .size = sizeof(op_backend),
    .name = "opencl",
    .start = ocl_start,
    .on_context_change = NULL,
    .flush = NULL,
    .finalize = ocl_finalize,
    .at_fork_child = ocl_at_fork_child,
    .operation_name = ocl_operation_name,
    .iterate_operations = ocl_iterate_operations,
    .iterate_record_args = NULL, /* the SDK's: inline arguments of API records */
    .query_agents = ocl_query_agents,
    .symbolize = NULL,
    .manifest = &g_manifest,
};

__attribute__((constructor)) static void ocl_backend_register(void)
{
    ocl_table = ocl_trace;
    omniprof_status_t st = op_sdk_register_backend(&g_desc);
    if (st != OMNIPROF_STATUS_SUCCESS) op_info("opencl backend not registered: %s", omniprof_get_status_string(st));
}
