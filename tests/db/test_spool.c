/* test_spool.c — db.spool: the spool alone (src/db/spool.c): batches come out in order and
 * intact; a batch that fills a chunk exactly, and one that does not fit, seal the chunk;
 * with 2 RAM chunks and a consumer that does not read, chunks spill to the file and come back
 * byte for byte; at max_bytes reservations fail instead of blocking; an uncommitted batch
 * holds the consumer back; shutdown refuses new reservations. */
#include "db/spool.h"
#include "db_test.h"

/* Fill a reserved batch: records of `size` bytes whose u64 words are seq*1000+i. */
static void fill(uint8_t *batch, size_t n, uint32_t size, uint64_t first_seq)
{
    uint8_t *p = batch + OP_SPOOL_BATCH_HEADER;
    for (size_t r = 0; r < n; r++, p += size)
        for (uint32_t i = 0; i < size / 8; i++) ((uint64_t *)p)[i] = (first_seq + r) * 1000 + i;
}

/* Consume everything ready; check records continue the sequence. Returns records read. */
static uint64_t drain(op_spool *s, uint32_t size, uint64_t *next_seq)
{
    uint64_t got = 0;
    const op_spool_batch *b;
    while ((b = op_spool_peek(s))) {
        const uint8_t *p = (const uint8_t *)b + OP_SPOOL_BATCH_HEADER;
        CHECK(b->len == OP_SPOOL_BATCH_HEADER + b->n * size);
        for (uint32_t r = 0; r < b->n; r++, p += size) {
            int ok = 1;
            for (uint32_t i = 0; i < size / 8; i++) ok &= ((const uint64_t *)p)[i] == *next_seq * 1000 + i;
            CHECK(ok);
            (*next_seq)++;
            got++;
        }
        op_spool_consume(s, b);
    }
    return got;
}

int main(void)
{
    char dir[512], err[256];
    test_tmpdir(dir, sizeof dir, "spool");
    op_spool *s = NULL;
    /* 64 KiB chunks, 2 in RAM, file up to 16 chunks */
    CHECK(op_spool_open(&s, dir, 65536, 2, 16 * 65536, err, sizeof err) == 0);
    CHECK(op_spool_max_record(s) == 65536 - OP_SPOOL_BATCH_HEADER);
    /* the spool file is unlinked at once: the directory stays empty */
    char cmd[700];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", dir);
    CHECK(system(cmd) == 0);

    /* in order, intact, across chunk seals; sizes that divide the chunk exactly and not */
    uint32_t size = 1000; /* 8-aligned */
    uint32_t sizes[64];
    for (int i = 0; i < 64; i++) sizes[i] = size;
    uint64_t seq = 0, next = 0, total = 0;
    for (int round = 0; round < 50; round++) {
        size_t want = (size_t)(round % 7) * 9 + 1, done = 0;
        while (done < want) {
            size_t fit;
            uint64_t bytes;
            uint8_t *b = op_spool_reserve(s, sizes, want - done, &fit, &bytes);
            CHECK(b != NULL && fit >= 1 && bytes == OP_SPOOL_BATCH_HEADER + fit * size);
            if (!b) break;
            fill(b, fit, size, seq);
            op_spool_commit(s, b, (uint32_t)fit, bytes);
            seq += fit;
            done += fit;
        }
        total += done;
        drain(s, size, &next);
    }
    drain(s, size, &next);
    CHECK_EQ_INT(next, total);
    CHECK(op_spool_consumed_pos(s) == op_spool_reserved_pos(s));
    CHECK(op_spool_file_bytes(s) == 0); /* the consumer kept up: nothing spilled */

    /* a record exactly filling what is left of a chunk, then one more */
    uint32_t exact = (uint32_t)(op_spool_max_record(s)); /* a whole chunk */
    size_t fit;
    uint64_t bytes;
    uint8_t *b = op_spool_reserve(s, &exact, 1, &fit, &bytes);
    CHECK(b && fit == 1 && bytes == 65536);
    if (b) op_spool_commit(s, b, 1, bytes);
    uint32_t too_big = exact + 8;
    CHECK(op_spool_reserve(s, &too_big, 1, &fit, &bytes) == NULL && fit == 0);
    const op_spool_batch *pb = op_spool_peek(s);
    CHECK(pb && pb->len == 65536);
    if (pb) op_spool_consume(s, pb);

    /* the consumer does not read: 12 chunks (beyond the 2 in RAM) spill and come back */
    next = seq;
    uint64_t first = seq;
    uint32_t big = 8000;
    uint32_t bigs[8] = {big, big, big, big, big, big, big, big};
    for (int k = 0; k < 12 * 8; k++) {
        b = op_spool_reserve(s, bigs, 1, &fit, &bytes);
        CHECK(b != NULL);
        if (!b) break;
        fill(b, 1, big, seq++);
        op_spool_commit(s, b, 1, bytes);
    }
    CHECK(op_spool_file_bytes(s) >= 8 * 65536);
    uint64_t got = drain(s, big, &next);
    CHECK_EQ_INT(got, seq - first);

    /* at max_bytes (16 file chunks + 2 in RAM) reservations fail, never block */
    uint64_t accepted = 0, refused = 0;
    for (int k = 0; k < 30 * 8; k++) {
        b = op_spool_reserve(s, bigs, 1, &fit, &bytes);
        if (!b) {
            refused++;
            continue;
        }
        fill(b, 1, big, seq++);
        op_spool_commit(s, b, 1, bytes);
        accepted++;
    }
    CHECK(refused > 0 && accepted >= 16 * 8);
    got = drain(s, big, &next);
    CHECK_EQ_INT(got, accepted);

    /* an uncommitted batch holds the consumer back until it is committed */
    b = op_spool_reserve(s, bigs, 1, &fit, &bytes);
    CHECK(b != NULL);
    CHECK(op_spool_peek(s) == NULL);
    if (b) {
        fill(b, 1, big, seq++);
        op_spool_commit(s, b, 1, bytes);
    }
    CHECK_EQ_INT(drain(s, big, &next), 1);

    op_spool_shutdown(s);
    CHECK(op_spool_reserve(s, bigs, 1, &fit, &bytes) == NULL);
    op_spool_close(s);
    op_spool_close(NULL);

    /* an unusable directory */
    CHECK(op_spool_open(&s, "/nonexistent/dir", 65536, 2, 1 << 20, err, sizeof err) < 0 && s == NULL);
    CHECK(strstr(err, "/nonexistent/dir") != NULL);
    test_rmtree(dir);
    return CHECK_DONE();
}
