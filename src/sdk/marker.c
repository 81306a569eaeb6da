/* marker.c — the SDK's implementation of the user API (include/omniprof/user.h), installed
 * into libomniprof-user's dispatch table by omniprof_set_api_table("user", ...).
 *
 * Each call becomes one MARKER_API record (operation from omniprof_marker_operation_t, the
 * message inline, truncated to OMNIPROF_MARKER_MESSAGE_MAX-1 bytes ending in "..."), with its
 * own correlation id and MARKER_API callbacks around it. Each completed push/pop pair,
 * start/stop pair and each mark also yields one MARKER_RANGE_API record carrying start and
 * end timestamps, the nesting level (0 = outermost), the range id and both thread ids; its
 * correlation id is that of the call that closed the range (so the id is live when the
 * record is emitted).
 *
 * Thread ranges are kept on a per-thread stack whatever the tracing state, so return values
 * and pairing do not depend on when a context starts; process ranges are kept in a table keyed
 * by id (ids process-wide, from 1) only while range tracing is on. pause/resume set the flag
 * that op_sdk_emit tests: the PAUSE record is the last one before it, RESUME the first after.
 *
 * Progress points: progress, progress_begin/end and every range start are also handed to the
 * progress hook a backend set (op_sdk_set_progress_hook: the causal engine of the CPU backend),
 * whatever the tracing state. */
#include "sdk/sdk_internal.h"

#include <stddef.h>
#include <string.h>

#include "common/alloc.h"
#include "common/clock.h"

typedef struct call_state {
    omniprof_correlation_id_t corr;
    op_sdk_callback_state cs;
} call_state;

typedef struct marker_buf {
    omniprof_buffer_tracing_marker_record_t rec;
    char text[OMNIPROF_MARKER_MESSAGE_MAX + 8];
} marker_buf;
_Static_assert(offsetof(marker_buf, text) == offsetof(omniprof_buffer_tracing_marker_record_t, message),
               "the text is the record's inline message");

static _Atomic uint64_t g_next_range_id = 1;

typedef struct proc_range {
    uint64_t id, start, tid;
    char *message;
    struct proc_range *next;
} proc_range;
#define RANGE_BUCKETS 256
static proc_range *g_ranges[RANGE_BUCKETS];
static pthread_mutex_t g_range_lock = PTHREAD_MUTEX_INITIALIZER;

static _Atomic(op_sdk_progress_fn) g_progress_hook;

void op_sdk_set_progress_hook(op_sdk_progress_fn fn) { atomic_store_explicit(&g_progress_hook, fn, memory_order_release); }

void op_sdk_progress(int type, const char *name)
{
    op_sdk_progress_fn fn = atomic_load_explicit(&g_progress_hook, memory_order_acquire);
    if (fn) fn(type, name);
}

static bool kind_on(uint32_t kind)
{
    return (atomic_load_explicit(&g_op_buffer_kind_mask[kind], memory_order_acquire) &
            atomic_load_explicit(&g_op_active_mask, memory_order_relaxed)) != 0;
}

static bool tracing_on(void)
{
    if (atomic_load_explicit(&g_op_paused, memory_order_relaxed)) return false;
    if (op_sdk_state() >= OP_STATE_FINALIZING) return false;
    return kind_on(OMNIPROF_BUFFER_TRACING_MARKER_API) || kind_on(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API) ||
           (atomic_load_explicit(&g_op_callback_kind_mask[OMNIPROF_CALLBACK_TRACING_MARKER_API], memory_order_acquire) &
            atomic_load_explicit(&g_op_active_mask, memory_order_relaxed));
}

void op_sdk_marker_record_fill(omniprof_buffer_tracing_marker_record_t *r, uint32_t kind, int32_t op,
                               const op_sdk_marker_span *span, uint32_t source, const char *msg, size_t cap)
{
    memset(r, 0, sizeof *r);
    size_t len = msg ? strnlen(msg, cap) : 0;
    if (len >= cap) {
        len = cap - 1;
        memcpy(r->message, msg, len - 3);
        memcpy(r->message + len - 3, "...", 3);
    } else {
        memcpy(r->message, msg ? msg : "", len);
    }
    r->message[len] = '\0';
    r->size = sizeof *r + len + 1;
    r->kind = kind;
    r->operation = op;
    r->start_timestamp = span->start;
    r->end_timestamp = span->end;
    r->thread_id = span->tid;
    r->end_thread_id = span->end_tid;
    r->range_id = span->range_id;
    r->nesting_level = span->nesting;
    r->source = source;
    r->message_length = (uint32_t)len;
}

static void fill(marker_buf *m, uint32_t kind, int32_t op, uint64_t start, uint64_t end, uint64_t tid,
                 uint64_t end_tid, uint64_t range_id, int32_t nesting, const char *msg)
{
    op_sdk_marker_span span = {start, end, tid, end_tid, range_id, nesting};
    op_sdk_marker_record_fill(&m->rec, kind, op, &span, OMNIPROF_MARKER_SOURCE_USER_API, msg,
                              OMNIPROF_MARKER_MESSAGE_MAX);
}

static void call_begin(call_state *c, int32_t op, marker_buf *m)
{
    op_sdk_correlation_begin(&c->corr);
    m->rec.correlation_id = c->corr;
    op_sdk_callback_enter(OMNIPROF_CALLBACK_TRACING_MARKER_API, op, &c->corr, &m->rec, &c->cs);
}

static void call_end(call_state *c, int32_t op, marker_buf *m)
{
    op_sdk_callback_exit(OMNIPROF_CALLBACK_TRACING_MARKER_API, op, &c->corr, &m->rec, &c->cs);
    op_sdk_correlation_end(&c->corr);
}

/* One MARKER_API record for an instant call. */
static void simple_call(int32_t op, const char *msg, uint64_t range_id, int32_t nesting)
{
    marker_buf m;
    call_state c;
    uint64_t now = op_now_ns(), tid = op_tid();
    fill(&m, OMNIPROF_BUFFER_TRACING_MARKER_API, op, now, now, tid, tid, range_id, nesting, msg);
    call_begin(&c, op, &m);
    op_sdk_emit(OMNIPROF_BUFFER_TRACING_MARKER_API, op, &m.rec, NULL);
    call_end(&c, op, &m);
}

static void sdk_mark(const char *message)
{
    if (!tracing_on()) return;
    marker_buf m;
    call_state c;
    uint64_t now = op_now_ns(), tid = op_tid();
    fill(&m, OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK, now, now, tid, tid, 0, -1, message);
    call_begin(&c, OMNIPROF_MARKER_OP_MARK, &m);
    op_sdk_emit(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK, &m.rec, NULL);
    m.rec.kind = OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API;
    m.rec.operation = OMNIPROF_MARKER_RANGE_OP_MARK;
    op_sdk_emit(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, OMNIPROF_MARKER_RANGE_OP_MARK, &m.rec, NULL);
    m.rec.kind = OMNIPROF_BUFFER_TRACING_MARKER_API;
    m.rec.operation = OMNIPROF_MARKER_OP_MARK;
    call_end(&c, OMNIPROF_MARKER_OP_MARK, &m);
}

static int sdk_range_push(const char *message)
{
    if (!message) return -1;
    op_tls *t = op_tls_get();
    if (!t) return -1;
    if (t->range_depth == t->range_cap) {
        uint32_t cap = t->range_cap ? t->range_cap * 2 : 16;
        op_range_entry *r = op_realloc(t->ranges, cap * sizeof *r);
        if (!r) return -1;
        t->ranges = r;
        t->range_cap = cap;
    }
    int level = (int)t->range_depth;
    op_sdk_progress(4, message);
    op_range_entry *e = &t->ranges[t->range_depth++];
    e->start = op_now_ns();
    e->corr = 0;
    e->message = NULL;
    if (tracing_on()) {
        if (kind_on(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API)) e->message = op_strdup(message);
        marker_buf m;
        call_state c;
        uint64_t tid = op_tid();
        fill(&m, OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_RANGE_PUSH, e->start, e->start, tid, tid, 0,
             level, message);
        call_begin(&c, OMNIPROF_MARKER_OP_RANGE_PUSH, &m);
        op_sdk_emit(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_RANGE_PUSH, &m.rec, NULL);
        call_end(&c, OMNIPROF_MARKER_OP_RANGE_PUSH, &m);
    }
    return level;
}

static int sdk_range_pop(void)
{
    op_tls *t = op_tls_get();
    if (!t || t->range_depth == 0) return -1;
    op_range_entry e = t->ranges[--t->range_depth];
    int level = (int)t->range_depth;
    if (tracing_on()) {
        marker_buf m;
        call_state c;
        uint64_t now = op_now_ns(), tid = op_tid();
        fill(&m, OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_RANGE_POP, now, now, tid, tid, 0, level,
             e.message ? e.message : "");
        call_begin(&c, OMNIPROF_MARKER_OP_RANGE_POP, &m);
        op_sdk_emit(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_RANGE_POP, &m.rec, NULL);
        if (e.message) {
            marker_buf r;
            fill(&r, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, OMNIPROF_MARKER_RANGE_OP_THREAD_RANGE, e.start, now, tid,
                 tid, 0, level, e.message);
            r.rec.correlation_id = c.corr;
            op_sdk_emit(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, OMNIPROF_MARKER_RANGE_OP_THREAD_RANGE, &r.rec, NULL);
        }
        call_end(&c, OMNIPROF_MARKER_OP_RANGE_POP, &m);
    }
    op_free(e.message);
    return level;
}

static omniprof_range_id_t sdk_range_start(const char *message)
{
    uint64_t id = atomic_fetch_add(&g_next_range_id, 1);
    op_sdk_progress(4, message);
    if (!tracing_on()) return id;
    uint64_t now = op_now_ns(), tid = op_tid();
    if (kind_on(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API)) {
        proc_range *p = op_malloc(sizeof *p);
        if (p) {
            p->id = id;
            p->start = now;
            p->tid = tid;
            p->message = op_strdup(message ? message : "");
            pthread_mutex_lock(&g_range_lock);
            p->next = g_ranges[id % RANGE_BUCKETS];
            g_ranges[id % RANGE_BUCKETS] = p;
            pthread_mutex_unlock(&g_range_lock);
        }
    }
    marker_buf m;
    call_state c;
    fill(&m, OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_RANGE_START, now, now, tid, tid, id, -1, message);
    call_begin(&c, OMNIPROF_MARKER_OP_RANGE_START, &m);
    op_sdk_emit(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_RANGE_START, &m.rec, NULL);
    call_end(&c, OMNIPROF_MARKER_OP_RANGE_START, &m);
    return id;
}

static void sdk_range_stop(omniprof_range_id_t id)
{
    proc_range *p = NULL;
    if (id) {
        pthread_mutex_lock(&g_range_lock);
        proc_range **pp = &g_ranges[id % RANGE_BUCKETS];
        while (*pp && (*pp)->id != id) pp = &(*pp)->next;
        if (*pp) {
            p = *pp;
            *pp = p->next;
        }
        pthread_mutex_unlock(&g_range_lock);
    }
    if (tracing_on()) {
        marker_buf m;
        call_state c;
        uint64_t now = op_now_ns(), tid = op_tid();
        fill(&m, OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_RANGE_STOP, now, now, tid, tid, id, -1,
             p ? p->message : "");
        call_begin(&c, OMNIPROF_MARKER_OP_RANGE_STOP, &m);
        op_sdk_emit(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_RANGE_STOP, &m.rec, NULL);
        if (p) {
            marker_buf r;
            fill(&r, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, OMNIPROF_MARKER_RANGE_OP_PROCESS_RANGE, p->start, now,
                 p->tid, tid, id, -1, p->message);
            r.rec.correlation_id = c.corr;
            op_sdk_emit(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, OMNIPROF_MARKER_RANGE_OP_PROCESS_RANGE, &r.rec, NULL);
        }
        call_end(&c, OMNIPROF_MARKER_OP_RANGE_STOP, &m);
    }
    if (p) {
        op_free(p->message);
        op_free(p);
    }
}

/* A pause first has the backends deliver what they hold (GPU records of work done before it,
 * which arrive asynchronously, would otherwise be dropped as paused), then tells them, so that
 * they stop collecting at the source (the CUDA backend turns CUPTI's activity kinds off: a paused
 * process does not keep paying most of CUPTI's cost per launch); a resume turns them on again
 * before its marker. */
static void sdk_pause(void)
{
    if (tracing_on()) simple_call(OMNIPROF_MARKER_OP_PAUSE, "", 0, -1);
    if (atomic_load(&g_op_paused)) return;
    if (!op_sdk_is_finalizing()) op_backends_flush();
    atomic_store(&g_op_paused, 1);
    op_route_changed();
    if (!op_sdk_is_finalizing()) op_backends_context_change();
}

static void sdk_resume(void)
{
    if (atomic_exchange(&g_op_paused, 0)) {
        op_route_changed();
        if (!op_sdk_is_finalizing()) op_backends_context_change();
    }
    if (tracing_on()) simple_call(OMNIPROF_MARKER_OP_RESUME, "", 0, -1);
}

int op_sdk_is_paused(void) { return atomic_load(&g_op_paused); }

void op_sdk_set_paused(int paused)
{
    if (paused) sdk_pause();
    else sdk_resume();
}

static void sdk_name_thread(const char *name)
{
    if (tracing_on()) simple_call(OMNIPROF_MARKER_OP_NAME_THREAD, name, 0, -1);
}
static void sdk_progress(const char *name)
{
    op_sdk_progress(1, name);
    if (tracing_on()) simple_call(OMNIPROF_MARKER_OP_PROGRESS, name, 0, -1);
}
static void sdk_progress_begin(const char *name)
{
    op_sdk_progress(2, name);
    if (tracing_on()) simple_call(OMNIPROF_MARKER_OP_PROGRESS_BEGIN, name, 0, -1);
}
static void sdk_progress_end(const char *name)
{
    op_sdk_progress(3, name);
    if (tracing_on()) simple_call(OMNIPROF_MARKER_OP_PROGRESS_END, name, 0, -1);
}

#define HAS(t, field) ((t)->size >= offsetof(omniprof_user_api_table_t, field) + sizeof((t)->field))

void op_marker_fill_table(omniprof_user_api_table_t *t)
{
    if (!t) return;
    if (HAS(t, mark)) t->mark = sdk_mark;
    if (HAS(t, range_push)) t->range_push = sdk_range_push;
    if (HAS(t, range_pop)) t->range_pop = sdk_range_pop;
    if (HAS(t, range_start)) t->range_start = sdk_range_start;
    if (HAS(t, range_stop)) t->range_stop = sdk_range_stop;
    if (HAS(t, pause)) t->pause = sdk_pause;
    if (HAS(t, resume)) t->resume = sdk_resume;
    if (HAS(t, name_thread)) t->name_thread = sdk_name_thread;
    if (HAS(t, progress)) t->progress = sdk_progress;
    if (HAS(t, progress_begin)) t->progress_begin = sdk_progress_begin;
    if (HAS(t, progress_end)) t->progress_end = sdk_progress_end;
}
