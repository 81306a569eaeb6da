/* sampler_internal.h — what the parts of the call-stack sampler share (sampler.c,
 * sampler_signal.c, sampler_alloc.c; the design, the ring invariants (1)-(5) and the handler's
 * async-signal-safety rules are in sampler.c's head comment). Nothing outside these three files
 * includes it: the rest of the backend sees the sampler through cpu_internal.h.
 *
 * The state below is written by op_cpu_sampler_setup (sampler.c) before any thread is sampled
 * and only read afterwards (the handler, the allocators), except where a comment says. */
#ifndef OMNIPROF_BACKEND_CPU_SAMPLER_INTERNAL_H
#define OMNIPROF_BACKEND_CPU_SAMPLER_INTERNAL_H

#include <signal.h>

#include "backend/cpu/cpu_internal.h"

typedef struct op_cpu_allocator {
    pthread_mutex_t lock;
    op_cpu_thread *threads; /* served threads, under lock */
    /* threads just started, pushed without the lock (a pass may hold it while it unwinds):
     * moved to threads under the lock by take_pending */
    _Atomic(op_cpu_thread *) pending;
    uint32_t index;
    int efd; /* eventfd the handlers poke */
    _Atomic int stop;
    _Atomic int alive;         /* its thread runs (set before creating it, cleared as it ends) */
    int spill_fd;              /* -1 unless temporary files */
    uint64_t spilled;          /* records in the spill file */
    op_cpu_unwinder *unwinder; /* deferred unwinding, under lock; made at the first copy */
} op_cpu_allocator;

/* sampler.c: the configuration the handler reads */
extern int g_smp_signo[OP_CPU_TIMER_COUNT];
extern bool g_smp_handler_installed[OP_CPU_TIMER_COUNT];
extern struct sigaction g_smp_chain[OP_CPU_TIMER_COUNT]; /* the program's action for our signal */
extern bool g_smp_chain_set[OP_CPU_TIMER_COUNT]; /* (both also set by the sigaction wrapper) */
extern uint64_t g_smp_begin_ns[OP_CPU_TIMER_COUNT], g_smp_end_ns[OP_CPU_TIMER_COUNT];
extern uint32_t g_smp_max_depth;
extern bool g_smp_deferred;        /* OMNIPROF_SAMPLING_UNWIND=deferred */
extern uint64_t g_smp_stack_bytes; /* OMNIPROF_SAMPLING_STACK_BYTES */
extern bool g_smp_py;              /* a CPython process: Python frames read (python_frames.c) */
extern size_t g_smp_py_bytes;      /* their room in a record: count + raw frames */

/* sampler.c: op_cpu_threads_foreach callback: a thread's timers disarmed, the thread inactive */
void op_cpu_sampler_stop_timers_cb(op_cpu_thread *t, void *data);

/* sampler_signal.c: the handler of both sampling signals (async-signal-safe) */
void op_cpu_on_signal(int signo, siginfo_t *si, void *ucv);

/* sampler_alloc.c: the allocator of the next sampled thread (NULL when none could be made) */
op_cpu_allocator *op_cpu_allocator_pick(bool may_create);

#endif /* OMNIPROF_BACKEND_CPU_SAMPLER_INTERNAL_H */
