/* cpu_internal.h — the CPU backend's private declarations, shared by its files.
 *
 * Files of the backend (each opens with its own design notes):
 *   cpu_backend.c     registration (op_backend "cpu"), start/flush/finalize/fork, settings
 *   threads.c         thread registry, pthread_create wrapper, THREAD records, thread identity
 *   sampler.c         the signal handler, sample rings, allocators
 *   sample_clock.c    what fires samples: perf task-clock events, POSIX timers
 *   unwind_deferred.c the allocators' unwinder of stack copies (libunwind's remote API);
 *                     unwind_walk.h: the frame loop it shares with sampler.c
 *   perf_events.c     per-thread perf_event counter groups read by the handler
 *   time_window.c     OMNIPROF_TRACE_DELAY/DURATION/PERIODS: the collection window
 *   process_sampler.c background thread: RSS, CPU time, frequencies, NVML GPU metrics
 *   wrappers.c        fork, exit/_exit/abort, lock wrappers,
 *                     sigaction/signal/setitimer checks
 *   components.c      component model (wall clock, thread CPU, peak RSS, ...) and the
 *                     per-region call-tree profile written at the end (wall_clock-<pid>.txt)
 *   symbols.c         address -> function/file/line/inlines/module with elfutils libdw
 *   symbols_index.c   per-module indexes for symbols.c (symbol table, DWARF code scopes)
 *   modules.c         modules closed during the run: which one a sampled address was in at
 *                     the sample's time (frame tags), for symbols.c
 *   causal*.c         causal profiling: virtual speedups, progress points (causal.h)
 *
 * Lock order (a lock never nests inside one listed after it):
 *   g_registry_lock (threads.c)  >  allocator->lock (sampler.c)  >  g_sym_lock (symbols.c)
 *     >  g_mod_lock (modules.c; the loader's lock is never taken under it)
 * No lock is ever taken in the signal handler, and no lock is held while calling op_sdk_emit
 * except an allocator's own lock (the SDK never calls back into the backend from emit). */
#ifndef OMNIPROF_BACKEND_CPU_INTERNAL_H
#define OMNIPROF_BACKEND_CPU_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <ucontext.h>

#include "omniprof/cpu.h"
#include "omniprof/omniprof.h"
#include "omniprof/symbols.h"
#include "omniprof/tracing.h"
#include "preload/preload.h"

#include "backend/cpu/causal.h"

#define OP_CPU_TLS __thread __attribute__((tls_model("initial-exec")))

enum { OP_CPU_TIMER_CPUTIME = 0, OP_CPU_TIMER_REALTIME = 1, OP_CPU_TIMER_COUNT = 2 };
#define OP_CPU_SIGVAL_MAGIC 0x6f700000 /* 'op' << 16: a POSIX timer's sigev_value, + type */

/* ---- sample ring (sampler.c) ------------------------------------------------------------
 * Single producer (the thread's own signal handler), single consumer (its allocator, or a
 * flushing thread holding the allocator's lock). Positions are byte counts that only grow;
 * offset = pos % cap. Each record is contiguous and 8-byte aligned; a record that would cross
 * the end is preceded by a pad record (its uint64 size = bytes to the end, nothing else). */
typedef struct op_cpu_ring {
    uint8_t *data;
    size_t cap;             /* bytes, multiple of the page size */
    size_t max_record;      /* bytes of the largest record (sample of full depth, full stack copy) */
    size_t max_frames_record; /* bytes of a sample of full depth */
    _Atomic uint64_t head;  /* written by the producer only */
    _Atomic uint64_t tail;  /* written by the consumer only */
    _Atomic uint64_t dropped;
    uint64_t dropped_reported; /* consumer only: drops already counted in the SDK (op_sdk_report_lost) */
} op_cpu_ring;

struct op_cpu_allocator;
struct op_cpu_region_stack;

enum { OP_CPU_THREAD_LIVE = 1, OP_CPU_THREAD_EXITED = 2 };

/* One application or profiler thread. Allocated when the thread starts (never in a handler),
 * freed by its allocator after the thread exited and its ring was drained. */
typedef struct op_cpu_thread {
    struct op_cpu_thread *next, *prev;           /* registry, under g_registry_lock */
    struct op_cpu_thread *alloc_next;            /* allocator list, under allocator->lock (or its pending stack) */
    struct op_cpu_allocator *allocator;
    pthread_t pthread;
    pid_t tid;
    pid_t parent_tid;
    uint64_t internal_value;                     /* creation order (all threads) */
    uint64_t sequent_value;                      /* app order, or OFFSET + profiler order */
    bool is_internal;
    bool unwind_cold; /* no libunwind trace cache made (no call-stack sampling): slow walks only */
    bool filtered[OP_CPU_TIMER_COUNT];           /* excluded by a TIDS filter */
    _Atomic int state;
    _Atomic int active;                          /* the handler may record */
    timer_t timers[OP_CPU_TIMER_COUNT];
    bool timer_made[OP_CPU_TIMER_COUNT];         /* a timer or a task-clock event (sample_clock.c) */
    int clock_fd[OP_CPU_TIMER_COUNT];            /* the task-clock event, -1 for a POSIX timer */
    int clock_tag[OP_CPU_TIMER_COUNT];           /* its number when O_ASYNC was set: the si_fd */
    int perf_fd;                                 /* group leader, -1 if none */
    uint32_t perf_n;                             /* counters in the group */
    int perf_fds[OMNIPROF_CPU_SAMPLE_MAX_EVENTS];  /* leader first */
    op_cpu_ring ring;
    bool has_ring;
    uint64_t samples;                            /* recorded by the handler */
    uint64_t handler_ns, unwind_ns, handler_max_ns; /* the handler's own time, per recorded sample */
    uint64_t stack_lo, stack_hi;                 /* the thread's stack (pthread_getattr_np), 0 if unknown */
    char name[64];
    struct op_cpu_region_stack *regions;         /* components.c, owned by the thread */
    op_causal_thread causal;                     /* causal.c: delay counts, causal sampler */
} op_cpu_thread;

/* ---- cpu_backend.c ------------------------------------------------------------------------ */
typedef struct op_cpu_config {
    bool sampling;                               /* CPU_SAMPLE configured */
    bool timer_on[OP_CPU_TIMER_COUNT];
    double freq[OP_CPU_TIMER_COUNT];
    double delay[OP_CPU_TIMER_COUNT];
    double duration[OP_CPU_TIMER_COUNT];
    const char *tids[OP_CPU_TIMER_COUNT];
    int signo[OP_CPU_TIMER_COUNT];
    bool task_clock;                             /* CPU-time samples on perf task-clock */
    uint32_t max_depth;
    uint32_t buffer_samples;
    uint32_t allocator_size;
    uint32_t max_allocators;
    bool fast_unwind;
    bool deferred_unwind;                        /* OMNIPROF_SAMPLING_UNWIND=deferred */
    uint32_t stack_bytes;                        /* OMNIPROF_SAMPLING_STACK_BYTES */
    bool temporary_files;
    bool process_sampling;                       /* PROCESS_SAMPLE configured */
    double process_interval, process_delay, process_duration;
    bool trace_locks, trace_rwlocks, trace_barriers, trace_join;
} op_cpu_config;

extern op_cpu_config g_op_cpu_cfg;
extern _Atomic int g_op_cpu_started;     /* start() ran and sampling is set up */
extern _Atomic int g_op_cpu_stopping;    /* finalize began: produce nothing more */
extern _Atomic int g_op_cpu_sampling_enabled[OP_CPU_TIMER_COUNT]; /* some active context wants it */
extern uint64_t g_op_cpu_start_ns;       /* op_now_ns() at start() */
extern pid_t g_op_cpu_pid;               /* getpid() of this process (updated in a fork child) */

/* Is `value` in an id list "0,2,5-8" (empty or "all" = all; common/number.h)? */
bool op_cpu_id_in_list(const char *list, uint64_t value);

/* ---- threads.c ---------------------------------------------------------------------------- */
extern OP_CPU_TLS op_cpu_thread *op_cpu_tls_thread;
extern OP_CPU_TLS int op_cpu_tls_guard;      /* >0 while inside the profiler on this thread */
void op_cpu_threads_init_main(void);         /* constructor: register the main thread */
/* Register the calling thread (not yet registered). */
op_cpu_thread *op_cpu_thread_register_self(pid_t parent_tid, bool is_internal, const char *name);
void op_cpu_thread_exit_self(void);
/* Call fn for every live registered thread, under the registry lock. */
void op_cpu_threads_foreach(void (*fn)(op_cpu_thread *t, void *data), void *data);
void op_cpu_threads_at_fork_child(void);
void op_cpu_thread_emit_record(const op_cpu_thread *t, int op); /* queues it */
void op_cpu_threads_emit_pending(void);  /* emit queued THREAD records (not in a handler) */
uint64_t op_cpu_threads_count(void);
/* Resolved real functions (dlsym RTLD_NEXT), filled lazily. */
int op_cpu_real_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
/* wrappers.c: this backend's hooks in libomniprof-preload.so (registered by the constructor). */
extern const op_preload_hooks g_op_cpu_preload_hooks;
/* The pthread_create hook of libomniprof-preload.so (src/preload/preload.h). */
void op_cpu_thread_named(pthread_t th, const char *name); /* pthread_setname_np (preload hook) */
int op_cpu_pthread_create_hook(op_pthread_create_fn real, pthread_t *th, const pthread_attr_t *attr,
                               void *(*fn)(void *), void *arg, const void *caller);

/* ---- sampler.c ---------------------------------------------------------------------------- */
int op_cpu_sampler_setup(void);              /* handlers; 0 or -1 (sampling off, logged) */
void op_cpu_sampler_prepare(uint64_t n_threads);  /* enough allocators for n threads */
/* ---- sample_clock.c: what fires a thread's samples ----------------------------------------- */
bool op_cpu_clock_make(op_cpu_thread *t, int type, int signo, uint64_t period, bool task_clock);
void op_cpu_clock_arm(op_cpu_thread *t, int type, uint64_t period, uint64_t first);
void op_cpu_clock_refresh(op_cpu_thread *t, int type); /* handler: the next overflow */
void op_cpu_clock_disarm(op_cpu_thread *t, int type);  /* async-signal-safe */
void op_cpu_clock_delete(op_cpu_thread *t, int type);
void op_cpu_clock_forget(op_cpu_thread *t, int type);  /* fork child: the parent's, let go */
int op_cpu_clock_signal_kind(const op_cpu_thread *t, int type, const siginfo_t *si); /* 1 sample, 2 stale, 0 not ours */
void op_cpu_clock_counts(uint64_t *task_clock, uint64_t *timer);

void op_cpu_sampler_thread_start(op_cpu_thread *t); /* ring + timers for a live thread */
void op_cpu_sampler_thread_stop(op_cpu_thread *t);  /* on the thread itself, before exit */
void op_cpu_sampler_rearm(op_cpu_thread *t);        /* timers made: period again (re-attach) */
void op_cpu_sampler_thread_remake(op_cpu_thread *t); /* re-attach: clocks made again after a stop */
/* sample_clock.c: a thread's task-clock event signalling it every `period` ns of its CPU time
 * (disabled; -1 with errno if refused), and its arming for one more overflow. */
int op_cpu_task_clock_open(pid_t tid, uint64_t period, int signo);
void op_cpu_task_clock_refresh(int fd);

/* ---- adopt.c: threads of a process attached to (OMNIPROF_ATTACH_MODE) ---------------------- */
void op_cpu_adopt_start(void);                      /* follow /proc/self/task, sample every thread */
void op_cpu_adopt_pause(void);                      /* detach: timers disarmed */
void op_cpu_adopt_resume(void);                     /* re-attach: timers rearmed */
void op_cpu_adopt_at_fork_child(void);              /* the parent's poller and threads forgotten */
op_cpu_thread *op_cpu_adopted_find(pid_t tid);      /* async-signal-safe */
void op_cpu_sampler_release(op_cpu_thread *t);      /* thread exited: hand to its allocator */
void op_cpu_sampler_drain_all(void);         /* flush: emit everything buffered */
void op_cpu_sampler_drain_try(void);         /* the same for the allocators that are free now */
uint64_t op_cpu_unwind_slow_count(void);
void op_cpu_sampler_cost(uint64_t *samples, uint64_t *handler_ns, uint64_t *unwind_ns, uint64_t *max_ns);
void op_cpu_sampler_finalize(void);          /* stop all timers, drain, emit spilled samples */
void op_cpu_sampler_at_fork_child(void);
void op_cpu_sampler_park(void);   /* attach's detach: allocator threads end, eventfds close */
void op_cpu_sampler_unpark(void); /* re-attach: new eventfds and threads */
bool op_cpu_is_sampling_signal(int signo, int *type);
void op_cpu_unwind_prewarm(void);           /* per-thread unwinder cache, outside handlers */
/* unwind_local.c: libunwind's set-up (sampler setup) and the end-of-run line. */
void op_cpu_unwind_local_setup(bool fast);
void op_cpu_unwind_local_report(void);
/* Async-signal-safe: the interrupted context's frames, innermost first (callers as return
 * address - 1); returns how many (at most max <= OMNIPROF_CPU_SAMPLE_MAX_FRAMES). */
uint32_t op_cpu_unwind(ucontext_t *uc, uint64_t *frames, uint32_t max);
/* own_frames.c: a lone omniprof frame between two of the program's (the thread-start
 * trampoline, a wrapper) leaves a sampled stack; the innermost frame and runs of two or more
 * omniprof frames stay; returns the new count.
 * Async-signal-safe; the table of libomniprof* text ranges is built by _init (outside handlers,
 * before timers are armed). */
void op_cpu_own_frames_init(void);
uint32_t op_cpu_drop_own_frames(uint64_t *frames, uint32_t n);

/* ---- deferred unwinding (sampler.c copies, unwind_deferred.c walks) ------------------------
 * With OMNIPROF_SAMPLING_UNWIND=deferred the handler writes a ring record of kind
 * OP_CPU_RING_STACK_COPY instead of a sample: the sample's header (num_frames 0), then an
 * op_cpu_stack_copy, then `len` bytes of the stack from `sp` up. The allocator unwinds it and
 * emits an ordinary CPU_SAMPLE record. */
#define OP_CPU_RING_STACK_COPY 0x6f707363u /* never a buffer kind */
typedef struct op_cpu_stack_copy {
    uint64_t gregs[NGREG];                   /* the interrupted context's general registers */
    uint64_t sp;                             /* address of the first copied byte (RSP) */
    uint64_t stack_hi;                       /* the thread's stack top */
    uint64_t len;                            /* bytes copied */
    uint64_t py_n;                           /* Python frames (raw) after the copied bytes */
} op_cpu_stack_copy;
typedef struct op_cpu_unwinder op_cpu_unwinder;
op_cpu_unwinder *op_cpu_unwinder_create(void);  /* one address space; use it from one thread at a time */
void op_cpu_unwind_deferred_init(void);         /* libunwind-x86_64's own init (sampler.c's capture scope) */
/* Unwind a copy into frames[] like op_cpu_unwind; returns how many (>= 1 when the pc is known). */
uint32_t op_cpu_unwind_copy(op_cpu_unwinder *u, const op_cpu_stack_copy *copy, const uint8_t *stack,
                            uint64_t *frames, uint32_t max);
/* Walks so far, their CPU time, and how many stopped at the top of the copied bytes. */
void op_cpu_unwind_deferred_stats(uint64_t *walks, uint64_t *ns, uint64_t *truncated);
uint64_t op_cpu_unwind_fallback_count(void); /* deferred mode: samples unwound in the handler */
void op_cpu_thread_stack_bounds(op_cpu_thread *t); /* threads.c: on the thread, outside handlers */

/* ---- python_frames.c: Python frames in samples (CPython 3.11-3.13) ------------------------
 * op_cpu_py_setup (sampler setup) finds the interpreter; op_cpu_py_capture (the handler,
 * async-signal-safe) reads the thread's Python frame chain as raw entries; op_cpu_py_merge (the
 * allocator) resolves them and puts them in place of the eval-loop frames of frames[] (max
 * frames); Python frames have bit 63 set and op_cpu_py_symbolize names them. Each raw frame is
 * OP_CPU_PY_WORDS words (the frame, the identity of its code object at the sample); counts are
 * of frames. A sample with Python frames unwound in the handler is a ring record of kind
 * OP_CPU_RING_SAMPLE_PY: the sample, then a uint64 count and the raw frames. */
#define OP_CPU_RING_SAMPLE_PY 0x6f707079u /* never a buffer kind */
#define OP_CPU_PY_MAX_FRAMES 128
#define OP_CPU_PY_WORDS 2
void op_cpu_py_setup(void);
bool op_cpu_py_enabled(void);
uint32_t op_cpu_py_capture(uint64_t *out, uint32_t max, bool *fresh);
uint32_t op_cpu_py_merge(uint64_t *frames, uint32_t n, const uint64_t *raw, uint32_t m, uint32_t max);
bool op_cpu_py_is_frame(uint64_t frame);
omniprof_status_t op_cpu_py_symbolize(uint64_t frame, omniprof_symbol_cb_t cb, void *data);
void op_cpu_py_report(void); /* one info line: samples, frames named and not */

/* ---- debuginfo.c: libdw's find_debuginfo callback, local files only (never debuginfod) ------- */
#ifdef _LIBDWFL_H
int op_cpu_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                          const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                          char **debuginfo_file_name);
#endif

/* ---- perf_map.c: JIT code named by /tmp/perf-PID.map (under symbols.c's lock) ----------------
 * The name of the entry covering addr (its start in *start, the map's path in *path), or NULL. */
const char *op_cpu_perf_map_lookup(uint64_t addr, uint64_t *start, const char **path);

/* fork: every allocator's lock held across the fork (no walk inside dl_iterate_phdr then). */
void op_cpu_sampler_fork_prepare(void);
void op_cpu_sampler_fork_parent(void);
/* exec: stop sampling and take pending sampling signals first; rearm if the exec failed. */
void op_cpu_sampler_before_exec(void);
void op_cpu_sampler_exec_failed(void);

/* sigaction wrapper support: keep the app's action for our signal and chain to it. */
int op_cpu_sampler_chain_sigaction(int signo, const struct sigaction *act, struct sigaction *old);
uint64_t op_cpu_sampler_dropped(void);

/* ---- perf_events.c ------------------------------------------------------------------------ */
void op_cpu_perf_setup(void);                /* parse the event list, probe what is supported */
int op_cpu_perf_open_thread(pid_t tid, int *fds, uint32_t *n_open); /* leader fd or -1 */
void op_cpu_perf_close_thread(int *fds, uint32_t n);
uint32_t op_cpu_perf_count(void);
const char *op_cpu_perf_event_name(uint32_t i);
void op_cpu_perf_emit_events(void); /* one CPU_SAMPLE_EVENT record per event (the first flush) */
/* Async-signal-safe: read the group into values[]; returns the count read (0 on failure). */
uint32_t op_cpu_perf_read(int fd, uint32_t n, uint64_t *values);
/* Every event this backend knows, with whether the kernel accepts it here. */
typedef struct op_cpu_perf_event_desc {
    const char *name;
    const char *description;
    uint32_t type;
    uint64_t config;
} op_cpu_perf_event_desc;
const op_cpu_perf_event_desc *op_cpu_perf_known(size_t *n);
int op_cpu_perf_probe(const op_cpu_perf_event_desc *d); /* 0 supported, else -errno */

/* ---- time_window.c ------------------------------------------------------------------------ */
/* Parse OMNIPROF_TRACE_* into the schedule; returns -1 on bad text (logged, windows off). */
int op_cpu_window_setup(void);
/* Async-signal-safe: is collection open now? (true when no window is configured) */
bool op_cpu_window_open(void);
bool op_cpu_window_configured(void);
/* Parse a periods string; test hook. Returns number of entries or -1 (err filled). */
typedef struct op_cpu_period {
    clockid_t clock;
    double delay, duration;
    uint64_t cycles; /* 0 = forever */
} op_cpu_period;
int op_cpu_window_parse(const char *text, op_cpu_period *out, int max, char *err, size_t errlen);
void op_cpu_window_tick(void); /* advance the schedule (called by the window thread) */

/* ---- process_sampler.c -------------------------------------------------------------------- */
int op_cpu_process_sampler_start(void);
void op_cpu_process_sampler_stop(void);
void op_cpu_process_sampler_at_fork_child(void);

/* ---- wrappers.c --------------------------------------------------------------------------- */
void op_cpu_wrappers_init(void);
void op_cpu_emit_wrapper(int32_t op, uint64_t start, uint64_t end, int32_t ret, const omniprof_arg_t *args,
                         uint32_t nargs);

/* ---- components.c ------------------------------------------------------------------------- */
void op_cpu_components_setup(void);
void op_cpu_region_push(const char *name);
void op_cpu_region_pop(void);
void op_cpu_region_thread_exit(op_cpu_thread *t);
void op_cpu_components_emit_profile(void); /* final flush: REGION_PROFILE records */

/* ---- symbols.c ---------------------------------------------------------------------------- */
omniprof_status_t op_cpu_symbolize(uint64_t address, omniprof_symbol_cb_t cb, void *data);
void op_cpu_symbols_reset(void);
void op_cpu_symbols_close(void); /* attach's detach: libdw's sessions end, their files close */

/* ---- modules.c ---------------------------------------------------------------------------- */
void op_cpu_modules_dlclose_before(void); /* the preload library's dlclose hooks */
void op_cpu_modules_dlclose_after(void);
bool op_cpu_modules_any_retired(void);   /* has any module been closed (a relaxed load) */
/* Before a sample leaves the backend: each of its n frames taken at ts that lies where a closed
 * module was gets the identity of its module of that time in bits 48-63 (modules.c). */
void op_cpu_modules_tag(uint64_t *frames, uint32_t n, uint64_t ts);
/* For symbols.c: the address of a frame (*addr), and, when it must be resolved in a module that
 * is gone or no longer the one mapped there, that module's file and load bias (true). */
bool op_cpu_modules_resolve(uint64_t frame, uint64_t *addr, char *path, size_t pathlen, uint64_t *bias);
void op_cpu_modules_at_fork_child(void);
/* 1: lookups through symbols_index.c, 0: libdw's per-address search, -1: OMNIPROF_SYMBOL_INDEX
 * (the default; tests compare both). */
void op_cpu_symbols_use_index(int on);
/* "_Z..." → demangled name (malloc'd by the C++ runtime: free() it), NULL when not mangled. */
char *op_cpu_demangle(const char *name);

#endif /* OMNIPROF_BACKEND_CPU_INTERNAL_H */
