/* backend.c — the backend registry (cuda, cpu, ...), loading backends on demand, agents,
 * address symbolization and string interning.
 *
 * A backend registers its descriptor from its constructor (op_sdk_register_backend). When a
 * context configures a kind that a backend serves and that backend is not registered, the
 * SDK dlopens libomniprof-backend-<name>.so from its own directory (dladdr) with
 * RTLD_NOW|RTLD_GLOBAL|RTLD_NODELETE. A missing backend gives one log line and its kinds stay
 * silent. After the configuration lock, backends whose kinds were configured (or whose
 * intercept tables a tool asked for) are started once; a failed start turns the backend off. */
#include "sdk/sdk_internal.h"

#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/strtab.h"

static const op_backend *g_backends[OP_SDK_MAX_BACKENDS];
static _Atomic int g_nbackends;
static _Atomic int g_backend_off[OP_SDK_MAX_BACKENDS];
static _Atomic int g_backend_started[OP_SDK_MAX_BACKENDS];
static pthread_mutex_t g_backend_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_tried[OP_SDK_MAX_BACKENDS][16];
static int g_ntried;

omniprof_status_t op_sdk_register_backend(const op_backend *backend)
{
    if (!backend || !backend->name || backend->size < offsetof(op_backend, symbolize))
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

const op_backend *op_backend_find(const char *name)
{
    int n = atomic_load_explicit(&g_nbackends, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (strcmp(g_backends[i]->name, name) == 0) return g_backends[i];
    return NULL;
}

const op_backend *op_backend_for_buffer_kind(uint32_t kind)
{
    const char *name = op_sdk_backend_for_kind(kind);
    return name ? op_backend_find(name) : NULL;
}

void op_backend_load_for_kind(uint32_t buffer_kind)
{
    const char *name = op_sdk_backend_for_kind(buffer_kind);
    if (!name || op_backend_find(name)) return;
    pthread_mutex_lock(&g_backend_lock);
    for (int i = 0; i < g_ntried; i++)
        if (strcmp(g_tried[i], name) == 0) {
            pthread_mutex_unlock(&g_backend_lock);
            return;
        }
    if (g_ntried < OP_SDK_MAX_BACKENDS) snprintf(g_tried[g_ntried++], sizeof g_tried[0], "%s", name);
    pthread_mutex_unlock(&g_backend_lock);

    char path[PATH_MAX];
    Dl_info info;
    path[0] = '\0';
    if (dladdr((void *)&op_backend_load_for_kind, &info) && info.dli_fname) {
        char tmp[PATH_MAX];
        snprintf(tmp, sizeof tmp, "%s", info.dli_fname);
        snprintf(path, sizeof path, "%s/libomniprof-backend-%s.so", dirname(tmp), name);
    } else {
        snprintf(path, sizeof path, "libomniprof-backend-%s.so", name);
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
    if (!h) {
        const char *err = dlerror();
        op_warn("%s backend not available (%s); its tracing kinds stay silent", name, err ? err : path);
        return;
    }
    if (!op_backend_find(name)) op_warn("%s backend loaded from %s but did not register", name, path);
}

static bool backend_needed(const op_backend *be)
{
    for (uint32_t k = 1; k < OMNIPROF_BUFFER_TRACING_LAST; k++) {
        const char *n = op_sdk_backend_for_kind(k);
        if (n && strcmp(n, be->name) == 0 && op_sdk_kind_configured(k)) return true;
    }
    for (int bit = 1; bit < OMNIPROF_INTERCEPT_TABLE_LAST; bit <<= 1)
        if ((be->intercept_tables & bit) && op_sdk_intercept_requested((omniprof_intercept_table_t)bit)) return true;
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
