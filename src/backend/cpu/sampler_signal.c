/* sampler_signal.c — the sampler's signal handler (op_cpu_on_signal) and the producer side of
 * a thread's ring: what it may call (async-signal-safe only), the two unwinding modes and the
 * ring invariants (1)-(5) it keeps are described in sampler.c's head comment. */
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

static _Atomic uint64_t g_fallbacks; /* deferred mode: samples unwound in the handler */
uint64_t op_cpu_unwind_fallback_count(void) { return atomic_load_explicit(&g_fallbacks, memory_order_relaxed); }

/* ---------------------------------------------------------------------------------------- */
/* The signal handler.                                                                      */

static void op_cpu_chain(int type, int signo, siginfo_t *si, void *uc)
{
    if (type < 0 || !g_smp_chain_set[type]) return;
    const struct sigaction *a = &g_smp_chain[type];
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
    if (!g_smp_deferred) return 0;
    uint64_t sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP] & ~(uint64_t)7u;
    if (sp >= t->stack_lo && sp < t->stack_hi) {
        uint64_t len = t->stack_hi - sp < g_smp_stack_bytes ? t->stack_hi - sp : g_smp_stack_bytes;
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
 * rec->size and kind set; *fresh: its Python frames hold a code object the allocator has not
 * named yet (python_frames.c). */
static size_t record_stack(ucontext_t *uc, const op_cpu_thread *t, uint64_t len,
                           omniprof_cpu_sample_record_t *rec, bool *fresh)
{
#if defined(__x86_64__)
    if (len) {
        op_cpu_stack_copy *c = (op_cpu_stack_copy *)(rec + 1);
        memcpy(c->gregs, uc->uc_mcontext.gregs, sizeof c->gregs);
        c->sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP] & ~(uint64_t)7u;
        c->stack_hi = t->stack_hi;
        c->len = len;
        stack_copy((uint8_t *)(c + 1), (const uint8_t *)(uintptr_t)c->sp, (size_t)c->len);
        uint64_t *py = (uint64_t *)((uint8_t *)(c + 1) + c->len);
        c->py_n = g_smp_py ? op_cpu_py_capture(py, OP_CPU_PY_MAX_FRAMES, fresh) : 0;
        rec->kind = OP_CPU_RING_STACK_COPY;
        rec->num_frames = 0;
        rec->size = sizeof(*rec) + sizeof *c + (size_t)c->len +
                    (size_t)c->py_n * OP_CPU_PY_WORDS * sizeof(uint64_t);
        return rec->size;
    }
#else
    (void)t, (void)len;
#endif
    uint32_t n = op_cpu_drop_own_frames(rec->frames, op_cpu_unwind(uc, rec->frames, g_smp_max_depth));
    rec->num_frames = n;
    size_t size = sizeof(*rec) + (size_t)n * sizeof(uint64_t);
    if (g_smp_py) { /* a uint64 count and the raw Python frames after the frames */
        uint64_t *py = rec->frames + n;
        py[0] = op_cpu_py_capture(py + 1, OP_CPU_PY_MAX_FRAMES, fresh);
        if (py[0]) {
            rec->kind = OP_CPU_RING_SAMPLE_PY;
            size += (size_t)(py[0] * OP_CPU_PY_WORDS + 1) * sizeof(uint64_t);
        }
    }
    size = (size + 7u) & ~(size_t)7u;
    rec->size = size;
    return size;
}

void op_cpu_on_signal(int signo, siginfo_t *si, void *ucv)
{
    int type = -1;
    for (int i = 0; i < OP_CPU_TIMER_COUNT; i++)
        if (g_smp_handler_installed[i] && g_smp_signo[i] == signo) type = i;
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
    if (now < g_smp_begin_ns[type]) goto out;
    if (g_smp_end_ns[type] && now >= g_smp_end_ns[type]) {
        op_cpu_clock_disarm(t, type);
        rearm = false;
        goto out;
    }
    if (!op_cpu_window_open()) goto out;

    op_cpu_ring *r = &t->ring;
    uint64_t head, len = copy_len((const ucontext_t *)ucv, t);
    size_t need = len ? sizeof(omniprof_cpu_sample_record_t) + sizeof(op_cpu_stack_copy) + (size_t)len + g_smp_py_bytes
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
    bool fresh = false;
    size_t size = record_stack((ucontext_t *)ucv, t, len, rec, &fresh);
    uint64_t unwind_end = op_now_ns();
    atomic_store_explicit(&r->head, head + size, memory_order_release); /* invariant (2) */
    t->samples++;
    /* what a sample costs the thread it interrupts (reported at the end: op_cpu_sampler_cost) */
    uint64_t spent = op_now_ns() - now;
    t->handler_ns += spent;
    t->unwind_ns += unwind_end - unwind_begin;
    if (spent > t->handler_max_ns) t->handler_max_ns = spent;
    /* past half full, or a Python code object not named yet (named while the program still
     * holds it, not after it may have freed it): wake the allocator now (write(2) is
     * async-signal-safe) */
    uint64_t used = head + size - atomic_load_explicit(&r->tail, memory_order_relaxed);
    if ((fresh || used > r->cap / 2) && t->allocator) {
        uint64_t one = 1;
        ssize_t w = op_fd_write_checked(t->allocator->efd, &one, sizeof one, false);
        (void)w;
    }
out:
    if (rearm) op_cpu_clock_refresh(t, type);
    errno = saved_errno;
}
