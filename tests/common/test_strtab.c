/* test_strtab.c — string interning: one id per distinct text in order of first appearance,
 * texts with NUL bytes and the empty text, lookups without adding, many texts, colliding hashes
 * (forced by texts that differ only past their compared length), allocation failure. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "common/alloc.h"
#include "common/strtab.h"

int main(void)
{
    int64_t base = op_alloc_bytes();
    op_strtab t = {0};
    uint32_t a, b, c, d, e;
    CHECK(op_strtab_intern(&t, "main", 4, &a) == 0 && a == 0);
    CHECK(op_strtab_intern(&t, "foo", 3, &b) == 0 && b == 1);
    CHECK(op_strtab_intern(&t, "main", 4, &c) == 0 && c == a);
    CHECK(op_strtab_intern(&t, "", 0, &d) == 0 && d == 2);
    CHECK(op_strtab_intern(&t, "a\0b", 3, &e) == 0 && e == 3);
    CHECK(op_strtab_intern(&t, "a", 1, &c) == 0 && c == 4); /* "a" is not "a\0b" */
    CHECK(op_strtab_count(&t) == 5);
    CHECK(strcmp(op_strtab_str(&t, a), "main") == 0 && op_strtab_len(&t, a) == 4);
    CHECK(op_strtab_str(&t, d)[0] == 0 && op_strtab_len(&t, d) == 0);
    CHECK(memcmp(op_strtab_str(&t, e), "a\0b", 4) == 0 && op_strtab_len(&t, e) == 3);
    CHECK(op_strtab_str(&t, 99) == NULL);
    uint32_t f = 77;
    CHECK(op_strtab_find(&t, "foo", 3, &f) == 1 && f == b);
    CHECK(op_strtab_find(&t, "fo", 2, &f) == 0 && f == b);
    CHECK(op_strtab_count(&t) == 5);

    /* many texts: ids dense and stable, texts never move */
    const char *first = op_strtab_str(&t, a);
    char buf[32];
    int bad = 0;
    for (int i = 0; i < 50000; i++) {
        snprintf(buf, sizeof buf, "fn_%d", i);
        uint32_t id;
        if (op_strtab_intern(&t, buf, strlen(buf), &id) != 0 || id != (uint32_t)(5 + i)) bad++;
    }
    for (int i = 0; i < 50000; i += 7) {
        snprintf(buf, sizeof buf, "fn_%d", i);
        uint32_t id;
        if (!op_strtab_find(&t, buf, strlen(buf), &id) || strcmp(op_strtab_str(&t, id), buf) != 0) bad++;
    }
    CHECK(bad == 0);
    CHECK(op_strtab_str(&t, a) == first);

    /* a failed allocation adds nothing */
    size_t n = op_strtab_count(&t);
    op_alloc_fail_at(1);
    CHECK(op_strtab_intern(&t, "new text", 8, &f) == -ENOMEM);
    op_alloc_fail_at(0);
    CHECK(op_strtab_count(&t) == n && !op_strtab_find(&t, "new text", 8, &f));
    CHECK(op_strtab_intern(&t, "new text", 8, &f) == 0 && f == n);

    op_strtab_free(&t);
    CHECK(op_strtab_count(&t) == 0 && !op_strtab_find(&t, "main", 4, &f));
    CHECK(op_alloc_bytes() == base);
    return CHECK_DONE();
}
