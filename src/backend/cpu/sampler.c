/* sampler.c — call-stack sampling: the signal handler that unwinds into a per-thread mmap'd
 * ring, and the allocator threads that drain rings into the SDK.
 *
 * Signals. Each sampled thread owns up to two sample clocks (sample_clock.c), each signalling
 * that very thread: the CPU-time one is the thread's perf task-clock event (where the kernel
 * refuses it, a POSIX timer on the thread's CPU clock), the real-time one a POSIX timer on
 * CLOCK_MONOTONIC (timer_create, SIGEV_THREAD_ID). They fire real-time signals, SIGRTMIN+4 and
 * SIGRTMIN+5 by default (OMNIPROF_SAMPLING_{CPUTIME,REALTIME}_SIGNAL), never SIGPROF or
 * SIGALRM, so a program's own profiling timers keep working. A timer's sigev_value carries
 * OP_CPU_SIGVAL_MAGIC + timer type, a task-clock signal the event's fd (op_cpu_clock_signal_kind):
 * any other delivery of the signal (kill, sigqueue, the program's own timers) is passed on to
 * the program's handler, which the
 * sigaction/signal wrappers record instead of installing (op_cpu_sampler_chain_sigaction).
 *
 * Unwinding (OMNIPROF_SAMPLING_UNWIND). deferred (the default, as perf's dwarf mode): the
 * handler copies the interrupted registers (the ucontext's gregs) and the stack from RSP up to
 * min(RSP + OMNIPROF_SAMPLING_STACK_BYTES, the thread's stack top) into the ring as an
 * OP_CPU_RING_STACK_COPY record (memcpy only); the allocator unwinds the copy
 * (unwind_deferred.c) and emits the same CPU_SAMPLE record the handler would have written.
 * A thread whose stack bounds are unknown (adopted threads) or whose RSP lies outside them
 * (sigaltstack, makecontext stacks, fibers, greenlets) is unwound in the handler as in the
 * handler mode (counted: op_cpu_unwind_fallback_count). The copy costs the interrupted thread
 * a few microseconds instead of the walk (tens of microseconds on deep C++/Python stacks).
 *
 * The handler (op_cpu_on_signal) is async-signal-safe. It calls only: clock_gettime,
 * getrusage, read (perf_event group), timer_settime or ioctl (disarm after the duration; re-arm
 * a task-clock event), memcpy, and
 * libunwind built with UNW_LOCAL_ONLY: unw_backtrace (the cached walker; its per-thread
 * cache is created before the thread's first sample, op_cpu_unwind_prewarm) or
 * unw_init_local2/unw_get_reg/unw_step (op_cpu_unwind, in unwind_local.c). It never
 * allocates, locks a pthread mutex or does stdio. Notes on libunwind's safety, as used here:
 *   - the caching policy is UNW_CACHE_PER_THREAD (set at setup), so unw_step takes no global
 *     lock; libunwind's local unwinder allocates from its own mmap'd pools, not malloc;
 *   - unw_step may call dl_iterate_phdr to find unwind tables. glibc's lock there is
 *     recursive, so a sample taken while the same thread is inside dlopen cannot deadlock;
 *     a sample taken while another thread holds it waits for that thread (bounded);
 *   - the walk starts from the interrupted context (UNW_INIT_SIGNAL_FRAME on the handler's
 *     ucontext), so neither the handler nor the kernel's trampoline appear in stacks;
 *   - a corrupt stack can make unw_step read bad memory; libunwind checks frame addresses it
 *     derives against the stack, which is the same exposure every libunwind-based sampler has.
 *   Both sampling signals are blocked while the handler runs (sa_mask), so the two timers of a
 *   thread never nest and the ring has one producer.
 *
 * Ring invariants (struct op_cpu_ring in cpu_internal.h):
 *   (1) tail <= head <= tail + cap; only the owning thread's handler moves head, only the
 *       consumer (allocator thread or a flusher holding allocator->lock) moves tail;
 *   (2) the producer publishes a record with a release store of head after writing it; the
 *       consumer reads head with acquire and releases tail after it is done with the bytes;
 *   (3) a record never wraps: the handler reserves what the record may need (a sample of full
 *       depth, or the exact size of a stack copy); when fewer bytes are left before the end, a
 *       pad record fills them ({size = rest, kind = 0}, or only the size when rest is 8 bytes;
 *       a size below a sample header's or a kind of 0 marks a pad), and the producer needs
 *       rest + need free bytes; otherwise the sample is dropped and counted (ring->dropped);
 *   (4) a thread's ring is unmapped only by its allocator, after the thread marked itself
 *       EXITED (its timers deleted, its handler can no longer run) and the ring was drained.
 *   (5) whether the ring takes a sample does not depend on the sample's size (ring_reserve):
 *       the ring drops while it has less room than the largest record needs, so drops are
 *       stretches of time, never the deep stacks in preference to the shallow ones; each drop
 *       is counted in the SDK (op_sdk_report_lost) when the ring is drained, and the database
 *       keeps the count (omniprof_drops, cause lost_at_source; the summary's CPU profile says it).
 *
 * Allocators. One allocator thread serves up to OMNIPROF_SAMPLING_ALLOCATOR_SIZE threads (at
 * most OMNIPROF_SAMPLING_MAX_ALLOCATORS allocators; beyond that they are shared). A handler
 * that fills its ring past half writes to the allocator's eventfd (write is async-signal-safe);
 * otherwise the allocator polls every 50 ms. It unwinds stack copies (with its own libunwind
 * address space, used under its lock) and copies each record into the SDK with
 * op_sdk_emit, or, with OMNIPROF_SAMPLING_TEMPORARY_FILES, appends it to an unlinked temporary
 * file that is emitted at finalization (lower perturbation during the run). */
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
#include "common/alloc.h"
#include "common/clock.h"
#include "common/fd_guard.h"
#include "common/log.h"
#include "sdk/backend.h"

#define OP_CPU_POLL_MS 50
#define OP_CPU_RING_BURST 64 /* deferred mode: full-size stack copies a ring holds at least */

typedef struct op_cpu_allocator {
    pthread_mutex_t lock;
    op_cpu_thread *threads;     /* served threads, under lock */
    /* threads just started, pushed without the lock (a pass may hold it while it unwinds):
     * moved to threads under the lock by take_pending */
    _Atomic(op_cpu_thread *) pending;
    uint32_t index;
    int efd;                    /* eventfd the handlers poke */
    _Atomic int stop;
    _Atomic int alive;          /* its thread runs (set before creating it, cleared as it ends) */
    int spill_fd;               /* -1 unless temporary files */
    uint64_t spilled;           /* records in the spill file */
    op_cpu_unwinder *unwinder;  /* deferred unwinding, under lock; made at the first copy */
} op_cpu_allocator;

static pthread_mutex_t g_alloc_lock = PTHREAD_MUTEX_INITIALIZER; /* g_allocs array */
static op_cpu_allocator **g_allocs;
static uint32_t g_n_allocs, g_cap_allocs;
static uint64_t g_assigned; /* threads assigned so far, under g_alloc_lock */

static int g_signo[OP_CPU_TIMER_COUNT];
static bool g_handler_installed[OP_CPU_TIMER_COUNT];
static struct sigaction g_chain[OP_CPU_TIMER_COUNT]; /* the program's action for our signal */
static bool g_chain_set[OP_CPU_TIMER_COUNT];
static uint64_t g_begin_ns[OP_CPU_TIMER_COUNT], g_end_ns[OP_CPU_TIMER_COUNT];
static uint32_t g_max_depth = OMNIPROF_CPU_SAMPLE_MAX_FRAMES;
static _Atomic uint64_t g_dropped_exited; /* drops of threads already freed */
static bool g_deferred;                    /* OMNIPROF_SAMPLING_UNWIND=deferred */
static uint64_t g_stack_bytes = 32768;     /* OMNIPROF_SAMPLING_STACK_BYTES */
static _Atomic uint64_t g_fallbacks;       /* deferred mode: samples unwound in the handler */
static bool g_py;                          /* a CPython process: Python frames read (python_frames.c) */
static size_t g_py_bytes;                  /* their room in a record: count + raw frames */
uint64_t op_cpu_unwind_fallback_count(void) { return atomic_load_explicit(&g_fallbacks, memory_order_relaxed); }

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
static sigaction_fn real_sigaction(void) { return omniprof_preload_real_sigaction; }

bool op_cpu_is_sampling_signal(int signo, int *type)
{
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++)
        if (g_handler_installed[i] && g_signo[i] == signo) {
            if (type) *type = i;
            return true;
        }
    return false;
}

/* ---------------------------------------------------------------------------------------- */
/* The signal handler.                                                                      */

static void op_cpu_chain(int type, int signo, siginfo_t *si, void *uc)
{
    if (type < 0 || !g_chain_set[type]) return;
    const struct sigaction *a = &g_chain[type];
    if (a->sa_flags & SA_SIGINFO) {
        if (a->sa_sigaction) a->sa_sigaction(signo, si, uc);
    } else if (a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN && a->sa_handler) {
        a->sa_handler(signo);
    }
}

/* Invariant (5): whether a sample is kept never depends on its own size. A stack copy's size
 * is where the program is (how deep its stack is there): had a nearly full ring taken the small
 * copies and dropped the large ones, the functions of deep stacks would lose their share, and
 * every thread's share would move with its stack's depth. So the ring takes a sample only while
 * it has room for the largest record (`room`, with the pad the largest would need here), and
 * drops every sample, whatever its size, while it has not: what a full ring drops is a stretch
 * of time, not a kind of place. */
static inline uint8_t *ring_reserve(op_cpu_ring *r, size_t need, size_t room, uint64_t *head_out)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    size_t off = (size_t)(head % r->cap);
    size_t rest = r->cap - off;
    size_t pad = rest < need ? rest : 0;
    size_t room_pad = rest < room ? rest : 0;
    if (room < need) room = need;
    if (head + room_pad + room - tail > r->cap) return NULL; /* invariants (3) and (5): drop */
    if (pad) { /* pad record: its size, and kind 0 when there is room (rest may be 8 bytes) */
        *(uint64_t *)(r->data + off) = pad;
        if (pad >= 16) ((uint32_t *)(r->data + off))[2] = 0;
        head += pad;
        off = 0;
    }
    *head_out = head;
    return r->data + off;
}


/* Copy n bytes of the live stack. ASan poisons the redzones of the frames there, and its
 * memcpy would report them: sanitized builds copy word by word uninstrumented. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OP_CPU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(OP_CPU_ASAN)
__attribute__((no_sanitize_address)) static void stack_copy(uint8_t *dst, const uint8_t *src, size_t n)
{
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t v = *(const volatile uint64_t *)(src + i);
        *(uint64_t *)(dst + i) = v;
    }
}
#else
static inline void stack_copy(uint8_t *dst, const uint8_t *src, size_t n) { memcpy(dst, src, n); }
#endif

/* Bytes of stack the handler copies for the allocator (deferred mode), 0 to unwind in the
 * handler (handler mode, or a thread whose stack is unknown or elsewhere: counted). */
static uint64_t copy_len(const ucontext_t *uc, const op_cpu_thread *t)
{
#if defined(__x86_64__)
    if (!g_deferred) return 0;
    uint64_t sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP] & ~(uint64_t)7u;
    if (sp >= t->stack_lo && sp < t->stack_hi) {
        uint64_t len = t->stack_hi - sp < g_stack_bytes ? t->stack_hi - sp : g_stack_bytes;
        return len & ~(uint64_t)7u;
    }
    atomic_fetch_add_explicit(&g_fallbacks, 1, memory_order_relaxed);
#else
    (void)uc, (void)t;
#endif
    return 0;
}

/* Fill the call stack of the sample at rec (its header written): len bytes of stack copy for
 * the allocator (copy_len), or the frames. Returns the record's size (8-byte multiple) with
 * rec->size and kind set. */
static size_t record_stack(ucontext_t *uc, const op_cpu_thread *t, uint64_t len, omniprof_cpu_sample_record_t *rec)
{
#if defined(__x86_64__)
    if (len) {
        op_cpu_stack_copy *c = (op_cpu_stack_copy *)(rec + 1);
        memcpy(c->gregs, uc->uc_mcontext.gregs, sizeof c->gregs);
        c->sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP] & ~(uint64_t)7u;
        c->stack_hi = t->stack_hi;
        c->len = len;
        stack_copy((uint8_t *)(c + 1), (const uint8_t *)(uintptr_t)c->sp, (size_t)c->len);
        c->py_n = g_py ? op_cpu_py_capture((uint64_t *)((uint8_t *)(c + 1) + c->len), OP_CPU_PY_MAX_FRAMES) : 0;
        rec->kind = OP_CPU_RING_STACK_COPY;
        rec->num_frames = 0;
        rec->size = sizeof(*rec) + sizeof *c + (size_t)c->len + (size_t)c->py_n * sizeof(uint64_t);
        return rec->size;
    }
#else
    (void)t, (void)len;
#endif
    uint32_t n = op_cpu_drop_own_frames(rec->frames, op_cpu_unwind(uc, rec->frames, g_max_depth));
    rec->num_frames = n;
    size_t size = sizeof(*rec) + (size_t)n * sizeof(uint64_t);
    if (g_py) { /* a uint64 count and the raw Python frames after the frames */
        uint64_t *py = rec->frames + n;
        py[0] = op_cpu_py_capture(py + 1, OP_CPU_PY_MAX_FRAMES);
        if (py[0]) {
            rec->kind = OP_CPU_RING_SAMPLE_PY;
            size += (size_t)(py[0] + 1) * sizeof(uint64_t);
        }
    }
    size = (size + 7u) & ~(size_t)7u;
    rec->size = size;
    return size;
}

static void op_cpu_on_signal(int signo, siginfo_t *si, void *ucv)
{
    int type = -1;
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++)
        if (g_handler_installed[i] && g_signo[i] == signo) type = i;
    if (type < 0 || !si || (si->si_code != SI_TIMER && si->si_code != POLL_IN && si->si_code != POLL_HUP)) {
        op_cpu_chain(type, signo, si, ucv);
        return;
    }
    int saved_errno = errno;
    op_cpu_thread *t = op_cpu_tls_thread;
    if (!t && (t = op_cpu_adopted_find((pid_t)syscall(SYS_gettid)))) op_cpu_tls_thread = t; /* adopt.c */
    int kind = op_cpu_clock_signal_kind(t, type, si); /* sample_clock.c */
    if (kind != 1) {
        errno = saved_errno;
        if (!kind) op_cpu_chain(type, signo, si, ucv);
        return;
    }
    bool rearm = true; /* a task-clock event takes one overflow at a time (sample_clock.c) */
    if (!atomic_load_explicit(&t->active, memory_order_acquire) ||
        atomic_load_explicit(&g_op_cpu_stopping, memory_order_relaxed)) {
        rearm = false;
        goto out;
    }
    if (!atomic_load_explicit(&g_op_cpu_sampling_enabled[type], memory_order_relaxed)) goto out;
    uint64_t now = op_now_ns();
    if (now < g_begin_ns[type]) goto out;
    if (g_end_ns[type] && now >= g_end_ns[type]) {
        op_cpu_clock_disarm(t, type);
        rearm = false;
        goto out;
    }
    if (!op_cpu_window_open()) goto out;

    op_cpu_ring *r = &t->ring;
    uint64_t head, len = copy_len((const ucontext_t *)ucv, t);
    size_t need = len ? sizeof(omniprof_cpu_sample_record_t) + sizeof(op_cpu_stack_copy) + (size_t)len + g_py_bytes
                      : r->max_frames_record;
    uint8_t *slot = ring_reserve(r, need, r->max_record, &head);
    if (!slot) {
        atomic_fetch_add_explicit(&r->dropped, 1, memory_order_relaxed);
        goto out;
    }
    omniprof_cpu_sample_record_t *rec = (omniprof_cpu_sample_record_t *)slot;
    rec->kind = OMNIPROF_BUFFER_TRACING_CPU_SAMPLE;
    rec->operation = type == OP_CPU_TIMER_CPUTIME ? OMNIPROF_CPU_SAMPLE_CPUTIME : OMNIPROF_CPU_SAMPLE_REALTIME;
    rec->timestamp = now;
    rec->thread_id = (omniprof_thread_id_t)t->tid;
    rec->thread_internal_value = t->internal_value;
    struct rusage ru;
    /* RUSAGE_THREAD gives the process's peak RSS as RUSAGE_SELF does (the kernel takes both from
     * the mm's high-water mark), without summing every thread's times under the process lock */
    rec->peak_rss_bytes = getrusage(RUSAGE_THREAD, &ru) == 0 ? (uint64_t)ru.ru_maxrss * 1024u : 0;
    rec->num_events = t->perf_fd >= 0 ? op_cpu_perf_read(t->perf_fd, t->perf_n, rec->event_values) : 0;
    for (uint32_t i = rec->num_events; i < OMNIPROF_CPU_SAMPLE_MAX_EVENTS; i++) rec->event_values[i] = 0;

    uint64_t unwind_begin = op_now_ns();
    size_t size = record_stack((ucontext_t *)ucv, t, len, rec);
    uint64_t unwind_end = op_now_ns();
    atomic_store_explicit(&r->head, head + size, memory_order_release); /* invariant (2) */
    t->samples++;
    /* what a sample costs the thread it interrupts (reported at the end: op_cpu_sampler_cost) */
    uint64_t spent = op_now_ns() - now;
    t->handler_ns += spent;
    t->unwind_ns += unwind_end - unwind_begin;
    if (spent > t->handler_max_ns) t->handler_max_ns = spent;
    /* past half full: wake the allocator now (write(2) is async-signal-safe) */
    if (head + size - atomic_load_explicit(&r->tail, memory_order_relaxed) > r->cap / 2 && t->allocator) {
        uint64_t one = 1;
        ssize_t w = op_fd_write_checked(t->allocator->efd, &one, sizeof one, false);
        (void)w;
    }
out:
    if (rearm) op_cpu_clock_refresh(t, type);
    errno = saved_errno;
}

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
        out.rec.num_frames = op_cpu_py_merge(out.rec.frames, out.rec.num_frames, raw + 1, m, g_max_depth);
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
    if (*u) n = op_cpu_unwind_copy(*u, c, (const uint8_t *)(c + 1), out.rec.frames, g_max_depth);
    else if (c->gregs[REG_RIP]) out.rec.frames[n++] = c->gregs[REG_RIP];
    if (!a) pthread_mutex_unlock(&shared_lock);
    n = op_cpu_drop_own_frames(out.rec.frames, n);
    op_cpu_modules_tag(out.rec.frames, n, out.rec.timestamp);
    if (c->py_n)
        n = op_cpu_py_merge(out.rec.frames, n, (const uint64_t *)((const uint8_t *)(c + 1) + c->len),
                            c->py_n > OP_CPU_PY_MAX_FRAMES ? OP_CPU_PY_MAX_FRAMES : (uint32_t)c->py_n, g_max_depth);
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
                 g_deferred ? "unwind or stack copy" : "unwind",
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
static op_cpu_allocator *allocator_pick(bool may_create)
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

/* ---------------------------------------------------------------------------------------- */
/* Setup and per-thread start/stop.                                                         */

int op_cpu_sampler_setup(void)
{
    g_max_depth = g_op_cpu_cfg.max_depth;
    if (g_max_depth < 1 || g_max_depth > OMNIPROF_CPU_SAMPLE_MAX_FRAMES) g_max_depth = OMNIPROF_CPU_SAMPLE_MAX_FRAMES;
    op_cpu_unwind_local_setup(g_op_cpu_cfg.fast_unwind);
#if defined(__x86_64__)
    g_deferred = g_op_cpu_cfg.deferred_unwind;
#endif
    if (g_op_cpu_cfg.stack_bytes) g_stack_bytes = g_op_cpu_cfg.stack_bytes & ~7u;
    op_cpu_py_setup();
    g_py = op_cpu_py_enabled();
    g_py_bytes = g_py ? (OP_CPU_PY_MAX_FRAMES + 1) * sizeof(uint64_t) : 0;
    op_cpu_perf_setup();
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) {
        double d = g_op_cpu_cfg.delay[i] > 0 ? g_op_cpu_cfg.delay[i] : 0;
        g_begin_ns[i] = g_op_cpu_start_ns + (uint64_t)(d * 1e9);
        g_end_ns[i] = g_op_cpu_cfg.duration[i] > 0 ? g_begin_ns[i] + (uint64_t)(g_op_cpu_cfg.duration[i] * 1e9) : 0;
        if (!g_op_cpu_cfg.timer_on[i]) continue;
        g_signo[i] = g_op_cpu_cfg.signo[i];
        if (g_signo[i] < SIGRTMIN || g_signo[i] > SIGRTMAX) {
            op_error("cpu: sampling signal %d is not a real-time signal (SIGRTMIN..SIGRTMAX = %d..%d); timer off",
                     g_signo[i], SIGRTMIN, SIGRTMAX);
            g_op_cpu_cfg.timer_on[i] = false;
            continue;
        }
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = op_cpu_on_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        for (int j = 0; j < OP_CPU_TIMER_COUNT; j++)
            if (g_op_cpu_cfg.timer_on[j]) sigaddset(&sa.sa_mask, g_op_cpu_cfg.signo[j]);
        if (real_sigaction()(g_signo[i], &sa, &old) != 0) {
            op_error("cpu: cannot install the handler of signal %d (%s); %s sampling off", g_signo[i],
                     strerror(errno), i == 0 ? "cputime" : "realtime");
            g_op_cpu_cfg.timer_on[i] = false;
            continue;
        }
        if ((old.sa_flags & SA_SIGINFO) ? old.sa_sigaction != NULL
                                        : (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)) {
            op_warn("cpu: the program already handles signal SIGRTMIN+%d, which omniprof's %s sampler uses; "
                    "omniprof passes every signal not sent by its own timers on to the program's handler "
                    "(choose another with OMNIPROF_SAMPLING_%s_SIGNAL)",
                    g_signo[i] - SIGRTMIN, i == 0 ? "cputime" : "realtime", i == 0 ? "CPUTIME" : "REALTIME");
            g_chain[i] = old;
            g_chain_set[i] = true;
        }
        g_handler_installed[i] = true;
    }
    bool any = false;
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) any |= g_op_cpu_cfg.timer_on[i];
    if (!any) return -1;
    op_cpu_sampler_prepare(op_cpu_threads_count());
    return 0;
}

/* Program's sigaction for one of our signals: remember it (for chaining) instead of
 * replacing our handler. Returns 1 if handled, 0 if the signal is not ours. */
int op_cpu_sampler_chain_sigaction(int signo, const struct sigaction *act, struct sigaction *old)
{
    int type;
    if (!op_cpu_is_sampling_signal(signo, &type)) return 0;
    if (old) {
        if (g_chain_set[type]) {
            *old = g_chain[type];
        } else {
            memset(old, 0, sizeof *old);
            old->sa_handler = SIG_DFL;
        }
    }
    if (act) {
        static _Atomic int warned;
        if (!atomic_exchange(&warned, 1))
            op_warn("cpu: the program installs a handler for signal SIGRTMIN+%d, which omniprof's sampler uses; "
                    "omniprof keeps its handler and passes the program's own signals on to it (pick another "
                    "signal with OMNIPROF_SAMPLING_%s_SIGNAL)",
                    signo - SIGRTMIN, type == 0 ? "CPUTIME" : "REALTIME");
        g_chain[type] = *act;
        g_chain_set[type] = true;
    }
    return 1;
}

static bool ring_create(op_cpu_ring *r)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t max_record = sizeof(omniprof_cpu_sample_record_t) + (size_t)g_max_depth * sizeof(uint64_t);
    max_record = (max_record + 7u) & ~(size_t)7u;
    max_record += g_py_bytes;
    size_t frames_record = max_record;
    uint64_t n = g_op_cpu_cfg.buffer_samples < 1024 ? 1024 : g_op_cpu_cfg.buffer_samples;
    size_t cap = (size_t)n * max_record;
    if (g_deferred) { /* room for a burst of OP_CPU_RING_BURST full-size copies too */
        size_t copy = sizeof(omniprof_cpu_sample_record_t) + sizeof(op_cpu_stack_copy) + (size_t)g_stack_bytes + g_py_bytes;
        if (copy > max_record) max_record = copy;
        if (cap < OP_CPU_RING_BURST * max_record) cap = OP_CPU_RING_BURST * max_record;
    }
    cap = (cap + (size_t)page - 1) & ~((size_t)page - 1);
    void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    r->data = p;
    r->cap = cap;
    r->max_record = max_record;
    r->max_frames_record = frames_record;
    atomic_store(&r->head, 0);
    atomic_store(&r->tail, 0);
    atomic_store(&r->dropped, 0);
    r->dropped_reported = 0;
    return true;
}

/* The period of timer i in ns (OMNIPROF_SAMPLING_*_FREQ; at least 10 us). */
static uint64_t sampling_period(int i)
{
    double f = g_op_cpu_cfg.freq[i] > 0 ? g_op_cpu_cfg.freq[i] : 100.0;
    uint64_t period = (uint64_t)(1e9 / f);
    return period < 10000 ? 10000 : period;
}

/* Arm the timers of a live thread (any thread may call it; the caller holds the registry
 * lock so the thread cannot be unregistered meanwhile). */
void op_cpu_sampler_thread_start(op_cpu_thread *t)
{
    if (t->is_internal || t->has_ring) return;
    bool want = false;
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) {
        t->filtered[i] = !op_cpu_id_in_list(g_op_cpu_cfg.tids[i], t->sequent_value);
        want |= g_op_cpu_cfg.timer_on[i] && !t->filtered[i];
    }
    if (!want) return;
    if (!ring_create(&t->ring)) {
        static _Atomic int warned;
        if (!atomic_exchange(&warned, 1))
            op_warn("cpu: cannot map a sample buffer for thread %d (%s); that thread is not sampled", (int)t->tid,
                    strerror(errno));
        return;
    }
    t->has_ring = true;
    t->perf_fd = op_cpu_perf_open_thread(t->tid, t->perf_fds, &t->perf_n);
    op_cpu_allocator *a = allocator_pick(false);
    t->allocator = a;
    if (a) { /* lock-free push: creating a thread never waits for an allocator's pass */
        op_cpu_thread *head = atomic_load_explicit(&a->pending, memory_order_relaxed);
        do {
            t->alloc_next = head;
        } while (!atomic_compare_exchange_weak_explicit(&a->pending, &head, t, memory_order_release,
                                                        memory_order_relaxed));
    }
    atomic_store_explicit(&t->active, 1, memory_order_release);
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) {
        if (!g_op_cpu_cfg.timer_on[i] || t->filtered[i]) continue;
        uint64_t period = sampling_period(i);
        if (!op_cpu_clock_make(t, i, g_signo[i], period, g_op_cpu_cfg.task_clock)) { /* sample_clock.c */
            static _Atomic int warned;
            if (!atomic_exchange(&warned, 1))
                op_warn("cpu: timer_create failed for thread %d (%s); that thread is not sampled", (int)t->tid,
                        strerror(errno));
            continue;
        }
        uint64_t first = period;
        if (i == OP_CPU_TIMER_REALTIME) { /* first expiry at the delay */
            uint64_t now = op_now_ns();
            if (g_begin_ns[i] > now + period) first = g_begin_ns[i] - now;
        }
        op_cpu_clock_arm(t, i, period, first);
    }
}

/* Set the running timers of a thread to their period again (after adopt.c disarmed them). */
void op_cpu_sampler_rearm(op_cpu_thread *t)
{
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) op_cpu_clock_arm(t, i, sampling_period(i), sampling_period(i));
}

/* omniprof attach's re-attach: the clocks (and perf counters) that op_cpu_sampler_thread_stop
 * deleted at the detach are made again for a thread that kept its ring. */
void op_cpu_sampler_thread_remake(op_cpu_thread *t)
{
    if (t->is_internal || !t->has_ring || atomic_load(&t->active)) return;
    if (t->perf_fd < 0) t->perf_fd = op_cpu_perf_open_thread(t->tid, t->perf_fds, &t->perf_n);
    atomic_store_explicit(&t->active, 1, memory_order_release);
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) {
        if (!g_op_cpu_cfg.timer_on[i] || t->filtered[i]) continue;
        uint64_t period = sampling_period(i);
        if (op_cpu_clock_make(t, i, g_signo[i], period, g_op_cpu_cfg.task_clock)) op_cpu_clock_arm(t, i, period, period);
    }
}

/* On the thread itself (or for a thread that can no longer run: fork child). */
void op_cpu_sampler_thread_stop(op_cpu_thread *t)
{
    atomic_store_explicit(&t->active, 0, memory_order_release);
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) op_cpu_clock_delete(t, i);
    if (t->perf_fd >= 0) op_cpu_perf_close_thread(t->perf_fds, t->perf_n);
    t->perf_fd = -1;
    t->perf_n = 0;
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

static void stop_timer_cb(op_cpu_thread *t, void *data)
{
    (void)data;
    atomic_store_explicit(&t->active, 0, memory_order_release);
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++) op_cpu_clock_disarm(t, i);
}

/* exec (the preload layer's before_exec hook, on the calling thread). A sampling signal pending
 * at exec, or sent by a perf event that stays open across it, reaches the new image before any
 * handler of ours is installed there, and its default action ends the program (a shell script
 * that execs its program died so, with status 128+SIGRTMIN+4). So: block our signals, stop
 * every thread's timers, take the calling thread's pending ones, restore the mask. The other
 * threads and their pending signals end with the exec. */
void op_cpu_sampler_before_exec(void)
{
    sigset_t set, old;
    sigemptyset(&set);
    bool any = false;
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++)
        if (g_handler_installed[i]) sigaddset(&set, g_signo[i]), any = true;
    if (!any) return;
    pthread_sigmask(SIG_BLOCK, &set, &old);
    op_cpu_threads_foreach(stop_timer_cb, NULL);
    struct timespec zero = {0, 0};
    while (sigtimedwait(&set, NULL, &zero) > 0) {
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void rearm_cb(op_cpu_thread *t, void *data)
{
    (void)data;
    if (atomic_load_explicit(&t->state, memory_order_acquire) != OP_CPU_THREAD_LIVE || !t->has_ring) return;
    atomic_store_explicit(&t->active, 1, memory_order_release);
    op_cpu_sampler_rearm(t);
}

/* The exec failed: the process goes on, sampled again. */
void op_cpu_sampler_exec_failed(void)
{
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++)
        if (g_handler_installed[i]) {
            op_cpu_threads_foreach(rearm_cb, NULL);
            return;
        }
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
    op_cpu_threads_foreach(stop_timer_cb, NULL);
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
