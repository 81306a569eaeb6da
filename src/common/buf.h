/* buf.h — a growable byte buffer (op_buf) for building text, SQL and binary records, growable
 * arrays (op_grow), and the formatter of the one-line error messages that functions return in a
 * caller's buffer.
 *
 * op_buf: a zeroed struct is an empty buffer (`op_buf b = {0};`). Appends never fail loudly:
 * when memory runs out the buffer sets `oom` and ignores later appends, so a caller checks once
 * at the end. The bytes are plain malloc'ed memory (b.p may be handed to a caller who frees it
 * with free(): op_buf_take). Not thread-safe: one owner. */
#ifndef OMNIPROF_COMMON_BUF_H
#define OMNIPROF_COMMON_BUF_H

#include <stddef.h>
#include <stdio.h>

typedef struct op_buf {
    unsigned char *p;
    size_t len, cap;
    int oom; /* an allocation failed: the content is incomplete */
} op_buf;

/* Makes room for `extra` more bytes (len + extra <= cap afterwards unless oom). */
void op_buf_reserve(op_buf *b, size_t extra);
void op_buf_put(op_buf *b, const void *data, size_t n);
void op_buf_putc(op_buf *b, int c);
void op_buf_puts(op_buf *b, const char *s);
void op_buf_printf(op_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes the bytes to f and empties the buffer: 0, or -1 (I/O error, or oom earlier). */
int op_buf_write(op_buf *b, FILE *f);
/* Ends the text with a NUL and hands it over (free() it); NULL when oom. The buffer is empty. */
char *op_buf_take(op_buf *b);
void op_buf_free(op_buf *b);

/* Growable arrays: makes room for `need` elements of `size` bytes in the malloc'ed array at
 * *(void **)arr whose capacity is *cap (doubled as needed, at least 16). 0, or -1 when out of
 * memory (the array and *cap unchanged). Usage: if (op_grow(&v, &cap, n + 1, sizeof *v)) fail; */
int op_grow(void *arr, size_t *cap, size_t need, size_t size);

/* snprintf into err[0..errlen) when err is not NULL (the one-line messages of every
 * `char *err, size_t errlen` function). */
void op_seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif /* OMNIPROF_COMMON_BUF_H */
