/* registration.c — finding tools, initializing, locking the configuration, finalizing, fork.
 *
 * STATES (g_state): NONE -> INITIALIZING -> LOCKED -> FINALIZING -> FINALIZED.
 *   NONE -> INITIALIZING: the first use (op_sdk_ensure_init: a public call, the user API, a
 *     backend) or the constructor when OMNIPROF_INIT_AT_LOAD is true; one thread wins a CAS.
 *     Other threads never wait for it (their calls see no active context yet), so a tool's
 *     initialize may start threads that use the SDK without deadlock.
 *   INITIALIZING: every `omniprof_configure` is collected — RTLD_DEFAULT, then each object of
 *     the link map (dl_iterate_phdr, then dlopen(RTLD_NOLOAD)+dlsym per object, so several
 *     tools are found), then OMNIPROF_TOOL_LIBRARIES, then omniprof_force_configure — and
 *     called once each (deduplicated by address), then every initialize runs in that order.
 *   LOCKED: configuration calls return ERROR_CONFIGURATION_LOCKED; backends are started.
 *   FINALIZING (omniprof_finalize or atexit): backends flush, dangling correlation ids are
 *     retired, contexts stop, every buffer is flushed and delivered (bounded by
 *     OMNIPROF_FINALIZE_TIMEOUT_MS), tools' finalize run in reverse order, backends finalize,
 *     callback threads are told to stop. No thread is ever joined.
 *
 * FORK: pthread_atfork takes g_sdk_lock, the intern and correlation locks before fork and
 * releases them after; the child resets thread-id caches and buffers, and restarts its
 * callback threads lazily at the first delivery it needs.
 *
 * The library pins itself (RTLD_NODELETE) so that atexit handlers and threads never outlive
 * its code. */
#include "sdk/sdk_internal.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/settings.h"

typedef struct op_client {
    omniprof_configure_func_t fn;
    omniprof_tool_configure_result_t *res;
    omniprof_client_id_t id;
    char name[64];
    int active;
    _Atomic int finalized;
} op_client;

static _Atomic int g_state;
static pthread_mutex_t g_sdk_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t g_init_thread;
static op_client g_clients[OP_SDK_MAX_CLIENTS];
static int g_nclients;
static omniprof_configure_func_t g_forced[OP_SDK_MAX_CLIENTS];
static int g_nforced;
static _Atomic int g_current_client = -1;
static pthread_once_t g_handlers_once = PTHREAD_ONCE_INIT;

int op_sdk_state(void) { return atomic_load_explicit(&g_state, memory_order_acquire); }
void op_sdk_lock(void) { pthread_mutex_lock(&g_sdk_lock); }
void op_sdk_unlock(void) { pthread_mutex_unlock(&g_sdk_lock); }
int op_sdk_current_client(void) { return atomic_load(&g_current_client); }
int op_sdk_is_finalizing(void) { return op_sdk_state() >= OP_STATE_FINALIZING; }

uint64_t op_sdk_random_offset(uint64_t salt)
{
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) r = op_now_ns() ^ ((uint64_t)getpid() << 32);
    r ^= salt * 0x9E3779B97F4A7C15ull;
    return 256 + r % (65535 - 256);
}

omniprof_status_t op_sdk_config_open(void)
{
    switch (op_sdk_state()) {
    case OP_STATE_NONE:
    case OP_STATE_INITIALIZING: return OMNIPROF_STATUS_SUCCESS;
    case OP_STATE_LOCKED: return OMNIPROF_STATUS_ERROR_CONFIGURATION_LOCKED;
    default: return OMNIPROF_STATUS_ERROR_FINALIZED;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Discovery                                                                                   */

typedef struct fn_list {
    omniprof_configure_func_t fn[OP_SDK_MAX_CLIENTS];
    int n;
} fn_list;

static void add_fn(fn_list *l, void *p)
{
    if (!p) return;
    omniprof_configure_func_t fn = (omniprof_configure_func_t)p;
    for (int i = 0; i < l->n; i++)
        if (l->fn[i] == fn) return;
    if (l->n < OP_SDK_MAX_CLIENTS) l->fn[l->n++] = fn;
}

typedef struct name_list {
    char **names;
    int n, cap;
} name_list;

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    name_list *l = data;
    if (!info->dlpi_name || !info->dlpi_name[0]) return 0;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 32;
        char **nn = op_realloc(l->names, (size_t)cap * sizeof *nn);
        if (!nn) return 1;
        l->names = nn;
        l->cap = cap;
    }
    l->names[l->n] = op_strdup(info->dlpi_name);
    if (l->names[l->n]) l->n++;
    return 0;
}

static void discover(fn_list *l)
{
    add_fn(l, dlsym(RTLD_DEFAULT, "omniprof_configure"));
    /* names first: dlopen is not called while dl_iterate_phdr holds the loader's lock */
    name_list names = {0};
    dl_iterate_phdr(phdr_cb, &names);
    for (int i = 0; i < names.n; i++) {
        void *h = dlopen(names.names[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            add_fn(l, dlsym(h, "omniprof_configure"));
            dlclose(h);
        }
        op_free(names.names[i]);
    }
    op_free(names.names);

    const char *libs = op_setting_str(OP_SET_TOOL_LIBRARIES);
    if (libs && libs[0]) {
        char *copy = op_strdup(libs), *save = NULL;
        for (char *tok = copy ? strtok_r(copy, ":", &save) : NULL; tok; tok = strtok_r(NULL, ":", &save)) {
            void *h = dlopen(tok, RTLD_NOW | RTLD_LOCAL);
            if (!h) {
                const char *e = dlerror();
                op_warn("OMNIPROF_TOOL_LIBRARIES: cannot load '%s': %s", tok, e ? e : "unknown error");
                continue;
            }
            void *fn = dlsym(h, "omniprof_configure");
            if (!fn) op_warn("OMNIPROF_TOOL_LIBRARIES: '%s' does not define omniprof_configure", tok);
            add_fn(l, fn);
        }
        op_free(copy);
    }
}

static void client_finalize(omniprof_client_id_t id);

static void call_configure(omniprof_configure_func_t fn)
{
    if (g_nclients >= OP_SDK_MAX_CLIENTS) {
        op_warn("more than %d tools; the rest are ignored", OP_SDK_MAX_CLIENTS);
        return;
    }
    for (int i = 0; i < g_nclients; i++)
        if (g_clients[i].fn == fn) return;
    int i = g_nclients++;
    op_client *c = &g_clients[i];
    memset(c, 0, sizeof *c);
    c->fn = fn;
    c->id.size = sizeof c->id;
    c->id.handle = (uint32_t)i;
    atomic_store(&g_current_client, i);
    c->res = fn(OMNIPROF_VERSION_NUMBER, OMNIPROF_VERSION_STRING, (uint32_t)i, &c->id);
    atomic_store(&g_current_client, -1);
    snprintf(c->name, sizeof c->name, "%s", c->id.name ? c->id.name : "unnamed");
    c->id.name = c->name;
    if (c->res && c->res->size < offsetof(omniprof_tool_configure_result_t, tool_data)) {
        op_warn("tool %s: configure result size %lu too small; tool ignored", c->name, (unsigned long)c->res->size);
        c->res = NULL;
    }
    c->active = c->res != NULL;
}

static void install_handlers(void);

static void run_init(void)
{
    int expected = OP_STATE_NONE;
    if (!atomic_compare_exchange_strong(&g_state, &expected, OP_STATE_INITIALIZING)) return;
    g_init_thread = pthread_self();
    pthread_once(&g_handlers_once, install_handlers);

    fn_list l = {0};
    discover(&l);
    for (int i = 0; i < l.n; i++) call_configure(l.fn[i]);
    /* forced functions, including ones added while configure/initialize run */
    int done_forced = 0, done_init = 0;
    for (;;) {
        while (done_forced < g_nforced) call_configure(g_forced[done_forced++]);
        if (done_init == g_nclients) break;
        op_client *c = &g_clients[done_init];
        atomic_store(&g_current_client, done_init);
        if (c->active && c->res->initialize) {
            int rc = c->res->initialize(client_finalize, c->res->tool_data);
            if (rc != 0) {
                op_warn("tool %s: initialize returned %d; tool deactivated", c->name, rc);
                c->active = 0;
                op_context_deactivate_client(done_init);
            }
        }
        atomic_store(&g_current_client, -1);
        done_init++;
    }
    atomic_store_explicit(&g_state, OP_STATE_LOCKED, memory_order_release);
    op_backends_start();
}

void op_sdk_ensure_init(void)
{
    if (__builtin_expect(atomic_load_explicit(&g_state, memory_order_acquire) != OP_STATE_NONE, 1)) return;
    run_init();
}

OMNIPROF_API omniprof_status_t omniprof_force_configure(omniprof_configure_func_t fn)
{
    if (!fn) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    int st = op_sdk_state();
    if (st == OP_STATE_NONE ||
        (st == OP_STATE_INITIALIZING && pthread_equal(pthread_self(), g_init_thread))) {
        op_sdk_lock();
        if (g_nforced < OP_SDK_MAX_CLIENTS) g_forced[g_nforced++] = fn;
        op_sdk_unlock();
        run_init(); /* no-op when already initializing: the loop picks fn up */
        return OMNIPROF_STATUS_SUCCESS;
    }
    if (st >= OP_STATE_FINALIZING) return OMNIPROF_STATUS_ERROR_FINALIZED;
    return OMNIPROF_STATUS_ERROR_CONFIGURATION_LOCKED;
}

OMNIPROF_API omniprof_status_t omniprof_is_initialized(int *status)
{
    if (!status) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    *status = op_sdk_state() >= OP_STATE_LOCKED;
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_is_finalized(int *status)
{
    if (!status) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    int st = op_sdk_state();
    *status = st == OP_STATE_FINALIZED ? 1 : st == OP_STATE_FINALIZING ? -1 : 0;
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_initialize(void)
{
    op_sdk_ensure_init();
    return op_sdk_state() >= OP_STATE_FINALIZING ? OMNIPROF_STATUS_ERROR_FINALIZED : OMNIPROF_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* Finalization                                                                                */

static void finalize_client(op_client *c)
{
    if (!c->active || atomic_exchange(&c->finalized, 1)) return;
    if (c->res && c->res->finalize) c->res->finalize(c->res->tool_data);
}

static void client_finalize(omniprof_client_id_t id)
{
    if (id.handle >= (uint32_t)g_nclients) return;
    op_client *c = &g_clients[id.handle];
    op_context_deactivate_client((int)id.handle);
    finalize_client(c);
}

static void do_finalize(void)
{
    int expected = OP_STATE_LOCKED;
    if (!atomic_compare_exchange_strong(&g_state, &expected, OP_STATE_FINALIZING)) {
        expected = OP_STATE_NONE;
        atomic_compare_exchange_strong(&g_state, &expected, OP_STATE_FINALIZED);
        return; /* never initialized, initializing (exit from inside a tool), or done */
    }
    uint64_t deadline = op_now_ns() + op_setting_uint(OP_SET_FINALIZE_TIMEOUT_MS) * 1000000ull;
    op_backends_flush();
    op_correlation_retire_all();
    op_context_stop_all();
    op_buffer_finalize_all(deadline);
    for (int i = g_nclients - 1; i >= 0; i--) finalize_client(&g_clients[i]);
    op_buffer_finalize_all(deadline);
    op_backends_finalize();
    op_cbthread_stop_all();
    atomic_store_explicit(&g_state, OP_STATE_FINALIZED, memory_order_release);
}

OMNIPROF_API omniprof_status_t omniprof_finalize(void)
{
    op_tls *t = op_tls_peek();
    if (t && t->in_callback) return OMNIPROF_STATUS_ERROR_BUFFER_BUSY;
    do_finalize();
    return OMNIPROF_STATUS_SUCCESS;
}

static void at_exit(void) { do_finalize(); }

/* ------------------------------------------------------------------------------------------ */
/* Fork                                                                                        */

static void prefork(void)
{
    pthread_mutex_lock(&g_sdk_lock);
    op_intern_prefork();
    op_correlation_prefork();
}
static void postfork_parent(void)
{
    op_correlation_postfork();
    op_intern_postfork();
    pthread_mutex_unlock(&g_sdk_lock);
}
static void postfork_child(void)
{
    op_correlation_postfork();
    op_correlation_at_fork_child();
    op_intern_postfork();
    pthread_mutex_unlock(&g_sdk_lock);
    op_tls_at_fork_child();
    op_buffer_at_fork_child();
    op_cbthread_at_fork_child();
    op_agents_at_fork_child();
    op_backends_at_fork_child();
}

static void install_handlers(void)
{
    atexit(at_exit);
    pthread_atfork(prefork, postfork_parent, postfork_child);
}

/* ------------------------------------------------------------------------------------------ */

__attribute__((constructor(110))) static void sdk_ctor(void)
{
    Dl_info info;
    if (dladdr((void *)&sdk_ctor, &info) && info.dli_fname)
        dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE); /* pin: never unloaded */
    pthread_once(&g_handlers_once, install_handlers);
    /* --selected-regions: nothing is collected until omniprof_resume() (user API) */
    if (op_setting_bool(OP_SET_SELECTED_REGIONS)) {
        atomic_store(&g_op_paused, 1);
        op_route_changed();
    }
    if (op_setting_bool(OP_SET_INIT_AT_LOAD)) op_sdk_ensure_init();
}
