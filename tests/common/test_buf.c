/* test_buf.c — the growable byte buffer: appends of every kind across growth, printf longer than
 * the first reservation, take hands over a NUL-terminated string, write empties it, and the
 * error formatter tolerates a NULL buffer. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/buf.h"

int main(void)
{
    op_buf b = {0};
    op_buf_puts(&b, "abc");
    op_buf_putc(&b, '-');
    op_buf_put(&b, "x\0y", 3);
    CHECK(b.len == 7 && memcmp(b.p, "abc-x\0y", 7) == 0 && !b.oom);
    char big[10000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = 0;
    op_buf_printf(&b, "[%s]%d", big, 42);
    CHECK(b.len == 7 + 1 + 9999 + 1 + 2 && b.p[7] == '[' && memcmp(b.p + b.len - 3, "]42", 3) == 0);
    for (int i = 0; i < 100000; i++) op_buf_putc(&b, 'z');
    CHECK(b.len == 10010 + 100000 && b.cap >= b.len && !b.oom);
    FILE *f = tmpfile();
    CHECK(op_buf_write(&b, f) == 0 && b.len == 0 && ftell(f) == 110010);
    fclose(f);
    op_buf_puts(&b, "text");
    char *s = op_buf_take(&b);
    CHECK(s && strcmp(s, "text") == 0 && b.p == NULL && b.len == 0);
    free(s);
    op_buf e = {0};
    char *t = op_buf_take(&e);
    CHECK(t && t[0] == 0);
    free(t);
    op_buf_free(&b);
    char err[16];
    op_seterr(err, sizeof err, "%s %d", "a long message", 12345);
    CHECK(strcmp(err, "a long message ") == 0);
    op_seterr(NULL, 0, "ignored %d", 1);
    return CHECK_DONE();
}
