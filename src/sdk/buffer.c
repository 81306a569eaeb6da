/* buffer.c — record buffers: per-thread chunks that only their thread writes (no atomic
 * read-modify-write per record), each with an index of its records at its back, delivery in
 * batches on the buffer's callback thread after a grace period (reading only the indexes, never
 * a record's payload), DISCARD and LOSSLESS policies.
 *
 * STORAGE. A buffer owns OP_NSUB (2) sub-buffers of `cap` bytes each (cap = size rounded up
 * to the page size), in one anonymous mmap, plus one 64-byte descriptor per chunk. A
 * sub-buffer is cut into `nchunks` chunks of `chunk_bytes` (a power of two in [512, 16384],
 * about cap/64). While one sub-buffer is delivered, producers fill the other.
 *
 * WORDS. The buffer's `active` counter is the sequence number (incarnation) of the sub-buffer
 * being filled (index seq % OP_NSUB); `delivered` is the sequence number of the next one to
 * deliver. Each sub-buffer has
 *   `ctl`        = seq<<1 while its incarnation `seq` is open for writing, seq<<1|1 once the
 *                  consumer closed it (the full 64-bit seq: no ABA however long a lane sleeps);
 *   `next_chunk` = gen<<40 | SEALED(bit 39) | chunks handed out, gen = seq's low 24 bits.
 * Each chunk descriptor has `used` = span<<32 | number of complete records of the chunk (span:
 * how many chunks the lane was handed at once, >1 for a record larger than a chunk), written only
 * by the thread that owns the chunk (store-release after each record), read by the consumer; 0
 * while the chunk holds no record.
 * Each thread has an `epoch` word (thread.c's registry, never freed): odd while the thread is
 * inside op_buffer_emplace.
 *
 * RECORD LAYOUT. A lane's chunk (span chunks) is filled from both ends:
 *     from the front, payloads: `size` bytes as given by the producer, padded to 8 (a 64-byte
 *       payload fills exactly one cache line: chunks start on a cache-line boundary);
 *     from the back, the index: entry i (the chunk's i-th record) is the 8 bytes ending
 *       8*i bytes before the end of the span: uint32 payload offset from the chunk's first
 *       byte, uint16 category (omniprof_record_category_t), uint16 kind (emplace refuses a
 *       category or kind above 0xFFFF, and a record above OP_MAX_RECORD or above the chunks of
 *       one sub-buffer (nchunks * chunk_bytes, which is less than cap where cap is not a multiple
 *       of chunk_bytes: such a record could never be given its chunks), counted too big).
 *   A record takes its padded payload plus 8 bytes, as the former 8-byte in-line header did.
 *   The omniprof_record_header_t the callback receives ({hash, payload}) is built by the
 *   callback thread in its own batch array from the index alone: delivery reads one index line
 *   per 8 records and never a payload line, so the payloads stay in their producer's cache
 *   unless the callback itself reads them. A record needs no completion flag: `used` counts
 *   complete records only.
 *
 * RESERVE / COMMIT / CLOSE PROTOCOL.
 *   Fast path (op_buffer_emplace_tls; tracing.c's emit passes the thread's state, and takes
 *   op_buffer_emplace_fast, the same steps, when its kind's route names one buffer): make the
 *   thread's epoch odd (a plain store), load the lane's `ctl`; if it still reads "seq open" and
 *   the record fits between the payloads and the index, copy the payload at the lane's private
 *   offset and its index entry below the previous one, store-release the new record count
 *   into the chunk's descriptor (a line only this thread writes), make the epoch even
 *   (store-release). No atomic read-modify-write, no fence, no call for a payload <= 256 bytes;
 *   two PREFETCHW ask for the lane's lines a few records ahead (lane_ahead).
 *   Slow path (get_chunk): a CAS on the active sub-buffer's next_chunk hands the lane a new
 *   chunk (several for a record larger than a chunk). A sub-buffer without room is SEALED by
 *   whoever sees it first; the sealer wakes the callback thread and tries to advance `active`
 *   to the next sub-buffer if that one is free (try_advance, under a spinlock that a signal
 *   handler only tries). When none is free: DISCARD drops and counts, LOSSLESS waits on the
 *   `delivered_futex` word until the callback thread frees one (bounded: invariant (9)). A
 *   producer leaves its epoch (makes it even) around every wait, advance, wake and retry of the
 *   slow path, and re-validates after; its seals (CAS on next_chunk) stay inside.
 *   Watermark: the lane that holds the chunk containing byte `watermark` of its sub-buffer
 *   seals the sub-buffer as soon as its chunk reaches that byte (watermark 0: after the
 *   first record), so delivery starts at about `watermark` bytes in use.
 *   Delivery (deliver_sub, callback thread), for each sealed sub-buffer before `active`:
 *   CLOSE it (ctl = seq<<1|1), then the grace period (producers_quiesce): a process-wide
 *   barrier, membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which runs a full fence on every
 *   CPU running a thread of the process, then wait until every epoch seen odd has changed.
 *   This is an asymmetric Dekker handshake: a producer stores its odd epoch and then loads
 *   `ctl`; the consumer stores `ctl` and, after the barrier, loads the epochs. Either the
 *   producer's load sees CLOSED (it takes the slow path and writes nothing there) or the
 *   consumer sees its odd epoch and waits for it to leave, after which its `used` is visible.
 *   Then each descriptor's `used` is final: read each chunk's index entries (independent loads,
 *   no walk through the records), hand the headers to the callback in batches of OP_BATCH,
 *   reset the descriptors (used = 0), ctl and next_chunk to the next incarnation, publish the
 *   sub-buffer as free (`delivered`+1) and wake waiters. Where membarrier is unavailable
 *   (registration failed), producers run a full fence after making their epoch odd instead.
 *   Flush: seal the active sub-buffer if it holds anything, then wait until `delivered`
 *   passes it, for as long as the consumer makes progress.
 *
 * INVARIANTS.
 *   (1) A producer writes into a chunk only inside its epoch, after loading the chunk's `ctl`
 *       as "its seq, open"; the consumer reads a sub-buffer only after closing it and a grace
 *       period. So every record (payload and entry) is counted by a `used` that the consumer
 *       reads after the last write to that incarnation, and nothing is written into an incarnation after it
 *       was closed and its grace period ended.
 *   (2) Chunks are handed out only from a sub-buffer whose next_chunk has the active gen and
 *       no SEALED bit; a sealed sub-buffer never gains chunks.
 *   (3) active - delivered < OP_NSUB: a sub-buffer is reactivated only after its delivery.
 *   (4) A stale lane (its sub-buffer was delivered and reused) cannot write: its seq differs
 *       from ctl's, which is compared in full; and a descriptor or ctl is reset only after the
 *       grace period, so no producer is between its `ctl` check and its stores at that time.
 *       (The 24-bit gen of next_chunk is only compared by producers inside an epoch, in
 *       get_chunk and seal_seq, which a reset waits for: it cannot wrap there either.)
 *   (5) Storage is never unmapped while the process lives (destroy only drops its pages, once
 *       a delivery in progress ended; never if one outlasts its bound), so a producer that raced
 *       with destroy writes into valid memory that nobody reads.
 *   (6) Every record not delivered is counted in exactly one drop counter.
 *   (7) A thread never waits for anything while its epoch is odd (the LOSSLESS wait, the
 *       advance under the switch lock, the wakes, which may start a thread, and the retry when
 *       `active` and its sub-buffer's next_chunk disagree happen outside it), so the grace
 *       period cannot deadlock. While the process runs a grace period is tried for
 *       OP_QUIESCE_ATTEMPT_NS at a time: a producer still inside its epoch then (preempted, or
 *       stopped in a signal handler during its copy) leaves the sub-buffer closed for a later
 *       pass, and the callback thread goes on with its other buffers (one warning after 2 s);
 *       during finalization it gives up after 2 s. The consumer never waits for its own word (a
 *       signal handler that finalizes on a thread interrupted inside emplace), and a thread that
 *       exits from inside emplace has its word made even at exit (thread.c).
 *   (8) A record that emplace accepts fits the chunks of an empty sub-buffer (max_len), so a
 *       LOSSLESS producer's wait ends once the consumer delivers: it never seals empty
 *       sub-buffers one after the other for a record that none can hold.
 *   (9) Every wait ends. A LOSSLESS producer waits for room while the consumer of its buffer
 *       makes progress (deliveries of any buffer of its callback thread; only of its own buffer
 *       while a producer inside emplace holds that buffer's delivery up), and drops its record
 *       (counted) once the consumer made none for OMNIPROF_FINALIZE_TIMEOUT_MS, as a flush
 *       gives up: the consumer may be waiting for a lock the producer holds (CUPTI's, while it
 *       hands over activity buffers on the emitting thread). Until the consumer moves again,
 *       the buffer's LOSSLESS producers drop at once (stall_mark). After finalization (callback
 *       threads stopped) they never wait. A flush is bounded the same way, the callback thread
 *       flushing its own buffer included. */
#include "sdk/buffer_impl.h"

#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "common/clock.h"
#include "common/log.h"
#include "common/settings.h"

/* the buffers' process-wide state (buffer_impl.h says what each holds) */
op_buffer g_op_buffers[OP_SDK_MAX_BUFFERS];
_Atomic uint32_t g_op_nbuffers;
uint64_t g_op_buffer_offset;
_Atomic int g_op_abandoned;
_Atomic int g_op_membarrier;
_Atomic int g_op_producer_fence;

/* ------------------------------------------------------------------------------------------ */
/* Taking a lane's next lines ahead                                                            */

/* The callback thread reads a chunk's index (and a tool's callback its payloads) one incarnation
 * before the producer writes the same lines again. Where the two threads run on cores that do
 * not share a cache (another CCX, another vCPU of a VM), each of those lines must be taken back
 * from the other core, and a store that waits for one holds up the stores behind it. Asking for
 * the line with PREFETCHW a few records ahead overlaps that wait with the records before it. On
 * the 2-core EPYC VM (callback thread on the other CPU): 30-35 -> 17-22 ns per 64-byte record,
 * and 41-56 -> 24-27 ns with a callback that reads every record; with both threads on one CPU,
 * 6-8 ns either way; on the GPU host's Xeon, a median 19.4 -> 17.8 ns on a slow host (6 runs each,
 * alternating); 8 more instructions per record (docs/perf/sdk.md, "Ninth session"). Distances:
 * the index line 192 bytes below the entry just written (24 records ahead) and the payload line
 * 512 bytes above the record just written (7 records of 72 bytes); farther read no better on the
 * VM. Only lines between the lane's payloads and its index are asked for: its own chunk, never
 * another lane's. */
enum { OP_AHEAD_INDEX = 192, OP_AHEAD_PAYLOAD = 512 };
#if defined(__x86_64__) || defined(__i386__)
/* PREFETCHW (CPUID 0x80000001 ECX bit 8: AMD since K6, Intel since Broadwell); 0 without it.
 * Set before sdk_ctor (110) starts any thread; atomic all the same, for a library whose
 * constructor emits before ours ran (it then takes no line ahead). */
static _Atomic int g_op_prefetchw;
__attribute__((constructor(103))) static void detect_prefetchw(void)
{
    unsigned a, b, c, d;
    atomic_store_explicit(&g_op_prefetchw, __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 8)),
                          memory_order_relaxed);
}
static inline void prefetch_own(const char *p)
{
    if (atomic_load_explicit(&g_op_prefetchw, memory_order_relaxed)) __asm__ volatile("prefetchw %0" ::"m"(*p));
}
#else
static inline void prefetch_own(const char *p)
{
    __builtin_prefetch(p, 1, 3);
}
#endif
/* A lane's payloads end at `used`, its index begins at `end` (after this record). */
static inline void lane_ahead(const char *base, uint32_t used, uint32_t end)
{
    if (end >= used + OP_AHEAD_INDEX) prefetch_own(base + end - OP_AHEAD_INDEX);
    if (used + OP_AHEAD_PAYLOAD < end) prefetch_own(base + used + OP_AHEAD_PAYLOAD);
}

static long futex_wait(_Atomic uint32_t *word, uint32_t val, long timeout_ns)
{
    struct timespec ts = {timeout_ns / 1000000000L, timeout_ns % 1000000000L};
    return syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}
static void futex_wake_all(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}

/* ------------------------------------------------------------------------------------------ */
/* Lookup                                                                                      */

op_buffer *op_buffer_lookup(omniprof_buffer_id_t id)
{
    uint32_t n = atomic_load_explicit(&g_op_nbuffers, memory_order_acquire);
    if (id.handle <= g_op_buffer_offset) return NULL;
    uint64_t i = id.handle - g_op_buffer_offset - 1;
    if (i >= n) return NULL;
    op_buffer *b = &g_op_buffers[i];
    if (!atomic_load_explicit(&b->alive, memory_order_acquire)) return NULL;
    return b;
}

op_buffer *op_buffer_at(uint32_t index)
{
    if (index >= atomic_load_explicit(&g_op_nbuffers, memory_order_acquire)) return NULL;
    op_buffer *b = &g_op_buffers[index];
    return atomic_load_explicit(&b->alive, memory_order_acquire) ? b : NULL;
}
uint32_t op_buffer_count(void) { return atomic_load_explicit(&g_op_nbuffers, memory_order_acquire); }
void op_buffer_count_lost(op_buffer *b, uint64_t n) { atomic_fetch_add_explicit(&b->n_lost_source, n, memory_order_relaxed); }

uint32_t op_buffer_index(const op_buffer *b) { return b->index; }
int op_buffer_thread(const op_buffer *b) { return atomic_load_explicit(&b->thread, memory_order_acquire); }
void op_buffer_set_thread(op_buffer *b, int thread_index)
{
    atomic_store_explicit(&b->thread, thread_index, memory_order_release);
}
omniprof_context_id_t op_buffer_context(const op_buffer *b) { return b->ctx; }

static uint64_t total_drops(op_buffer *b)
{
    return atomic_load(&b->n_drop_full) + atomic_load(&b->n_drop_big) + atomic_load(&b->n_drop_signal) +
           atomic_load(&b->n_drop_dead);
}

/* ------------------------------------------------------------------------------------------ */
/* Switching sub-buffers                                                                       */

static bool switch_lock(op_buffer *b, bool try_only)
{
    for (int spins = 0;; spins++) {
        int expected = 0;
        if (atomic_compare_exchange_weak_explicit(&b->switch_lock, &expected, 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return true;
        if (try_only) return false;
        if (spins > 64) sched_yield(); else cpu_relax();
    }
}
static void switch_unlock(op_buffer *b) { atomic_store_explicit(&b->switch_lock, 0, memory_order_release); }

/* Make the next sub-buffer active if the active one is sealed and the next is free. Returns
 * true when the caller should retry (advanced, or not sealed any more), false when no
 * sub-buffer is free (or the lock could not be had from a signal handler). */
static bool try_advance(op_buffer *b, bool from_signal)
{
    if (!switch_lock(b, from_signal)) return false;
    bool ok;
    uint64_t a = atomic_load_explicit(&b->active, memory_order_acquire);
    uint64_t w = atomic_load_explicit(&b->sub[a % OP_NSUB].next_chunk, memory_order_acquire);
    if (!(w & OP_SEALED) || (w >> OP_GEN_SHIFT) != gen_of(a)) {
        ok = true;
    } else if (a + 1 - atomic_load_explicit(&b->delivered, memory_order_acquire) >= OP_NSUB) {
        ok = false; /* invariant (3) */
    } else {
        op_sub *nb = &b->sub[(a + 1) % OP_NSUB];
        atomic_store_explicit(&nb->next_chunk, gen_of(a + 1) << OP_GEN_SHIFT, memory_order_release);
        atomic_store_explicit(&b->active, a + 1, memory_order_release);
        ok = true;
    }
    switch_unlock(b);
    return ok;
}

/* Seal sub-buffer `seq` if it is still the active, unsealed one (called inside the epoch, so
 * the 24-bit gen cannot wrap meanwhile). Returns true if this call sealed: the caller then
 * leaves its epoch and calls after_seal. */
static bool seal_seq(op_buffer *b, uint64_t seq)
{
    if (atomic_load_explicit(&b->active, memory_order_acquire) != seq) return false;
    op_sub *sb = &b->sub[seq % OP_NSUB];
    uint64_t w = atomic_load_explicit(&sb->next_chunk, memory_order_acquire);
    while ((w >> OP_GEN_SHIFT) == gen_of(seq) && !(w & OP_SEALED)) {
        if (atomic_compare_exchange_weak_explicit(&sb->next_chunk, &w, w | OP_SEALED, memory_order_acq_rel,
                                                  memory_order_acquire))
            return true;
    }
    return false;
}

/* What follows a seal: advance `active` if the next sub-buffer is free, wake the consumer. */
static void after_seal(op_buffer *b, bool from_signal)
{
    try_advance(b, from_signal);
    op_cbthread_wake(atomic_load_explicit(&b->thread, memory_order_acquire), from_signal);
}

static uint64_t consumer_progress(const op_buffer *b);

/* A LOSSLESS producer's wait for room (get_chunk): its state across rounds. */
typedef struct lossless_wait {
    bool waited;         /* counted in n_waits */
    uint64_t seen;       /* consumer_progress at the last change */
    uint64_t since;      /* when it was seen */
} lossless_wait;

/* A LOSSLESS producer found no free sub-buffer (invariant (9)). It waits for as long as the
 * consumer of the buffer makes progress, and gives up (its record is dropped, counted) once the
 * consumer made none for OMNIPROF_FINALIZE_TIMEOUT_MS (0: never), the patience of a flush: the
 * consumer may be waiting for something this producer holds (a lock the producer took before it
 * emitted, such as CUPTI's while it hands over activity buffers). It gives up at once after the
 * SDK finalized (its callback threads are stopped) or when another producer of the buffer gave up
 * and the consumer has not moved since: a stuck consumer costs one wait, not one per record. */
static bool lossless_give_up(op_buffer *b, lossless_wait *lw)
{
    uint64_t p = consumer_progress(b), now = op_now_ns();
    if (op_sdk_state() >= OP_STATE_FINALIZED || atomic_load_explicit(&b->stall_mark, memory_order_relaxed) == p + 1)
        return true;
    if (!lw->waited) {
        lw->waited = true;
        lw->seen = p;
        lw->since = now;
        atomic_fetch_add_explicit(&b->n_waits, 1, memory_order_relaxed);
        return false;
    }
    if (p != lw->seen) {
        lw->seen = p;
        lw->since = now;
        return false;
    }
    uint64_t stall = op_setting_uint(OP_SET_FINALIZE_TIMEOUT_MS) * 1000000ull;
    if (!stall || now - lw->since <= stall) return false;
    atomic_store_explicit(&b->stall_mark, p + 1, memory_order_relaxed);
    static _Atomic int warned;
    if (!atomic_exchange(&warned, 1))
        op_warn("buffer %lu: its consumer made no progress for OMNIPROF_FINALIZE_TIMEOUT_MS=%lu ms; LOSSLESS "
                "records are dropped (counted) until it delivers again",
                (unsigned long)b->handle, (unsigned long)op_setting_uint(OP_SET_FINALIZE_TIMEOUT_MS));
    return true;
}

static void warn_once_skew(const op_buffer *b)
{
    static _Atomic int warned;
    if (!atomic_exchange(&warned, 1))
        op_warn("buffer %lu: the active sub-buffer and its chunk counter disagreed for 1 s; a record was dropped",
                (unsigned long)b->handle);
}

static void wait_for_space(op_buffer *b)
{
    atomic_fetch_add(&b->waiters, 1);
    uint32_t v = atomic_load_explicit(&b->delivered_futex, memory_order_acquire);
    uint64_t a = atomic_load_explicit(&b->active, memory_order_acquire);
    if (a + 1 - atomic_load_explicit(&b->delivered, memory_order_acquire) >= OP_NSUB)
        futex_wait(&b->delivered_futex, v, 10 * 1000 * 1000);
    atomic_fetch_sub(&b->waiters, 1);
}

/* ------------------------------------------------------------------------------------------ */
/* Epochs and the grace period                                                                 */

/* Make the thread's epoch odd, tagged with the buffer it writes (bits 1-7: its index; bits 8-63:
 * a counter that every enter and leave moves): from here on a consumer that closes a
 * sub-buffer of that buffer waits for this thread before it reads or reuses it (invariant (1));
 * consumers of other buffers do not (a thread writes into one buffer per epoch). The store must
 * be visible before the loads of `ctl` that follow: the consumer's membarrier orders it (a
 * compiler barrier is all the producer needs), or, where membarrier is unavailable, a full fence
 * here. */
_Static_assert(OP_SDK_MAX_BUFFERS <= 128, "a buffer index fits the epoch word's 7 tag bits");
#define OP_EPOCH_TAG 0xFFu
/* The same from v, the epoch's even value the caller loaded; returns the odd value stored. */
static inline uint64_t epoch_enter_from(_Atomic uint64_t *ep, uint64_t v, uint32_t index)
{
    uint64_t in = (((v >> 8) + 1) << 8) | (uint64_t)index << 1 | 1;
    atomic_store_explicit(ep, in, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    if (__builtin_expect(atomic_load_explicit(&g_op_producer_fence, memory_order_relaxed), 0))
        atomic_thread_fence(memory_order_seq_cst);
    return in;
}
static inline void epoch_enter(_Atomic uint64_t *ep, uint32_t index)
{
    epoch_enter_from(ep, atomic_load_explicit(ep, memory_order_relaxed), index);
}
/* Make it even again from in, its odd value (only this thread writes it while it is odd): every
 * store of the epoch (records, `used`) is visible to a consumer that sees the new value. */
static inline void epoch_leave_from(_Atomic uint64_t *ep, uint64_t in)
{
    atomic_store_explicit(ep, (in | OP_EPOCH_TAG) + 1, memory_order_release);
}
static inline void epoch_leave(_Atomic uint64_t *ep)
{
    epoch_leave_from(ep, atomic_load_explicit(ep, memory_order_relaxed));
}

void op_buffer_membarrier_register(void)
{
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0) {
        atomic_store(&g_op_membarrier, 1);
    } else {
        atomic_store(&g_op_producer_fence, 1);
        atomic_store(&g_op_membarrier, 2);
        op_info("membarrier unavailable (errno %d): buffer producers use a fence per record", errno);
    }
}

typedef struct quiesce_arg {
    _Atomic uint64_t *own; /* the calling thread's word: never waited for (it cannot move) */
    uint32_t index;        /* the buffer delivered: threads inside another buffer are not waited for */
    uint64_t until;        /* this attempt ends then (while the process runs) */
    bool gave_up;          /* finalization: a producer never left; delivery goes on without it */
    bool later;            /* the attempt ended: deliver the sub-buffer on a later pass */
} quiesce_arg;

/* Wait until the thread of one epoch word seen odd has left its epoch (grace period). While
 * the process runs an attempt ends at q->until (`later`: the sub-buffer stays closed and is
 * delivered on a later pass, so the callback thread is never stuck behind one producer); during
 * finalization or after a consumer was abandoned it gives up after 2 s (`gave_up`). */
static void wait_epoch(_Atomic uint64_t *ep, void *arg)
{
    quiesce_arg *q = arg;
    uint64_t e = atomic_load_explicit(ep, memory_order_acquire);
    if (!(e & 1) || ((e & OP_EPOCH_TAG) >> 1) != q->index || q->gave_up || q->later || ep == q->own) return;
    uint64_t start = 0;
    for (int i = 0; atomic_load_explicit(ep, memory_order_acquire) == e; i++) {
        if (i < 256) { cpu_relax(); continue; }
        uint64_t now = op_now_ns();
        if (!start) start = now;
        if (op_sdk_is_finalizing() || atomic_load(&g_op_abandoned)) {
            if (now - start > 2000000000ull) {
                q->gave_up = true;
                return;
            }
        } else if (now > q->until) {
            q->later = true;
            return;
        }
        if (i < 10000) sched_yield();
        else usleep(1000);
    }
}

/* After closing a sub-buffer (ctl stored): the process-wide barrier, then wait for every
 * producer that may not have seen the close. Returns 1 when they all left, 0 when it gave up
 * (finalization), -1 when this attempt ended first (try again later). */
static int producers_quiesce(const op_buffer *b)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&g_op_membarrier, memory_order_acquire) == 1 &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
        /* cannot happen once registered; if it does, producers fence from now on, and a
         * producer that has not seen the flag yet is inside its epoch: waited for below */
        atomic_store(&g_op_producer_fence, 1);
        atomic_store(&g_op_membarrier, 2);
        op_warn("membarrier failed (errno %d): buffer producers use a fence per record from now on", errno);
    }
    op_tls *self = op_tls_peek();
    quiesce_arg q = {self ? self->epoch : NULL, b->index, op_now_ns() + OP_QUIESCE_ATTEMPT_NS, false, false};
    op_epoch_for_each(wait_epoch, &q);
    return q.later ? -1 : !q.gave_up;
}

/* ------------------------------------------------------------------------------------------ */
/* Producers                                                                                   */

/* Slow path: give `lane` a fresh chunk able to hold `len` bytes. Returns 1, or 0 when the
 * record is dropped (counted here). Called inside the epoch; it leaves the epoch around seals,
 * wakes and waits (invariant (7)) and re-validates everything after. */
static int get_chunk(op_buffer *b, op_tls *t, op_lane *lane, size_t len, bool from_signal)
{
    uint64_t need = (len + b->chunk_bytes - 1) / b->chunk_bytes;
    lossless_wait lw = {false, 0, 0};
    uint64_t skew_since = 0;
    for (int skew = 0;;) {
        if (!atomic_load_explicit(&b->alive, memory_order_relaxed)) {
            atomic_fetch_add_explicit(&b->n_drop_dead, 1, memory_order_relaxed);
            return 0;
        }
        uint64_t a = atomic_load_explicit(&b->active, memory_order_acquire);
        op_sub *sb = &b->sub[a % OP_NSUB];
        uint64_t w = atomic_load_explicit(&sb->next_chunk, memory_order_acquire);
        if ((w >> OP_GEN_SHIFT) != gen_of(a)) {
            /* `active` moved on between the two loads: wait for the next load outside the epoch
             * (invariant (7): a consumer's grace period never waits for a thread that waits), and
             * not forever (it cannot last: the sub-buffer of `active` is set up before `active`) */
            epoch_leave(t->epoch);
            bool give_up = false;
            if (++skew < 64) {
                cpu_relax();
            } else if (from_signal) {
                /* a signal handler neither waits nor warns (not async-signal-safe): it drops */
                epoch_enter(t->epoch, b->index);
                atomic_fetch_add_explicit(&b->n_drop_signal, 1, memory_order_relaxed);
                return 0;
            } else {
                uint64_t now = op_now_ns();
                if (!skew_since) skew_since = now;
                give_up = now - skew_since > OP_SKEW_BOUND_NS;
                if (!give_up) sched_yield();
            }
            epoch_enter(t->epoch, b->index);
            if (give_up) {
                atomic_fetch_add_explicit(&b->n_drop_full, 1, memory_order_relaxed);
                warn_once_skew(b);
                return 0;
            }
            continue;
        }
        if (w & OP_SEALED) {
            epoch_leave(t->epoch);
            int r = -1; /* -1: retry, 0: dropped */
            if (try_advance(b, from_signal) && atomic_load_explicit(&b->active, memory_order_acquire) != a) {
                /* advanced: retry */
            } else if (b->policy != OMNIPROF_BUFFER_POLICY_LOSSLESS || from_signal || t->cb_thread >= 0 ||
                       t->in_callback != 0 || atomic_load_explicit(&g_op_abandoned, memory_order_relaxed) ||
                       lossless_give_up(b, &lw)) {
                atomic_fetch_add_explicit(from_signal ? &b->n_drop_signal : &b->n_drop_full, 1,
                                          memory_order_relaxed);
                r = 0;
            } else {
                op_cbthread_wake(atomic_load_explicit(&b->thread, memory_order_acquire), false);
                wait_for_space(b);
            }
            epoch_enter(t->epoch, b->index);
            if (r == 0) return 0;
            continue;
        }
        uint64_t cnt = w & OP_COUNT_MASK;
        testcase(cnt + need == b->nchunks); /* the last chunk of a sub-buffer is handed out */
        if (cnt + need > b->nchunks) {
            if (atomic_compare_exchange_strong_explicit(&sb->next_chunk, &w, w | OP_SEALED, memory_order_acq_rel,
                                                        memory_order_acquire)) {
                epoch_leave(t->epoch);
                after_seal(b, from_signal);
                epoch_enter(t->epoch, b->index);
            }
            continue;
        }
        if (atomic_compare_exchange_weak_explicit(&sb->next_chunk, &w, w + need, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            lane->seq = a;
            lane->ctl = &sb->ctl;
            lane->used_at = &sb->desc[cnt].used;
            lane->base = sb->data + (size_t)cnt * b->chunk_bytes;
            lane->word = need << 32;
            lane->used = 0;
            lane->end = (uint32_t)(need * b->chunk_bytes);
            uint64_t base = cnt * b->chunk_bytes, wm = b->watermark;
            if (wm < base + lane->end)
                lane->seal_at = wm > base ? (uint32_t)(wm - base) : 1;
            else
                lane->seal_at = 0;
            return 1;
        }
    }
}

/* Copy a payload of 16 to 256 bytes (the usual ones) inline, no call: the first and the last
 * 32 (or 16, or 64) bytes, overlapping where the size is not a multiple; 64 bytes are 4 moves. */
static inline void copy_payload(char *dst, const char *src, size_t size)
{
    if (size >= 32 && size <= 64) {
        __builtin_memcpy(dst, src, 32);
        __builtin_memcpy(dst + size - 32, src + size - 32, 32);
    } else if (size > 64 && size <= 256) {
        for (size_t i = 0; i + 64 < size; i += 64) __builtin_memcpy(dst + i, src + i, 64);
        __builtin_memcpy(dst + size - 64, src + size - 64, 64);
    } else if (size >= 16 && size < 32) {
        __builtin_memcpy(dst, src, 16);
        __builtin_memcpy(dst + size - 16, src + size - 16, 16);
    } else {
        memcpy(dst, src, size);
    }
}

/* Write one record: its payload at `body`, then its index entry at `entry` (one 8-byte store). */
static inline void put_record(char *body, char *entry, uint32_t off, uint32_t category, uint32_t kind,
                              const void *payload, size_t size, size_t patch_off, uint64_t patch_val)
{
    char *dst = body;
    copy_payload(dst, payload, size);
    if (patch_off && patch_off + 8 <= size) memcpy(dst + patch_off, &patch_val, 8);
    op_entry e = {off, (uint16_t)category, (uint16_t)kind};
    __builtin_memcpy(entry, &e, sizeof e);
}

/* The lane's chunk is still open for writing and has room for `len` bytes (payload and entry;
 * invariant (1)). */
static inline bool lane_fits(const op_lane *lane, size_t len)
{
    return lane->ctl && atomic_load_explicit(lane->ctl, memory_order_relaxed) == lane->seq << 1 &&
           lane->used + len <= lane->end;
}

/* Append to the lane's chunk (lane_fits was true): the payload at the front, the entry at the
 * back, then the descriptor's record count. */
static inline void lane_append(op_lane *lane, size_t len, uint32_t category, uint32_t kind, const void *payload,
                               size_t size, size_t patch_off, uint64_t patch_val)
{
    lane->end -= OP_ENTRY;
    put_record(lane->base + lane->used, lane->base + lane->end, lane->used, category, kind, payload, size, patch_off,
               patch_val);
    lane->used += (uint32_t)(len - OP_ENTRY);
    lane_ahead(lane->base, lane->used, lane->end);
    lane->word++;
    atomic_store_explicit(lane->used_at, lane->word, memory_order_release);
}

/* Every case of emplace (fast path failed). Returns 1 stored, 0 dropped; *sealed is set when
 * this call sealed the sub-buffer (watermark): after_seal follows once the epoch is left. */
__attribute__((noinline)) static int emplace_slow(op_buffer *b, op_tls *t, uint32_t category, uint32_t kind,
                                                  const void *payload, size_t size, size_t len, size_t patch_off,
                                                  uint64_t patch_val, bool from_signal, bool *sealed)
{
    op_lane *lane = &t->lanes[b->index];
    for (;;) {
        if (lane_fits(lane, len)) {
            /* bytes in use in the lane's chunk: payloads plus entries */
            uint64_t in_use = lane->used + (uint64_t)OP_ENTRY * (uint32_t)lane->word;
            testcase(lane->used + len == lane->end);               /* chunk exactly full */
            testcase(lane->seal_at && in_use + len == lane->seal_at); /* watermark hit exactly */
            lane_append(lane, len, category, kind, payload, size, patch_off, patch_val);
            if (lane->seal_at && in_use + len >= lane->seal_at) {
                *sealed = seal_seq(b, lane->seq);
                lane->seal_at = 0;
                lane->seq = OP_NO_SEQ; /* the next record goes to the next sub-buffer */
                lane->ctl = NULL;
            }
            return 1;
        }
        if (!get_chunk(b, t, lane, len, from_signal)) return 0;
    }
}

/* emplace_slow inside the epoch, then the epoch left and, when the call sealed the sub-buffer,
 * its delivery started: every emplace path that missed its fast case ends here. */
static inline int emplace_slow_leave(op_buffer *b, op_tls *t, uint32_t category, uint32_t kind, const void *payload,
                                     size_t size, size_t len, size_t patch_off, uint64_t patch_val, bool from_signal)
{
    bool sealed = false;
    int stored = emplace_slow(b, t, category, kind, payload, size, len, patch_off, patch_val, from_signal, &sealed);
    epoch_leave(t->epoch);
    if (sealed) after_seal(b, from_signal);
    return stored;
}

int op_buffer_emplace(op_buffer *b, uint32_t category, uint32_t kind, const void *payload, size_t size,
                      size_t patch_off, uint64_t patch_val, bool from_signal)
{
    return op_buffer_emplace_tls(b, from_signal ? op_tls_get_signal() : op_tls_get(), category, kind, payload, size,
                                 patch_off, patch_val, from_signal);
}

/* always_inline: with the SDK's link-time optimization the fast path lands inside tracing.c's
 * emit (one call less, no spill of nine arguments): 13.7 -> 11.9 ns median on the VM's CPU clock. */
__attribute__((always_inline)) inline int op_buffer_emplace_tls(op_buffer *b, op_tls *t, uint32_t category,
                                                                uint32_t kind, const void *payload, size_t size,
                                                                size_t patch_off, uint64_t patch_val, bool from_signal)
{
    size_t len = OP_ENTRY + ((size + 7) & ~(size_t)7);
    if (__builtin_expect(len > b->max_len || (category | kind) > 0xFFFF, 0)) {
        atomic_fetch_add_explicit(&b->n_drop_big, 1, memory_order_relaxed);
        return 0;
    }
    /* A signal handler that interrupted this thread inside emplace would see its lane half
     * updated: it drops instead (counted). */
    if (!t || (atomic_load_explicit(t->epoch, memory_order_relaxed) & 1)) {
        atomic_fetch_add_explicit(&b->n_drop_signal, 1, memory_order_relaxed);
        return 0;
    }
    epoch_enter(t->epoch, b->index);
    op_lane *lane = &t->lanes[b->index];
    if (__builtin_expect(!lane->seal_at && lane_fits(lane, len), 1)) {
        lane_append(lane, len, category, kind, payload, size, patch_off, patch_val);
        epoch_leave(t->epoch);
        return 1;
    }
    return emplace_slow_leave(b, t, category, kind, payload, size, len, patch_off, patch_val, from_signal);
}

/* op_buffer_emplace_fast's every other case, inside the epoch it entered:
 * the lane's chunk closed, full or at its watermark. */
__attribute__((noinline)) static int emplace_fast_miss(uint32_t index, op_tls *t, uint32_t category, uint32_t kind,
                                                       const void *payload, size_t size, size_t patch_off)
{
    op_buffer *b = &g_op_buffers[index];
    size_t len = OP_ENTRY + ((size + 7) & ~(size_t)7);
    if (len > b->max_len) {
        atomic_fetch_add_explicit(&b->n_drop_big, 1, memory_order_relaxed);
        epoch_leave(t->epoch);
        return 0;
    }
    return emplace_slow_leave(b, t, category, kind, payload, size, len, patch_off, 0, false);
}

/* op_buffer_emplace_tls for tracing.c's emit when exactly one buffer wants the record and no
 * external correlation id is to be written (patch_val 0), not from a signal handler, for a
 * payload of 16-256 bytes and t = op_tls_get()'s state: the same protocol, with fewer
 * instructions on the way through an open chunk with room. The epoch is made odd before the
 * lane is read and `ctl` loaded (a signal handler that interrupts after that store drops; one
 * before it ran to its end), the lane's words stay in registers across the copy and are stored
 * after it, and the epoch's even value is computed from the odd one (only this thread writes
 * it while it is odd). Every other case goes to emplace_fast_miss (emplace_slow). */
__attribute__((always_inline)) inline int op_buffer_emplace_fast(uint32_t index, op_tls *t, uint32_t category,
                                                                 uint32_t kind, const void *payload, size_t size,
                                                                 size_t patch_off)
{
    _Atomic uint64_t *ep = t->epoch;
    uint64_t v = atomic_load_explicit(ep, memory_order_relaxed);
    if (__builtin_expect(v & 1, 0)) { /* a signal handler that interrupted this thread inside emplace */
        atomic_fetch_add_explicit(&g_op_buffers[index].n_drop_signal, 1, memory_order_relaxed);
        return 0;
    }
    uint64_t in = epoch_enter_from(ep, v, index);
    op_lane *lane = &t->lanes[index];
    size_t len = OP_ENTRY + ((size + 7) & ~(size_t)7);
    if (__builtin_expect(lane->seal_at || !lane_fits(lane, len), 0))
        return emplace_fast_miss(index, t, category, kind, payload, size, patch_off);
    uint32_t used = lane->used, end = lane->end;
    /* the entry and the lane's words first, so that only the payload's pointers, the descriptor's
     * word and the epoch's are live across the copy (no register saved for them) */
    char *dst = lane->base + used;
    uint64_t word = lane->word + 1;
    _Atomic uint64_t *used_at = lane->used_at;
    end -= OP_ENTRY;
    op_entry e = {used, (uint16_t)category, (uint16_t)kind};
    __builtin_memcpy(lane->base + end, &e, sizeof e);
    uint32_t next = used + (uint32_t)(len - OP_ENTRY);
    lane->end = end;
    lane->used = next;
    lane->word = word;
    lane_ahead(lane->base, next, end);
    copy_payload(dst, payload, size);
    if (patch_off) __builtin_memset(dst + patch_off, 0, 8); /* the external id: none */
    atomic_store_explicit(used_at, word, memory_order_release);
    epoch_leave_from(ep, in);
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Consumer (callback thread)                                                                  */

static void invoke(op_buffer *b, omniprof_record_header_t **batch, size_t n)
{
    op_tls *t = op_tls_get();
    if (t) t->in_callback++;
    b->cb(b->ctx, (omniprof_buffer_id_t){b->handle}, batch, n, b->cb_data, total_drops(b));
    if (t) t->in_callback--;
    atomic_fetch_add_explicit(&b->n_delivered, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&b->n_deliveries, 1, memory_order_relaxed);
}

/* Deliver sub-buffer `seq` (sealed, before `active`). Returns the records delivered, or
 * OP_NOT_DELIVERED when a producer is still inside its emplace after OP_QUIESCE_ATTEMPT_NS: the
 * sub-buffer stays closed and sealed, and the next pass tries again (the producers seen inside
 * are waited for anew; a thread stopped inside emplace, such as one whose payload faulted into a
 * signal handler that blocks, delays only this buffer, not the thread's other buffers). */
static uint64_t deliver_sub(op_buffer *b, uint64_t seq)
{
    op_sub *sb = &b->sub[seq % OP_NSUB];
    /* close, then the grace period: from here on nobody writes into this incarnation */
    atomic_store_explicit(&sb->ctl, seq << 1 | 1, memory_order_seq_cst);
    int q = producers_quiesce(b);
    if (q < 0) {
        uint64_t now = op_now_ns(), since = atomic_load_explicit(&b->quiesce_since, memory_order_relaxed);
        static _Atomic int warned;
        if (!since) atomic_store_explicit(&b->quiesce_since, now, memory_order_relaxed);
        else if (now - since > 2000000000ull && !atomic_exchange(&warned, 1))
            op_warn("buffer %lu: a producer has stayed inside a buffer emplace for 2 s; delivery of the buffer "
                    "waits for it (the callback thread's other buffers go on)", (unsigned long)b->handle);
        return OP_NOT_DELIVERED;
    }
    atomic_store_explicit(&b->quiesce_since, 0, memory_order_relaxed);
    if (q == 0) {
        static _Atomic int warned;
        if (!atomic_exchange(&warned, 1))
            op_warn("buffer %lu: at exit, a producer never left its emplace; its record is lost",
                    (unsigned long)b->handle);
    }
    uint64_t w = atomic_load_explicit(&sb->next_chunk, memory_order_acquire);
    uint64_t n = w & OP_COUNT_MASK, total = 0;
    if (n > b->nchunks) n = b->nchunks;
    omniprof_record_header_t hdrs[OP_BATCH], *batch[OP_BATCH];
    size_t nb = 0;
    for (uint64_t k = 0; k < n;) {
        /* only the descriptor and the index entries are read here, never a payload: the lines
         * of the records stay with their producer (or go to the callback, if it reads them) */
        uint64_t word = atomic_load_explicit(&sb->desc[k].used, memory_order_acquire);
        uint32_t count = (uint32_t)word;
        uint64_t span = word ? word >> 32 : 1;
        char *base = sb->data + k * b->chunk_bytes;
        const op_entry *e = (const op_entry *)(base + span * b->chunk_bytes);
        for (uint32_t i = 0; i < count; i++) {
            op_entry r;
            __builtin_memcpy(&r, --e, sizeof r);
            hdrs[nb].hash = omniprof_record_header_compute_hash(r.category, r.kind);
            hdrs[nb].payload = base + r.off;
            batch[nb] = &hdrs[nb];
            nb++;
            if (nb == OP_BATCH) { invoke(b, batch, nb); nb = 0; }
        }
        total += count;
        k += span;
    }
    if (nb) invoke(b, batch, nb);
    /* invariant (4): prepare the next incarnation of this sub-buffer, after the grace period */
    for (uint32_t k = 0; k < b->nchunks; k++) atomic_store_explicit(&sb->desc[k].used, 0, memory_order_relaxed);
    atomic_store_explicit(&sb->ctl, (seq + OP_NSUB) << 1, memory_order_relaxed);
    atomic_store_explicit(&sb->next_chunk, gen_of(seq + OP_NSUB) << OP_GEN_SHIFT | OP_SEALED, memory_order_release);
    atomic_store_explicit(&b->delivered, seq + 1, memory_order_release);
    atomic_fetch_add_explicit(&b->delivered_futex, 1, memory_order_release);
    futex_wake_all(&b->delivered_futex);
    return total;
}

/* One pass delivers what was sealed when it began: the sub-buffers before the active one, and
 * the active one if it is sealed (at most OP_NSUB of them: invariant (3)). A pass never chases
 * producers that keep refilling the buffer: a callback thread serves several buffers in turn,
 * and a buffer that its producers seal as fast as it is delivered (a LOSSLESS buffer with a slow
 * callback) would otherwise keep the thread inside this loop for as long as they run, while a
 * flush of another buffer of the same thread waited for nothing. Whatever was sealed after the
 * pass began bumped the thread's work word (after_seal, get_chunk, flush), so the thread comes
 * back to it after one round of its other buffers. */
uint64_t op_buffer_deliver_ready(op_buffer *b)
{
    uint64_t total = 0;
    int expected = 0;
    /* one deliverer at a time (the callback thread, or a finalizer standing in for it) */
    if (!atomic_compare_exchange_strong(&b->delivering, &expected, 1)) return 0;
    if (!atomic_load(&b->alive)) { /* destroyed (omniprof_destroy_buffer waits for a claim made before) */
        atomic_store(&b->delivering, 0);
        return 0;
    }
    uint64_t end = atomic_load_explicit(&b->active, memory_order_acquire) + 1;
    for (;;) {
        uint64_t d = atomic_load_explicit(&b->delivered, memory_order_acquire);
        uint64_t a = atomic_load_explicit(&b->active, memory_order_acquire);
        if (d >= end) break;
        if (d == a) {
            uint64_t w = atomic_load_explicit(&b->sub[a % OP_NSUB].next_chunk, memory_order_acquire);
            if ((w & OP_SEALED) && (w >> OP_GEN_SHIFT) == gen_of(a) && try_advance(b, false) &&
                atomic_load_explicit(&b->active, memory_order_acquire) != a)
                continue;
            break;
        }
        uint64_t got = deliver_sub(b, d);
        if (got == OP_NOT_DELIVERED) break; /* a producer is still inside: a later pass */
        total += got;
        try_advance(b, false);
    }
    atomic_store(&b->delivering, 0);
    return total;
}

/* Progress of the consumer that serves b: deliveries (sub-buffers and callback batches) of every
 * buffer its callback thread serves. A flush measures its patience against this, not against
 * its own buffer: while the thread is busy with another buffer's slow callback, it is alive.
 * While b's delivery is held up by a producer inside its emplace (quiesce_since set), only b's
 * own deliveries count: the thread's other buffers delivering is no progress for b. */
static uint64_t consumer_progress(const op_buffer *b)
{
    if (atomic_load_explicit(&b->quiesce_since, memory_order_relaxed))
        return atomic_load_explicit(&b->delivered, memory_order_relaxed) +
               atomic_load_explicit(&b->n_deliveries, memory_order_relaxed);
    int th = op_buffer_thread(b);
    uint64_t sum = 0;
    uint32_t n = op_buffer_count();
    for (uint32_t i = 0; i < n; i++) {
        op_buffer *o = &g_op_buffers[i];
        if (o == b || op_buffer_thread(o) == th)
            sum += atomic_load_explicit(&o->delivered, memory_order_relaxed) +
                   atomic_load_explicit(&o->n_deliveries, memory_order_relaxed);
    }
    return sum;
}

/* Seal the active sub-buffer if it holds anything; returns the sequence number that
 * `delivered` must reach for everything written before the call to be delivered. */
static uint64_t seal_for_flush(op_buffer *b)
{
    for (;;) {
        uint64_t a = atomic_load_explicit(&b->active, memory_order_acquire);
        op_sub *sb = &b->sub[a % OP_NSUB];
        uint64_t w = atomic_load_explicit(&sb->next_chunk, memory_order_acquire);
        if ((w >> OP_GEN_SHIFT) != gen_of(a)) { cpu_relax(); continue; } /* `active` moved on: reload */
        if (w & OP_SEALED) { try_advance(b, false); return a + 1; }
        if ((w & OP_COUNT_MASK) == 0) return a;
        if (atomic_compare_exchange_weak_explicit(&sb->next_chunk, &w, w | OP_SEALED, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            try_advance(b, false);
            return a + 1;
        }
    }
}

/* Seal what the active sub-buffer holds and wait until it was delivered. Gives up with
 * ERROR_BUFFER_BUSY at `deadline_ns` (absolute, 0 = none: finalization's bound), or once the
 * consumer made no progress for `stall_ns` (0 = never: a hung callback, a producer stopped
 * between its reservation and its flag store). A slow consumer that keeps delivering is
 * waited for however slow the machine. */
omniprof_status_t op_buffer_flush_internal(op_buffer *b, uint64_t deadline_ns, uint64_t stall_ns)
{
    op_tls *t = op_tls_get();
    uint64_t target = seal_for_flush(b);
    int th = atomic_load_explicit(&b->thread, memory_order_acquire);
    bool inline_delivery = t && t->cb_thread >= 0 && t->cb_thread == th;
    uint64_t seen = consumer_progress(b), since = op_now_ns();
    while (atomic_load_explicit(&b->delivered, memory_order_acquire) < target) {
        if (inline_delivery || atomic_load(&g_op_abandoned)) {
            /* the callback thread flushing its own buffer delivers it itself; the bounds below
             * hold for it too (a producer stuck inside emplace must not keep it here) */
            op_buffer_deliver_ready(b);
            if (atomic_load_explicit(&b->delivered, memory_order_acquire) < target) sched_yield();
        } else {
            /* wake the callback thread on every round: a wake can be lost when the thread was
             * not started yet and another thread held the start lock (start_thread trylocks) */
            op_cbthread_wake(th, false);
            uint32_t v = atomic_load_explicit(&b->delivered_futex, memory_order_acquire);
            if (atomic_load_explicit(&b->delivered, memory_order_acquire) >= target) break;
            atomic_fetch_add(&b->waiters, 1);
            futex_wait(&b->delivered_futex, v, 5 * 1000 * 1000);
            atomic_fetch_sub(&b->waiters, 1);
            try_advance(b, false);
        }
        uint64_t now = op_now_ns(), p = consumer_progress(b);
        if (deadline_ns && now > deadline_ns) return OMNIPROF_STATUS_ERROR_BUFFER_BUSY;
        if (p != seen) {
            seen = p;
            since = now;
        } else if (stall_ns && now - since > stall_ns) {
            return OMNIPROF_STATUS_ERROR_BUFFER_BUSY;
        }
    }
    return OMNIPROF_STATUS_SUCCESS;
}
