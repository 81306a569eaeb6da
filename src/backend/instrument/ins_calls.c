/* ins_calls.c — the instrumented-function table, per-thread shadow stacks and FUNCTION_CALL
 * records, shared by every method.
 *
 * A method reports "thread T entered function F at time t" and "T returned from F at t"; the
 * shadow stack of T turns those into one record per call with inclusive time (end - start) and
 * exclusive time (less the inclusive time of the instrumented calls it made). In-thread methods
 * (compiler hooks, audit) use the calling thread's own stack; the uprobe reader keeps one
 * stack per thread id it has seen.
 *
 * Matching rules (invariants):
 *  (1) an exit pops the innermost frame of the same function; frames above it were left
 *      without a return (longjmp, an exception through uninstrumented code) and are dropped;
 *  (2) an exit with no frame of its function is ignored (the call began before collection did:
 *      attach, or a method that started late);
 *  (3) entries deeper than OP_INS_MAX_DEPTH are counted in `overflow` and their exits consume
 *      that count first, so the frames kept stay correctly paired;
 *  (4) function ids are table indexes, assigned once and never reused; an entry's fields are
 *      written before its pointer is published (release) and read after an acquire load.
 *
 * Throttling: when OMNIPROF_INSTRUMENT_THROTTLE is set ("CALLS:NS"), a function not named by an
 * include regex that has finished CALLS calls with a mean inclusive time below NS is disabled:
 * its later calls are not recorded (the uprobe method also turns its probes off, the in-thread
 * methods skip it at entry). The records already made stay; the summary names such functions. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/instrument/ins_internal.h"
#include "common/alloc.h"
#include "common/clock.h"
#include "common/log.h"
#include "sdk/backend.h"

static pthread_mutex_t g_table_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(op_ins_func *) *g_table;
static uint32_t g_table_cap;
static _Atomic uint32_t g_table_n;
static _Atomic uint64_t g_dropped_depth;

int op_ins_func_add(const char *name, const char *module, uint64_t address, bool forced, int method)
{
    pthread_mutex_lock(&g_table_lock);
    if (!g_table) {
        g_table_cap = (uint32_t)(g_op_ins_cfg.max_functions ? g_op_ins_cfg.max_functions : 4096);
        g_table = op_calloc(g_table_cap, sizeof *g_table);
    }
    uint32_t n = atomic_load(&g_table_n);
    for (uint32_t i = 0; g_table && i < n; i++) /* the same function placed again (re-attach) */
        if (g_table[i]->address == address && g_table[i]->method == method) {
            pthread_mutex_unlock(&g_table_lock);
            return (int)i;
        }
    if (!g_table || n >= g_table_cap) {
        pthread_mutex_unlock(&g_table_lock);
        return -1;
    }
    op_ins_func *f = op_calloc(1, sizeof *f);
    if (!f) {
        pthread_mutex_unlock(&g_table_lock);
        return -1;
    }
    f->name = op_sdk_intern(name);
    f->module = op_sdk_intern(module ? module : "");
    f->address = address;
    f->forced = forced;
    f->method = method;
    f->probe_index = -1;
    atomic_store_explicit(&g_table[n], f, memory_order_release); /* invariant (4) */
    atomic_store_explicit(&g_table_n, n + 1, memory_order_release);
    pthread_mutex_unlock(&g_table_lock);
    return (int)n;
}

op_ins_func *op_ins_func_get(uint32_t id)
{
    if (id >= atomic_load_explicit(&g_table_n, memory_order_acquire)) return NULL;
    return atomic_load_explicit(&g_table[id], memory_order_acquire);
}

uint32_t op_ins_func_count(void) { return atomic_load_explicit(&g_table_n, memory_order_acquire); }
uint64_t op_ins_dropped_depth(void) { return atomic_load(&g_dropped_depth); }

/* ---------------------------------------------------------------------------------------- */
/* Shadow stacks.                                                                           */

static void emit(const op_ins_stack *s, const op_ins_frame *fr, uint32_t depth, uint64_t end, uint32_t flags)
{
    op_ins_func *f = op_ins_func_get(fr->func);
    if (!f) return;
    int method = f->method;
    if ( !op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_FUNCTION_CALL, method)) return;
    uint64_t incl = end > fr->start ? end - fr->start : 0;
    omniprof_function_call_record_t rec = {
        .size = sizeof rec,
        .kind = OMNIPROF_BUFFER_TRACING_FUNCTION_CALL,
        .operation = method,
        .start_timestamp = fr->start,
        .end_timestamp = end,
        .thread_id = s->tid,
        .exclusive_ns = incl > fr->child_ns ? incl - fr->child_ns : 0,
        .function = f->name,
        .module = f->module,
        .address = f->address,
        .depth = depth,
        .flags = flags,
    };
    op_sdk_emit(OMNIPROF_BUFFER_TRACING_FUNCTION_CALL, method, &rec, NULL);
}

static void throttle(op_ins_func *f, uint64_t incl)
{
    uint64_t calls = atomic_fetch_add_explicit(&f->calls, 1, memory_order_relaxed) + 1;
    uint64_t total = atomic_fetch_add_explicit(&f->total_ns, incl, memory_order_relaxed) + incl;
    if (f->forced || !g_op_ins_cfg.throttle_calls || calls != g_op_ins_cfg.throttle_calls) return;
    if (total / calls >= g_op_ins_cfg.throttle_ns) return;
    if (atomic_exchange(&f->disabled, 1)) return;
    op_info("instrument: %s throttled after %llu calls (mean %llu ns < %llu ns per call)", f->name,
            (unsigned long long)calls, (unsigned long long)(total / calls),
            (unsigned long long)g_op_ins_cfg.throttle_ns);
    if (f->method == OMNIPROF_FUNCTION_CALL_UPROBE) op_ins_uprobe_disable_func(f);
}

void op_ins_stack_enter(op_ins_stack *s, uint32_t func, uint64_t ts)
{
    if (s->overflow || s->depth >= OP_INS_MAX_DEPTH) { /* invariant (3) */
        s->overflow++;
        atomic_fetch_add_explicit(&g_dropped_depth, 1, memory_order_relaxed);
        return;
    }
    op_ins_frame *fr = &s->frames[s->depth++];
    fr->func = func;
    fr->start = ts;
    fr->child_ns = 0;
}

void op_ins_stack_exit(op_ins_stack *s, uint32_t func, uint64_t ts)
{
    if (s->overflow) {
        s->overflow--;
        return;
    }
    uint32_t k = s->depth;
    while (k > 0 && s->frames[k - 1].func != func) k--;
    if (k == 0) return; /* invariant (2) */
    s->depth = k - 1;   /* invariant (1): frames above k-1 are dropped */
    op_ins_frame *fr = &s->frames[k - 1];
    uint64_t incl = ts > fr->start ? ts - fr->start : 0;
    if (s->depth > 0) s->frames[s->depth - 1].child_ns += incl;
    emit(s, fr, s->depth, ts, 0);
    op_ins_func *f = op_ins_func_get(func);
    if (f) throttle(f, incl);
}

bool op_ins_stack_holds(const op_ins_stack *s, uint32_t func)
{
    for (uint32_t k = s->depth; k > 0; k--)
        if (s->frames[k - 1].func == func) return true;
    return false;
}

void op_ins_stack_close(op_ins_stack *s, uint64_t ts)
{
    while (s->depth > 0) {
        op_ins_frame *fr = &s->frames[--s->depth];
        uint64_t incl = ts > fr->start ? ts - fr->start : 0;
        if (s->depth > 0) s->frames[s->depth - 1].child_ns += incl;
        emit(s, fr, s->depth, ts, OMNIPROF_FUNCTION_CALL_FLAG_UNFINISHED);
    }
    s->overflow = 0;
}

/* ---------------------------------------------------------------------------------------- */
/* In-thread stacks (compiler hooks, audit): one per thread, found through TLS.             */

typedef struct thread_stack {
    op_ins_stack stack;
    struct thread_stack *next, *prev;
} thread_stack;

/* initial-exec: no __tls_get_addr (and its malloc) on the audit method's path
 * (ins_audit_bridge.c) */
static __thread thread_stack *t_stack __attribute__((tls_model("initial-exec")));
/* a profiler thread, or no memory */
static __thread int t_no_stack __attribute__((tls_model("initial-exec")));
static pthread_mutex_t g_stacks_lock = PTHREAD_MUTEX_INITIALIZER;
static thread_stack *g_stacks;
static pthread_key_t g_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

static void unlink_stack(thread_stack *ts)
{
    pthread_mutex_lock(&g_stacks_lock);
    if (ts->prev) ts->prev->next = ts->next;
    else if (g_stacks == ts) g_stacks = ts->next;
    if (ts->next) ts->next->prev = ts->prev;
    ts->next = ts->prev = NULL;
    pthread_mutex_unlock(&g_stacks_lock);
}

/* A thread ends with calls open (pthread_exit inside an instrumented function). */
static void on_thread_exit(void *p)
{
    thread_stack *ts = p;
    if (!ts) return;
    op_ins_stack_close(&ts->stack, op_now_ns());
    unlink_stack(ts);
    t_stack = NULL;
    t_no_stack = 1;
    op_free(ts);
}

static void make_key(void) { pthread_key_create(&g_key, on_thread_exit); }

op_ins_stack *op_ins_thread_stack(void)
{
    thread_stack *ts = t_stack;
    if (ts) return &ts->stack;
    if (t_no_stack) return NULL;
    t_no_stack = 1; /* also guards against recursion through the allocator */
    if (op_sdk_thread_is_internal()) return NULL;
    ts = op_calloc(1, sizeof *ts);
    if (!ts) return NULL;
    ts->stack.tid = (uint64_t)syscall(SYS_gettid);
    pthread_once(&g_key_once, make_key);
    pthread_setspecific(g_key, ts);
    pthread_mutex_lock(&g_stacks_lock);
    ts->next = g_stacks;
    if (g_stacks) g_stacks->prev = ts;
    g_stacks = ts;
    pthread_mutex_unlock(&g_stacks_lock);
    t_stack = ts;
    t_no_stack = 0;
    return &ts->stack;
}

/* At stop: the calls still open on each thread are emitted as UNFINISHED. Another thread may
 * be inside its hooks meanwhile; the stacks stay allocated (they are the threads' own) and a
 * frame popped twice is harmless because emission is off by then (g_op_ins_active == 0). */
void op_ins_stacks_close_all(uint64_t ts)
{
    pthread_mutex_lock(&g_stacks_lock);
    for (thread_stack *t = g_stacks; t; t = t->next) {
        uint32_t depth = t->stack.depth;
        for (uint32_t i = depth; i > 0; i--) {
            op_ins_frame fr = t->stack.frames[i - 1];
            emit(&t->stack, &fr, i - 1, ts, OMNIPROF_FUNCTION_CALL_FLAG_UNFINISHED);
        }
    }
    pthread_mutex_unlock(&g_stacks_lock);
}
