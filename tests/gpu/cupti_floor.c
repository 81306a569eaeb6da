/* cupti_floor.c — bare CUPTI configurations as a CUDA injection library
 * (CUDA_INJECTION64_PATH=.../libomniprof-cupti-floor.so), so that the PyTorch comparison
 * (tests/gpu/torch_compare.py) measures what CUPTI itself costs on the same loop, beside
 * omniprof's modes that ask CUPTI for the same records. No callback, no processing: records are
 * counted and the buffers freed. OMNIPROF_CUPTI_FLOOR selects:
 *   kernel   CONCURRENT_KERNEL + MEMCPY + MEMSET activity (what any kernel trace pays)
 *   launch   kernel + API activity of the runtime and driver launch calls (= omniprof --kernel-trace)
 *   runtime  launch + every runtime API call but those of omniprof's default OMNIPROF_CUDA_API_EXCLUDE
 *            (read from src/common/settings.def, names matched to CUPTI's runtime callback ids by
 *            cuptiGetCallbackName without the version suffix), + MEMORY2 (= omniprof --runtime-trace
 *            without NVTX); omniprof_cupti_floor_excluded() lists them (tests/gpu/check_floor.py)
 *   runtime_all  runtime with every runtime API call but cudaGetDevice (what torch.profiler asks
 *            CUPTI for: it drops the rest of that list from its trace afterwards)
 * Modifiers (the settings omniprof adds to the same records, priced alone): OMNIPROF_CUPTI_FLOOR_SUB=1
 * a subscriber with the resource and NVTX domains enabled (no API callback); OMNIPROF_CUPTI_FLOOR_TID=
 * system: cuptiSetThreadIdType(SYSTEM); OMNIPROF_CUPTI_FLOOR_TS=mono: a CLOCK_MONOTONIC timestamp callback;
 * OMNIPROF_CUPTI_FLOOR_PROFCB=rt|drv|both: a subscriber with the callbacks of cudaProfilerStart/Stop (rt),
 * of cuProfilerStart/Stop (drv) or both on (what omniprof --selected-regions enables).
 * OMNIPROF_CUPTI_FLOOR_WINDOWS=1: the mode's kinds start disabled; omniprof_cupti_floor_window(1/0), called by
 * the program (tests/gpu/torch_train.py --windows, through ctypes), enables/disables them around each
 * profiled window (the within-process comparison; the modifiers above stay as set at injection).
 * The per-call API enables (the launch calls) are made at injection and stay on, as omniprof keeps
 * them (CUPTI records nothing for a per-call enable first made after CUDA's initialization: a floor
 * that made them per window would leave out the launch records omniprof pays for);
 * OMNIPROF_CUPTI_FLOOR_IDS=window makes them per window instead (to show that difference);
 * OMNIPROF_CUPTI_FLOOR_START=on leaves the kinds on from injection until the first window closes;
 * OMNIPROF_CUPTI_FLOOR_CTOR=1 (library preloaded): set up from its constructor, before CUDA's initialization
 * (OMNIPROF_CUPTI_FLOOR_CUINIT=1: and cuInit called there too, as omniprof's agent query does early);
 * OMNIPROF_CUPTI_FLOOR_FUNCTION=1: the FUNCTION kind (kernel symbols) on from injection, as omniprof keeps it.
 * At exit it prints "cupti_floor: MODE kernels=N api=N (driver=N) other=N dropped=N[ windows=N]" on
 * stderr. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>
#include <time.h>

static long g_kernels, g_api, g_driver, g_other;
static size_t g_dropped;
static const char *g_mode = "kernel";
static int g_windows;          /* OMNIPROF_CUPTI_FLOOR_WINDOWS=1 */
static int g_ids_per_window;   /* OMNIPROF_CUPTI_FLOOR_IDS=window */
static long g_windows_opened; /* omniprof_cupti_floor_window(1) calls */

static void CUPTIAPI req(uint8_t **buf, size_t *size, size_t *max)
{
    *size = 8u << 20;
    *buf = aligned_alloc(8, *size);
    *max = 0;
}

static void CUPTIAPI done(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
    (void)size;
    CUpti_Activity *r = NULL;
    while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
        if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) g_kernels++;
        else if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME || r->kind == CUPTI_ACTIVITY_KIND_DRIVER) {
            g_api++;
            g_driver += r->kind == CUPTI_ACTIVITY_KIND_DRIVER;
        }
        else g_other++;
    }
    size_t d = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &d) == CUPTI_SUCCESS) g_dropped += d;
    free(buf);
}

static void CUPTIAPI no_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *p)
{
    (void)u, (void)d, (void)id, (void)p;
}

static uint64_t CUPTIAPI ts_mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int env_is(const char *name, const char *v)
{
    const char *e = getenv(name);
    return e && !strcmp(e, v);
}

/* OMNIPROF_CUDA_API_EXCLUDE's default, from the one registry of settings */
static const char *exclude_default(void)
{
#define OP_SETTING(id, type, def, choices, desc) \
    if (!strcmp(#id, "CUDA_API_EXCLUDE")) return def;
#include "common/settings.def"
#undef OP_SETTING
    return "";
}

/* Is `name` (a CUPTI callback name, e.g. "cudaGetLastError_v3020") in the comma-separated list,
 * compared without its "_vNNNN" suffix? */
static int in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    const char *v = strrchr(name, '_');
    if (v && v[1] == 'v' && v[2] >= '0' && v[2] <= '9') n = (size_t)(v - name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return 1;
        p += len + (e != NULL);
    }
    return 0;
}

/* The runtime callback ids the `runtime` floor leaves out; writes their names, comma-separated,
 * to out (for the check on a machine without a GPU) and returns how many. */
__attribute__((visibility("default"))) int omniprof_cupti_floor_excluded(CUpti_CallbackId *ids, int max, char *out,
                                                                         size_t outlen)
{
    const char *list = exclude_default();
    int n = 0;
    size_t at = 0;
    if (out && outlen) out[0] = '\0';
    for (CUpti_CallbackId id = 1; id < CUPTI_RUNTIME_TRACE_CBID_SIZE; id++) {
        const char *name = NULL;
        if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, id, &name) != CUPTI_SUCCESS || !name || !in_list(list, name))
            continue;
        if (ids && n < max) ids[n] = id;
        n++;
        if (out && at < outlen) at += (size_t)snprintf(out + at, outlen - at, "%s%s", at ? "," : "", name);
    }
    return n;
}

/* The activity kinds of the mode and, when `ids`, its per-call API enables: on = 1 enables them, as
 * at injection without windows; on = 0 disables them and flushes what CUPTI holds. Returns the
 * first CUPTI error, or CUPTI_SUCCESS. */
static CUptiResult set_kinds(int on, int ids)
{
    static const CUpti_CallbackId rt[] = {
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,     CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
        CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,  CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
        CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,     CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000};
    static const CUpti_CallbackId drv[] = {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                                           CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
                                           CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz};
    static const CUpti_ActivityKind gpu[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                             CUPTI_ACTIVITY_KIND_MEMSET};
    int runtime = !strcmp(g_mode, "runtime") || !strcmp(g_mode, "runtime_all");
    int launch = !strcmp(g_mode, "launch") || runtime;
    CUptiResult first = CUPTI_SUCCESS, r;
#define KEEP(call) ((r = (call)) != CUPTI_SUCCESS && first == CUPTI_SUCCESS ? (void)(first = r) : (void)0)
    for (size_t i = 0; i < sizeof gpu / sizeof gpu[0]; i++)
        KEEP(on ? cuptiActivityEnable(gpu[i]) : cuptiActivityDisable(gpu[i]));
    if (runtime && on) {
        KEEP(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME)); /* overrides earlier per-id settings */
        KEEP(cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 0));
        if (!strcmp(g_mode, "runtime")) {
            CUpti_CallbackId skip[64];
            int n = omniprof_cupti_floor_excluded(skip, 64, NULL, 0);
            for (int i = 0; i < n && i < 64; i++) KEEP(cuptiActivityEnableRuntimeApi(skip[i], 0));
        }
        KEEP(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2));
    } else if (runtime) {
        KEEP(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME));
        KEEP(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMORY2));
    } else if (launch && ids) {
        for (size_t i = 0; i < sizeof rt / sizeof rt[0]; i++) KEEP(cuptiActivityEnableRuntimeApi(rt[i], (uint8_t)on));
    }
    if (launch && ids)
        for (size_t i = 0; i < sizeof drv / sizeof drv[0]; i++) KEEP(cuptiActivityEnableDriverApi(drv[i], (uint8_t)on));
    if (!on) KEEP(cuptiActivityFlushAll(0));
#undef KEEP
    return first;
}

/* OMNIPROF_CUPTI_FLOOR_WINDOWS=1: the floor starts with its kinds off; the program (tests/gpu/
 * torch_train.py --window-api cupti_floor, through ctypes) turns them on (on = 1) for a profiled
 * window and off (on = 0) after it. Returns 0, the first CUPTI error, or -1 without windows. */
__attribute__((visibility("default"))) int omniprof_cupti_floor_window(int on)
{
    if (!g_windows) return -1;
    g_windows_opened += on != 0;
    return (int)set_kinds(on != 0, g_ids_per_window);
}

static void at_exit(void)
{
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    fprintf(stderr, "cupti_floor: %s kernels=%ld api=%ld (driver=%ld) other=%ld dropped=%zu", g_mode, g_kernels, g_api,
            g_driver, g_other, g_dropped);
    if (g_windows) fprintf(stderr, " windows=%ld", g_windows_opened);
    fputc('\n', stderr);
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
    static int done_once;
    if (done_once++) return 1;
    const char *m = getenv("OMNIPROF_CUPTI_FLOOR");
    if (m && *m) g_mode = m;
    if (env_is("OMNIPROF_CUPTI_FLOOR_TS", "mono")) cuptiActivityRegisterTimestampCallback(ts_mono);
    if (env_is("OMNIPROF_CUPTI_FLOOR_TID", "system")) cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    const char *pcb = getenv("OMNIPROF_CUPTI_FLOOR_PROFCB");
    int prof_rt = pcb && (!strcmp(pcb, "rt") || !strcmp(pcb, "both"));
    int prof_drv = pcb && (!strcmp(pcb, "drv") || !strcmp(pcb, "both"));
    if (env_is("OMNIPROF_CUPTI_FLOOR_SUB", "1") || prof_rt || prof_drv) {
        CUpti_SubscriberHandle s;
        if (cuptiSubscribe(&s, (CUpti_CallbackFunc)no_cb, NULL) == CUPTI_SUCCESS) {
            if (env_is("OMNIPROF_CUPTI_FLOOR_SUB", "1")) {
                cuptiEnableDomain(1, s, CUPTI_CB_DOMAIN_RESOURCE);
                cuptiEnableDomain(1, s, CUPTI_CB_DOMAIN_NVTX);
            }
            if (prof_drv) {
                cuptiEnableCallback(1, s, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
                cuptiEnableCallback(1, s, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
            }
            if (prof_rt) {
                cuptiEnableCallback(1, s, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
                cuptiEnableCallback(1, s, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
            }
        }
    }
    cuptiActivityRegisterCallbacks(req, done);
    if (env_is("OMNIPROF_CUPTI_FLOOR_FUNCTION", "1")) cuptiActivityEnable(CUPTI_ACTIVITY_KIND_FUNCTION); /* stays on */
    g_windows = env_is("OMNIPROF_CUPTI_FLOOR_WINDOWS", "1");
    g_ids_per_window = g_windows && env_is("OMNIPROF_CUPTI_FLOOR_IDS", "window");
    if (!g_windows) set_kinds(1, 1);
    else if (env_is("OMNIPROF_CUPTI_FLOOR_START", "on")) set_kinds(1, 1); /* on until the first window closes */
    else if (!g_ids_per_window) set_kinds(1, 1), set_kinds(0, 0); /* per-call enables now, kinds per window */
    atexit(at_exit);
    return 1;
}

/* OMNIPROF_CUPTI_FLOOR_CTOR=1 with the library in LD_PRELOAD: CUPTI is set up from the library's
 * constructor, before the program initializes CUDA (as a preloaded tool such as omniprof does),
 * instead of by CUDA's injection during cuInit. */
__attribute__((constructor)) static void floor_ctor(void)
{
    if (env_is("OMNIPROF_CUPTI_FLOOR_CTOR", "1")) InitializeInjection();
    /* OMNIPROF_CUPTI_FLOOR_CUINIT=1: cuInit from the constructor too, before the program's own
     * (omniprof's tool initializes CUDA early: it queries the agents when it opens its database) */
    if (env_is("OMNIPROF_CUPTI_FLOOR_CUINIT", "1")) {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        CUresult (*init)(unsigned) = h ? (CUresult(*)(unsigned))dlsym(h, "cuInit") : NULL;
        if (init) init(0);
    }
}
