/* waits.c — the clients' hooks for waits, wake-ups, traced calls and the end of main, as
 * exported calls: the interposers that need them live in other libraries (libomniprof-sync.so
 * for libc's and pthread's waits, loaded only by `omniprof causal` and by runs that trace lock
 * calls; the MPI backend for MPI's), while the clients are registered here.
 *
 * Without a client that has wait hooks (every run but a causal one) each call is one test of a
 * cached flag. The set of clients with hooks is recomputed only when the number of clients
 * changed (clients are only ever added). */
#include <errno.h>

#include "preload/preload_internal.h"

static _Atomic int g_scanned_n = -1; /* client count when the flags were computed */
static _Atomic int g_sync;           /* some client has wait/wake hooks */
static _Atomic int g_calls;          /* some client has call_begin */

static void rescan(void)
{
    int n = atomic_load_explicit(&g_op_preload_n_clients, memory_order_acquire);
    if (n == atomic_load_explicit(&g_scanned_n, memory_order_relaxed)) return;
    int sync = 0, calls = 0;
    FOR_CLIENTS(c)
    {
        sync |= OP_PRELOAD_HAS(c, wait_begin) || OP_PRELOAD_HAS(c, wake);
        calls |= OP_PRELOAD_HAS(c, call_begin);
    }
    atomic_store_explicit(&g_sync, sync, memory_order_relaxed);
    atomic_store_explicit(&g_calls, calls, memory_order_relaxed);
    atomic_store_explicit(&g_scanned_n, n, memory_order_release);
}

OMNIPROF_API bool omniprof_preload_waits_hooked(void)
{
    rescan();
    return atomic_load_explicit(&g_sync, memory_order_relaxed) != 0;
}

OMNIPROF_API void omniprof_preload_wait_begin(void)
{
    if (!omniprof_preload_waits_hooked()) return;
    FOR_CLIENTS(c) if (OP_PRELOAD_HAS(c, wait_begin)) c->wait_begin();
}

OMNIPROF_API void omniprof_preload_wait_end(int woken, int fd)
{
    if (!omniprof_preload_waits_hooked()) return;
    int saved = errno;
    FOR_CLIENTS(c) if (OP_PRELOAD_HAS(c, wait_end)) c->wait_end(woken, fd);
    errno = saved;
}

OMNIPROF_API void omniprof_preload_wake(void)
{
    if (!omniprof_preload_waits_hooked()) return;
    int saved = errno;
    FOR_CLIENTS(c) if (OP_PRELOAD_HAS(c, wake)) c->wake();
    errno = saved;
}

OMNIPROF_API void omniprof_preload_join_end(pthread_t th, int rc)
{
    if (!omniprof_preload_waits_hooked()) return;
    int saved = errno;
    FOR_CLIENTS(c)
    {
        if (OP_PRELOAD_HAS(c, joined))
            c->joined(th, rc);
        else if (OP_PRELOAD_HAS(c, wait_end))
            c->wait_end(1, -1);
    }
    errno = saved;
}

OMNIPROF_API int omniprof_preload_call_begin(int op, uint64_t *t0)
{
    rescan();
    if (!atomic_load_explicit(&g_calls, memory_order_relaxed)) return 0;
    int saved = errno, token = 0;
    FOR_CLIENTS(c)
    {
        if (OP_PRELOAD_HAS(c, call_begin) && c->call_begin(op, t0)) {
            token = i_ + 1;
            break;
        }
    }
    errno = saved;
    return token;
}

OMNIPROF_API void omniprof_preload_call_end(int token, int op, uint64_t t0, int rc)
{
    if (token <= 0 || token > atomic_load_explicit(&g_op_preload_n_clients, memory_order_acquire)) return;
    const op_preload_hooks *c = atomic_load_explicit(&g_op_preload_clients[token - 1], memory_order_acquire);
    int saved = errno;
    if (c && OP_PRELOAD_HAS(c, call_end)) c->call_end(op, t0, rc);
    errno = saved;
}

OMNIPROF_API bool omniprof_preload_main_end_hooked(void)
{
    bool any = false;
    FOR_CLIENTS(c) any |= OP_PRELOAD_HAS(c, main_end);
    return any;
}

OMNIPROF_API void omniprof_preload_main_end(int status)
{
    FOR_CLIENTS(c) if (OP_PRELOAD_HAS(c, main_end)) c->main_end(status);
}
