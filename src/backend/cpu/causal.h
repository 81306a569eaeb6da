/* causal.h — the causal-profiling engine of the CPU backend: private declarations shared by
 * its files and the hooks the rest of the backend calls (docs/causal.md).
 *
 *   causal.c           settings, the experiment thread, the delay accounting (global and
 *                      per-thread delay counters, blocking and waking), the records
 *   causal_scope.c     which code may be selected: address ranges of in-scope lines or
 *                      functions (libdw), looked up from the signal handler
 *   causal_sampler.c   per-thread sampling of CPU time (perf task-clock overflow signals, or a
 *                      thread CPU-time timer) and the handler that charges the delays
 *   causal_progress.c  progress points: Coz's `_coz_get_counter`, the user API, ranges
 * Blocking and waking calls reach the engine from the preload library's interposers
 * (src/preload/sync_interpose.c: condition variables, semaphores, sleeps, pipes and sockets,
 * poll, MPI waits, the end of main), through the hooks causal.c registers in causal mode, and
 * from the CPU backend's own lock and join wrappers (wrappers.c).
 *
 * Nothing here runs unless causal profiling is configured (g_op_causal_on): every hook first
 * tests that flag, so normal runs take one predictable branch per wrapped call. */
#ifndef OMNIPROF_BACKEND_CPU_CAUSAL_H
#define OMNIPROF_BACKEND_CPU_CAUSAL_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct op_cpu_thread;

/* Per-thread state, embedded in op_cpu_thread (cpu_internal.h). */
typedef struct op_causal_thread {
    _Atomic uint64_t local_delay;    /* ns of delay this thread executed or was credited */
    uint64_t block_global;           /* global delay when the thread began to block */
    volatile sig_atomic_t in_use;    /* a hook on this thread is settling: the handler only counts */
    _Atomic int armed;               /* the sampler of this thread is running */
    int perf_fd;                     /* task-clock overflow event, -1 when none */
    bool phase_done;                 /* its first (random) period is over: the regular one set */
    int sched_fd;                    /* /proc/self/task/<tid>/schedstat, -1 when none */
    uint64_t sched_wait;             /* its run-queue wait ns at the previous sample */
    bool sched_known;                /* sched_wait holds a reading (or the birth's zero) */
    volatile bool interval_woke;     /* blocked, paused or started since the previous sample */
    bool ended;                      /* its end was recorded: the rest of its exit is not hooked */
    uint64_t stretch_q16;            /* runnable / CPU time of recent clean intervals, 16.16 */
    timer_t timer;                   /* fallback: thread CPU-time timer */
    bool timer_made;
} op_causal_thread;

/* ---- hooks for the rest of the backend (causal.c) ----------------------------------------- */
extern _Atomic int g_op_causal_on;   /* causal profiling configured and started */

bool op_causal_configured(void);     /* a context asked for CAUSAL_EXPERIMENT */
void op_causal_start(void);          /* from cpu_start(): settings, scope, sampler, experiment thread */
void op_causal_flush(bool final);    /* final: stop experiments, emit the end-to-end experiment */
void op_causal_at_fork_child(void);  /* a forked child runs no experiments (docs/causal.md) */
void op_causal_thread_init(struct op_cpu_thread *t);   /* at registration: fd -1, nothing armed */
uint64_t op_causal_parent_delay(void);                 /* pthread_create: the creator's delay */
void op_causal_thread_begin(struct op_cpu_thread *t, uint64_t inherited, bool fresh); /* on the thread */
void op_causal_thread_end(struct op_cpu_thread *t);    /* on the exiting thread */

/* Blocking calls: begin before the call, end after it; `woken` when another thread ended the
 * wait (the delays inserted meanwhile are credited), false after a timeout or a timed sleep
 * (the thread pays what it owes at once). Waking calls (unlock, signal, post, write) first
 * pay what the caller owes, so that the woken thread inherits a settled delay count. */
void op_causal_block_begin(void);
void op_causal_block_end(bool woken);
void op_causal_wake_others(void);

/* The calling thread's run-queue wait so far (schedstat's second field, one pread,
 * async-signal-safe); false when unknown. */
bool op_causal_sched_wait(const struct op_cpu_thread *t, uint64_t *wait_ns);

/* The program's sigaction on the causal signal: remember it and chain to it (1 = handled). */
int op_causal_chain_sigaction(int signo, const struct sigaction *act, struct sigaction *old);
bool op_causal_is_signal(int signo);

/* ---- between the engine's files ----------------------------------------------------------- */

/* causal.c: one sample of the calling thread hit `loc` (-1: no code in scope); it stands for
 * `weight` sample periods of CPU time and `runnable_ns` of wall time the thread was running
 * or ready to run (0: unknown, weight periods). Async-signal-safe. */
void op_causal_on_sample(struct op_cpu_thread *t, int32_t loc, uint64_t weight, uint64_t runnable_ns);
uint64_t op_causal_period_ns(void);

/* causal_scope.c */
typedef struct op_causal_scope_cfg {
    bool function_mode;
    const char *binary_scope, *binary_exclude;
    const char *source_scope, *source_exclude;
    const char *function_scope, *function_exclude;
} op_causal_scope_cfg;
int op_causal_scope_build(const op_causal_scope_cfg *cfg, char *err, size_t errlen); /* 0 or -1 */
int32_t op_causal_scope_lookup(uint64_t address);   /* async-signal-safe; -1 when out of scope */
uint32_t op_causal_scope_count(void);               /* locations */
const char *op_causal_scope_name(int32_t loc);      /* "file:line" or function; interned */
int32_t op_causal_scope_find(const char *spec);     /* fixed selection; -1 when unknown */
void op_causal_scope_count_sample(int32_t loc, uint64_t weight); /* async-signal-safe */
uint64_t op_causal_scope_samples(int32_t loc);

/* causal_sampler.c */
int op_causal_sampler_setup(int signo, uint64_t period_ns, const char *backend); /* 0 or -1 (logged) */
void op_causal_sampler_arm(struct op_cpu_thread *t, bool fresh); /* fresh: a thread born since the start */
void op_causal_sampler_disarm(struct op_cpu_thread *t); /* on the thread itself */
void op_causal_sampler_stop_all(void);                  /* finalization: no more signals */

/* causal_progress.c */
#define OP_CAUSAL_MAX_POINTS 256
typedef struct op_causal_point_snapshot {
    const char *name;   /* interned */
    bool latency;
    uint64_t count;     /* throughput: visits; latency: begins */
    uint64_t ends;      /* latency: ends */
} op_causal_point_snapshot;
void op_causal_progress_enable(bool ranges);  /* start counting (before, _coz_get_counter gives NULL) */
uint32_t op_causal_progress_snapshot(op_causal_point_snapshot *out, uint32_t max);
bool op_causal_progress_seen(void);           /* some point was visited */
void op_causal_progress_end_to_end(void);     /* counts the implicit "end-to-end" point */

#endif /* OMNIPROF_BACKEND_CPU_CAUSAL_H */
