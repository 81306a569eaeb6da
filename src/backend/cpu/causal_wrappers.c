/* causal_wrappers.c — the blocking and waking calls the causal engine must see (Coz's
 * pre_block / post_block / catch_up), beyond the lock and join wrappers of wrappers.c.
 *
 * In causal mode a thread that waits for another is not charged the delays inserted while it
 * waited, and a thread that wakes another first pays what it owes (causal.c, "Virtual
 * speedup"). So:
 *   waking   pthread_mutex_unlock, pthread_rwlock_unlock, pthread_cond_signal/broadcast,
 *            sem_post, write/send/sendto/sendmsg        op_causal_wake_others() first;
 *   waiting  pthread_cond_wait, sem_wait                credited when they return;
 *            pthread_cond_timedwait/clockwait, sem_timedwait   credited unless timed out;
 *            poll/ppoll/select/pselect/epoll_wait/epoll_pwait  credited when an fd became
 *            ready, not after a timeout;
 *            read/recv/recvfrom/recvmsg/accept/accept4  credited when the fd is a pipe or a
 *            socket (another thread may have written it), not for files and terminals;
 *            MPI_Wait/Waitall/Waitany/Waitsome/Recv/Probe/Barrier  credited (through PMPI_*);
 *   timed    sleep, usleep, nanosleep, clock_nanosleep  never credited: the thread pays what
 *            it owes as soon as it wakes (a timer is not sped up by the experiment).
 * And the end of main: __libc_start_main is interposed so that, in causal mode only (the
 * program's environment says OMNIPROF_CAUSAL), main is called through causal_main, which
 * ends the experiments when main returns, before any atexit handler (the tool's closes the
 * database): the end-to-end experiment is emitted while it can still be written. exit()
 * called by the program does the same in its wrapper (wrappers.c).
 * Outside causal mode every wrapper is a call through the real function's pointer and a test
 * of one flag: arguments, return value and errno are the real call's. The pointers are
 * resolved in the constructor (so a first call from a signal handler does not dlsym).
 * These are libc interposers: when src/preload gathers them (one owner per symbol), each
 * moves there as is and keeps calling the same hooks (causal.h). */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/causal.h"
#include "backend/cpu/cpu_internal.h"
#include "common/settings.h"
#include "omniprof/defines.h"

#define OFF() (!atomic_load_explicit(&g_op_causal_on, memory_order_relaxed))
#define REAL(name) real_fn_##name()
#define DECLARE(name)                                                                        \
    static __typeof__(&name) real_##name;                                                    \
    static inline __typeof__(&name) real_fn_##name(void)                                     \
    {                                                                                        \
        if (!real_##name) real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name);          \
        return real_##name;                                                                  \
    }

DECLARE(pthread_mutex_unlock);
DECLARE(pthread_rwlock_unlock);
DECLARE(pthread_cond_wait);
DECLARE(pthread_cond_timedwait);
DECLARE(pthread_cond_clockwait);
DECLARE(pthread_cond_signal);
DECLARE(pthread_cond_broadcast);
DECLARE(sem_wait);
DECLARE(sem_timedwait);
DECLARE(sem_post);
DECLARE(sleep);
DECLARE(usleep);
DECLARE(nanosleep);
DECLARE(clock_nanosleep);
DECLARE(read);
DECLARE(recv);
DECLARE(recvfrom);
DECLARE(recvmsg);
DECLARE(accept);
DECLARE(accept4);
DECLARE(write);
DECLARE(send);
DECLARE(sendto);
DECLARE(sendmsg);
DECLARE(poll);
DECLARE(ppoll);
DECLARE(select);
DECLARE(pselect);
DECLARE(epoll_wait);
DECLARE(epoll_pwait);

__attribute__((constructor(102))) static void causal_wrappers_resolve(void)
{
    REAL(pthread_mutex_unlock), REAL(pthread_rwlock_unlock), REAL(pthread_cond_wait), REAL(pthread_cond_timedwait);
    REAL(pthread_cond_clockwait), REAL(pthread_cond_signal), REAL(pthread_cond_broadcast);
    REAL(sem_wait), REAL(sem_timedwait), REAL(sem_post), REAL(sleep), REAL(usleep), REAL(nanosleep);
    REAL(clock_nanosleep), REAL(read), REAL(recv), REAL(recvfrom), REAL(recvmsg), REAL(accept), REAL(accept4);
    REAL(write), REAL(send), REAL(sendto), REAL(sendmsg), REAL(poll), REAL(ppoll), REAL(select), REAL(pselect);
    REAL(epoll_wait), REAL(epoll_pwait);
}

/* A wait that ends when another thread acts is credited; errno is the real call's. */
#define WAIT(call, woken_expr)            \
    if (OFF()) return call;               \
    op_causal_block_begin();              \
    __typeof__(call) rc = call;           \
    int saved_errno = errno;              \
    op_causal_block_end(woken_expr);      \
    errno = saved_errno;                  \
    return rc

#define WAKE(call)                        \
    if (!OFF()) op_causal_wake_others();  \
    return call

/* ---- locks, conditions, semaphores --------------------------------------------------------- */

OMNIPROF_API int pthread_mutex_unlock(pthread_mutex_t *m) { WAKE(REAL(pthread_mutex_unlock)(m)); }
OMNIPROF_API int pthread_rwlock_unlock(pthread_rwlock_t *l) { WAKE(REAL(pthread_rwlock_unlock)(l)); }
OMNIPROF_API int pthread_cond_signal(pthread_cond_t *c) { WAKE(REAL(pthread_cond_signal)(c)); }
OMNIPROF_API int pthread_cond_broadcast(pthread_cond_t *c) { WAKE(REAL(pthread_cond_broadcast)(c)); }
OMNIPROF_API int sem_post(sem_t *s) { WAKE(REAL(sem_post)(s)); }

OMNIPROF_API int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) { WAIT(REAL(pthread_cond_wait)(c, m), true); }

OMNIPROF_API int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t)
{
    WAIT(REAL(pthread_cond_timedwait)(c, m, t), rc == 0);
}

OMNIPROF_API int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk, const struct timespec *t)
{
    WAIT(REAL(pthread_cond_clockwait)(c, m, clk, t), rc == 0);
}

OMNIPROF_API int sem_wait(sem_t *s) { WAIT(REAL(sem_wait)(s), rc == 0); }
OMNIPROF_API int sem_timedwait(sem_t *s, const struct timespec *t) { WAIT(REAL(sem_timedwait)(s, t), rc == 0); }

/* ---- timed sleeps: never credited ------------------------------------------------------------ */

OMNIPROF_API unsigned int sleep(unsigned int s) { WAIT(REAL(sleep)(s), false); }
OMNIPROF_API int usleep(useconds_t us) { WAIT(REAL(usleep)(us), false); }
OMNIPROF_API int nanosleep(const struct timespec *req, struct timespec *rem) { WAIT(REAL(nanosleep)(req, rem), false); }

OMNIPROF_API int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem)
{
    WAIT(REAL(clock_nanosleep)(clk, flags, req, rem), false);
}

/* ---- pipes and sockets ----------------------------------------------------------------------- */

/* Credit a read-like wait only when delays were inserted meanwhile (else there is nothing to
 * credit and no fstat is spent) and the fd is a pipe or socket another thread can fill. */
static bool woken_by_peer(int fd, ssize_t rc)
{
    if (rc < 0 || !op_causal_blocked_delay()) return false;
    struct stat st;
    return fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

OMNIPROF_API ssize_t read(int fd, void *buf, size_t n) { WAIT(REAL(read)(fd, buf, n), woken_by_peer(fd, rc)); }
OMNIPROF_API ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    WAIT(REAL(recv)(fd, buf, n, flags), woken_by_peer(fd, rc));
}
OMNIPROF_API ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *len)
{
    WAIT(REAL(recvfrom)(fd, buf, n, flags, addr, len), woken_by_peer(fd, rc));
}
OMNIPROF_API ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    WAIT(REAL(recvmsg)(fd, msg, flags), woken_by_peer(fd, rc));
}
OMNIPROF_API int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
    WAIT(REAL(accept)(fd, addr, len), woken_by_peer(fd, rc));
}
OMNIPROF_API int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    WAIT(REAL(accept4)(fd, addr, len, flags), woken_by_peer(fd, rc));
}

OMNIPROF_API ssize_t write(int fd, const void *buf, size_t n) { WAKE(REAL(write)(fd, buf, n)); }
OMNIPROF_API ssize_t send(int fd, const void *buf, size_t n, int flags) { WAKE(REAL(send)(fd, buf, n, flags)); }
OMNIPROF_API ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr, socklen_t len)
{
    WAKE(REAL(sendto)(fd, buf, n, flags, addr, len));
}
OMNIPROF_API ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) { WAKE(REAL(sendmsg)(fd, msg, flags)); }

OMNIPROF_API int poll(struct pollfd *fds, nfds_t n, int timeout) { WAIT(REAL(poll)(fds, n, timeout), rc > 0); }
OMNIPROF_API int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *mask)
{
    WAIT(REAL(ppoll)(fds, n, t, mask), rc > 0);
}
OMNIPROF_API int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t)
{
    WAIT(REAL(select)(n, r, w, e, t), rc > 0);
}
OMNIPROF_API int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t, const sigset_t *mask)
{
    WAIT(REAL(pselect)(n, r, w, e, t, mask), rc > 0);
}
OMNIPROF_API int epoll_wait(int epfd, struct epoll_event *ev, int n, int timeout)
{
    WAIT(REAL(epoll_wait)(epfd, ev, n, timeout), rc > 0);
}
OMNIPROF_API int epoll_pwait(int epfd, struct epoll_event *ev, int n, int timeout, const sigset_t *mask)
{
    WAIT(REAL(epoll_pwait)(epfd, ev, n, timeout, mask), rc > 0);
}

/* ---- MPI waits (through the profiling interface; the backend does not link MPI) -------------- *
 * Handles are passed through untouched: MPI_Comm/MPI_Datatype/MPI_Request are pointers in Open
 * MPI and ints in MPICH; either travels in one integer register, which is forwarded as is. */

typedef void *mpi_handle;
typedef int (*wait_fn)(mpi_handle *, void *);
typedef int (*waitall_fn)(int, mpi_handle *, void *);
typedef int (*waitany_fn)(int, mpi_handle *, int *, void *);
typedef int (*waitsome_fn)(int, mpi_handle *, int *, int *, void *);
typedef int (*recv_fn)(void *, int, mpi_handle, int, int, mpi_handle, void *);
typedef int (*probe_fn)(int, int, mpi_handle, void *);
typedef int (*barrier_fn)(mpi_handle);
#define PMPI(name, type)                                                        \
    static type pmpi_##name;                                                    \
    if (!pmpi_##name) pmpi_##name = (type)dlsym(RTLD_DEFAULT, "P" #name);       \
    if (!pmpi_##name) return 1 /* MPI_ERR_OTHER-ish: no MPI library in the process */

OMNIPROF_API int MPI_Wait(mpi_handle *req, void *status)
{
    PMPI(MPI_Wait, wait_fn);
    WAIT(pmpi_MPI_Wait(req, status), true);
}
OMNIPROF_API int MPI_Waitall(int n, mpi_handle *reqs, void *statuses)
{
    PMPI(MPI_Waitall, waitall_fn);
    WAIT(pmpi_MPI_Waitall(n, reqs, statuses), true);
}
OMNIPROF_API int MPI_Waitany(int n, mpi_handle *reqs, int *index, void *status)
{
    PMPI(MPI_Waitany, waitany_fn);
    WAIT(pmpi_MPI_Waitany(n, reqs, index, status), true);
}
OMNIPROF_API int MPI_Waitsome(int n, mpi_handle *reqs, int *outcount, int *indices, void *statuses)
{
    PMPI(MPI_Waitsome, waitsome_fn);
    WAIT(pmpi_MPI_Waitsome(n, reqs, outcount, indices, statuses), true);
}
OMNIPROF_API int MPI_Recv(void *buf, int count, mpi_handle type, int source, int tag, mpi_handle comm, void *status)
{
    PMPI(MPI_Recv, recv_fn);
    WAIT(pmpi_MPI_Recv(buf, count, type, source, tag, comm, status), true);
}
OMNIPROF_API int MPI_Probe(int source, int tag, mpi_handle comm, void *status)
{
    PMPI(MPI_Probe, probe_fn);
    WAIT(pmpi_MPI_Probe(source, tag, comm, status), true);
}
OMNIPROF_API int MPI_Barrier(mpi_handle comm)
{
    PMPI(MPI_Barrier, barrier_fn);
    if (!OFF()) op_causal_wake_others();
    WAIT(pmpi_MPI_Barrier(comm), true);
}

/* ---- the end of main ------------------------------------------------------------------------- */

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);
static main_fn g_program_main;

static int causal_main(int argc, char **argv, char **envp)
{
    int rc = g_program_main(argc, argv, envp);
    op_causal_flush(true); /* experiments end with main; the end-to-end one is emitted now */
    return rc;
}

/* Is OMNIPROF_CAUSAL true in the program's environment? (environ is not set up yet: the
 * environment follows argv on the initial stack.) */
static bool causal_requested(int argc, char **argv)
{
    for (char **e = argv + argc + 1; *e; e++) {
        if (strncmp(*e, "OMNIPROF_CAUSAL=", 16) != 0) continue;
        bool on = false;
        return op_parse_bool(*e + 16, &on) == 0 && on;
    }
    return false;
}

OMNIPROF_API int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                                   void (*rtld_fini)(void), void *stack_end)
{
    start_main_fn real = (start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");
    if (argv && causal_requested(argc, argv)) {
        g_program_main = main;
        main = causal_main;
    }
    return real(main, argc, argv, init, fini, rtld_fini, stack_end);
}
