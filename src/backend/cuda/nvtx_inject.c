/* nvtx_inject.c — omniprof's own NVTX injection (docs/cuda.md, "NVTX").
 *
 * NVTX v3 is header-only: on a module's first NVTX call its NVTX instance loads the library named
 * by NVTX_INJECTION64_PATH and calls the library's InitializeInjectionNvtx2, which writes the
 * handlers of the NVTX functions into the instance's slots. When the CUDA backend records
 * markers, it names this library (libomniprof-backend-cuda.so) there — directly, or as the
 * injection that libomniprof-cudart-intercept.so runs behind its NVTX table — and the handlers
 * below turn each call into marker records at once (cupti_nvtx.c). The earlier way, CUPTI as the
 * injection with its NVTX callback domain, cost 1.3–1.8 µs per push/pop pair with a new message
 * each time (CUPTI keeps a table of the strings it saw); it stays available with
 * OMNIPROF_CUDA_NVTX_CUPTI=true.
 *
 * What the handlers return is what NVTX specifies: push and pop the range's level, a process
 * range its id (a process-wide counter), a registered string or domain a handle that is the
 * interned string itself (so that a message given as a registered string is recorded as its
 * text). Functions without a handler (naming CUDA objects, sync user objects, resources) become
 * NVTX's no-ops.
 *
 * Invariants:
 *  (1) The handlers are installed only after the backend started marker capture
 *      (op_cuda_nvtx_injection_path); a process that inherits NVTX_INJECTION64_PATH without the
 *      backend running gets 0 from InitializeInjectionNvtx2, which NVTX takes as "no injection".
 *  (2) Interned strings live to the end of the process; at most NVTX_INTERN of them (then a
 *      fixed "<registered string>"), so memory stays bounded. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "backend/cuda/cuda_internal.h"

#define API __attribute__((visibility("default")))
#define NVTX_WBUF 256
#define NVTX_INTERN 4096

static atomic_int g_active;             /* (1) */
static atomic_uint_fast64_t g_next_id = 1; /* process range ids */

/* ---- interned strings (registered strings, domain names) ---------------------------------- */

static char *g_intern[NVTX_INTERN];
static pthread_mutex_t g_intern_lock = PTHREAD_MUTEX_INITIALIZER;
static const char k_registered[] = "<registered string>";

static const char *intern(const char *s)
{
    if (!s) s = "";
    uint64_t h = 1469598103934665603ull;
    for (const char *c = s; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
    const char *out = k_registered;
    pthread_mutex_lock(&g_intern_lock);
    for (unsigned i = 0; i < NVTX_INTERN; i++) {
        char **slot = &g_intern[(h + i) % NVTX_INTERN];
        if (!*slot) {
            *slot = strdup(s);
            if (*slot) out = *slot;
            break;
        }
        if (!strcmp(*slot, s)) {
            out = *slot;
            break;
        }
    }
    pthread_mutex_unlock(&g_intern_lock);
    return out;
}

static const char *msg_of(const nvtxEventAttributes_t *a, char *wbuf)
{
    return op_cuda_nvtx_attr_message(a, 1, wbuf, NVTX_WBUF);
}

static uint64_t dom(nvtxDomainHandle_t d) { return (uint64_t)(uintptr_t)d; }

/* ---- the handlers ------------------------------------------------------------------------- */

static void h_MarkA(const char *m) { op_cuda_nvtx_mark(0, m); }
static void h_MarkW(const wchar_t *m)
{
    char b[NVTX_WBUF];
    op_cuda_nvtx_mark(0, op_cuda_nvtx_wide(m, b, sizeof b));
}
static void h_MarkEx(const nvtxEventAttributes_t *a)
{
    char b[NVTX_WBUF];
    op_cuda_nvtx_mark(0, msg_of(a, b));
}
static nvtxRangeId_t start(uint64_t domain, const char *m)
{
    uint64_t id = atomic_fetch_add_explicit(&g_next_id, 1, memory_order_relaxed);
    op_cuda_nvtx_start(id, domain, m);
    return id;
}
static nvtxRangeId_t h_RangeStartA(const char *m) { return start(0, m); }
static nvtxRangeId_t h_RangeStartW(const wchar_t *m)
{
    char b[NVTX_WBUF];
    return start(0, op_cuda_nvtx_wide(m, b, sizeof b));
}
static nvtxRangeId_t h_RangeStartEx(const nvtxEventAttributes_t *a)
{
    char b[NVTX_WBUF];
    return start(0, msg_of(a, b));
}
static void h_RangeEnd(nvtxRangeId_t id) { op_cuda_nvtx_end(id); }
static int h_RangePushA(const char *m) { return op_cuda_nvtx_push(0, m); }
static int h_RangePushW(const wchar_t *m)
{
    char b[NVTX_WBUF];
    return op_cuda_nvtx_push(0, op_cuda_nvtx_wide(m, b, sizeof b));
}
static int h_RangePushEx(const nvtxEventAttributes_t *a)
{
    char b[NVTX_WBUF];
    return op_cuda_nvtx_push(0, msg_of(a, b));
}
static int h_RangePop(void) { return op_cuda_nvtx_pop(); }
static void h_NameCategoryA(uint32_t c, const char *n)
{
    op_cuda_nvtx_name(OMNIPROF_MARKER_OP_NAME_CATEGORY, c, n);
}
static void h_NameCategoryW(uint32_t c, const wchar_t *n)
{
    char b[NVTX_WBUF];
    op_cuda_nvtx_name(OMNIPROF_MARKER_OP_NAME_CATEGORY, c, op_cuda_nvtx_wide(n, b, sizeof b));
}
static void h_NameOsThreadA(uint32_t t, const char *n)
{
    op_cuda_nvtx_name(OMNIPROF_MARKER_OP_NAME_THREAD, t, n);
}
static void h_NameOsThreadW(uint32_t t, const wchar_t *n)
{
    char b[NVTX_WBUF];
    op_cuda_nvtx_name(OMNIPROF_MARKER_OP_NAME_THREAD, t, op_cuda_nvtx_wide(n, b, sizeof b));
}
static void h_DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    char b[NVTX_WBUF];
    op_cuda_nvtx_mark(dom(d), msg_of(a, b));
}
static nvtxRangeId_t h_DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    char b[NVTX_WBUF];
    return start(dom(d), msg_of(a, b));
}
static void h_DomainRangeEnd(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
    (void)d;
    op_cuda_nvtx_end(id);
}
static int h_DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    char b[NVTX_WBUF];
    return op_cuda_nvtx_push(dom(d), msg_of(a, b));
}
static int h_DomainRangePop(nvtxDomainHandle_t d)
{
    (void)d;
    return op_cuda_nvtx_pop();
}
static void h_DomainNameCategoryA(nvtxDomainHandle_t d, uint32_t c, const char *n)
{
    (void)d;
    h_NameCategoryA(c, n);
}
static void h_DomainNameCategoryW(nvtxDomainHandle_t d, uint32_t c, const wchar_t *n)
{
    (void)d;
    h_NameCategoryW(c, n);
}
static nvtxStringHandle_t h_DomainRegisterStringA(nvtxDomainHandle_t d, const char *s)
{
    (void)d;
    return (nvtxStringHandle_t)(uintptr_t)intern(s);
}
static nvtxStringHandle_t h_DomainRegisterStringW(nvtxDomainHandle_t d, const wchar_t *s)
{
    (void)d;
    char b[NVTX_WBUF];
    return (nvtxStringHandle_t)(uintptr_t)intern(op_cuda_nvtx_wide(s, b, sizeof b));
}
static nvtxDomainHandle_t h_DomainCreateA(const char *n)
{
    return (nvtxDomainHandle_t)(uintptr_t)intern(n);
}
static nvtxDomainHandle_t h_DomainCreateW(const wchar_t *n)
{
    char b[NVTX_WBUF];
    return (nvtxDomainHandle_t)(uintptr_t)intern(op_cuda_nvtx_wide(n, b, sizeof b));
}
static void h_DomainDestroy(nvtxDomainHandle_t d) { (void)d; /* (2): interned, kept */ }

static const struct {
    NvtxCallbackModule module;
    unsigned slot;
    NvtxFunctionPointer fn;
} k_handlers[] = {
#define CORE(NAME) {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_##NAME, (NvtxFunctionPointer)h_##NAME}
#define CORE2(NAME) {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_##NAME, (NvtxFunctionPointer)h_##NAME}
    CORE(MarkEx), CORE(MarkA), CORE(MarkW), CORE(RangeStartEx), CORE(RangeStartA), CORE(RangeStartW),
    CORE(RangeEnd), CORE(RangePushEx), CORE(RangePushA), CORE(RangePushW), CORE(RangePop),
    CORE(NameCategoryA), CORE(NameCategoryW), CORE(NameOsThreadA), CORE(NameOsThreadW),
    CORE2(DomainMarkEx), CORE2(DomainRangeStartEx), CORE2(DomainRangeEnd), CORE2(DomainRangePushEx),
    CORE2(DomainRangePop), CORE2(DomainNameCategoryA), CORE2(DomainNameCategoryW),
    CORE2(DomainRegisterStringA), CORE2(DomainRegisterStringW), CORE2(DomainCreateA),
    CORE2(DomainCreateW), CORE2(DomainDestroy),
#undef CORE
#undef CORE2
};

API int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
    if (!get || !atomic_load(&g_active)) return 0; /* (1) */
    const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
    if (!cb || !cb->GetModuleFunctionTable) return 0;
    for (size_t i = 0; i < sizeof k_handlers / sizeof k_handlers[0]; i++) {
        NvtxFunctionTable table = NULL;
        unsigned size = 0;
        if (!cb->GetModuleFunctionTable(k_handlers[i].module, &table, &size) || !table) continue;
        if (k_handlers[i].slot < size && table[k_handlers[i].slot])
            *table[k_handlers[i].slot] = k_handlers[i].fn;
    }
    return 1;
}

const char *op_cuda_nvtx_injection_path(void)
{
    static char path[4096];
    Dl_info info;
    if (!dladdr((void *)InitializeInjectionNvtx2, &info) || !info.dli_fname || info.dli_fname[0] != '/' ||
        strlen(info.dli_fname) >= sizeof path)
        return NULL;
    strcpy(path, info.dli_fname);
    atomic_store(&g_active, 1);
    return path;
}
