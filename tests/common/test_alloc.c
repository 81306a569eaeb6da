/* test_alloc.c — the allocator wrapper counts bytes and fails the n-th allocation on request. */
#include <string.h>

#include "check.h"
#include "common/alloc.h"

int main(void)
{
    int64_t base = op_alloc_bytes();
    char *p = op_malloc(100);
    CHECK(p != NULL);
    CHECK(op_alloc_bytes() == base + 100);
    p = op_realloc(p, 300);
    CHECK(p != NULL && op_alloc_bytes() == base + 300);
    char *s = op_strdup("hello");
    CHECK(s && strcmp(s, "hello") == 0);
    char *t = op_strndup("abcdef", 3);
    CHECK(t && strcmp(t, "abc") == 0);
    op_free(s);
    op_free(t);
    op_free(p);
    op_free(NULL);
    CHECK(op_alloc_bytes() == base);
    int *z = op_calloc(4, sizeof(int));
    CHECK(z && z[0] == 0 && z[3] == 0);
    op_free(z);
    CHECK(op_calloc((size_t)-1, 16) == NULL);

    op_alloc_fail_at(2);
    void *a = op_malloc(8);
    void *b = op_malloc(8);
    void *c = op_malloc(8);
    CHECK(a != NULL && b == NULL && c != NULL);
    op_free(a);
    op_free(c);
    CHECK(op_alloc_bytes() == base);
    return CHECK_DONE();
}
