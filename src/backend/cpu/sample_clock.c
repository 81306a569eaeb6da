/* sample_clock.c — what fires a thread's call-stack samples.
 *
 * The real-time sampler uses a POSIX timer on CLOCK_MONOTONIC. The CPU-time sampler prefers the
 * thread's perf `task-clock` software event in sampling mode: the kernel runs an hrtimer for
 * the event while the thread is on a CPU, carries what is left of the period across context
 * switches, and signals the thread when a period of its CPU time has passed. A POSIX timer on
 * the thread's CPU-time clock (the fallback) is checked only at the scheduler tick: at 250 Hz a
 * 1 kHz timer fires every 4 ms of CPU at best, and which instruction a sample lands on then
 * depends on how the program's loops line up with the tick, which under load (other threads
 * taking parts of ticks) shifts the shares of short alternating phases by several points.
 *
 * Task-clock events are opened without exclude_kernel, so the CPU a thread spends in system
 * calls keeps counting as it does for the POSIX clock (an event that skips kernel time would
 * under-sample code that makes system calls). Where perf_event_paranoid refuses that (or perf
 * is absent), the sampler falls back to POSIX timers, says so once at info level, and the run's
 * summary line counts which threads had which (op_cpu_clock_counts).
 *
 * Delivery: O_ASYNC + F_SETSIG (our real-time signal) + F_SETOWN_EX(F_OWNER_TID), so the signal
 * goes to the sampled thread, with si_code POLL_IN/POLL_HUP and si_fd the event's number as it
 * was when O_ASYNC was set (t->clock_tag: a later relocation of the number does not change what
 * the kernel reports). The event is armed for one overflow at a time (PERF_EVENT_IOC_REFRESH 1)
 * and the handler re-arms it: however long a thread keeps the signal blocked, at most one
 * signal of its sampler is pending. (Armed for many overflows, a thread that blocks signals
 * queues one per period for as long as it blocks them — the kernel's own notifications are not
 * held to RLIMIT_SIGPENDING — and where one cannot be queued the kernel sends SIGIO instead,
 * whose default action ends the program. cpu.cputime_exact measured 298 queued in 300 ms.)
 *
 * op_cpu_clock_disarm and op_cpu_clock_refresh are async-signal-safe (timer_settime, ioctl). */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"
#include "common/fd_guard.h"
#include "common/log.h"

static _Atomic int g_perf_refused;          /* the kernel refused task-clock: timers from now on */
static _Atomic uint64_t g_n_task_clock, g_n_timer; /* CPU-time samplers of each kind */

void op_cpu_clock_counts(uint64_t *task_clock, uint64_t *timer)
{
    *task_clock = atomic_load(&g_n_task_clock);
    *timer = atomic_load(&g_n_timer);
}

/* A task-clock event of thread `tid` that signals it with `signo` every `period` ns of its
 * CPU time; adopted above the fd floor, disabled. -1 (errno set) if the kernel refuses. The
 * causal sampler (causal_sampler.c) uses the same event, armed one overflow at a time too. */
int op_cpu_task_clock_open(pid_t tid, uint64_t period, int signo)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.sample_period = period;
    attr.disabled = 1;
    attr.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) return -1;
    fd = op_fd_adopt(fd, OP_FD_IDENTITY);
    if (fd < 0) return -1;
    struct f_owner_ex owner = {F_OWNER_TID, tid};
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETOWN_EX, &owner) != 0 || fcntl(fd, F_SETSIG, signo) != 0 ||
        fcntl(fd, F_SETFL, fl | O_ASYNC) != 0) {
        int e = errno;
        op_fd_close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static bool refused(int e) { return e == EACCES || e == EPERM || e == ENOENT || e == ENOSYS || e == EOPNOTSUPP; }

bool op_cpu_clock_make(op_cpu_thread *t, int type, int signo, uint64_t period, bool task_clock)
{
    t->clock_fd[type] = -1;
    if (type == OP_CPU_TIMER_CPUTIME && task_clock && !atomic_load(&g_perf_refused)) {
        int fd = op_cpu_task_clock_open(t->tid, period, signo);
        if (fd >= 0) {
            t->clock_fd[type] = t->clock_tag[type] = fd;
            t->timer_made[type] = true;
            atomic_fetch_add(&g_n_task_clock, 1);
            return true;
        }
        if (refused(errno) && !atomic_exchange(&g_perf_refused, 1))
            op_info("cpu: the perf task-clock event is not available (%s; kernel.perf_event_paranoid may forbid "
                    "it); CPU-time samples fire on POSIX CPU-time timers, which the kernel checks at each "
                    "scheduler tick",
                    strerror(errno));
    }
    clockid_t clk = CLOCK_MONOTONIC;
    if (type == OP_CPU_TIMER_CPUTIME && !t->pthread) /* adopted (adopt.c): the kernel's id of its CPU clock */
        clk = (clockid_t)((~(unsigned)t->tid << 3) | 6); /* MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) */
    else if (type == OP_CPU_TIMER_CPUTIME && pthread_getcpuclockid(t->pthread, &clk) != 0)
        return false;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = signo;
    sev.sigev_value.sival_int = OP_CPU_SIGVAL_MAGIC + type;
    sev._sigev_un._tid = t->tid;
    if (timer_create(clk, &sev, &t->timers[type]) != 0) return false;
    t->timer_made[type] = true;
    if (type == OP_CPU_TIMER_CPUTIME) atomic_fetch_add(&g_n_timer, 1);
    return true;
}

/* Arm a task-clock event for its next overflow, and only that one (async-signal-safe). */
void op_cpu_task_clock_refresh(int fd)
{
    if (fd >= 0) ioctl(op_fd_resolve(fd), PERF_EVENT_IOC_REFRESH, 1);
}

/* After a sample (the handler): a task-clock event takes its next overflow. */
void op_cpu_clock_refresh(op_cpu_thread *t, int type)
{
    if (t->timer_made[type] && t->clock_fd[type] >= 0) op_cpu_task_clock_refresh(t->clock_fd[type]);
}

/* Start it: a first expiry after `first` ns, then every `period` ns (the task-clock event's
 * period is fixed at its creation, and its first expiry is one period). */
void op_cpu_clock_arm(op_cpu_thread *t, int type, uint64_t period, uint64_t first)
{
    if (!t->timer_made[type]) return;
    if (t->clock_fd[type] >= 0) {
        op_cpu_clock_refresh(t, type);
        return;
    }
    struct itimerspec its;
    its.it_interval.tv_sec = (time_t)(period / 1000000000u);
    its.it_interval.tv_nsec = (long)(period % 1000000000u);
    its.it_value.tv_sec = (time_t)(first / 1000000000u);
    its.it_value.tv_nsec = (long)(first % 1000000000u);
    timer_settime(t->timers[type], 0, &its, NULL);
}

void op_cpu_clock_disarm(op_cpu_thread *t, int type)
{
    if (!t->timer_made[type]) return;
    if (t->clock_fd[type] >= 0) {
        ioctl(op_fd_resolve(t->clock_fd[type]), PERF_EVENT_IOC_DISABLE, 0);
        return;
    }
    struct itimerspec zero = {{0, 0}, {0, 0}};
    timer_settime(t->timers[type], 0, &zero, NULL);
}

void op_cpu_clock_delete(op_cpu_thread *t, int type)
{
    if (!t->timer_made[type]) return;
    if (t->clock_fd[type] >= 0) {
        ioctl(op_fd_resolve(t->clock_fd[type]), PERF_EVENT_IOC_DISABLE, 0);
        op_fd_close(t->clock_fd[type]);
        t->clock_fd[type] = -1;
    } else {
        timer_delete(t->timers[type]);
    }
    t->timer_made[type] = false;
}

/* Fork child: a POSIX timer is not inherited; an inherited task-clock fd counts the parent's
 * thread, so the child only lets go of its copy. */
void op_cpu_clock_forget(op_cpu_thread *t, int type)
{
    if (t->timer_made[type] && t->clock_fd[type] >= 0) op_fd_close(t->clock_fd[type]);
    t->clock_fd[type] = -1;
    t->timer_made[type] = false;
}

/* Whether a signal is a sample of timer `type` of thread t (t may be NULL: then only a POSIX
 * timer's signal can be recognised, by its value; a task-clock signal with no thread is one of
 * a thread already stopped, recognised by its fd being ours). */
int op_cpu_clock_signal_kind(const op_cpu_thread *t, int type, const siginfo_t *si)
{
    if (!si) return 0;
    if (si->si_code == SI_TIMER) return si->si_value.sival_int == OP_CPU_SIGVAL_MAGIC + type ? 1 : 0;
    if (si->si_code != POLL_IN && si->si_code != POLL_HUP) return 0;
    if (t) return t->clock_tag[type] > 0 && si->si_fd == t->clock_tag[type] ? 1 : 0;
    return op_fd_is_ours(si->si_fd) ? 2 : 0; /* ours, but not to record */
}
