/* causal_sampler.c — the causal engine's samples: one signal per period of a thread's CPU
 * time, and the handler that finds the in-scope code the thread was running and charges it.
 *
 * Backends (OMNIPROF_CAUSAL_BACKEND):
 *   perf   the call-stack sampler's per-thread task-clock event (sample_clock.c's
 *          op_cpu_task_clock_open: PERF_COUNT_SW_TASK_CLOCK, kernel time included) with
 *          sample_period = the causal period; its overflow notification is turned into a
 *          real-time signal to that very thread (F_SETOWN_EX/F_OWNER_TID, F_SETSIG, O_ASYNC),
 *          armed for one overflow at a time (PERF_EVENT_IOC_REFRESH 1, re-armed by the
 *          handler: a thread that blocks the signal has at most one pending). The kernel's
 *          hrtimer makes the period exact (1 ms by default), as Coz's perf sampling.
 *   timer  a thread CPU-time POSIX timer (timer_create on pthread_getcpuclockid,
 *          SIGEV_THREAD_ID). Expiries are checked at the scheduler tick (4 ms at 250 Hz), so
 *          a signal stands for si_overrun + 1 periods: samples are coarser, the total weight
 *          is the same.
 *   auto   perf, or timer where perf_event_open is refused (perf_event_paranoid, seccomp).
 * Neither counts while a thread is blocked or sleeping, so a waiting thread is never
 * interrupted. The signal is SIGRTMIN+OMNIPROF_CAUSAL_SIGNAL (6 by default); any other
 * delivery of it goes to the program's own handler (op_causal_chain_sigaction).
 *
 * The handler (async-signal-safe: clock_gettime, the lookup's binary search, libunwind's
 * local walker as in sampler.c, atomics, and clock_nanosleep through syscall(2) when the
 * thread must pay a delay):
 *   1. the interrupted pc, then each caller (return address - 1), is looked up in the scope
 *      (causal_scope.c); the first hit is the sample's location (Coz's rule: the innermost
 *      in-scope frame, so time in a library is charged to the line that called it);
 *   2. the wall time the thread was runnable since its previous sample (the sample's period of CPU
 *      time plus the time spent waiting for a CPU while preempted, from
 *      /proc/self/task/<tid>/schedstat, read with one pread; runnable_since_last) is what a hit of
 *      the selected code stands for: on a machine shared with other work a faster line saves wall
 *      time in proportion to the thread's share of a CPU, which CPU time alone would underestimate
 *      by that share; the wait for a CPU after a wake-up is left out (it does not shrink with the
 *      line);
 *   3. op_causal_on_sample() counts it and, during an experiment, adds the delay that hit
 *      stands for, then settles the thread's delay count (causal.c). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/causal.h"
#include "backend/cpu/cpu_internal.h"
#include "common/clock.h"
#include "common/fd_guard.h"
#include "common/log.h"
#include "preload/preload.h"

#define CAUSAL_SIGVAL_MAGIC 0x6f700100 /* 'op' << 16 | 1 << 8: the causal timer's sigev_value */
#define CAUSAL_UNWIND_MAX 32           /* callers examined for an in-scope frame */
#define CAUSAL_FD_FLOOR 1000           /* our descriptors live above the program's */

enum { BACKEND_PERF, BACKEND_TIMER };

static int g_signo;
static uint64_t g_period_ns;
static _Atomic int g_backend = BACKEND_PERF;
static bool g_auto;
static bool g_installed;
static struct sigaction g_chain; /* the program's action for our signal */
static bool g_chain_set;

bool op_causal_is_signal(int signo) { return g_installed && signo == g_signo; }

static void chain(int signo, siginfo_t *si, void *uc)
{
    if (!g_chain_set) return;
    if (g_chain.sa_flags & SA_SIGINFO) {
        if (g_chain.sa_sigaction) g_chain.sa_sigaction(signo, si, uc);
    } else if (g_chain.sa_handler != SIG_DFL && g_chain.sa_handler != SIG_IGN && g_chain.sa_handler) {
        g_chain.sa_handler(signo);
    }
}

/* Wall time the thread was runnable (running, or ready and waiting for a CPU) since its
 * previous sample: CPU time from the sample's own period (below), run-queue wait from the
 * kernel's per-thread schedstat ("<cpu ns> <run-queue wait ns> <slices>", one pread,
 * async-signal-safe). An interval in which the thread blocked, paused
 * or started (t->causal.interval_woke) also holds the wait for a CPU after the wake-up, which
 * a faster line would not save: such an interval counts its CPU time times the thread's
 * recent stretch (runnable / CPU time of its clean intervals, a moving average), a clean one
 * counts as measured. 0 when unknown (no schedstat): the caller counts the sample period. */
bool op_causal_sched_wait(const op_cpu_thread *t, uint64_t *wait_ns)
{
    if (t->causal.sched_fd < 0) return false;
    char buf[96];
    ssize_t n = pread(t->causal.sched_fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return false;
    buf[n] = '\0';
    uint64_t v[2] = {0, 0};
    const char *p = buf;
    for (int k = 0; k < 2; k++) {
        while (*p == ' ') p++;
        if (*p < '0' || *p > '9') return false;
        while (*p >= '0' && *p <= '9') v[k] = v[k] * 10 + (uint64_t)(*p++ - '0');
    }
    *wait_ns = v[1];
    return true;
}

static uint64_t runnable_since_last(op_cpu_thread *t, uint64_t weight)
{
    uint64_t rq;
    if (!op_causal_sched_wait(t, &rq)) return 0;
    /* The CPU time a sample stands for is its own period (weight periods: a timer signal
     * that stands for several overruns), the event's accounting: the task-clock overflows
     * after exactly one period of the thread's CPU time since it was armed or re-armed. Not
     * the thread's CPU clock or schedstat's CPU field since the previous sample: schedstat's
     * moves in scheduler-tick steps (4 ms at 250 Hz), and both count, in a new thread's first
     * interval, the CPU it spent before its sampler was armed (its start, the profiler's own
     * set-up of the thread: 2.7 ms on average against the 1 ms period on the loaded 2-core
     * VM), charged as time in the selected line. causal.short_threads at real-time priority:
     * 130 % (schedstat) and 212 % (CPU clock) of the documented delay, 105 % now (issue 35
     * item 1). The
     * run-queue wait only grows while the thread is off the CPU, so schedstat's value of it
     * is current here. */
    uint64_t cpu = weight * g_period_ns;
    bool known = t->causal.sched_known && rq >= t->causal.sched_wait;
    uint64_t wait = known ? rq - t->causal.sched_wait : 0;
    t->causal.sched_wait = rq;
    t->causal.sched_known = true;
    if (cpu == 0) cpu = 1;
    uint64_t span;
    if (known && !t->causal.interval_woke) {
        span = cpu + wait;
        uint64_t stretch = (span << 16) / cpu; /* 16.16 fixed point */
        if (stretch > (32u << 16)) stretch = 32u << 16;
        t->causal.stretch_q16 = (7 * t->causal.stretch_q16 + stretch) / 8;
    } else {
        span = (cpu * t->causal.stretch_q16) >> 16;
    }
    t->causal.interval_woke = false;
    uint64_t cap = 32 * weight * g_period_ns; /* a stale reading must not become a huge delay */
    return span > cap ? cap : span;
}

static void on_signal(int signo, siginfo_t *si, void *ucv)
{
    /* Ours: our timer's value, or a perf overflow notification (POLL_IN/POLL_HUP; the program
     * would have to F_SETSIG this very signal on an fd of its own to send those). One that
     * arrives after the thread's sampler was disarmed (a signal already queued when the thread
     * ends) is dropped, never passed on: the next handler may be a fatal one. */
    bool ours = si && ((si->si_code == SI_TIMER && si->si_value.sival_int == CAUSAL_SIGVAL_MAGIC) ||
                       si->si_code == POLL_IN || si->si_code == POLL_HUP);
    if (!ours) {
        chain(signo, si, ucv);
        return;
    }
    op_cpu_thread *t = op_cpu_tls_thread;
    if (!t || !atomic_load_explicit(&t->causal.armed, memory_order_acquire)) return;
    if (si->si_code != SI_TIMER && si->si_fd != t->causal.perf_fd) return;
    uint64_t weight = si->si_code == SI_TIMER ? (uint64_t)(si->si_overrun > 0 ? si->si_overrun : 0) + 1 : 1;
    int saved_errno = errno;
    ucontext_t *uc = ucv;
    int32_t loc = -1;
#if defined(__x86_64__)
    loc = op_causal_scope_lookup((uint64_t)uc->uc_mcontext.gregs[REG_RIP]);
#endif
    if (loc < 0) {
        uint64_t frames[CAUSAL_UNWIND_MAX];
        uint32_t n = op_cpu_unwind(uc, frames, CAUSAL_UNWIND_MAX);
        for (uint32_t i = 1; i < n && loc < 0; i++) loc = op_causal_scope_lookup(frames[i]);
    }
    op_causal_on_sample(t, loc, weight, runnable_since_last(t, weight));
    /* one overflow at a time: however long the thread blocks the signal, at most one is pending */
    if (si->si_code != SI_TIMER && atomic_load_explicit(&t->causal.armed, memory_order_acquire)) {
        if (!t->causal.phase_done) { /* the random first period is over: the regular one */
            uint64_t period = g_period_ns;
            ioctl(op_fd_resolve(t->causal.perf_fd), PERF_EVENT_IOC_PERIOD, &period);
            t->causal.phase_done = true;
        }
        op_cpu_task_clock_refresh(t->causal.perf_fd);
    }
    errno = saved_errno;
}

int op_causal_sampler_setup(int signo, uint64_t period_ns, const char *backend)
{
    g_signo = signo;
    g_period_ns = period_ns;
    g_auto = !backend || !*backend || strcmp(backend, "auto") == 0;
    atomic_store(&g_backend, backend && strcmp(backend, "timer") == 0 ? BACKEND_TIMER : BACKEND_PERF);
    if (signo < SIGRTMIN || signo > SIGRTMAX) {
        op_error("causal: signal %d is not a real-time signal (SIGRTMIN..SIGRTMAX = %d..%d); causal profiling off",
                 signo, SIGRTMIN, SIGRTMAX);
        return -1;
    }
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, signo);
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) /* never nested with the call-stack sampler */
        if (g_op_cpu_cfg.timer_on[i] && g_op_cpu_cfg.signo[i] >= SIGRTMIN) sigaddset(&sa.sa_mask, g_op_cpu_cfg.signo[i]);
    if (omniprof_preload_real_sigaction(signo, &sa, &old) != 0) {
        op_error("causal: cannot install the handler of signal SIGRTMIN+%d (%s); causal profiling off",
                 signo - SIGRTMIN, strerror(errno));
        return -1;
    }
    if ((old.sa_flags & SA_SIGINFO) ? old.sa_sigaction != NULL
                                    : (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)) {
        /* the tool's flush-then-die handler of unclaimed signals is chained silently */
        Dl_info info;
        void *h = (old.sa_flags & SA_SIGINFO) ? (void *)old.sa_sigaction : (void *)old.sa_handler;
        const char *base = dladdr(h, &info) && info.dli_fname ? strrchr(info.dli_fname, '/') : NULL;
        if (!base || strncmp(base + 1, "libomniprof", 11) != 0)
            op_warn("causal: the program already handles signal SIGRTMIN+%d, which the causal sampler uses; "
                    "signals not sent by omniprof go on to the program's handler (choose another with "
                    "OMNIPROF_CAUSAL_SIGNAL)",
                    signo - SIGRTMIN);
        g_chain = old;
        g_chain_set = true;
    }
    g_installed = true;
    return 0;
}

int op_causal_chain_sigaction(int signo, const struct sigaction *act, struct sigaction *old)
{
    if (!op_causal_is_signal(signo)) return 0;
    if (old) {
        if (g_chain_set) {
            *old = g_chain;
        } else {
            memset(old, 0, sizeof *old);
            old->sa_handler = SIG_DFL;
        }
    }
    if (act) {
        g_chain = *act;
        g_chain_set = true;
    }
    return 1;
}

static int high_fd(int fd)
{
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, CAUSAL_FD_FLOOR);
    if (moved < 0) return fd;
    close(fd);
    return moved;
}

/* The first period of a thread's sampler: uniform in (0, period]. Every sample stands for one
 * period, so the samples of a stretch of T ns of CPU must number T / period on average: with
 * the first overflow one whole period after the thread's sampler was armed, a thread that
 * lives a few periods got floor(T / period) samples, half a period short on average, its line
 * charged that much less delay (issue 35 item 2: a worker of 4 ms at 1 ms periods: 3.5
 * samples for 4, its line's predicted gain short by an eighth). A random phase makes the
 * count unbiased, as a sampler that runs across many threads' lives is. */
static uint64_t first_period(const op_cpu_thread *t)
{
    uint64_t x = ((uint64_t)t->tid * 0x9E3779B97F4A7C15ull) ^ op_now_ns();
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return 1 + x % g_period_ns;
}

static bool arm_perf(op_cpu_thread *t)
{
    t->causal.phase_done = false;
    int fd = op_cpu_task_clock_open(t->tid, first_period(t), g_signo); /* sample_clock.c's event */
    if (fd < 0) return false;
    t->causal.perf_fd = fd; /* also the si_fd of its signals (the number when O_ASYNC was set) */
    atomic_store_explicit(&t->causal.armed, 1, memory_order_release); /* before the first signal */
    if (ioctl(op_fd_resolve(fd), PERF_EVENT_IOC_REFRESH, 1) != 0) { /* enables, for one overflow */
        atomic_store(&t->causal.armed, 0);
        t->causal.perf_fd = -1;
        op_fd_close(fd);
        return false;
    }
    return true;
}

static bool arm_timer(op_cpu_thread *t)
{
    clockid_t clk;
    if (pthread_getcpuclockid(t->pthread, &clk) != 0) return false;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = g_signo;
    sev.sigev_value.sival_int = CAUSAL_SIGVAL_MAGIC;
    sev._sigev_un._tid = t->tid;
    if (timer_create(clk, &sev, &t->causal.timer) != 0) return false;
    t->causal.timer_made = true;
    atomic_store_explicit(&t->causal.armed, 1, memory_order_release);
    struct itimerspec its;
    its.it_interval.tv_sec = (time_t)(g_period_ns / 1000000000u);
    its.it_interval.tv_nsec = (long)(g_period_ns % 1000000000u);
    uint64_t first = first_period(t);
    its.it_value.tv_sec = (time_t)(first / 1000000000u);
    its.it_value.tv_nsec = (long)(first % 1000000000u);
    timer_settime(t->causal.timer, 0, &its, NULL);
    return true;
}

/* A thread created since the start counts from its birth (its counters start at 0, so the
 * wait for its first CPU belongs to its first sample); a thread that existed before counts
 * from now. */
static void open_schedstat(op_cpu_thread *t, bool fresh)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", (int)t->tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    t->causal.sched_fd = fd >= 0 ? high_fd(fd) : -1;
    t->causal.sched_wait = 0;
    t->causal.sched_known = fresh;
    t->causal.stretch_q16 = 1u << 16;
    t->causal.interval_woke = true; /* its first interval holds its wait to start */
    if (!fresh) runnable_since_last(t, 1);
}

void op_causal_sampler_arm(op_cpu_thread *t, bool fresh)
{
    if (!g_installed || t->is_internal || atomic_load(&t->causal.armed)) return;
    open_schedstat(t, fresh);
    if (t == op_cpu_tls_thread) { /* the signal must reach the thread even if its creator blocked it */
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, g_signo);
        pthread_sigmask(SIG_UNBLOCK, &s, NULL);
    }
    if (atomic_load(&g_backend) == BACKEND_PERF) {
        if (arm_perf(t)) return;
        if (!g_auto) {
            static _Atomic int warned;
            if (!atomic_exchange(&warned, 1))
                op_warn("causal: perf_event_open of a task-clock sampler failed for thread %d (%s); that thread is "
                        "not sampled (OMNIPROF_CAUSAL_BACKEND=timer avoids perf)",
                        (int)t->tid, strerror(errno));
            return;
        }
        op_info("causal: perf task-clock sampling is not available (%s); using thread CPU-time timers",
                strerror(errno));
        atomic_store(&g_backend, BACKEND_TIMER);
    }
    if (!arm_timer(t)) {
        static _Atomic int warned;
        if (!atomic_exchange(&warned, 1))
            op_warn("causal: no CPU-time timer for thread %d (%s); that thread is not sampled", (int)t->tid,
                    strerror(errno));
    }
}

void op_causal_sampler_disarm(op_cpu_thread *t)
{
    atomic_store_explicit(&t->causal.armed, 0, memory_order_release);
    if (t->causal.perf_fd >= 0) {
        ioctl(op_fd_resolve(t->causal.perf_fd), PERF_EVENT_IOC_DISABLE, 0);
        op_fd_close(t->causal.perf_fd);
        t->causal.perf_fd = -1;
    }
    if (t->causal.timer_made) {
        timer_delete(t->causal.timer);
        t->causal.timer_made = false;
    }
    if (t->causal.sched_fd >= 0) close(t->causal.sched_fd);
    t->causal.sched_fd = -1;
}

static void quiet_cb(op_cpu_thread *t, void *data)
{
    (void)data;
    atomic_store_explicit(&t->causal.armed, 0, memory_order_release);
    if (t->causal.perf_fd >= 0) ioctl(op_fd_resolve(t->causal.perf_fd), PERF_EVENT_IOC_DISABLE, 0);
    if (t->causal.timer_made) {
        struct itimerspec zero;
        memset(&zero, 0, sizeof zero);
        timer_settime(t->causal.timer, 0, &zero, NULL);
    }
}

/* Another thread's descriptor is not closed here (the thread closes it when it exits). */
void op_causal_sampler_stop_all(void) { op_cpu_threads_foreach(quiet_cb, NULL); }
