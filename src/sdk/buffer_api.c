/* buffer_api.c — the record buffers' public API (create, flush, destroy, statistics) and their
 * finalization and fork handling; the protocol, producers and consumer are in buffer.c, whose
 * opening comment describes the layout and the invariants these functions keep. */
#include "sdk/buffer_impl.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/settings.h"

/* ------------------------------------------------------------------------------------------ */
/* Public API                                                                                  */

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

OMNIPROF_API omniprof_status_t omniprof_create_buffer(omniprof_context_id_t context, size_t size, size_t watermark,
                                                      omniprof_buffer_policy_t policy,
                                                      omniprof_buffer_tracing_cb_t callback, void *data,
                                                      omniprof_buffer_id_t *buffer_id)
{
    if (!buffer_id || !callback) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    if (size == 0 || watermark > size || size > (1ull << 36)) {
        op_warn("omniprof_create_buffer: size %zu / watermark %zu invalid (need 0 < watermark <= size <= 64 GiB)",
                size, watermark);
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if (policy != OMNIPROF_BUFFER_POLICY_DISCARD && policy != OMNIPROF_BUFFER_POLICY_LOSSLESS) {
        op_warn("omniprof_create_buffer: policy %d invalid (DISCARD=1 or LOSSLESS=2)", (int)policy);
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    }
    op_sdk_ensure_init();
    omniprof_status_t st = op_sdk_config_context(context, NULL);
    if (st != OMNIPROF_STATUS_SUCCESS) return st;

    size_t pg = page_size();
    uint64_t cap = (size + pg - 1) / pg * pg;
    uint32_t cb = 512;
    while (cb < 16384 && (uint64_t)cb * 64 < cap) cb <<= 1;
    while (cb > cap) cb >>= 1;
    uint32_t nchunks = (uint32_t)(cap / cb);
    size_t data_len = (size_t)cap * OP_NSUB;
    size_t desc_len = ((size_t)nchunks * sizeof(op_chunk_desc) * OP_NSUB + pg - 1) / pg * pg;

    op_sdk_lock();
    uint32_t i = atomic_load(&g_op_nbuffers);
    if (i >= OP_SDK_MAX_BUFFERS) {
        op_sdk_unlock();
        op_warn("omniprof_create_buffer: at most %d buffers per process", OP_SDK_MAX_BUFFERS);
        return OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    /* pages present from the start: a first touch of a record page is a page fault on the
     * traced thread (7.7 -> 2.1 us per NVTX-like range with a 160-byte message on the 2-core
     * VM, docs/PERFORMANCE.md); the memory is what a busy run keeps resident anyway */
    int populate = op_setting_bool(OP_SET_BUFFER_PREFAULT) ? MAP_POPULATE : 0;
    void *map = mmap(NULL, data_len + desc_len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | populate, -1, 0);
    if (map == MAP_FAILED) {
        op_sdk_unlock();
        op_warn("omniprof_create_buffer: mmap of %zu bytes failed (errno %d)", data_len + desc_len, errno);
        return OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    if (!g_op_buffer_offset) g_op_buffer_offset = op_sdk_random_offset(0xb0ff);
    if (!atomic_load(&g_op_membarrier)) op_buffer_membarrier_register();
    op_buffer *b = &g_op_buffers[i];
    memset(b, 0, sizeof(*b));
    b->handle = g_op_buffer_offset + i + 1;
    b->ctx = context;
    b->index = i;
    b->policy = policy;
    b->cb = callback;
    b->cb_data = data;
    b->cap = cap;
    /* a record must fit the chunks of one sub-buffer (nchunks * cb, less than cap when cap is not
     * a multiple of cb): a larger one would seal every sub-buffer in turn and, LOSSLESS, wait for
     * room that never comes (get_chunk never returns) */
    uint64_t fit = (uint64_t)nchunks * cb;
    b->max_len = fit < OP_MAX_RECORD ? fit : OP_MAX_RECORD;
    b->watermark = watermark;
    b->chunk_bytes = cb;
    b->nchunks = nchunks;
    b->map = map;
    b->map_len = data_len + desc_len;
    op_chunk_desc *descs = (op_chunk_desc *)((char *)map + data_len);
    for (int s = 0; s < OP_NSUB; s++) {
        b->sub[s].data = (char *)map + (size_t)s * cap;
        b->sub[s].desc = descs + (size_t)s * nchunks;
        for (uint32_t k = 0; k < nchunks; k++) atomic_init(&b->sub[s].desc[k].used, 0);
        atomic_init(&b->sub[s].ctl, (uint64_t)s << 1);
        atomic_init(&b->sub[s].next_chunk, (gen_of(s) << OP_GEN_SHIFT) | (s == 0 ? 0 : OP_SEALED));
    }
    atomic_init(&b->thread, op_cbthread_default());
    atomic_store_explicit(&b->alive, 1, memory_order_release);
    atomic_store_explicit(&g_op_nbuffers, i + 1, memory_order_release);
    op_sdk_unlock();
    buffer_id->handle = b->handle;
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_flush_buffer(omniprof_buffer_id_t buffer_id)
{
    op_buffer *b = op_buffer_lookup(buffer_id);
    if (!b) return OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND;
    op_tls *t = op_tls_get();
    if (t && t->in_callback) return OMNIPROF_STATUS_ERROR_BUFFER_BUSY;
    int st = op_sdk_state();
    if (st == OP_STATE_FINALIZED) return OMNIPROF_STATUS_ERROR_FINALIZED;
    atomic_fetch_add(&b->flushers, 1);
    if (atomic_load(&b->destroying)) {
        atomic_fetch_sub(&b->flushers, 1);
        return OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND;
    }
    op_backends_flush();
    /* Every flush is bounded (DESIGN rule 1): it waits as long as the consumer makes progress,
     * and gives up (ERROR_BUFFER_BUSY) once OMNIPROF_FINALIZE_TIMEOUT_MS pass without any (a hung
     * consumer, a deadlocked child after fork): that must not hang the application, least of
     * all at exit. A slow consumer that keeps delivering is waited for. */
    omniprof_status_t r = op_buffer_flush_internal(b, 0, op_setting_uint(OP_SET_FINALIZE_TIMEOUT_MS) * 1000000ull);
    atomic_fetch_sub(&b->flushers, 1);
    return r;
}

OMNIPROF_API omniprof_status_t omniprof_destroy_buffer(omniprof_buffer_id_t buffer_id)
{
    op_buffer *b = op_buffer_lookup(buffer_id);
    if (!b) return OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND;
    op_tls *t = op_tls_get();
    if (t && t->in_callback) return OMNIPROF_STATUS_ERROR_BUFFER_BUSY;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&b->destroying, &expected, 1)) return OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND;
    if (atomic_load(&b->flushers) > 0) {
        atomic_store(&b->destroying, 0);
        return OMNIPROF_STATUS_ERROR_BUFFER_BUSY;
    }
    op_buffer_flush_internal(b, 0, op_setting_uint(OP_SET_FINALIZE_TIMEOUT_MS) * 1000000ull);
    /* seq_cst with deliver_ready's claim of `delivering` and its check of `alive`: either the
     * wait below sees the delivery, or the delivery sees the buffer dead and reads nothing */
    atomic_store(&b->alive, 0);
    /* wait for a delivery in progress (a callback may take long) to end, bounded by time: a grace
     * period attempt plus OMNIPROF_FINALIZE_TIMEOUT_MS; then drop the pages (invariant (5)) */
    uint64_t start = op_now_ns();
    uint64_t bound = OP_QUIESCE_ATTEMPT_NS + op_setting_uint(OP_SET_FINALIZE_TIMEOUT_MS) * 1000000ull;
    for (int i = 0; atomic_load(&b->delivering); i++) {
        if (op_now_ns() - start > bound) {
            /* the callback may still read the records: leave the pages to it (leaked) */
            static _Atomic int warned;
            if (!atomic_exchange(&warned, 1))
                op_warn("omniprof_destroy_buffer: buffer %lu's callback was still running after "
                        "OMNIPROF_FINALIZE_TIMEOUT_MS=%lu ms; its memory is left mapped (not freed)",
                        (unsigned long)b->handle, (unsigned long)op_setting_uint(OP_SET_FINALIZE_TIMEOUT_MS));
            return OMNIPROF_STATUS_SUCCESS;
        }
        if (i < 1000) sched_yield();
        else usleep(1000);
    }
    madvise(b->map, b->map_len, MADV_DONTNEED);
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_buffer_get_stats(omniprof_buffer_id_t buffer_id, omniprof_buffer_stats_t *stats)
{
    if (!stats) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    if (stats->size != 0 && stats->size < 16) return OMNIPROF_STATUS_ERROR_INCOMPATIBLE_ABI;
    op_buffer *b = op_buffer_lookup(buffer_id);
    if (!b) return OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND;
    omniprof_buffer_stats_t s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    s.capacity = b->cap;
    s.records_delivered = atomic_load(&b->n_delivered);
    s.records_committed = s.records_delivered;
    s.records_dropped = atomic_load(&b->n_drop_full) + atomic_load(&b->n_drop_signal) + atomic_load(&b->n_drop_dead);
    s.records_too_big = atomic_load(&b->n_drop_big);
    s.producer_waits = atomic_load(&b->n_waits);
    s.deliveries = atomic_load(&b->n_deliveries);
    s.records_lost_at_source = atomic_load(&b->n_lost_source);
    size_t n = stats->size && stats->size < sizeof s ? stats->size : sizeof s;
    memcpy(stats, &s, n);
    stats->size = n;
    return OMNIPROF_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* Finalization and fork                                                                       */

void op_buffer_finalize_all(uint64_t deadline_ns)
{
    uint32_t n = op_buffer_count();
    op_tls *t = op_tls_get();
    for (uint32_t i = 0; i < n; i++) {
        op_buffer *b = op_buffer_at(i);
        if (!b) continue;
        if (t && t->in_callback && t->cb_thread == op_buffer_thread(b)) continue; /* would wait on itself */
        if (op_buffer_flush_internal(b, deadline_ns, 0) != OMNIPROF_STATUS_SUCCESS) {
            if (!atomic_exchange(&g_op_abandoned, 1))
                op_warn("finalize: callback thread did not deliver within OMNIPROF_FINALIZE_TIMEOUT_MS=%lu ms; "
                        "abandoning it (records still buffered are delivered from the exiting thread)",
                        (unsigned long)op_setting_uint(OP_SET_FINALIZE_TIMEOUT_MS));
            /* deliver what we can ourselves if the callback thread is stuck outside this buffer */
            op_buffer_deliver_ready(b);
        }
    }
}

/* In a forked child only the forking thread exists: records that other threads were writing
 * will never complete, and the parent delivers what was buffered. Start afresh with new
 * incarnations (fresh seqs, invariant (4)). */
void op_buffer_at_fork_child(void)
{
    uint32_t n = op_buffer_count();
    if (atomic_load(&g_op_membarrier) == 1) op_buffer_membarrier_register(); /* the child is a new process */
    for (uint32_t i = 0; i < n; i++) {
        op_buffer *b = &g_op_buffers[i];
        if (!atomic_load(&b->alive)) continue;
        uint64_t a = atomic_load(&b->active) + OP_NSUB;
        for (uint64_t s = a; s < a + OP_NSUB; s++) {
            op_sub *sb = &b->sub[s % OP_NSUB];
            for (uint32_t k = 0; k < b->nchunks; k++) atomic_store(&sb->desc[k].used, 0);
            atomic_store(&sb->ctl, s << 1);
            atomic_store(&sb->next_chunk, (gen_of(s) << OP_GEN_SHIFT) | (s == a ? 0 : OP_SEALED));
        }
        atomic_store(&b->active, a);
        atomic_store(&b->delivered, a);
        atomic_store(&b->switch_lock, 0);
        atomic_store(&b->flushers, 0);
        atomic_store(&b->delivering, 0);
        atomic_store(&b->quiesce_since, 0);
        atomic_store(&b->waiters, 0);
        atomic_store(&b->n_delivered, 0);
        atomic_store(&b->n_deliveries, 0);
        atomic_store(&b->n_drop_full, 0);
        atomic_store(&b->n_drop_big, 0);
        atomic_store(&b->n_drop_signal, 0);
        atomic_store(&b->n_drop_dead, 0);
        atomic_store(&b->n_waits, 0);
    }
}
