/* lock_interpose.c — libomniprof-sync.so's interposers of the pthread calls that wait on a lock,
 * a barrier or another thread's end: pthread_mutex_lock/trylock, pthread_rwlock_rdlock/wrlock,
 * pthread_barrier_wait, pthread_join.
 *
 * Each is a wait for the causal profiler (the clients' wait_begin/wait_end, woken = 1; the
 * barrier wakes the others first: the last to arrive releases them; a join ends with the
 * clients' joined hook, which knows the joined thread) and a call that a client
 * may record (call_begin/call_end: the CPU backend's FUNCTION_WRAPPER regions under
 * OMNIPROF_TRACE_THREAD_{LOCKS,RW_LOCKS,BARRIERS,JOIN}). Lock wrappers are where profilers
 * deadlock, which is why this library is loaded only when one of those or causal profiling asks
 * for it. The return value and errno are libc's. */
#include <errno.h>
#include <pthread.h>

#include "omniprof/cpu.h"
#include "preload/preload.h"
#include "preload/sync/sync_real.h"

DECLARE(pthread_mutex_lock)
DECLARE(pthread_mutex_trylock)
DECLARE(pthread_rwlock_rdlock)
DECLARE(pthread_rwlock_wrlock)
DECLARE(pthread_barrier_wait)
DECLARE(pthread_join)

__attribute__((constructor(102))) static void lock_interpose_resolve(void)
{
    REAL(pthread_mutex_lock), REAL(pthread_mutex_trylock), REAL(pthread_rwlock_rdlock);
    REAL(pthread_rwlock_wrlock), REAL(pthread_barrier_wait), REAL(pthread_join);
}

/* libc's `name` into real_, or ENOSYS from the interposer where libc has none */
#define REAL_OR_ENOSYS(name)                      \
    __typeof__(&name) real_ = REAL(name);         \
    if (!real_) return ENOSYS

/* A call that may wait for another thread, traced as operation OP. */
#define WAITING_CALL(call, OP, rc_traced, wakes)                               \
    bool hooked_ = omniprof_preload_waits_hooked();                            \
    if (hooked_ && (wakes)) omniprof_preload_wake();                           \
    if (hooked_) omniprof_preload_wait_begin();                                \
    uint64_t t0_ = 0;                                                          \
    int token_ = omniprof_preload_call_begin(OP, &t0_);                        \
    int rc = call;                                                             \
    if (token_) omniprof_preload_call_end(token_, OP, t0_, (rc_traced));       \
    if (hooked_) omniprof_preload_wait_end(1, -1);                             \
    return rc

OMNIPROF_API int pthread_mutex_lock(pthread_mutex_t *m)
{
    REAL_OR_ENOSYS(pthread_mutex_lock);
    WAITING_CALL(real_(m), OMNIPROF_FUNCTION_WRAPPER_PTHREAD_MUTEX_LOCK, rc, 0);
}

OMNIPROF_API int pthread_mutex_trylock(pthread_mutex_t *m) /* never waits: traced only */
{
    REAL_OR_ENOSYS(pthread_mutex_trylock);
    uint64_t t0 = 0;
    int token = omniprof_preload_call_begin(OMNIPROF_FUNCTION_WRAPPER_PTHREAD_MUTEX_TRYLOCK, &t0);
    int rc = real_(m);
    if (token) omniprof_preload_call_end(token, OMNIPROF_FUNCTION_WRAPPER_PTHREAD_MUTEX_TRYLOCK, t0, rc);
    return rc;
}

OMNIPROF_API int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    REAL_OR_ENOSYS(pthread_rwlock_rdlock);
    WAITING_CALL(real_(l), OMNIPROF_FUNCTION_WRAPPER_PTHREAD_RWLOCK_RDLOCK, rc, 0);
}

OMNIPROF_API int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    REAL_OR_ENOSYS(pthread_rwlock_wrlock);
    WAITING_CALL(real_(l), OMNIPROF_FUNCTION_WRAPPER_PTHREAD_RWLOCK_WRLOCK, rc, 0);
}

OMNIPROF_API int pthread_barrier_wait(pthread_barrier_t *b)
{
    REAL_OR_ENOSYS(pthread_barrier_wait);
    WAITING_CALL(real_(b), OMNIPROF_FUNCTION_WRAPPER_PTHREAD_BARRIER_WAIT,
                 rc == PTHREAD_BARRIER_SERIAL_THREAD ? 0 : rc, 1);
}

OMNIPROF_API int pthread_join(pthread_t th, void **ret)
{
    REAL_OR_ENOSYS(pthread_join);
    bool hooked = omniprof_preload_waits_hooked();
    if (hooked) omniprof_preload_wait_begin();
    uint64_t t0 = 0;
    int token = omniprof_preload_call_begin(OMNIPROF_FUNCTION_WRAPPER_PTHREAD_JOIN, &t0);
    int rc = real_(th, ret);
    if (token) omniprof_preload_call_end(token, OMNIPROF_FUNCTION_WRAPPER_PTHREAD_JOIN, t0, rc);
    if (hooked) omniprof_preload_join_end(th, rc); /* the joined thread's count (causal.c) */
    return rc;
}
