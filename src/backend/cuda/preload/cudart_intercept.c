/* cudart_intercept.c — libomniprof-cudart-intercept.so: the CUDA runtime intercept table
 * (OMNIPROF_INTERCEPT_TABLE_CUDA_RUNTIME) and the NVTX intercept table
 * (OMNIPROF_INTERCEPT_TABLE_NVTX), both built from the generated rows of cuda_api.def
 * (gen_cuda_api.py: one OP_CUDART_FN row per runtime function, one OP_NVTX_FN row per NVTX
 * function). Preload it (LD_PRELOAD) in front of the tool; the CUDA backend finds the tables at
 * start (omniprof_cudart_intercept_tables) and hands them to the tools that asked for them.
 *
 * CUDA runtime. For every runtime function this library exports a function of the same name
 * (an interposer: being preloaded, it comes before libcudart.so in the symbol lookup), which
 * calls the table's entry. The entry starts as a stub that calls the real function, resolved
 * once with dlsym(RTLD_NEXT) (or, for a libcudart dlopen'ed without RTLD_GLOBAL, through
 * dlopen(RTLD_NOLOAD) of its soname). A tool replaces entries with wrappers that call the
 * previous value. Only programs that use the shared runtime (nvcc -cudart shared, PyTorch, ...)
 * reach the interposers: a statically linked runtime binds its calls inside the executable.
 *
 * NVTX. NVTX v3 is header-only: on the first NVTX call of a module, its NVTX instance loads the
 * library named by NVTX_INJECTION64_PATH and calls InitializeInjectionNvtx2 with an export
 * table through which the injection fills the instance's function slots. The backend points
 * NVTX_INJECTION64_PATH at this library and tells it (omniprof_nvtx_intercept_chain) which
 * injection would otherwise have run (CUPTI's, for NVTX tracing, or one the user had set).
 * InitializeInjectionNvtx2 here first runs that injection, keeps the slot values it wrote as the
 * next handlers, then writes its own interposers into every slot; they call the table's entry,
 * whose stub calls the next handler, or returns what NVTX returns without an injection.
 *
 * Invariants:
 *  (1) Table entries are never NULL; a tool's replacement takes effect at the next call.
 *  (2) Nothing here allocates, logs, or depends on the SDK being loaded (a child process that
 *      inherits NVTX_INJECTION64_PATH gets a plain pass-through).
 *  (3) A next handler is taken from the first NVTX instance that initializes; later instances
 *      (other modules with their own NVTX copy) share it (CUPTI's handlers are the same
 *      functions for every instance). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define NVTX_NO_IMPL
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "omniprof/cuda_runtime_table.h"
#include "omniprof/nvtx_table.h"

#define API __attribute__((visibility("default")))

/* ------------------------------------------------------------------------------------------ */
/* CUDA runtime                                                                                */

static int find_cudart(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char *slash = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    if (!slash || strncmp(slash + 1, "libcudart.so", 12) != 0) return 0;
    *(void **)data = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    return *(void **)data != NULL;
}

/* The real function: the next definition after this library, else the one of a libcudart
 * loaded without RTLD_GLOBAL (dlsym(RTLD_NEXT) does not see it). */
static void *real_rt(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (p) return p;
    void *h = NULL;
    dl_iterate_phdr(find_cudart, &h);
    return h ? dlsym(h, name) : NULL;
}

#define UNPAREN(...) __VA_ARGS__

/* Stubs (the table's initial values): resolve the real function once, then call it. */
#define OP_CUDART_FN(NAME, RET, RETV, PARAMS, ARGS)        \
    static RET s_##NAME PARAMS                             \
    {                                                      \
        typedef RET(*fn_t) PARAMS;                         \
        static fn_t real;                                  \
        fn_t r = __atomic_load_n(&real, __ATOMIC_ACQUIRE); \
        if (!r) {                                          \
            r = (fn_t)real_rt(#NAME);                      \
            __atomic_store_n(&real, r, __ATOMIC_RELEASE);  \
        }                                                  \
        if (!r) return RETV;                               \
        return r ARGS;                                     \
    }
#include "cuda_api.def"

static omniprof_cuda_runtime_table_t g_rt = {
    sizeof(omniprof_cuda_runtime_table_t),
#define OP_CUDART_FN(NAME, RET, RETV, PARAMS, ARGS) s_##NAME,
#include "cuda_api.def"
};

/* Interposers: the symbol is the function's name (asm label), the C name ours, so the
 * declarations of cuda_runtime_api.h are left alone. */
#define OP_CUDART_FN(NAME, RET, RETV, PARAMS, ARGS) \
    API RET i_##NAME PARAMS __asm__(#NAME);         \
    API RET i_##NAME PARAMS                         \
    {                                               \
        return g_rt.NAME ARGS;                      \
    }
#include "cuda_api.def"

/* ------------------------------------------------------------------------------------------ */
/* NVTX                                                                                        */

enum {
#define OP_NVTX_FN(NAME, MODULE, SLOT, RET, RETV, PARAMS, ARGS) NV_##NAME,
#include "cuda_api.def"
    NV_COUNT
};

static NvtxFunctionPointer volatile g_next[NV_COUNT]; /* the next injection's handlers */
static char g_chain_path[4096];                       /* the next injection's library, or "" */

#define OP_NVTX_FN(NAME, MODULE, SLOT, RET, RETV, PARAMS, ARGS) \
    static RET n_##NAME PARAMS                                  \
    {                                                           \
        typedef RET(*fn_t) PARAMS;                              \
        fn_t f = (fn_t)g_next[NV_##NAME];                       \
        if (!f) return RETV;                                    \
        return f ARGS;                                          \
    }
#include "cuda_api.def"

static omniprof_nvtx_table_t g_nvtx = {
    sizeof(omniprof_nvtx_table_t),
#define OP_NVTX_FN(NAME, MODULE, SLOT, RET, RETV, PARAMS, ARGS) n_##NAME,
#include "cuda_api.def"
};

#define OP_NVTX_FN(NAME, MODULE, SLOT, RET, RETV, PARAMS, ARGS) \
    static RET w_##NAME PARAMS                                  \
    {                                                           \
        return g_nvtx.NAME ARGS;                                \
    }
#include "cuda_api.def"

typedef struct slot_def {
    NvtxCallbackModule module;
    unsigned slot;
    NvtxFunctionPointer wrapper;
} slot_def;

static const slot_def k_slots[NV_COUNT] = {
#define OP_NVTX_FN(NAME, MODULE, SLOT, RET, RETV, PARAMS, ARGS) \
    [NV_##NAME] = {NVTX_CB_MODULE_##MODULE, SLOT, (NvtxFunctionPointer)w_##NAME},
#include "cuda_api.def"
};

typedef int (*nvtx_init_t)(NvtxGetExportTableFunc_t);
/* The slot of row i in this NVTX instance, or NULL. */
static NvtxFunctionPointer *slot_of(const NvtxExportTableCallbacks *cb, int i)
{
    NvtxFunctionTable table = NULL;
    unsigned size = 0;
    if (!cb->GetModuleFunctionTable(k_slots[i].module, &table, &size) || !table) return NULL;
    return k_slots[i].slot < size ? table[k_slots[i].slot] : NULL;
}

API int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
    if (!get) return 0;
    const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
    if (!cb || !cb->GetModuleFunctionTable) return 0;
    /* Before the next injection runs, a slot holds NVTX's own first-call trampoline: only a
     * value the next injection wrote is a handler to call (the trampoline would loop back). */
    NvtxFunctionPointer before[NV_COUNT];
    for (int i = 0; i < NV_COUNT; i++) {
        NvtxFunctionPointer *s = slot_of(cb, i);
        before[i] = s ? *s : NULL;
    }
    if (g_chain_path[0]) {
        void *h = dlopen(g_chain_path, RTLD_LAZY | RTLD_GLOBAL);
        nvtx_init_t next = h ? (nvtx_init_t)dlsym(h, "InitializeInjectionNvtx2") : NULL;
        if (next && next != InitializeInjectionNvtx2) next(get);
    }
    for (int i = 0; i < NV_COUNT; i++) {
        NvtxFunctionPointer *s = slot_of(cb, i);
        if (!s) continue;
        NvtxFunctionPointer cur = *s;
        if (cur && cur != before[i] && cur != k_slots[i].wrapper && !g_next[i])
            g_next[i] = cur; /* (3) */
        *s = k_slots[i].wrapper;
    }
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* What the CUDA backend asks (dlsym(RTLD_DEFAULT)).                                           */

/* The tables: [0] the CUDA runtime table, [1] the NVTX table. */
API void omniprof_cudart_intercept_tables(void **tables)
{
    tables[0] = &g_rt;
    tables[1] = &g_nvtx;
}

/* The injection InitializeInjectionNvtx2 runs first (NULL or "": none; this library: none). */
API void omniprof_nvtx_intercept_chain(const char *path)
{
    Dl_info self;
    if (!path || (dladdr((void *)InitializeInjectionNvtx2, &self) && self.dli_fname &&
                  !strcmp(self.dli_fname, path))) {
        g_chain_path[0] = 0;
        return;
    }
    size_t n = strlen(path);
    if (n >= sizeof g_chain_path) return;
    memcpy(g_chain_path, path, n + 1);
}
