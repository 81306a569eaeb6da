/* spool.c — the writer's spool: chunks of records between the producers (SDK buffer callbacks)
 * and the ingest thread. See spool.h for the layout and protocol.
 *
 * RAM and disk. `hot_chunks` slots of anonymous memory are mapped once (pre-faulted) and reused:
 * while the ingest thread keeps up, records never leave RAM and the spool's memory stays at
 * hot_chunks x chunk_bytes. When the producer that seals a chunk finds it took the last free
 * slot, it evicts the chunk it just sealed: waits until every batch in it is committed, then
 * pwrite()s it to the unlinked spool file and frees the slot. The ingest thread reads evicted
 * chunks back with pread() into one private buffer. So a database that falls behind costs disk
 * (up to max_bytes), not memory, and nothing is ever mapped from the file (no SIGBUS on a full
 * disk: pwrite reports it, the chunk stays in RAM and spilling stops).
 *
 * Chunk states:   HOT --(sealed, last free slot taken: evictor)--> EVICTING --pwrite ok--> COLD
 *                                                                       \--pwrite failed--> HOT
 * Invariants:
 *  S1. A batch header is zeroed (under the lock) before the chunk's `reserved` end that covers
 *      it is published (release store); the consumer reads `reserved` with acquire, so it sees
 *      either 0 (not committed) or the committed length, never stale bytes of an earlier use.
 *  S2. Only the tail chunk receives reservations; `sealed` is set (under the lock) after its
 *      last `reserved` update, so a consumer that sees `sealed` and has read up to `reserved`
 *      is done with the chunk.
 *  S3. The consumer alone pops the head chunk and frees its slot (under the lock); it reads
 *      only HOT or COLD chunks, never an EVICTING one, and the evictor never picks the chunk
 *      the consumer is reading (`reading`, under the lock).
 *  S4. An evictor writes a chunk only after every batch header in it is non-zero (all
 *      reservations committed), so the file copy is complete.
 *  S5. Logical positions: a chunk's logical base is its predecessor's base plus its sealed
 *      length, so reserved_pos and consumed_pos compare across chunks (flush targets). */
#include "db/db_files.h"
#include "db/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "common/fd_guard.h"

enum { CHUNK_HOT = 0, CHUNK_EVICTING, CHUNK_COLD };

typedef struct op_spool_chunk {
    int32_t slot;              /* hot slot, -1 when COLD */
    int32_t state;             /* CHUNK_*, under the lock */
    int64_t file_slot;         /* COLD: its place in the file */
    uint8_t *base;             /* HOT/EVICTING: memory of the slot */
    _Atomic uint64_t reserved; /* bytes reserved from base (S1) */
    _Atomic int sealed;        /* no more reservations (S2) */
    uint64_t logical_base;     /* S5 */
} op_spool_chunk;

struct op_spool {
    pthread_mutex_t lock;
    int fd;
    uint64_t chunk_bytes;
    uint32_t hot;            /* anonymous slots */
    uint32_t max_file_slots;
    uint8_t **slot_map;      /* [hot] */
    uint32_t *free_hot, n_free_hot;
    int64_t *free_file, n_free_file;
    int64_t next_file_slot;  /* file slots ever used (file size = next_file_slot * chunk) */
    uint32_t ring_cap;       /* hot + max_file_slots */
    op_spool_chunk *ring;    /* FIFO of chunks */
    uint32_t head, count;    /* under lock */
    int64_t reading;         /* ring index the consumer reads, -1 none (S3) */
    int spill_off;           /* a pwrite failed: no more eviction */
    uint32_t n_evicting;     /* evictions in progress (under lock) */
    _Atomic int shutdown;
    /* consumer state */
    op_spool_chunk *cur;
    const uint8_t *cur_data; /* cur->base, or rbuf for a COLD chunk */
    uint8_t *rbuf;           /* one chunk, for reading COLD chunks back */
    uint64_t read_off;
    _Atomic uint64_t consumed_pos;
    _Atomic uint64_t total_bytes;
    _Atomic uint64_t lost_bytes; /* COLD chunks that could not be read back */
};

uint64_t op_spool_max_record(const op_spool *s) { return s->chunk_bytes - OP_SPOOL_BATCH_HEADER; }

int op_spool_open(op_spool **out, const char *dir, uint64_t chunk_bytes, uint32_t hot_chunks, uint64_t max_bytes,
                  char *err, size_t errlen)
{
    *out = NULL;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) page = 4096;
    if (chunk_bytes < 65536) chunk_bytes = 65536;
    chunk_bytes = (chunk_bytes + (uint64_t)page - 1) / (uint64_t)page * (uint64_t)page;
    if (chunk_bytes > (1u << 30)) chunk_bytes = 1u << 30;
    if (hot_chunks < 2) hot_chunks = 2;
    if (hot_chunks > 4096) hot_chunks = 4096;
    uint64_t file_slots = max_bytes / chunk_bytes;
    if (file_slots > 1u << 20) file_slots = 1u << 20;

    op_spool *s = op_calloc(1, sizeof *s);
    if (!s) goto nomem;
    s->fd = -1;
    s->reading = -1;
    s->chunk_bytes = chunk_bytes;
    s->hot = hot_chunks;
    s->max_file_slots = (uint32_t)file_slots;
    s->ring_cap = hot_chunks + (uint32_t)file_slots;
    s->slot_map = op_calloc(hot_chunks, sizeof *s->slot_map);
    s->free_hot = op_calloc(hot_chunks, sizeof *s->free_hot);
    s->free_file = op_calloc(file_slots + 1, sizeof *s->free_file);
    s->ring = op_calloc(s->ring_cap, sizeof *s->ring);
    if (!s->slot_map || !s->free_hot || !s->free_file || !s->ring) goto nomem;
    pthread_mutex_init(&s->lock, NULL);
    for (uint32_t i = 0; i < hot_chunks; i++) s->free_hot[s->n_free_hot++] = hot_chunks - 1 - i;

    /* Unnamed (a kill leaves nothing), above the program's fds and protected (fd_guard.h). */
    s->fd = op_fd_tmpfile(dir && *dir ? dir : ".", OP_FD_IDENTITY);
    if (s->fd < 0) {
        int e = errno;
        if (err && errlen)
            snprintf(err, errlen, "cannot create the spool file in '%.200s': %s (set OMNIPROF_TMPDIR to a writable directory)",
                     dir && *dir ? dir : ".", strerror(e));
        op_spool_close(s);
        return -e;
    }
    *out = s;
    return 0;
nomem:
    if (err && errlen) snprintf(err, errlen, "spool: out of memory");
    op_spool_close(s);
    return -ENOMEM;
}

void op_spool_close(op_spool *s)
{
    if (!s) return;
    if (s->slot_map) {
        for (uint32_t i = 0; i < s->hot; i++)
            if (s->slot_map[i]) munmap(s->slot_map[i], s->chunk_bytes);
        pthread_mutex_destroy(&s->lock);
    }
    if (s->rbuf) munmap(s->rbuf, s->chunk_bytes);
    if (s->fd >= 0) op_fd_close(s->fd);
    op_free(s->slot_map);
    op_free(s->free_hot);
    op_free(s->free_file);
    op_free(s->ring);
    op_free(s);
}

/* Under the lock: a hot slot, mapped; -1 when none is free. */
static int32_t take_hot_slot(op_spool *s)
{
    if (!s->n_free_hot) return -1;
    uint32_t slot = s->free_hot[--s->n_free_hot];
    if (!s->slot_map[slot]) {
        void *p = mmap(NULL, s->chunk_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (p == MAP_FAILED) {
            s->free_hot[s->n_free_hot++] = slot;
            return -1;
        }
        s->slot_map[slot] = p;
    }
    return (int32_t)slot;
}

static op_spool_chunk *tail_chunk(op_spool *s)
{
    return s->count ? &s->ring[(s->head + s->count - 1) % s->ring_cap] : NULL;
}

/* Under the lock: append a new tail chunk in a hot slot. */
static op_spool_chunk *push_chunk(op_spool *s, uint64_t logical_base)
{
    if (s->count >= s->ring_cap) return NULL;
    int32_t slot = take_hot_slot(s);
    if (slot < 0) return NULL;
    uint32_t idx = (s->head + s->count) % s->ring_cap;
    op_spool_chunk *c = &s->ring[idx];
    c->slot = slot;
    c->state = CHUNK_HOT;
    c->file_slot = -1;
    c->base = s->slot_map[slot];
    atomic_store_explicit(&c->reserved, 0, memory_order_relaxed);
    atomic_store_explicit(&c->sealed, 0, memory_order_relaxed);
    c->logical_base = logical_base;
    s->count++;
    return c;
}

/* Write an EVICTING chunk to the file (outside the lock), then make it COLD and free its slot. */
static void evict(op_spool *s, op_spool_chunk *c)
{
    uint64_t len = atomic_load_explicit(&c->reserved, memory_order_acquire);
    /* S4: every batch committed (reservers are in a memcpy: short waits). A reserver that never
     * commits (a thread killed inside append) makes us give up after 2 s: the chunk stays HOT. */
    uint64_t t0 = 0;
    for (uint64_t off = 0; off < len;) {
        uint32_t blen;
        while ((blen = __atomic_load_n(&((op_spool_batch *)(c->base + off))->len, __ATOMIC_ACQUIRE)) == 0) {
            uint64_t now = op_now_ns();
            if (!t0) t0 = now;
            if (now - t0 > 2000000000ull) {
                pthread_mutex_lock(&s->lock);
                c->state = CHUNK_HOT;
                s->spill_off = 1;
                s->n_evicting--;
                pthread_mutex_unlock(&s->lock);
                return;
            }
            sched_yield();
        }
        off += blen;
    }
    pthread_mutex_lock(&s->lock);
    int64_t fslot = -1;
    if (s->n_free_file)
        fslot = s->free_file[--s->n_free_file];
    else if (s->next_file_slot < (int64_t)s->max_file_slots)
        fslot = s->next_file_slot++;
    pthread_mutex_unlock(&s->lock);
    int ok = 0;
    if (fslot >= 0) {
        off_t foff = (off_t)fslot * (off_t)s->chunk_bytes;
        uint64_t done = 0;
        /* The program may have replaced our fd behind the interposers: never write into its file. */
        op_fd_io_begin(true); /* no dup2 of the program's onto it meanwhile (fd_guard.h) */
        int fd = op_fd_usable(s->fd);
        if (fd < 0) op_db_files_note_replaced();
        while (fd >= 0 && done < len) {
            ssize_t w = pwrite(fd, c->base + done, len - done, foff + (off_t)done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) break;
            done += (uint64_t)w;
        }
        op_fd_io_end();
        ok = done == len;
    }
    pthread_mutex_lock(&s->lock);
    if (ok) {
        s->free_hot[s->n_free_hot++] = (uint32_t)c->slot;
        c->slot = -1;
        c->base = NULL;
        c->file_slot = fslot;
        c->state = CHUNK_COLD;
    } else {
        if (fslot >= 0) s->free_file[s->n_free_file++] = fslot;
        c->state = CHUNK_HOT; /* stays in RAM; no more spilling (disk full or at max_bytes) */
        s->spill_off = 1;
    }
    s->n_evicting--;
    pthread_mutex_unlock(&s->lock);
}

/* Under the lock: the newest HOT, sealed chunk the consumer is not reading (S3), or NULL. */
static op_spool_chunk *find_victim(op_spool *s)
{
    if (s->spill_off) return NULL;
    for (uint32_t i = s->count; i-- > 0;) {
        uint32_t idx = (s->head + i) % s->ring_cap;
        op_spool_chunk *c = &s->ring[idx];
        if (c->state == CHUNK_HOT && atomic_load_explicit(&c->sealed, memory_order_relaxed) && (int64_t)idx != s->reading)
            return c;
    }
    return NULL;
}

void *op_spool_reserve(op_spool *s, const uint32_t *sizes, size_t n, size_t *n_fit, uint64_t *bytes)
{
    *n_fit = 0;
    *bytes = 0;
    if (n == 0 || sizes[0] > op_spool_max_record(s)) return NULL;
    if (atomic_load_explicit(&s->shutdown, memory_order_relaxed)) return NULL;
    op_spool_chunk *to_evict = NULL;
    uint8_t *p = NULL;
    uint64_t wait_start = 0;
    pthread_mutex_lock(&s->lock);
    op_spool_chunk *c = tail_chunk(s);
    for (;;) {
        if (!c || atomic_load_explicit(&c->sealed, memory_order_relaxed)) {
            uint64_t base = c ? c->logical_base + atomic_load_explicit(&c->reserved, memory_order_relaxed)
                              : atomic_load_explicit(&s->consumed_pos, memory_order_acquire);
            op_spool_chunk *prev = c;
            c = push_chunk(s, base);
            if (!c) {
                /* No free slot: spill a sealed chunk now (this producer waits for one pwrite,
                 * never for the database), or wait for a spill in progress, or give up. */
                op_spool_chunk *victim = find_victim(s);
                if (victim) {
                    victim->state = CHUNK_EVICTING;
                    s->n_evicting++;
                    pthread_mutex_unlock(&s->lock);
                    evict(s, victim);
                    pthread_mutex_lock(&s->lock);
                    c = tail_chunk(s);
                    continue;
                }
                uint64_t now = op_now_ns();
                if (!wait_start) wait_start = now;
                if (s->n_evicting && now - wait_start < 1000000000ull && !atomic_load(&s->shutdown)) {
                    pthread_mutex_unlock(&s->lock);
                    sched_yield();
                    pthread_mutex_lock(&s->lock);
                    c = tail_chunk(s);
                    continue;
                }
                break; /* spool full (counted by the caller) */
            }
            /* Took the last free slot: spill the chunk just sealed ahead of need. */
            if (prev && s->n_free_hot == 0 && !s->spill_off && prev->state == CHUNK_HOT &&
                (s->reading < 0 || &s->ring[s->reading] != prev)) {
                prev->state = CHUNK_EVICTING;
                s->n_evicting++;
                to_evict = prev;
            }
        }
        uint64_t used = atomic_load_explicit(&c->reserved, memory_order_relaxed);
        uint64_t room = s->chunk_bytes - used;
        uint64_t total = OP_SPOOL_BATCH_HEADER;
        size_t k = 0;
        while (k < n && total + sizes[k] <= room) total += sizes[k++];
        if (k == 0) {
            atomic_store_explicit(&c->sealed, 1, memory_order_release); /* S2 */
            continue;
        }
        p = c->base + used;
        memset(p, 0, OP_SPOOL_BATCH_HEADER); /* S1 */
        atomic_store_explicit(&c->reserved, used + total, memory_order_release);
        atomic_fetch_add_explicit(&s->total_bytes, total, memory_order_relaxed);
        *n_fit = k;
        *bytes = total;
        break;
    }
    pthread_mutex_unlock(&s->lock);
    if (p) ((op_spool_batch *)p)->t_ns = op_now_ns();
    /* The sealed chunk holds no uncommitted batch of ours (we commit before returning from
     * each append), so waiting for its batches here cannot wait on ourselves. */
    if (to_evict) evict(s, to_evict);
    return p;
}

void op_spool_commit(op_spool *s, void *batch, uint32_t n, uint64_t bytes)
{
    (void)s;
    op_spool_batch *b = batch;
    b->n = n;
    __atomic_store_n(&b->len, (uint32_t)bytes, __ATOMIC_RELEASE);
}

const op_spool_batch *op_spool_peek(op_spool *s)
{
    for (;;) {
        if (!s->cur) {
            pthread_mutex_lock(&s->lock);
            if (!s->count) {
                pthread_mutex_unlock(&s->lock);
                return NULL;
            }
            op_spool_chunk *c = &s->ring[s->head];
            if (c->state == CHUNK_EVICTING) { /* S3: wait until it is on disk */
                pthread_mutex_unlock(&s->lock);
                return NULL;
            }
            s->cur = c;
            s->reading = s->head;
            pthread_mutex_unlock(&s->lock);
            s->read_off = 0;
            if (c->state == CHUNK_COLD) {
                if (!s->rbuf) {
                    void *m = mmap(NULL, s->chunk_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                    s->rbuf = m == MAP_FAILED ? NULL : m;
                }
                uint64_t len = atomic_load_explicit(&c->reserved, memory_order_acquire), done = 0;
                off_t foff = (off_t)c->file_slot * (off_t)s->chunk_bytes;
                op_fd_io_begin(true);
                int fd = op_fd_usable(s->fd);
                while (s->rbuf && done < len) {
                    ssize_t r = pread(fd, s->rbuf + done, len - done, foff + (off_t)done);
                    if (r < 0 && errno == EINTR) continue;
                    if (r <= 0) break;
                    done += (uint64_t)r;
                }
                op_fd_io_end();
                if (done != len) { /* cannot read it back: skip the chunk, count the bytes */
                    atomic_fetch_add(&s->lost_bytes, len);
                    s->read_off = len;
                }
                s->cur_data = s->rbuf;
            } else {
                s->cur_data = c->base;
            }
        }
        op_spool_chunk *c = s->cur;
        int sealed = atomic_load_explicit(&c->sealed, memory_order_acquire);
        uint64_t reserved = atomic_load_explicit(&c->reserved, memory_order_acquire);
        if (s->read_off < reserved) {
            const op_spool_batch *b = (const op_spool_batch *)(s->cur_data + s->read_off);
            if (__atomic_load_n(&b->len, __ATOMIC_ACQUIRE) == 0) return NULL; /* still being written */
            return b;
        }
        if (!sealed) return NULL;
        /* S2/S3: done with this chunk. */
        pthread_mutex_lock(&s->lock);
        if (c->state == CHUNK_COLD)
            s->free_file[s->n_free_file++] = c->file_slot;
        else
            s->free_hot[s->n_free_hot++] = (uint32_t)c->slot;
        s->head = (s->head + 1) % s->ring_cap;
        s->count--;
        s->reading = -1;
        atomic_store_explicit(&s->consumed_pos, c->logical_base + reserved, memory_order_release);
        pthread_mutex_unlock(&s->lock);
        s->cur = NULL;
    }
}

void op_spool_consume(op_spool *s, const op_spool_batch *b)
{
    s->read_off += b->len;
    atomic_store_explicit(&s->consumed_pos, s->cur->logical_base + s->read_off, memory_order_release);
}

uint64_t op_spool_reserved_pos(op_spool *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t pos;
    op_spool_chunk *c = tail_chunk(s);
    if (c)
        pos = c->logical_base + atomic_load_explicit(&c->reserved, memory_order_relaxed);
    else
        pos = atomic_load_explicit(&s->consumed_pos, memory_order_acquire);
    pthread_mutex_unlock(&s->lock);
    return pos;
}

uint64_t op_spool_consumed_pos(op_spool *s) { return atomic_load_explicit(&s->consumed_pos, memory_order_acquire); }
uint64_t op_spool_file_bytes(op_spool *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t n = (uint64_t)s->next_file_slot * s->chunk_bytes;
    pthread_mutex_unlock(&s->lock);
    return n;
}
uint64_t op_spool_total_bytes(op_spool *s) { return atomic_load_explicit(&s->total_bytes, memory_order_relaxed); }
uint64_t op_spool_lost_bytes(op_spool *s) { return atomic_load_explicit(&s->lost_bytes, memory_order_relaxed); }
void op_spool_shutdown(op_spool *s) { atomic_store(&s->shutdown, 1); }
