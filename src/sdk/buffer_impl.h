/* buffer_impl.h — what the record buffers' two files share (src/sdk/buffer.c: the protocol,
 * producers and consumer, whose opening comment describes the layout and invariants;
 * src/sdk/buffer_api.c: creation, flush, destroy, statistics, finalization and fork): the
 * buffer's words and the process-wide state of the buffers. Private to libomniprof-sdk. */
#ifndef OMNIPROF_SDK_BUFFER_IMPL_H
#define OMNIPROF_SDK_BUFFER_IMPL_H

#include "sdk/sdk_internal.h"

#define OP_NSUB 2
#define OP_GEN_SHIFT 40
#define OP_GEN_MASK 0xFFFFFFull
#define OP_SEALED (1ull << 39)
#define OP_COUNT_MASK (OP_SEALED - 1)
#define OP_NO_SEQ UINT64_MAX
#define OP_ENTRY 8u              /* bytes of a record's index entry */
#define OP_MAX_RECORD (1u << 31) /* a record (payload + entry) above this is too big: lane offsets are 32-bit */
#define OP_BATCH 512
#define OP_SKEW_BOUND_NS 1000000000ull     /* get_chunk: active and next_chunk disagree this long: drop */
#define OP_QUIESCE_ATTEMPT_NS 100000000ull /* a grace period not over by then is tried again later */
#define OP_NOT_DELIVERED UINT64_MAX        /* deliver_sub: the grace period is not over yet */

/* testcase(X) marks a boundary the tests must reach (SQLite's testcase()): empty in normal
 * builds; a coverage build can define it to record that X was true at least once. */
#ifndef testcase
#define testcase(X) ((void)0)
#endif

/* A record's index entry, at the back of its chunk (see RECORD LAYOUT above) */
typedef struct op_entry {
    uint32_t off; /* the payload's offset from the first byte of the lane's chunk */
    uint16_t category;
    uint16_t kind;
} op_entry;
_Static_assert(sizeof(op_entry) == OP_ENTRY, "index entry is 8 bytes");

typedef struct op_chunk_desc {
    _Atomic uint64_t used; /* span<<32 | complete records; 0: nothing stored (the consumer steps one chunk) */
    char pad[56]; /* one cache line per chunk: two owners never share a line */
} op_chunk_desc;

typedef struct op_sub {
    _Alignas(64) _Atomic uint64_t ctl; /* read by every producer on every record: its own line */
    op_chunk_desc *desc;
    char *data;
    _Alignas(64) _Atomic uint64_t next_chunk;
} op_sub;

struct op_buffer {
    uint64_t handle;
    omniprof_context_id_t ctx;
    uint32_t index;
    int policy;
    omniprof_buffer_tracing_cb_t cb;
    void *cb_data;
    uint64_t cap, watermark;
    uint64_t max_len; /* the largest record (payload + entry): nchunks * chunk_bytes, at most OP_MAX_RECORD */
    uint32_t chunk_bytes, nchunks;
    _Atomic int thread;
    _Atomic int alive;
    void *map;
    size_t map_len;
    op_sub sub[OP_NSUB];

    _Alignas(64) _Atomic uint64_t active;
    _Atomic uint64_t delivered;
    _Atomic uint32_t delivered_futex;
    _Atomic uint32_t waiters;
    _Atomic int switch_lock;
    _Atomic int flushers;
    _Atomic int destroying;
    _Atomic int delivering; /* the callback thread is inside deliver_ready */
    /* consumer_progress + 1 when a LOSSLESS producer last gave up waiting (0: none): until the
     * consumer moves again, LOSSLESS producers drop at once instead of each waiting the stall
     * bound (invariant (9)) */
    _Atomic uint64_t stall_mark;
    /* when the first grace period of this buffer left unfinished began (0: none pending); written by
     * the callback thread, read by consumer_progress: while set, only this buffer's own deliveries
     * count as its consumer's progress */
    _Atomic uint64_t quiesce_since;

    _Alignas(64) _Atomic uint64_t n_delivered;
    _Atomic uint64_t n_deliveries;
    _Atomic uint64_t n_drop_full;
    _Atomic uint64_t n_drop_big;
    _Atomic uint64_t n_lost_source; /* records its producer lost before emitting (op_sdk_report_lost) */
    _Atomic uint64_t n_drop_signal;
    _Atomic uint64_t n_drop_dead;
    _Atomic uint64_t n_waits;
};

extern op_buffer g_op_buffers[OP_SDK_MAX_BUFFERS];
extern _Atomic uint32_t g_op_nbuffers;
extern uint64_t g_op_buffer_offset;
extern _Atomic int g_op_abandoned; /* finalization gave up on a callback thread: never wait again */
/* membarrier: 0 not registered yet, 1 registered (consumers run the process-wide barrier),
 * 2 unavailable (g_op_producer_fence: producers run a full fence per record instead) */
extern _Atomic int g_op_membarrier;
extern _Atomic int g_op_producer_fence;

static inline uint64_t gen_of(uint64_t seq) { return seq & OP_GEN_MASK; }
static inline void cpu_relax(void) { __builtin_ia32_pause(); }

/* Once per process (and again in a forked child): register for membarrier's private expedited
 * command; without it producers fence. */
void op_buffer_membarrier_register(void);

#endif
