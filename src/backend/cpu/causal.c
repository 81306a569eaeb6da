/* causal.c — causal profiling (Curtsinger & Berger, "Coz", SOSP 2015) on the CPU backend:
 * the experiments, the virtual-speedup delay accounting, and the records.
 *
 * Virtual speedup. Making a line s% faster is imitated by making every *other* thread pause
 * s% of a sample period each time a sample finds a thread in the line: relative to the rest
 * of the program, the line ran faster. Two counters keep it consistent across threads:
 *   global_delay   ns of pause every thread must have executed (or been credited) so far;
 *   local_delay    per thread (op_causal_thread): ns this thread executed or was credited.
 * A sample in the selected code adds `speedup%` of the time it stands for to the sampled
 * thread's local count (it "ran faster", so it need not pause for it): the sample period, or,
 * where the kernel tells it, the wall time the thread was runnable since its previous sample
 * (causal_sampler.c: on a busy machine that is what a faster line would save). Then the
 * thread settles (settle()):
 *   local > global   the thread is ahead: global rises to local (the others owe the difference);
 *   local < global   the thread is behind: it sleeps the difference (in the signal handler)
 *                    and adds it (pause_ns: what it slept, not its wait for a CPU afterwards).
 * A thread that blocks (lock, condition, join, pipe read, MPI wait: the preload library's
 * sync_interpose.c, through the hooks registered below, and the lock wrappers of wrappers.c)
 * notes global at the start; if another thread wakes it, the delay
 * inserted meanwhile is credited (block_end(true)): the waker paid its own debt before waking
 * it (op_causal_wake_others), so the woken thread inherits a settled count. A thread whose
 * wait ended by itself (timeout, timed sleep) is not credited: it pays at once. A new thread
 * starts with its creator's local count. A thread that ends records its count; its joiner is
 * credited no more than that count plus the time since, and pays the rest (preload_joined).
 * Between experiments nobody pays: local = global.
 *
 * An experiment (the experiment thread, experiment_main):
 *   1. waits for a progress point to have been visited (not in end-to-end mode);
 *   2. selects the location of the most recent in-scope sample (so locations are chosen in
 *      proportion to the CPU time spent in them), or OMNIPROF_CAUSAL_FIXED_LINE;
 *   3. draws a speedup: from OMNIPROF_CAUSAL_SPEEDUPS, else 0 with probability 1/4 and
 *      otherwise 5..100 % in steps of 5 (each with probability 3/80); dealt from a shuffled
 *      deck of those draws (draw_speedup), so that each pass gives every speedup its share;
 *   4. snapshots the progress points and global_delay, runs for its length, and stops;
 *   5. duration = elapsed - (global_delay inserted meanwhile): the time the run would have
 *      taken in the virtual world; emits CAUSAL_EXPERIMENT and one CAUSAL_PROGRESS per point;
 *   6. adapts the length: doubled while the least-visited point got fewer than 5 visits (up to
 *      64x OMNIPROF_CAUSAL_EXPERIMENT_MS, with one warning), halved when every point got more
 *      than 20 and the length is at least twice the minimum; then cools off for 10 ms.
 * End-to-end mode runs one experiment from the first in-scope sample to the end of the run
 * with an implicit throughput point "end-to-end" visited once.
 *
 * Invariants:
 *   (1) global_delay only grows; a thread's local_delay only grows;
 *   (2) only the thread itself changes its local_delay (handler or hook on that thread), and
 *       a hook sets in_use while it settles so that the handler does not settle concurrently;
 *   (3) outside an experiment nobody sleeps (settle skips ahead), so finalization never waits
 *       on a delay: g_active is cleared first;
 *   (4) the experiment thread is never joined: at finalization it is told to stop and waited
 *       for at most 1 s (it only sleeps on a condition variable and emits records). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/causal.h"
#include "backend/cpu/cpu_internal.h"
#include "common/clock.h"
#include "common/fd_guard.h"
#include "common/log.h"
#include "common/settings.h"
#include "omniprof/causal.h"
#include "preload/preload.h"
#include "sdk/backend.h"

#define COOL_OFF_NS 10000000ull        /* between experiments (Coz: 10 ms) */
#define TARGET_DELTA 5                 /* visits of the rarest point an experiment should see */
#define MAX_LENGTH_FACTOR 64
#define MAX_PAY_NS 100000000ull        /* one settle sleeps at most this much (the rest later) */
#define MAX_LATE_NS 2000000ull         /* a pause's lateness counted at most (a stopped thread) */
#define NO_PROGRESS_WARN_NS 5000000000ull
#define NO_SAMPLE_WARN_NS 2000000000ull  /* no sample in the selectable code for this long... */
#define NO_SAMPLE_WARN_SAMPLES 200       /* ...out of at least this many: say why nothing runs */

_Atomic int g_op_causal_on;

static struct causal_cfg {
    bool function_mode;
    bool end_to_end;
    uint64_t period_ns;
    uint64_t min_length_ns;
    uint64_t delay_ns, duration_ns;    /* experiments window, from start() */
    uint32_t speedups[128];            /* fixed pool (percent) */
    uint32_t n_speedups;
    int32_t fixed_loc;                 /* -1: random */
    uint64_t seed;
} g_cfg;

static _Atomic uint64_t g_global_delay;
static _Atomic int g_active;            /* an experiment is running */
static _Atomic int32_t g_selected = -1; /* location of the running experiment */
static _Atomic uint64_t g_speedup_pct;  /* of the running experiment */
static _Atomic uint64_t g_selected_hits;
static _Atomic int32_t g_last_loc = -1; /* location of the latest in-scope sample */
static _Atomic uint64_t g_samples_seen;  /* every sample, in scope or not */
static _Atomic uint64_t g_samples_in_scope;
static uint64_t g_start_ns;

/* experiment thread */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond;
static _Atomic int g_stop;
static _Atomic int g_thread_running;
static _Atomic int g_warned_no_progress; /* the 'no progress point' line is said once a run */
static uint64_t g_index;                /* experiments emitted (experiment thread, then finalize) */
static uint64_t g_rng;

/* end-to-end experiment (written by the experiment thread before g_e2e_started) */
static _Atomic int g_e2e_started;
static uint64_t g_e2e_global0, g_e2e_hits0;
static uint32_t g_e2e_speedup;
static op_causal_point_snapshot g_e2e_points[OP_CAUSAL_MAX_POINTS];
static uint32_t g_e2e_n;

bool op_causal_configured(void) { return op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_CAUSAL_EXPERIMENT) != 0; }

uint64_t op_causal_period_ns(void) { return g_cfg.period_ns; }

/* ---------------------------------------------------------------------------------------- */
/* Delay accounting.                                                                        */

/* Sleep `ns` (async-signal-safe: the raw syscall, never our own sleep wrappers); returns the
 * delay executed: the time the thread was asleep, `ns` and the timer's lateness (Coz counts
 * the time paused too), or less when a signal cut the sleep short. A pause on the path that
 * ends an iteration lengthens it by its lateness as much as by `ns`: counted as requested,
 * the lateness stayed in the experiment's virtual duration (72 us per pause at real-time
 * priority on the loaded 2-core VM, 200-300 us without; three pauses per iteration in
 * join_workers, issue 35 item 2). The thread's wait for a CPU after the sleep is not counted
 * (schedstat's run-queue wait during the call is subtracted; without schedstat only `ns`
 * counts): that is the machine's load, like any other preemption (it is part of the
 * runnable time samples measure), and counting it would make threads chase each other's
 * run-queue waits on a busy machine. Measured on the 2-core VM (docs/reliability.md,
 * causal.analytic_join_workers): a pause then waits about 1 ms for a CPU under load;
 * counting that wait, as Coz does, over-corrected a line whose speedup is 0 % on paper
 * (+8 / +16 % against +5 / +7 %). */
static uint64_t pause_ns(const op_cpu_thread *t, uint64_t ns)
{
    if (ns > MAX_PAY_NS) ns = MAX_PAY_NS;
    uint64_t rq0 = 0, rq1 = 0;
    bool rq = op_causal_sched_wait(t, &rq0);
    uint64_t t0 = op_now_ns();
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    bool whole = syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL) == 0;
    uint64_t slept = op_now_ns() - t0;
    if (!whole) return slept < ns ? slept : ns;
    if (!rq || !op_causal_sched_wait(t, &rq1) || rq1 < rq0) return ns;
    uint64_t asleep = slept > rq1 - rq0 ? slept - (rq1 - rq0) : 0;
    if (asleep < ns) asleep = ns;
    if (asleep > ns + MAX_LATE_NS) asleep = ns + MAX_LATE_NS;
    return asleep;
}

static void raise_global(uint64_t to)
{
    uint64_t g = atomic_load_explicit(&g_global_delay, memory_order_relaxed);
    while (g < to && !atomic_compare_exchange_weak_explicit(&g_global_delay, &g, to, memory_order_acq_rel,
                                                            memory_order_relaxed)) {}
}

/* Bring the calling thread's local count in line with the global one (invariants 1-3). */
static void settle(op_cpu_thread *t)
{
    uint64_t g = atomic_load_explicit(&g_global_delay, memory_order_acquire);
    uint64_t l = atomic_load_explicit(&t->causal.local_delay, memory_order_relaxed);
    if (!atomic_load_explicit(&g_active, memory_order_acquire)) {
        if (l < g) atomic_store_explicit(&t->causal.local_delay, g, memory_order_relaxed); /* skip ahead */
        return;
    }
    if (l > g) {
        raise_global(l);
    } else if (l < g) {
        uint64_t paid = pause_ns(t, g - l);
        l = atomic_fetch_add_explicit(&t->causal.local_delay, paid, memory_order_relaxed) + paid;
        t->causal.interval_woke = true;
        raise_global(l); /* the pause's lateness: the others owe it now (not at this thread's next
                          * settle, which an ending thread never reaches) */
    }
}

void op_causal_on_sample(op_cpu_thread *t, int32_t loc, uint64_t weight, uint64_t runnable_ns)
{
    atomic_fetch_add_explicit(&g_samples_seen, 1, memory_order_relaxed);
    if (loc >= 0) {
        atomic_fetch_add_explicit(&g_samples_in_scope, 1, memory_order_relaxed);
        op_causal_scope_count_sample(loc, weight);
        atomic_store_explicit(&g_last_loc, loc, memory_order_relaxed);
        if (atomic_load_explicit(&g_active, memory_order_acquire) &&
            loc == atomic_load_explicit(&g_selected, memory_order_relaxed)) {
            uint64_t pct = atomic_load_explicit(&g_speedup_pct, memory_order_relaxed);
            uint64_t span = runnable_ns ? runnable_ns : weight * g_cfg.period_ns;
            atomic_fetch_add_explicit(&t->causal.local_delay, span * pct / 100u, memory_order_relaxed);
            atomic_fetch_add_explicit(&g_selected_hits, weight, memory_order_relaxed);
        }
    }
    if (!t->causal.in_use) settle(t);
}

static op_cpu_thread *hook_thread(void)
{
    if (!atomic_load_explicit(&g_op_causal_on, memory_order_relaxed) || op_cpu_tls_guard > 0) return NULL;
    op_cpu_thread *t = op_cpu_tls_thread;
    return t && !t->is_internal && !t->causal.ended ? t : NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* Ended threads, for their joiners.                                                        */

/* A thread's delay count when it ended, and when (its exit settled it: what it owed then is
 * paid). Delay inserted after its end is owed too, by the thread that goes on in its place:
 * its joiner (preload_joined). Slots by a hash of the pthread_t; a slot is written with its
 * sequence odd (writers that find it odd leave it: that end is not recorded) and read twice
 * around the sequence, so a joiner never takes another thread's values. */
#define ENDED_SLOTS 512
typedef struct ended_slot {
    _Atomic uint32_t seq;
    _Atomic uint64_t thread, end_ns, local;
} ended_slot;
static ended_slot g_ended[ENDED_SLOTS];

static ended_slot *ended_slot_of(uint64_t th)
{
    return &g_ended[((th >> 4) * 0x9E3779B97F4A7C15ull) >> 55]; /* the top 9 bits: 512 slots */
}

static void record_end(op_cpu_thread *t)
{
    uint64_t th = (uint64_t)t->pthread;
    ended_slot *e = ended_slot_of(th);
    uint32_t seq = atomic_load_explicit(&e->seq, memory_order_relaxed);
    if ((seq & 1u) || !atomic_compare_exchange_strong(&e->seq, &seq, seq + 1)) return;
    atomic_store_explicit(&e->thread, th, memory_order_relaxed);
    atomic_store_explicit(&e->local, atomic_load(&t->causal.local_delay), memory_order_relaxed);
    atomic_store_explicit(&e->end_ns, op_now_ns(), memory_order_relaxed);
    atomic_store_explicit(&e->seq, seq + 2, memory_order_release);
}

static bool ended_lookup(uint64_t th, uint64_t *end_ns, uint64_t *local)
{
    ended_slot *e = ended_slot_of(th);
    uint32_t s1 = atomic_load_explicit(&e->seq, memory_order_acquire);
    uint64_t who = atomic_load_explicit(&e->thread, memory_order_relaxed);
    *end_ns = atomic_load_explicit(&e->end_ns, memory_order_relaxed);
    *local = atomic_load_explicit(&e->local, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    uint32_t s2 = atomic_load_explicit(&e->seq, memory_order_relaxed);
    return !(s1 & 1u) && s1 == s2 && s1 != 0 && who == th;
}

void op_causal_block_begin(void)
{
    op_cpu_thread *t = hook_thread();
    if (!t) return;
    t->causal.block_global = atomic_load_explicit(&g_global_delay, memory_order_acquire);
    t->causal.interval_woke = true;
}

void op_causal_block_end(bool woken)
{
    op_cpu_thread *t = hook_thread();
    if (!t) return;
    t->causal.in_use = 1;
    if (woken) {
        uint64_t g = atomic_load_explicit(&g_global_delay, memory_order_acquire);
        if (g > t->causal.block_global)
            atomic_fetch_add_explicit(&t->causal.local_delay, g - t->causal.block_global, memory_order_relaxed);
    } else {
        settle(t);
    }
    t->causal.in_use = 0;
}

/* The end of pthread_join(th) (lock_interpose.c), in place of wait_end(1): Coz's rule, a
 * woken thread goes on from its waker's count. The joiner is credited the delay inserted
 * while it waited only up to the joined thread's count: that count when it ended, plus the
 * time since (a thread that has ended pays no more, and its joiner stands in for it from its
 * end on, as a sleeping thread's sleep counts as delay paid). The joiner then pays what
 * remains. A worker that ended before a line of another thread had finished being sped up
 * owed the delay inserted after its end; credited the global count at the join (the generic
 * rule), nobody paid it, and the iteration it ended seemed that much shorter; without that
 * delay the worker's exit was paid only by accident, when the profiler's own locks on its
 * exit path went through the wake hooks and paused while holding them (issue 35 item 2). */
static void preload_joined(pthread_t th, int rc)
{
    uint64_t end_ns, local;
    op_cpu_thread *t = hook_thread();
    if (!t) return;
    if (rc != 0 || !atomic_load_explicit(&g_active, memory_order_acquire) ||
        !ended_lookup((uint64_t)th, &end_ns, &local)) {
        op_causal_block_end(true);
        return;
    }
    t->causal.in_use = 1;
    uint64_t g = atomic_load_explicit(&g_global_delay, memory_order_acquire), now = op_now_ns();
    uint64_t l = atomic_load_explicit(&t->causal.local_delay, memory_order_relaxed);
    uint64_t theirs = local + (now > end_ns ? now - end_ns : 0); /* had it gone on paying */
    uint64_t to = g > t->causal.block_global ? l + (g - t->causal.block_global) : l, behind = 0;
    if (to > theirs) { /* the joined thread is behind what this one would be credited */
        behind = theirs < l ? l - theirs : 0; /* even behind this thread's own count (an */
        to = theirs < l ? l : theirs;         /* earlier join credited it): paid, not counted */
    }
    if (to > l) atomic_fetch_add_explicit(&t->causal.local_delay, to - l, memory_order_relaxed);
    if (behind) { /* paid for the joined thread; this thread's count takes only the lateness */
        uint64_t late = pause_ns(t, behind) - behind;
        if (late < (1ull << 62))
            atomic_fetch_add_explicit(&t->causal.local_delay, late, memory_order_relaxed);
    }
    settle(t);
    t->causal.in_use = 0;
}

/* The preload library's wait_end (sync_interpose.c): woken -1 is a read-like call that got
 * data: credited when delays were inserted meanwhile (else there is nothing to credit and no
 * fstat is spent) and the fd is a pipe or socket another thread can fill; a file or a terminal
 * is fed by no thread of ours. */
static void preload_wait_end(int woken, int fd)
{
    if (woken < 0) {
        op_cpu_thread *t = hook_thread();
        uint64_t g = atomic_load_explicit(&g_global_delay, memory_order_acquire);
        struct stat st;
        woken = t && g > t->causal.block_global && fd >= 0 && fstat(fd, &st) == 0 &&
                (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
    }
    op_causal_block_end(woken != 0);
}

static void preload_main_end(int status)
{
    (void)status;
    op_causal_flush(true); /* experiments end with main; the end-to-end one is emitted now */
}

/* Registered only in causal mode: without it the preload library's wait interposers stay
 * plain calls and main is not wrapped. */
static const op_preload_hooks g_causal_preload_hooks = {
    .size = sizeof(op_preload_hooks),
    .name = "causal",
    .order = 1,
    .wait_begin = op_causal_block_begin,
    .wait_end = preload_wait_end,
    .wake = op_causal_wake_others,
    .main_end = preload_main_end,
    .joined = preload_joined,
};

void op_causal_wake_others(void)
{
    op_cpu_thread *t = hook_thread();
    if (!t) return;
    t->causal.in_use = 1;
    settle(t);
    t->causal.in_use = 0;
}

void op_causal_thread_init(op_cpu_thread *t)
{
    t->causal.perf_fd = -1;
    t->causal.sched_fd = -1;
    atomic_store(&t->causal.armed, 0);
    atomic_store(&t->causal.local_delay, atomic_load(&g_global_delay));
}

/* A new thread starts where its creator is; the creator first settles (pays what it owes),
 * as before any other call that wakes a thread, so that a debt of a thread that is rarely
 * sampled (a main thread that only creates and joins) is not handed to every child. */
uint64_t op_causal_parent_delay(void)
{
    op_cpu_thread *t = hook_thread();
    if (!t) return atomic_load_explicit(&g_global_delay, memory_order_relaxed);
    t->causal.in_use = 1;
    settle(t);
    t->causal.in_use = 0;
    return atomic_load_explicit(&t->causal.local_delay, memory_order_relaxed);
}

void op_causal_thread_begin(op_cpu_thread *t, uint64_t inherited, bool fresh)
{
    if (!atomic_load(&g_op_causal_on) || t->is_internal) return;
    atomic_store(&t->causal.local_delay, inherited);
    op_causal_sampler_arm(t, fresh);
}

void op_causal_thread_end(op_cpu_thread *t)
{
    if (atomic_load(&g_op_causal_on) && !t->is_internal && !t->causal.ended) {
        t->causal.in_use = 1;
        settle(t);  /* it pays what it owes now; its joiner, what is inserted from here on */
        record_end(t);
        t->causal.in_use = 0;
        t->causal.ended = true; /* the rest of its exit path (the profiler's locks) pays nothing */
    }
    if (atomic_load(&t->causal.armed)) op_causal_sampler_disarm(t);
}

/* ---------------------------------------------------------------------------------------- */
/* Records.                                                                                 */

/* One CAUSAL_EXPERIMENT, then one CAUSAL_PROGRESS per point of `after` (points are only
 * appended, so index i is the same point in both snapshots; one missing from `before` was
 * registered during the experiment and started from 0). */
static void emit_experiment(int32_t op, uint64_t t0, uint64_t t1, uint64_t delay, uint64_t hits, uint32_t speedup,
                            int32_t loc, const op_causal_point_snapshot *before, uint32_t n_before,
                            const op_causal_point_snapshot *after, uint32_t n_after)
{
    omniprof_causal_experiment_record_t e;
    memset(&e, 0, sizeof e);
    e.size = sizeof e;
    e.kind = OMNIPROF_BUFFER_TRACING_CAUSAL_EXPERIMENT;
    e.operation = op;
    e.index = g_index;
    e.start_timestamp = t0;
    e.end_timestamp = t1;
    e.delay_ns = delay;
    e.duration_ns = t1 - t0 > delay ? t1 - t0 - delay : 0;
    e.selected_samples = hits;
    e.sample_period_ns = g_cfg.period_ns;
    e.speedup_percent = speedup;
    e.selected = op_causal_scope_name(loc);
    op_sdk_emit(OMNIPROF_BUFFER_TRACING_CAUSAL_EXPERIMENT, op, &e, NULL);
    for (uint32_t i = 0; i < n_after; i++) {
        op_causal_point_snapshot zero = {after[i].name, after[i].latency, 0, 0};
        const op_causal_point_snapshot *b = i < n_before ? &before[i] : &zero;
        omniprof_causal_progress_record_t p;
        memset(&p, 0, sizeof p);
        p.size = sizeof p;
        p.kind = OMNIPROF_BUFFER_TRACING_CAUSAL_PROGRESS;
        p.operation = after[i].latency ? OMNIPROF_CAUSAL_PROGRESS_LATENCY : OMNIPROF_CAUSAL_PROGRESS_THROUGHPUT;
        p.experiment_index = g_index;
        p.timestamp = t1;
        p.name = after[i].name;
        p.delta = after[i].count - b->count;
        if (after[i].latency) {
            p.arrivals = p.delta;
            p.departures = after[i].ends - b->ends;
            p.difference = (int64_t)after[i].count - (int64_t)after[i].ends;
        }
        op_sdk_emit(OMNIPROF_BUFFER_TRACING_CAUSAL_PROGRESS, p.operation, &p, NULL);
    }
    g_index++;
}

/* ---------------------------------------------------------------------------------------- */
/* The experiment thread.                                                                   */

static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13; /* xorshift64 */
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

/* Speedups are dealt from a deck: the list (or the 80 default draws: 20 at 0, 3 at each of 5,
 * 10, ..., 100), shuffled, dealt to its end, then shuffled again. Each speedup has the same
 * probability as with independent draws and the order within a pass is as random (no speedup
 * follows a phase of the program), but a run of k passes gives every speedup k experiments
 * exactly, where independent draws left some with half of that (36 experiments over 5
 * speedups: one got 4 in 3 runs of 4), and the profile needed runs more to fill them. */
static uint32_t g_deck[128];
static uint32_t g_deck_n, g_deck_next;

static uint32_t draw_speedup(void)
{
    if (g_deck_next >= g_deck_n) {
        g_deck_n = 0;
        if (g_cfg.n_speedups)
            for (uint32_t i = 0; i < g_cfg.n_speedups; i++) g_deck[g_deck_n++] = g_cfg.speedups[i];
        else
            for (uint32_t r = 0; r < 80; r++) g_deck[g_deck_n++] = r < 20 ? 0 : 5 * ((r - 20) % 20 + 1);
        for (uint32_t i = g_deck_n - 1; i > 0; i--) { /* Fisher-Yates */
            uint32_t j = (uint32_t)(rnd() % (i + 1)), v = g_deck[i];
            g_deck[i] = g_deck[j], g_deck[j] = v;
        }
        g_deck_next = 0;
    }
    return g_deck[g_deck_next++];
}

/* Wait until `deadline` (monotonic ns) or stop; returns true when told to stop. */
static bool wait_until(uint64_t deadline)
{
    pthread_mutex_lock(&g_lock);
    while (!atomic_load(&g_stop) && op_now_ns() < deadline) {
        struct timespec ts = {(time_t)(deadline / 1000000000ull), (long)(deadline % 1000000000ull)};
        pthread_cond_timedwait(&g_cond, &g_lock, &ts);
    }
    pthread_mutex_unlock(&g_lock);
    return atomic_load(&g_stop) != 0;
}

static bool past_window(void)
{
    return g_cfg.duration_ns && op_now_ns() >= g_start_ns + g_cfg.delay_ns + g_cfg.duration_ns;
}

/* The location to speed up next: the fixed one, or that of the next in-scope sample. */
static int32_t select_location(void)
{
    if (g_cfg.fixed_loc >= 0) return g_cfg.fixed_loc;
    int32_t loc = atomic_exchange(&g_last_loc, -1);
    for (int i = 0; loc < 0 && i < 100; i++) {
        if (wait_until(op_now_ns() + 1000000)) return -1;
        loc = atomic_exchange(&g_last_loc, -1);
    }
    return loc;
}

/* One experiment of `length` ns on `loc`; returns the smallest visit count of a point. */
static uint64_t run_experiment(int32_t loc, uint32_t speedup, uint64_t length)
{
    static op_causal_point_snapshot before[OP_CAUSAL_MAX_POINTS], after[OP_CAUSAL_MAX_POINTS];
    uint32_t nb = op_causal_progress_snapshot(before, OP_CAUSAL_MAX_POINTS);
    uint64_t g0 = atomic_load(&g_global_delay), hits0 = atomic_load(&g_selected_hits);
    atomic_store(&g_speedup_pct, speedup);
    atomic_store(&g_selected, loc);
    uint64_t t0 = op_now_ns();
    atomic_store(&g_active, 1);
    bool stopped = wait_until(t0 + length);
    atomic_store(&g_active, 0);
    atomic_store(&g_selected, -1);
    uint64_t t1 = op_now_ns();
    uint64_t g1 = atomic_load(&g_global_delay), hits1 = atomic_load(&g_selected_hits);
    if (stopped) return 0; /* cut short by the end of the run: biased, dropped */
    uint32_t na = op_causal_progress_snapshot(after, OP_CAUSAL_MAX_POINTS);
    uint64_t min_delta = UINT64_MAX;
    for (uint32_t i = 0; i < na; i++) {
        uint64_t d = after[i].count - (i < nb ? before[i].count : 0);
        if (d < min_delta) min_delta = d;
    }
    emit_experiment(g_cfg.function_mode ? OMNIPROF_CAUSAL_EXPERIMENT_FUNCTION : OMNIPROF_CAUSAL_EXPERIMENT_LINE, t0,
                    t1, g1 - g0, hits1 - hits0, speedup, loc, before, nb, after, na);
    return na ? min_delta : 0;
}

/* End-to-end: one experiment from the start of the run to its end, on the location of the
 * first in-scope sample (or the fixed one); op_causal_flush(final) emits it. */
static void end_to_end_main(void)
{
    int32_t loc = -1;
    while (loc < 0 && !atomic_load(&g_stop)) loc = select_location();
    if (loc < 0) return;
    uint32_t speedup = draw_speedup();
    g_e2e_n = op_causal_progress_snapshot(g_e2e_points, OP_CAUSAL_MAX_POINTS);
    g_e2e_global0 = atomic_load(&g_global_delay);
    g_e2e_hits0 = atomic_load(&g_selected_hits);
    g_e2e_speedup = speedup;
    atomic_store(&g_speedup_pct, speedup);
    atomic_store(&g_selected, loc);
    atomic_store(&g_e2e_started, 1);
    atomic_store(&g_active, 1);
    wait_until(UINT64_MAX);
}

static void *experiment_main(void *arg)
{
    (void)arg;
    uint64_t length = g_cfg.min_length_ns, waited_since = op_now_ns();
    int doublings = 0;
    bool warned_rare = false, warned_unsampled = false;
    if (wait_until(g_start_ns + g_cfg.delay_ns)) goto out;
    waited_since = op_now_ns();
    if (g_cfg.end_to_end) {
        end_to_end_main();
        goto out;
    }
    while (!atomic_load(&g_stop) && !past_window()) {
        if (!op_causal_progress_seen()) {
            if (op_now_ns() - waited_since > NO_PROGRESS_WARN_NS && !atomic_exchange(&g_warned_no_progress, 1))
                op_warn("causal: no progress point has been visited after %llu s; experiments wait for one (add "
                        "COZ_PROGRESS or omniprof_progress() where the program completes work, or measure the whole "
                        "run with end-to-end mode: omniprof causal -e)",
                        (unsigned long long)(NO_PROGRESS_WARN_NS / 1000000000ull));
            if (wait_until(op_now_ns() + 10000000)) break;
            continue;
        }
        int32_t loc = select_location();
        if (loc < 0) {
            /* Samples land, none in the code that may be selected: a line that runs for less
             * than a sampling period at a time is rarely or never the sampled instruction. */
            uint64_t seen = atomic_load(&g_samples_seen);
            if (!atomic_load(&g_samples_in_scope) && seen >= NO_SAMPLE_WARN_SAMPLES &&
                op_now_ns() - waited_since > NO_SAMPLE_WARN_NS && !warned_unsampled) {
                op_warn("causal: none of the %llu samples so far landed in the code that may be selected "
                        "(--source-scope/--function-scope/--binary-scope); no experiment can run. A line "
                        "that runs for less than a sampling period (%llu us of CPU time) at a stretch is "
                        "rarely the sampled one: select its function instead (--mode function "
                        "--function-scope RE), or sample more often (--sample-period-us, down to 100)",
                        (unsigned long long)seen, (unsigned long long)(g_cfg.period_ns / 1000u));
                warned_unsampled = true;
            }
            if (wait_until(op_now_ns() + 10000000)) break;
            continue;
        }
        uint64_t min_delta = run_experiment(loc, draw_speedup(), length);
        if (atomic_load(&g_stop)) break;
        if (min_delta < TARGET_DELTA) {
            if (length < g_cfg.min_length_ns * MAX_LENGTH_FACTOR) length *= 2;
            if (++doublings >= 5 && !warned_rare) {
                op_warn("causal: progress points are rare (fewer than %d visits in an experiment); experiments now "
                        "last %llu ms (run longer, or put the progress point where work completes more often)",
                        TARGET_DELTA, (unsigned long long)(length / 1000000ull));
                warned_rare = true;
            }
        } else {
            doublings = 0;
            if (min_delta > 4 * TARGET_DELTA && length >= 2 * g_cfg.min_length_ns) length /= 2;
        }
        if (wait_until(op_now_ns() + COOL_OFF_NS)) break;
    }
out:
    atomic_store(&g_thread_running, 0);
    return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* Configuration and life cycle.                                                            */

static int parse_speedups(const char *text)
{
    g_cfg.n_speedups = 0;
    for (const char *p = text; p && *p;) {
        while (*p == ',' || *p == ' ' || *p == ';') p++;
        if (!*p) break;
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 100) {
            op_error("causal: OMNIPROF_CAUSAL_SPEEDUPS='%s' is not valid; expected percentages 0..100 separated by "
                     "commas; drawing speedups at random",
                     text);
            g_cfg.n_speedups = 0;
            return -1;
        }
        if (g_cfg.n_speedups < sizeof g_cfg.speedups / sizeof g_cfg.speedups[0]) g_cfg.speedups[g_cfg.n_speedups++] = (uint32_t)v;
        p = end;
    }
    return 0;
}

static void begin_cb(op_cpu_thread *t, void *data)
{
    (void)data;
    op_causal_thread_begin(t, atomic_load(&g_global_delay), false);
}

static bool read_settings(op_causal_scope_cfg *scope)
{
    g_cfg.function_mode = strcmp(op_setting_str(OP_SET_CAUSAL_MODE), "function") == 0;
    g_cfg.end_to_end = op_setting_bool(OP_SET_CAUSAL_END_TO_END);
    uint64_t us = op_setting_uint(OP_SET_CAUSAL_SAMPLE_PERIOD_US);
    if (us < 100 || us > 100000) {
        op_warn("causal: OMNIPROF_CAUSAL_SAMPLE_PERIOD_US=%llu is out of 100..100000; using 1000",
                (unsigned long long)us);
        us = 1000;
    }
    g_cfg.period_ns = us * 1000u;
    uint64_t ms = op_setting_uint(OP_SET_CAUSAL_EXPERIMENT_MS);
    g_cfg.min_length_ns = (ms ? ms : 1) * 1000000ull;
    double d = op_setting_double(OP_SET_CAUSAL_DELAY), u = op_setting_double(OP_SET_CAUSAL_DURATION);
    g_cfg.delay_ns = d > 0 && d < 1e6 ? (uint64_t)(d * 1e9) : 0;
    g_cfg.duration_ns = u > 0 && u < 1e6 ? (uint64_t)(u * 1e9) : 0;
    parse_speedups(op_setting_str(OP_SET_CAUSAL_SPEEDUPS));
    g_cfg.seed = op_setting_uint(OP_SET_CAUSAL_SEED);
    g_rng = g_cfg.seed ? g_cfg.seed : (op_now_ns() ^ ((uint64_t)getpid() << 32)) | 1;
    g_deck_n = g_deck_next = 0; /* a new deck, from this seed */
    scope->function_mode = g_cfg.function_mode;
    scope->binary_scope = op_setting_str(OP_SET_CAUSAL_BINARY_SCOPE);
    scope->binary_exclude = op_setting_str(OP_SET_CAUSAL_BINARY_EXCLUDE);
    scope->source_scope = op_setting_str(OP_SET_CAUSAL_SOURCE_SCOPE);
    scope->source_exclude = op_setting_str(OP_SET_CAUSAL_SOURCE_EXCLUDE);
    scope->function_scope = op_setting_str(OP_SET_CAUSAL_FUNCTION_SCOPE);
    scope->function_exclude = op_setting_str(OP_SET_CAUSAL_FUNCTION_EXCLUDE);
    return true;
}

void op_causal_start(void)
{
    if (atomic_load(&g_op_causal_on)) return;
    op_causal_scope_cfg scope;
    memset(&scope, 0, sizeof scope);
    read_settings(&scope);
    char err[1024] = "";
    if (op_causal_scope_build(&scope, err, sizeof err) != 0) {
        op_error("causal: %s; causal profiling off", err);
        return;
    }
    if (dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault")) /* docs/causal.md, "Python programs" */
        op_warn("causal: a Python program: experiments select native %ss (the interpreter's, C "
                "extensions'), never a Python function, whose code all runs in the interpreter's "
                "eval loop; docs/causal.md, \"Python programs\"",
                g_cfg.function_mode ? "function" : "line");
    g_cfg.fixed_loc = -1;
    const char *fixed = op_setting_str(OP_SET_CAUSAL_FIXED_LINE);
    if (fixed && *fixed) {
        g_cfg.fixed_loc = op_causal_scope_find(fixed);
        if (g_cfg.fixed_loc < 0) {
            op_error("causal: OMNIPROF_CAUSAL_FIXED_LINE='%s' is not a %s in scope (give 'file:line' with a path "
                     "suffix of the file, or the function's name); causal profiling off",
                     fixed, g_cfg.function_mode ? "function" : "line");
            return;
        }
    }
    if (op_causal_sampler_setup(SIGRTMIN + (int)op_setting_uint(OP_SET_CAUSAL_SIGNAL), g_cfg.period_ns,
                                op_setting_str(OP_SET_CAUSAL_BACKEND)) != 0)
        return;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g_cond, &ca);
    pthread_condattr_destroy(&ca);
    op_causal_progress_enable(op_setting_bool(OP_SET_CAUSAL_RANGE_PROGRESS));
    if (omniprof_preload_register(&g_causal_preload_hooks) != 0)
        op_warn("causal: cannot register with the preload library (%s); waits are not credited", strerror(errno));
    g_start_ns = op_now_ns();
    atomic_store(&g_op_causal_on, 1);
    op_cpu_threads_foreach(begin_cb, NULL);
    atomic_store(&g_thread_running, 1);
    pthread_t th;
    if (op_sdk_create_thread(&th, experiment_main, NULL, OMNIPROF_LIBRARY, "omniprof.causal") != 0) {
        atomic_store(&g_thread_running, 0);
        op_error("causal: cannot start the experiment thread; causal profiling off");
        atomic_store(&g_op_causal_on, 0);
        op_causal_sampler_stop_all();
    }
    op_info("causal: %s mode, sample period %llu us, experiments of %llu ms and more",
            g_cfg.function_mode ? "function" : "line", (unsigned long long)(g_cfg.period_ns / 1000u),
            (unsigned long long)(g_cfg.min_length_ns / 1000000u));
}

void op_causal_flush(bool final)
{
    if (!final || !atomic_load(&g_op_causal_on) || getpid() != g_op_cpu_pid) return; /* not a vfork child */
    int32_t loc = atomic_load(&g_selected);
    atomic_store(&g_active, 0); /* invariant 3: from here on nobody pays */
    pthread_mutex_lock(&g_lock);
    atomic_store(&g_stop, 1);
    pthread_cond_broadcast(&g_cond);
    pthread_mutex_unlock(&g_lock);
    for (int i = 0; i < 1000 && atomic_load(&g_thread_running); i++) { /* invariant 4 */
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    atomic_store(&g_op_causal_on, 0);
    op_causal_sampler_stop_all();
    if (atomic_load(&g_e2e_started) && !atomic_load(&g_thread_running)) {
        static op_causal_point_snapshot after[OP_CAUSAL_MAX_POINTS];
        op_causal_progress_end_to_end();
        uint32_t n = op_causal_progress_snapshot(after, OP_CAUSAL_MAX_POINTS);
        emit_experiment(OMNIPROF_CAUSAL_EXPERIMENT_END_TO_END, g_start_ns, op_now_ns(),
                        atomic_load(&g_global_delay) - g_e2e_global0, atomic_load(&g_selected_hits) - g_e2e_hits0,
                        g_e2e_speedup, loc, g_e2e_points, g_e2e_n, after, n);
    } else if (g_cfg.end_to_end) {
        op_warn("causal: end-to-end mode: no sample of the run fell in scope; no experiment");
    } else if (!op_causal_progress_seen() && !atomic_exchange(&g_warned_no_progress, 1)) {
        /* A short run ends before the warning above is due: say it at the end instead. */
        op_warn("causal: the run visited no progress point, so no experiment ran (add COZ_PROGRESS or "
                "omniprof_progress() where the program completes work, or measure the whole run with end-to-end "
                "mode: omniprof causal -e)");
    }
}

void op_causal_at_fork_child(void)
{
    if (!atomic_load(&g_op_causal_on)) return;
    /* The experiment thread does not exist here; the child runs no experiments (its own
     * experiments would need their own run: exec'd children start afresh). */
    atomic_store(&g_op_causal_on, 0);
    atomic_store(&g_active, 0);
    op_cpu_thread *t = op_cpu_tls_thread;
    if (t) {
        atomic_store(&t->causal.armed, 0);
        if (t->causal.perf_fd >= 0) op_fd_close(t->causal.perf_fd); /* counts the parent's thread */
        if (t->causal.sched_fd >= 0) close(t->causal.sched_fd);
        t->causal.perf_fd = t->causal.sched_fd = -1;
        t->causal.timer_made = false; /* timers are not inherited */
    }
}
