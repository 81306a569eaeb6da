/* text.h — text that is always valid UTF-8, reversibly: what the database writer stores in text
 * columns, so that every client (AMD's rocpd Python package, sqlite3 in any language) can decode
 * every name, while the original bytes can always be recovered.
 *
 * Rule (op_text_escape): valid UTF-8 is copied as is, except that a run of n backslashes that is
 * followed by an escape (below) or by the literal text "x" + two hex digits becomes 2n
 * backslashes; each byte that is not part of a valid UTF-8 sequence becomes "\xHH" (upper-case
 * hex). Decoding (op_text_unescape): a run of m backslashes followed by "xHH" gives m/2
 * backslashes and the text "xHH" when m is even, (m-1)/2 backslashes and the byte HH when m is
 * odd; everything else is copied. So text without invalid bytes and without a backslash before
 * "xHH" — nearly every name — is stored unchanged. */
#ifndef OMNIPROF_COMMON_TEXT_H
#define OMNIPROF_COMMON_TEXT_H

#include <stddef.h>

/* The most bytes op_text_escape can write for n input bytes. */
#define OP_TEXT_ESCAPED_MAX(n) ((n) * 4)
/* 1 when s[0..n) needs no escaping (op_text_escape would copy it unchanged). */
int op_text_is_clean(const void *s, size_t n);
/* Escapes s[0..n) into dst (at least OP_TEXT_ESCAPED_MAX(n) bytes; no NUL added); the length. */
size_t op_text_escape(char *dst, const void *s, size_t n);
/* Decodes s[0..n) into dst (at least n bytes; no NUL added); the length. */
size_t op_text_unescape(void *dst, const char *s, size_t n);

#endif /* OMNIPROF_COMMON_TEXT_H */
