/* tool_signals.c — the tool's signal handling: flush on SIGINT, SIGTERM, SIGQUIT, SIGABRT (and
 * on SIGSEGV, SIGBUS, SIGFPE, SIGILL when the program has no handler of its own for them, and on
 * every other signal whose default action ends the process — SIGHUP, SIGPIPE, SIGALRM, SIGUSR1,
 * ... — while the program leaves it at SIG_DFL), then pass the signal on
 * to the program's own handler or default action. The program's `signal` and `sigaction` reach
 * op_tool_sigaction_hook through libomniprof-preload.so (src/preload/signal_interpose.c), so
 * that the tool's handler stays first (rocprofv3 does the same, docs/run.md).
 *
 * Design:
 *  - The handler does no real work itself: it posts a semaphore (sem_post is async-signal-safe)
 *    to a helper thread, which flushes the buffers and commits or closes the database, and it
 *    polls (nanosleep, clock_gettime) for that flush to finish, at most
 *    OMNIPROF_SIGNAL_FLUSH_TIMEOUT_MS. Nothing in the handler allocates, locks or does stdio.
 *  - "Final" flush (the program has no handler and the signal's default action ends the
 *    process): collection stops and the database is closed. Otherwise (the program handles
 *    the signal and may go on) the data is only committed.
 *  - Passing on: a program handler is called with the arguments its flags ask for (SA_SIGINFO
 *    or not); SA_RESETHAND is honoured; SIG_IGN does nothing; SIG_DFL restores the default
 *    action and re-raises the signal with it unblocked, so the process ends exactly as it
 *    would have without the tool (same signal, same status, core dump where enabled).
 *  - The program's view: sigaction/signal on an owned signal store the program's action in
 *    g_app[] and return the previous one, as the kernel would have. For any other signal
 *    they pass straight through.
 *  - Three classes of owned signals: "flush" signals (SIGINT, SIGTERM, SIGQUIT, SIGABRT) stay
 *    owned whatever the program installs, and a program handler is called after a commit;
 *    "fault" and "default-only" signals are owned only while the program leaves them at
 *    SIG_DFL: as soon as it installs a handler (or SIG_IGN) the tool steps aside and the
 *    program's action goes to the kernel, so a signal a program uses for itself (SIGUSR1,
 *    SIGALRM, SIGPROF, SIGSEGV in a JIT) costs nothing. A signal ignored at start (nohup) is
 *    never owned.
 * Invariants:
 *  (1) The handler is async-signal-safe (only sem_post, nanosleep, clock_gettime, atomics,
 *      sigaction, sigprocmask, raise, kill).
 *  (2) A synchronous fault (SIGSEGV...) raised inside the helper thread is never waited on by
 *      itself: the helper blocks every signal, and a fault there goes straight to the default
 *      action. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/settings.h"
#include "omniprof/defines.h"
#include "preload/preload.h"
#include "tool/tool.h"

#define MAX_SIG 65

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
static struct sigaction g_app[MAX_SIG];   /* the program's action for each owned signal */
static _Atomic int g_owned[MAX_SIG];      /* our handler is installed for this signal */
static _Atomic int g_installed;

static sem_t g_sem;
static _Atomic int g_helper_running;
static _Atomic int g_helper_exit;    /* a detach asks the helper to end (op_tool_signals_park) */
static _Atomic uint64_t g_requests;  /* flushes asked for */
static _Atomic uint64_t g_done;      /* flushes completed */
static _Atomic int g_final_request;
static uint64_t g_timeout_ms = 2000;

static const int g_flush_signals[] = {SIGINT, SIGTERM, SIGQUIT, SIGABRT};
static const int g_fault_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
/* Default action "terminate" or "core" (signal(7)). The real-time signals are left alone: the
 * CPU sampler takes two of them (SIGRTMIN+4/+5 by default) and runtimes use others. */
static const int g_default_only_signals[] = {SIGHUP, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGSTKFLT, SIGXCPU,
                                             SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO, SIGPWR, SIGSYS, SIGTRAP};
static _Atomic int g_default_only[MAX_SIG]; /* owned only while the program leaves it at SIG_DFL */

static sigaction_fn real_sigaction(void) { return omniprof_preload_real_sigaction; }

static bool is_fault(int sig)
{
    for (size_t i = 0; i < sizeof(g_fault_signals) / sizeof(g_fault_signals[0]); i++)
        if (g_fault_signals[i] == sig) return true;
    return false;
}

/* Owned only while at SIG_DFL: the faults and the default-only signals. */
static bool default_only(int sig) { return is_fault(sig) || atomic_load(&g_default_only[sig]); }

static bool app_has_function(int sig)
{
    void (*h)(int) = g_app[sig].sa_handler;
    return h != SIG_DFL && h != SIG_IGN;
}

/* ------------------------------------------------------------------------------------------ */
/* The helper thread.                                                                          */

static void *helper_main(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "omniprof-signal", 0, 0, 0);
    for (;;) {
        while (sem_wait(&g_sem) != 0 && errno == EINTR) {}
        if (atomic_load(&g_helper_exit)) break;
        uint64_t want = atomic_load(&g_requests);
        bool final = atomic_exchange(&g_final_request, 0) != 0;
        op_tool_flush_now(final, g_timeout_ms);
        atomic_store(&g_done, want);
    }
    atomic_store(&g_helper_running, 0);
    return NULL;
}

static void start_helper(void)
{
    if (sem_init(&g_sem, 0, 0) != 0) return;
    atomic_store(&g_helper_running, op_tool_start_thread(helper_main, NULL) == 0);
}

/* Ask the helper to flush and wait for it, bounded (invariant 1). */
static void flush_from_handler(bool final)
{
    if (!atomic_load(&g_helper_running) || !op_tool_active()) return;
    if (final) atomic_store(&g_final_request, 1);
    uint64_t ticket = atomic_fetch_add(&g_requests, 1) + 1;
    sem_post(&g_sem);
    uint64_t deadline = op_now_ns() + g_timeout_ms * 1000000ull;
    while (atomic_load(&g_done) < ticket && op_now_ns() < deadline) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&g_done) < ticket) op_log_raw("omniprof: flush after a signal timed out; data since the last flush may be missing\n");
}

/* ------------------------------------------------------------------------------------------ */
/* The handler.                                                                                */

static void tool_handler(int sig, siginfo_t *info, void *uctx)
{
    int saved_errno = errno;
    struct sigaction app = g_app[sig];
    bool has_fn = app_has_function(sig);
    if (!(is_fault(sig) && has_fn)) {
        /* Default action of all owned signals ends the process; SIG_IGN does not. */
        bool final = !has_fn && app.sa_handler != SIG_IGN;
        flush_from_handler(final);
    }
    if (has_fn) {
        if (app.sa_flags & SA_RESETHAND) {
            g_app[sig].sa_handler = SIG_DFL;
            g_app[sig].sa_flags &= ~SA_SIGINFO;
        }
        if (app.sa_flags & SA_SIGINFO) app.sa_sigaction(sig, info, uctx);
        else app.sa_handler(sig);
    } else if (app.sa_handler == SIG_DFL) {
        /* End the process exactly as the default action would. */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof(dfl));
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        real_sigaction()(sig, &dfl, NULL);
        atomic_store(&g_owned[sig], 0);
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, sig);
        pthread_sigmask(SIG_UNBLOCK, &s, NULL);
        if (info && info->si_code > 0 && is_fault(sig)) {
            /* a real fault: returning re-executes the faulting instruction under SIG_DFL */
        } else {
            raise(sig);
        }
    }
    errno = saved_errno;
}

/* Install the tool's handler for `sig`. Whether interrupted system calls restart follows the
 * program's own action (SA_RESTART), so that a program that relies on EINTR (CPython's ^C in
 * a blocking read, for one) behaves as without the tool. */
static int install_handler(int sig, const struct sigaction *app)
{
    sigaction_fn real = real_sigaction();
    if (!real) return -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = tool_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    if (app->sa_handler == SIG_DFL || app->sa_handler == SIG_IGN || (app->sa_flags & SA_RESTART))
        sa.sa_flags |= SA_RESTART;
    sigfillset(&sa.sa_mask);
    sigdelset(&sa.sa_mask, SIGSEGV);
    sigdelset(&sa.sa_mask, SIGBUS);
    sigdelset(&sa.sa_mask, SIGFPE);
    sigdelset(&sa.sa_mask, SIGILL);
    return real(sig, &sa, NULL);
}

static void own_signal(int sig)
{
    sigaction_fn real = real_sigaction();
    if (!real) return;
    struct sigaction old;
    if (real(sig, NULL, &old) != 0) return;
    if (old.sa_handler == SIG_IGN) return; /* nohup, a background job: the program never sees it */
    g_app[sig] = old;
    if (install_handler(sig, &old) == 0) atomic_store(&g_owned[sig], 1);
}

/* Faults and default-only signals: only when the program (or a runtime) has not claimed them
 * already. */
static void own_if_default(int sig)
{
    struct sigaction old;
    if (real_sigaction()(sig, NULL, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO))
        own_signal(sig);
}

void op_tool_signals_install(void)
{
    if (atomic_exchange(&g_installed, 1)) return;
    g_timeout_ms = op_setting_uint(OP_SET_SIGNAL_FLUSH_TIMEOUT_MS);
    start_helper();
    for (size_t i = 0; i < sizeof(g_flush_signals) / sizeof(g_flush_signals[0]); i++) own_signal(g_flush_signals[i]);
    for (size_t i = 0; i < sizeof(g_fault_signals) / sizeof(g_fault_signals[0]); i++) own_if_default(g_fault_signals[i]);
    for (size_t i = 0; i < sizeof(g_default_only_signals) / sizeof(g_default_only_signals[0]); i++) {
        atomic_store(&g_default_only[g_default_only_signals[i]], 1);
        own_if_default(g_default_only_signals[i]);
    }
}

/* omniprof attach's detach: the helper thread ends (bounded wait; the handlers stay, and
 * without a helper they only pass signals on to the program's actions). */
void op_tool_signals_park(void)
{
    if (!atomic_load(&g_helper_running)) return;
    atomic_store(&g_helper_exit, 1);
    sem_post(&g_sem);
    for (int i = 0; i < 2000 && atomic_load(&g_helper_running); i++) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* A re-attach: a new helper. */
void op_tool_signals_unpark(void)
{
    if (!atomic_load(&g_installed) || atomic_load(&g_helper_running)) return;
    atomic_store(&g_helper_exit, 0);
    sem_destroy(&g_sem);
    start_helper();
}

void op_tool_signals_after_fork_child(bool helper)
{
    if (!atomic_load(&g_installed)) return;
    atomic_store(&g_requests, 0);
    atomic_store(&g_done, 0);
    atomic_store(&g_final_request, 0);
    atomic_store(&g_helper_running, 0);
    if (helper && !atomic_load(&g_helper_exit)) start_helper(); /* a parked (detached) tool stays so */
    else atomic_store(&g_helper_exit, 1);                        /* parked: unpark starts one */
}

/* ------------------------------------------------------------------------------------------ */
/* The program's signal/sigaction.                                                             */

bool op_tool_sigaction_hook(int sig, const struct sigaction *act, struct sigaction *oldact, int *rc)
{
    if (sig <= 0 || sig >= MAX_SIG || !atomic_load(&g_owned[sig])) return false;
    /* An owned signal: keep our handler installed; record the program's action. */
    struct sigaction prev = g_app[sig];
    *rc = 0;
    if (act) {
        bool custom = act->sa_handler != SIG_DFL || (act->sa_flags & SA_SIGINFO);
        if (default_only(sig) && custom) {
            /* The program takes this signal over (a handler, or SIG_IGN): give it back. */
            atomic_store(&g_owned[sig], 0);
            g_app[sig] = *act;
            *rc = real_sigaction()(sig, act, NULL);
            if (oldact && *rc == 0) *oldact = prev;
            return true;
        }
        g_app[sig] = *act;
        if ((act->sa_flags & SA_RESTART) != (prev.sa_flags & SA_RESTART)) install_handler(sig, act);
    }
    if (oldact) *oldact = prev;
    return true;
}
