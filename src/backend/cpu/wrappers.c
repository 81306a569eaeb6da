/* wrappers.c — functions the CPU backend interposes (it is LD_PRELOADed) and the
 * FUNCTION_WRAPPER records they emit.
 *
 * The backend exports no libc or pthread symbol: the interposers live in the preload layer
 * (libomniprof-preload.so, always loaded first; libomniprof-sync.so, on demand), which calls
 * this backend's hooks (g_op_cpu_preload_hooks). A per-thread guard (op_cpu_tls_guard) makes
 * calls that the profiler itself makes inside a hook go straight to the real function.
 *
 *   fork, exit, _exit, _Exit, sigaction, signal, pthread_create
 *                    are owned by libomniprof-preload.so (src/preload/), which calls this
 *                    backend's hooks (g_op_cpu_preload_hooks): fork blocks the sampling
 *                    signals around the call, resets the backend in the child (threads, rings,
 *                    allocators, timers, process sampler; the tool's own atfork handler gives
 *                    the child its own database) and records the call in the parent; exit
 *                    drains the sample rings into the SDK before atexit handlers run; _exit and
 *                    _Exit record the call, then the preload library finalizes the SDK; a
 *                    program's sigaction on a sampling signal is recorded and chained
 *                    (sampler.c) instead of replacing ours; pthread_create is threads.c's.
 *   abort            deliberately NOT wrapped: abort() is often called in a broken state
 *                    (heap corruption, a lock held, a signal handler), where finalizing — or
 *                    even the dlsym of a wrapper — could allocate and hang the program; the
 *                    SIGABRT it raises is where the tool flushes, with a bounded wait
 *                    (OMNIPROF_SIGNAL_FLUSH_TIMEOUT_MS, src/tool/tool_signals.c).
 *   MPI_*            NOT here: the MPI backend (src/backend/mpi/) owns every MPI symbol; the
 *                    launcher preloads it with this backend, and it emits the MPI_Init/
 *                    MPI_Finalize FUNCTION_WRAPPER records (operation names from this file's
 *                    table) and exports the rank (OMNIPROF_MPI_RANK/SIZE, common/path_template.h).
 *   pthread_mutex_lock/trylock, pthread_rwlock_rdlock/wrlock, pthread_barrier_wait,
 *   pthread_join     interposed by libomniprof-sync.so (src/preload/sync/), which the launcher
 *                    loads only when OMNIPROF_TRACE_THREAD_{LOCKS,RW_LOCKS,BARRIERS,JOIN} are on
 *                    or for causal profiling (lock wrappers are where profilers deadlock);
 *                    each call it offers (call_begin/call_end hooks) becomes a FUNCTION_WRAPPER
 *                    region and a node of the region profile (components.c) when its setting
 *                    is on; causal profiling sees them as waits through its own hooks.
 *   setitimer        (the preload library's, self_profiling hook) for ITIMER_PROF/ITIMER_VIRTUAL,
 *                    and sigaction/signal for SIGPROF: one warning that the program profiles
 *                    itself too (both work: omniprof uses its own real-time signals). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/op_names.h"
#include "preload/preload.h"
#include "sdk/backend.h"

void op_cpu_backend_at_fork_child(void);

static bool g_wrap_locks, g_wrap_rwlocks, g_wrap_barriers, g_wrap_join;


void op_cpu_emit_wrapper(int32_t op, uint64_t start, uint64_t end, int32_t ret, const omniprof_arg_t *args,
                         uint32_t nargs)
{
    if (atomic_load(&g_op_cpu_stopping) || !op_cpu_window_open()) return;
    if (!op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER, op)) return;
    struct {
        omniprof_buffer_tracing_api_record_t rec;
        omniprof_arg_t args[4];
    } r;
    memset(&r, 0, sizeof r);
    if (nargs > 4) nargs = 4;
    op_cpu_tls_guard++;
    r.rec.size = sizeof r.rec + nargs * sizeof(omniprof_arg_t);
    r.rec.kind = OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER;
    r.rec.operation = op;
    op_sdk_correlation_begin(&r.rec.correlation_id);
    r.rec.start_timestamp = start;
    r.rec.end_timestamp = end;
    r.rec.thread_id = op_cpu_tls_thread ? (omniprof_thread_id_t)op_cpu_tls_thread->tid : (omniprof_thread_id_t)gettid();
    r.rec.num_args = nargs;
    r.rec.return_value = ret;
    for (uint32_t i = 0; i < nargs; i++) r.args[i] = args[i];
    op_sdk_emit(OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER, op, &r.rec, NULL);
    op_sdk_correlation_end(&r.rec.correlation_id);
    op_cpu_tls_guard--;
}

/* ---------------------------------------------------------------------------------------- */
/* fork, process end and the program's sigaction: hooks of libomniprof-preload.so, which owns  */
/* those symbols (src/preload/preload.h).                                                      */

static void fork_prepare(op_preload_fork_state *st)
{
    sigset_t block;
    sigemptyset(&block);
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++)
        if (g_op_cpu_cfg.timer_on[i]) sigaddset(&block, g_op_cpu_cfg.signo[i]);
    st->masked = pthread_sigmask(SIG_BLOCK, &block, &st->mask) == 0;
    st->t0 = op_now_ns();
    op_cpu_sampler_fork_prepare();
}

static void fork_parent(op_preload_fork_state *st, pid_t pid)
{
    op_cpu_sampler_fork_parent();
    if (pid > 0 && atomic_load(&g_op_cpu_started)) {
        omniprof_arg_t args[1] = {{.name = "child", .type = OMNIPROF_ARG_TYPE_INT, .value.i64 = pid}};
        op_cpu_emit_wrapper(OMNIPROF_FUNCTION_WRAPPER_FORK, st->t0, op_now_ns(), pid, args, 1);
    }
    if (st->masked) pthread_sigmask(SIG_SETMASK, &st->mask, NULL);
}

static void fork_child(op_preload_fork_state *st)
{
    op_cpu_backend_at_fork_child();
    if (st->masked) pthread_sigmask(SIG_SETMASK, &st->mask, NULL);
}

/* exit: the samples still in the rings go to the SDK before atexit handlers finalize it;
 * _exit/_Exit: the preload library finalizes the SDK after this. */
static void process_end(op_preload_end how, int status)
{
    if (!atomic_load(&g_op_cpu_started) || atomic_load(&g_op_cpu_stopping) || getpid() != g_op_cpu_pid) return;
    op_causal_flush(true); /* causal mode: experiments end here, before the atexit handlers */
    uint64_t t = op_now_ns();
    if (how == OP_PRELOAD_END_EXIT) op_cpu_sampler_drain_all();
    omniprof_arg_t args[1] = {{.name = "status", .type = OMNIPROF_ARG_TYPE_INT, .value.i64 = status}};
    op_cpu_emit_wrapper(how == OP_PRELOAD_END_EXIT ? OMNIPROF_FUNCTION_WRAPPER_EXIT : OMNIPROF_FUNCTION_WRAPPER__EXIT, t,
                        t, 0, args, 1);
}

static void warn_self_profiling(const char *what)
{
    static _Atomic int warned;
    if (atomic_exchange(&warned, 1)) return;
    op_warn("cpu: the program uses %s for its own profiling; omniprof samples with real-time signals "
            "(SIGRTMIN+%d/+%d) and leaves SIGPROF to the program, so both work",
            what, g_op_cpu_cfg.signo[0] ? g_op_cpu_cfg.signo[0] - SIGRTMIN : 4,
            g_op_cpu_cfg.signo[1] ? g_op_cpu_cfg.signo[1] - SIGRTMIN : 5);
}

/* The sampling signals are the backend's: the program's handler is recorded and chained
 * (sampler.c). SIGPROF only gets a warning and goes on to the next owner. */
static bool sigaction_hook(int signo, const struct sigaction *act, struct sigaction *old, int *rc)
{
    if (op_cpu_tls_guard == 0 &&
        (op_cpu_sampler_chain_sigaction(signo, act, old) || op_causal_chain_sigaction(signo, act, old))) {
        *rc = 0;
        return true;
    }
    if (signo == SIGPROF && act && op_cpu_tls_guard == 0 &&
        ((act->sa_flags & SA_SIGINFO) || (act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN)))
        warn_self_profiling("a SIGPROF handler");
    return false;
}

/* dlclose: the samples waiting in the rings are unwound while the library is still mapped
 * (allocators busy right now are skipped: never wait here, the program may hold the loader's
 * lock), and modules.c notes the modules that went. */
static void dlclose_before(void *handle)
{
    (void)handle;
    if (!atomic_load_explicit(&g_op_cpu_started, memory_order_acquire) || !g_op_cpu_cfg.sampling) return;
    op_cpu_sampler_drain_try();
    op_cpu_modules_dlclose_before();
}

static void dlclose_after(void *handle, int rc)
{
    (void)handle;
    (void)rc;
    op_cpu_modules_dlclose_after();
}

static bool call_begin(int op, uint64_t *t0);
static void call_end(int op, uint64_t t0, int rc);
static void self_profiling(const char *what);

const op_preload_hooks g_op_cpu_preload_hooks = {
    .size = sizeof(op_preload_hooks),
    .name = "cpu",
    .order = 0,
    .pthread_create = op_cpu_pthread_create_hook,
    .fork_prepare = fork_prepare,
    .fork_parent = fork_parent,
    .fork_child = fork_child,
    .process_end = process_end,
    .sigaction = sigaction_hook,
    .dlclose_before = dlclose_before,
    .dlclose_after = dlclose_after,
    .call_begin = call_begin,
    .call_end = call_end,
    .self_profiling = self_profiling,
    .thread_named = op_cpu_thread_named,
    .before_exec = op_cpu_sampler_before_exec,
    .exec_failed = op_cpu_sampler_exec_failed,
};

/* ---------------------------------------------------------------------------------------- */
/* Lock calls (libomniprof-sync.so's interposers; recorded only when asked: off by default).   */

static bool traced(int op)
{
    switch (op) {
    case OMNIPROF_FUNCTION_WRAPPER_PTHREAD_MUTEX_LOCK:
    case OMNIPROF_FUNCTION_WRAPPER_PTHREAD_MUTEX_TRYLOCK: return g_wrap_locks;
    case OMNIPROF_FUNCTION_WRAPPER_PTHREAD_RWLOCK_RDLOCK:
    case OMNIPROF_FUNCTION_WRAPPER_PTHREAD_RWLOCK_WRLOCK: return g_wrap_rwlocks;
    case OMNIPROF_FUNCTION_WRAPPER_PTHREAD_BARRIER_WAIT: return g_wrap_barriers;
    case OMNIPROF_FUNCTION_WRAPPER_PTHREAD_JOIN: return g_wrap_join;
    default: return false;
    }
}

/* The call becomes a FUNCTION_WRAPPER record and a node of the region profile; the guard sends
 * the profiler's own calls meanwhile straight to libc. */
static bool call_begin(int op, uint64_t *t0)
{
    if (!traced(op) || op_cpu_tls_guard != 0 || !atomic_load(&g_op_cpu_started) || atomic_load(&g_op_cpu_stopping))
        return false;
    op_cpu_tls_guard++;
    op_cpu_region_push(op_fixed_operation_name(OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER, op));
    *t0 = op_now_ns();
    return true;
}

static void call_end(int op, uint64_t t0, int rc)
{
    uint64_t t1 = op_now_ns();
    op_cpu_region_pop();
    op_cpu_tls_guard--;
    op_cpu_emit_wrapper(op, t0, t1, rc, NULL, 0);
}

static void self_profiling(const char *what) { warn_self_profiling(what); }

void op_cpu_wrappers_init(void)
{
    g_wrap_locks = g_op_cpu_cfg.trace_locks;
    g_wrap_rwlocks = g_op_cpu_cfg.trace_rwlocks;
    g_wrap_barriers = g_op_cpu_cfg.trace_barriers;
    g_wrap_join = g_op_cpu_cfg.trace_join;
}
