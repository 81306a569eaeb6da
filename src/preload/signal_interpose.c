/* signal_interpose.c — the program's sigaction and signal.
 *
 * A signal can be owned by one client: the tool (its flush-on-signal handler, tool_signals.c)
 * or the CPU backend (its sampling signals, sampler.c). The program's sigaction on a signal is
 * offered to each client in order; the owner records the program's action and answers with the
 * previous one, as the kernel would have, while its own handler stays installed and passes the
 * signal on. A signal nobody owns goes to libc unchanged. signal() is sigaction with glibc's
 * BSD semantics (SA_RESTART, the signal blocked in its handler), because glibc's own signal()
 * calls its internal sigaction, which no interposer sees.
 * The profiler installs its own handlers with omniprof_preload_real_sigaction.
 * setitimer: a program that arms ITIMER_PROF or ITIMER_VIRTUAL profiles itself; clients'
 * self_profiling hook hears of it (the CPU backend says once that both work), then libc's. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>

#include "preload/preload_internal.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

OMNIPROF_API int omniprof_preload_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    sigaction_fn real = OP_REAL(sigaction_fn, sigaction);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    return real(sig, act, old);
}

OMNIPROF_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    int saved = errno;
    FOR_CLIENTS(c)
    {
        int rc = 0;
        errno = saved;
        if (c->sigaction && c->sigaction(sig, act, old, &rc)) return rc;
    }
    errno = saved;
    return omniprof_preload_real_sigaction(sig, act, old);
}

OMNIPROF_API sighandler_t signal(int sig, sighandler_t handler)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    memset(&old, 0, sizeof old);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    if (sig > 0 && sig < NSIG) sigaddset(&sa.sa_mask, sig);
    sa.sa_flags = SA_RESTART;
    if (sigaction(sig, &sa, &old) != 0) return SIG_ERR;
    return (old.sa_flags & SA_SIGINFO) ? (sighandler_t)(void *)old.sa_sigaction : old.sa_handler;
}

typedef int (*setitimer_fn)(__itimer_which_t, const struct itimerval *, struct itimerval *);

OMNIPROF_API int setitimer(__itimer_which_t which, const struct itimerval *nv, struct itimerval *ov)
{
    setitimer_fn real = OP_REAL(setitimer_fn, setitimer);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    if ((which == ITIMER_PROF || which == ITIMER_VIRTUAL) && nv && (nv->it_value.tv_sec || nv->it_value.tv_usec)) {
        int saved = errno;
        FOR_CLIENTS(c)
        if (OP_PRELOAD_HAS(c, self_profiling))
            c->self_profiling(which == ITIMER_PROF ? "setitimer(ITIMER_PROF)" : "setitimer(ITIMER_VIRTUAL)");
        errno = saved;
    }
    return real(which, nv, ov);
}
