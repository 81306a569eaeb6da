/* backend.c — the backend registry, loading backends on demand, address symbolization and
 * string interning. It names no backend: what each serves is in its manifest (backend.h).
 *
 * A backend registers its descriptor from its constructor (op_sdk_register_backend). When a
 * context configures a kind (or a tool asks for an intercept table) that no registered backend
 * serves, the SDK finds the library whose manifest lists it (backend_manifest.c) and dlopens it
 * with RTLD_NOW|RTLD_GLOBAL|RTLD_NODELETE. A kind no library serves gives one log line and
 * stays silent. After the configuration lock, backends whose kinds were configured (or whose
 * intercept tables a tool asked for) are started once; a failed start turns the backend off. */
#include "sdk/sdk_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/kinds.h"
#include "common/log.h"
#include "common/settings.h"
#include "common/strtab.h"

static const op_backend *g_backends[OP_SDK_MAX_BACKENDS];
static _Atomic int g_nbackends;
static _Atomic int g_backend_off[OP_SDK_MAX_BACKENDS];
static _Atomic int g_backend_started[OP_SDK_MAX_BACKENDS];
static pthread_mutex_t g_backend_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_tried[OP_SDK_MAX_BACKENDS][32];
static int g_ntried;
static _Atomic int g_warned_unserved;

static bool manifest_valid(const op_backend *be)
{
    const op_backend_manifest *m = be->manifest;
    return m && memcmp(m->magic, OP_BACKEND_MANIFEST_MAGIC, sizeof OP_BACKEND_MANIFEST_MAGIC) == 0 &&
           m->size == sizeof *m && memchr(m->name, 0, sizeof m->name) && strcmp(m->name, be->name) == 0;
}

omniprof_status_t op_sdk_register_backend(const op_backend *backend)
{
    if (!backend || !backend->name || backend->size < offsetof(op_backend, manifest) + sizeof(void *) ||
        !manifest_valid(backend))
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&g_backend_lock);
    int n = atomic_load(&g_nbackends);
    for (int i = 0; i < n; i++)
        if (strcmp(g_backends[i]->name, backend->name) == 0) {
            pthread_mutex_unlock(&g_backend_lock);
            return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
        }
    if (n >= OP_SDK_MAX_BACKENDS) {
        pthread_mutex_unlock(&g_backend_lock);
        return OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    g_backends[n] = backend;
    atomic_store_explicit(&g_nbackends, n + 1, memory_order_release);
    pthread_mutex_unlock(&g_backend_lock);
    op_info("backend %s registered", backend->name);
    /* registered after the configuration lock (a preloaded backend whose constructor ran
     * after the SDK initialized): start it now if some context needs it */
    if (op_sdk_state() == OP_STATE_LOCKED) op_backends_start();
    return OMNIPROF_STATUS_SUCCESS;
}

uint32_t op_backend_count(void) { return (uint32_t)atomic_load_explicit(&g_nbackends, memory_order_acquire); }
const op_backend *op_backend_at(uint32_t i) { return i < op_backend_count() ? g_backends[i] : NULL; }

/* The nth (from 0) registered backend whose manifest lists (category, kind), or provides
 * table_bit. */
static const op_backend *registered_serving_nth(uint32_t category, uint32_t kind, uint32_t table_bit, int nth)
{
    int n = atomic_load_explicit(&g_nbackends, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        const op_backend_manifest *m = g_backends[i]->manifest;
        if ((table_bit ? (m->intercept_tables & table_bit) != 0 : op_manifest_serves(m, category, kind)) && nth-- == 0)
            return g_backends[i];
    }
    return NULL;
}

static const op_backend *registered_serving(uint32_t category, uint32_t kind, uint32_t table_bit)
{
    return registered_serving_nth(category, kind, table_bit, 0);
}

const op_backend *op_backend_for_buffer_kind(uint32_t kind)
{
    return registered_serving(OMNIPROF_RECORD_CATEGORY_TRACING, kind, 0);
}

const op_backend *op_backend_for_buffer_kind_nth(uint32_t kind, int nth)
{
    return registered_serving_nth(OMNIPROF_RECORD_CATEGORY_TRACING, kind, 0, nth);
}

const op_backend *op_backend_for_table(uint32_t table_bit) { return registered_serving(0, 0, table_bit); }

const char *op_sdk_backend_for_kind(uint32_t buffer_kind)
{
    if (op_core_serves(buffer_kind)) return NULL;
    const op_backend *be = op_backend_for_buffer_kind(buffer_kind);
    if (be) return be->name;
    const op_backend_manifest *m = NULL;
    return op_manifest_find(OMNIPROF_RECORD_CATEGORY_TRACING, buffer_kind, 0, 0, &m) ? m->name : NULL;
}

static bool registered_named(const char *name)
{
    int n = atomic_load_explicit(&g_nbackends, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (strcmp(g_backends[i]->name, name) == 0) return true;
    return false;
}

/* dlopen the backend library at `path` (once per backend name). */
static void load_library(const char *path, const char *name)
{
    pthread_mutex_lock(&g_backend_lock);
    for (int i = 0; i < g_ntried; i++)
        if (strcmp(g_tried[i], name) == 0) {
            pthread_mutex_unlock(&g_backend_lock);
            return;
        }
    if (g_ntried < OP_SDK_MAX_BACKENDS) snprintf(g_tried[g_ntried++], sizeof g_tried[0], "%s", name);
    pthread_mutex_unlock(&g_backend_lock);
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
    if (!h) {
        const char *err = dlerror();
        op_warn("%s backend not available (%s); its tracing kinds stay silent", name, err ? err : path);
        return;
    }
    if (!registered_named(name)) op_warn("%s backend loaded from %s but did not register", name, path);
}

/* Load every backend that serves (category, kind), or provides table_bit, and is not
 * registered yet (a GPU activity kind may be served by several: CUDA and OpenCL kernels both
 * come as KERNEL_DISPATCH). */
static void load_serving(uint32_t category, uint32_t kind, uint32_t table_bit)
{
    const op_backend_manifest *m = NULL;
    const char *path;
    int found = 0;
    for (int i = 0; (path = op_manifest_find(category, kind, table_bit, i, &m)) != NULL; i++, found = 1)
        if (!registered_named(m->name)) load_library(path, m->name);
    if (found || registered_serving(category, kind, table_bit)) return;
    const char *what = table_bit ? op_intercept_table_name(table_bit)
                       : category == OMNIPROF_RECORD_CATEGORY_COUNTERS ? "hardware counters"
                                                                        : op_buffer_kind_name(kind);
    if (category != OMNIPROF_RECORD_CATEGORY_COUNTERS && atomic_exchange(&g_warned_unserved, 1) == 0)
        op_warn("no backend of this installation serves %s (no libomniprof-backend-*.so beside the SDK declares it); "
                "it stays silent",
                what ? what : "?");
    else
        op_info("no backend serves %s; it stays silent", what ? what : "?");
}

/* A kind the core serves (markers: the user API) may have a second source in a device backend
 * that lists it too (CUDA: NVTX through CUPTI). That backend is loaded where its device exists,
 * so that `--marker-trace` alone records a CUDA program's NVTX ranges; elsewhere (no driver)
 * nothing is loaded and nothing is said. */
static int device_present(const char *backend)
{
    if (strcmp(backend, "cuda") == 0) /* OMNIPROF_CUDA_NVTX=false: NVTX is not wanted */
        return op_setting_bool(OP_SET_CUDA_NVTX) &&
               (access("/dev/nvidiactl", F_OK) == 0 || access("/dev/nvidia0", F_OK) == 0);
    return 0;
}

static void load_second_sources(uint32_t buffer_kind)
{
    const op_backend_manifest *m = NULL;
    const char *path;
    for (int i = 0; (path = op_manifest_find(OMNIPROF_RECORD_CATEGORY_TRACING, buffer_kind, 0, i, &m)) != NULL; i++)
        if (!registered_named(m->name) && device_present(m->name)) load_library(path, m->name);
}

void op_backend_load_for_kind(uint32_t buffer_kind)
{
    if (buffer_kind == 0 || buffer_kind >= OMNIPROF_BUFFER_TRACING_LAST) return;
    if (op_core_serves(buffer_kind)) {
        load_second_sources(buffer_kind);
        return;
    }
    load_serving(OMNIPROF_RECORD_CATEGORY_TRACING, buffer_kind, 0);
}

void op_backend_load_for_table(uint32_t table_bit)
{
    if (op_core_manifest()->intercept_tables & table_bit) return;
    load_serving(0, 0, table_bit);
}

int op_sdk_load_backend_for_counters(uint32_t counter_kind)
{
    load_serving(OMNIPROF_RECORD_CATEGORY_COUNTERS, counter_kind, 0);
    return registered_serving(OMNIPROF_RECORD_CATEGORY_COUNTERS, counter_kind, 0) != NULL;
}

static bool backend_needed(const op_backend *be)
{
    const op_backend_manifest *m = be->manifest;
    for (size_t i = 0; i < OP_BACKEND_MAX_KINDS && m->buffer_kinds[i]; i++)
        if (op_sdk_kind_configured(m->buffer_kinds[i])) return true;
    for (int bit = 1; bit < OMNIPROF_INTERCEPT_TABLE_LAST; bit <<= 1)
        if ((m->intercept_tables & (uint32_t)bit) && op_sdk_intercept_requested((omniprof_intercept_table_t)bit))
            return true;
    return false;
}

void op_backends_start(void)
{
    int n = atomic_load(&g_nbackends);
    for (int i = 0; i < n; i++) {
        const op_backend *be = g_backends[i];
        if (atomic_load(&g_backend_started[i]) || !backend_needed(be)) continue;
        if (atomic_exchange(&g_backend_started[i], 1)) continue; /* another thread starts it */
        if (!be->start) continue;
        omniprof_status_t st = be->start();
        if (st != OMNIPROF_STATUS_SUCCESS) {
            atomic_store(&g_backend_off[i], 1);
            op_warn("%s backend off: %s", be->name, omniprof_get_status_string(st));
        }
    }
    op_backends_context_change();
}

#define FOR_LIVE(be)                                                                               \
    for (int i_ = 0, n_ = atomic_load(&g_nbackends); i_ < n_; i_++)                                \
        for (const op_backend *be = g_backends[i_]; be && atomic_load(&g_backend_started[i_]) &&   \
                                                    !atomic_load(&g_backend_off[i_]);              \
             be = NULL)

void op_backends_context_change(void)
{
    FOR_LIVE(be) if (be->on_context_change) be->on_context_change();
}
void op_backends_flush(void)
{
    FOR_LIVE(be) if (be->flush) be->flush();
}
void op_sdk_flush_backends(void) { op_backends_flush(); }
void op_backends_finalize(void)
{
    FOR_LIVE(be) if (be->finalize) be->finalize();
}
void op_backends_at_fork_child(void)
{
    int n = atomic_load(&g_nbackends);
    for (int i = 0; i < n; i++)
        if (g_backends[i]->at_fork_child) g_backends[i]->at_fork_child();
}

/* ------------------------------------------------------------------------------------------ */
/* Symbols                                                                                     */

OMNIPROF_API omniprof_status_t omniprof_query_address_symbols(uint64_t address, omniprof_symbol_cb_t cb, void *data)
{
    if (!cb) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    int n = atomic_load(&g_nbackends);
    for (int i = 0; i < n; i++)
        if (g_backends[i]->symbolize) return g_backends[i]->symbolize(address, cb, data);
    return OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
}

/* ------------------------------------------------------------------------------------------ */
/* Interning: a common/strtab.h table whose texts never move and are never freed.              */

static pthread_mutex_t g_intern_lock = PTHREAD_MUTEX_INITIALIZER;
static op_strtab g_intern;

const char *op_sdk_intern(const char *s)
{
    if (!s) return NULL;
    uint32_t id;
    pthread_mutex_lock(&g_intern_lock);
    const char *r = op_strtab_intern(&g_intern, s, strlen(s), &id) == 0 ? op_strtab_str(&g_intern, id) : NULL;
    pthread_mutex_unlock(&g_intern_lock);
    return r ? r : "<out of memory>";
}

void op_intern_prefork(void)
{
    pthread_mutex_lock(&g_backend_lock);
    pthread_mutex_lock(&g_intern_lock);
}
void op_intern_postfork(void)
{
    pthread_mutex_unlock(&g_intern_lock);
    pthread_mutex_unlock(&g_backend_lock);
}
