/* alloc.h — every allocation of omniprof goes through these wrappers (Redis's zmalloc), so the
 * profiler's own memory can be counted (op_alloc_bytes) and fault tests can fail the Nth call
 * (OMNIPROF_FAULT_ALLOC_AT=N in debug builds, see alloc.c). Never call them from a signal
 * handler. */
#ifndef OMNIPROF_COMMON_ALLOC_H
#define OMNIPROF_COMMON_ALLOC_H

#include <stddef.h>
#include <stdint.h>

void *op_malloc(size_t size);
void *op_calloc(size_t n, size_t size);
void *op_realloc(void *p, size_t size);
char *op_strdup(const char *s);
char *op_strndup(const char *s, size_t n);
void op_free(void *p);
/* Bytes currently allocated through these wrappers (approximate, relaxed atomics). */
int64_t op_alloc_bytes(void);
/* For fault tests: make the n-th allocation from now fail (0 disables). */
void op_alloc_fail_at(uint64_t n);

#endif /* OMNIPROF_COMMON_ALLOC_H */
