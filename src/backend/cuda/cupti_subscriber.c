/* cupti_subscriber.c — the CUDA backend: its descriptor, its start, and the process's one CUPTI
 * subscriber, which turns runtime/driver API calls, module loads and NVTX calls into omniprof
 * records and callbacks, and feeds the counters collector's launch hook.
 *
 * State machine of the backend (g_state):
 *
 *    LOADED ──start()──▶ ON ──finalize()──▶ FINALIZED
 *       │                 │
 *       └─(no driver / no GPU / CUPTI held by another tool / error)──▶ OFF   (one log line)
 *
 * Invariants:
 *  (1) At most one cuptiSubscribe_v2 per process, ours; if it fails the backend is OFF and the
 *      application runs untraced (CUPTI error 39 names the subscriber holding CUPTI).
 *  (2) Callbacks after FINALIZED or in a forked child do nothing (op_cuda_off).
 *  (3) Every ENTER that began a correlation id ends it at its EXIT: the frame index is kept in
 *      CUPTI's per-call correlationData slot, so an EXIT whose ENTER we skipped is ignored.
 *  (4) A driver call nested inside a runtime call does not register an async correlation: CUPTI
 *      stamps the activity with the runtime call's id (verified, docs/cuda.md).
 *  (5) Which callbacks are enabled is decided at start: whole domains for traced API kinds; for
 *      GPU activity only, just the call ids of the classes whose records need a launching call.
 *  (6) The backend's own driver calls (the exit-time context synchronization) are not traced.
 *  (7) Off conditions log one line and return SUCCESS to the SDK (so it adds no second line);
 *      the backend then stays OFF and its flush/finalize do nothing.
 *  (8) Activity mode (the default): GPU records are joined to their calls through CUPTI's API
 *      activity records (cupti_activity.c), so no callback of ours runs on the launch path.
 *      Launch-path callbacks are enabled only when a tool configured CUDA callback kinds or
 *      OMNIPROF_CUDA_API_ARGS (then callback mode, for the whole run), when the counters hook
 *      is installed (launch ids only), or once a tool pushes external correlation ids (capture).
 *      The exit flush is then registered at the first context creation.
 *
 * Exit: the first runtime API EXIT registers an atexit handler; it runs before the CUDA
 * runtime's own teardown (registered earlier), synchronizes the contexts kernels were launched
 * in and forces a CUPTI flush, so exit() from any thread loses nothing. The SDK's finalization
 * (its flush hook, then finalize) flushes again.
 *
 * Cost per traced call in callback mode: one table lookup, two clock reads (only when the API
 * kind is traced), the SDK's correlation begin/end and one emit; per async call also one map
 * insert under a spin lock. In activity mode: none on the launch path (CUPTI's own record). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>


#include "omniprof/cuda.h"
#define NVTX_NO_IMPL /* nvtx_table.h: the types only, not NVTX's implementation */
#include "omniprof/cuda_runtime_table.h" /* generated: OMNIPROF_CUDA_RUNTIME_TABLE_VERSION */
#include "omniprof/nvtx_table.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_internal.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/settings.h"

enum { ST_LOADED = 0, ST_ON, ST_OFF, ST_FINALIZED };

volatile int op_cuda_off;
volatile int op_cuda_forked;
static int g_state = ST_LOADED;
static pthread_mutex_t g_start_lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_SubscriberHandle g_sub;
static int g_rt_full, g_drv_full, g_nvtx_on, g_code_on;
static int g_capture_ext; /* activity mode: launch callbacks capture external ids (a tool pushed some) */
static int g_pcs;         /* PC sampling configured (cupti_pcsampling.c) */
static int g_pms;         /* PM sampling configured (cupti_pmsampling.c) */
static int g_sass;        /* SASS metrics configured (cupti_sassmetrics.c) */
static int g_selected;    /* --selected-regions: cuProfilerStart/Stop resume/pause collection */
static int g_collect_off; /* no active context wants our records, or paused: CUPTI's activity kinds
                           * are off (written under g_start_lock, read by callbacks) */
static int g_graphs;      /* the program created a CUDA graph (resource callback) */

/* launch hook (counters); hook and data published together under g_start_lock, read racily */
static op_cuda_launch_hook_t volatile g_hook;
static void *volatile g_hook_data;
static __thread CUpti_CallbackDomain t_hook_domain;
/* internal id of the launch call whose id the kernel record will carry (the runtime call for a
 * runtime launch, also while its nested driver launch runs) */
static __thread uint64_t t_launch_internal;
static __thread CUpti_CallbackId t_hook_cbid;

static __thread omniprof_thread_id_t t_tid;

omniprof_thread_id_t op_cuda_tid(void)
{
    if (!t_tid) t_tid = (omniprof_thread_id_t)syscall(SYS_gettid);
    return t_tid;
}

/* ------------------------------------------------------------------------------------------ */
/* Runtime and driver API.                                                                     */

#define MAX_FRAMES 32
#define MAX_ARGS 12

typedef struct api_frame {
    omniprof_correlation_id_t corr;
    uint64_t start;
    uint8_t buf, cbk, hook, async, runtime, pcs;
    op_sdk_callback_state cbstate;
} api_frame;

static __thread api_frame t_frames[MAX_FRAMES];
static __thread int t_depth;
static __thread int t_runtime_depth;

typedef union api_rec_storage {
    omniprof_buffer_tracing_api_record_t rec;
    unsigned char bytes[sizeof(omniprof_buffer_tracing_api_record_t) + MAX_ARGS * sizeof(omniprof_arg_t)];
} api_rec_storage;

/* The CUDA runtime registers its own atexit teardown (contexts destroyed) at its first call;
 * an exit handler registered after that one runs before it, while CUPTI can still deliver
 * every record. The SDK's own atexit (registered at load, so run last) flushes again. */
static int g_exit_flush_registered;

/* Contexts kernels were launched in (a few): at exit each is synchronized before the forced
 * flush, so that kernels still running when exit() was called arrive complete. */
#define MAX_LAUNCH_CTX 8
static CUcontext g_launch_ctx[MAX_LAUNCH_CTX];
static __thread CUcontext t_last_ctx;

static void note_launch_context(CUcontext ctx)
{
    if (!ctx || ctx == t_last_ctx) return;
    t_last_ctx = ctx;
    for (int i = 0; i < MAX_LAUNCH_CTX; i++) {
        CUcontext cur = __atomic_load_n(&g_launch_ctx[i], __ATOMIC_ACQUIRE);
        if (cur == ctx) return;
        if (!cur && __atomic_compare_exchange_n(&g_launch_ctx[i], &cur, ctx, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return;
        if (cur == ctx) return;
    }
}

static __thread int t_own_calls; /* our own driver calls: not traced */

void op_cuda_own_calls(int on) { t_own_calls = on; }

static void sync_launch_contexts(void)
{
    typedef CUresult (*push_t)(CUcontext);
    typedef CUresult (*pop_t)(CUcontext *);
    typedef CUresult (*sync_t)(void);
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return;
    push_t push = (push_t)dlsym(h, "cuCtxPushCurrent_v2");
    pop_t pop = (pop_t)dlsym(h, "cuCtxPopCurrent_v2");
    sync_t sync = (sync_t)dlsym(h, "cuCtxSynchronize");
    t_own_calls = 1;
    for (int i = 0; push && pop && sync && i < MAX_LAUNCH_CTX; i++) {
        CUcontext c = __atomic_load_n(&g_launch_ctx[i], __ATOMIC_ACQUIRE), old;
        if (c && push(c) == CUDA_SUCCESS) {
            sync();
            pop(&old);
        }
    }
    t_own_calls = 0;
    dlclose(h);
}

static void exit_flush(void)
{
    if (op_cuda_off) return;
    uint64_t t0 = op_now_ns();
    sync_launch_contexts();
    uint64_t t1 = op_now_ns();
    op_cuda_pcs_finish();
    op_cuda_pms_finish();
    op_cuda_sass_finish();
    op_cuda_activity_flush(1);
    /* where the end of a run goes (OMNIPROF_LOG_LEVEL=info; issue 12) */
    op_info("cuda: exit flush: contexts synchronized in %.1f ms, forced CUPTI flush %.1f ms", (double)(t1 - t0) / 1e6,
             (double)(op_now_ns() - t1) / 1e6);
}
static void register_exit_flush(void)
{
    if (__atomic_exchange_n(&g_exit_flush_registered, 1, __ATOMIC_ACQ_REL)) return;
    atexit(exit_flush);
}

static void notify_dispatch_enqueue(const CUpti_CallbackData *cd, const omniprof_correlation_id_t *corr,
                                    const omniprof_arg_t *args, uint32_t nargs)
{
    omniprof_buffer_tracing_kernel_dispatch_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH;
    r.operation = OMNIPROF_KERNEL_DISPATCH_ENQUEUE;
    r.correlation_id.internal = corr->internal;
    r.thread_id = op_cuda_tid();
    r.start_timestamp = op_now_ns();
    if (cd->symbolName) op_cuda_kernel_names(cd->symbolName, &r.kernel_name, &r.kernel_name_demangled, &r.kernel_id);
    for (uint32_t i = 0; i < nargs; i++) {
        const char *n = args[i].name;
        uint32_t v = (uint32_t)args[i].value.u64;
        if (!strcmp(n, "gridDimX")) r.grid_size.x = v;
        else if (!strcmp(n, "gridDimY")) r.grid_size.y = v;
        else if (!strcmp(n, "gridDimZ")) r.grid_size.z = v;
        else if (!strcmp(n, "blockDimX")) r.block_size.x = v;
        else if (!strcmp(n, "blockDimY")) r.block_size.y = v;
        else if (!strcmp(n, "blockDimZ")) r.block_size.z = v;
        else if (!strcmp(n, "sharedMemBytes") || !strcmp(n, "sharedMem") ||
                 !strcmp(n, "dynamicSmemBytes"))
            r.dynamic_shared_memory = v;
    }
    op_sdk_callback_notify(OMNIPROF_CALLBACK_TRACING_KERNEL_DISPATCH, OMNIPROF_KERNEL_DISPATCH_ENQUEUE,
                           OMNIPROF_CALLBACK_PHASE_ENTER, corr, &r);
}

/* A hook call (counters): phase OP_CUDA_LAUNCH_ENTER/EXIT, on the launching thread. */
static void call_hook(int phase, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const CUpti_CallbackData *cd)
{
    op_cuda_launch_hook_t hook = __atomic_load_n(&g_hook, __ATOMIC_ACQUIRE);
    if (!hook) return;
    t_hook_domain = dom, t_hook_cbid = cbid;
    hook(phase, cd, cd->context, __atomic_load_n(&g_hook_data, __ATOMIC_ACQUIRE));
}

/* At EXIT: the frame the call's ENTER pushed, popped; NULL when ENTER skipped it (inv. 3). */
static api_frame *pop_frame(int runtime, const CUpti_CallbackData *cd)
{
    if (runtime && !g_exit_flush_registered) register_exit_flush();
    uint64_t slot = *cd->correlationData;
    if (slot == 0 || slot > MAX_FRAMES) return NULL;
    int idx = (int)slot - 1;
    api_frame *f = &t_frames[idx];
    t_depth = idx;
    if (f->runtime && t_runtime_depth > 0) t_runtime_depth--;
    return f;
}

/* Activity mode (invariant 8): the launch path runs this only while a tool pushes external ids
 * or the counters hook is installed. A call CUPTI writes an API record for gets a map entry
 * marked API_PENDING with its internal id, thread and external ids, taken here at launch; the
 * API record completes it on the delivery thread. Nested driver calls of a runtime call are
 * skipped (invariant 4) except for the hook. */
static void on_api_capture(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const CUpti_CallbackData *cd,
                           const op_cuda_cbinfo *ci)
{
    const int runtime = dom == CUPTI_CB_DOMAIN_RUNTIME_API;
    const int is_launch = (ci->cls & (OP_CUDA_CLS_LAUNCH | OP_CUDA_CLS_GRAPH)) != 0;
    if (cd->callbackSite == CUPTI_API_ENTER) {
        *cd->correlationData = 0;
        op_cuda_launch_hook_t hook = is_launch ? __atomic_load_n(&g_hook, __ATOMIC_ACQUIRE) : NULL;
        const int nested = !runtime && t_runtime_depth > 0;
        if (g_sass && is_launch && !nested) op_cuda_sass_launch(cd->context, 1);
        const uint8_t cls = ci->cls & op_cuda_activity_classes;
        const int capture = __atomic_load_n(&g_capture_ext, __ATOMIC_ACQUIRE);
        const int pcs = g_pcs && is_launch && !nested;
        /* while collection is off CUPTI writes no API record that would complete the entry */
        const int insert = !nested && (capture || ((hook || pcs) && cls)) && op_cuda_activity_api_recorded(dom, cbid) &&
                           !__atomic_load_n(&g_collect_off, __ATOMIC_ACQUIRE);
        if (!insert && !hook && !runtime && !pcs) return;
        int idx = t_depth;
        if (idx >= MAX_FRAMES) return;
        api_frame *f = &t_frames[idx];
        t_depth = idx + 1;
        *cd->correlationData = (uint64_t)idx + 1;
        f->buf = 0, f->cbk = 0, f->hook = hook != NULL, f->async = (uint8_t)insert, f->runtime = (uint8_t)runtime;
        f->pcs = (uint8_t)pcs;
        if (runtime) t_runtime_depth++;
        if (insert) {
            op_sdk_correlation_begin(&f->corr);
            op_cuda_launch_info li;
            li.internal = f->corr.internal;
            li.tid = op_cuda_tid();
            if (capture) op_sdk_external_capture(&li.ext);
            else li.ext.count = 0;
            if (is_launch) note_launch_context(cd->context);
            op_cuda_corr_insert(cd->correlationId, cls, &li, OP_CUDA_CORR_API_PENDING);
        }
        if (is_launch && !nested) t_launch_internal = insert && cls ? f->corr.internal : 0;
        if (pcs) op_cuda_pcs_launch(OP_CUDA_LAUNCH_ENTER, cd->correlationId, insert ? f->corr.internal : 0, cd->context);
        if (hook) call_hook(OP_CUDA_LAUNCH_ENTER, dom, cbid, cd);
        return;
    }
    if (g_sass && is_launch && (runtime || t_runtime_depth == 0)) op_cuda_sass_launch(cd->context, 0);
    api_frame *f = pop_frame(runtime, cd);
    if (!f) return;
    if (f->hook) call_hook(OP_CUDA_LAUNCH_EXIT, dom, cbid, cd);
    if (f->pcs) op_cuda_pcs_launch(OP_CUDA_LAUNCH_EXIT, cd->correlationId, 0, cd->context);
    if (f->async) op_sdk_correlation_end(&f->corr); /* a failed call: its API record removes the entry */
}

static void on_api(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const CUpti_CallbackData *cd)
{
    const op_cuda_cbinfo *ci = op_cuda_cbinfo_get(dom, cbid);
    if (op_cuda_activity_mode) {
        on_api_capture(dom, cbid, cd, ci);
        return;
    }
    const int runtime = dom == CUPTI_CB_DOMAIN_RUNTIME_API;
    const uint32_t bkind = runtime ? OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API : OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API;
    const uint32_t ckind = runtime ? OMNIPROF_CALLBACK_TRACING_CUDA_RUNTIME_API : OMNIPROF_CALLBACK_TRACING_CUDA_DRIVER_API;
    const int32_t op = (int32_t)cbid;
    const int is_launch = (ci->cls & (OP_CUDA_CLS_LAUNCH | OP_CUDA_CLS_GRAPH)) != 0;

    if (cd->callbackSite == CUPTI_API_ENTER) {
        *cd->correlationData = 0;
        if (g_sass && is_launch && (runtime || t_runtime_depth == 0)) op_cuda_sass_launch(cd->context, 1);
        /* fast path: a driver call inside a runtime call when the driver API is not traced
         * (its activity carries the runtime call's id, invariant 4) */
        if (!runtime && !g_drv_full && t_runtime_depth > 0 && !(is_launch && g_hook)) return;
        /* while collection is off no GPU record comes to take a correlation entry */
        uint8_t cls = __atomic_load_n(&g_collect_off, __ATOMIC_ACQUIRE) ? 0 : ci->cls & op_cuda_activity_classes;
        int async = cls && !(!runtime && t_runtime_depth > 0); /* invariant (4) */
        int buf = op_sdk_buffer_enabled(bkind, op);
        int cbk = op_sdk_callback_enabled(ckind, op);
        op_cuda_launch_hook_t hook = is_launch ? __atomic_load_n(&g_hook, __ATOMIC_ACQUIRE) : NULL;
        int dispatch_cb = (ci->cls & OP_CUDA_CLS_LAUNCH) && async &&
                          op_sdk_callback_enabled(OMNIPROF_CALLBACK_TRACING_KERNEL_DISPATCH, OMNIPROF_KERNEL_DISPATCH_ENQUEUE);
        if (!buf && !cbk && !async && !hook && !(runtime && ci->cls) && !(g_pcs && is_launch)) return;
        int idx = t_depth;
        if (idx >= MAX_FRAMES) return;
        api_frame *f = &t_frames[idx];
        t_depth = idx + 1;
        *cd->correlationData = (uint64_t)idx + 1;
        f->buf = (uint8_t)buf, f->cbk = (uint8_t)cbk, f->hook = hook != NULL, f->async = (uint8_t)async;
        f->pcs = (uint8_t)(g_pcs && is_launch && (runtime || t_runtime_depth == 0));
        f->runtime = (uint8_t)runtime;
        if (runtime) t_runtime_depth++;
        op_sdk_correlation_begin(&f->corr);
        if (is_launch && (runtime || t_runtime_depth == 0)) t_launch_internal = async ? f->corr.internal : 0;
        if (async) {
            if (is_launch) note_launch_context(cd->context);
            op_cuda_launch_info li;
            li.internal = f->corr.internal;
            li.tid = op_cuda_tid();
            op_sdk_external_capture(&li.ext);
            op_cuda_corr_insert(cd->correlationId, cls, &li, 0);
        }
        if (f->pcs) op_cuda_pcs_launch(OP_CUDA_LAUNCH_ENTER, cd->correlationId, async ? f->corr.internal : 0, cd->context);
        if (hook) call_hook(OP_CUDA_LAUNCH_ENTER, dom, cbid, cd);
        if (cbk || dispatch_cb) {
            omniprof_arg_t args[MAX_ARGS];
            uint32_t n =
                op_cuda_decode_args(dom, cbid, cd->functionParams, cd->symbolName, args, MAX_ARGS);
            if (dispatch_cb) notify_dispatch_enqueue(cd, &f->corr, args, n);
            if (cbk) {
                omniprof_callback_tracing_api_data_t p = {sizeof p, cd->functionName, cd->functionParams, NULL,
                                                          cd->symbolName, n, 0, args};
                memset(&f->cbstate, 0, sizeof f->cbstate);
                op_sdk_callback_enter(ckind, op, &f->corr, &p, &f->cbstate);
            }
        }
        if (buf) f->start = op_now_ns(); /* last, so our own work is outside the call's interval */
        return;
    }

    /* EXIT */
    if (g_sass && is_launch && (runtime || t_runtime_depth == 0)) op_cuda_sass_launch(cd->context, 0);
    api_frame *f = pop_frame(runtime, cd);
    if (!f) return;
    uint64_t end = f->buf ? op_now_ns() : 0;
    int32_t ret = cd->functionReturnValue ? *(const int32_t *)cd->functionReturnValue : 0;
    if (f->async && ret != 0) op_cuda_corr_forget(cd->correlationId);
    if (f->pcs) op_cuda_pcs_launch(OP_CUDA_LAUNCH_EXIT, cd->correlationId, 0, cd->context);
    if (f->hook) call_hook(OP_CUDA_LAUNCH_EXIT, dom, cbid, cd);
    if (f->buf || f->cbk) {
        api_rec_storage st;
        omniprof_buffer_tracing_api_record_t *r = &st.rec;
        uint32_t n =
            op_cuda_decode_args(dom, cbid, cd->functionParams, cd->symbolName, r->args, MAX_ARGS);
        if (f->cbk) {
            omniprof_callback_tracing_api_data_t p = {sizeof p, cd->functionName, cd->functionParams,
                                                      cd->functionReturnValue, cd->symbolName, n, 0, r->args};
            op_sdk_callback_exit(ckind, op, &f->corr, &p, &f->cbstate);
        }
        if (f->buf) {
            r->size = sizeof *r + n * sizeof(omniprof_arg_t);
            r->kind = bkind;
            r->operation = op;
            r->correlation_id = f->corr;
            r->start_timestamp = f->start;
            r->end_timestamp = end;
            r->thread_id = op_cuda_tid();
            r->num_args = n;
            r->return_value = ret;
            op_sdk_emit(bkind, op, r, NULL);
        }
    }
    op_sdk_correlation_end(&f->corr);
}

/* ------------------------------------------------------------------------------------------ */
/* Module loads → CODE_OBJECT.                                                                 */

static void on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
{
    /* cubins are known before the samplers see a module and forgotten after they read it */
    const int code = g_pcs || g_sass;
    if (code && cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) op_cuda_cubins_on_resource(cbid, rd);
    if (g_pcs) op_cuda_pcs_on_resource(cbid, rd);
    if (g_sass) op_cuda_sass_on_resource(cbid, rd);
    if (code && cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) op_cuda_cubins_on_resource(cbid, rd);
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) return;
    if (cbid == CUPTI_CBID_RESOURCE_GRAPH_CREATED || cbid == CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED) {
        __atomic_store_n(&g_graphs, 1, __ATOMIC_RELAXED);
        return;
    }
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
        /* activity mode has no API callback: contexts to synchronize at exit come from here,
         * and the exit flush is registered once the CUDA runtime initialized (invariant 8) */
        if (rd && rd->context) note_launch_context(rd->context);
        register_exit_flush();
        op_cuda_um_on_context(); /* after the driver's initialization, once */
        if (g_pms && rd) op_cuda_pms_on_context(rd->context);
        return;
    }
    if (cbid != CUPTI_CBID_RESOURCE_MODULE_LOADED && cbid != CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) return;
    const CUpti_ModuleResourceData *m = rd ? (const CUpti_ModuleResourceData *)rd->resourceDescriptor : NULL;
    if (!m) return;
    int32_t op = cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED ? OMNIPROF_CODE_OBJECT_LOAD : OMNIPROF_CODE_OBJECT_UNLOAD;
    omniprof_buffer_tracing_code_object_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = OMNIPROF_BUFFER_TRACING_CODE_OBJECT;
    r.operation = op;
    r.timestamp = op_now_ns();
    r.code_object_id = m->moduleId;
    uint32_t dev = 0;
    if (rd->context && cuptiGetDeviceId(rd->context, &dev) == CUPTI_SUCCESS) r.agent_id = op_cuda_agent_of_device(dev);
    char uri[128];
    snprintf(uri, sizeof uri, "memory://%d#offset=0x%llx&size=%zu", (int)getpid(),
             (unsigned long long)(uintptr_t)m->pCubin, m->cubinSize);
    r.uri = op_sdk_intern(uri);
    r.load_base = (uint64_t)(uintptr_t)m->pCubin;
    r.load_size = m->cubinSize;
    if (op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_CODE_OBJECT, op)) op_sdk_emit(r.kind, op, &r, NULL);
    if (op_sdk_callback_enabled(OMNIPROF_CALLBACK_TRACING_CODE_OBJECT, op)) {
        omniprof_correlation_id_t corr = {0, {0}, 0};
        op_sdk_callback_notify(OMNIPROF_CALLBACK_TRACING_CODE_OBJECT, op,
                               op == OMNIPROF_CODE_OBJECT_LOAD ? OMNIPROF_CALLBACK_PHASE_LOAD : OMNIPROF_CALLBACK_PHASE_UNLOAD,
                               &corr, &r);
    }
}

/* ------------------------------------------------------------------------------------------ */

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data)
{
    (void)ud;
    if (op_cuda_off || !data || t_own_calls) return;
    /* --selected-regions: cudaProfilerStart/Stop (which call cuProfilerStart/Stop) select what is
     * collected, as omniprof_resume/omniprof_pause do: collection starts when the start returns
     * and stops when the stop is entered */
    if (g_selected && dom == CUPTI_CB_DOMAIN_DRIVER_API) {
        const CUpti_ApiCallbackSite site = ((const CUpti_CallbackData *)data)->callbackSite;
        if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart && site == CUPTI_API_EXIT) op_sdk_set_paused(0);
        else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop && site == CUPTI_API_ENTER) op_sdk_set_paused(1);
    }
    switch (dom) {
    case CUPTI_CB_DOMAIN_RUNTIME_API:
    case CUPTI_CB_DOMAIN_DRIVER_API: on_api(dom, cbid, data); break;
    case CUPTI_CB_DOMAIN_RESOURCE: on_resource(cbid, data); break;
    case CUPTI_CB_DOMAIN_NVTX: op_cuda_on_nvtx(cbid, data); break;
    default: break;
    }
}

static uint64_t CUPTIAPI cupti_timestamp(void) { return op_now_ns(); }

static const char *cupti_err(CUptiResult r)
{
    const char *s = "unknown CUPTI error";
    cuptiGetResultString(r, &s);
    return s;
}

/* Enable the callbacks of one API domain: all of it when its kind is traced, else only the ids
 * of the classes in `cls` (plus launches when the counters hook wants them). */
static void enable_api_domain(CUpti_CallbackDomain dom, int full, uint8_t cls, uint32_t n)
{
    if (full) {
        cuptiEnableDomain(1, g_sub, dom);
        return;
    }
    if (!cls) return;
    for (uint32_t id = 1; id < n; id++)
        if (op_cuda_cbinfo_get(dom, id)->cls & cls) cuptiEnableCallback(1, g_sub, dom, id);
}

static void enable_launch_callbacks_locked(void)
{
    uint8_t cls = OP_CUDA_CLS_LAUNCH | OP_CUDA_CLS_GRAPH;
    /* callback mode: a traced domain has all its callbacks already */
    if (!g_rt_full || op_cuda_activity_mode) enable_api_domain(CUPTI_CB_DOMAIN_RUNTIME_API, 0, cls, CUPTI_RUNTIME_TRACE_CBID_SIZE);
    if (!g_drv_full || op_cuda_activity_mode) enable_api_domain(CUPTI_CB_DOMAIN_DRIVER_API, 0, cls, CUPTI_DRIVER_TRACE_CBID_SIZE);
}

/* Activity mode, once a tool pushed external ids: callbacks on every call CUPTI records, so
 * that the ids on top of the launching thread's stacks are captured at launch. */
static void enable_capture_callbacks_locked(void)
{
    enable_api_domain(CUPTI_CB_DOMAIN_RUNTIME_API, g_rt_full, op_cuda_activity_classes, CUPTI_RUNTIME_TRACE_CBID_SIZE);
    enable_api_domain(CUPTI_CB_DOMAIN_DRIVER_API, g_drv_full, op_cuda_activity_classes, CUPTI_DRIVER_TRACE_CBID_SIZE);
}

static void enable_capture_locked(void)
{
    if (g_capture_ext) return;
    __atomic_store_n(&g_capture_ext, 1, __ATOMIC_RELEASE);
    enable_capture_callbacks_locked();
}

/* The callbacks of the runtime and driver API domains that collection needs, at start. They and
 * NVTX's stay on while collection is off (turning a domain off mid-call loses the call's EXIT and
 * leaves the thread's frames and NVTX stacks out of step; in activity mode without external ids
 * no API callback is on anyway). */
static void enable_api_callbacks_locked(void)
{
    if (op_cuda_activity_mode) {
        if (g_hook || g_pcs || g_sass) enable_launch_callbacks_locked();
        if (g_capture_ext) enable_capture_callbacks_locked();
    } else {
        uint8_t cls = op_cuda_activity_classes;
        if (g_hook) cls |= OP_CUDA_CLS_LAUNCH | OP_CUDA_CLS_GRAPH;
        /* runtime ids of every class are kept so that nested driver calls are recognised (inv. 4) */
        enable_api_domain(CUPTI_CB_DOMAIN_RUNTIME_API, g_rt_full, cls, CUPTI_RUNTIME_TRACE_CBID_SIZE);
        enable_api_domain(CUPTI_CB_DOMAIN_DRIVER_API, g_drv_full, cls, CUPTI_DRIVER_TRACE_CBID_SIZE);
        if (g_pcs || g_sass) enable_launch_callbacks_locked();
    }
}

/* cudaProfilerStart/Stop and the driver calls they make: on for the process under
 * --selected-regions (the runtime ones too, so that in activity mode a runtime call's ENTER and
 * EXIT both arrive and the thread's runtime depth stays right). */
static void enable_profiler_callbacks_locked(void)
{
    if (!g_selected) return;
    cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
    cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
    cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
    cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
}

static int collecting(void);

/* May CUPTI's activity kinds be turned off now (and on again later)? Not with CUPTI 13.0 GA
 * (cuptiActivityDisable of CONCURRENT_KERNEL could deadlock; fixed in 13.0 Update 1, API
 * version 130001), nor once the program made a CUDA graph (before CUPTI 13.1 Update 1 graph
 * launches carry wrong correlation ids after the kinds were enabled again). */
static int may_switch_off_locked(void)
{
    static int said;
    uint32_t v = 0;
    const char *why = NULL;
    if (cuptiGetVersion(&v) != CUPTI_SUCCESS || v < 130001) why = "this CUPTI (API version before 130001, 13.0 Update 1) could deadlock";
    else if (__atomic_load_n(&g_graphs, __ATOMIC_RELAXED)) why = "the program uses CUDA graphs, whose correlation ids CUPTI gets wrong after a re-enable";
    if (why && !said) {
        said = 1;
        op_info("cuda: CUPTI's activity kinds stay on while nothing is collected (records are dropped): %s", why);
    }
    return why == NULL;
}

/* Nothing to collect (the tool's context stopped: omniprof attach detached, a collection period
 * ended; or omniprof_pause / cudaProfilerStop under --selected-regions): CUPTI's activity kinds
 * (GPU records and whole API kinds; per-call enables stay on, cupti_activity.c) go off, so that
 * the program stops paying CUPTI's cost per launch; they come back when collection does. PC/PM
 * sampling, SASS metrics and counters keep CUPTI as set at start (their per-context state is not
 * rebuilt). */
static void set_collecting_locked(int on)
{
    if (on == !g_collect_off || (!on && (g_pcs || g_pms || g_sass || g_hook || !may_switch_off_locked()))) return;
    if (on) __atomic_store_n(&g_collect_off, 0, __ATOMIC_RELEASE);
    op_cuda_activity_collect(on);
    if (!on) __atomic_store_n(&g_collect_off, 1, __ATOMIC_RELEASE);
    op_info("cuda: collection %s: CUPTI activity kinds %s", on ? "on" : "off", on ? "enabled again" : "disabled");
}

static void cuda_on_context_change(void)
{
    if (g_state != ST_ON || op_cuda_off || op_sdk_is_finalizing()) return;
    pthread_mutex_lock(&g_start_lock);
    if (g_state == ST_ON) {
        if (op_cuda_activity_mode && !g_capture_ext && op_sdk_external_in_use()) enable_capture_locked();
        set_collecting_locked(collecting());
    }
    pthread_mutex_unlock(&g_start_lock);
}

/* When a tool asked for the NVTX intercept table, NVTX's injection is the preloaded
 * libomniprof-cudart-intercept.so, which runs the injection that would otherwise have run
 * before its own (hand_over_cudart_tables): this function, the library's chain setter. */
typedef void (*nvtx_chain_t)(const char *path);
static nvtx_chain_t g_nvtx_chain;
static int g_nvtx_user_injection; /* NVTX_INJECTION64_PATH named another injection at start */

/* The NVTX injection that records: omniprof's own (nvtx_inject.c, this library) or, with
 * OMNIPROF_CUDA_NVTX_CUPTI, CUPTI's. Returns 1 when it is CUPTI's (its NVTX callback domain must
 * be enabled then). */
static int set_nvtx_injection(void)
{
    const int cupti = op_setting_bool(OP_SET_CUDA_NVTX_CUPTI);
    Dl_info info;
    const char *lib = NULL;
    if (g_nvtx_chain && g_nvtx_user_injection) return 0; /* the user's injection runs there */
    if (!g_nvtx_chain && getenv("NVTX_INJECTION64_PATH")) return 0;
    if (cupti) {
        if (dladdr((void *)cuptiSubscribe, &info) && info.dli_fname && info.dli_fname[0] == '/')
            lib = info.dli_fname;
    } else {
        lib = op_cuda_nvtx_injection_path();
    }
    if (!lib) return 0;
    if (g_nvtx_chain) g_nvtx_chain(lib); /* it runs behind the NVTX table's interposers */
    else setenv("NVTX_INJECTION64_PATH", lib, 0);
    return cupti;
}

/* The CUDA runtime and NVTX intercept tables live in libomniprof-cudart-intercept.so, which must
 * be preloaded (its interposers must come before libcudart.so; preload/cudart_intercept.c); hand
 * them to the tools that asked. Runs before the GPU checks: neither table needs a GPU. */
static void hand_over_cudart_tables(void)
{
    const int rt = op_sdk_intercept_requested(OMNIPROF_INTERCEPT_TABLE_CUDA_RUNTIME);
    const int nvtx = op_sdk_intercept_requested(OMNIPROF_INTERCEPT_TABLE_NVTX);
    if (!rt && !nvtx) return;
    typedef void (*get_t)(void **tables);
    get_t get = (get_t)dlsym(RTLD_DEFAULT, "omniprof_cudart_intercept_tables");
    nvtx_chain_t chain = (nvtx_chain_t)dlsym(RTLD_DEFAULT, "omniprof_nvtx_intercept_chain");
    Dl_info self;
    if (!get || !chain || !dladdr((void *)get, &self) || !self.dli_fname) {
        op_warn("cuda: a tool asked for the %s intercept table, but "
                "libomniprof-cudart-intercept.so is not preloaded (add it to LD_PRELOAD before "
                "the tool); the table is not available",
                rt ? "CUDA runtime" : "NVTX");
        return;
    }
    void *t[2] = {NULL, NULL};
    get(t);
    if (nvtx) {
        const char *prev = getenv("NVTX_INJECTION64_PATH");
        g_nvtx_user_injection = prev && prev[0] && strcmp(prev, self.dli_fname) != 0;
        chain(g_nvtx_user_injection ? prev : NULL); /* CUPTI's is added by set_nvtx_injection */
        setenv("NVTX_INJECTION64_PATH", self.dli_fname, 1);
        g_nvtx_chain = chain;
    }
    static const struct {
        int bit;
        const char *name;
        uint64_t version;
        int slot;
    } k_tabs[] = {
        {OMNIPROF_INTERCEPT_TABLE_CUDA_RUNTIME, "cuda_runtime",
         OMNIPROF_CUDA_RUNTIME_TABLE_VERSION, 0},
        {OMNIPROF_INTERCEPT_TABLE_NVTX, "nvtx", OMNIPROF_NVTX_TABLE_VERSION, 1}};
    for (size_t i = 0; i < sizeof k_tabs / sizeof k_tabs[0]; i++) {
        omniprof_intercept_table_t bit = (omniprof_intercept_table_t)k_tabs[i].bit;
        if (!op_sdk_intercept_requested(bit) || !t[k_tabs[i].slot]) continue;
        void *tables[1] = {t[k_tabs[i].slot]};
        omniprof_status_t st =
            omniprof_set_api_table(k_tabs[i].name, k_tabs[i].version, 0, tables, 1);
        if (st != OMNIPROF_STATUS_SUCCESS)
            op_warn("cuda: handing over the %s table failed: %s", k_tabs[i].name,
                    omniprof_get_status_string(st));
    }
}

/* The CUDA driver intercept table lives in libomniprof-cuda-intercept.so, which must be
 * preloaded (only the initial global scope can interpose dlsym, docs/cuda.md); hand it to
 * the tools that asked for it. */
static void hand_over_driver_table(void)
{
    if (!op_sdk_intercept_requested(OMNIPROF_INTERCEPT_TABLE_CUDA_DRIVER)) return;
    typedef omniprof_cuda_driver_table_t *(*get_t)(void);
    get_t get = (get_t)dlsym(RTLD_DEFAULT, "omniprof_cuda_intercept_table");
    omniprof_cuda_driver_table_t *t = get ? get() : NULL;
    if (!t) {
        op_warn("cuda: a tool asked for the CUDA driver intercept table, but libomniprof-cuda-intercept.so is not "
                "preloaded (add it to LD_PRELOAD before the tool); the table is not available");
        return;
    }
    void *tables[1] = {t};
    omniprof_status_t st = omniprof_set_api_table("cuda_driver", OMNIPROF_CUDA_DRIVER_TABLE_VERSION, 0, tables, 1);
    if (st != OMNIPROF_STATUS_SUCCESS)
        op_warn("cuda: handing over the CUDA driver table failed: %s", omniprof_get_status_string(st));
}

/* Called with g_start_lock held. When the backend turns itself off it logs its one line and
 * returns SUCCESS, so that the SDK does not add a second, less specific line (the backend
 * stays OFF: flush/finalize do nothing). */

/* The info line's word for an API kind: traced whole, some calls by name, or launches only. */
static const char *api_scope(uint32_t kind)
{
    if (!op_sdk_kind_configured(kind)) return "launches only";
    return op_sdk_kind_op_configured(kind, -1) ? "traced" : "traced for named calls";
}

static omniprof_status_t start_locked(void)
{
    if (g_state == ST_ON) return OMNIPROF_STATUS_SUCCESS;
    if (g_state != ST_LOADED) return OMNIPROF_STATUS_SUCCESS; /* already off (and said so) or finalized */
    g_state = ST_OFF;
    op_cuda_names_init();
    hand_over_cudart_tables();
    if (access("/dev/nvidiactl", F_OK) != 0 && access("/dev/nvidia0", F_OK) != 0) {
        op_warn("cuda backend off: no NVIDIA GPU on this machine (no /dev/nvidiactl); GPU tracing disabled");
        return OMNIPROF_STATUS_SUCCESS;
    }
    void *drv = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!drv) {
        op_warn("cuda backend off: the NVIDIA driver library libcuda.so.1 cannot be loaded; GPU tracing disabled");
        return OMNIPROF_STATUS_SUCCESS;
    }
    if (cuptiActivityRegisterTimestampCallback(cupti_timestamp) != CUPTI_SUCCESS) {
        op_cuda_own_timestamps = 0;
        op_info("cuda: CUPTI did not take omniprof's timestamp callback: GPU times are CUPTI's own clock");
    }
    g_selected = op_setting_bool(OP_SET_SELECTED_REGIONS);
    char holder[128] = "";
    CUpti_SubscriberParams sp;
    memset(&sp, 0, sizeof sp);
    sp.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    sp.subscriberName = "omniprof";
    sp.oldSubscriberName = holder;
    sp.oldSubscriberSize = sizeof holder;
    CUptiResult r = cuptiSubscribe_v2(&g_sub, on_callback, NULL, &sp);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        op_warn("cuda backend off: CUPTI is already held by another profiler (%s) — Nsight Systems/Compute, "
                "compute-sanitizer, cuda-gdb or torch.profiler allow one CUPTI client per process; the program "
                "runs untraced on the GPU",
                holder[0] ? holder : "name not reported");
        return OMNIPROF_STATUS_SUCCESS;
    }
    if (r != CUPTI_SUCCESS) {
        op_warn("cuda backend off: cuptiSubscribe failed: %s; GPU tracing disabled", cupti_err(r));
        return OMNIPROF_STATUS_SUCCESS;
    }

    g_rt_full = op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API);
    g_drv_full = op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API);
    /* invariant (8): callbacks on the launch path only where a tool asked for callbacks or for
     * decoded arguments */
    op_cuda_activity_mode = !op_setting_bool(OP_SET_CUDA_API_ARGS) &&
                            !op_sdk_callback_kind_configured(OMNIPROF_CALLBACK_TRACING_CUDA_RUNTIME_API) &&
                            !op_sdk_callback_kind_configured(OMNIPROF_CALLBACK_TRACING_CUDA_DRIVER_API) &&
                            !op_sdk_callback_kind_configured(OMNIPROF_CALLBACK_TRACING_KERNEL_DISPATCH);
    g_sass = op_cuda_sass_start(); /* before the activity kinds: it picks the kernel kind */
    if (op_cuda_activity_start(g_rt_full || g_drv_full) != 0)
        op_warn("cuda: GPU activity records are off; %s", op_cuda_activity_mode ? "API records too" : "API tracing continues");

    uint8_t cls = op_cuda_activity_classes;
    if (op_cuda_activity_mode) {
        /* a kind configured for some of its calls only gets CUPTI's per-call records of those */
        op_cuda_activity_enable_api(g_rt_full && op_sdk_kind_op_configured(OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API, -1),
                                    g_drv_full && op_sdk_kind_op_configured(OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API, -1),
                                    cls);
        cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
        if (op_sdk_external_in_use()) __atomic_store_n(&g_capture_ext, 1, __ATOMIC_RELEASE);
    } else if (g_hook) {
        cls |= OP_CUDA_CLS_LAUNCH | OP_CUDA_CLS_GRAPH;
    }

    g_pcs = op_cuda_pcs_start();
    g_pms = op_cuda_pms_start();
    if (g_pms || op_cuda_um_wanted())
        cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPH_CREATED);
    cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED);
    if (g_pcs || g_sass) {
        static const CUpti_CallbackId res[] = {CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
                                               CUPTI_CBID_RESOURCE_MODULE_LOADED, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING};
        for (size_t i = 0; i < sizeof res / sizeof res[0]; i++) cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RESOURCE, res[i]);
    }
    g_code_on = op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_CODE_OBJECT) ||
                op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_KERNEL_SYMBOL);
    if (g_code_on) {
        cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED);
        cuptiEnableCallback(1, g_sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING);
    }
    g_nvtx_on = op_setting_bool(OP_SET_CUDA_NVTX) &&
                (op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_MARKER_API) ||
                 op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API) ||
                 op_sdk_callback_kind_configured(OMNIPROF_CALLBACK_TRACING_MARKER_API));
    if (g_nvtx_on && set_nvtx_injection()) {
        r = cuptiEnableDomain(1, g_sub, CUPTI_CB_DOMAIN_NVTX);
        if (r != CUPTI_SUCCESS) {
            op_warn("cuda: NVTX capture off: %s", cupti_err(r));
            g_nvtx_on = 0;
        }
    }
    enable_api_callbacks_locked();
    enable_profiler_callbacks_locked();
    hand_over_driver_table();
    g_state = ST_ON;
    op_info("cuda backend on (%s mode; runtime API %s, driver API %s, activity classes 0x%x, NVTX %s)",
            op_cuda_activity_mode ? "activity" : "callback", api_scope(OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API),
            api_scope(OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API), (unsigned)cls, g_nvtx_on ? "on" : "off");
    return OMNIPROF_STATUS_SUCCESS;
}

static omniprof_status_t cuda_start(void)
{
    pthread_mutex_lock(&g_start_lock);
    omniprof_status_t st = start_locked();
    pthread_mutex_unlock(&g_start_lock);
    return st;
}

/* The SDK's finalization flushes the backends first, while the contexts still deliver, then
 * stops the contexts; every later flush of the finalization (the tool flushes each of its
 * buffers twice, each flush of a buffer flushes the backends, and then the finalize below)
 * would deliver into stopped contexts, which drop what they get. Those forced CUPTI flushes
 * are skipped: only the first of the finalization runs (issue 12: the end of a run). */
static int g_final_flushed;

static void cuda_flush(void)
{
    if (g_state != ST_ON || op_cuda_off) return;
    if (op_sdk_is_finalizing() && __atomic_exchange_n(&g_final_flushed, 1, __ATOMIC_ACQ_REL)) return;
    uint64_t t0 = op_now_ns();
    op_cuda_activity_flush(1);
    if (op_sdk_is_finalizing())
        op_info("cuda: forced CUPTI flush at finalization: %.1f ms", (double)(op_now_ns() - t0) / 1e6);
}


static void cuda_finalize(void)
{
    if (g_state != ST_ON) return;
    if (op_cuda_forked) {
        /* CUPTI's threads did not survive the fork and a lock one held then stays held here:
         * cuptiActivityFlushAll in a forked child can wait for ever (the child's _exit hung,
         * and with it the parent that waited for the child: GPU test run.forkchild). */
        g_state = ST_FINALIZED;
        return;
    }
    op_cuda_pcs_finish();
    op_cuda_pms_finish();
    op_cuda_sass_finish();
    if (!__atomic_load_n(&g_final_flushed, __ATOMIC_ACQUIRE)) op_cuda_activity_flush(1);
    op_cuda_off = 1; /* invariant (2); no cuptiFinalize at exit: CUDA may be tearing down */
    g_state = ST_FINALIZED;
    op_cuda_activity_finalize();
}

static void cuda_at_fork_child(void)
{
    /* CUPTI's threads and device state do not survive fork: the child is not traced on the GPU,
     * and its end calls nothing of CUPTI (cuda_finalize). */
    op_cuda_off = 1;
    op_cuda_forked = 1;
    op_cuda_agents_at_fork_child();
}

static const char *cuda_operation_name(uint32_t kind, int32_t op) { return op_cuda_operation_name(kind, op); }

/* What this backend serves, read by the SDK from the library file before it loads it
 * (backend.h): the SDK dlopens this library only for these kinds, counters or table. */
OP_BACKEND_MANIFEST(g_manifest) = {
    .magic = OP_BACKEND_MANIFEST_MAGIC,
    .size = sizeof(op_backend_manifest),
    .name = "cuda",
    .buffer_kinds = {OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API, OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API,
                     OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH, OMNIPROF_BUFFER_TRACING_MEMORY_COPY,
                     OMNIPROF_BUFFER_TRACING_MEMORY_SET, OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION,
                     OMNIPROF_BUFFER_TRACING_SYNCHRONIZATION, OMNIPROF_BUFFER_TRACING_CODE_OBJECT,
                     OMNIPROF_BUFFER_TRACING_KERNEL_SYMBOL, OMNIPROF_BUFFER_TRACING_PC_SAMPLE,
                     OMNIPROF_BUFFER_TRACING_PM_SAMPLE, OMNIPROF_BUFFER_TRACING_SASS_METRIC,
                     OMNIPROF_BUFFER_TRACING_UNIFIED_MEMORY, OMNIPROF_BUFFER_TRACING_CUDA_EVENT,
                     /* a second source of markers (NVTX), beside the core's user API */
                     OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API},
    .counter_kinds = {OMNIPROF_COUNTER_RECORD_DISPATCH_HEADER, OMNIPROF_COUNTER_RECORD_VALUE},
    .intercept_tables = OMNIPROF_INTERCEPT_TABLE_CUDA_DRIVER |
                        OMNIPROF_INTERCEPT_TABLE_CUDA_RUNTIME | OMNIPROF_INTERCEPT_TABLE_NVTX,
};

/* Does an active context want what this backend collects (and is collection not paused)? */
static int collecting(void)
{
    if (op_sdk_is_paused()) return 0;
    for (size_t i = 0; i < OP_BACKEND_MAX_KINDS && g_manifest.buffer_kinds[i]; i++)
        if (op_sdk_kind_active(g_manifest.buffer_kinds[i])) return 1;
    if (g_nvtx_on &&
        (op_sdk_kind_active(OMNIPROF_BUFFER_TRACING_MARKER_API) || op_sdk_kind_active(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API) ||
         op_sdk_callback_kind_active(OMNIPROF_CALLBACK_TRACING_MARKER_API)))
        return 1;
    return op_sdk_callback_kind_active(OMNIPROF_CALLBACK_TRACING_CUDA_RUNTIME_API) ||
           op_sdk_callback_kind_active(OMNIPROF_CALLBACK_TRACING_CUDA_DRIVER_API) ||
           op_sdk_callback_kind_active(OMNIPROF_CALLBACK_TRACING_KERNEL_DISPATCH);
}

static const op_backend g_desc = {
    .size = sizeof(op_backend),
    .name = "cuda",
    .start = cuda_start,
    .on_context_change = cuda_on_context_change,
    .flush = cuda_flush,
    .finalize = cuda_finalize,
    .at_fork_child = cuda_at_fork_child,
    .operation_name = cuda_operation_name,
    .iterate_operations = op_cuda_iterate_operations,
    .iterate_record_args = op_cuda_iterate_record_args,
    .query_agents = op_cuda_query_agents,
    .symbolize = NULL,
    .manifest = &g_manifest,
};

__attribute__((constructor)) static void cuda_backend_register(void)
{
    omniprof_status_t st = op_sdk_register_backend(&g_desc);
    if (st != OMNIPROF_STATUS_SUCCESS) op_info("cuda backend not registered: %s", omniprof_get_status_string(st));
}

/* ------------------------------------------------------------------------------------------ */
/* cuda_backend.h                                                                              */

void op_cuda_set_launch_hook(op_cuda_launch_hook_t hook, void *data)
{
    pthread_mutex_lock(&g_start_lock);
    /* Readers load g_hook (acquire) before g_hook_data: clear the hook, publish the data, then
     * the new hook (release), so a reader never pairs a hook with another hook's data. */
    __atomic_store_n(&g_hook, NULL, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_hook_data, data, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_hook, hook, __ATOMIC_RELEASE);
    if (hook && g_state == ST_ON) enable_launch_callbacks_locked();
    pthread_mutex_unlock(&g_start_lock);
}

int op_cuda_backend_subscribed(void) { return g_state == ST_ON && !op_cuda_off; }

CUpti_CallbackDomain op_cuda_launch_domain(void) { return t_hook_domain; }
uint64_t op_cuda_launch_correlation_id(void) { return t_launch_internal; }
uint64_t op_cuda_launch_dispatch_id(void)
{
    /* plain launches: the dispatch record's id is the launching call's internal id */
    return op_cuda_launch_cbid() && (op_cuda_cbinfo_get(t_hook_domain, t_hook_cbid)->cls & OP_CUDA_CLS_LAUNCH)
               ? t_launch_internal
               : 0;
}
CUpti_CallbackId op_cuda_launch_cbid(void) { return t_hook_cbid; }

int op_cuda_backend_ensure_started(void)
{
    cuda_start();
    return op_cuda_backend_subscribed() ? 0 : -1;
}
