/* internal_threading.c — callback (delivery) threads and the SDK's own threads.
 *
 * A callback thread sleeps on its `work` futex word; a producer that seals a sub-buffer, or a
 * flusher, bumps the word and wakes it. The thread then delivers every ready sub-buffer of
 * each buffer assigned to it, so a buffer's callback always runs on that one thread and never
 * twice at once (buffer.c's `delivering` flag also guards stand-in deliverers at exit).
 * Threads start lazily, at their first wake outside a signal handler, with every signal
 * blocked; in a forked child they are restarted the same way. They are never joined: at
 * finalization they are asked to stop and left alone (DESIGN rule 1, ref §9 pain point 7).
 *
 * Invariants: (1) thread 0 is the default one; (2) `started` goes 0 -> 1 under g_thr_lock,
 * and back to 0 only in a forked child; (3) no lock is taken on the wake path from a signal
 * handler (it only bumps the word and calls futex). */
#include "sdk/sdk_internal.h"

#include "common/affinity.h"

#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/log.h"

typedef struct op_cbthread {
    pthread_t th;
    _Atomic int exists;
    _Atomic int started;
    _Atomic int stop;
    _Atomic int alive; /* the thread runs (set by it, cleared as it returns) */
    _Atomic uint32_t work;
} op_cbthread;

static op_cbthread g_thr[OP_SDK_MAX_CB_THREADS];
static _Atomic int g_nthr;
static pthread_mutex_t g_thr_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_thr_offset;

typedef struct op_thread_cb {
    omniprof_internal_thread_library_cb_t pre, post;
    int libs;
    void *data;
} op_thread_cb;
static op_thread_cb g_thread_cbs[32];
static _Atomic int g_nthread_cbs;

static void *cb_thread_main(void *arg)
{
    int idx = (int)(intptr_t)arg;
    op_cbthread *ct = &g_thr[idx];
    op_tls *t = op_tls_get();
    if (t) t->cb_thread = idx;
    for (;;) {
        uint32_t w = atomic_load_explicit(&ct->work, memory_order_acquire);
        if (atomic_load(&ct->stop)) break;
        uint32_t n = op_buffer_count();
        for (uint32_t i = 0; i < n; i++) {
            op_buffer *b = op_buffer_at(i);
            if (b && op_buffer_thread(b) == idx) op_buffer_deliver_ready(b);
        }
        if (atomic_load_explicit(&ct->work, memory_order_acquire) == w) {
            struct timespec ts = {0, 200 * 1000 * 1000};
            syscall(SYS_futex, (uint32_t *)&ct->work, FUTEX_WAIT_PRIVATE, w, &ts, NULL, 0);
        }
    }
    atomic_store(&ct->alive, 0);
    return NULL;
}

static int ensure_slot(int idx)
{
    if (!atomic_load(&g_thr[idx].exists)) {
        atomic_store(&g_thr[idx].exists, 1);
        if (atomic_load(&g_nthr) <= idx) atomic_store(&g_nthr, idx + 1);
    }
    return idx;
}

int op_cbthread_default(void) { return ensure_slot(0); }

bool op_cbthread_valid(int index)
{
    return index >= 0 && index < OP_SDK_MAX_CB_THREADS && atomic_load(&g_thr[index].exists);
}

static void start_thread(int idx)
{
    if (pthread_mutex_trylock(&g_thr_lock) != 0) return; /* someone is starting threads */
    op_cbthread *ct = &g_thr[idx];
    if (!atomic_load(&ct->started) && !atomic_load(&ct->stop)) {
        char name[16];
        snprintf(name, sizeof name, "omniprof-cb%d", idx);
        atomic_store(&ct->alive, 1); /* under g_thr_lock, before the thread can end */
        if (op_sdk_create_thread(&ct->th, cb_thread_main, (void *)(intptr_t)idx, OMNIPROF_LIBRARY, name) == 0) {
            atomic_store(&ct->started, 1);
        } else {
            atomic_store(&ct->alive, 0);
            op_warn("could not start callback thread %d; its buffers deliver only at flush", idx);
        }
    }
    pthread_mutex_unlock(&g_thr_lock);
}

void op_cbthread_wake(int index, bool from_signal)
{
    if (index < 0 || index >= OP_SDK_MAX_CB_THREADS) return;
    op_cbthread *ct = &g_thr[index];
    atomic_fetch_add_explicit(&ct->work, 1, memory_order_release);
    if (!atomic_load_explicit(&ct->started, memory_order_acquire)) {
        if (from_signal) return;
        op_tls *t = op_tls_peek();
        if (t && t->cb_thread == index) return;
        start_thread(index);
        return;
    }
    syscall(SYS_futex, (uint32_t *)&ct->work, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void op_cbthread_stop_all(void)
{
    int n = atomic_load(&g_nthr);
    for (int i = 0; i < n; i++) {
        atomic_store(&g_thr[i].stop, 1);
        atomic_fetch_add(&g_thr[i].work, 1);
        syscall(SYS_futex, (uint32_t *)&g_thr[i].work, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
}

/* omniprof attach's detach, once the database is closed: the backends hear of the (stopped)
 * context once more, so that they let go of what the close still used (the CPU backend's
 * symbol files); then every callback thread ends (bounded wait), to start again lazily at the
 * next wake, as at start-up. */
void op_sdk_park_threads(void)
{
    if (op_sdk_state() == OP_STATE_LOCKED) op_backends_context_change();
    pthread_mutex_lock(&g_thr_lock); /* no thread starts meanwhile */
    op_cbthread_stop_all();
    int n = atomic_load(&g_nthr);
    for (int i = 0; i < n; i++) {
        op_cbthread *ct = &g_thr[i];
        for (int k = 0; k < 2000 && atomic_load(&ct->started) && atomic_load(&ct->alive); k++) {
            struct timespec ts = {0, 1000000L};
            nanosleep(&ts, NULL);
        }
        if (atomic_load(&ct->alive)) continue; /* still delivering: left as it is */
        atomic_store(&ct->started, 0);
        atomic_store(&ct->stop, 0);
    }
    pthread_mutex_unlock(&g_thr_lock);
}

void op_cbthread_at_fork_child(void)
{
    pthread_mutex_init(&g_thr_lock, NULL);
    int n = atomic_load(&g_nthr);
    for (int i = 0; i < n; i++) {
        atomic_store(&g_thr[i].started, 0);
        atomic_store(&g_thr[i].alive, 0);
        atomic_store(&g_thr[i].work, 0);
    }
}

OMNIPROF_API omniprof_status_t omniprof_create_callback_thread(omniprof_callback_thread_t *cb_thread_id)
{
    if (!cb_thread_id) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    op_sdk_ensure_init();
    omniprof_status_t st = op_sdk_config_open();
    if (st != OMNIPROF_STATUS_SUCCESS) return st;
    pthread_mutex_lock(&g_thr_lock);
    op_cbthread_default();
    int idx = atomic_load(&g_nthr);
    if (idx >= OP_SDK_MAX_CB_THREADS) {
        pthread_mutex_unlock(&g_thr_lock);
        return OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    ensure_slot(idx);
    if (!g_thr_offset) g_thr_offset = op_sdk_random_offset(0x7ead);
    pthread_mutex_unlock(&g_thr_lock);
    cb_thread_id->handle = g_thr_offset + (uint64_t)idx + 1;
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_assign_callback_thread(omniprof_buffer_id_t buffer_id,
                                                               omniprof_callback_thread_t cb_thread_id)
{
    op_buffer *b = op_buffer_lookup(buffer_id);
    if (!b) return OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND;
    int idx = -1;
    if (g_thr_offset && cb_thread_id.handle > g_thr_offset && cb_thread_id.handle - g_thr_offset - 1 < OP_SDK_MAX_CB_THREADS)
        idx = (int)(cb_thread_id.handle - g_thr_offset - 1);
    if (!op_cbthread_valid(idx) || idx == 0) return OMNIPROF_STATUS_ERROR_THREAD_NOT_FOUND;
    omniprof_status_t st = op_sdk_config_open();
    if (st != OMNIPROF_STATUS_SUCCESS) return st;
    op_buffer_set_thread(b, idx);
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_at_internal_thread_create(omniprof_internal_thread_library_cb_t precreate,
                                                                  omniprof_internal_thread_library_cb_t postcreate,
                                                                  int libs, void *data)
{
    if (!precreate && !postcreate) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    op_sdk_ensure_init();
    omniprof_status_t st = op_sdk_config_open();
    if (st != OMNIPROF_STATUS_SUCCESS) return st;
    op_sdk_lock();
    int n = atomic_load(&g_nthread_cbs);
    if (n >= 32) {
        op_sdk_unlock();
        return OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    g_thread_cbs[n] = (op_thread_cb){precreate, postcreate, libs, data};
    atomic_store_explicit(&g_nthread_cbs, n + 1, memory_order_release);
    op_sdk_unlock();
    return OMNIPROF_STATUS_SUCCESS;
}

void op_internal_thread_notify(omniprof_runtime_library_t lib, int post)
{
    int n = atomic_load_explicit(&g_nthread_cbs, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        op_thread_cb *c = &g_thread_cbs[i];
        if (!(c->libs & (int)lib)) continue;
        omniprof_internal_thread_library_cb_t fn = post ? c->post : c->pre;
        if (fn) fn(lib, c->data);
    }
}

typedef struct op_trampoline {
    void *(*fn)(void *);
    void *arg;
    char name[16];
} op_trampoline;

static void *trampoline(void *p)
{
    op_trampoline tr = *(op_trampoline *)p;
    op_free(p);
    op_tls *t = op_tls_get();
    if (t) t->internal = 1;
    if (tr.name[0]) pthread_setname_np(pthread_self(), tr.name);
    return tr.fn(tr.arg);
}

int op_sdk_create_thread(pthread_t *thread, void *(*fn)(void *), void *arg, omniprof_runtime_library_t lib,
                         const char *name)
{
    if (!thread || !fn) return -1;
    op_trampoline *tr = op_malloc(sizeof *tr);
    if (!tr) return -1;
    tr->fn = fn;
    tr->arg = arg;
    memset(tr->name, 0, sizeof tr->name);
    if (name) strncpy(tr->name, name, sizeof tr->name - 1);
    op_internal_thread_notify(lib, 0);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    /* Detached: nothing of ours is ever joined (DESIGN rule 1: no join that can hang at exit). */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = op_worker_thread_create(thread, &attr, trampoline, tr); /* on OMNIPROF_WORKER_CPUS */
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) op_free(tr);
    op_internal_thread_notify(lib, 1);
    return rc;
}

int op_sdk_thread_is_internal(void)
{
    op_tls *t = op_tls_peek();
    return t && t->internal;
}
