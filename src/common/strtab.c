/* strtab.c — string interning (design in strtab.h). Lookup: the FNV-1a hash of the text finds
 * the first id with that hash in a u64map; ids sharing a hash are chained through `next`, newest
 * first, and compared by length then bytes. */
#include "common/strtab.h"

#include <errno.h>
#include <string.h>

#include "common/alloc.h"

static int find_hashed(const op_strtab *t, uint64_t h, const char *s, size_t n, uint32_t *id, uint64_t *first)
{
    uint64_t f;
    if (!op_u64map_get(&t->by_hash, h, &f)) {
        *first = UINT32_MAX;
        return 0;
    }
    *first = f;
    for (uint64_t i = f; i != UINT32_MAX; i = t->next[i])
        if (t->len[i] == n && memcmp(t->text[i], s, n) == 0) {
            *id = (uint32_t)i;
            return 1;
        }
    return 0;
}

int op_strtab_find(const op_strtab *t, const char *s, size_t n, uint32_t *id)
{
    uint64_t first;
    return find_hashed(t, op_hash_bytes(s, n), s, n, id, &first);
}

static int reserve(op_strtab *t)
{
    if (t->n < t->cap) return 0;
    size_t cap = t->cap ? t->cap * 2 : 256;
    char **text = op_realloc(t->text, cap * sizeof *text);
    if (!text) return -ENOMEM;
    t->text = text; /* grown in place or moved: either way the old pointer is gone */
    uint32_t *len = op_realloc(t->len, cap * sizeof *len);
    if (!len) return -ENOMEM;
    t->len = len;
    uint32_t *next = op_realloc(t->next, cap * sizeof *next);
    if (!next) return -ENOMEM;
    t->next = next;
    t->cap = cap;
    return 0;
}

int op_strtab_intern(op_strtab *t, const char *s, size_t n, uint32_t *id)
{
    uint64_t h = op_hash_bytes(s, n), first;
    if (find_hashed(t, h, s, n, id, &first)) return 0;
    if (n >= UINT32_MAX || t->n >= UINT32_MAX - 1) return -E2BIG;
    if (reserve(t) != 0) return -ENOMEM;
    char *copy = op_malloc(n + 1);
    if (!copy) return -ENOMEM;
    if (n) memcpy(copy, s, n);
    copy[n] = 0;
    uint32_t i = (uint32_t)t->n;
    if (op_u64map_put(&t->by_hash, h, i) != 0) {
        op_free(copy);
        return -ENOMEM;
    }
    t->text[i] = copy;
    t->len[i] = (uint32_t)n;
    t->next[i] = (uint32_t)first;
    t->n++;
    *id = i;
    return 0;
}

void op_strtab_free(op_strtab *t)
{
    for (size_t i = 0; i < t->n; i++) op_free(t->text[i]);
    op_free(t->text);
    op_free(t->len);
    op_free(t->next);
    op_u64map_free(&t->by_hash);
    memset(t, 0, sizeof *t);
}
