/* omniprof/buffer.h — record buffers and their delivery.
 *
 * A buffer collects records from any number of producer threads without locks on the fast
 * path and hands them, in batches, to one callback on one callback thread. Sizes are bytes:
 * `size` is rounded up to the page size; when the bytes in use reach `watermark` the buffer is
 * delivered. Policy DISCARD drops a record that does not fit and counts it; LOSSLESS makes
 * the producer wait until the callback thread has made room, and never loses a record.
 * The callback receives the cumulative drop count. See docs/sdk.md, "Buffers". */
#ifndef OMNIPROF_BUFFER_H
#define OMNIPROF_BUFFER_H

#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

/* headers[i]->payload is valid only during the call. Runs on the buffer's callback thread,
 * never concurrently with itself for one buffer. */
typedef void (*omniprof_buffer_tracing_cb_t)(omniprof_context_id_t context, omniprof_buffer_id_t buffer_id,
                                             omniprof_record_header_t **headers, size_t num_headers,
                                             void *data, uint64_t drop_count);

/**
 * @brief **omniprof_create_buffer** creates a buffer owned by a context.
 * @param size: capacity in bytes (>0), rounded up to the page size.
 * @param watermark: bytes in use that trigger delivery (<= size; 0 delivers after each record).
 * @param policy: OMNIPROF_BUFFER_POLICY_DISCARD or _LOSSLESS.
 * @param callback: non-NULL. @param data: passed to callback.
 * @return SUCCESS; ERROR_CONTEXT_NOT_FOUND; ERROR_INVALID_ARGUMENT (size 0, watermark > size,
 * bad policy, NULL); ERROR_CONFIGURATION_LOCKED; ERROR_OUT_OF_RESOURCES.
 */
OMNIPROF_API omniprof_status_t omniprof_create_buffer(omniprof_context_id_t context, size_t size, size_t watermark,
                                                      omniprof_buffer_policy_t policy,
                                                      omniprof_buffer_tracing_cb_t callback, void *data,
                                                      omniprof_buffer_id_t *buffer_id);

/**
 * @brief **omniprof_flush_buffer** delivers every record committed so far and waits until the
 * callback returned, at most OMNIPROF_FINALIZE_TIMEOUT_MS (default 5000 ms): past that it returns
 * ERROR_BUFFER_BUSY and delivery goes on in the background (a hung callback never hangs the
 * caller).
 * @return SUCCESS; ERROR_BUFFER_NOT_FOUND; ERROR_BUFFER_BUSY when called from a buffer
 * callback (flushing from the delivery thread would wait on itself); ERROR_FINALIZED after
 * finalization (the data was delivered then).
 */
OMNIPROF_API omniprof_status_t omniprof_flush_buffer(omniprof_buffer_id_t buffer_id);

/**
 * @brief **omniprof_destroy_buffer** delivers what is left, then frees the buffer; its id
 * becomes stale. Records produced for it afterwards are dropped.
 * @return SUCCESS; ERROR_BUFFER_NOT_FOUND; ERROR_BUFFER_BUSY when called from a buffer callback
 * or while another thread flushes it (try again).
 */
OMNIPROF_API omniprof_status_t omniprof_destroy_buffer(omniprof_buffer_id_t buffer_id);

/**
 * @brief **omniprof_buffer_get_stats** reads a buffer's counters (for tools and benchmarks).
 */
typedef struct omniprof_buffer_stats_t {
    uint64_t size;              /* sizeof(omniprof_buffer_stats_t) */
    uint64_t capacity;          /* bytes, after rounding */
    uint64_t records_committed; /* records accepted */
    uint64_t records_delivered; /* records handed to the callback */
    uint64_t records_dropped;   /* DISCARD: records that did not fit */
    uint64_t records_too_big;   /* records larger than the buffer (dropped under every policy) */
    uint64_t producer_waits;    /* LOSSLESS: times a producer had to wait for space */
    uint64_t deliveries;        /* callback invocations */
    /* appended: records a producer lost before they reached this buffer (the CPU sampler's
     * per-thread ring was full), for the kinds this buffer traces */
    uint64_t records_lost_at_source;
} omniprof_buffer_stats_t;

OMNIPROF_API omniprof_status_t omniprof_buffer_get_stats(omniprof_buffer_id_t buffer_id,
                                                         omniprof_buffer_stats_t *stats);

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_BUFFER_H */
