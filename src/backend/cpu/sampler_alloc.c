/* sampler_alloc.c — the sampler's allocator threads: the consumer side of the rings (drain,
 * deferred unwinding, emission into the SDK or a spill file), flushes and finalization,
 * attach's park/unpark and the fork hooks. Design and ring invariants: sampler.c's head comment. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/sampler_internal.h"
#include "common/alloc.h"
#include "common/clock.h"
#include "common/fd_guard.h"
#include "common/log.h"
#include "sdk/backend.h"

#define OP_CPU_POLL_MS 50

static pthread_mutex_t g_alloc_lock = PTHREAD_MUTEX_INITIALIZER; /* g_allocs array */
static op_cpu_allocator **g_allocs;
static uint32_t g_n_allocs, g_cap_allocs;
static uint64_t g_assigned; /* threads assigned so far, under g_alloc_lock */
static _Atomic uint64_t g_dropped_exited; /* drops of threads already freed */

/* ---------------------------------------------------------------------------------------- */
/* Allocators.                                                                              */

static void emit_record(op_cpu_allocator *a, const omniprof_cpu_sample_record_t *rec)
{
    if (a && a->spill_fd >= 0) {
        const uint8_t *p = (const uint8_t *)rec;
        size_t left = rec->size;
        /* never write into a file the program put on our number behind the interposers */
        while (left) {
            ssize_t w = op_fd_write_checked(a->spill_fd, p, left, true);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                op_warn("cpu: cannot write the sample spill file (%s); emitting directly", strerror(errno));
                op_fd_close(a->spill_fd);
                a->spill_fd = -1;
                break;
            }
            p += w;
            left -= (size_t)w;
        }
        if (!left) {
            a->spilled++;
            return;
        }
    }
    op_sdk_emit(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, rec->operation, rec, NULL);
}

/* A sample unwound in the handler: its frames tagged with their modules (modules.c) when a
 * module was closed during the run. */
static void emit_sample(op_cpu_allocator *a, const omniprof_cpu_sample_record_t *rec)
{
    bool py = rec->kind == OP_CPU_RING_SAMPLE_PY;
    if ((!py && !op_cpu_modules_any_retired()) || rec->num_frames > OMNIPROF_CPU_SAMPLE_MAX_FRAMES) {
        emit_record(a, rec);
        return;
    }
    union {
        omniprof_cpu_sample_record_t rec;
        uint8_t bytes[sizeof(omniprof_cpu_sample_record_t) + OMNIPROF_CPU_SAMPLE_MAX_FRAMES * sizeof(uint64_t)];
    } out;
    size_t size = sizeof out.rec + (size_t)rec->num_frames * sizeof(uint64_t);
    memcpy(&out, rec, size);
    op_cpu_modules_tag(out.rec.frames, out.rec.num_frames, out.rec.timestamp);
    if (py) {
        const uint64_t *raw = rec->frames + rec->num_frames;
        uint32_t m = raw[0] > OP_CPU_PY_MAX_FRAMES ? OP_CPU_PY_MAX_FRAMES : (uint32_t)raw[0];
        out.rec.num_frames = op_cpu_py_merge(out.rec.frames, out.rec.num_frames, raw + 1, m, g_smp_max_depth);
        out.rec.kind = OMNIPROF_BUFFER_TRACING_CPU_SAMPLE;
        size = sizeof out.rec + (size_t)out.rec.num_frames * sizeof(uint64_t);
    }
    out.rec.size = size;
    emit_record(a, &out.rec);
}

/* Unwind a stack copy with the allocator's address space (or, for a thread without
 * allocator, a shared one under its own lock) and emit the sample it stands for. */
static void emit_unwound(op_cpu_allocator *a, const omniprof_cpu_sample_record_t *raw)
{
    static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
    static op_cpu_unwinder *shared;
    union {
        omniprof_cpu_sample_record_t rec;
        uint8_t bytes[sizeof(omniprof_cpu_sample_record_t) + OMNIPROF_CPU_SAMPLE_MAX_FRAMES * sizeof(uint64_t)];
    } out;
    const op_cpu_stack_copy *c = (const op_cpu_stack_copy *)(raw + 1);
    memcpy(&out.rec, raw, sizeof out.rec);
    if (!a) pthread_mutex_lock(&shared_lock);
    op_cpu_unwinder **u = a ? &a->unwinder : &shared;
    if (!*u) *u = op_cpu_unwinder_create();
    uint32_t n = 0;
    if (*u) n = op_cpu_unwind_copy(*u, c, (const uint8_t *)(c + 1), out.rec.frames, g_smp_max_depth);
    else if (c->gregs[REG_RIP]) out.rec.frames[n++] = c->gregs[REG_RIP];
    if (!a) pthread_mutex_unlock(&shared_lock);
    n = op_cpu_drop_own_frames(out.rec.frames, n);
    op_cpu_modules_tag(out.rec.frames, n, out.rec.timestamp);
    if (c->py_n)
        n = op_cpu_py_merge(out.rec.frames, n, (const uint64_t *)((const uint8_t *)(c + 1) + c->len),
                            c->py_n > OP_CPU_PY_MAX_FRAMES ? OP_CPU_PY_MAX_FRAMES : (uint32_t)c->py_n, g_smp_max_depth);
    out.rec.kind = OMNIPROF_BUFFER_TRACING_CPU_SAMPLE;
    out.rec.num_frames = n;
    out.rec.size = sizeof out.rec + (size_t)n * sizeof(uint64_t);
    emit_record(a, &out.rec);
}

/* Consume every committed record of t's ring. Caller holds t->allocator->lock (or t has no
 * allocator and the caller is the only consumer). */
static uint64_t drain_ring(op_cpu_allocator *a, op_cpu_thread *t)
{
    op_cpu_ring *r = &t->ring;
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t n = 0;
    while (tail < head) {
        const uint8_t *p = r->data + (size_t)(tail % r->cap);
        uint64_t size = *(const uint64_t *)p;
        if (size == 0 || size > r->cap) break; /* cannot happen; never loop forever */
        /* a sample is never smaller than its header; anything smaller is a pad */
        uint32_t kind = size >= sizeof(omniprof_cpu_sample_record_t) ? ((const uint32_t *)p)[2] : 0;
        if (kind == OMNIPROF_BUFFER_TRACING_CPU_SAMPLE || kind == OP_CPU_RING_SAMPLE_PY) {
            emit_sample(a, (const omniprof_cpu_sample_record_t *)p);
            n++;
        } else if (kind == OP_CPU_RING_STACK_COPY && size >= sizeof(omniprof_cpu_sample_record_t) + sizeof(op_cpu_stack_copy)) {
            emit_unwound(a, (const omniprof_cpu_sample_record_t *)p);
            n++;
        }
        tail += size;
    }
    atomic_store_explicit(&r->tail, tail, memory_order_release);
    uint64_t dropped = atomic_load_explicit(&r->dropped, memory_order_relaxed);
    if (dropped > r->dropped_reported) { /* invariant (5): drops reach the database */
        op_sdk_report_lost(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE,
                           g_op_cpu_cfg.timer_on[OP_CPU_TIMER_CPUTIME] ? OMNIPROF_CPU_SAMPLE_CPUTIME
                                                                       : OMNIPROF_CPU_SAMPLE_REALTIME,
                           dropped - r->dropped_reported);
        r->dropped_reported = dropped;
    }
    return n;
}

/* The handler's cost, summed over threads (exited ones folded in by free_thread). */
static _Atomic uint64_t g_cost_exited[4]; /* samples, handler ns, unwind ns, max ns */

static void cost_add(_Atomic uint64_t *sum, const op_cpu_thread *t)
{
    atomic_fetch_add(&sum[0], t->samples);
    atomic_fetch_add(&sum[1], t->handler_ns);
    atomic_fetch_add(&sum[2], t->unwind_ns);
    uint64_t m = atomic_load(&sum[3]);
    while (t->handler_max_ns > m && !atomic_compare_exchange_weak(&sum[3], &m, t->handler_max_ns)) {
    }
    if (t->samples)
        op_info("cpu: thread %d (%s): %llu samples, signal handler %.1f us each (%s %.1f us), at most %.1f us",
                 (int)t->tid, t->name, (unsigned long long)t->samples, (double)t->handler_ns / 1e3 / (double)t->samples,
                 g_smp_deferred ? "unwind or stack copy" : "unwind",
                 (double)t->unwind_ns / 1e3 / (double)t->samples, (double)t->handler_max_ns / 1e3);
}

static void free_thread(op_cpu_thread *t)
{
    cost_add(g_cost_exited, t);
    atomic_fetch_add(&g_dropped_exited, atomic_load(&t->ring.dropped));
    if (t->has_ring) munmap(t->ring.data, t->ring.cap);
    op_free(t);
}

/* Move the threads started since the last pass into the list. Caller holds a->lock. */
static void take_pending(op_cpu_allocator *a)
{
    op_cpu_thread *t = atomic_exchange_explicit(&a->pending, NULL, memory_order_acquire);
    while (t) {
        op_cpu_thread *next = t->alloc_next;
        t->alloc_next = a->threads;
        a->threads = t;
        t = next;
    }
}

/* One pass over an allocator's threads: drain each, free the exited ones. */
static void allocator_pass(op_cpu_allocator *a)
{
    pthread_mutex_lock(&a->lock);
    take_pending(a);
    op_cpu_thread **pp = &a->threads;
    while (*pp) {
        op_cpu_thread *t = *pp;
        bool exited = atomic_load_explicit(&t->state, memory_order_acquire) == OP_CPU_THREAD_EXITED;
        drain_ring(a, t);
        if (exited) { /* invariant (4) */
            *pp = t->alloc_next;
            free_thread(t);
            continue;
        }
        pp = &t->alloc_next;
    }
    pthread_mutex_unlock(&a->lock);
}

static void *allocator_main(void *arg)
{
    op_cpu_allocator *a = arg;
    while (!atomic_load(&a->stop)) {
        struct pollfd pfd = {.fd = op_fd_usable(a->efd), .events = POLLIN}; /* -1: poll waits out the period */
        int rc = poll(&pfd, 1, OP_CPU_POLL_MS);
        if (rc > 0) {
            uint64_t v;
            ssize_t rd = op_fd_read_checked(a->efd, &v, sizeof v, true); /* never the number polled: it may have moved */
            (void)rd;
        }
        if (atomic_load(&a->stop)) break;
        op_cpu_threads_emit_pending();
        allocator_pass(a);
    }
    atomic_store(&a->alive, 0);
    return NULL;
}

static void allocator_thread_start(op_cpu_allocator *a)
{
    pthread_t th;
    atomic_store(&a->stop, 0);
    atomic_store(&a->alive, 1);
    if (op_sdk_create_thread(&th, allocator_main, a, OMNIPROF_LIBRARY, "omniprof.cpu.alloc") != 0) {
        atomic_store(&a->alive, 0);
        op_warn("cpu: cannot start a sample allocator thread; its samples are drained at flush only");
        /* still usable: flush/finalize drain it */
    }
}

static op_cpu_allocator *allocator_create(uint32_t index)
{
    op_cpu_allocator *a = op_calloc(1, sizeof *a);
    if (!a) return NULL;
    pthread_mutex_init(&a->lock, NULL);
    a->index = index;
    a->spill_fd = -1;
    a->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (a->efd >= 0) a->efd = op_fd_adopt(a->efd, OP_FD_IDENTITY); /* above the program's fds, protected */
    if (a->efd < 0) {
        op_free(a);
        return NULL;
    }
    if (g_op_cpu_cfg.temporary_files) {
        const char *dir = getenv("TMPDIR");
        if (!dir || !*dir) dir = "/tmp";
        a->spill_fd = op_fd_tmpfile(dir, OP_FD_IDENTITY);
        if (a->spill_fd < 0)
            op_warn("cpu: OMNIPROF_SAMPLING_TEMPORARY_FILES: cannot create a file in '%s' (%s); keeping samples in "
                    "memory",
                    dir, strerror(errno));
    }
    allocator_thread_start(a);
    return a;
}

/* Pick the allocator of the next sampled thread among those that exist (threads are created
 * beforehand by op_cpu_sampler_prepare, outside the registry lock). */
op_cpu_allocator *op_cpu_allocator_pick(bool may_create)
{
    (void)may_create;
    pthread_mutex_lock(&g_alloc_lock);
    uint32_t per = g_op_cpu_cfg.allocator_size ? g_op_cpu_cfg.allocator_size : 8;
    uint32_t max = g_op_cpu_cfg.max_allocators ? g_op_cpu_cfg.max_allocators : 16;
    uint32_t want = (uint32_t)((g_assigned / per) % max);
    g_assigned++;
    op_cpu_allocator *a = g_n_allocs ? g_allocs[want % g_n_allocs] : NULL;
    pthread_mutex_unlock(&g_alloc_lock);
    return a;
}

/* Make sure enough allocators exist for n_threads sampled threads (never under the registry
 * lock: it creates threads). */
void op_cpu_sampler_prepare(uint64_t n_threads)
{
    uint32_t per = g_op_cpu_cfg.allocator_size ? g_op_cpu_cfg.allocator_size : 8;
    uint32_t max = g_op_cpu_cfg.max_allocators ? g_op_cpu_cfg.max_allocators : 16;
    uint64_t need = (n_threads + per - 1) / per;
    if (need < 1) need = 1;
    if (need > max) need = max;
    for (;;) {
        pthread_mutex_lock(&g_alloc_lock);
        uint32_t have = g_n_allocs;
        pthread_mutex_unlock(&g_alloc_lock);
        if (have >= need) break;
        op_cpu_allocator *na = allocator_create(have);
        if (!na) break;
        pthread_mutex_lock(&g_alloc_lock);
        if (g_n_allocs == g_cap_allocs) {
            uint32_t nc = g_cap_allocs ? g_cap_allocs * 2 : 8;
            op_cpu_allocator **grown = op_realloc(g_allocs, nc * sizeof *grown);
            if (grown) {
                g_allocs = grown;
                g_cap_allocs = nc;
            }
        }
        if (g_n_allocs < g_cap_allocs) g_allocs[g_n_allocs++] = na;
        pthread_mutex_unlock(&g_alloc_lock);
    }
}

/* A copy of the allocator list (op_free it; NULL when empty, out of memory, or with try_lock
 * when the list's lock is taken), so that passes over it run without g_alloc_lock. */
static op_cpu_allocator **allocators_snapshot(uint32_t *n, bool try_lock)
{
    *n = 0;
    if (try_lock ? pthread_mutex_trylock(&g_alloc_lock) != 0 : pthread_mutex_lock(&g_alloc_lock) != 0) return NULL;
    uint32_t k = g_n_allocs;
    op_cpu_allocator **copy = k ? op_malloc(k * sizeof *copy) : NULL;
    if (copy) {
        memcpy(copy, g_allocs, k * sizeof *copy);
        *n = k;
    }
    pthread_mutex_unlock(&g_alloc_lock);
    return copy;
}

/* The thread is gone (or going): its allocator drains and frees it. */
void op_cpu_sampler_release(op_cpu_thread *t)
{
    if (!t->allocator) {
        if (t->has_ring) {
            drain_ring(NULL, t);
        }
        free_thread(t);
        return;
    }
    op_cpu_allocator *a = t->allocator;
    atomic_store_explicit(&t->state, OP_CPU_THREAD_EXITED, memory_order_release);
    uint64_t one = 1;
    ssize_t w = op_fd_write_checked(a->efd, &one, sizeof one, true);
    (void)w;
}

void op_cpu_sampler_drain_all(void)
{
    op_cpu_threads_emit_pending();
    uint32_t n;
    op_cpu_allocator **copy = allocators_snapshot(&n, false);
    for (uint32_t i = 0; copy && i < n; i++) allocator_pass(copy[i]);
    op_free(copy);
}

/* op_cpu_sampler_drain_all without waiting: an allocator whose lock is taken (it is draining
 * already) is skipped. For dlclose, where the caller may hold the loader's lock that a walk
 * takes under the allocator's lock. */
void op_cpu_sampler_drain_try(void)
{
    uint32_t n;
    op_cpu_allocator **copy = allocators_snapshot(&n, true);
    for (uint32_t i = 0; copy && i < n; i++) {
        op_cpu_allocator *a = copy[i];
        if (pthread_mutex_trylock(&a->lock) != 0) continue;
        take_pending(a);
        for (op_cpu_thread *t = a->threads; t; t = t->alloc_next) drain_ring(a, t);
        pthread_mutex_unlock(&a->lock);
    }
    op_free(copy);
}

static void emit_spilled(op_cpu_allocator *a)
{
    if (a->spill_fd < 0 || !a->spilled) return;
    size_t cap = sizeof(omniprof_cpu_sample_record_t) + OMNIPROF_CPU_SAMPLE_MAX_FRAMES * sizeof(uint64_t) + 8;
    uint8_t *buf = op_malloc(cap);
    if (!buf) return;
    off_t off = 0;
    for (;;) {
        op_fd_io_begin(true);
        int fd = op_fd_usable(a->spill_fd);
        ssize_t r = pread(fd, buf, sizeof(uint64_t), off);
        uint64_t size = r == (ssize_t)sizeof(uint64_t) ? *(uint64_t *)buf : 0;
        bool whole = size >= sizeof(omniprof_cpu_sample_record_t) && size <= cap && pread(fd, buf, size, off) == (ssize_t)size;
        op_fd_io_end();
        if (!whole) break;
        const omniprof_cpu_sample_record_t *rec = (const omniprof_cpu_sample_record_t *)buf;
        op_sdk_emit(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, rec->operation, rec, NULL);
        off += (off_t)size;
    }
    op_free(buf);
    op_fd_close(a->spill_fd);
    a->spill_fd = -1;
    a->spilled = 0;
}

void op_cpu_sampler_finalize(void)
{
    op_cpu_threads_foreach(op_cpu_sampler_stop_timers_cb, NULL);
    uint32_t n;
    op_cpu_allocator **copy = allocators_snapshot(&n, false);
    for (uint32_t i = 0; copy && i < n; i++) {
        op_cpu_allocator *a = copy[i];
        atomic_store(&a->stop, 1); /* never joined: the thread exits within OP_CPU_POLL_MS */
        uint64_t one = 1;
        ssize_t w = op_fd_write_checked(a->efd, &one, sizeof one, true);
        (void)w;
        pthread_mutex_lock(&a->lock);
        int spill = a->spill_fd;
        a->spill_fd = -1; /* drain straight into the SDK from now on */
        op_cpu_thread *t;
        take_pending(a);
        for (t = a->threads; t; t = t->alloc_next) drain_ring(a, t);
        a->spill_fd = spill;
        emit_spilled(a);
        pthread_mutex_unlock(&a->lock);
    }
    op_free(copy);
    op_cpu_unwind_local_report();
    op_cpu_py_report();
}

static void dropped_cb(op_cpu_thread *t, void *data)
{
    *(uint64_t *)data += atomic_load(&t->ring.dropped);
}

static void cost_cb(op_cpu_thread *t, void *arg) { cost_add((_Atomic uint64_t *)arg, t); }

void op_cpu_sampler_cost(uint64_t *samples, uint64_t *handler_ns, uint64_t *unwind_ns, uint64_t *max_ns)
{
    _Atomic uint64_t sum[4];
    for (int i = 0; i < 4; i++) atomic_init(&sum[i], atomic_load(&g_cost_exited[i]));
    op_cpu_threads_foreach(cost_cb, (void *)sum);
    *samples = atomic_load(&sum[0]);
    *handler_ns = atomic_load(&sum[1]);
    *unwind_ns = atomic_load(&sum[2]);
    *max_ns = atomic_load(&sum[3]);
}

uint64_t op_cpu_sampler_dropped(void)
{
    uint64_t n = atomic_load(&g_dropped_exited);
    op_cpu_threads_foreach(dropped_cb, &n);
    return n;
}

/* omniprof attach's detach (timers disarmed, rings drained by the flush that follows): the
 * allocator threads end and their eventfds close (bounded wait); unpark, at a re-attach, makes
 * new ones. The allocators themselves stay (threads keep pointing at them). */
void op_cpu_sampler_park(void)
{
    pthread_mutex_lock(&g_alloc_lock);
    for (uint32_t i = 0; i < g_n_allocs; i++) {
        op_cpu_allocator *a = g_allocs[i];
        atomic_store(&a->stop, 1);
        uint64_t one = 1;
        if (a->efd >= 0) (void)op_fd_write_checked(a->efd, &one, sizeof one, false);
        for (int k = 0; k < 400 && atomic_load(&a->alive); k++) {
            struct timespec ts = {0, 1000000L};
            nanosleep(&ts, NULL);
        }
        if (atomic_load(&a->alive)) continue; /* still unwinding: left as it is */
        if (a->efd >= 0) {
            int fd = a->efd;
            a->efd = -1;
            op_fd_close(fd);
        }
    }
    pthread_mutex_unlock(&g_alloc_lock);
}

void op_cpu_sampler_unpark(void)
{
    pthread_mutex_lock(&g_alloc_lock);
    for (uint32_t i = 0; i < g_n_allocs; i++) {
        op_cpu_allocator *a = g_allocs[i];
        if (atomic_load(&a->alive)) continue;
        if (a->efd < 0) {
            int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
            a->efd = fd >= 0 ? op_fd_adopt(fd, OP_FD_IDENTITY) : -1;
        }
        allocator_thread_start(a);
    }
    pthread_mutex_unlock(&g_alloc_lock);
}

/* Fork (the preload layer's fork hooks, on the forking thread). An allocator unwinds under its
 * lock and inside dl_iterate_phdr (unwind_deferred.c): a fork in the middle of a walk left the
 * loader's lock held in the child by a thread that does not exist there, and the child's first
 * walk (or its own dlopen) waited forever (seen: bash's command substitutions under a shell
 * script that execs python). So every allocator's lock is taken before the fork and given back
 * in the parent; the child abandons them (op_cpu_sampler_at_fork_child). */
static op_cpu_allocator **g_fork_locked;
static uint32_t g_n_fork_locked;

void op_cpu_sampler_fork_prepare(void)
{
    g_fork_locked = allocators_snapshot(&g_n_fork_locked, false);
    for (uint32_t i = 0; g_fork_locked && i < g_n_fork_locked; i++) pthread_mutex_lock(&g_fork_locked[i]->lock);
}

void op_cpu_sampler_fork_parent(void)
{
    for (uint32_t i = 0; g_fork_locked && i < g_n_fork_locked; i++) pthread_mutex_unlock(&g_fork_locked[i]->lock);
    op_free(g_fork_locked);
    g_fork_locked = NULL;
    g_n_fork_locked = 0;
}

/* Fork child: only the forking thread survives; allocator threads are gone. The old
 * allocators' memory (and other threads' rings) is abandoned on purpose: another thread may
 * have held a lock at the fork, so nothing of it is touched. */
void op_cpu_sampler_at_fork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    g_alloc_lock = fresh;
    for (uint32_t i = 0; i < g_n_allocs; i++) { /* descriptors are the child's copies: close them */
        if (g_allocs[i]->efd >= 0) op_fd_close(g_allocs[i]->efd);
        if (g_allocs[i]->spill_fd >= 0) op_fd_close(g_allocs[i]->spill_fd);
    }
    g_allocs = NULL;
    g_n_allocs = g_cap_allocs = 0;
    g_assigned = 0;
    g_fork_locked = NULL; /* the snapshot's memory and the locks in it are abandoned too */
    g_n_fork_locked = 0;
    atomic_store(&g_dropped_exited, 0);
}
