/* unwind_local.c — unwinding in the signal handler with libunwind's local unwinder (the
 * handler mode of OMNIPROF_SAMPLING_UNWIND, and the deferred mode's fallback for a stack it does
 * not know), and the set-up of libunwind's own file descriptors. sampler.c calls op_cpu_unwind
 * from its handler; the async-signal-safety notes at the head of sampler.c apply here.
 *
 * This file is compiled WITH UNW_LOCAL_ONLY: its unw_* are libunwind.so's local ones
 * (unwind_deferred.c uses the generic, remote API). */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/unwind_walk.h"
#include "common/fd_guard.h"
#include "common/log.h"

/* Unwind the interrupted context into frames[] (innermost first; callers as return address
 * - 1). Fast path: unw_backtrace, libunwind's cached frame walker (x86-64 tdep_trace: a
 * per-thread cache of unwind recipes, created outside handlers by op_cpu_unwind_prewarm), from
 * the handler's own frame; the frames up to the interrupted pc (the handler and the kernel's
 * signal trampoline) are dropped. If the interrupted pc is not among the first frames (the
 * cached walker gave up), the slow path walks with unw_init_local2(UNW_INIT_SIGNAL_FRAME) and
 * unw_step from the signal context itself; so does a thread whose cache was not made
 * (unwind_cold: a run without call-stack sampling, threads.c). */
#define OP_CPU_UNWIND_SKIP_MAX 8
static bool g_fast_unwind = true; /* OMNIPROF_SAMPLING_FAST_UNWIND */
static bool local_unwind_safe(void);
static _Atomic uint64_t g_slow_unwinds; /* samples the cached walker could not unwind */
uint64_t op_cpu_unwind_slow_count(void) { return atomic_load_explicit(&g_slow_unwinds, memory_order_relaxed); }
uint32_t op_cpu_unwind(ucontext_t *uc, uint64_t *frames, uint32_t max)
{
    uint64_t pc = 0;
#if defined(__x86_64__)
    pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
#endif
    void *buf[OMNIPROF_CPU_SAMPLE_MAX_FRAMES + OP_CPU_UNWIND_SKIP_MAX];
    if (!local_unwind_safe()) {
        if (pc && max) frames[0] = pc;
        return pc && max ? 1 : 0;
    }
    op_cpu_thread *self = op_cpu_tls_thread;
    bool fast = g_fast_unwind && !(self && self->unwind_cold); /* never makes the cache here */
    if (pc && fast) {
        int got = unw_backtrace(buf, (int)(max + OP_CPU_UNWIND_SKIP_MAX));
        for (int i = 0; i < got && i < OP_CPU_UNWIND_SKIP_MAX; i++) {
            if ((uint64_t)(uintptr_t)buf[i] != pc) continue;
            uint32_t n = 0;
            frames[n++] = pc;
            for (int k = i + 1; k < got && n < max; k++) frames[n++] = (uint64_t)(uintptr_t)buf[k] - 1;
            return n;
        }
    }
    if (pc && fast) atomic_fetch_add_explicit(&g_slow_unwinds, 1, memory_order_relaxed);
    uint32_t n = 0;
    unw_cursor_t cursor;
    if (unw_init_local2(&cursor, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) == 0) {
        n = op_cpu_walk_cursor(&cursor, frames, max);
    } else if (pc) {
        frames[n++] = pc;
    }
    return n;
}

/* libunwind's memory-check pipes (issue 31 items 1 and 2). Each of libunwind's two libraries
 * (the local one this file uses, libunwind-x86_64 for unwind_deferred.c) opens a pipe when it
 * first initialises, and checks a doubtful address by writing one byte from it into that pipe
 * (and reading one back) whenever a walk falls back to guessing frames (a fiber's stack, code
 * without unwind tables). It keeps the pipe's numbers in a static array, where the profiler
 * cannot renumber them. Both libraries are therefore initialised once, here, inside an fd
 * capture scope (fd_guard.h): their pipes are adopted above the floor and registered, so a
 * program that closes every fd does not close them, nor finds its own files on their numbers.
 * What the interposers cannot see (a raw close_range system call, a dup2 onto exactly those
 * numbers) is checked before every local walk (local_unwind_safe): a pipe that is no longer
 * the profiler's own turns the local walk off for the rest of the run, and samples keep their
 * interrupted pc alone (deferred mode copies the stack of threads it knows, which never
 * reaches the pipe). */
#define OP_CPU_UNW_PIPES 8
static int g_unw_pipe[OP_CPU_UNW_PIPES];
static int g_n_unw_pipe;
static _Atomic bool g_local_unwind_off;
static pthread_once_t g_unw_libs_once = PTHREAD_ONCE_INIT;

static void unw_libs_init(void)
{
    op_fd_capture_begin();
    void *buf[4];
    unw_backtrace(buf, 4); /* tdep_init of the local library */
    op_cpu_unwind_deferred_init();
    int n = op_fd_capture_end(g_unw_pipe, OP_CPU_UNW_PIPES);
    g_n_unw_pipe = n < OP_CPU_UNW_PIPES ? n : OP_CPU_UNW_PIPES;
}

/* Async-signal-safe: every captured pipe end still the profiler's own at its own number. */
static bool local_unwind_safe(void)
{
    if (atomic_load_explicit(&g_local_unwind_off, memory_order_relaxed)) return false;
    for (int i = 0; i < g_n_unw_pipe; i++) {
        int fd = g_unw_pipe[i];
        if (op_fd_resolve(fd) != fd || op_fd_verify(fd) != 0) {
            atomic_store_explicit(&g_local_unwind_off, true, memory_order_relaxed);
            return false;
        }
    }
    return true;
}


/* Create the calling thread's libunwind trace cache outside any handler (it takes
 * pthread_once and mmap the first time); the first call initialises libunwind. */
void op_cpu_unwind_prewarm(void)
{
    pthread_once(&g_unw_libs_once, unw_libs_init);
    void *buf[4];
    unw_backtrace(buf, 4);
}

/* At sampler setup: libunwind initialised (once, in the capture scope), its per-thread cache
 * policy, and whether the cached walker is tried first. */
void op_cpu_unwind_local_setup(bool fast)
{
    pthread_once(&g_unw_libs_once, unw_libs_init); /* before any other libunwind call initialises it */
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    g_fast_unwind = fast;
}

/* At the end: one line if handler walks were turned off. */
void op_cpu_unwind_local_report(void)
{
    if (atomic_load(&g_local_unwind_off))
        op_warn("cpu: the program closed or replaced libunwind's pipe behind omniprof's interposers (a raw "
                "close_range or a dup2 onto it); later samples unwound in the signal handler keep their pc only");
}
