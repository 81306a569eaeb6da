/* correlation.c — correlation ids (internal, ancestor, retirement) and external correlation
 * stacks.
 *
 * Internal ids come from one 64-bit counter starting at 1 (never 0). Each thread keeps a stack
 * of the ids of the traced calls it is inside; `ancestor` is its top at begin.
 *
 * Retirement (only while some context configured CORRELATION_ID_RETIREMENT): each live id has
 * an entry {id, refs} in a striped hash table. begin creates it with refs 1 (the call itself);
 * op_sdk_correlation_retain adds one for each asynchronous record that will carry the id;
 * end and release drop one; the drop that reaches 0 removes the entry and emits one
 * retirement record. At finalization, ids still live are retired (dangling).
 *
 * External ids: per (context, thread) stacks in the thread's state. A thread that never
 * pushed for a context sees the main thread's top for that context (g_main_top). */
#include "sdk/sdk_internal.h"

#include <string.h>

#include "common/alloc.h"
#include "common/clock.h"

#define NBUCKETS 1024
#define NSTRIPES 16 /* all are held across fork(): TSan tracks at most 64 held locks */

typedef struct corr_entry {
    uint64_t id;
    uint64_t refs;
    struct corr_entry *next;
} corr_entry;

static corr_entry *g_buckets[NBUCKETS];
static pthread_mutex_t g_stripes[NSTRIPES];
static _Atomic uint64_t g_next_id = 1;
static _Atomic uint64_t g_main_top[OP_SDK_MAX_CONTEXTS];
static _Atomic uint32_t g_main_depth[OP_SDK_MAX_CONTEXTS];
_Atomic int g_op_ext_used; /* set by the first push: until then no thread has an external id */

__attribute__((constructor(102))) static void corr_ctor(void)
{
    for (int i = 0; i < NSTRIPES; i++) pthread_mutex_init(&g_stripes[i], NULL);
}

static bool retirement_traced(void)
{
    return atomic_load_explicit(&g_op_buffer_kind_mask[OMNIPROF_BUFFER_TRACING_CORRELATION_ID_RETIREMENT],
                                memory_order_relaxed) != 0;
}

static void emit_retirement(uint64_t id)
{
    omniprof_buffer_tracing_correlation_id_retirement_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = OMNIPROF_BUFFER_TRACING_CORRELATION_ID_RETIREMENT;
    r.timestamp = op_now_ns();
    r.internal_correlation_id = id;
    op_sdk_emit(OMNIPROF_BUFFER_TRACING_CORRELATION_ID_RETIREMENT, 0, &r, NULL);
}

/* delta +1/-1; create: make an entry with refs 1 when absent. Returns true if refs hit 0. */
static bool adjust(uint64_t id, int delta, bool create)
{
    uint64_t b = (id * 0x9E3779B97F4A7C15ull) >> 54; /* 10 bits */
    pthread_mutex_t *mx = &g_stripes[b % NSTRIPES];
    bool retired = false;
    pthread_mutex_lock(mx);
    corr_entry **pp = &g_buckets[b];
    while (*pp && (*pp)->id != id) pp = &(*pp)->next;
    if (!*pp) {
        if (create) {
            corr_entry *e = op_malloc(sizeof *e);
            if (e) {
                e->id = id;
                e->refs = 1;
                e->next = g_buckets[b];
                g_buckets[b] = e;
            }
        } else if (delta < 0) {
            retired = true; /* never tracked (tracing began later): retire it now */
        }
    } else if (delta > 0) {
        (*pp)->refs++;
    } else if (--(*pp)->refs == 0) {
        corr_entry *e = *pp;
        *pp = e->next;
        op_free(e);
        retired = true;
    }
    pthread_mutex_unlock(mx);
    return retired;
}

void op_sdk_correlation_begin(omniprof_correlation_id_t *corr)
{
    if (!corr) return;
    uint64_t id = atomic_fetch_add_explicit(&g_next_id, 1, memory_order_relaxed);
    op_tls *t = op_tls_get();
    corr->internal = id;
    corr->external.value = 0;
    corr->ancestor = 0;
    if (t) {
        if (t->corr_depth > 0 && t->corr_depth <= OP_SDK_CORR_STACK) corr->ancestor = t->corr_stack[t->corr_depth - 1];
        if (t->corr_depth < OP_SDK_CORR_STACK) t->corr_stack[t->corr_depth] = id;
        t->corr_depth++;
    }
    if (retirement_traced()) adjust(id, +1, true);
}

void op_sdk_correlation_end(const omniprof_correlation_id_t *corr)
{
    if (!corr) return;
    op_tls *t = op_tls_peek();
    if (t && t->corr_depth > 0) t->corr_depth--;
    if (retirement_traced() && adjust(corr->internal, -1, false)) emit_retirement(corr->internal);
}

void op_sdk_correlation_retain(uint64_t internal)
{
    if (internal && retirement_traced()) adjust(internal, +1, true);
}

void op_sdk_correlation_release(uint64_t internal)
{
    if (internal && retirement_traced() && adjust(internal, -1, false)) emit_retirement(internal);
}

void op_correlation_retire_all(void)
{
    for (int s = 0; s < NSTRIPES; s++) pthread_mutex_lock(&g_stripes[s]);
    corr_entry *list = NULL;
    for (int b = 0; b < NBUCKETS; b++) {
        while (g_buckets[b]) {
            corr_entry *e = g_buckets[b];
            g_buckets[b] = e->next;
            e->next = list;
            list = e;
        }
    }
    for (int s = NSTRIPES - 1; s >= 0; s--) pthread_mutex_unlock(&g_stripes[s]);
    while (list) {
        corr_entry *e = list;
        list = e->next;
        emit_retirement(e->id);
        op_free(e);
    }
}

void op_correlation_prefork(void)
{
    for (int s = 0; s < NSTRIPES; s++) pthread_mutex_lock(&g_stripes[s]);
}
void op_correlation_postfork(void)
{
    for (int s = NSTRIPES - 1; s >= 0; s--) pthread_mutex_unlock(&g_stripes[s]);
}
void op_correlation_at_fork_child(void)
{
    for (int s = 0; s < NSTRIPES; s++) pthread_mutex_init(&g_stripes[s], NULL);
}

/* ------------------------------------------------------------------------------------------ */
/* External correlation                                                                        */

int op_sdk_external_in_use(void) { return atomic_load_explicit(&g_op_ext_used, memory_order_acquire); }

bool op_ext_top(int ci, omniprof_user_data_t *out)
{
    if (!atomic_load_explicit(&g_op_ext_used, memory_order_relaxed)) {
        out->value = 0;
        return false;
    }
    op_tls *t = op_tls_peek();
    if (t && t->ext[ci]) {
        if (t->ext[ci]->depth == 0) { out->value = 0; return false; }
        *out = t->ext[ci]->v[t->ext[ci]->depth - 1];
        return true;
    }
    if (atomic_load_explicit(&g_main_depth[ci], memory_order_acquire) == 0) { out->value = 0; return false; }
    out->value = atomic_load_explicit(&g_main_top[ci], memory_order_relaxed);
    return true;
}

static omniprof_status_t ext_check(omniprof_context_id_t context, omniprof_thread_id_t tid, int *ci, op_tls **t)
{
    *ci = op_context_index(context);
    if (*ci < 0) return OMNIPROF_STATUS_ERROR_CONTEXT_NOT_FOUND;
    if (tid != op_tid()) return OMNIPROF_STATUS_ERROR_THREAD_NOT_FOUND;
    *t = op_tls_get();
    if (!*t) return OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_push_external_correlation_id(omniprof_context_id_t context,
                                                                     omniprof_thread_id_t tid,
                                                                     omniprof_user_data_t external_correlation_id)
{
    int ci;
    op_tls *t;
    omniprof_status_t st = ext_check(context, tid, &ci, &t);
    if (st != OMNIPROF_STATUS_SUCCESS) return st;
    op_ext_stack *s = t->ext[ci];
    if (!s) {
        s = op_calloc(1, sizeof *s);
        if (!s) return OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
        t->ext[ci] = s;
    }
    if (s->depth == s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 8;
        omniprof_user_data_t *v = op_realloc(s->v, cap * sizeof *v);
        if (!v) return OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->depth++] = external_correlation_id;
    if (!atomic_exchange(&g_op_ext_used, 1)) {
        op_route_changed();          /* records of kinds with a correlation id take emit's full path now */
        op_backends_context_change(); /* backends may need launch capture now */
    }
    if (op_is_main_thread()) {
        atomic_store(&g_main_top[ci], external_correlation_id.value);
        atomic_store_explicit(&g_main_depth[ci], s->depth, memory_order_release);
    }
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_pop_external_correlation_id(omniprof_context_id_t context,
                                                                    omniprof_thread_id_t tid,
                                                                    omniprof_user_data_t *external_correlation_id)
{
    int ci;
    op_tls *t;
    omniprof_status_t st = ext_check(context, tid, &ci, &t);
    if (st != OMNIPROF_STATUS_SUCCESS) return st;
    op_ext_stack *s = t->ext[ci];
    if (!s || s->depth == 0) return OMNIPROF_STATUS_ERROR;
    omniprof_user_data_t v = s->v[--s->depth];
    if (external_correlation_id) *external_correlation_id = v;
    if (op_is_main_thread()) {
        if (s->depth) atomic_store(&g_main_top[ci], s->v[s->depth - 1].value);
        atomic_store_explicit(&g_main_depth[ci], s->depth, memory_order_release);
    }
    return OMNIPROF_STATUS_SUCCESS;
}
