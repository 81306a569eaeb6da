/* thread.c — per-thread state of the SDK: cached thread id, buffer lanes, correlation and
 * external-correlation stacks, user-API range stacks.
 *
 * The state is reached through one initial-exec TLS pointer (8 bytes, so the SDK can also be
 * dlopened). It comes from a static pool claimed with an atomic exchange — so a signal
 * handler can get one without malloc — and from the heap once the pool is exhausted (never
 * in a signal handler). A pthread key returns it at thread exit; after that the thread gets
 * none (its late records are dropped and counted), which keeps exit paths from leaking.
 *
 * Every state owns one slot of the epoch registry: a cache line whose word buffer.c's producers
 * make odd while they are inside op_buffer_emplace, and which a consumer scans for its grace
 * period (op_epoch_for_each). Slots live in blocks that are never freed (the first one static,
 * later ones mmap'd, chained), so a consumer may read a slot whose thread just exited; a slot is
 * claimed with an atomic exchange (signal-safe) and returned at thread exit with its word even.
 *
 * Invariants: (1) a pool slot is owned by at most one live thread; (2) op_tls_cur is either
 * NULL, or a state whose lanes start with seq = none; (3) after fork only the forking
 * thread's slot (pool and epoch) stays claimed in the child, every other epoch word is even;
 * (4) an epoch word is odd only while its thread is inside op_buffer_emplace. */
#include "sdk/sdk_internal.h"

#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/alloc.h"

#define OP_TLS_POOL 256

__thread op_tls *op_tls_cur OP_SDK_TLS_INIT;
static __thread int t_dead OP_SDK_TLS_INIT;       /* past the key destructor */

#define OP_EPOCH_BLOCK 256
typedef struct op_epoch_slot {
    _Atomic uint64_t epoch; /* first member: the state keeps a pointer to it */
    _Atomic uint32_t used;
    char pad[64 - 12]; /* one cache line per thread: producers write it twice per record */
} op_epoch_slot;
typedef struct op_epoch_block {
    op_epoch_slot slot[OP_EPOCH_BLOCK];
    struct op_epoch_block *_Atomic next;
} op_epoch_block;
static _Alignas(64) op_epoch_block g_epochs;

static op_tls g_pool[OP_TLS_POOL];
static _Atomic uint8_t g_pool_used[OP_TLS_POOL];
static pthread_key_t g_key;
static int g_key_ok;
static pid_t g_main_pid;

/* A free slot of the epoch registry (a new block when all are taken); NULL when none. */
static _Atomic uint64_t *claim_epoch(void)
{
    for (op_epoch_block *bl = &g_epochs;;) {
        for (uint32_t i = 0; i < OP_EPOCH_BLOCK; i++) {
            op_epoch_slot *sl = &bl->slot[i];
            if (atomic_load_explicit(&sl->used, memory_order_relaxed)) continue;
            if (atomic_exchange_explicit(&sl->used, 1, memory_order_acq_rel) == 0) return &sl->epoch;
        }
        op_epoch_block *nx = atomic_load_explicit(&bl->next, memory_order_acquire);
        if (!nx) {
            void *m = mmap(NULL, sizeof *nx, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m == MAP_FAILED) return NULL;
            op_epoch_block *expected = NULL;
            if (atomic_compare_exchange_strong_explicit(&bl->next, &expected, (op_epoch_block *)m,
                                                        memory_order_acq_rel, memory_order_acquire)) {
                nx = m;
            } else {
                munmap(m, sizeof *nx);
                nx = expected;
            }
        }
        bl = nx;
    }
}

static void release_epoch(_Atomic uint64_t *epoch)
{
    if (!epoch) return;
    /* a thread that exits from inside an emplace (pthread_exit in a signal handler) left its
     * record unpublished: consumers must not wait for it (invariant (4)) */
    if (atomic_load_explicit(epoch, memory_order_relaxed) & 1) atomic_fetch_add_explicit(epoch, 1, memory_order_release);
    atomic_store_explicit(&((op_epoch_slot *)epoch)->used, 0, memory_order_release);
}

void op_epoch_for_each(void (*fn)(_Atomic uint64_t *epoch, void *arg), void *arg)
{
    for (op_epoch_block *bl = &g_epochs; bl; bl = atomic_load_explicit(&bl->next, memory_order_acquire))
        for (uint32_t i = 0; i < OP_EPOCH_BLOCK; i++) fn(&bl->slot[i].epoch, arg);
}

static void tls_release(void *p)
{
    op_tls *t = p;
    if (!t) return;
    op_tls_cur = NULL;
    t_dead = 1;
    for (int i = 0; i < OP_SDK_MAX_CONTEXTS; i++)
        if (t->ext[i]) {
            op_free(t->ext[i]->v);
            op_free(t->ext[i]);
            t->ext[i] = NULL;
        }
    for (uint32_t i = 0; i < t->range_depth && i < t->range_cap; i++) op_free(t->ranges[i].message);
    op_free(t->ranges);
    t->ranges = NULL;
    release_epoch(t->epoch);
    t->epoch = NULL;
    if (t->pool_slot) {
        uint32_t slot = t->pool_slot - 1;
        atomic_store_explicit(&g_pool_used[slot], 0, memory_order_release);
    } else {
        op_free(t);
    }
}

__attribute__((constructor(101))) static void tls_ctor(void)
{
    g_main_pid = getpid();
    g_key_ok = pthread_key_create(&g_key, tls_release) == 0;
}

static bool tls_init(op_tls *t, uint32_t slot)
{
    memset(t, 0, sizeof *t);
    t->epoch = claim_epoch();
    if (!t->epoch) return false;
    t->tid = (uint64_t)syscall(SYS_gettid);
    t->cb_thread = -1;
    t->pool_slot = slot;
    for (int i = 0; i < OP_SDK_MAX_BUFFERS; i++) t->lanes[i].seq = UINT64_MAX;
    return true;
}

static op_tls *claim_pool(void)
{
    for (uint32_t i = 0; i < OP_TLS_POOL; i++) {
        if (atomic_load_explicit(&g_pool_used[i], memory_order_relaxed)) continue;
        if (atomic_exchange_explicit(&g_pool_used[i], 1, memory_order_acquire) == 0) {
            if (tls_init(&g_pool[i], i + 1)) return &g_pool[i];
            atomic_store_explicit(&g_pool_used[i], 0, memory_order_release);
            return NULL;
        }
    }
    return NULL;
}

op_tls *op_tls_get_signal(void)
{
    op_tls *t = op_tls_cur;
    if (t) return t;
    if (t_dead) return NULL;
    t = claim_pool();
    op_tls_cur = t; /* the key is set on the next non-signal op_tls_get */
    return t;
}

op_tls *op_tls_get_slow(void)
{
    op_tls *t = op_tls_cur;
    if (t != NULL && t->key_set) return t;
    if (t_dead) return NULL;
    if (!t) {
        t = claim_pool();
        if (!t) {
            t = op_malloc(sizeof *t);
            if (!t) return NULL;
            if (!tls_init(t, 0)) {
                op_free(t);
                return NULL;
            }
        }
        op_tls_cur = t;
    }
    if (g_key_ok && !t->key_set) {
        pthread_setspecific(g_key, t);
        t->key_set = 1;
    }
    return t;
}

op_tls *op_tls_peek(void) { return op_tls_cur; }

uint64_t op_tid(void)
{
    op_tls *t = op_tls_cur;
    if (t) return t->tid;
    return (uint64_t)syscall(SYS_gettid);
}

bool op_is_main_thread(void) { return op_tid() == (uint64_t)getpid(); }

void op_tls_at_fork_child(void)
{
    op_tls *self = op_tls_cur;
    if (self) self->tid = (uint64_t)syscall(SYS_gettid);
    for (uint32_t i = 0; i < OP_TLS_POOL; i++)
        if (!self || self->pool_slot != i + 1) atomic_store(&g_pool_used[i], 0);
    /* invariant (3): the other threads are gone, whatever they were doing */
    for (op_epoch_block *bl = &g_epochs; bl; bl = atomic_load(&bl->next))
        for (uint32_t i = 0; i < OP_EPOCH_BLOCK; i++) {
            op_epoch_slot *sl = &bl->slot[i];
            if (self && &sl->epoch == self->epoch) continue;
            atomic_store(&sl->used, 0);
            if (atomic_load(&sl->epoch) & 1) atomic_fetch_add(&sl->epoch, 1);
        }
}

OMNIPROF_API omniprof_status_t omniprof_get_thread_id(omniprof_thread_id_t *tid)
{
    if (!tid) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    *tid = op_tid();
    return OMNIPROF_STATUS_SUCCESS;
}
