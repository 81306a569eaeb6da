/* u64map.h — a map from uint64 keys to uint64 values: open addressing with linear probing in a
 * power-of-two table kept at most half full, so a lookup touches one or two cache lines.
 *
 * Every key is allowed: key 0 marks an empty slot, so it is kept aside in its own field.
 * A zeroed struct is an empty map (`op_u64map m = {0};`); op_u64map_free returns it to that
 * state. Memory comes from the allocator wrapper (common/alloc.h). Not thread-safe: one owner.
 * There is no delete: the users build a map, read it, and free it whole. */
#ifndef OMNIPROF_COMMON_U64MAP_H
#define OMNIPROF_COMMON_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct op_u64map {
    uint64_t *keys; /* 0 = empty slot */
    uint64_t *vals;
    size_t cap, n;  /* slots (0 or a power of two), keys stored in slots */
    int has_zero;   /* key 0 is present, with value zero_val */
    uint64_t zero_val;
} op_u64map;

/* 1 when key is present (*val set when val != NULL), else 0 (*val untouched). */
int op_u64map_get(const op_u64map *m, uint64_t key, uint64_t *val);
/* Inserts or replaces. 0, or -ENOMEM when the table could not grow (the map is unchanged). */
int op_u64map_put(op_u64map *m, uint64_t key, uint64_t val);
/* Number of keys held. */
static inline size_t op_u64map_count(const op_u64map *m) { return m->n + (m->has_zero ? 1 : 0); }
/* Visits every (key, value) in table order; stops early and returns fn's value when it is not 0. */
int op_u64map_each(const op_u64map *m, int (*fn)(uint64_t key, uint64_t val, void *arg), void *arg);
/* Frees the table; the map is empty again and may be reused. */
void op_u64map_free(op_u64map *m);

/* A 64-bit finaliser (MurmurHash3's fmix64): every input bit affects every output bit. */
static inline uint64_t op_hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}
/* A hash of three words, never 0 (usable as a map key built from a tuple). */
uint64_t op_hash64x3(uint64_t a, uint64_t b, uint64_t c);
/* FNV-1a of n bytes (strings: interning, ids from names); _seeded chains hashes: its start
 * value is the FNV offset basis xor seed, so op_hash_bytes(p, n) == op_hash_bytes_seeded(p, n, 0). */
uint64_t op_hash_bytes_seeded(const void *p, size_t n, uint64_t seed);
static inline uint64_t op_hash_bytes(const void *p, size_t n) { return op_hash_bytes_seeded(p, n, 0); }

#endif /* OMNIPROF_COMMON_U64MAP_H */
