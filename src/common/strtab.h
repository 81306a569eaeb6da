/* strtab.h — string interning: each distinct text is stored once and named by a dense id
 * (0, 1, 2, ... in order of first appearance), so callers compare and key by id.
 *
 * A zeroed struct is an empty table (`op_strtab t = {0};`). Texts are byte strings of a given
 * length (they may hold NUL bytes); each is stored NUL-terminated, so op_strtab_str's result is
 * also a C string. A text's address stays valid until op_strtab_free (texts are never moved).
 * Not thread-safe: one owner. Memory comes from the allocator wrapper (common/alloc.h). */
#ifndef OMNIPROF_COMMON_STRTAB_H
#define OMNIPROF_COMMON_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#include "common/u64map.h"

typedef struct op_strtab {
    char **text;       /* id -> text (NUL-terminated copy) */
    uint32_t *len;     /* id -> length in bytes */
    uint32_t *next;    /* id -> next id with the same hash, UINT32_MAX at the end */
    size_t n, cap;
    op_u64map by_hash; /* hash of the text -> first id with that hash */
} op_strtab;

/* The id of text s[0..n), added when new. 0, or -ENOMEM (the table is unchanged),
 * -E2BIG for a text of 4 GiB or more or when 2^32 - 1 texts are held. */
int op_strtab_intern(op_strtab *t, const char *s, size_t n, uint32_t *id);
/* The id of s[0..n) when present: 1 and *id set, else 0. */
int op_strtab_find(const op_strtab *t, const char *s, size_t n, uint32_t *id);
/* The text of an id returned by op_strtab_intern (NULL for an id not in the table). */
static inline const char *op_strtab_str(const op_strtab *t, uint32_t id) { return id < t->n ? t->text[id] : NULL; }
static inline size_t op_strtab_len(const op_strtab *t, uint32_t id) { return id < t->n ? t->len[id] : 0; }
static inline size_t op_strtab_count(const op_strtab *t) { return t->n; }
/* Frees every text; the table is empty again and may be reused. */
void op_strtab_free(op_strtab *t);

#endif /* OMNIPROF_COMMON_STRTAB_H */
