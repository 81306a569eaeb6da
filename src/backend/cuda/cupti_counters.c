/* cupti_counters.c — the NVIDIA hardware-counter provider: dispatch counting with CUPTI's Range
 * Profiler (one range per kernel, kernel replay) driven by the CUDA backend's launch hook, and
 * device counting (user range, user replay, single pass). The offline half (catalog, passes)
 * is in cupti_counters_host.c.
 *
 * Dispatch counting, per counted launch (docs/cuda.md):
 *
 *   launch ENTER (outermost API level on the thread)
 *     core: op_sdk_counters_dispatch_select → plan (metric names) or skip
 *     once per context: cuptiProfilerInitialize, counter availability, cuptiRangeProfilerEnable
 *     when the plan changes: config image (host API with the availability image),
 *       counter-data image for MAX_RANGES ranges, cuptiRangeProfilerSetConfig(AutoRange,
 *       UserReplay for a one-pass set, else KernelReplay; invariant (5))
 *     cuptiRangeProfilerStart
 *   <the launch: CUPTI replays the kernel once per pass, saving and restoring memory>
 *   launch EXIT
 *     cuptiRangeProfilerStop; cuptiRangeProfilerDecodeData; the newest range's values
 *     (host EvaluateToGpuValues) → op_sdk_counters_dispatch_complete
 *     counter-data image full → re-initialize + SetConfig
 *
 * Invariants:
 *  (1) g_rp_lock is held from a counted launch's ENTER to its EXIT, so ranges of different
 *      threads never interleave (kernel replay serializes those kernels anyway);
 *  (2) a nested launch callback (the driver call under a runtime launch) is ignored: only the
 *      outermost level of each thread starts/stops a range (tl_depth);
 *  (3) a CUPTI failure turns dispatch counting off with one message (g_off); the launch itself
 *      always proceeds;
 *  (4) F7: kernel activity records of counted launches have zero timestamps under kernel
 *      replay; the provider always collects gpu__time_duration.sum (duration_metric) so the
 *      core can time them;
 *  (5) a one-pass set runs with CUPTI_UserReplay (one Start/Stop per kernel is the whole
 *      replay): no device-memory save/restore, kernel timestamps kept; a multi-pass set with
 *      CUPTI_KernelReplay. If CUPTI refuses user replay, the session falls back to kernel
 *      replay for good (no_user_replay);
 *  (6) batching (OMNIPROF_PMC_BATCH = B > 1, experimental, not yet run on a GPU): a one-pass
 *      session stays started over up to B counted launches of one config; their tokens wait in
 *      `pending` (launch order = AutoRange order) and are completed when the session stops:
 *      batch full, another config, an uncounted launch on the context (it must not become a
 *      range), a failed launch, or process exit (atexit registered after the CUDA runtime's, so
 *      it runs while the context is alive). B = 1 is the unbatched path above. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cupti_counters.h"
#include "common/alloc.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/settings.h"

/* Accessors the tracing part of the backend may provide (weak: absent → 0). They give the
 * SDK correlation id and dispatch id of the launch the hook is called for, so that counter
 * records join the kernel's dispatch record. */
uint64_t op_cuda_launch_correlation_id(void) __attribute__((weak));
uint64_t op_cuda_launch_dispatch_id(void) __attribute__((weak));

#define MAX_RANGES 16
#define MAX_SESSIONS 16

typedef struct vendor_plan {
    CUpti_Profiler_Host_Object *host; /* has the metrics added; used to evaluate */
    uint8_t *image;
    size_t image_size;
    size_t passes;
    uint32_t device;
    struct vendor_plan *next; /* the same plan on other devices */
} vendor_plan;

typedef struct rp_session {
    CUcontext ctx;
    uint32_t device;
    CUpti_RangeProfiler_Object *obj;
    const op_counters_plan *plan; /* the configured plan */
    uint8_t *cd;
    size_t cd_size;
    size_t used;                  /* ranges decoded in the image */
    int broken;
    int user_replay;              /* the configured plan runs with CUPTI_UserReplay (one pass) */
    int no_user_replay;           /* UserReplay failed here once: always KernelReplay */
    /* batching (OMNIPROF_PMC_BATCH > 1, one-pass sets only; invariant (6)) */
    int open;                     /* started, not stopped: pending launches are its ranges */
    size_t n_pending;
    void *pending[MAX_RANGES];    /* tokens, in launch order = range order */
} rp_session;

typedef struct dev_info {
    int known;
    char chip[32];
    uint8_t *avail;
    size_t avail_size;
} dev_info;

static pthread_mutex_t g_rp_lock = PTHREAD_MUTEX_INITIALIZER;
static rp_session g_sessions[MAX_SESSIONS];
static dev_info g_devs[64];
static int g_profiler_initialized;
static _Atomic int g_off;

/* Where the time of a counted dispatch goes (ns, dispatches 2..65), logged once at info level
 * after the 65th: the numbers of docs/perf/counters.md. Written under g_rp_lock. */
enum { T_START, T_LAUNCH, T_STOP, T_DECODE, T_EVAL, T__N };
static uint64_t g_tacc[T__N];
static uint64_t g_tcount;
static uint64_t g_tacc_pending_start;
static __thread uint64_t tl_t_enter_done;

static int g_tlogged;
static void timing_add(const uint64_t *t)
{
    g_tcount++;
    if (g_tcount < 2 || g_tcount > 65)
        return;
    for (int i = 0; i < T__N; i++)
        g_tacc[i] += t[i];
    if (g_tcount == 65 && !g_tlogged++)
        op_info("counters: per counted dispatch (average of 64): range start %.1f us, launch with replay %.1f us, "
                "range stop %.1f us, decode %.1f us, evaluate+emit %.1f us",
                g_tacc[T_START] / 64e3, g_tacc[T_LAUNCH] / 64e3, g_tacc[T_STOP] / 64e3, g_tacc[T_DECODE] / 64e3,
                g_tacc[T_EVAL] / 64e3);
}

static __thread int tl_depth;
static __thread void *tl_token;
static __thread rp_session *tl_session;
static __thread const op_counters_plan *tl_plan;

static void turn_off(const char *what, CUptiResult rc)
{
    if (atomic_exchange(&g_off, 1))
        return;
    char msg[512];
    op_cupti_counters_status(rc, msg, sizeof msg);
    op_error("counters: %s: %s; counter collection is off, the program runs on", what, msg);
}

/* ---- per device / per context ---------------------------------------------------------- */

static int profiler_init(void)
{
    if (g_profiler_initialized)
        return 0;
    CUpti_Profiler_Initialize_Params pi = {.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    CUptiResult r = cuptiProfilerInitialize(&pi);
    if (r != CUPTI_SUCCESS) {
        turn_off("cuptiProfilerInitialize", r);
        return -1;
    }
    g_profiler_initialized = 1;
    return 0;
}

/* Chip and counter availability of device (lock held). */
static dev_info *device_info(uint32_t device, CUcontext ctx)
{
    if (device >= 64)
        return NULL;
    dev_info *d = &g_devs[device];
    if (d->known)
        return d;
    if (profiler_init())
        return NULL;
    CUpti_Device_GetChipName_Params cn = {.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    cn.deviceIndex = device;
    CUptiResult r = cuptiDeviceGetChipName(&cn);
    if (r != CUPTI_SUCCESS) {
        turn_off("cuptiDeviceGetChipName", r);
        return NULL;
    }
    snprintf(d->chip, sizeof d->chip, "%s", cn.pChipName);
    CUpti_Profiler_GetCounterAvailability_Params ca = {.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    ca.ctx = ctx;
    if (cuptiProfilerGetCounterAvailability(&ca) == CUPTI_SUCCESS && ca.counterAvailabilityImageSize) {
        d->avail = op_malloc(ca.counterAvailabilityImageSize);
        if (d->avail) {
            ca.pCounterAvailabilityImage = d->avail;
            if (cuptiProfilerGetCounterAvailability(&ca) == CUPTI_SUCCESS) {
                d->avail_size = ca.counterAvailabilityImageSize;
            } else {
                op_free(d->avail);
                d->avail = NULL;
            }
        }
    }
    d->known = 1;
    return d;
}

static rp_session *session_for(CUcontext ctx, uint32_t device)
{
    for (int i = 0; i < MAX_SESSIONS; i++)
        if (g_sessions[i].ctx == ctx)
            return g_sessions[i].broken ? NULL : &g_sessions[i];
    for (int i = 0; i < MAX_SESSIONS; i++)
        if (!g_sessions[i].ctx) {
            rp_session *s = &g_sessions[i];
            memset(s, 0, sizeof *s);
            s->ctx = ctx;
            s->device = device;
            CUpti_RangeProfiler_Enable_Params en = {.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
            en.ctx = ctx;
            CUptiResult r = cuptiRangeProfilerEnable(&en);
            if (r != CUPTI_SUCCESS) {
                s->broken = 1;
                turn_off("cuptiRangeProfilerEnable", r);
                return NULL;
            }
            s->obj = en.pRangeProfilerObject;
            return s;
        }
    static int warned;
    if (!warned++)
        op_warn("counters: more than %d CUDA contexts; launches on the others are not counted", MAX_SESSIONS);
    return NULL;
}

/* The plan's vendor half on device, or NULL. One per device: the config image is built with the
 * device's counter availability image, and two H100s of one host differ there (their disabled
 * units): with device 0's image, device 1 read smsp__inst_executed.sum as NaN on every dispatch
 * while gpu__time_duration.sum was right (mpi.gpu.pmc2 on two H100s). */
static vendor_plan *vendor_cached(const op_counters_plan *plan, uint32_t device)
{
    for (vendor_plan *vp = plan ? plan->vendor : NULL; vp; vp = vp->next)
        if (vp->device == device)
            return vp;
    return NULL;
}

static vendor_plan *vendor_for(const op_counters_plan *plan, const dev_info *d, uint32_t device)
{
    vendor_plan *vp = vendor_cached(plan, device);
    if (vp)
        return vp;
    vp = op_calloc(1, sizeof *vp);
    if (!vp)
        return NULL;
    char err[512];
    if (op_cupti_host_config_image(CUPTI_PROFILER_TYPE_RANGE_PROFILER, plan->chip, d->avail, plan->base_names,
                                   plan->num_base, &vp->host, &vp->image,
                                   &vp->image_size, &vp->passes, err, sizeof err)) {
        op_error("counters: %s; counter collection is off, the program runs on", err);
        atomic_store(&g_off, 1);
        op_free(vp);
        return NULL;
    }
    vp->device = device;
    vp->next = plan->vendor;
    ((op_counters_plan *)plan)->vendor = vp; /* provider.h invariant (3): the provider's cache slot */
    return vp;
}

static void free_plan_cache(void *p)
{
    for (vendor_plan *vp = p, *next; vp; vp = next) {
        next = vp->next;
        op_cupti_host_destroy(vp->host);
        op_free(vp->image);
        op_free(vp);
    }
}

/* (Re)initialize the counter data image and SetConfig for plan. Lock held. */
static int session_configure(rp_session *s, const op_counters_plan *plan, const vendor_plan *vp)
{
    CUptiResult r;
    if (s->plan != plan || !s->cd) {
        op_free(s->cd);
        s->cd = NULL;
        CUpti_RangeProfiler_GetCounterDataSize_Params cs = {.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
        cs.pRangeProfilerObject = s->obj;
        cs.pMetricNames = plan->base_names;
        cs.numMetrics = plan->num_base;
        cs.maxNumOfRanges = MAX_RANGES;
        cs.maxNumRangeTreeNodes = MAX_RANGES;
        if ((r = cuptiRangeProfilerGetCounterDataSize(&cs)) != CUPTI_SUCCESS) {
            turn_off("cuptiRangeProfilerGetCounterDataSize", r);
            return -1;
        }
        s->cd = op_calloc(1, cs.counterDataSize);
        if (!s->cd)
            return -1;
        s->cd_size = cs.counterDataSize;
    }
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params ci = {.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    ci.pRangeProfilerObject = s->obj;
    ci.counterDataSize = s->cd_size;
    ci.pCounterData = s->cd;
    if ((r = cuptiRangeProfilerCounterDataImageInitialize(&ci)) != CUPTI_SUCCESS) {
        turn_off("cuptiRangeProfilerCounterDataImageInitialize", r);
        return -1;
    }
    CUpti_RangeProfiler_SetConfig_Params sc = {.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    sc.pRangeProfilerObject = s->obj;
    sc.configSize = vp->image_size;
    sc.pConfig = vp->image;
    sc.counterDataImageSize = s->cd_size;
    sc.pCounterDataImage = s->cd;
    sc.range = CUPTI_AutoRange;
    /* Invariant (5): a one-pass set needs no replay, so no save/restore of device memory, and
     * the kernel keeps its timestamps (F7): user replay with a single pass. */
    int user = vp->passes <= 1 && !s->no_user_replay;
    sc.replayMode = user ? CUPTI_UserReplay : CUPTI_KernelReplay;
    sc.maxRangesPerPass = MAX_RANGES;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    r = cuptiRangeProfilerSetConfig(&sc);
    if (r != CUPTI_SUCCESS && user) {
        s->no_user_replay = 1;
        op_info("counters: one-pass user replay refused (%s); using kernel replay", op_cupti_result_text(r));
        user = 0;
        sc.replayMode = CUPTI_KernelReplay;
        r = cuptiRangeProfilerCounterDataImageInitialize(&ci);
        if (r == CUPTI_SUCCESS)
            r = cuptiRangeProfilerSetConfig(&sc);
    }
    if (r != CUPTI_SUCCESS) {
        turn_off("cuptiRangeProfilerSetConfig", r);
        return -1;
    }
    s->plan = plan;
    s->used = 0;
    s->user_replay = user;
    return 0;
}

/* ---- the launch hook ------------------------------------------------------------------- */

static void launch_dims(const CUpti_CallbackData *cb, omniprof_dim3_t *grid, omniprof_dim3_t *block)
{
    CUpti_CallbackDomain dom = op_cuda_launch_domain();
    CUpti_CallbackId id = op_cuda_launch_cbid();
    const void *p = cb->functionParams;
    if (!p)
        return;
    if (dom == CUPTI_CB_DOMAIN_RUNTIME_API &&
        (id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 || id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000)) {
        const cudaLaunchKernel_v7000_params *a = p;
        *grid = (omniprof_dim3_t){a->gridDim.x, a->gridDim.y, a->gridDim.z};
        *block = (omniprof_dim3_t){a->blockDim.x, a->blockDim.y, a->blockDim.z};
    } else if (dom == CUPTI_CB_DOMAIN_RUNTIME_API && (id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 ||
                                                      id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060)) {
        const cudaLaunchKernelExC_v11060_params *a = p;
        if (a->config) {
            *grid = (omniprof_dim3_t){a->config->gridDim.x, a->config->gridDim.y, a->config->gridDim.z};
            *block = (omniprof_dim3_t){a->config->blockDim.x, a->config->blockDim.y, a->config->blockDim.z};
        }
    } else if (dom == CUPTI_CB_DOMAIN_DRIVER_API &&
               (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz)) {
        const cuLaunchKernel_params *a = p;
        *grid = (omniprof_dim3_t){a->gridDimX, a->gridDimY, a->gridDimZ};
        *block = (omniprof_dim3_t){a->blockDimX, a->blockDimY, a->blockDimZ};
    } else if (dom == CUPTI_CB_DOMAIN_DRIVER_API &&
               (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx || id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz)) {
        const cuLaunchKernelEx_params *a = p;
        if (a->config) {
            *grid = (omniprof_dim3_t){a->config->gridDimX, a->config->gridDimY, a->config->gridDimZ};
            *block = (omniprof_dim3_t){a->config->blockDimX, a->config->blockDimY, a->config->blockDimZ};
        }
    }
}

static size_t decoded_ranges(rp_session *s);
static void ctx_synchronize(void);

static size_t g_batch = 1;      /* OMNIPROF_PMC_BATCH, read at dispatch_start */
static int g_atexit_registered;

/* Stop an open batched session and complete its pending dispatches (invariant (6)). Lock held. */
static void batch_flush(rp_session *s)
{
    if (!s->open)
        return;
    s->open = 0;
    size_t np = s->n_pending;
    s->n_pending = 0;
    CUpti_RangeProfiler_Stop_Params sp = {.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    sp.pRangeProfilerObject = s->obj;
    CUptiResult r = cuptiRangeProfilerStop(&sp);
    size_t n = 0;
    if (r == CUPTI_SUCCESS && sp.isAllPassSubmitted) {
        n = decoded_ranges(s);
        if (n < s->used + np && !atomic_load(&g_off)) {
            ctx_synchronize();
            n = decoded_ranges(s);
        }
    } else if (r != CUPTI_SUCCESS) {
        turn_off("cuptiRangeProfilerStop", r);
    }
    const op_counters_plan *plan = s->plan;
    vendor_plan *vp = vendor_cached(plan, s->device);
    double vals[64];
    for (size_t i = 0; i < np; i++) {
        size_t range = s->used + i;
        if (range < n && vp && plan->num_base <= 64 &&
            op_cupti_host_evaluate(vp->host, s->cd, s->cd_size, range, plan->base_names, plan->num_base, vals) == 0)
            op_sdk_counters_dispatch_complete(s->pending[i], vals, vp->passes);
        else
            op_sdk_counters_dispatch_cancel(s->pending[i]);
        s->pending[i] = NULL;
    }
    s->used = n > s->used + np ? n : s->used + np;
}

static void batch_flush_all_locked(void)
{
    for (int i = 0; i < MAX_SESSIONS; i++)
        if (g_sessions[i].ctx && g_sessions[i].open)
            batch_flush(&g_sessions[i]);
}

static void batch_atexit(void)
{
    pthread_mutex_lock(&g_rp_lock);
    batch_flush_all_locked();
    pthread_mutex_unlock(&g_rp_lock);
}

static rp_session *session_of(CUcontext ctx)
{
    for (int i = 0; i < MAX_SESSIONS; i++)
        if (g_sessions[i].ctx == ctx)
            return &g_sessions[i];
    return NULL;
}

static void on_enter(const CUpti_CallbackData *cb, CUcontext ctx)
{
    if (!cb->symbolName || !ctx) /* graph launches have no single kernel: not counted */
        return;
    uint32_t device = 0;
    if (cuptiGetDeviceId(ctx, &device) != CUPTI_SUCCESS)
        return;
    op_counters_launch l;
    memset(&l, 0, sizeof l);
    l.correlation_id.internal = op_cuda_launch_correlation_id ? op_cuda_launch_correlation_id() : 0;
    l.dispatch_id = op_cuda_launch_dispatch_id ? op_cuda_launch_dispatch_id() : 0;
    const char *mangled = NULL, *demangled = NULL;
    uint64_t kid = 0;
    op_cuda_kernel_names(cb->symbolName, &mangled, &demangled, &kid);
    l.kernel_name = demangled ? demangled : mangled;
    l.kernel_id = kid;
    l.agent_id = op_cuda_agent_of_device(device);
    l.thread_id = op_cuda_tid();
    l.device = device;
    l.launch_timestamp = op_now_ns();
    launch_dims(cb, &l.grid_size, &l.block_size);
    pthread_mutex_lock(&g_rp_lock);
    dev_info *d = device_info(device, ctx);
    if (!d) {
        pthread_mutex_unlock(&g_rp_lock);
        return;
    }
    l.chip = d->chip;
    void *token = NULL;
    const op_counters_plan *plan = op_sdk_counters_dispatch_select(&l, &token);
    if (!plan) {
        rp_session *open = session_of(ctx);
        if (open && open->open)
            batch_flush(open); /* an uncounted kernel must not become a range */
        pthread_mutex_unlock(&g_rp_lock);
        return;
    }
    rp_session *s = session_for(ctx, device);
    vendor_plan *vp = s ? vendor_for(plan, d, device) : NULL;
    if (s && s->open) {
        if (s->plan == plan && s->n_pending < g_batch && s->used + s->n_pending < MAX_RANGES) {
            /* the batch goes on: the session is started already (invariant (6)) */
            tl_token = token;
            tl_session = s;
            tl_plan = plan;
            tl_t_enter_done = op_now_ns();
            g_tacc_pending_start = 0;
            return; /* lock held until on_exit */
        }
        batch_flush(s);
    }
    if (!s || !vp || ((s->plan != plan || s->used >= MAX_RANGES) && session_configure(s, plan, vp))) {
        op_sdk_counters_dispatch_cancel(token);
        pthread_mutex_unlock(&g_rp_lock);
        return;
    }
    uint64_t t0 = op_now_ns();
    CUpti_RangeProfiler_Start_Params st = {.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    st.pRangeProfilerObject = s->obj;
    CUptiResult r = cuptiRangeProfilerStart(&st);
    if (r != CUPTI_SUCCESS && s->user_replay) {
        /* a finished user-replay session may need its config again; failing that, kernel replay */
        if (session_configure(s, plan, vp) == 0)
            r = cuptiRangeProfilerStart(&st);
        if (r != CUPTI_SUCCESS && !atomic_load(&g_off)) {
            op_info("counters: restarting a one-pass user-replay range failed (%s); using kernel replay",
                    op_cupti_result_text(r));
            s->no_user_replay = 1;
            if (session_configure(s, plan, vp) == 0)
                r = cuptiRangeProfilerStart(&st);
        }
    }
    if (r != CUPTI_SUCCESS) {
        turn_off("cuptiRangeProfilerStart", r);
        op_sdk_counters_dispatch_cancel(token);
        pthread_mutex_unlock(&g_rp_lock);
        return;
    }
    tl_t_enter_done = op_now_ns();
    g_tacc_pending_start = tl_t_enter_done - t0;
    if (g_batch > 1 && s->user_replay) {
        s->open = 1;
        if (!g_atexit_registered) {
            /* after the CUDA runtime's own atexit handler (it ran its init before this launch),
             * so ours runs first, while the context is alive */
            g_atexit_registered = 1;
            atexit(batch_atexit);
        }
    }
    /* invariant (1): the lock stays held until on_exit of this launch */
    tl_token = token;
    tl_session = s;
    tl_plan = plan;
}

typedef CUresult (*ctx_sync_fn)(void);

static void ctx_synchronize(void)
{
    static ctx_sync_fn fn;
    if (!fn) {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (h)
            fn = (ctx_sync_fn)dlsym(h, "cuCtxSynchronize");
    }
    if (fn)
        fn();
}

static size_t decoded_ranges(rp_session *s)
{
    CUpti_RangeProfiler_DecodeData_Params dd = {.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    dd.pRangeProfilerObject = s->obj;
    CUptiResult r = cuptiRangeProfilerDecodeData(&dd);
    if (r != CUPTI_SUCCESS) {
        turn_off("cuptiRangeProfilerDecodeData", r);
        return 0;
    }
    CUpti_RangeProfiler_GetCounterDataInfo_Params gi = {.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    gi.pCounterDataImage = s->cd;
    gi.counterDataImageSize = s->cd_size;
    if (cuptiRangeProfilerGetCounterDataInfo(&gi) != CUPTI_SUCCESS)
        return 0;
    return gi.numTotalRanges;
}

static void on_exit_launch(const CUpti_CallbackData *cb)
{
    void *token = tl_token;
    rp_session *s = tl_session;
    const op_counters_plan *plan = tl_plan;
    tl_token = NULL;
    tl_session = NULL;
    tl_plan = NULL;
    if (!token)
        return;
    if (s->open) {
        int failed = cb->functionReturnValue && *(const int *)cb->functionReturnValue != 0;
        if (failed) {
            batch_flush(s); /* the failed launch made no range: close the batch before it */
            op_sdk_counters_dispatch_cancel(token);
        } else {
            s->pending[s->n_pending++] = token;
            if (s->n_pending >= g_batch || s->used + s->n_pending >= MAX_RANGES)
                batch_flush(s);
        }
        pthread_mutex_unlock(&g_rp_lock);
        return;
    }
    uint64_t t[T__N] = {g_tacc_pending_start, 0, 0, 0, 0};
    uint64_t t1 = op_now_ns();
    t[T_LAUNCH] = t1 - tl_t_enter_done;
    CUpti_RangeProfiler_Stop_Params sp = {.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    sp.pRangeProfilerObject = s->obj;
    CUptiResult r = cuptiRangeProfilerStop(&sp);
    uint64_t t2 = op_now_ns();
    t[T_STOP] = t2 - t1;
    if (s->user_replay && !sp.isAllPassSubmitted) {
        /* cannot happen with one pass; if it does, this range is incomplete: kernel replay from now on */
        op_info("counters: a one-pass user-replay range needs more passes; using kernel replay");
        s->no_user_replay = 1;
        s->used = MAX_RANGES; /* reconfigure at the next launch */
        op_sdk_counters_dispatch_cancel(token);
        pthread_mutex_unlock(&g_rp_lock);
        return;
    }
    if (r != CUPTI_SUCCESS) {
        turn_off("cuptiRangeProfilerStop", r);
        op_sdk_counters_dispatch_cancel(token);
        pthread_mutex_unlock(&g_rp_lock);
        return;
    }
    int failed = cb->functionReturnValue && *(const int *)cb->functionReturnValue != 0;
    size_t n = failed ? 0 : decoded_ranges(s);
    if (!failed && n <= s->used && !atomic_load(&g_off)) {
        ctx_synchronize(); /* the kernel had not finished: wait, then decode again */
        n = decoded_ranges(s);
    }
    if (failed || n <= s->used) {
        if (!failed) {
            static int warned;
            if (!warned++)
                op_warn("counters: a counted launch produced no range; its values are missing");
        }
        op_sdk_counters_dispatch_cancel(token);
        s->used = n > s->used ? n : s->used;
        pthread_mutex_unlock(&g_rp_lock);
        return;
    }
    uint64_t t3 = op_now_ns();
    t[T_DECODE] = t3 - t2;
    double small[64];
    double *vals = plan->num_base <= 64 ? small : op_calloc(plan->num_base, sizeof(double));
    vendor_plan *vp = vendor_cached(plan, s->device);
    int er = vals && vp ? op_cupti_host_evaluate(vp->host, s->cd, s->cd_size, n - 1, plan->base_names, plan->num_base,
                                                 vals)
                        : -1;
    s->used = n;
    if (er == 0) {
        op_sdk_counters_dispatch_complete(token, vals, vp->passes);
    } else {
        static int warned;
        if (!warned++)
            op_warn("counters: evaluating a range failed (%s)", op_cupti_result_text((CUptiResult)er));
        op_sdk_counters_dispatch_cancel(token);
    }
    if (vals && vals != small)
        op_free(vals);
    t[T_EVAL] = op_now_ns() - t3;
    timing_add(t);
    pthread_mutex_unlock(&g_rp_lock);
}

static void launch_hook(int phase, const CUpti_CallbackData *cb, CUcontext ctx, void *data)
{
    (void)data;
    if (phase == OP_CUDA_LAUNCH_ENTER) {
        if (tl_depth++ > 0)
            return; /* invariant (2) */
        if (atomic_load_explicit(&g_off, memory_order_relaxed))
            return;
        if (!op_sdk_counters_dispatch_active()) {
            if (g_batch > 1) { /* counting stopped with a batch open: close it */
                pthread_mutex_lock(&g_rp_lock);
                batch_flush_all_locked();
                pthread_mutex_unlock(&g_rp_lock);
            }
            return;
        }
        on_enter(cb, ctx);
    } else if (phase == OP_CUDA_LAUNCH_EXIT) {
        if (tl_depth > 0 && --tl_depth > 0)
            return;
        on_exit_launch(cb);
    }
}

/* ---- provider entry points ------------------------------------------------------------- */

static omniprof_status_t dispatch_start(void)
{
    uint64_t b = op_setting_uint(OP_SET_PMC_BATCH);
    g_batch = b < 1 ? 1 : b > MAX_RANGES ? MAX_RANGES : (size_t)b;
    op_cuda_set_launch_hook(launch_hook, NULL);
    if (op_cuda_backend_ensure_started() != 0) {
        op_warn("counters: the CUDA backend is off (its message above says why); counter collection is off, the "
                "program runs on");
        return OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
    }
    return OMNIPROF_STATUS_SUCCESS;
}

static void dispatch_stop(void) { op_cuda_set_launch_hook(NULL, NULL); }

static const char *default_chip(void)
{
    /* Known once a launch on device 0 was seen; no driver initialization from here. */
    return g_devs[0].known ? g_devs[0].chip : NULL;
}

static const char *chip_of_device(uint32_t device)
{
    return device < 64 && g_devs[device].known ? g_devs[device].chip : NULL;
}

/* ---- device counting (UserRange + UserReplay, one pass) -------------------------------- */

typedef CUresult (*primary_retain_fn)(CUcontext *, CUdevice);
typedef CUresult (*ctx_push_fn)(CUcontext);
typedef CUresult (*ctx_pop_fn)(CUcontext *);

typedef struct dev_session {
    CUcontext ctx;
    rp_session rs;
    const op_counters_plan *plan;
} dev_session;

static struct {
    primary_retain_fn retain;
    ctx_push_fn push;
    ctx_pop_fn pop;
} g_drv;

static int driver_syms(void)
{
    if (g_drv.retain)
        return 0;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h)
        return -1;
    g_drv.push = (ctx_push_fn)dlsym(h, "cuCtxPushCurrent_v2");
    g_drv.pop = (ctx_pop_fn)dlsym(h, "cuCtxPopCurrent_v2");
    g_drv.retain = (primary_retain_fn)dlsym(h, "cuDevicePrimaryCtxRetain");
    return (g_drv.retain && g_drv.push && g_drv.pop) ? 0 : -1;
}

/* A device window's counter data cleared and the configuration of vp set on it (user ranges,
 * user replay, one range per pass): done when the session opens and after each read. */
static CUptiResult dev_window_config(dev_session *ds, const vendor_plan *vp)
{
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params ci = {.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    ci.pRangeProfilerObject = ds->rs.obj;
    ci.counterDataSize = ds->rs.cd_size;
    ci.pCounterData = ds->rs.cd;
    CUptiResult r = cuptiRangeProfilerCounterDataImageInitialize(&ci);
    if (r != CUPTI_SUCCESS) return r;
    CUpti_RangeProfiler_SetConfig_Params sc = {.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    sc.pRangeProfilerObject = ds->rs.obj;
    sc.configSize = vp->image_size;
    sc.pConfig = vp->image;
    sc.counterDataImageSize = ds->rs.cd_size;
    sc.pCounterDataImage = ds->rs.cd;
    sc.range = CUPTI_UserRange;
    sc.replayMode = CUPTI_UserReplay;
    sc.maxRangesPerPass = 1;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.targetNestingLevel = 1;
    return cuptiRangeProfilerSetConfig(&sc);
}

static omniprof_status_t dev_window_open(dev_session *ds)
{
    CUpti_RangeProfiler_Start_Params st = {.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    st.pRangeProfilerObject = ds->rs.obj;
    CUptiResult r = cuptiRangeProfilerStart(&st);
    if (r == CUPTI_SUCCESS) {
        CUpti_RangeProfiler_PushRange_Params pr = {.structSize = CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
        pr.pRangeProfilerObject = ds->rs.obj;
        pr.pRangeName = "window";
        r = cuptiRangeProfilerPushRange(&pr);
    }
    return op_cupti_counters_status(r, NULL, 0);
}

static omniprof_status_t device_start(uint32_t device, const op_counters_plan *plan, void **session)
{
    if (driver_syms())
        return OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
    dev_session *ds = op_calloc(1, sizeof *ds);
    if (!ds)
        return OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
    if (g_drv.retain(&ds->ctx, (CUdevice)device) != CUDA_SUCCESS) {
        op_free(ds);
        return OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
    }
    g_drv.push(ds->ctx);
    omniprof_status_t st = OMNIPROF_STATUS_ERROR;
    pthread_mutex_lock(&g_rp_lock);
    dev_info *d = device_info(device, ds->ctx);
    vendor_plan *vp = d ? vendor_for(plan, d, device) : NULL;
    CUpti_RangeProfiler_Enable_Params en = {.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    en.ctx = ds->ctx;
    CUptiResult r = vp ? cuptiRangeProfilerEnable(&en) : CUPTI_ERROR_UNKNOWN;
    if (r == CUPTI_SUCCESS) {
        ds->rs.obj = en.pRangeProfilerObject;
        ds->rs.ctx = ds->ctx;
        ds->rs.device = device;
        ds->plan = plan;
        /* session_configure sets AutoRange/KernelReplay; device windows need UserRange/UserReplay */
        CUpti_RangeProfiler_GetCounterDataSize_Params cs = {.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
        cs.pRangeProfilerObject = ds->rs.obj;
        cs.pMetricNames = plan->base_names;
        cs.numMetrics = plan->num_base;
        cs.maxNumOfRanges = 1;
        cs.maxNumRangeTreeNodes = 1;
        r = cuptiRangeProfilerGetCounterDataSize(&cs);
        if (r == CUPTI_SUCCESS && (ds->rs.cd = op_calloc(1, cs.counterDataSize))) {
            ds->rs.cd_size = cs.counterDataSize;
            st = OMNIPROF_STATUS_SUCCESS;
        }
    } else if (vp) {
        st = op_cupti_counters_status(r, NULL, 0);
    }
    pthread_mutex_unlock(&g_rp_lock);
    if (st == OMNIPROF_STATUS_SUCCESS) {
        st = op_cupti_counters_status(dev_window_config(ds, vp), NULL, 0);
        if (st == OMNIPROF_STATUS_SUCCESS)
            st = dev_window_open(ds);
    }
    CUcontext popped;
    g_drv.pop(&popped);
    if (st != OMNIPROF_STATUS_SUCCESS) {
        op_free(ds->rs.cd);
        op_free(ds);
        return st;
    }
    *session = ds;
    return st;
}

static omniprof_status_t device_read(void *session, double *values)
{
    dev_session *ds = session;
    g_drv.push(ds->ctx);
    CUpti_RangeProfiler_PopRange_Params pp = {.structSize = CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
    pp.pRangeProfilerObject = ds->rs.obj;
    CUptiResult r = cuptiRangeProfilerPopRange(&pp);
    CUpti_RangeProfiler_Stop_Params sp = {.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    sp.pRangeProfilerObject = ds->rs.obj;
    if (r == CUPTI_SUCCESS)
        r = cuptiRangeProfilerStop(&sp);
    ctx_synchronize();
    omniprof_status_t st = op_cupti_counters_status(r, NULL, 0);
    if (st == OMNIPROF_STATUS_SUCCESS) {
        size_t n = decoded_ranges(&ds->rs);
        vendor_plan *vp = vendor_cached(ds->plan, ds->rs.device);
        if (n == 0 || !vp || op_cupti_host_evaluate(vp->host, ds->rs.cd, ds->rs.cd_size, n - 1, ds->plan->base_names,
                                             ds->plan->num_base, values))
            st = OMNIPROF_STATUS_ERROR;
        /* next window */
        (void)dev_window_config(ds, vp);
        dev_window_open(ds);
    }
    CUcontext popped;
    g_drv.pop(&popped);
    return st;
}

static void device_stop(void *session)
{
    dev_session *ds = session;
    if (!ds)
        return;
    g_drv.push(ds->ctx);
    CUpti_RangeProfiler_PopRange_Params pp = {.structSize = CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
    pp.pRangeProfilerObject = ds->rs.obj;
    cuptiRangeProfilerPopRange(&pp);
    CUpti_RangeProfiler_Stop_Params sp = {.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    sp.pRangeProfilerObject = ds->rs.obj;
    cuptiRangeProfilerStop(&sp);
    CUpti_RangeProfiler_Disable_Params di = {.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    di.pRangeProfilerObject = ds->rs.obj;
    cuptiRangeProfilerDisable(&di);
    CUcontext popped;
    g_drv.pop(&popped);
    op_free(ds->rs.cd);
    op_free(ds);
}

const op_counters_provider op_cupti_counters_provider = {
    .size = sizeof(op_counters_provider),
    .name = "cupti",
    .iterate_chips = op_cupti_host_iterate_chips,
    .iterate_base = op_cupti_host_iterate_base,
    .iterate_submetrics = op_cupti_host_iterate_submetrics,
    .describe = op_cupti_host_describe,
    .plan_passes = op_cupti_host_plan_passes,
    .duration_metric = "gpu__time_duration.sum",
    .default_chip = default_chip,
    .dispatch_start = dispatch_start,
    .dispatch_stop = dispatch_stop,
    .flush = batch_atexit,
    .free_plan_cache = free_plan_cache,
    .device_start = device_start,
    .device_read = device_read,
    .device_stop = device_stop,
    .chip_of_device = chip_of_device,
};

__attribute__((constructor)) static void cupti_counters_register(void)
{
    op_sdk_counters_register_provider(&op_cupti_counters_provider);
}
