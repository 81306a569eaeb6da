/* threads.c — the CPU backend's thread registry: the pthread_create wrapper, thread identity,
 * THREAD records, and the per-thread state the signal handler reads through TLS.
 *
 * Identity (cpu.h omniprof_thread_record_t):
 *   internal_value  creation order of every thread the process started through
 *                   pthread_create (the main thread is 0), counted in the creating thread when
 *                   pthread_create is called, so it is the order of the calls;
 *   sequent_value   for application threads their own creation order (main = 0, profiler
 *                   threads do not advance it: this is the index OMNIPROF_SAMPLING_TIDS uses);
 *                   for the profiler's threads OMNIPROF_SEQUENT_PROFILER_OFFSET + their order.
 * A thread is the profiler's when the code that called pthread_create lies in an omniprof
 * library (dladdr of the return address names a file "libomniprof-*"); such threads are never
 * sampled and get no THREAD record.
 *
 * Invariants:
 *   (1) op_cpu_tls_thread is set by the thread itself, before any of its timers exists, and
 *       cleared by the thread itself after they were deleted;
 *   (2) a thread is in the registry list from registration until op_cpu_thread_exit_self;
 *       its timers are armed only under g_registry_lock and only while it is listed, so a
 *       thread's exit (which unlinks it under the lock, then deletes its timers) never races
 *       with arming;
 *   (3) there is no fixed limit: the registry is a linked list, rings are mapped per thread.
 * The pthread_create hook (libomniprof-preload.so owns the symbol) keeps the program's behaviour: same return value and errno, the
 * start routine's return value passes through, and pthread_exit/cancellation still run the
 * program's cleanup handlers (ours is pushed first, so it runs last). */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"
#include "common/alloc.h"
#include "common/clock.h"
#include "common/fd_guard.h"
#include "common/log.h"
#include "sdk/backend.h"

OP_CPU_TLS op_cpu_thread *op_cpu_tls_thread;
OP_CPU_TLS int op_cpu_tls_guard;

static pthread_mutex_t g_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static op_cpu_thread *g_threads;         /* live threads, under g_registry_lock */
static uint64_t g_n_live;
static _Atomic uint64_t g_next_internal = 1; /* main = 0 */
static _Atomic uint64_t g_next_app = 1;
static _Atomic uint64_t g_next_profiler;

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static pthread_create_fn g_real_pthread_create;

static pid_t gettid_raw(void) { return (pid_t)syscall(SYS_gettid); }

int op_cpu_real_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    if (!g_real_pthread_create) g_real_pthread_create = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
    if (!g_real_pthread_create) return EAGAIN;
    return g_real_pthread_create(th, attr, fn, arg);
}

uint64_t op_cpu_threads_count(void)
{
    pthread_mutex_lock(&g_registry_lock);
    uint64_t n = g_n_live;
    pthread_mutex_unlock(&g_registry_lock);
    return n;
}

/* THREAD records are not emitted by the threads they describe: they are queued here (a
 * lock-free stack: push with CAS, the consumer takes the whole list with one exchange) and
 * emitted in batches by an allocator thread, the process sampler or a flush. So thousands of
 * short threads never each become an SDK producer (each would claim buffer space of its own),
 * and a starting thread never waits on a LOSSLESS buffer. */
typedef struct pending_rec {
    struct pending_rec *next;
    omniprof_thread_record_t rec;
} pending_rec;
static _Atomic(pending_rec *) g_pending;

void op_cpu_thread_emit_record(const op_cpu_thread *t, int op)
{
    if (t->is_internal || atomic_load(&g_op_cpu_stopping)) return;
    if (!op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_THREAD, op)) return;
    pending_rec *n = op_malloc(sizeof *n);
    if (!n) return;
    omniprof_thread_record_t *rec = &n->rec;
    memset(rec, 0, sizeof *rec);
    rec->size = sizeof *rec;
    rec->kind = OMNIPROF_BUFFER_TRACING_THREAD;
    rec->operation = op;
    rec->timestamp = op_now_ns();
    rec->thread_id = (omniprof_thread_id_t)t->tid;
    rec->parent_thread_id = (omniprof_thread_id_t)t->parent_tid;
    rec->internal_value = t->internal_value;
    rec->sequent_value = t->sequent_value;
    memcpy(rec->name, t->name, sizeof rec->name);
    rec->name[sizeof rec->name - 1] = 0;
    pending_rec *head = atomic_load_explicit(&g_pending, memory_order_relaxed);
    do {
        n->next = head;
    } while (!atomic_compare_exchange_weak_explicit(&g_pending, &head, n, memory_order_release, memory_order_relaxed));
}

void op_cpu_threads_emit_pending(void)
{
    pending_rec *list = atomic_exchange_explicit(&g_pending, NULL, memory_order_acquire);
    pending_rec *rev = NULL; /* oldest first */
    while (list) {
        pending_rec *next = list->next;
        list->next = rev;
        rev = list;
        list = next;
    }
    op_cpu_tls_guard++;
    while (rev) {
        pending_rec *next = rev->next;
        op_sdk_emit(OMNIPROF_BUFFER_TRACING_THREAD, rev->rec.operation, &rev->rec, NULL);
        op_free(rev);
        rev = next;
    }
    op_cpu_tls_guard--;
}

static op_cpu_thread *register_self(pid_t parent_tid, bool is_internal, const char *name, uint64_t internal_value,
                                    uint64_t sequent_value)
{
    op_cpu_thread *t = op_cpu_tls_thread;
    if (t) { /* already known (e.g. main): only rename */
        if (name) {
            strncpy(t->name, name, sizeof t->name - 1);
        }
        return t;
    }
    t = op_calloc(1, sizeof *t);
    if (!t) return NULL;
    t->pthread = pthread_self();
    t->tid = gettid_raw();
    t->parent_tid = parent_tid;
    t->is_internal = is_internal;
    t->internal_value = internal_value;
    t->sequent_value = sequent_value;
    t->perf_fd = -1;
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) t->clock_fd[i] = -1;
    op_causal_thread_init(t);
    atomic_store(&t->state, OP_CPU_THREAD_LIVE);
    if (name) {
        strncpy(t->name, name, sizeof t->name - 1);
    } else {
        char comm[17] = {0};
        if (prctl(PR_GET_NAME, comm, 0, 0, 0) == 0) memcpy(t->name, comm, sizeof comm);
    }
    if (!is_internal) {
        /* libunwind's trace cache (256 KiB made and cleared per thread, then unmapped at its
         * end) only for the call-stack sampler's walks; a causal-only run walks rarely (a
         * sample outside the scope) and does so without it: made for every thread, it cost
         * about 1 ms of CPU per thread on the loaded 2-core VM, on the critical path of a
         * program that starts threads every few ms (issue 35 item 2). Before the backend
         * started the settings are not known: made, as before. */
        if (!atomic_load(&g_op_cpu_started) || g_op_cpu_cfg.sampling)
            op_cpu_unwind_prewarm();
        else
            t->unwind_cold = true;
        op_cpu_thread_stack_bounds(t);
    }
    op_cpu_tls_thread = t; /* invariant (1) */
    pthread_mutex_lock(&g_registry_lock);
    t->next = g_threads;
    if (g_threads) g_threads->prev = t;
    g_threads = t;
    g_n_live++;
    if (atomic_load(&g_op_cpu_started) && g_op_cpu_cfg.sampling && !is_internal) op_cpu_sampler_thread_start(t);
    pthread_mutex_unlock(&g_registry_lock);
    return t;
}

/* The calling thread's stack, for the handler's stack copies (sampler.c): pthread_getattr_np
 * reads /proc/self/maps for the main thread and allocates, so never in a handler. Unknown
 * bounds (0) make the handler unwind in place. */
void op_cpu_thread_stack_bounds(op_cpu_thread *t)
{
    pthread_attr_t attr;
    void *addr = NULL;
    size_t size = 0;
    t->stack_lo = t->stack_hi = 0;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr && size) {
        t->stack_lo = (uint64_t)(uintptr_t)addr;
        t->stack_hi = t->stack_lo + size;
    }
    pthread_attr_destroy(&attr);
}

op_cpu_thread *op_cpu_thread_register_self(pid_t parent_tid, bool is_internal, const char *name)
{
    uint64_t iv = atomic_fetch_add(&g_next_internal, 1);
    uint64_t sv = is_internal ? OMNIPROF_SEQUENT_PROFILER_OFFSET + atomic_fetch_add(&g_next_profiler, 1)
                              : atomic_fetch_add(&g_next_app, 1);
    return register_self(parent_tid, is_internal, name, iv, sv);
}

void op_cpu_threads_init_main(void)
{
    if (op_cpu_tls_thread) return;
    register_self(0, false, NULL, 0, 0);
}

void op_cpu_thread_exit_self(void)
{
    op_cpu_thread *t = op_cpu_tls_thread;
    if (!t) return;
    op_cpu_region_thread_exit(t);
    op_causal_thread_end(t);
    op_cpu_thread_emit_record(t, OMNIPROF_THREAD_EXIT);
    pthread_mutex_lock(&g_registry_lock); /* invariant (2) */
    if (t->prev) t->prev->next = t->next;
    else if (g_threads == t) g_threads = t->next;
    if (t->next) t->next->prev = t->prev;
    t->next = t->prev = NULL;
    g_n_live--;
    pthread_mutex_unlock(&g_registry_lock);
    op_cpu_sampler_thread_stop(t);
    op_cpu_tls_thread = NULL;
    op_cpu_sampler_release(t);
}

void op_cpu_threads_foreach(void (*fn)(op_cpu_thread *t, void *data), void *data)
{
    pthread_mutex_lock(&g_registry_lock);
    for (op_cpu_thread *t = g_threads; t; t = t->next) fn(t, data);
    pthread_mutex_unlock(&g_registry_lock);
}

/* Fork child: the calling thread is the only one left and becomes thread 0 of the new
 * process. Other threads' entries are abandoned (their memory may be mid-update by a thread
 * that no longer exists; leaking it is the safe choice). */
void op_cpu_threads_at_fork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    g_registry_lock = fresh;
    atomic_store(&g_pending, NULL); /* the parent's queued records are the parent's */
    op_cpu_thread *self = op_cpu_tls_thread;
    /* other threads are gone: their perf fds (inherited, counting the parent's threads) are
     * closed; their memory is left alone */
    for (op_cpu_thread *t = g_threads; t; t = t->next) {
        if (t == self) continue;
        if (t->perf_fd >= 0)
            for (uint32_t i = 0; i < t->perf_n && i < OMNIPROF_CPU_SAMPLE_MAX_EVENTS; i++) op_fd_close(t->perf_fds[i]);
        for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) op_cpu_clock_forget(t, i);
    }
    g_threads = NULL;
    g_n_live = 0;
    atomic_store(&g_next_internal, 1);
    atomic_store(&g_next_app, 1);
    atomic_store(&g_next_profiler, 0);
    if (!self) {
        op_cpu_threads_init_main();
        return;
    }
    /* timers are not inherited by a child; the perf fds count the parent's thread */
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) op_cpu_clock_forget(self, i);
    if (self->perf_fd >= 0)
        for (uint32_t i = 0; i < self->perf_n; i++) op_fd_close(self->perf_fds[i]);
    self->perf_fd = -1;
    self->perf_n = 0;
    atomic_store(&self->active, 0);
    if (self->has_ring) munmap(self->ring.data, self->ring.cap); /* the parent's unsent samples */
    self->has_ring = false;
    self->allocator = NULL;
    self->alloc_next = NULL;
    self->next = self->prev = NULL;
    self->parent_tid = self->tid;
    self->tid = gettid_raw();
    self->pthread = pthread_self();
    self->internal_value = 0;
    self->sequent_value = 0;
    self->samples = 0;
    g_threads = self;
    g_n_live = 1;
}

/* ---------------------------------------------------------------------------------------- */
/* pthread_create wrapper.                                                                  */

typedef struct start_args {
    void *(*fn)(void *);
    void *arg;
    pid_t parent_tid;
    bool internal;
    uint64_t internal_value, sequent_value;
    uint64_t causal_delay; /* the creator's delay count (causal.c): the new thread starts with it */
} start_args;

static void trampoline_cleanup(void *unused)
{
    (void)unused;
    op_cpu_thread_exit_self();
}

/* every thread's outermost omniprof frame; sampled stacks leave it out (own_frames.c) */
static void *omniprof_thread_start(void *p)
{
    start_args a = *(start_args *)p;
    op_free(p);
    if (!a.internal) { /* our timers' signals must reach the thread even if its creator blocked all */
        sigset_t s;
        sigemptyset(&s);
        for (int i = 0; i < OP_CPU_TIMER_COUNT; i++)
            if (g_op_cpu_cfg.timer_on[i]) sigaddset(&s, g_op_cpu_cfg.signo[i]);
        pthread_sigmask(SIG_UNBLOCK, &s, NULL);
    }
    op_cpu_thread *t = register_self(a.parent_tid, a.internal, a.internal ? "omniprof" : NULL, a.internal_value,
                                     a.sequent_value);
    if (t) op_cpu_thread_emit_record(t, OMNIPROF_THREAD_CREATE);
    if (t) op_causal_thread_begin(t, a.causal_delay, true);
    void *ret;
    pthread_cleanup_push(trampoline_cleanup, NULL);
    ret = a.fn(a.arg);
    pthread_cleanup_pop(1);
    return ret;
}

static bool caller_is_omniprof(const void *ret_addr)
{
    Dl_info info;
    if (!ret_addr || !dladdr(ret_addr, &info) || !info.dli_fname) return false;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    return strncmp(base, "libomniprof", 11) == 0;
}

/* libomniprof-preload.so's pthread_create hook (it owns the symbol); `caller` is the return
 * address of the program's call, `real` libc's pthread_create. */
int op_cpu_pthread_create_hook(op_pthread_create_fn real, pthread_t *th, const pthread_attr_t *attr,
                               void *(*fn)(void *), void *arg, const void *caller)
{
    if (!g_real_pthread_create) g_real_pthread_create = real;
    start_args *a = op_malloc(sizeof *a);
    if (!a) return g_real_pthread_create(th, attr, fn, arg); /* keep the program going, unprofiled */
    a->fn = fn;
    a->arg = arg;
    a->parent_tid = gettid_raw();
    a->internal = op_cpu_tls_guard > 0 || caller_is_omniprof(caller);
    bool internal = a->internal;
    a->causal_delay = op_causal_parent_delay();
    a->internal_value = atomic_fetch_add(&g_next_internal, 1);
    a->sequent_value = a->internal ? OMNIPROF_SEQUENT_PROFILER_OFFSET + atomic_fetch_add(&g_next_profiler, 1)
                                   : atomic_fetch_add(&g_next_app, 1);
    if (!internal && atomic_load(&g_op_cpu_started) && g_op_cpu_cfg.sampling) {
        op_cpu_tls_guard++;
        op_cpu_sampler_prepare(op_cpu_threads_count() + 1);
        op_cpu_tls_guard--;
    }
    uint64_t t0 = op_now_ns();
    int rc = g_real_pthread_create(th, attr, omniprof_thread_start, a);
    int saved = errno;
    if (rc != 0) op_free(a); /* else the new thread owns a: never read it again here */
    if (rc == 0 && !internal && atomic_load(&g_op_cpu_started) &&
        op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER, OMNIPROF_FUNCTION_WRAPPER_PTHREAD_CREATE) &&
        op_cpu_tls_guard == 0) {
        omniprof_arg_t args[1] = {{.name = "thread", .type = OMNIPROF_ARG_TYPE_UINT, .value.u64 = (uint64_t)*th}};
        op_cpu_emit_wrapper(OMNIPROF_FUNCTION_WRAPPER_PTHREAD_CREATE, t0, op_now_ns(), rc, args, 1);
    }
    errno = saved;
    return rc;
}

/* The program named a thread (the preload library's pthread_setname_np, thread_named hook). */
void op_cpu_thread_named(pthread_t th, const char *name)
{
    if (op_cpu_tls_guard != 0) return;
    op_cpu_thread *found = NULL;
    pthread_mutex_lock(&g_registry_lock);
    for (op_cpu_thread *t = g_threads; t; t = t->next)
        if (pthread_equal(t->pthread, th)) {
            strncpy(t->name, name, sizeof t->name - 1);
            found = t;
            break;
        }
    pthread_mutex_unlock(&g_registry_lock);
    if (found && found == op_cpu_tls_thread && atomic_load(&g_op_cpu_started))
        op_cpu_thread_emit_record(found, OMNIPROF_THREAD_NAME);
}
