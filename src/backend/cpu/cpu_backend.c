/* cpu_backend.c — the CPU backend's registration with the SDK and its life cycle.
 *
 * libomniprof-backend-cpu.so is LD_PRELOADed by the launcher when CPU features are asked for
 * (it interposes setitimer, pthread_setname_np and the optional lock functions, and
 * must come before libc; pthread_create, fork, exit and the program's signals reach it through
 * the hooks it registers with libomniprof-preload.so). Its constructor
 * registers the main thread and the op_backend "cpu", serving the buffer kinds CPU_SAMPLE,
 * PROCESS_SAMPLE, FUNCTION_WRAPPER, THREAD, CAUSAL_EXPERIMENT, CAUSAL_PROGRESS and REGION_PROFILE, and the
 * symbol queries
 * (omniprof_query_address_symbols). Nothing else happens until the SDK calls start(), after
 * the tools configured their services:
 *
 *   constructor ──▶ registered ──start()──▶ running ──finalize()──▶ stopped
 *                       │                    │  ▲ on_context_change: which timers record
 *                       │                    │  └ flush(): drain sample rings into the SDK
 *                       └── (no CPU kind configured: start() is never called, no timer,
 *                            no thread; the wrappers only forward to the real functions)
 *
 * In `running`: CPU_SAMPLE configured → per-thread timers (sampler.c); PROCESS_SAMPLE
 * configured → the process sampler thread; time windows gate both; CAUSAL_EXPERIMENT
 * configured → the causal engine (causal.c: its own sampler and experiment thread). Settings are read once,
 * at start (settings.def, blocks "cpu" and "cpu (launcher)"). */
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"
#include "common/clock.h"
#include "omniprof/causal.h"
#include "common/op_names.h"
#include "common/log.h"
#include "common/number.h"
#include "common/settings.h"
#include "sdk/backend.h"

op_cpu_config g_op_cpu_cfg;
_Atomic int g_op_cpu_started;
_Atomic int g_op_cpu_stopping;
_Atomic int g_op_cpu_sampling_enabled[OP_CPU_TIMER_COUNT];
uint64_t g_op_cpu_start_ns;
pid_t g_op_cpu_pid;

/* Thread, core and GPU filters: the settings registry checked them (IDLIST, common/number.h). */
bool op_cpu_id_in_list(const char *list, uint64_t value) { return op_idlist_has(list, value); }

static void read_config(void)
{
    op_cpu_config *c = &g_op_cpu_cfg;
    memset(c, 0, sizeof *c);
    c->sampling = op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE) != 0;
    /* OMNIPROF_SAMPLE (launcher): cputime | realtime | both/"cputime,realtime"; any other true
     * value means cputime. */
    const char *mode = op_setting_str(OP_SET_SAMPLE);
    bool rt = mode && strcasestr(mode, "realtime");
    bool ct = !mode || !*mode || strcasestr(mode, "cputime") || strcasestr(mode, "both") || !rt;
    if (mode && strcasestr(mode, "both")) rt = true;
    if (op_setting_is_set(OP_SET_SAMPLING_REALTIME_FREQ) && op_setting_double(OP_SET_SAMPLING_REALTIME_FREQ) > 0) rt = true;
    c->timer_on[OP_CPU_TIMER_CPUTIME] = ct;
    c->timer_on[OP_CPU_TIMER_REALTIME] = rt;
    double freq = op_setting_double(OP_SET_SAMPLING_FREQ); /* > 0: its range */
    double f_ct = op_setting_double(OP_SET_SAMPLING_CPUTIME_FREQ), f_rt = op_setting_double(OP_SET_SAMPLING_REALTIME_FREQ);
    c->freq[0] = f_ct > 0 ? f_ct : freq;
    c->freq[1] = f_rt > 0 ? f_rt : freq;
    double delay = op_setting_double(OP_SET_SAMPLING_DELAY);
    double d_ct = op_setting_double(OP_SET_SAMPLING_CPUTIME_DELAY), d_rt = op_setting_double(OP_SET_SAMPLING_REALTIME_DELAY);
    c->delay[0] = d_ct >= 0 ? d_ct : delay;
    c->delay[1] = d_rt >= 0 ? d_rt : delay;
    double dur = op_setting_double(OP_SET_SAMPLING_DURATION);
    double u_ct = op_setting_double(OP_SET_SAMPLING_CPUTIME_DURATION), u_rt = op_setting_double(OP_SET_SAMPLING_REALTIME_DURATION);
    c->duration[0] = u_ct >= 0 ? u_ct : dur;
    c->duration[1] = u_rt >= 0 ? u_rt : dur;
    const char *tids = op_setting_str(OP_SET_SAMPLING_TIDS);
    const char *t_ct = op_setting_str(OP_SET_SAMPLING_CPUTIME_TIDS), *t_rt = op_setting_str(OP_SET_SAMPLING_REALTIME_TIDS);
    c->tids[0] = t_ct && *t_ct ? t_ct : tids;
    c->tids[1] = t_rt && *t_rt ? t_rt : tids;
    c->task_clock = strcmp(op_setting_str(OP_SET_SAMPLING_CPUTIME_CLOCK), "timer") != 0;
    c->signo[0] = SIGRTMIN + (int)op_setting_uint(OP_SET_SAMPLING_CPUTIME_SIGNAL);
    c->signo[1] = SIGRTMIN + (int)op_setting_uint(OP_SET_SAMPLING_REALTIME_SIGNAL);
    if (c->signo[0] == c->signo[1]) {
        op_error("cpu: OMNIPROF_SAMPLING_CPUTIME_SIGNAL and _REALTIME_SIGNAL are both SIGRTMIN+%d; they must differ; "
                 "real-time timer off",
                 c->signo[0] - SIGRTMIN);
        c->timer_on[1] = false;
    }
    c->max_depth = (uint32_t)op_setting_uint(OP_SET_SAMPLING_MAX_DEPTH);
    c->buffer_samples = (uint32_t)op_setting_uint(OP_SET_SAMPLING_BUFFER_SAMPLES);
    c->allocator_size = (uint32_t)op_setting_uint(OP_SET_SAMPLING_ALLOCATOR_SIZE);
    c->max_allocators = (uint32_t)op_setting_uint(OP_SET_SAMPLING_MAX_ALLOCATORS);
    c->temporary_files = op_setting_bool(OP_SET_SAMPLING_TEMPORARY_FILES);
    c->fast_unwind = op_setting_bool(OP_SET_SAMPLING_FAST_UNWIND);
    c->deferred_unwind = strcmp(op_setting_str(OP_SET_SAMPLING_UNWIND), "handler") != 0;
    c->stack_bytes = (uint32_t)op_setting_uint(OP_SET_SAMPLING_STACK_BYTES);
    c->process_sampling = op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_PROCESS_SAMPLE) != 0;
    c->process_interval = op_setting_double(OP_SET_PROCESS_SAMPLING_INTERVAL); /* >= 0.001 s: its range */
    c->process_delay = op_setting_double(OP_SET_PROCESS_SAMPLING_DELAY);
    c->process_duration = op_setting_double(OP_SET_PROCESS_SAMPLING_DURATION);
    c->trace_locks = op_setting_bool(OP_SET_TRACE_THREAD_LOCKS);
    c->trace_rwlocks = op_setting_bool(OP_SET_TRACE_THREAD_RW_LOCKS);
    c->trace_barriers = op_setting_bool(OP_SET_TRACE_THREAD_BARRIERS);
    c->trace_join = op_setting_bool(OP_SET_TRACE_THREAD_JOIN);
}

/* ---------------------------------------------------------------------------------------- */
/* op_backend callbacks.                                                                    */

static void update_enabled(void)
{
    atomic_store(&g_op_cpu_sampling_enabled[OP_CPU_TIMER_CPUTIME],
                 op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, OMNIPROF_CPU_SAMPLE_CPUTIME) != 0);
    atomic_store(&g_op_cpu_sampling_enabled[OP_CPU_TIMER_REALTIME],
                 op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, OMNIPROF_CPU_SAMPLE_REALTIME) != 0);
}

static void start_thread_cb(op_cpu_thread *t, void *data)
{
    (void)data;
    if (!t->is_internal) op_cpu_sampler_thread_start(t);
}

static void emit_create_cb(op_cpu_thread *t, void *data)
{
    (void)data;
    op_cpu_thread_emit_record(t, OMNIPROF_THREAD_CREATE);
}

static _Atomic int g_threads_announced; /* flush may run on several threads */
static _Atomic int g_events_announced;  /* the CPU_SAMPLE_EVENT records (once per process) */

static omniprof_status_t cpu_start(void)
{
    if (atomic_load(&g_op_cpu_started)) return OMNIPROF_STATUS_SUCCESS;
    op_cpu_tls_guard++;
    g_op_cpu_start_ns = op_now_ns();
    read_config();
    op_cpu_window_setup();
    op_cpu_wrappers_init();
    op_cpu_components_setup();
    update_enabled();
    if (g_op_cpu_cfg.sampling) op_cpu_own_frames_init(); /* before any timer fires */
    if (g_op_cpu_cfg.sampling && op_cpu_sampler_setup() != 0) {
        op_warn("cpu: call-stack sampling off: no timer could be set up");
        g_op_cpu_cfg.sampling = false;
    }
    if (g_op_cpu_cfg.sampling)
        op_info("cpu: sampling%s%s: cputime %.6g Hz, realtime %.6g Hz, signals SIGRTMIN+%d/+%d, %u perf counters",
                g_op_cpu_cfg.timer_on[0] ? " cputime" : "", g_op_cpu_cfg.timer_on[1] ? " realtime" : "",
                g_op_cpu_cfg.freq[0], g_op_cpu_cfg.freq[1], g_op_cpu_cfg.signo[0] - SIGRTMIN,
                g_op_cpu_cfg.signo[1] - SIGRTMIN, op_cpu_perf_count());
    /* threads that exist already (main, and those created before start) */
    atomic_store(&g_op_cpu_started, 1);
    if (g_op_cpu_cfg.sampling) op_cpu_threads_foreach(start_thread_cb, NULL);
    if (op_causal_configured()) op_causal_start();
    /* loaded into a running process (omniprof attach): its threads are adopted (adopt.c) */
    if (g_op_cpu_cfg.sampling && op_setting_bool(OP_SET_ATTACH_MODE)) op_cpu_adopt_start();
    if (g_op_cpu_cfg.process_sampling && op_cpu_process_sampler_start() != 0)
        op_warn("cpu: process sampling off: its thread could not start");
    op_cpu_tls_guard--;
    return OMNIPROF_STATUS_SUCCESS;
}

/* Attached (omniprof attach): a detach stops the context, and the timers must not go on
 * firing into a process we left, nor any thread of ours run there, nor a descriptor stay open
 * (timers deleted, perf counters and eventfds closed, the poller and allocator threads end);
 * a re-attach makes them again. */
static void cpu_on_context_change(void)
{
    update_enabled();
    if (!g_op_cpu_cfg.sampling || !op_setting_bool(OP_SET_ATTACH_MODE)) return;
    bool on = atomic_load(&g_op_cpu_sampling_enabled[OP_CPU_TIMER_CPUTIME]) ||
              atomic_load(&g_op_cpu_sampling_enabled[OP_CPU_TIMER_REALTIME]);
    if (on) {
        op_cpu_sampler_unpark();
        op_cpu_adopt_resume();
    } else {
        op_cpu_adopt_pause();
        op_cpu_sampler_park();
        op_cpu_symbols_close(); /* also after the database closed (op_sdk_park_threads) */
    }
}

/* The SDK finalizes in this order (src/sdk/registration.c): backends flush, contexts stop,
 * buffers are delivered, tools finalize, backends finalize. So everything the run must still
 * deliver happens in the flush that sees op_sdk_is_finalizing(): timers stop, the process
 * sampler stops, every ring and spill file is emitted, queued THREAD records too; finalize()
 * (the region profile included, as REGION_PROFILE records); finalize() itself only reports the
 * drop count. */
static _Atomic int g_final_flush_done;

static void final_flush(void)
{
    if (atomic_exchange(&g_final_flush_done, 1)) return;
    op_causal_flush(true);          /* experiments stop; the end-to-end one is emitted */
    op_cpu_sampler_finalize();      /* timers disarmed, rings and spill files emitted */
    op_cpu_process_sampler_stop();  /* bounded wait */
    op_cpu_threads_emit_pending();
    op_cpu_components_emit_profile(); /* REGION_PROFILE records: the region statistics */
    atomic_store(&g_op_cpu_stopping, 1);
}

static void cpu_flush(void)
{
    if (!atomic_load(&g_op_cpu_started)) return;
    op_cpu_tls_guard++;
    if (!atomic_load(&g_threads_announced) &&
        op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_THREAD, OMNIPROF_THREAD_CREATE) &&
        !atomic_exchange(&g_threads_announced, 1))
        op_cpu_threads_foreach(emit_create_cb, NULL);
    if (!atomic_load(&g_events_announced) && g_op_cpu_cfg.sampling &&
        op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE_EVENT,
                              OMNIPROF_CPU_SAMPLE_EVENT_COUNTER) &&
        !atomic_exchange(&g_events_announced, 1))
        op_cpu_perf_emit_events(); /* names of the samples' counter values */
    if (op_sdk_is_finalizing()) final_flush();
    else op_cpu_sampler_drain_all(); /* also emits queued THREAD records */
    op_cpu_tls_guard--;
}

static void cpu_finalize(void)
{
    if (!atomic_load(&g_op_cpu_started)) return;
    op_cpu_tls_guard++;
    final_flush(); /* in case the SDK did not flush first */
    uint64_t n, handler_ns, unwind_ns, max_ns;
    op_cpu_sampler_cost(&n, &handler_ns, &unwind_ns, &max_ns);
    if (n)
        op_info("cpu: %llu samples; the signal handler took %.1f us each (unwinding or stack copy %.1f us), at most %.1f us, "
                "%.3f s in all; %llu unwound frame by frame (the cached walker gave up)", (unsigned long long)n,
                (double)handler_ns / 1e3 / (double)n, (double)unwind_ns / 1e3 / (double)n, (double)max_ns / 1e3,
                (double)handler_ns / 1e9, (unsigned long long)op_cpu_unwind_slow_count());
    uint64_t on_task_clock, on_timer;
    op_cpu_clock_counts(&on_task_clock, &on_timer);
    if (on_task_clock || on_timer)
        op_info("cpu: CPU-time samples of %llu threads fired on the perf task-clock event, of %llu on POSIX "
                "CPU-time timers (scheduler tick)", (unsigned long long)on_task_clock, (unsigned long long)on_timer);
    uint64_t walks, walk_ns, truncated;
    op_cpu_unwind_deferred_stats(&walks, &walk_ns, &truncated);
    if (walks || op_cpu_unwind_fallback_count())
        op_info("cpu: deferred unwinding: %llu stack copies unwound by the allocator threads, %.1f us of CPU each, %llu "
                "stopped at the top of the copy (OMNIPROF_SAMPLING_STACK_BYTES); %llu samples unwound in the handler "
                "(stack unknown or elsewhere)",
                (unsigned long long)walks, walks ? (double)walk_ns / 1e3 / (double)walks : 0.0,
                (unsigned long long)truncated, (unsigned long long)op_cpu_unwind_fallback_count());
    uint64_t dropped = op_cpu_sampler_dropped();
    if (dropped)
        op_warn("cpu: %llu samples were dropped because a thread's sample buffer was full (raise "
                "OMNIPROF_SAMPLING_BUFFER_SAMPLES or lower the frequency)",
                (unsigned long long)dropped);
    op_cpu_tls_guard--;
}

static void cpu_at_fork_child(void)
{
    static pid_t done_for;
    pid_t me = getpid();
    if (done_for == me) return;
    done_for = me;
    g_op_cpu_pid = me;
    op_causal_at_fork_child();
    op_cpu_sampler_at_fork_child();
    op_cpu_adopt_at_fork_child();
    op_cpu_threads_at_fork_child();
    op_cpu_process_sampler_at_fork_child();
    op_cpu_symbols_reset();
    op_cpu_modules_at_fork_child();
    atomic_store(&g_threads_announced, 0);
    atomic_store(&g_events_announced, 0);
    atomic_store(&g_final_flush_done, 0);
    /* a child of a detached process (omniprof attach) starts nothing: no timer, no thread */
    bool detached = op_setting_bool(OP_SET_ATTACH_MODE) &&
                    !atomic_load(&g_op_cpu_sampling_enabled[OP_CPU_TIMER_CPUTIME]) &&
                    !atomic_load(&g_op_cpu_sampling_enabled[OP_CPU_TIMER_REALTIME]);
    if (atomic_load(&g_op_cpu_started) && !atomic_load(&g_op_cpu_stopping) && !detached) {
        g_op_cpu_start_ns = op_now_ns();
        op_cpu_tls_guard++;
        if (g_op_cpu_cfg.sampling) {
            op_cpu_sampler_prepare(1);
            op_cpu_threads_foreach(start_thread_cb, NULL);
        }
        if (g_op_cpu_cfg.process_sampling) op_cpu_process_sampler_start();
        op_cpu_tls_guard--;
    }
}

void op_cpu_backend_at_fork_child(void) { cpu_at_fork_child(); }

/* What this backend serves (backend.h); the SDK reads it from the library file. */
OP_BACKEND_MANIFEST(g_cpu_manifest) = {
    .magic = OP_BACKEND_MANIFEST_MAGIC,
    .size = sizeof(op_backend_manifest),
    .name = "cpu",
    .buffer_kinds = {OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, OMNIPROF_BUFFER_TRACING_PROCESS_SAMPLE,
                     OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER, OMNIPROF_BUFFER_TRACING_THREAD,
                     OMNIPROF_BUFFER_TRACING_CAUSAL_EXPERIMENT,
                     OMNIPROF_BUFFER_TRACING_CAUSAL_PROGRESS,
                     OMNIPROF_BUFFER_TRACING_REGION_PROFILE,
                     OMNIPROF_BUFFER_TRACING_CPU_SAMPLE_EVENT},
};

/* The kinds the manifest lists: their operation names are common/op_names.c's (the one table the
 * writer reads too). */
static bool cpu_kind(uint32_t kind)
{
    for (size_t i = 0; i < OP_BACKEND_MAX_KINDS && g_cpu_manifest.buffer_kinds[i]; i++)
        if (g_cpu_manifest.buffer_kinds[i] == kind) return true;
    return false;
}

static const char *cpu_operation_name(uint32_t kind, int32_t op)
{
    return cpu_kind(kind) ? op_fixed_operation_name(kind, op) : NULL;
}

static int cpu_iterate_operations(uint32_t kind, int (*cb)(int32_t, void *), void *data)
{
    int32_t n = 0;
    if (!cpu_kind(kind) || !op_fixed_operation_names(kind, &n)) return -1;
    for (int32_t op = 1; op < n; op++)
        if (cb(op, data)) break;
    return 0;
}

static const op_backend g_cpu_backend = {
    .size = sizeof(op_backend),
    .name = "cpu",
    .start = cpu_start,
    .on_context_change = cpu_on_context_change,
    .flush = cpu_flush,
    .finalize = cpu_finalize,
    .at_fork_child = cpu_at_fork_child,
    .operation_name = cpu_operation_name,
    .iterate_operations = cpu_iterate_operations,
    .iterate_record_args = NULL,
    .query_agents = NULL,
    .symbolize = op_cpu_symbolize,
    .manifest = &g_cpu_manifest,
};

__attribute__((constructor(101))) static void op_cpu_backend_ctor(void)
{
    static int once;
    if (once++) return;
    g_op_cpu_pid = getpid();
    op_cpu_threads_init_main();
    if (omniprof_preload_register(&g_op_cpu_preload_hooks) != 0 || !omniprof_preload_active())
        op_info("cpu: libomniprof-preload.so is not preloaded; threads, fork and exit of the program are not followed");
    if (op_sdk_register_backend(&g_cpu_backend) != OMNIPROF_STATUS_SUCCESS)
        op_warn("cpu: backend registration refused (loaded twice?); CPU services off");
}
