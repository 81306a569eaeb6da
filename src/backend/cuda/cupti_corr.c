/* cupti_corr.c — the CUDA backend's correlation map: CUPTI's 32-bit correlation id of an API
 * call → {our internal id, launching thread, the thread's external correlation value}, so that
 * every GPU record (kernel, copy, set, allocation, synchronization) carries the ids of the call
 * that launched it.
 *
 * Two ways fill it (cupti_subscriber.c decides which at start):
 *  - callback mode: the launching thread inserts at the call's ENTER (CUPTI callback);
 *  - activity mode: the delivery thread inserts when CUPTI's API activity record of the call
 *    arrives (op_cuda_corr_api_record); the launch path takes no lock. When a tool pushes
 *    external ids or the counters hook needs the id at launch, the launching thread inserts an
 *    entry marked API_PENDING at ENTER, which the API record then completes.
 *
 * Invariants:
 *  (1) An entry of a plain kernel launch (class LAUNCH, not RING) is removed by its one kernel
 *      record (an API_PENDING entry: by the later of its kernel record and its API record).
 *  (2) Entries of every other class, and RING entries, also go into a FIFO ring of OP_CUDA_RING
 *      entries; when the ring wraps, the oldest is removed if still present. Graph launches
 *      (many records share one id) are removed only that way, or at finalize; copies/sets/
 *      allocs/syncs are removed by their first record or by the ring (some calls produce no
 *      record: cudaFree(NULL), a failed call, a sync record CUPTI 13.0 skips).
 *  (3) Every insert is matched by exactly one op_sdk_correlation_release (removal by a GPU
 *      record, by the ring, by a failed call, by an API record of a call that produces no GPU
 *      record, or at finalize) so that retirement records come out.
 *  (4) The table never exceeds OP_CUDA_MAP_MAX entries; past that, inserts are refused and
 *      counted, and those records carry internal id 0.
 *  (5) Correlation id 0 (records without a launching call: module static memory, ...) never
 *      matches: 0 also marks an empty slot.
 * Delivery resolves the records of a buffer in batches under one lock acquisition
 * (op_cuda_corr_resolve), then the record handlers consume the results in order, so that
 * launching threads (callback mode) rarely find the lock taken during a flush.
 * All map state is under the map spin lock, which is never held across an op_sdk_* call. */
#include <pthread.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "common/alloc.h"
#include "common/log.h"

#define OP_CUDA_MAP_MIN (1u << 14)
#define OP_CUDA_MAP_MAX (1u << 21) /* slots; 32 B each: 64 MiB worst case */
#define OP_CUDA_RING (1u << 16)

enum { F_HAS_EXT = 1, F_API_PENDING = 2, F_GPU_DONE = 4 };

typedef struct corr_entry {
    uint32_t key; /* CUPTI correlation id, 0 = empty */
    uint8_t cls;
    uint8_t flags; /* F_* */
    uint16_t ext_ctx;
    uint64_t internal;
    uint64_t tid;
    uint64_t ext_value;
} corr_entry;

/* A spin lock: sections are a few dozen instructions, taken by launching threads (callback
 * mode) and by the CUPTI delivery thread at the same time during flushes; a sleeping mutex made
 * launches pay futex calls under that contention. */
static pthread_spinlock_t g_map_lock_s;
__attribute__((constructor)) static void map_lock_init(void) { pthread_spin_init(&g_map_lock_s, PTHREAD_PROCESS_PRIVATE); }
#define MAP_LOCK() pthread_spin_lock(&g_map_lock_s)
#define MAP_UNLOCK() pthread_spin_unlock(&g_map_lock_s)
static corr_entry *g_map;
static uint32_t g_map_cap, g_map_count;
static uint32_t *g_ring;
static uint32_t g_ring_pos;
static uint64_t g_map_refused;

static inline uint32_t slot_of(uint32_t key, uint32_t cap) { return (key * 2654435761u) & (cap - 1); }

static corr_entry *map_find(uint32_t key)
{
    /* key 0 marks an empty slot: records without a launching call (module static memory, ...)
     * carry correlation id 0 and must find nothing */
    if (!g_map || key == 0) return NULL;
    for (uint32_t i = slot_of(key, g_map_cap);; i = (i + 1) & (g_map_cap - 1)) {
        if (g_map[i].key == key) return &g_map[i];
        if (g_map[i].key == 0) return NULL;
    }
}

static void map_remove_at(corr_entry *e)
{
    uint32_t i = (uint32_t)(e - g_map), mask = g_map_cap - 1;
    g_map[i].key = 0;
    g_map_count--;
    for (uint32_t j = (i + 1) & mask; g_map[j].key; j = (j + 1) & mask) {
        uint32_t home = slot_of(g_map[j].key, g_map_cap);
        /* move j back to i if its home is not in (i, j] (cyclically) */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            g_map[i] = g_map[j];
            g_map[j].key = 0;
            i = j;
        }
    }
}

static int map_grow(void)
{
    uint32_t ncap = g_map_cap ? g_map_cap * 2 : OP_CUDA_MAP_MIN;
    if (ncap > OP_CUDA_MAP_MAX) return -1;
    corr_entry *n = op_calloc(ncap, sizeof *n);
    if (!n) return -1;
    for (uint32_t i = 0; i < g_map_cap; i++)
        if (g_map[i].key) {
            uint32_t j = slot_of(g_map[i].key, ncap);
            while (n[j].key) j = (j + 1) & (ncap - 1);
            n[j] = g_map[i];
        }
    op_free(g_map);
    g_map = n;
    g_map_cap = ncap;
    return 0;
}

void op_cuda_corr_init(void)
{
    if (!g_ring) g_ring = op_calloc(OP_CUDA_RING, sizeof *g_ring);
    MAP_LOCK();
    if (!g_map) map_grow();
    MAP_UNLOCK();
}

int op_cuda_corr_active(void) { return g_map != NULL; }

void op_cuda_corr_insert(uint32_t cupti_id, uint8_t cls, const op_cuda_launch_info *info, int flags)
{
    if (!cupti_id) return;
    uint64_t evicted = 0, refused = 0;
    op_sdk_correlation_retain(info->internal);
    MAP_LOCK();
    if (!g_map || ((g_map_count + 1) * 2 > g_map_cap && map_grow() != 0 && g_map_count + 1 >= g_map_cap)) {
        g_map_refused++;
        refused = info->internal;
    } else {
        corr_entry *e = map_find(cupti_id);
        if (!e) {
            uint32_t i = slot_of(cupti_id, g_map_cap);
            while (g_map[i].key) i = (i + 1) & (g_map_cap - 1);
            e = &g_map[i];
            g_map_count++;
        } else if (!(e->flags & F_GPU_DONE)) {
            evicted = e->internal; /* id reuse after wrap-around: the old entry is stale */
        }
        e->key = cupti_id;
        e->cls = cls;
        e->flags = (uint8_t)((info->ext.count > 0 ? F_HAS_EXT : 0) | ((flags & OP_CUDA_CORR_API_PENDING) ? F_API_PENDING : 0));
        e->internal = info->internal;
        e->tid = info->tid;
        e->ext_ctx = (uint16_t)(info->ext.count ? info->ext.context_index[0] : 0);
        e->ext_value = info->ext.count ? info->ext.value[0].value : 0;
        if ((!(cls & OP_CUDA_CLS_LAUNCH) || (flags & OP_CUDA_CORR_RING)) && g_ring) {
            uint32_t old = g_ring[g_ring_pos];
            g_ring[g_ring_pos] = cupti_id;
            g_ring_pos = (g_ring_pos + 1) & (OP_CUDA_RING - 1);
            corr_entry *o = old && old != cupti_id ? map_find(old) : NULL;
            if (o && !evicted) {
                if (!(o->flags & F_GPU_DONE)) evicted = o->internal;
                map_remove_at(o);
            }
        }
    }
    MAP_UNLOCK();
    if (evicted) op_sdk_correlation_release(evicted);
    if (refused) op_sdk_correlation_release(refused);
}

void op_cuda_corr_forget(uint32_t cupti_id)
{
    uint64_t rel = 0;
    MAP_LOCK();
    corr_entry *e = map_find(cupti_id);
    if (e) {
        if (!(e->flags & F_GPU_DONE)) rel = e->internal;
        map_remove_at(e);
    }
    MAP_UNLOCK();
    if (rel) op_sdk_correlation_release(rel);
}

static void entry_info(const corr_entry *e, op_cuda_launch_info *li)
{
    memset(li, 0, sizeof *li);
    li->internal = e->internal;
    li->tid = e->tid;
    if (e->flags & F_HAS_EXT) {
        li->ext.count = 1;
        li->ext.context_index[0] = e->ext_ctx;
        li->ext.value[0].value = e->ext_value;
    }
}

/* Caller holds the map lock. A GPU record with `cupti_id` arrived. */
static void corr_lookup_locked(uint32_t cupti_id, op_cuda_corr_result *r)
{
    memset(r, 0, sizeof *r);
    r->id = cupti_id;
    r->ready = 1;
    corr_entry *e = map_find(cupti_id);
    if (!e) return;
    r->found = 1;
    entry_info(e, &r->li);
    r->cls = e->cls;
    if (e->cls & OP_CUDA_CLS_GRAPH) return; /* stays for every node's record (invariant 2) */
    if (e->flags & F_GPU_DONE) return;     /* a second record of the call: the reference is gone */
    r->release = e->internal;
    if (e->flags & F_API_PENDING) e->flags |= F_GPU_DONE; /* the API record removes it */
    else map_remove_at(e);
}

static __thread op_cuda_corr_result *t_batch_cur;

void op_cuda_corr_resolve(const uint32_t *ids, int n, op_cuda_corr_result *res)
{
    MAP_LOCK();
    for (int i = 0; i < n; i++) {
        if (ids[i]) corr_lookup_locked(ids[i], &res[i]);
        else {
            memset(&res[i], 0, sizeof res[i]);
            res[i].ready = 1;
        }
    }
    MAP_UNLOCK();
}

void op_cuda_corr_set_current(op_cuda_corr_result *r) { t_batch_cur = r; }

int op_cuda_corr_lookup(uint32_t cupti_id, op_cuda_launch_info *out, uint64_t *release, uint8_t *cls)
{
    op_cuda_corr_result local, *r = t_batch_cur;
    if (!r || !r->ready || r->id != cupti_id) {
        r = &local;
        MAP_LOCK();
        corr_lookup_locked(cupti_id, r);
        MAP_UNLOCK();
    }
    r->ready = 0; /* consumed */
    *out = r->li;
    *release = r->release;
    if (cls) *cls = r->cls;
    return r->found;
}

int op_cuda_corr_api_pending(uint32_t cupti_id, int failed, op_cuda_launch_info *out, uint64_t *release)
{
    int found = 0;
    *release = 0;
    MAP_LOCK();
    corr_entry *e = map_find(cupti_id);
    if (e && (e->flags & F_API_PENDING)) {
        found = 1;
        entry_info(e, out);
        e->flags &= (uint8_t)~F_API_PENDING;
        if (e->flags & F_GPU_DONE) {
            map_remove_at(e); /* its GPU record came first and released already */
        } else if (!e->cls || failed) {
            *release = e->internal; /* no GPU record will come: drop the entry's reference */
            map_remove_at(e);
        }
    }
    MAP_UNLOCK();
    return found;
}

void op_cuda_corr_finalize(void)
{
    /* Release what is left (graph launches, calls whose records never came). */
    uint64_t *ids = NULL;
    uint32_t n = 0;
    MAP_LOCK();
    if (g_map && g_map_count) ids = op_malloc((size_t)g_map_count * sizeof *ids);
    for (uint32_t i = 0; ids && i < g_map_cap; i++)
        if (g_map[i].key) {
            if (!(g_map[i].flags & F_GPU_DONE)) ids[n++] = g_map[i].internal;
            g_map[i].key = 0;
        }
    if (ids) g_map_count = 0;
    MAP_UNLOCK();
    for (uint32_t i = 0; i < n; i++) op_sdk_correlation_release(ids[i]);
    op_free(ids);
    if (g_map_refused) op_warn("cuda: %llu launches were not correlated (correlation map full)", (unsigned long long)g_map_refused);
}
