/* sampler.c — call-stack sampling: the signal handler that unwinds into a per-thread mmap'd
 * ring, and the allocator threads that drain rings into the SDK.
 *
 * Signals. Each sampled thread owns up to two sample clocks (sample_clock.c), each signalling
 * that very thread: the CPU-time one is the thread's perf task-clock event (where the kernel
 * refuses it, a POSIX timer on the thread's CPU clock), the real-time one a POSIX timer on
 * CLOCK_MONOTONIC (timer_create, SIGEV_THREAD_ID). They fire real-time signals, SIGRTMIN+4 and
 * SIGRTMIN+5 by default (OMNIPROF_SAMPLING_{CPUTIME,REALTIME}_SIGNAL), never SIGPROF or
 * SIGALRM, so a program's own profiling timers keep working. A timer's sigev_value carries
 * OP_CPU_SIGVAL_MAGIC + timer type, a task-clock signal the event's fd (op_cpu_clock_signal_kind):
 * any other delivery of the signal (kill, sigqueue, the program's own timers) is passed on to
 * the program's handler, which the
 * sigaction/signal wrappers record instead of installing (op_cpu_sampler_chain_sigaction).
 *
 * Unwinding (OMNIPROF_SAMPLING_UNWIND). deferred (the default, as perf's dwarf mode): the
 * handler copies the interrupted registers (the ucontext's gregs) and the stack from RSP up to
 * min(RSP + OMNIPROF_SAMPLING_STACK_BYTES, the thread's stack top) into the ring as an
 * OP_CPU_RING_STACK_COPY record (memcpy only); the allocator unwinds the copy
 * (unwind_deferred.c) and emits the same CPU_SAMPLE record the handler would have written.
 * A thread whose stack bounds are unknown (adopted threads) or whose RSP lies outside them
 * (sigaltstack, makecontext stacks, fibers, greenlets) is unwound in the handler as in the
 * handler mode (counted: op_cpu_unwind_fallback_count). The copy costs the interrupted thread
 * a few microseconds instead of the walk (tens of microseconds on deep C++/Python stacks).
 *
 * The handler (op_cpu_on_signal) is async-signal-safe. It calls only: clock_gettime,
 * getrusage, read (perf_event group), timer_settime or ioctl (disarm after the duration; re-arm
 * a task-clock event), memcpy, and
 * libunwind built with UNW_LOCAL_ONLY: unw_backtrace (the cached walker; its per-thread
 * cache is created before the thread's first sample, op_cpu_unwind_prewarm) or
 * unw_init_local2/unw_get_reg/unw_step (op_cpu_unwind, in unwind_local.c). It never
 * allocates, locks a pthread mutex or does stdio. Notes on libunwind's safety, as used here:
 *   - the caching policy is UNW_CACHE_PER_THREAD (set at setup), so unw_step takes no global
 *     lock; libunwind's local unwinder allocates from its own mmap'd pools, not malloc;
 *   - unw_step may call dl_iterate_phdr to find unwind tables. glibc's lock there is
 *     recursive, so a sample taken while the same thread is inside dlopen cannot deadlock;
 *     a sample taken while another thread holds it waits for that thread (bounded);
 *   - the walk starts from the interrupted context (UNW_INIT_SIGNAL_FRAME on the handler's
 *     ucontext), so neither the handler nor the kernel's trampoline appear in stacks;
 *   - a corrupt stack can make unw_step read bad memory; libunwind checks frame addresses it
 *     derives against the stack, which is the same exposure every libunwind-based sampler has.
 *   Both sampling signals are blocked while the handler runs (sa_mask), so the two timers of a
 *   thread never nest and the ring has one producer.
 *
 * Ring invariants (struct op_cpu_ring in cpu_internal.h):
 *   (1) tail <= head <= tail + cap; only the owning thread's handler moves head, only the
 *       consumer (allocator thread or a flusher holding allocator->lock) moves tail;
 *   (2) the producer publishes a record with a release store of head after writing it; the
 *       consumer reads head with acquire and releases tail after it is done with the bytes;
 *   (3) a record never wraps: the handler reserves what the record may need (a sample of full
 *       depth, or the exact size of a stack copy); when fewer bytes are left before the end, a
 *       pad record fills them ({size = rest, kind = 0}, or only the size when rest is 8 bytes;
 *       a size below a sample header's or a kind of 0 marks a pad), and the producer needs
 *       rest + need free bytes; otherwise the sample is dropped and counted (ring->dropped);
 *   (4) a thread's ring is unmapped only by its allocator, after the thread marked itself
 *       EXITED (its timers deleted, its handler can no longer run) and the ring was drained.
 *   (5) whether the ring takes a sample does not depend on the sample's size (ring_reserve):
 *       the ring drops while it has less room than the largest record needs, so drops are
 *       stretches of time, never the deep stacks in preference to the shallow ones; each drop
 *       is counted in the SDK (op_sdk_report_lost) when the ring is drained, and the database
 *       keeps the count (omniprof_drops, cause lost_at_source; the summary's CPU profile says it).
 *
 * Allocators. One allocator thread serves up to OMNIPROF_SAMPLING_ALLOCATOR_SIZE threads (at
 * most OMNIPROF_SAMPLING_MAX_ALLOCATORS allocators; beyond that they are shared). A handler
 * that fills its ring past half writes to the allocator's eventfd (write is async-signal-safe);
 * otherwise the allocator polls every 50 ms. It unwinds stack copies (with its own libunwind
 * address space, used under its lock) and copies each record into the SDK with
 * op_sdk_emit, or, with OMNIPROF_SAMPLING_TEMPORARY_FILES, appends it to an unlinked temporary
 * file that is emitted at finalization (lower perturbation during the run).
 *
 * Parts, joined by sampler_internal.h (the allocator struct and the state they share):
 *   sampler.c         set-up, the per-thread start/stop, exec (this file)
 *   sampler_signal.c  the signal handler and the ring's producer side
 *   sampler_alloc.c   the allocator threads: the ring's consumer side, spill files, drains,
 *                     finalization, attach's park/unpark and the fork hooks */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/sampler_internal.h"
#include "common/alloc.h"
#include "common/clock.h"
#include "common/fd_guard.h"
#include "common/log.h"
#include "sdk/backend.h"

#define OP_CPU_RING_BURST 64 /* deferred mode: full-size stack copies a ring holds at least */

int g_smp_signo[OP_CPU_TIMER_COUNT];
bool g_smp_handler_installed[OP_CPU_TIMER_COUNT];
struct sigaction g_smp_chain[OP_CPU_TIMER_COUNT]; /* the program's action for our signal */
bool g_smp_chain_set[OP_CPU_TIMER_COUNT];
uint64_t g_smp_begin_ns[OP_CPU_TIMER_COUNT], g_smp_end_ns[OP_CPU_TIMER_COUNT];
uint32_t g_smp_max_depth = OMNIPROF_CPU_SAMPLE_MAX_FRAMES;
bool g_smp_deferred;                /* OMNIPROF_SAMPLING_UNWIND=deferred */
uint64_t g_smp_stack_bytes = 32768; /* OMNIPROF_SAMPLING_STACK_BYTES */
bool g_smp_py;                      /* a CPython process: Python frames read (python_frames.c) */
size_t g_smp_py_bytes;              /* their room in a record: count + raw frames */

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
static sigaction_fn real_sigaction(void) { return omniprof_preload_real_sigaction; }

bool op_cpu_is_sampling_signal(int signo, int *type)
{
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++)
        if (g_smp_handler_installed[i] && g_smp_signo[i] == signo) {
            if (type) *type = i;
            return true;
        }
    return false;
}
/* ---------------------------------------------------------------------------------------- */
/* Setup and per-thread start/stop.                                                         */

int op_cpu_sampler_setup(void)
{
    g_smp_max_depth = g_op_cpu_cfg.max_depth;
    if (g_smp_max_depth < 1 || g_smp_max_depth > OMNIPROF_CPU_SAMPLE_MAX_FRAMES) g_smp_max_depth = OMNIPROF_CPU_SAMPLE_MAX_FRAMES;
    op_cpu_unwind_local_setup(g_op_cpu_cfg.fast_unwind);
#if defined(__x86_64__)
    g_smp_deferred = g_op_cpu_cfg.deferred_unwind;
#endif
    if (g_op_cpu_cfg.stack_bytes) g_smp_stack_bytes = g_op_cpu_cfg.stack_bytes & ~7u;
    op_cpu_py_setup();
    g_smp_py = op_cpu_py_enabled();
    g_smp_py_bytes = g_smp_py ? (OP_CPU_PY_MAX_FRAMES * OP_CPU_PY_WORDS + 1) * sizeof(uint64_t) : 0;
    op_cpu_perf_setup();
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) {
        double d = g_op_cpu_cfg.delay[i] > 0 ? g_op_cpu_cfg.delay[i] : 0;
        g_smp_begin_ns[i] = g_op_cpu_start_ns + (uint64_t)(d * 1e9);
        g_smp_end_ns[i] = g_op_cpu_cfg.duration[i] > 0 ? g_smp_begin_ns[i] + (uint64_t)(g_op_cpu_cfg.duration[i] * 1e9) : 0;
        if (!g_op_cpu_cfg.timer_on[i]) continue;
        g_smp_signo[i] = g_op_cpu_cfg.signo[i];
        if (g_smp_signo[i] < SIGRTMIN || g_smp_signo[i] > SIGRTMAX) {
            op_error("cpu: sampling signal %d is not a real-time signal (SIGRTMIN..SIGRTMAX = %d..%d); timer off",
                     g_smp_signo[i], SIGRTMIN, SIGRTMAX);
            g_op_cpu_cfg.timer_on[i] = false;
            continue;
        }
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = op_cpu_on_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        for (int j = 0; j < OP_CPU_TIMER_COUNT; j++)
            if (g_op_cpu_cfg.timer_on[j]) sigaddset(&sa.sa_mask, g_op_cpu_cfg.signo[j]);
        if (real_sigaction()(g_smp_signo[i], &sa, &old) != 0) {
            op_error("cpu: cannot install the handler of signal %d (%s); %s sampling off", g_smp_signo[i],
                     strerror(errno), i == 0 ? "cputime" : "realtime");
            g_op_cpu_cfg.timer_on[i] = false;
            continue;
        }
        if ((old.sa_flags & SA_SIGINFO) ? old.sa_sigaction != NULL
                                        : (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)) {
            op_warn("cpu: the program already handles signal SIGRTMIN+%d, which omniprof's %s sampler uses; "
                    "omniprof passes every signal not sent by its own timers on to the program's handler "
                    "(choose another with OMNIPROF_SAMPLING_%s_SIGNAL)",
                    g_smp_signo[i] - SIGRTMIN, i == 0 ? "cputime" : "realtime", i == 0 ? "CPUTIME" : "REALTIME");
            g_smp_chain[i] = old;
            g_smp_chain_set[i] = true;
        }
        g_smp_handler_installed[i] = true;
    }
    bool any = false;
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) any |= g_op_cpu_cfg.timer_on[i];
    if (!any) return -1;
    op_cpu_sampler_prepare(op_cpu_threads_count());
    return 0;
}

/* Program's sigaction for one of our signals: remember it (for chaining) instead of
 * replacing our handler. Returns 1 if handled, 0 if the signal is not ours. */
int op_cpu_sampler_chain_sigaction(int signo, const struct sigaction *act, struct sigaction *old)
{
    int type;
    if (!op_cpu_is_sampling_signal(signo, &type)) return 0;
    if (old) {
        if (g_smp_chain_set[type]) {
            *old = g_smp_chain[type];
        } else {
            memset(old, 0, sizeof *old);
            old->sa_handler = SIG_DFL;
        }
    }
    if (act) {
        static _Atomic int warned;
        if (!atomic_exchange(&warned, 1))
            op_warn("cpu: the program installs a handler for signal SIGRTMIN+%d, which omniprof's sampler uses; "
                    "omniprof keeps its handler and passes the program's own signals on to it (pick another "
                    "signal with OMNIPROF_SAMPLING_%s_SIGNAL)",
                    signo - SIGRTMIN, type == 0 ? "CPUTIME" : "REALTIME");
        g_smp_chain[type] = *act;
        g_smp_chain_set[type] = true;
    }
    return 1;
}

static bool ring_create(op_cpu_ring *r)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t max_record = sizeof(omniprof_cpu_sample_record_t) + (size_t)g_smp_max_depth * sizeof(uint64_t);
    max_record = (max_record + 7u) & ~(size_t)7u;
    max_record += g_smp_py_bytes;
    size_t frames_record = max_record;
    uint64_t n = g_op_cpu_cfg.buffer_samples < 1024 ? 1024 : g_op_cpu_cfg.buffer_samples;
    size_t cap = (size_t)n * max_record;
    if (g_smp_deferred) { /* room for a burst of OP_CPU_RING_BURST full-size copies too */
        size_t copy = sizeof(omniprof_cpu_sample_record_t) + sizeof(op_cpu_stack_copy) + (size_t)g_smp_stack_bytes + g_smp_py_bytes;
        if (copy > max_record) max_record = copy;
        if (cap < OP_CPU_RING_BURST * max_record) cap = OP_CPU_RING_BURST * max_record;
    }
    cap = (cap + (size_t)page - 1) & ~((size_t)page - 1);
    void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    r->data = p;
    r->cap = cap;
    r->max_record = max_record;
    r->max_frames_record = frames_record;
    atomic_store(&r->head, 0);
    atomic_store(&r->tail, 0);
    atomic_store(&r->dropped, 0);
    r->dropped_reported = 0;
    return true;
}

/* The period of timer i in ns (OMNIPROF_SAMPLING_*_FREQ; at least 10 us). */
static uint64_t sampling_period(int i)
{
    double f = g_op_cpu_cfg.freq[i] > 0 ? g_op_cpu_cfg.freq[i] : 100.0;
    uint64_t period = (uint64_t)(1e9 / f);
    return period < 10000 ? 10000 : period;
}

/* Arm the timers of a live thread (any thread may call it; the caller holds the registry
 * lock so the thread cannot be unregistered meanwhile). */
void op_cpu_sampler_thread_start(op_cpu_thread *t)
{
    if (t->is_internal || t->has_ring) return;
    bool want = false;
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) {
        t->filtered[i] = !op_cpu_id_in_list(g_op_cpu_cfg.tids[i], t->sequent_value);
        want |= g_op_cpu_cfg.timer_on[i] && !t->filtered[i];
    }
    if (!want) return;
    if (!ring_create(&t->ring)) {
        static _Atomic int warned;
        if (!atomic_exchange(&warned, 1))
            op_warn("cpu: cannot map a sample buffer for thread %d (%s); that thread is not sampled", (int)t->tid,
                    strerror(errno));
        return;
    }
    t->has_ring = true;
    t->perf_fd = op_cpu_perf_open_thread(t->tid, t->perf_fds, &t->perf_n);
    op_cpu_allocator *a = op_cpu_allocator_pick(false);
    t->allocator = a;
    if (a) { /* lock-free push: creating a thread never waits for an allocator's pass */
        op_cpu_thread *head = atomic_load_explicit(&a->pending, memory_order_relaxed);
        do {
            t->alloc_next = head;
        } while (!atomic_compare_exchange_weak_explicit(&a->pending, &head, t, memory_order_release,
                                                        memory_order_relaxed));
    }
    atomic_store_explicit(&t->active, 1, memory_order_release);
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) {
        if (!g_op_cpu_cfg.timer_on[i] || t->filtered[i]) continue;
        uint64_t period = sampling_period(i);
        if (!op_cpu_clock_make(t, i, g_smp_signo[i], period, g_op_cpu_cfg.task_clock)) { /* sample_clock.c */
            static _Atomic int warned;
            if (!atomic_exchange(&warned, 1))
                op_warn("cpu: timer_create failed for thread %d (%s); that thread is not sampled", (int)t->tid,
                        strerror(errno));
            continue;
        }
        uint64_t first = period;
        if (i == OP_CPU_TIMER_REALTIME) { /* first expiry at the delay */
            uint64_t now = op_now_ns();
            if (g_smp_begin_ns[i] > now + period) first = g_smp_begin_ns[i] - now;
        }
        op_cpu_clock_arm(t, i, period, first);
    }
}

/* Set the running timers of a thread to their period again (after adopt.c disarmed them). */
void op_cpu_sampler_rearm(op_cpu_thread *t)
{
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) op_cpu_clock_arm(t, i, sampling_period(i), sampling_period(i));
}

/* omniprof attach's re-attach: the clocks (and perf counters) that op_cpu_sampler_thread_stop
 * deleted at the detach are made again for a thread that kept its ring. */
void op_cpu_sampler_thread_remake(op_cpu_thread *t)
{
    if (t->is_internal || !t->has_ring || atomic_load(&t->active)) return;
    if (t->perf_fd < 0) t->perf_fd = op_cpu_perf_open_thread(t->tid, t->perf_fds, &t->perf_n);
    atomic_store_explicit(&t->active, 1, memory_order_release);
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) {
        if (!g_op_cpu_cfg.timer_on[i] || t->filtered[i]) continue;
        uint64_t period = sampling_period(i);
        if (op_cpu_clock_make(t, i, g_smp_signo[i], period, g_op_cpu_cfg.task_clock)) op_cpu_clock_arm(t, i, period, period);
    }
}

/* On the thread itself (or for a thread that can no longer run: fork child). */
void op_cpu_sampler_thread_stop(op_cpu_thread *t)
{
    atomic_store_explicit(&t->active, 0, memory_order_release);
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) op_cpu_clock_delete(t, i);
    if (t->perf_fd >= 0) op_cpu_perf_close_thread(t->perf_fds, t->perf_n);
    t->perf_fd = -1;
    t->perf_n = 0;
}

void op_cpu_sampler_stop_timers_cb(op_cpu_thread *t, void *data)
{
    (void)data;
    atomic_store_explicit(&t->active, 0, memory_order_release);
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) op_cpu_clock_disarm(t, i);
}

/* exec (the preload layer's before_exec hook, on the calling thread). A sampling signal pending
 * at exec, or sent by a perf event that stays open across it, reaches the new image before any
 * handler of ours is installed there, and its default action ends the program (a shell script
 * that execs its program died so, with status 128+SIGRTMIN+4). So: block our signals, stop
 * every thread's timers, take the calling thread's pending ones, restore the mask. The other
 * threads and their pending signals end with the exec. */
void op_cpu_sampler_before_exec(void)
{
    sigset_t set, old;
    sigemptyset(&set);
    bool any = false;
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++)
        if (g_smp_handler_installed[i]) sigaddset(&set, g_smp_signo[i]), any = true;
    if (!any) return;
    pthread_sigmask(SIG_BLOCK, &set, &old);
    op_cpu_threads_foreach(op_cpu_sampler_stop_timers_cb, NULL);
    struct timespec zero = {0, 0};
    while (sigtimedwait(&set, NULL, &zero) > 0) {
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void rearm_cb(op_cpu_thread *t, void *data)
{
    (void)data;
    if (atomic_load_explicit(&t->state, memory_order_acquire) != OP_CPU_THREAD_LIVE || !t->has_ring) return;
    atomic_store_explicit(&t->active, 1, memory_order_release);
    op_cpu_sampler_rearm(t);
}

/* The exec failed: the process goes on, sampled again. */
void op_cpu_sampler_exec_failed(void)
{
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++)
        if (g_smp_handler_installed[i]) {
            op_cpu_threads_foreach(rearm_cb, NULL);
            return;
        }
}
