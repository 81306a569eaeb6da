/* test_u64map.c — the shared uint64 map: every key (0 and ~0 included) round-trips through
 * growth, replacement keeps one entry, each visits every key once, and a failed growth leaves the
 * map as it was. Also the shared hashes' fixed values (outputs derive ids from them). */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "common/alloc.h"
#include "common/u64map.h"

static int sum_cb(uint64_t key, uint64_t val, void *arg)
{
    uint64_t *acc = arg;
    acc[0] += key;
    acc[1] += val;
    acc[2]++;
    return 0;
}

static int stop_cb(uint64_t key, uint64_t val, void *arg)
{
    (void)key, (void)val, (void)arg;
    return 7;
}

int main(void)
{
    int64_t base = op_alloc_bytes();
    op_u64map m = {0};
    uint64_t v = 123;
    CHECK(!op_u64map_get(&m, 5, &v) && v == 123);
    CHECK(!op_u64map_get(&m, 0, &v));
    CHECK(op_u64map_count(&m) == 0);

    /* 100,000 keys with a stride that collides in the low bits, plus 0 and UINT64_MAX */
    enum { N = 100000 };
    for (uint64_t i = 1; i <= N; i++) CHECK(op_u64map_put(&m, i << 20, i * 3) == 0);
    CHECK(op_u64map_put(&m, 0, 42) == 0);
    CHECK(op_u64map_put(&m, UINT64_MAX, 43) == 0);
    CHECK(op_u64map_count(&m) == N + 2);
    int bad = 0;
    for (uint64_t i = 1; i <= N; i++)
        if (!op_u64map_get(&m, i << 20, &v) || v != i * 3) bad++;
    CHECK(bad == 0);
    CHECK(op_u64map_get(&m, 0, &v) && v == 42);
    CHECK(op_u64map_get(&m, UINT64_MAX, &v) && v == 43);
    CHECK(op_u64map_get(&m, 1 << 20, NULL) == 1);
    CHECK(!op_u64map_get(&m, (uint64_t)(N + 1) << 20, NULL));
    CHECK(m.n * 2 <= m.cap); /* at most half full */

    /* replacing keeps one entry */
    CHECK(op_u64map_put(&m, 2u << 20, 99) == 0 && op_u64map_get(&m, 2u << 20, &v) && v == 99);
    CHECK(op_u64map_put(&m, 0, 1) == 0 && op_u64map_get(&m, 0, &v) && v == 1);
    CHECK(op_u64map_count(&m) == N + 2);

    uint64_t acc[3] = {0, 0, 0};
    CHECK(op_u64map_each(&m, sum_cb, acc) == 0);
    CHECK(acc[2] == N + 2);
    uint64_t keys = UINT64_MAX, vals = 1 + 43 + 99 - 6;
    for (uint64_t i = 1; i <= N; i++) keys += i << 20, vals += i * 3;
    CHECK(acc[0] == keys && acc[1] == vals);
    CHECK(op_u64map_each(&m, stop_cb, NULL) == 7);

    /* a growth that fails leaves the map unchanged */
    op_u64map g = {0};
    size_t i = 1;
    while (g.cap == 0 || (g.n + 1) * 2 <= g.cap) {
        CHECK(op_u64map_put(&g, i, i) == 0);
        i++;
    }
    size_t n_before = g.n, cap_before = g.cap;
    op_alloc_fail_at(1);
    CHECK(op_u64map_put(&g, 1000000, 1) == -ENOMEM);
    op_alloc_fail_at(0);
    CHECK(g.n == n_before && g.cap == cap_before && !op_u64map_get(&g, 1000000, NULL));
    CHECK(op_u64map_get(&g, 1, &v) && v == 1);
    op_u64map_free(&g);

    op_u64map_free(&m);
    CHECK(m.cap == 0 && op_u64map_count(&m) == 0 && !op_u64map_get(&m, 0, NULL));
    CHECK(op_alloc_bytes() == base);

    /* fixed values: trace ids and flow ids of the outputs are derived from these */
    CHECK(op_hash64x3(0, 0, 0) != 0);
    CHECK(op_hash64x3(1, 2, 3) == op_hash64x3(1, 2, 3) && op_hash64x3(1, 2, 3) != op_hash64x3(3, 2, 1));
    CHECK(op_hash_bytes("", 0) == 0xcbf29ce484222325ull);
    CHECK(op_hash_bytes("a", 1) == 0xaf63dc4c8601ec8cull); /* FNV-1a 64 of "a" */
    CHECK(op_hash64(0) == 0 && op_hash64(1) != 1);
    return CHECK_DONE();
}
