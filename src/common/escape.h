/* escape.h — text encoders every output shares: UTF-8 validation and the one JSON string
 * escaper of omniprof (databases' JSON columns, JSON and CSV outputs, `avail --json`, reports).
 *
 * JSON string rule (what every JSON text omniprof writes contains, so outputs compare byte for
 * byte): `"` and `\` get a backslash; \n, \t and \r their short escapes; other bytes below 0x20
 * \u00xx (lower-case hex); valid UTF-8 as is (DEL included); each byte that is not part of a
 * valid UTF-8 sequence becomes \udcXX (U+DC80..U+DCFF, Python's "surrogateescape"), so a reader
 * decoding with errors="surrogateescape" gets the original bytes back. */
#ifndef OMNIPROF_COMMON_ESCAPE_H
#define OMNIPROF_COMMON_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* Length (1-4) of the valid UTF-8 sequence at s (n >= 1 bytes left), 0 when it is not one
 * (overlong, surrogate, above U+10FFFF, cut short). */
size_t op_utf8_seq_len(const unsigned char *s, size_t n);
/* 1 when s[0..n) is all valid UTF-8. */
int op_utf8_valid(const unsigned char *s, size_t n);

/* The most bytes escaping n input bytes can produce. */
#define OP_JSON_ESCAPED_MAX(n) ((n) * 6)
/* Escapes s[0..n) as a JSON string body (no quotes, no NUL) into dst[0..cap). Writes whole
 * escapes only: stops before one that would not fit. Returns the bytes written; *n_read (when
 * not NULL) gets the input bytes consumed (n when everything fit; a cap of
 * OP_JSON_ESCAPED_MAX(n) always fits). */
size_t op_json_escape(char *dst, size_t cap, const void *s, size_t n, size_t *n_read);
/* Writes s[0..n) escaped (no quotes) to f. 0, or -1 on a write error. */
int op_json_fwrite(FILE *f, const void *s, size_t n);
/* Writes the C string s as a quoted JSON string ("" for NULL) to f. 0, or -1. */
int op_json_fputs(FILE *f, const char *s);

#endif /* OMNIPROF_COMMON_ESCAPE_H */
