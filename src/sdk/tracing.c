/* tracing.c — the tracing services' data path and names: op_sdk_emit (copy a record into the
 * buffer of every active context that traces its kind), callback tracing enter/exit/notify,
 * kind and operation names and iteration, record argument iteration.
 *
 * The emit path takes no lock: it reads the kind's context mask and the active mask (both
 * atomics), checks each context's operation filter (immutable once published) and emplaces
 * (buffer.c); where one unfiltered context alone wants the kind, the kind's route (ROUTES below)
 * says so and the record goes to its buffer without those steps. Records of kinds that carry a
 * correlation id get correlation_id.external written per context at payload offset 24
 * (backend.h convention (2)). While the user API
 * paused collection (omniprof_pause), nothing is emitted and ENTER callbacks are skipped. */
#include "sdk/sdk_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/kinds.h"
#include "common/op_names.h"
#include "common/log.h"

/* ------------------------------------------------------------------------------------------ */
/* Kinds                                                                                       */

/* The core serves these kinds and tables itself (marker.c, correlation.c, intercept_table.c),
 * declared the way a backend declares what it serves. */
static const op_backend_manifest k_core = {
    .magic = OP_BACKEND_MANIFEST_MAGIC,
    .size = sizeof(op_backend_manifest),
    .name = "core",
    .buffer_kinds = {OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API,
                     OMNIPROF_BUFFER_TRACING_CORRELATION_ID_RETIREMENT},
    .intercept_tables = OMNIPROF_INTERCEPT_TABLE_USER_API,
};

const op_backend_manifest *op_core_manifest(void) { return &k_core; }
bool op_core_serves(uint32_t buffer_kind)
{
    return op_manifest_serves(&k_core, OMNIPROF_RECORD_CATEGORY_TRACING, buffer_kind);
}

uint32_t op_sdk_callback_kind_to_buffer_kind(uint32_t callback_kind)
{
    return op_callback_kind_to_buffer_kind(callback_kind);
}

const char *op_core_operation_name(uint32_t kind, int32_t op)
{
    if (kind == OMNIPROF_BUFFER_TRACING_MARKER_API || kind == OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API)
        return op_fixed_operation_name(kind, op); /* common/op_names.c */
    return NULL; /* CORRELATION_ID_RETIREMENT has no operations */
}

static int32_t core_op_count(uint32_t kind)
{
    if (kind == OMNIPROF_BUFFER_TRACING_MARKER_API) return OMNIPROF_MARKER_OP_LAST;
    if (kind == OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API) return OMNIPROF_MARKER_RANGE_OP_LAST;
    return 1;
}

static omniprof_status_t put_name(const char *s, const char **name, uint64_t *len)
{
    if (!name) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    *name = s;
    if (len) *len = strlen(s);
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_query_buffer_tracing_kind_name(omniprof_buffer_tracing_kind_t kind,
                                                                       const char **name, uint64_t *name_len)
{
    const char *s = (int)kind > 0 ? op_buffer_kind_name(kind) : NULL;
    if (!s) return OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND;
    return put_name(s, name, name_len);
}

OMNIPROF_API omniprof_status_t omniprof_query_callback_tracing_kind_name(omniprof_callback_tracing_kind_t kind,
                                                                         const char **name, uint64_t *name_len)
{
    const char *s = (int)kind > 0 ? op_callback_kind_name(kind) : NULL;
    if (!s) return OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND;
    return put_name(s, name, name_len);
}

static omniprof_status_t operation_name(uint32_t kind, int32_t op, const char **name, uint64_t *name_len)
{
    if (kind == 0 || kind >= OMNIPROF_BUFFER_TRACING_LAST) return OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND;
    if (!name) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    const char *s;
    if (op_core_serves(kind)) {
        s = op_core_operation_name(kind, op);
    } else {
        op_backend_load_for_kind(kind);
        const op_backend *be = NULL;
        s = NULL;
        for (int i = 0; !s && (be = op_backend_for_buffer_kind_nth(kind, i)) != NULL; i++) /* the first that knows */
            if (be->operation_name) s = be->operation_name(kind, op);
        if (!s && !op_backend_for_buffer_kind(kind)) return OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
    }
    if (!s) return OMNIPROF_STATUS_ERROR_OPERATION_NOT_FOUND;
    return put_name(s, name, name_len);
}

OMNIPROF_API omniprof_status_t omniprof_query_buffer_tracing_kind_operation_name(
    omniprof_buffer_tracing_kind_t kind, omniprof_tracing_operation_t operation, const char **name, uint64_t *name_len)
{
    return operation_name(kind, operation, name, name_len);
}

OMNIPROF_API omniprof_status_t omniprof_query_callback_tracing_kind_operation_name(
    omniprof_callback_tracing_kind_t kind, omniprof_tracing_operation_t operation, const char **name, uint64_t *name_len)
{
    if ((int)kind <= 0 || kind >= OMNIPROF_CALLBACK_TRACING_LAST) return OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND;
    return operation_name(op_sdk_callback_kind_to_buffer_kind(kind), operation, name, name_len);
}

OMNIPROF_API omniprof_status_t omniprof_iterate_buffer_tracing_kinds(omniprof_buffer_tracing_kind_cb_t callback,
                                                                     void *data)
{
    if (!callback) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    for (uint32_t k = 1; k < OMNIPROF_BUFFER_TRACING_LAST; k++)
        if (callback((omniprof_buffer_tracing_kind_t)k, data)) break;
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_iterate_callback_tracing_kinds(omniprof_callback_tracing_kind_cb_t callback,
                                                                       void *data)
{
    if (!callback) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    for (uint32_t k = 1; k < OMNIPROF_CALLBACK_TRACING_LAST; k++)
        if (callback((omniprof_callback_tracing_kind_t)k, data)) break;
    return OMNIPROF_STATUS_SUCCESS;
}

typedef struct iter_ctx {
    uint32_t kind;
    int is_callback;
    void *cb;
    void *data;
} iter_ctx;

static int iter_one(int32_t op, void *p)
{
    iter_ctx *c = p;
    if (c->is_callback)
        return ((omniprof_callback_tracing_kind_operation_cb_t)c->cb)((omniprof_callback_tracing_kind_t)c->kind, op,
                                                                      c->data);
    return ((omniprof_buffer_tracing_kind_operation_cb_t)c->cb)((omniprof_buffer_tracing_kind_t)c->kind, op, c->data);
}

static omniprof_status_t iterate_ops(uint32_t buffer_kind, iter_ctx *ic)
{
    if (op_core_serves(buffer_kind)) {
        int32_t n = core_op_count(buffer_kind);
        for (int32_t op = 1; op < n; op++)
            if (iter_one(op, ic)) break;
        return OMNIPROF_STATUS_SUCCESS;
    }
    op_backend_load_for_kind(buffer_kind);
    const op_backend *be;
    for (int i = 0; (be = op_backend_for_buffer_kind_nth(buffer_kind, i)) != NULL; i++) /* the first that knows */
        if (be->iterate_operations && be->iterate_operations(buffer_kind, iter_one, ic) >= 0) return OMNIPROF_STATUS_SUCCESS;
    return op_backend_for_buffer_kind(buffer_kind) ? OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND : OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
}

OMNIPROF_API omniprof_status_t omniprof_iterate_buffer_tracing_kind_operations(
    omniprof_buffer_tracing_kind_t kind, omniprof_buffer_tracing_kind_operation_cb_t callback, void *data)
{
    if ((int)kind <= 0 || kind >= OMNIPROF_BUFFER_TRACING_LAST) return OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND;
    if (!callback) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    iter_ctx ic = {kind, 0, (void *)callback, data};
    return iterate_ops(kind, &ic);
}

OMNIPROF_API omniprof_status_t omniprof_iterate_callback_tracing_kind_operations(
    omniprof_callback_tracing_kind_t kind, omniprof_callback_tracing_kind_operation_cb_t callback, void *data)
{
    if ((int)kind <= 0 || kind >= OMNIPROF_CALLBACK_TRACING_LAST) return OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND;
    if (!callback) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    iter_ctx ic = {kind, 1, (void *)callback, data};
    return iterate_ops(op_sdk_callback_kind_to_buffer_kind(kind), &ic);
}

/* ------------------------------------------------------------------------------------------ */
/* Arguments                                                                                   */

static void arg_text(const omniprof_arg_t *a, char *buf, size_t n)
{
    switch (a->type) {
    case OMNIPROF_ARG_TYPE_INT: snprintf(buf, n, "%" PRId64, a->value.i64); break;
    case OMNIPROF_ARG_TYPE_UINT: snprintf(buf, n, "%" PRIu64, a->value.u64); break;
    case OMNIPROF_ARG_TYPE_DOUBLE: snprintf(buf, n, "%g", a->value.f64); break;
    case OMNIPROF_ARG_TYPE_POINTER: snprintf(buf, n, "0x%" PRIx64, a->value.u64); break;
    case OMNIPROF_ARG_TYPE_STRING: snprintf(buf, n, "%s", a->value.str ? a->value.str : ""); break;
    default: buf[0] = '\0';
    }
}

static omniprof_status_t iterate_args(uint32_t kind, int32_t op, const omniprof_arg_t *args, uint32_t n,
                                      omniprof_arg_iterate_cb_t cb, void *data)
{
    char buf[256];
    for (uint32_t i = 0; i < n; i++) {
        arg_text(&args[i], buf, sizeof buf);
        if (cb(kind, op, i, &args[i], buf, data)) break;
    }
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_iterate_buffer_tracing_record_args(const omniprof_record_header_t *header,
                                                                           omniprof_arg_iterate_cb_t callback,
                                                                           void *data)
{
    if (!header || !callback || !header->payload) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    if (header->category != OMNIPROF_RECORD_CATEGORY_TRACING) return OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND;
    uint32_t kind = header->kind;
    if (kind == 0 || kind >= OMNIPROF_BUFFER_TRACING_LAST) return OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND;
    const op_backend *be;
    for (int i = 0; (be = op_backend_for_buffer_kind_nth(kind, i)) != NULL; i++) { /* the first that knows */
        omniprof_status_t st = be->iterate_record_args ? be->iterate_record_args(header, callback, data)
                                                       : OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND;
        if (st != OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND) return st;
    }
    const op_kind_info *info = op_kind_info_get(header->category, kind);
    if (info && info->layout == OP_KIND_LAYOUT_ARGS) { /* inline omniprof_arg_t tail (kinds.def) */
        const omniprof_buffer_tracing_api_record_t *r = header->payload;
        if (r->size < sizeof *r) return OMNIPROF_STATUS_SUCCESS;
        uint64_t room = (r->size - sizeof *r) / sizeof(omniprof_arg_t);
        uint32_t n = r->num_args < room ? r->num_args : (uint32_t)room;
        return iterate_args(kind, r->operation, r->args, n, callback, data);
    }
    switch (kind) {
    case OMNIPROF_BUFFER_TRACING_MARKER_API:
    case OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API: {
        const omniprof_buffer_tracing_marker_record_t *r = header->payload;
        omniprof_arg_t a[3] = {
            {.name = "message", .type = OMNIPROF_ARG_TYPE_STRING, .value.str = r->message},
            {.name = "range_id", .type = OMNIPROF_ARG_TYPE_UINT, .value.u64 = r->range_id},
            {.name = "nesting_level", .type = OMNIPROF_ARG_TYPE_INT, .value.i64 = r->nesting_level},
        };
        return iterate_args(kind, r->operation, a, 3, callback, data);
    }
    default: return OMNIPROF_STATUS_SUCCESS;
    }
}

OMNIPROF_API omniprof_status_t omniprof_iterate_callback_tracing_record_args(
    const omniprof_callback_tracing_record_t *record, omniprof_arg_iterate_cb_t callback, void *data)
{
    if (!record || !callback) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    if (record->kind == 0 || record->kind >= OMNIPROF_CALLBACK_TRACING_LAST) return OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND;
    if (!record->payload) return OMNIPROF_STATUS_SUCCESS;
    switch (op_callback_kind_payload(record->kind)) { /* kinds.def, PAYLOAD of the callback row */
    case OP_CALLBACK_PAYLOAD_API: {
        const omniprof_callback_tracing_api_data_t *d = record->payload;
        if (d->size < sizeof *d || !d->decoded_args) return OMNIPROF_STATUS_SUCCESS;
        return iterate_args(record->kind, record->operation, d->decoded_args, d->num_args, callback, data);
    }
    case OP_CALLBACK_PAYLOAD_RECORD: { /* the buffer record's own arguments */
        omniprof_record_header_t h = {.category = OMNIPROF_RECORD_CATEGORY_TRACING,
                                      .kind = op_callback_kind_to_buffer_kind(record->kind),
                                      .payload = record->payload};
        return omniprof_iterate_buffer_tracing_record_args(&h, callback, data);
    }
    default: return OMNIPROF_STATUS_SUCCESS;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Emit                                                                                        */

/* Which buffer kinds carry a correlation id whose `external` op_sdk_emit fills (kinds.def). */
static const bool k_kind_correlation[OMNIPROF_BUFFER_TRACING_LAST] = {
#define OMNIPROF_BUFFER_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, SWITCH) [VALUE] = CORRELATION,
#include "omniprof/kinds.def"
};

static inline bool has_correlation(uint32_t category, uint32_t kind)
{
    if (category == OMNIPROF_RECORD_CATEGORY_TRACING) return k_kind_correlation[kind]; /* kind < LAST: checked */
    return op_kind_has_correlation(category, kind);
}

static uint64_t external_for(int ci, const op_sdk_external *ext)
{
    if (ext) {
        for (uint32_t i = 0; i < ext->count && i < 4; i++)
            if ((int)ext->context_index[i] == ci) return ext->value[i].value;
        return 0;
    }
    omniprof_user_data_t v = {0};
    op_ext_top(ci, &v);
    return v.value;
}

/* The data path of every record: which contexts want it (one mask test), then one copy into the
 * buffer of each. The calling thread's state is looked up once; the external correlation id is
 * looked up only once some thread has pushed one. */
__attribute__((noinline)) static void emit_all(uint32_t category, uint32_t kind, int32_t op, const void *payload,
                                               const op_sdk_external *ext, bool from_signal)
{
    if (!payload || kind >= OMNIPROF_BUFFER_TRACING_LAST) return;
    uint64_t m = atomic_load_explicit(&g_op_buffer_kind_mask[kind], memory_order_acquire) &
                 atomic_load_explicit(&g_op_active_mask, memory_order_relaxed);
    if (__builtin_expect(!m, 0) || atomic_load_explicit(&g_op_paused, memory_order_relaxed)) return;
    uint64_t size = *(const uint64_t *)payload;
    if (size < 16) return;
    /* the external correlation id goes at offset 24 of a record with a correlation id; it is
     * looked up only once some thread pushed one (or the caller captured some) */
    size_t patch_off = size >= 32 && has_correlation(category, kind) ? 24 : 0;
    bool want_ext = patch_off && (ext || atomic_load_explicit(&g_op_ext_used, memory_order_relaxed));
    op_tls *t = from_signal ? op_tls_get_signal() : op_tls_get();
    do {
        int ci = __builtin_ctzll(m);
        m &= m - 1;
        op_buffer *b = op_context_buffer_for(ci, kind, op);
        if (!b) continue;
        uint64_t ev = __builtin_expect(want_ext, 0) ? external_for(ci, ext) : 0;
        op_buffer_emplace_tls(b, t, category, kind, payload, size, patch_off, ev, from_signal);
    } while (m);
}

/* ROUTES. The common case skips the loop: one context alone wants the kind, its service has no
 * operation filter (g_op_solo), collection is not paused, and no external correlation id is to be
 * written. Whether that holds for a kind is kept in g_routes.route[kind] = gen<<8 | 0x80 | buffer
 * index (gen<<8 | 0x40: no context wants the kind or collection is paused, so the record is
 * dropped where it is; gen<<8 alone: the full path), built at the kind's first record after
 * each change of what it depends on (route_build); every such change calls op_route_changed
 * afterwards, which makes every route stale (gen moves on). A record sees the state as of its
 * gen load: a change that has not called op_route_changed yet is not seen, as a record emitted
 * just before the change. */
_Static_assert(OP_SDK_MAX_BUFFERS <= 64, "a route holds a buffer index in 6 bits");
/* Cache lines of their own (the struct's size is a multiple of its alignment): every record
 * reads gen, and the linker placed it on one line with correlation.c's g_next_id and marker.c's
 * g_next_range_id, which every traced call of every thread increments. */
static struct {
    _Alignas(64) _Atomic uint64_t gen;
    _Atomic uint64_t route[OMNIPROF_BUFFER_TRACING_LAST];
} g_routes = {.gen = 1};

void op_route_changed(void) { atomic_fetch_add_explicit(&g_routes.gen, 1, memory_order_seq_cst); }

/* The route of kind (< LAST) as of now, stored for the records after this one. */
static uint64_t route_build(uint32_t kind)
{
    uint64_t gen = atomic_load_explicit(&g_routes.gen, memory_order_seq_cst), r = gen << 8;
    uint64_t m = atomic_load_explicit(&g_op_buffer_kind_mask[kind], memory_order_acquire) &
                 atomic_load_explicit(&g_op_active_mask, memory_order_acquire);
    op_buffer *b;
    bool paused = atomic_load_explicit(&g_op_paused, memory_order_acquire);
    if (!m || paused)
        r |= 0x40; /* emit_all would return at once */
    else if (!(m & (m - 1)) && (b = g_op_solo[kind][__builtin_ctzll(m)]) != NULL &&
             !(k_kind_correlation[kind] && atomic_load_explicit(&g_op_ext_used, memory_order_acquire)))
        r |= 0x80 | (uint64_t)op_buffer_index(b); /* index < OP_SDK_MAX_BUFFERS = 64 */
    atomic_store_explicit(&g_routes.route[kind], r, memory_order_relaxed);
    return r;
}

/* A record whose kind's route was stale: rebuild it, then the full path. */
__attribute__((noinline)) static void emit_rerouted(uint32_t kind, int32_t op, const void *payload,
                                                    const op_sdk_external *ext)
{
    route_build(kind);
    emit_all(OMNIPROF_RECORD_CATEGORY_TRACING, kind, op, payload, ext, false);
}

/* A tracing record: by its kind's route (op_buffer_emplace_fast) when that is one buffer, the
 * caller captured no external ids, the thread's state exists and the payload has 16-256 bytes;
 * else the full path. */
static inline __attribute__((always_inline)) void emit(uint32_t kind, int32_t op, const void *payload,
                                                       const op_sdk_external *ext)
{
    if (__builtin_expect(kind < OMNIPROF_BUFFER_TRACING_LAST && ext == NULL, 1)) {
        if (__builtin_expect(payload == NULL, 0)) return;
        uint64_t gen = atomic_load_explicit(&g_routes.gen, memory_order_acquire);
        uint64_t r = atomic_load_explicit(&g_routes.route[kind], memory_order_relaxed);
        if (__builtin_expect((r >> 8) != gen, 0)) {
            emit_rerouted(kind, op, payload, ext);
            return;
        }
        if (__builtin_expect(!(r & 0x80), 0) && (r & 0x40)) return; /* nobody wants it, or paused */
        uint64_t size = *(const uint64_t *)payload;
        op_tls *t = op_tls_cur;
        if ((r & 0x80) && size - 16 <= 240 && t && t->key_set) {
            size_t patch_off = size >= 32 && k_kind_correlation[kind] ? 24 : 0;
            op_buffer_emplace_fast((uint32_t)r & 0x3F, t, OMNIPROF_RECORD_CATEGORY_TRACING, kind, payload, size,
                                   patch_off);
            return;
        }
    }
    emit_all(OMNIPROF_RECORD_CATEGORY_TRACING, kind, op, payload, ext, false);
}

void op_sdk_emit(uint32_t kind, int32_t operation, const void *payload, const op_sdk_external *ext)
{
    emit(kind, operation, payload, ext);
}

void op_sdk_emit_category(uint32_t category, uint32_t kind, int32_t operation, const void *payload,
                          const op_sdk_external *ext)
{
    if (category == OMNIPROF_RECORD_CATEGORY_TRACING) emit(kind, operation, payload, ext);
    else emit_all(category, kind, operation, payload, ext, false);
}

void op_sdk_emit_from_signal(uint32_t kind, int32_t operation, const void *payload)
{
    emit_all(OMNIPROF_RECORD_CATEGORY_TRACING, kind, operation, payload, NULL, true);
}

void op_sdk_report_lost(uint32_t kind, int32_t operation, uint64_t n)
{
    if (!n || kind >= OMNIPROF_BUFFER_TRACING_LAST) return;
    uint64_t m = atomic_load_explicit(&g_op_buffer_kind_mask[kind], memory_order_acquire) &
                 atomic_load_explicit(&g_op_active_mask, memory_order_relaxed);
    while (m) {
        int ci = __builtin_ctzll(m);
        m &= m - 1;
        op_buffer *b = op_context_buffer_for(ci, kind, operation);
        if (b) op_buffer_count_lost(b, n);
    }
}

void op_sdk_external_capture(op_sdk_external *out)
{
    if (!out) return;
    out->count = 0;
    uint64_t m = atomic_load_explicit(&g_op_active_mask, memory_order_acquire);
    while (m && out->count < 4) {
        int ci = __builtin_ctzll(m);
        m &= m - 1;
        omniprof_user_data_t v;
        if (op_ext_top(ci, &v)) {
            out->context_index[out->count] = (uint32_t)ci;
            out->value[out->count] = v;
            out->count++;
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Callback tracing                                                                            */

static omniprof_callback_tracing_record_t make_record(int ci, uint32_t kind, int32_t op, omniprof_callback_phase_t ph,
                                                      const omniprof_correlation_id_t *corr, void *payload)
{
    omniprof_callback_tracing_record_t r;
    memset(&r, 0, sizeof r);
    r.context_id = op_context_id_at(ci);
    r.thread_id = op_tid();
    if (corr) r.correlation_id = *corr;
    omniprof_user_data_t v = {0};
    op_ext_top(ci, &v);
    r.correlation_id.external = v;
    r.kind = kind;
    r.operation = op;
    r.phase = ph;
    r.payload = payload;
    return r;
}

void op_sdk_callback_enter(uint32_t kind, int32_t op, const omniprof_correlation_id_t *corr, void *payload,
                           op_sdk_callback_state *state)
{
    if (!state) return;
    state->count = 0;
    if (kind >= OMNIPROF_CALLBACK_TRACING_LAST) return;
    uint64_t m = atomic_load_explicit(&g_op_callback_kind_mask[kind], memory_order_acquire) &
                 atomic_load_explicit(&g_op_active_mask, memory_order_relaxed);
    if (!m || atomic_load_explicit(&g_op_paused, memory_order_relaxed)) return;
    while (m && state->count < 8) {
        int ci = __builtin_ctzll(m);
        m &= m - 1;
        omniprof_callback_tracing_cb_t cb;
        void *data;
        if (!op_context_callback_for(ci, kind, op, &cb, &data)) continue;
        uint32_t i = state->count++;
        state->context_index[i] = (uint32_t)ci;
        state->user_data[i].value = 0;
        cb(make_record(ci, kind, op, OMNIPROF_CALLBACK_PHASE_ENTER, corr, payload), &state->user_data[i], data);
    }
}

void op_sdk_callback_exit(uint32_t kind, int32_t op, const omniprof_correlation_id_t *corr, void *payload,
                          op_sdk_callback_state *state)
{
    if (!state || kind >= OMNIPROF_CALLBACK_TRACING_LAST) return;
    for (uint32_t i = 0; i < state->count && i < 8; i++) {
        int ci = (int)state->context_index[i];
        omniprof_callback_tracing_cb_t cb;
        void *data;
        if (!op_context_callback_for(ci, kind, op, &cb, &data)) continue;
        cb(make_record(ci, kind, op, OMNIPROF_CALLBACK_PHASE_EXIT, corr, payload), &state->user_data[i], data);
    }
}

void op_sdk_callback_notify(uint32_t kind, int32_t op, omniprof_callback_phase_t phase,
                            const omniprof_correlation_id_t *corr, void *payload)
{
    if (kind >= OMNIPROF_CALLBACK_TRACING_LAST) return;
    uint64_t m = atomic_load_explicit(&g_op_callback_kind_mask[kind], memory_order_acquire) &
                 atomic_load_explicit(&g_op_active_mask, memory_order_relaxed);
    if (!m || atomic_load_explicit(&g_op_paused, memory_order_relaxed)) return;
    while (m) {
        int ci = __builtin_ctzll(m);
        m &= m - 1;
        omniprof_callback_tracing_cb_t cb;
        void *data;
        if (!op_context_callback_for(ci, kind, op, &cb, &data)) continue;
        omniprof_user_data_t ud = {0};
        cb(make_record(ci, kind, op, phase, corr, payload), &ud, data);
    }
}
