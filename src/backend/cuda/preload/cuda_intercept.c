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
 * the wrapper calls g_table.cuLaunchKernel, which is our pass-through entry calling the real
 * driver entry unless a tool replaced it with its own wrapper (that calls the previous value). Programs
 * linked with -lcuda call the exported cu* symbols below, which are the same wrappers.
 *
 * Invariants:
 *  (1) Table entries are never NULL: before the driver is resolved they point at pass-through
 *      entries that resolve the real entry on first use (dlopen("libcuda.so.1") + the real dlsym).
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

/* Everything below is expanded from the table's rows (OMNIPROF_CUDA_DRIVER_TABLE, cuda.h). */

/* Real driver entry points, filled by cuGetProcAddress or on first use. */
#define REAL_SLOT(FIELD, LOOKUP, PTSZ, PARAMS, ARGS) void *FIELD;
static struct {
    OMNIPROF_CUDA_DRIVER_TABLE(REAL_SLOT)
} g_real;
#undef REAL_SLOT
static gpa_t g_real_gpa;

#define NOTFOUND 500 /* CUDA_ERROR_NOT_FOUND */

/* Pass-through entries, the table's initial values: each calls the real driver entry (resolved on
 * first use). */
#define PASS_THROUGH(FIELD, LOOKUP, PTSZ, PARAMS, ARGS)                                                   \
    static omniprof_cu_result_t pass_##FIELD PARAMS                                               \
    {                                                                                             \
        typedef omniprof_cu_result_t(*fn_t) PARAMS;                                               \
        if (!g_real.FIELD) g_real.FIELD = driver_sym(#FIELD);                                     \
        fn_t r = (fn_t)g_real.FIELD;                                                              \
        return r ? r ARGS : NOTFOUND;                                                             \
    }
OMNIPROF_CUDA_DRIVER_TABLE(PASS_THROUGH)
#undef PASS_THROUGH

#define PASS_PTR(FIELD, LOOKUP, PTSZ, PARAMS, ARGS) pass_##FIELD,
static omniprof_cuda_driver_table_t g_table = {sizeof(omniprof_cuda_driver_table_t),
                                               OMNIPROF_CUDA_DRIVER_TABLE(PASS_PTR)};
#undef PASS_PTR

/* The backend looks this up with dlsym(RTLD_DEFAULT) and hands it to tools. */
API omniprof_cuda_driver_table_t *omniprof_cuda_intercept_table(void) { return &g_table; }

/* Wrappers the application reaches (through rewritten addresses, or by symbol for programs
 * linked with -lcuda): they call through the table. */
#define WRAP(FIELD, LOOKUP, PTSZ, PARAMS, ARGS)                                                   \
    API omniprof_cu_result_t FIELD PARAMS { return g_table.FIELD ARGS; }
OMNIPROF_CUDA_DRIVER_TABLE(WRAP)
#undef WRAP

/* name and flavour -> (real slot, wrapper) */
typedef struct entry {
    const char *name;
    int ptsz;
    void **real;
    void *wrap;
} entry;

#define ENTRY(FIELD, LOOKUP, PTSZ, PARAMS, ARGS) {LOOKUP, PTSZ, &g_real.FIELD, (void *)FIELD},
static const entry k_entries[] = {OMNIPROF_CUDA_DRIVER_TABLE(ENTRY)};
#undef ENTRY
#define N_ENTRIES (sizeof k_entries / sizeof k_entries[0])

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
    const int want_ptsz = (flags & PTDS_FLAG) != 0;
    const entry *hit = NULL;
    for (size_t i = 0; i < N_ENTRIES; i++) {
        const entry *e = &k_entries[i];
        if (strcmp(sym, e->name) != 0) continue;
        if (e->ptsz == want_ptsz) {
            hit = e;
            break;
        }
        if (!e->ptsz) hit = e; /* a name with no per-thread flavour uses its default entry */
    }
    if (!hit) return;
    /* dlsym(RTLD_DEFAULT, ...) finds this library's own exported wrapper first: never take it for
     * the real entry (the pass-through entry resolves the real one from libcuda on first use instead) */
    if (*pfn != hit->wrap) *hit->real = *pfn;
    *pfn = hit->wrap;
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
        for (size_t i = 0; i < N_ENTRIES; i++)
            if (!strcmp(base, k_entries[i].name)) {
                rewrite(base, &p, ptsz ? PTDS_FLAG : 0);
                break;
            }
    }
    return p;
}
