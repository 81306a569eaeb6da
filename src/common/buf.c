/* buf.c — the growable byte buffer and the error-message formatter (buf.h). Growth doubles the
 * capacity (at least 4 KiB), so n appends cost O(n) copies in total. */
#include "common/buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void op_seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int op_grow(void *arr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2) return -1;
        n *= 2;
    }
    if (size && n > SIZE_MAX / size) return -1;
    void *p = realloc(*(void **)arr, n * size);
    if (!p) return -1;
    *(void **)arr = p;
    *cap = n;
    return 0;
}

void op_buf_reserve(op_buf *b, size_t extra)
{
    if (b->len + extra <= b->cap) return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra) cap *= 2;
    unsigned char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return;
    }
    b->p = p;
    b->cap = cap;
}

void op_buf_put(op_buf *b, const void *data, size_t n)
{
    op_buf_reserve(b, n);
    if (b->len + n > b->cap) return;
    if (n) memcpy(b->p + b->len, data, n);
    b->len += n;
}

void op_buf_putc(op_buf *b, int c)
{
    if (b->len + 1 > b->cap) {
        op_buf_reserve(b, 1);
        if (b->len + 1 > b->cap) return;
    }
    b->p[b->len++] = (unsigned char)c;
}

void op_buf_puts(op_buf *b, const char *s) { op_buf_put(b, s, strlen(s)); }

void op_buf_printf(op_buf *b, const char *fmt, ...)
{
    va_list ap;
    op_buf_reserve(b, 128);
    if (b->oom) return;
    va_start(ap, fmt);
    int n = vsnprintf((char *)b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= b->cap - b->len) {
        op_buf_reserve(b, (size_t)n + 1);
        if (b->oom) return;
        va_start(ap, fmt);
        vsnprintf((char *)b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

int op_buf_write(op_buf *b, FILE *f)
{
    if (b->oom) return -1;
    if (b->len && fwrite(b->p, 1, b->len, f) != b->len) return -1;
    b->len = 0;
    return 0;
}

char *op_buf_take(op_buf *b)
{
    op_buf_putc(b, 0);
    char *s = b->oom ? NULL : (char *)b->p;
    if (!s) free(b->p);
    memset(b, 0, sizeof *b);
    return s;
}

void op_buf_free(op_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}
