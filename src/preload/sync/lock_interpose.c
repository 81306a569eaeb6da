/* lock_interpose.c — libomniprof-sync.so's interposers of the pthread calls that wait on a lock,
 * a barrier or another thread's end: pthread_mutex_lock/trylock, pthread_rwlock_rdlock/wrlock,
 * pthread_barrier_wait, pthread_join.
 *
 * Each is a wait for the causal profiler (the clients' wait_begin/wait_end, woken = 1; the
 * barrier wakes the others first: the last to arrive releases them) and a call that a client
 * may record (call_begin/call_end: the CPU backend's FUNCTION_WRAPPER regions under
 * OMNIPROF_TRACE_THREAD_{LOCKS,RW_LOCKS,BARRIERS,JOIN}). Lock wrappers are where profilers
 * deadlock, which is why this library is loaded only when one of those or causal profiling asks
 * for it. The return value and errno are libc's. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

#include "omniprof/cpu.h"
#include "preload/preload.h"

#define REAL(name)                                                                  \
    static __typeof__(&name) real_;                                                 \
    if (!real_) real_ = (__typeof__(&name))dlsym(RTLD_NEXT, #name);                 \
    if (!real_) return ENOSYS

/* A call that may wait for another thread, traced as operation OP. */
#define WAITING_CALL(call, OP, NAME, rc_traced, wakes)                         \
    bool hooked_ = omniprof_preload_waits_hooked();                            \
    if (hooked_ && (wakes)) omniprof_preload_wake();                           \
    if (hooked_) omniprof_preload_wait_begin();                                \
    uint64_t t0_ = 0;                                                          \
    int token_ = omniprof_preload_call_begin(OP, NAME, &t0_);                  \
    int rc = call;                                                             \
    if (token_) omniprof_preload_call_end(token_, OP, t0_, (rc_traced));       \
    if (hooked_) omniprof_preload_wait_end(1, -1);                             \
    return rc

OMNIPROF_API int pthread_mutex_lock(pthread_mutex_t *m)
{
    REAL(pthread_mutex_lock);
    WAITING_CALL(real_(m), OMNIPROF_FUNCTION_WRAPPER_PTHREAD_MUTEX_LOCK, "pthread_mutex_lock", rc, 0);
}

OMNIPROF_API int pthread_mutex_trylock(pthread_mutex_t *m) /* never waits: traced only */
{
    REAL(pthread_mutex_trylock);
    uint64_t t0 = 0;
    int token = omniprof_preload_call_begin(OMNIPROF_FUNCTION_WRAPPER_PTHREAD_MUTEX_TRYLOCK, "pthread_mutex_trylock", &t0);
    int rc = real_(m);
    if (token) omniprof_preload_call_end(token, OMNIPROF_FUNCTION_WRAPPER_PTHREAD_MUTEX_TRYLOCK, t0, rc);
    return rc;
}

OMNIPROF_API int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    REAL(pthread_rwlock_rdlock);
    WAITING_CALL(real_(l), OMNIPROF_FUNCTION_WRAPPER_PTHREAD_RWLOCK_RDLOCK, "pthread_rwlock_rdlock", rc, 0);
}

OMNIPROF_API int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    REAL(pthread_rwlock_wrlock);
    WAITING_CALL(real_(l), OMNIPROF_FUNCTION_WRAPPER_PTHREAD_RWLOCK_WRLOCK, "pthread_rwlock_wrlock", rc, 0);
}

OMNIPROF_API int pthread_barrier_wait(pthread_barrier_t *b)
{
    REAL(pthread_barrier_wait);
    WAITING_CALL(real_(b), OMNIPROF_FUNCTION_WRAPPER_PTHREAD_BARRIER_WAIT, "pthread_barrier_wait",
                 rc == PTHREAD_BARRIER_SERIAL_THREAD ? 0 : rc, 1);
}

OMNIPROF_API int pthread_join(pthread_t th, void **ret)
{
    REAL(pthread_join);
    WAITING_CALL(real_(th, ret), OMNIPROF_FUNCTION_WRAPPER_PTHREAD_JOIN, "pthread_join", rc, 0);
}
