/* u64map.c — the uint64 -> uint64 open-addressing map (design in u64map.h) and the hashes the
 * containers share. Growth doubles the table when it would pass half full and re-inserts every
 * key; the old table is freed only once the new one exists, so a failed growth loses nothing. */
#include "common/u64map.h"

#include <errno.h>
#include <string.h>

#include "common/alloc.h"

static inline size_t slot_of(uint64_t key, size_t cap) { return (size_t)op_hash64(key) & (cap - 1); }

int op_u64map_get(const op_u64map *m, uint64_t key, uint64_t *val)
{
    if (key == 0) {
        if (m->has_zero && val) *val = m->zero_val;
        return m->has_zero;
    }
    if (!m->cap) return 0;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key) {
            if (val) *val = m->vals[i];
            return 1;
        }
        if (m->keys[i] == 0) return 0; /* the table is never full: the probe ends */
    }
}

static int grow(op_u64map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *k = op_calloc(cap, sizeof *k), *v = op_calloc(cap, sizeof *v);
    if (!k || !v) {
        op_free(k);
        op_free(v);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        size_t j = slot_of(m->keys[i], cap);
        while (k[j]) j = (j + 1) & (cap - 1);
        k[j] = m->keys[i];
        v[j] = m->vals[i];
    }
    op_free(m->keys);
    op_free(m->vals);
    m->keys = k;
    m->vals = v;
    m->cap = cap;
    return 0;
}

int op_u64map_put(op_u64map *m, uint64_t key, uint64_t val)
{
    if (key == 0) {
        m->has_zero = 1;
        m->zero_val = val;
        return 0;
    }
    if ((m->n + 1) * 2 > m->cap && grow(m) != 0) return -ENOMEM;
    size_t i = slot_of(key, m->cap);
    while (m->keys[i] && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) m->n++;
    m->keys[i] = key;
    m->vals[i] = val;
    return 0;
}

int op_u64map_each(const op_u64map *m, int (*fn)(uint64_t key, uint64_t val, void *arg), void *arg)
{
    int rc;
    if (m->has_zero && (rc = fn(0, m->zero_val, arg)) != 0) return rc;
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i] && (rc = fn(m->keys[i], m->vals[i], arg)) != 0) return rc;
    return 0;
}

void op_u64map_free(op_u64map *m)
{
    op_free(m->keys);
    op_free(m->vals);
    memset(m, 0, sizeof *m);
}

uint64_t op_hash64x3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) * 0xBF58476D1CE4E5B9ull;
    x ^= c * 0x94D049BB133111EBull;
    x ^= x >> 31;
    x *= 0xD6E8FEB86659FD93ull;
    x ^= x >> 32;
    return x ? x : 1;
}

uint64_t op_hash_bytes_seeded(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *s = p;
    uint64_t h = seed ^ 0xcbf29ce484222325ull; /* the FNV-1a 64 offset basis */
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}
