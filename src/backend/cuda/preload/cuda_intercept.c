/* cuda_intercept.c — libomniprof-cuda-intercept.so: the CUDA driver API intercept table
 * (OMNIPROF_INTERCEPT_TABLE_CUDA_DRIVER). Preload it (LD_PRELOAD) in front of the tool; the CUDA
 * backend finds its table at start and hands it to the tools that asked for it.
 *
 * Why a separate preloaded library: the CUDA runtime (static or shared) never calls the driver
 * by symbol. It dlopens libcuda.so.1, dlsym()s cuGetProcAddress_v2 and resolves ~440 entry
 * points through it (docs/cuda.md), so LD_PRELOADing cuLaunchKernel sees nothing. What
 * works (verified 100/100 on the H100): interposing dlsym itself — which only a library in the
 * initial global scope (LD_PRELOAD) can do, not the dlopen'ed backend — and rewriting the
 * pointers cuGetProcAddress returns for the table's entries.
 *
 * How a call flows: the application (through cudart) calls our wrapper for, say, cuLaunchKernel;
 * the wrapper calls g_table.cuLaunchKernel, which is our stub calling the real driver entry
 * unless a tool replaced it with its own wrapper (that calls the previous value). Programs
 * linked with -lcuda call the exported cu* symbols below, which are the same wrappers.
 *
 * Invariants:
 *  (1) Table entries are never NULL: before the driver is resolved they point at stubs that
 *      resolve the real entry on first use (dlopen("libcuda.so.1") + the real dlsym).
 *  (2) Rewriting is keyed by name and by the per-thread-stream flag (the _ptsz variants).
 *  (3) Nothing here allocates, logs through omniprof, or depends on the SDK being loaded. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "omniprof/cuda.h"

#define API __attribute__((visibility("default")))

typedef void *(*dlsym_t)(void *, const char *);
typedef int (*gpa_t)(const char *, void **, int, uint64_t, int *);

static dlsym_t real_dlsym_fn(void)
{
    static dlsym_t r;
    if (!r) r = (dlsym_t)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!r) r = (dlsym_t)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    return r;
}

static void *driver_sym(const char *name)
{
    static void *h;
    if (!h) h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_GLOBAL);
    dlsym_t d = real_dlsym_fn();
    return (h && d) ? d(h, name) : NULL;
}

/* Real driver entry points, filled by cuGetProcAddress or on first use. */
static struct {
    void *cuLaunchKernel, *cuLaunchKernel_ptsz, *cuLaunchKernelEx, *cuLaunchKernelEx_ptsz, *cuMemAlloc_v2,
        *cuMemFree_v2, *cuMemcpyHtoD_v2, *cuMemcpyDtoH_v2, *cuMemcpyAsync, *cuMemcpyAsync_ptsz, *cuStreamSynchronize,
        *cuCtxSynchronize, *cuGraphLaunch, *cuGraphLaunch_ptsz;
} g_real;
static gpa_t g_real_gpa;

#define REAL(NAME, TYPE) ((TYPE)(g_real.NAME ? g_real.NAME : (g_real.NAME = driver_sym(#NAME))))
#define NOTFOUND 500 /* CUDA_ERROR_NOT_FOUND */

typedef omniprof_cu_result_t (*launch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                         void *, void **, void **);
typedef omniprof_cu_result_t (*launchex_t)(const void *, void *, void **, void **);
typedef omniprof_cu_result_t (*alloc_t)(uint64_t *, size_t);
typedef omniprof_cu_result_t (*free_t)(uint64_t);
typedef omniprof_cu_result_t (*htod_t)(uint64_t, const void *, size_t);
typedef omniprof_cu_result_t (*dtoh_t)(void *, uint64_t, size_t);
typedef omniprof_cu_result_t (*cpyasync_t)(uint64_t, uint64_t, size_t, void *);
typedef omniprof_cu_result_t (*ssync_t)(void *);
typedef omniprof_cu_result_t (*csync_t)(void);
typedef omniprof_cu_result_t (*glaunch_t)(void *, void *);

/* Stubs: the table's initial values (call the real driver). */
static omniprof_cu_result_t s_launch(void *f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e, unsigned g,
                                     unsigned sm, void *s, void **p, void **x)
{ launch_t r = REAL(cuLaunchKernel, launch_t); return r ? r(f, a, b, c, d, e, g, sm, s, p, x) : NOTFOUND; }
static omniprof_cu_result_t s_launch_ptsz(void *f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e,
                                          unsigned g, unsigned sm, void *s, void **p, void **x)
{ launch_t r = REAL(cuLaunchKernel_ptsz, launch_t); return r ? r(f, a, b, c, d, e, g, sm, s, p, x) : NOTFOUND; }
static omniprof_cu_result_t s_launchex(const void *cfg, void *f, void **p, void **x)
{ launchex_t r = REAL(cuLaunchKernelEx, launchex_t); return r ? r(cfg, f, p, x) : NOTFOUND; }
static omniprof_cu_result_t s_launchex_ptsz(const void *cfg, void *f, void **p, void **x)
{ launchex_t r = REAL(cuLaunchKernelEx_ptsz, launchex_t); return r ? r(cfg, f, p, x) : NOTFOUND; }
static omniprof_cu_result_t s_alloc(uint64_t *p, size_t n) { alloc_t r = REAL(cuMemAlloc_v2, alloc_t); return r ? r(p, n) : NOTFOUND; }
static omniprof_cu_result_t s_free(uint64_t p) { free_t r = REAL(cuMemFree_v2, free_t); return r ? r(p) : NOTFOUND; }
static omniprof_cu_result_t s_htod(uint64_t d, const void *s, size_t n) { htod_t r = REAL(cuMemcpyHtoD_v2, htod_t); return r ? r(d, s, n) : NOTFOUND; }
static omniprof_cu_result_t s_dtoh(void *d, uint64_t s, size_t n) { dtoh_t r = REAL(cuMemcpyDtoH_v2, dtoh_t); return r ? r(d, s, n) : NOTFOUND; }
static omniprof_cu_result_t s_cpyasync(uint64_t d, uint64_t s, size_t n, void *st) { cpyasync_t r = REAL(cuMemcpyAsync, cpyasync_t); return r ? r(d, s, n, st) : NOTFOUND; }
static omniprof_cu_result_t s_cpyasync_ptsz(uint64_t d, uint64_t s, size_t n, void *st) { cpyasync_t r = REAL(cuMemcpyAsync_ptsz, cpyasync_t); return r ? r(d, s, n, st) : NOTFOUND; }
static omniprof_cu_result_t s_ssync(void *st) { ssync_t r = REAL(cuStreamSynchronize, ssync_t); return r ? r(st) : NOTFOUND; }
static omniprof_cu_result_t s_csync(void) { csync_t r = REAL(cuCtxSynchronize, csync_t); return r ? r() : NOTFOUND; }
static omniprof_cu_result_t s_glaunch(void *g, void *st) { glaunch_t r = REAL(cuGraphLaunch, glaunch_t); return r ? r(g, st) : NOTFOUND; }
static omniprof_cu_result_t s_glaunch_ptsz(void *g, void *st) { glaunch_t r = REAL(cuGraphLaunch_ptsz, glaunch_t); return r ? r(g, st) : NOTFOUND; }

static omniprof_cuda_driver_table_t g_table = {
    sizeof(omniprof_cuda_driver_table_t), s_launch, s_launch_ptsz, s_launchex, s_launchex_ptsz, s_alloc, s_free,
    s_htod, s_dtoh, s_cpyasync, s_cpyasync_ptsz, s_ssync, s_csync, s_glaunch, s_glaunch_ptsz};

/* The backend looks this up with dlsym(RTLD_DEFAULT) and hands it to tools. */
API omniprof_cuda_driver_table_t *omniprof_cuda_intercept_table(void) { return &g_table; }

/* Wrappers the application reaches: they call through the table. */
static omniprof_cu_result_t w_launch(void *f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e, unsigned g,
                                     unsigned sm, void *s, void **p, void **x)
{ return g_table.cuLaunchKernel(f, a, b, c, d, e, g, sm, s, p, x); }
static omniprof_cu_result_t w_launch_ptsz(void *f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e,
                                          unsigned g, unsigned sm, void *s, void **p, void **x)
{ return g_table.cuLaunchKernel_ptsz(f, a, b, c, d, e, g, sm, s, p, x); }
static omniprof_cu_result_t w_launchex(const void *cfg, void *f, void **p, void **x) { return g_table.cuLaunchKernelEx(cfg, f, p, x); }
static omniprof_cu_result_t w_launchex_ptsz(const void *cfg, void *f, void **p, void **x) { return g_table.cuLaunchKernelEx_ptsz(cfg, f, p, x); }
static omniprof_cu_result_t w_alloc(uint64_t *p, size_t n) { return g_table.cuMemAlloc_v2(p, n); }
static omniprof_cu_result_t w_free(uint64_t p) { return g_table.cuMemFree_v2(p); }
static omniprof_cu_result_t w_htod(uint64_t d, const void *s, size_t n) { return g_table.cuMemcpyHtoD_v2(d, s, n); }
static omniprof_cu_result_t w_dtoh(void *d, uint64_t s, size_t n) { return g_table.cuMemcpyDtoH_v2(d, s, n); }
static omniprof_cu_result_t w_cpyasync(uint64_t d, uint64_t s, size_t n, void *st) { return g_table.cuMemcpyAsync(d, s, n, st); }
static omniprof_cu_result_t w_cpyasync_ptsz(uint64_t d, uint64_t s, size_t n, void *st) { return g_table.cuMemcpyAsync_ptsz(d, s, n, st); }
static omniprof_cu_result_t w_ssync(void *st) { return g_table.cuStreamSynchronize(st); }
static omniprof_cu_result_t w_csync(void) { return g_table.cuCtxSynchronize(); }
static omniprof_cu_result_t w_glaunch(void *g, void *st) { return g_table.cuGraphLaunch(g, st); }
static omniprof_cu_result_t w_glaunch_ptsz(void *g, void *st) { return g_table.cuGraphLaunch_ptsz(g, st); }

/* name → (real slot, wrapper) for the default and the per-thread-stream flavour. */
typedef struct entry {
    const char *name;
    void **real, **real_ptsz;
    void *wrap, *wrap_ptsz;
} entry;

static const entry k_entries[] = {
    {"cuLaunchKernel", &g_real.cuLaunchKernel, &g_real.cuLaunchKernel_ptsz, (void *)w_launch, (void *)w_launch_ptsz},
    {"cuLaunchKernelEx", &g_real.cuLaunchKernelEx, &g_real.cuLaunchKernelEx_ptsz, (void *)w_launchex, (void *)w_launchex_ptsz},
    {"cuMemAlloc", &g_real.cuMemAlloc_v2, NULL, (void *)w_alloc, NULL},
    {"cuMemFree", &g_real.cuMemFree_v2, NULL, (void *)w_free, NULL},
    {"cuMemcpyHtoD", &g_real.cuMemcpyHtoD_v2, NULL, (void *)w_htod, NULL},
    {"cuMemcpyDtoH", &g_real.cuMemcpyDtoH_v2, NULL, (void *)w_dtoh, NULL},
    {"cuMemcpyAsync", &g_real.cuMemcpyAsync, &g_real.cuMemcpyAsync_ptsz, (void *)w_cpyasync, (void *)w_cpyasync_ptsz},
    {"cuStreamSynchronize", &g_real.cuStreamSynchronize, NULL, (void *)w_ssync, NULL},
    {"cuCtxSynchronize", &g_real.cuCtxSynchronize, NULL, (void *)w_csync, NULL},
    {"cuGraphLaunch", &g_real.cuGraphLaunch, &g_real.cuGraphLaunch_ptsz, (void *)w_glaunch, (void *)w_glaunch_ptsz},
};

#define PTDS_FLAG 2u /* CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM */

static int my_gpa(const char *sym, void **pfn, int ver, uint64_t flags, int *status);

static void rewrite(const char *sym, void **pfn, uint64_t flags)
{
    if (!sym || !pfn || !*pfn) return;
    if (!strcmp(sym, "cuGetProcAddress")) {
        if (!g_real_gpa) g_real_gpa = (gpa_t)*pfn;
        *pfn = (void *)my_gpa;
        return;
    }
    for (size_t i = 0; i < sizeof k_entries / sizeof k_entries[0]; i++) {
        const entry *e = &k_entries[i];
        if (strcmp(sym, e->name) != 0) continue;
        int ptsz = (flags & PTDS_FLAG) && e->real_ptsz;
        *(ptsz ? e->real_ptsz : e->real) = *pfn;
        *pfn = ptsz ? e->wrap_ptsz : e->wrap;
        return;
    }
}

static int my_gpa(const char *sym, void **pfn, int ver, uint64_t flags, int *status)
{
    if (!g_real_gpa) g_real_gpa = (gpa_t)driver_sym("cuGetProcAddress_v2");
    if (!g_real_gpa) return NOTFOUND;
    int r = g_real_gpa(sym, pfn, ver, flags, status);
    if (r == 0) rewrite(sym, pfn, flags);
    return r;
}

API int cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags, int *status)
{
    return my_gpa(sym, pfn, ver, flags, status);
}

/* Programs linked with -lcuda call these by symbol. */
API omniprof_cu_result_t cuLaunchKernel(void *f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e, unsigned g,
                                        unsigned sm, void *s, void **p, void **x)
{ return w_launch(f, a, b, c, d, e, g, sm, s, p, x); }
API omniprof_cu_result_t cuLaunchKernel_ptsz(void *f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e,
                                             unsigned g, unsigned sm, void *s, void **p, void **x)
{ return w_launch_ptsz(f, a, b, c, d, e, g, sm, s, p, x); }
API omniprof_cu_result_t cuLaunchKernelEx(const void *cfg, void *f, void **p, void **x) { return w_launchex(cfg, f, p, x); }
API omniprof_cu_result_t cuMemAlloc_v2(uint64_t *p, size_t n) { return w_alloc(p, n); }
API omniprof_cu_result_t cuMemFree_v2(uint64_t p) { return w_free(p); }
API omniprof_cu_result_t cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t n) { return w_htod(d, s, n); }
API omniprof_cu_result_t cuMemcpyDtoH_v2(void *d, uint64_t s, size_t n) { return w_dtoh(d, s, n); }
API omniprof_cu_result_t cuStreamSynchronize(void *st) { return w_ssync(st); }
API omniprof_cu_result_t cuCtxSynchronize(void) { return w_csync(); }
API omniprof_cu_result_t cuGraphLaunch(void *g, void *st) { return w_glaunch(g, st); }

API void *dlsym(void *handle, const char *name)
{
    dlsym_t d = real_dlsym_fn();
    if (!d) return NULL;
    void *p = d(handle, name);
    const char *volatile nm = name; /* glibc declares name nonnull; callers still pass NULL */
    if (!p || !nm || name[0] != 'c' || name[1] != 'u') return p;
    if (!strcmp(name, "cuGetProcAddress_v2") || !strcmp(name, "cuGetProcAddress")) {
        g_real_gpa = (gpa_t)p;
        return (void *)my_gpa;
    }
    /* direct dlsym of a table entry ("cuLaunchKernel", "cuMemAlloc_v2", ...) */
    char base[64];
    size_t n = strlen(name);
    if (n < sizeof base) {
        memcpy(base, name, n + 1);
        if (n > 3 && !strcmp(base + n - 3, "_v2")) base[n - 3] = 0;
        int ptsz = n > 5 && !strcmp(base + strlen(base) - 5, "_ptsz");
        if (ptsz) base[strlen(base) - 5] = 0;
        for (size_t i = 0; i < sizeof k_entries / sizeof k_entries[0]; i++)
            if (!strcmp(base, k_entries[i].name)) {
                rewrite(base, &p, ptsz ? PTDS_FLAG : 0);
                break;
            }
    }
    return p;
}
