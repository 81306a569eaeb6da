/* context.c — contexts and the per-(context, kind) service configuration they hold.
 *
 * STATE MACHINE of one context slot (c->state):
 *
 *      omniprof_create_context           omniprof_start_context
 *   FREE ─────────────────────▶ INACTIVE ─────────────────────▶ ACTIVE
 *                                  ▲   ◀──────────────────────   │
 *                                  │      omniprof_stop_context   │
 *                                  │                              │
 *                                  └──── op_context_stop_all ◀────┘ (finalization; a failed
 *                                                                    tool initialize)
 *   Facts true in each state (checked by context_ok() under assert):
 *     FREE:     handle == 0, its bit is clear in g_op_active_mask and in every kind mask.
 *     INACTIVE: handle != 0, its bit is clear in g_op_active_mask.
 *     ACTIVE:   handle != 0, its bit is set in g_op_active_mask.
 *   A slot never returns to FREE: ids are never reused, so a stale id stays stale.
 *
 * SERVICES. bsvc[kind] (buffer) and csvc[kind] (callback) are written only while the
 * configuration is open, under g_sdk_lock, and are published by setting the context's bit in
 * g_op_{buffer,callback}_kind_mask[kind] with release order; readers (the emit path) load the
 * mask with acquire and then read the slot without a lock. One configuration per (context,
 * kind): a second one returns ERROR_SERVICE_ALREADY_CONFIGURED. */
#include "sdk/sdk_internal.h"

#include <assert.h>
#include <string.h>

#include "common/alloc.h"
#include "common/log.h"

enum { CTX_FREE = 0, CTX_INACTIVE, CTX_ACTIVE };

struct op_context {
    uint64_t handle;
    _Atomic int state;
    int client;
    struct {
        op_buffer *buf;
        op_service_filter f;
    } bsvc[OMNIPROF_BUFFER_TRACING_LAST];
    struct {
        omniprof_callback_tracing_cb_t cb;
        void *data;
        op_service_filter f;
    } csvc[OMNIPROF_CALLBACK_TRACING_LAST];
};

_Atomic uint64_t g_op_buffer_kind_mask[OMNIPROF_BUFFER_TRACING_LAST];
_Atomic uint64_t g_op_callback_kind_mask[OMNIPROF_CALLBACK_TRACING_LAST];
_Atomic uint64_t g_op_active_mask;
_Atomic int g_op_paused;
op_buffer *g_op_solo[OMNIPROF_BUFFER_TRACING_LAST][OP_SDK_MAX_CONTEXTS];

static op_context g_ctx[OP_SDK_MAX_CONTEXTS];
static _Atomic int g_nctx;
static uint64_t g_ctx_offset;

#ifdef OMNIPROF_DEBUG
static int context_ok(const op_context *c, int i)
{
    uint64_t bit = 1ull << i;
    switch (atomic_load(&c->state)) {
    case CTX_FREE:
        if (c->handle) return 0;
        if (atomic_load(&g_op_active_mask) & bit) return 0;
        for (int k = 0; k < OMNIPROF_BUFFER_TRACING_LAST; k++)
            if (atomic_load(&g_op_buffer_kind_mask[k]) & bit) return 0;
        return 1;
    case CTX_INACTIVE: return c->handle != 0; /* the mask bit may lag a concurrent start by one store */
    case CTX_ACTIVE: return c->handle != 0;
    default: return 0;
    }
}
#define ASSERT_CTX(c, i) assert(context_ok((c), (i)))
#else
#define ASSERT_CTX(c, i) ((void)0)
#endif

int op_context_index(omniprof_context_id_t id)
{
    if (!g_ctx_offset || id.handle <= g_ctx_offset) return -1;
    uint64_t i = id.handle - g_ctx_offset - 1;
    if (i >= (uint64_t)atomic_load_explicit(&g_nctx, memory_order_acquire)) return -1;
    if (atomic_load_explicit(&g_ctx[i].state, memory_order_acquire) == CTX_FREE) return -1;
    return (int)i;
}

omniprof_status_t op_sdk_config_context(omniprof_context_id_t context, int *ci)
{
    omniprof_status_t st = op_sdk_config_open();
    if (st != OMNIPROF_STATUS_SUCCESS) return st;
    int i = op_context_index(context);
    if (ci) *ci = i;
    return i < 0 ? OMNIPROF_STATUS_ERROR_CONTEXT_NOT_FOUND : OMNIPROF_STATUS_SUCCESS;
}

static pthread_mutex_t g_sampling_lock = PTHREAD_MUTEX_INITIALIZER; /* never held across another lock */

omniprof_status_t op_sdk_sampling_claim(op_sdk_sampling_service *svc, const void *want,
                                        omniprof_context_id_t context, omniprof_buffer_id_t buffer)
{
    pthread_mutex_lock(&g_sampling_lock);
    int conflict = svc->on && !svc->same(want);
    pthread_mutex_unlock(&g_sampling_lock);
    if (conflict) return OMNIPROF_STATUS_ERROR_CONTEXT_CONFLICT;
    omniprof_status_t st = omniprof_configure_buffer_tracing_service(context, svc->kind, NULL, 0, buffer);
    if (st != OMNIPROF_STATUS_SUCCESS) return st;
    pthread_mutex_lock(&g_sampling_lock);
    if (!svc->on) {
        svc->keep(want);
        svc->on = 1;
    }
    pthread_mutex_unlock(&g_sampling_lock);
    return OMNIPROF_STATUS_SUCCESS;
}

int op_sdk_sampling_get(const op_sdk_sampling_service *svc, const void *config, void *out, size_t size)
{
    pthread_mutex_lock(&g_sampling_lock);
    int on = svc->on;
    if (on && out) memcpy(out, config, size);
    pthread_mutex_unlock(&g_sampling_lock);
    return on;
}

op_context *op_context_lookup(omniprof_context_id_t id)
{
    int i = op_context_index(id);
    return i < 0 ? NULL : &g_ctx[i];
}

omniprof_context_id_t op_context_id_at(int index)
{
    return (omniprof_context_id_t){g_ctx[index].handle};
}

uint64_t op_context_active_mask(void) { return atomic_load_explicit(&g_op_active_mask, memory_order_acquire); }

bool op_filter_has(const op_service_filter *f, int32_t op)
{
    if (f->nbits == 0) return true;
    if (op < 0 || (uint32_t)op >= f->nbits) return false;
    return (f->bits[(uint32_t)op / 64] >> ((uint32_t)op % 64)) & 1;
}

op_buffer *op_context_buffer_for(int ci, uint32_t kind, int32_t operation)
{
    op_context *c = &g_ctx[ci];
    if (!op_filter_has(&c->bsvc[kind].f, operation)) return NULL;
    return c->bsvc[kind].buf;
}

bool op_context_callback_for(int ci, uint32_t kind, int32_t operation, omniprof_callback_tracing_cb_t *cb,
                             void **data)
{
    op_context *c = &g_ctx[ci];
    if (!c->csvc[kind].cb || !op_filter_has(&c->csvc[kind].f, operation)) return false;
    *cb = c->csvc[kind].cb;
    *data = c->csvc[kind].data;
    return true;
}

OMNIPROF_API omniprof_status_t omniprof_create_context(omniprof_context_id_t *context_id)
{
    if (!context_id) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    op_sdk_ensure_init();
    omniprof_status_t st = op_sdk_config_open();
    if (st != OMNIPROF_STATUS_SUCCESS) return st;
    op_sdk_lock();
    int i = atomic_load(&g_nctx);
    if (i >= OP_SDK_MAX_CONTEXTS) {
        op_sdk_unlock();
        op_warn("omniprof_create_context: at most %d contexts per process", OP_SDK_MAX_CONTEXTS);
        return OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    if (!g_ctx_offset) g_ctx_offset = op_sdk_random_offset(0xc0c0);
    op_context *c = &g_ctx[i];
    ASSERT_CTX(c, i);
    memset(c, 0, sizeof *c);
    c->handle = g_ctx_offset + (uint64_t)i + 1;
    c->client = op_sdk_current_client();
    atomic_store_explicit(&c->state, CTX_INACTIVE, memory_order_release);
    atomic_store_explicit(&g_nctx, i + 1, memory_order_release);
    ASSERT_CTX(c, i);
    op_sdk_unlock();
    context_id->handle = c->handle;
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_start_context(omniprof_context_id_t context_id)
{
    op_sdk_ensure_init();
    int i = op_context_index(context_id);
    if (i < 0) return OMNIPROF_STATUS_ERROR_CONTEXT_NOT_FOUND;
    int st = op_sdk_state();
    if (st >= OP_STATE_FINALIZING) return OMNIPROF_STATUS_ERROR_FINALIZED;
    op_context *c = &g_ctx[i];
    int expected = CTX_INACTIVE;
    if (atomic_compare_exchange_strong(&c->state, &expected, CTX_ACTIVE)) {
        atomic_fetch_or_explicit(&g_op_active_mask, 1ull << i, memory_order_acq_rel);
        op_route_changed();
        ASSERT_CTX(c, i);
        if (st == OP_STATE_LOCKED) op_backends_context_change();
    }
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_stop_context(omniprof_context_id_t context_id)
{
    int i = op_context_index(context_id);
    if (i < 0) return OMNIPROF_STATUS_ERROR_CONTEXT_NOT_FOUND;
    op_context *c = &g_ctx[i];
    int expected = CTX_ACTIVE;
    if (atomic_compare_exchange_strong(&c->state, &expected, CTX_INACTIVE)) {
        atomic_fetch_and_explicit(&g_op_active_mask, ~(1ull << i), memory_order_acq_rel);
        op_route_changed();
        ASSERT_CTX(c, i);
        if (op_sdk_state() == OP_STATE_LOCKED) op_backends_context_change();
    }
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_context_is_active(omniprof_context_id_t context_id, int *status)
{
    if (!status) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    int i = op_context_index(context_id);
    if (i < 0) return OMNIPROF_STATUS_ERROR_CONTEXT_NOT_FOUND;
    *status = atomic_load(&g_ctx[i].state) == CTX_ACTIVE;
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_context_is_valid(omniprof_context_id_t context_id, int *status)
{
    if (!status) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    *status = op_context_index(context_id) >= 0;
    return OMNIPROF_STATUS_SUCCESS;
}

void op_context_stop_all(void)
{
    int n = atomic_load(&g_nctx);
    for (int i = 0; i < n; i++) {
        int expected = CTX_ACTIVE;
        if (atomic_compare_exchange_strong(&g_ctx[i].state, &expected, CTX_INACTIVE))
            atomic_fetch_and(&g_op_active_mask, ~(1ull << i));
    }
    op_route_changed();
    op_backends_context_change();
}

void op_context_deactivate_client(int client)
{
    int n = atomic_load(&g_nctx);
    for (int i = 0; i < n; i++) {
        if (g_ctx[i].client != client) continue;
        int expected = CTX_ACTIVE;
        if (atomic_compare_exchange_strong(&g_ctx[i].state, &expected, CTX_INACTIVE))
            atomic_fetch_and(&g_op_active_mask, ~(1ull << i));
    }
    op_route_changed();
}

/* ------------------------------------------------------------------------------------------ */
/* Service configuration                                                                       */

/* Is `op` an operation of buffer kind `kind`? -1 unknown kind, 0 no, 1 yes, 2 cannot tell
 * (the backend that owns the kind is not loaded: accepted, the kind stays silent). */
static int operation_known(uint32_t kind, int32_t op)
{
    if (op_core_serves(kind)) return op_core_operation_name(kind, op) != NULL;
    const op_backend *be;
    int asked = 0;
    for (int i = 0; (be = op_backend_for_buffer_kind_nth(kind, i)) != NULL; i++) /* known to any of them */
        if (be->operation_name && (asked = 1, be->operation_name(kind, op) != NULL)) return 1;
    return asked ? 0 : 2;
}

static omniprof_status_t build_filter(uint32_t buffer_kind, const omniprof_tracing_operation_t *ops, size_t n,
                                      op_service_filter *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0) return OMNIPROF_STATUS_SUCCESS;
    if (!ops) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    int32_t maxop = 0;
    for (size_t i = 0; i < n; i++) {
        if (ops[i] <= 0 || !operation_known(buffer_kind, ops[i])) {
            op_warn("operation %d is not an operation of kind %u (see omniprof_iterate_*_kind_operations)",
                    (int)ops[i], buffer_kind);
            return OMNIPROF_STATUS_ERROR_OPERATION_NOT_FOUND;
        }
        if (ops[i] > maxop) maxop = ops[i];
    }
    out->nbits = (uint32_t)maxop + 1;
    out->bits = op_calloc((out->nbits + 63) / 64, sizeof(uint64_t));
    if (!out->bits) return OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
    for (size_t i = 0; i < n; i++) out->bits[(uint32_t)ops[i] / 64] |= 1ull << ((uint32_t)ops[i] % 64);
    return OMNIPROF_STATUS_SUCCESS;
}

/* What a service delivers to: a buffer (buffer tracing) or a callback and its data. */
typedef struct service_target {
    op_buffer *buf;
    omniprof_callback_tracing_cb_t cb;
    void *data;
} service_target;

/* Configure context ci's service of a kind (buffer kind bk; kind indexes csvc when t->cb is
 * set, else bsvc): one per (context, kind), the backend serving bk loaded first, the
 * operations checked, then the slot published by its bit in *mask. */
static omniprof_status_t add_service(int ci, uint32_t kind, uint32_t bk, _Atomic uint64_t *mask,
                                     const omniprof_tracing_operation_t *ops, size_t n, const service_target *t)
{
    op_backend_load_for_kind(bk);
    op_sdk_lock();
    if (atomic_load_explicit(mask, memory_order_relaxed) & (1ull << ci)) {
        op_sdk_unlock();
        return OMNIPROF_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED;
    }
    op_service_filter f;
    omniprof_status_t st = build_filter(bk, ops, n, &f);
    if (st == OMNIPROF_STATUS_SUCCESS) {
        op_context *c = &g_ctx[ci];
        if (t->cb) {
            c->csvc[kind].f = f;
            c->csvc[kind].data = t->data;
            c->csvc[kind].cb = t->cb;
        } else {
            c->bsvc[kind].f = f;
            c->bsvc[kind].buf = t->buf;
            if (f.nbits == 0) g_op_solo[kind][ci] = t->buf; /* the emit path's shortcut (sdk_internal.h) */
        }
        atomic_fetch_or_explicit(mask, 1ull << ci, memory_order_release);
        op_route_changed();
    }
    op_sdk_unlock();
    return st;
}

OMNIPROF_API omniprof_status_t omniprof_configure_buffer_tracing_service(
    omniprof_context_id_t context, omniprof_buffer_tracing_kind_t kind,
    const omniprof_tracing_operation_t *operations, size_t operations_count, omniprof_buffer_id_t buffer)
{
    op_sdk_ensure_init();
    int ci;
    omniprof_status_t st = op_sdk_config_context(context, &ci);
    if (st != OMNIPROF_STATUS_SUCCESS) return st;
    if ((int)kind <= OMNIPROF_BUFFER_TRACING_NONE || kind >= OMNIPROF_BUFFER_TRACING_LAST)
        return OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND;
    service_target t = {.buf = op_buffer_lookup(buffer)};
    if (!t.buf) return OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND;
    return add_service(ci, kind, kind, &g_op_buffer_kind_mask[kind], operations, operations_count, &t);
}

OMNIPROF_API omniprof_status_t omniprof_configure_callback_tracing_service(
    omniprof_context_id_t context, omniprof_callback_tracing_kind_t kind,
    const omniprof_tracing_operation_t *operations, size_t operations_count,
    omniprof_callback_tracing_cb_t callback, void *callback_args)
{
    op_sdk_ensure_init();
    int ci;
    omniprof_status_t st = op_sdk_config_context(context, &ci);
    if (st != OMNIPROF_STATUS_SUCCESS) return st;
    if ((int)kind <= OMNIPROF_CALLBACK_TRACING_NONE || kind >= OMNIPROF_CALLBACK_TRACING_LAST)
        return OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND;
    if (!callback) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    service_target t = {.cb = callback, .data = callback_args};
    return add_service(ci, kind, op_sdk_callback_kind_to_buffer_kind(kind), &g_op_callback_kind_mask[kind],
                       operations, operations_count, &t);
}

int op_sdk_kind_configured(uint32_t buffer_kind)
{
    if (buffer_kind >= OMNIPROF_BUFFER_TRACING_LAST) return 0;
    if (atomic_load_explicit(&g_op_buffer_kind_mask[buffer_kind], memory_order_acquire)) return 1;
    for (uint32_t k = 1; k < OMNIPROF_CALLBACK_TRACING_LAST; k++)
        if (op_sdk_callback_kind_to_buffer_kind(k) == buffer_kind &&
            atomic_load_explicit(&g_op_callback_kind_mask[k], memory_order_acquire))
            return 1;
    return 0;
}

/* Does the filter hold `operation`; for operation < 0: is it every operation? */
static int filter_covers(const op_service_filter *f, int32_t operation)
{
    return operation < 0 ? f->nbits == 0 : op_filter_has(f, operation);
}

/* Any context's buffer or callback service of the kind whose filter covers `operation`. */
int op_sdk_kind_op_configured(uint32_t buffer_kind, int32_t operation)
{
    if (buffer_kind >= OMNIPROF_BUFFER_TRACING_LAST) return 0;
    for (uint64_t m = atomic_load_explicit(&g_op_buffer_kind_mask[buffer_kind], memory_order_acquire); m; m &= m - 1)
        if (filter_covers(&g_ctx[__builtin_ctzll(m)].bsvc[buffer_kind].f, operation)) return 1;
    for (uint32_t k = 1; k < OMNIPROF_CALLBACK_TRACING_LAST; k++) {
        if (op_sdk_callback_kind_to_buffer_kind(k) != buffer_kind) continue;
        for (uint64_t m = atomic_load_explicit(&g_op_callback_kind_mask[k], memory_order_acquire); m; m &= m - 1)
            if (filter_covers(&g_ctx[__builtin_ctzll(m)].csvc[k].f, operation)) return 1;
    }
    return 0;
}

int op_sdk_callback_kind_configured(uint32_t callback_kind)
{
    return callback_kind < OMNIPROF_CALLBACK_TRACING_LAST &&
           atomic_load_explicit(&g_op_callback_kind_mask[callback_kind], memory_order_acquire) != 0;
}

/* Does an active context have the service of this kind (its bit in *kind_mask) with the
 * operation in its filter? callback: csvc, else bsvc. Not while paused. */
static inline int service_enabled(_Atomic uint64_t *kind_mask, bool callback, uint32_t kind, int32_t operation)
{
    uint64_t m = atomic_load_explicit(kind_mask, memory_order_acquire) &
                 atomic_load_explicit(&g_op_active_mask, memory_order_relaxed);
    if (!m || atomic_load_explicit(&g_op_paused, memory_order_relaxed)) return 0;
    while (m) {
        int ci = __builtin_ctzll(m);
        m &= m - 1;
        if (op_filter_has(callback ? &g_ctx[ci].csvc[kind].f : &g_ctx[ci].bsvc[kind].f, operation)) return 1;
    }
    return 0;
}

int op_sdk_buffer_enabled(uint32_t buffer_kind, int32_t operation)
{
    if (buffer_kind >= OMNIPROF_BUFFER_TRACING_LAST) return 0;
    return service_enabled(&g_op_buffer_kind_mask[buffer_kind], false, buffer_kind, operation);
}

static int kind_active(_Atomic uint64_t *kind_mask)
{
    return (atomic_load_explicit(kind_mask, memory_order_acquire) & atomic_load_explicit(&g_op_active_mask, memory_order_acquire)) != 0;
}

int op_sdk_kind_active(uint32_t buffer_kind)
{
    return buffer_kind < OMNIPROF_BUFFER_TRACING_LAST && kind_active(&g_op_buffer_kind_mask[buffer_kind]);
}

int op_sdk_callback_kind_active(uint32_t callback_kind)
{
    return callback_kind < OMNIPROF_CALLBACK_TRACING_LAST && kind_active(&g_op_callback_kind_mask[callback_kind]);
}

int op_sdk_callback_enabled(uint32_t callback_kind, int32_t operation)
{
    if (callback_kind >= OMNIPROF_CALLBACK_TRACING_LAST) return 0;
    return service_enabled(&g_op_callback_kind_mask[callback_kind], true, callback_kind, operation);
}
