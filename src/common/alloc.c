/* alloc.c — the allocator wrapper: malloc with a size header so frees can be counted, and a
 * fault-injection countdown for tests. */
#include "common/alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Each block carries its size in a 16-byte header (keeps max_align_t alignment). */
#define OP_ALLOC_HEADER 16

static _Atomic int64_t g_bytes;
static _Atomic uint64_t g_fail_countdown;

void op_alloc_fail_at(uint64_t n) { atomic_store(&g_fail_countdown, n); }

static int should_fail(void)
{
    uint64_t c = atomic_load_explicit(&g_fail_countdown, memory_order_relaxed);
    while (c != 0) {
        if (atomic_compare_exchange_weak(&g_fail_countdown, &c, c - 1)) return c == 1;
    }
    return 0;
}

void *op_malloc(size_t size)
{
    if (should_fail()) return NULL;
    if (size > SIZE_MAX - OP_ALLOC_HEADER) return NULL;
    unsigned char *p = malloc(size + OP_ALLOC_HEADER);
    if (!p) return NULL;
    memcpy(p, &size, sizeof(size));
    atomic_fetch_add_explicit(&g_bytes, (int64_t)size, memory_order_relaxed);
    return p + OP_ALLOC_HEADER;
}

void *op_calloc(size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size) return NULL;
    void *p = op_malloc(n * size);
    if (p) memset(p, 0, n * size);
    return p;
}

void op_free(void *p)
{
    if (!p) return;
    unsigned char *base = (unsigned char *)p - OP_ALLOC_HEADER;
    size_t size;
    memcpy(&size, base, sizeof(size));
    atomic_fetch_sub_explicit(&g_bytes, (int64_t)size, memory_order_relaxed);
    free(base);
}

void *op_realloc(void *p, size_t size)
{
    if (!p) return op_malloc(size);
    if (should_fail()) return NULL;
    if (size > SIZE_MAX - OP_ALLOC_HEADER) return NULL;
    unsigned char *base = (unsigned char *)p - OP_ALLOC_HEADER;
    size_t old;
    memcpy(&old, base, sizeof(old));
    unsigned char *nb = realloc(base, size + OP_ALLOC_HEADER);
    if (!nb) return NULL;
    memcpy(nb, &size, sizeof(size));
    atomic_fetch_add_explicit(&g_bytes, (int64_t)size - (int64_t)old, memory_order_relaxed);
    return nb + OP_ALLOC_HEADER;
}

char *op_strndup(const char *s, size_t n)
{
    if (!s) return NULL;
    size_t len = strnlen(s, n);
    char *d = op_malloc(len + 1);
    if (!d) return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *op_strdup(const char *s) { return s ? op_strndup(s, strlen(s)) : NULL; }

int64_t op_alloc_bytes(void) { return atomic_load_explicit(&g_bytes, memory_order_relaxed); }
