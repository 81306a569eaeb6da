/* sync_interpose.c — libomniprof-sync.so's interposers of the calls that wait for another
 * thread or wake one, and of the end of main: what the causal profiler must see (Coz's
 * pre_block / post_block / catch_up; docs/causal.md, "Waiting is not charged"). The library is
 * loaded only by `omniprof causal` and by runs that trace lock calls (OMNIPROF_TRACE_THREAD_*):
 * every other run leaves libc's read, write, locks and waits alone. The clients and their hooks
 * are libomniprof-preload.so's (src/preload/waits.c), reached through its exported calls.
 *
 *   waking   pthread_mutex_unlock, pthread_rwlock_unlock, pthread_cond_signal/broadcast,
 *            sem_post, write/send/sendto/sendmsg               clients' wake, then libc's call;
 *   waiting  clients' wait_begin, libc's call, clients' wait_end(woken, fd):
 *            pthread_cond_wait, sem_wait                       woken = 1 (when it returns 0);
 *            pthread_cond_timedwait/clockwait, sem_timedwait   woken unless timed out;
 *            poll, ppoll, select, pselect, epoll_wait/pwait    woken when an fd became ready;
 *            read, recv, recvfrom, recvmsg, accept, accept4    woken = -1 (data came: the
 *                                                              client decides by the fd's type);
 *            MPI_Wait/Waitall/Waitany/Waitsome/Recv/Probe/Barrier woken = 1: owned by the MPI
 *            backend (src/backend/mpi/), which calls omniprof_preload_wait_begin/end and _wake
 *            (src/preload/waits.c);
 *   timed    sleep, usleep, nanosleep, clock_nanosleep         woken = 0: a timer is not sped
 *                                                              up by an experiment;
 *   main     __libc_start_main: when a client has a main_end hook (the causal engine registers
 *            one in causal mode, from the constructors, before main), main is called through
 *            sync_main, which calls the clients' main_end when main returns — before exit's
 *            atexit handlers (the tool's closes the database). Otherwise libc's, untouched.
 * The lock, barrier and join calls (lock_interpose.c) are waits too, and also traced calls.
 *
 * Without a client that has these hooks an interposer is libc's call through a cached pointer
 * and one test: arguments, return value and errno are libc's. The pointers are resolved in the
 * constructor, so that a first call from a signal handler does not dlsym. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "preload/preload.h"
#include "preload/sync/sync_real.h"

DECLARE(pthread_mutex_unlock)
DECLARE(pthread_rwlock_unlock)
DECLARE(pthread_cond_wait)
DECLARE(pthread_cond_timedwait)
DECLARE(pthread_cond_clockwait)
DECLARE(pthread_cond_signal)
DECLARE(pthread_cond_broadcast)
DECLARE(sem_wait)
DECLARE(sem_timedwait)
DECLARE(sem_post)
DECLARE(sleep)
DECLARE(usleep)
DECLARE(nanosleep)
DECLARE(clock_nanosleep)
DECLARE(read)
DECLARE(recv)
DECLARE(recvfrom)
DECLARE(recvmsg)
DECLARE(accept)
DECLARE(accept4)
DECLARE(write)
DECLARE(send)
DECLARE(sendto)
DECLARE(sendmsg)
DECLARE(poll)
DECLARE(ppoll)
DECLARE(select)
DECLARE(pselect)
DECLARE(epoll_wait)
DECLARE(epoll_pwait)

__attribute__((constructor(102))) static void sync_interpose_resolve(void)
{
    REAL(pthread_mutex_unlock), REAL(pthread_rwlock_unlock), REAL(pthread_cond_wait), REAL(pthread_cond_timedwait);
    REAL(pthread_cond_clockwait), REAL(pthread_cond_signal), REAL(pthread_cond_broadcast);
    REAL(sem_wait), REAL(sem_timedwait), REAL(sem_post), REAL(sleep), REAL(usleep), REAL(nanosleep);
    REAL(clock_nanosleep), REAL(read), REAL(recv), REAL(recvfrom), REAL(recvmsg), REAL(accept), REAL(accept4);
    REAL(write), REAL(send), REAL(sendto), REAL(sendmsg), REAL(poll), REAL(ppoll), REAL(select), REAL(pselect);
    REAL(epoll_wait), REAL(epoll_pwait);
}

static inline bool sync_on(void) { return omniprof_preload_waits_hooked(); }
static inline void wait_begin(void) { omniprof_preload_wait_begin(); }
static inline void wait_end(int woken, int fd) { omniprof_preload_wait_end(woken, fd); }
static inline void wake(void) { omniprof_preload_wake(); }

/* A call that may wait: clients see its beginning and its end; the result and errno are the
 * call's. `woken_expr` may use rc. */
#define WAIT(call, woken_expr, fd)      \
    if (!sync_on()) return call;        \
    wait_begin();                       \
    __typeof__(call) rc = call;         \
    wait_end((woken_expr), (fd));       \
    return rc

#define WAKE(call)             \
    if (sync_on()) wake();     \
    return call

/* ---- locks, conditions, semaphores ---------------------------------------------------------- */

OMNIPROF_API int pthread_mutex_unlock(pthread_mutex_t *m) { WAKE(REAL(pthread_mutex_unlock)(m)); }
OMNIPROF_API int pthread_rwlock_unlock(pthread_rwlock_t *l) { WAKE(REAL(pthread_rwlock_unlock)(l)); }
OMNIPROF_API int pthread_cond_signal(pthread_cond_t *c) { WAKE(REAL(pthread_cond_signal)(c)); }
OMNIPROF_API int pthread_cond_broadcast(pthread_cond_t *c) { WAKE(REAL(pthread_cond_broadcast)(c)); }
OMNIPROF_API int sem_post(sem_t *s) { WAKE(REAL(sem_post)(s)); }

OMNIPROF_API int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    WAIT(REAL(pthread_cond_wait)(c, m), rc == 0, -1);
}
OMNIPROF_API int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t)
{
    WAIT(REAL(pthread_cond_timedwait)(c, m, t), rc == 0, -1);
}
OMNIPROF_API int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk, const struct timespec *t)
{
    WAIT(REAL(pthread_cond_clockwait)(c, m, clk, t), rc == 0, -1);
}
OMNIPROF_API int sem_wait(sem_t *s) { WAIT(REAL(sem_wait)(s), rc == 0, -1); }
OMNIPROF_API int sem_timedwait(sem_t *s, const struct timespec *t) { WAIT(REAL(sem_timedwait)(s, t), rc == 0, -1); }

/* ---- timed sleeps: never a wake-up by another thread ---------------------------------------- */

OMNIPROF_API unsigned int sleep(unsigned int s) { WAIT(REAL(sleep)(s), 0, -1); }
OMNIPROF_API int usleep(useconds_t us) { WAIT(REAL(usleep)(us), 0, -1); }
OMNIPROF_API int nanosleep(const struct timespec *req, struct timespec *rem) { WAIT(REAL(nanosleep)(req, rem), 0, -1); }
OMNIPROF_API int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem)
{
    WAIT(REAL(clock_nanosleep)(clk, flags, req, rem), 0, -1);
}

/* ---- pipes and sockets ---------------------------------------------------------------------- */

OMNIPROF_API ssize_t read(int fd, void *buf, size_t n) { WAIT(REAL(read)(fd, buf, n), rc >= 0 ? -1 : 0, fd); }
OMNIPROF_API ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    WAIT(REAL(recv)(fd, buf, n, flags), rc >= 0 ? -1 : 0, fd);
}
OMNIPROF_API ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *len)
{
    WAIT(REAL(recvfrom)(fd, buf, n, flags, addr, len), rc >= 0 ? -1 : 0, fd);
}
OMNIPROF_API ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    WAIT(REAL(recvmsg)(fd, msg, flags), rc >= 0 ? -1 : 0, fd);
}
OMNIPROF_API int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
    WAIT(REAL(accept)(fd, addr, len), rc >= 0 ? -1 : 0, fd);
}
OMNIPROF_API int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    WAIT(REAL(accept4)(fd, addr, len, flags), rc >= 0 ? -1 : 0, fd);
}

OMNIPROF_API ssize_t write(int fd, const void *buf, size_t n) { WAKE(REAL(write)(fd, buf, n)); }
OMNIPROF_API ssize_t send(int fd, const void *buf, size_t n, int flags) { WAKE(REAL(send)(fd, buf, n, flags)); }
OMNIPROF_API ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr, socklen_t len)
{
    WAKE(REAL(sendto)(fd, buf, n, flags, addr, len));
}
OMNIPROF_API ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) { WAKE(REAL(sendmsg)(fd, msg, flags)); }

OMNIPROF_API int poll(struct pollfd *fds, nfds_t n, int timeout) { WAIT(REAL(poll)(fds, n, timeout), rc > 0, -1); }
OMNIPROF_API int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *mask)
{
    WAIT(REAL(ppoll)(fds, n, t, mask), rc > 0, -1);
}
OMNIPROF_API int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t)
{
    WAIT(REAL(select)(n, r, w, e, t), rc > 0, -1);
}
OMNIPROF_API int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t, const sigset_t *mask)
{
    WAIT(REAL(pselect)(n, r, w, e, t, mask), rc > 0, -1);
}
OMNIPROF_API int epoll_wait(int epfd, struct epoll_event *ev, int n, int timeout)
{
    WAIT(REAL(epoll_wait)(epfd, ev, n, timeout), rc > 0, -1);
}
OMNIPROF_API int epoll_pwait(int epfd, struct epoll_event *ev, int n, int timeout, const sigset_t *mask)
{
    WAIT(REAL(epoll_pwait)(epfd, ev, n, timeout, mask), rc > 0, -1);
}

/* ---- the end of main ------------------------------------------------------------------------ */

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);
static main_fn g_program_main;

static int sync_main(int argc, char **argv, char **envp)
{
    int status = g_program_main(argc, argv, envp);
    omniprof_preload_main_end(status);
    return status;
}

/* The shared libraries' constructors (the SDK's initialization among them) have run when the
 * executable's _start calls this: a client that wants main_end has registered by now. */
OMNIPROF_API int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                                   void (*rtld_fini)(void), void *stack_end)
{
    start_main_fn real = (start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");
    if (omniprof_preload_main_end_hooked()) {
        g_program_main = main;
        main = sync_main;
    }
    return real(main, argc, argv, init, fini, rtld_fini, stack_end);
}
