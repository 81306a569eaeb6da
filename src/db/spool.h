/* spool.h — the writer's spool: a FIFO of fixed-size chunks, kept in a few chunks of anonymous
 * memory and spilled to one unlinked file when the ingest falls behind, written by any number
 * of producer threads and read by one consumer.
 *
 * Layout: the file is an array of slots of `chunk_bytes`; a chunk is a slot in use. A chunk
 * holds batches, each starting with an op_spool_batch header (16 bytes) followed by the
 * producer's bytes; batches are 8-byte aligned and never straddle chunks.
 *
 * Protocol (invariants cited as S1..S5 in spool.c):
 *   producer: op_spool_reserve (under the spool lock: fit, seal/advance chunk, zero the batch
 *             header, publish the new reserved end) -> write bytes -> op_spool_commit (release-
 *             store of the batch length into the header).
 *   consumer: op_spool_peek (acquire-load of the reserved end and of the next batch header;
 *             a header still 0 means "being written": stop) -> use -> op_spool_consume.
 * Memory: `hot_chunks` chunks of anonymous memory, reused; when the ingest falls behind, sealed
 * chunks are written to an unlinked file with pwrite and read back with pread (spool.c), so the
 * RAM stays fixed and a full disk is an error code, never a SIGBUS. */
#ifndef OMNIPROF_DB_SPOOL_H
#define OMNIPROF_DB_SPOOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct op_spool op_spool;

typedef struct op_spool_batch {
    uint32_t len;      /* bytes of the batch, header included; 0 until committed (atomic) */
    uint32_t n;        /* records in it */
    uint64_t t_ns;     /* CLOCK_MONOTONIC at reservation (ingest lag) */
} op_spool_batch;

#define OP_SPOOL_BATCH_HEADER ((uint32_t)sizeof(op_spool_batch))

/* Creates the spool file in `dir` (mkstemp, then unlink). Returns 0 or -errno with err set. */
int op_spool_open(op_spool **out, const char *dir, uint64_t chunk_bytes, uint32_t hot_chunks,
                  uint64_t max_bytes, char *err, size_t errlen);
/* Unmaps and closes. No producer or consumer may be active. NULL is accepted. */
void op_spool_close(op_spool *s);

/* Largest `bytes` a single record may take (chunk minus one batch header). */
uint64_t op_spool_max_record(const op_spool *s);

/* Reserve room for the longest prefix of sizes[0..n) (each 8-aligned) that fits in one chunk.
 * Returns the batch start (header included) and sets *n_fit (>= 1) and *bytes (header
 * included), or NULL when no chunk can be had (spool at max_bytes, disk full, closed:
 * *n_fit = 0) or sizes[0] is larger than op_spool_max_record. */
void *op_spool_reserve(op_spool *s, const uint32_t *sizes, size_t n, size_t *n_fit, uint64_t *bytes);
/* Publish a reserved batch (n records, `bytes` as returned by reserve). */
void op_spool_commit(op_spool *s, void *batch, uint32_t n, uint64_t bytes);

/* Consumer: the next committed batch, or NULL when none is ready. */
const op_spool_batch *op_spool_peek(op_spool *s);
/* Consumer: done with the batch peek returned (its chunk may be reused afterwards). */
void op_spool_consume(op_spool *s, const op_spool_batch *b);

/* Logical byte positions (monotonic over the spool's life, chunk tails excluded). */
uint64_t op_spool_reserved_pos(op_spool *s); /* end of everything reserved so far */
uint64_t op_spool_consumed_pos(op_spool *s); /* end of everything consumed so far */
uint64_t op_spool_file_bytes(op_spool *s);
uint64_t op_spool_total_bytes(op_spool *s);  /* bytes ever reserved */
uint64_t op_spool_lost_bytes(op_spool *s);   /* spilled bytes that could not be read back */
/* Stop handing out new reservations (writer turned off / closing). */
void op_spool_shutdown(op_spool *s);

#endif /* OMNIPROF_DB_SPOOL_H */
