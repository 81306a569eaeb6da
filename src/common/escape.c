/* escape.c — UTF-8 validation and the JSON string escaper (the rule is in escape.h). The
 * escaper copies runs of plain ASCII with one memcpy: nearly all names are plain ASCII. */
#include "common/escape.h"

#include <string.h>

size_t op_utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, min = 0x10000;
    else return 0;
    if (n < len) return 0;
    unsigned cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

int op_utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t l = op_utf8_seq_len(s + i, n - i);
        if (!l) return 0;
        i += l;
    }
    return 1;
}

static inline int plain(unsigned char c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; }

size_t op_json_escape(char *dst, size_t cap, const void *src, size_t n, size_t *n_read)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = src;
    size_t i = 0, at = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (plain(c)) {
            size_t j = i + 1;
            while (j < n && plain(s[j])) j++;
            if (j - i > cap - at) j = i + (cap - at);
            if (j == i) break;
            memcpy(dst + at, s + i, j - i);
            at += j - i;
            i = j;
            continue;
        }
        char e[6];
        size_t el, used = 1;
        if (c == '"' || c == '\\') {
            e[0] = '\\', e[1] = (char)c, el = 2;
        } else if (c == '\n' || c == '\t' || c == '\r') {
            e[0] = '\\', e[1] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r', el = 2;
        } else if (c < 0x20) {
            memcpy(e, "\\u00", 4), e[4] = hex[c >> 4], e[5] = hex[c & 15], el = 6;
        } else if ((used = op_utf8_seq_len(s + i, n - i)) != 0) {
            if (used > cap - at) break;
            memcpy(dst + at, s + i, used);
            at += used;
            i += used;
            continue;
        } else { /* a byte outside any valid sequence: U+DC80..U+DCFF */
            memcpy(e, "\\udc", 4), e[4] = hex[c >> 4], e[5] = hex[c & 15], el = 6, used = 1;
        }
        if (el > cap - at) break;
        memcpy(dst + at, e, el);
        at += el;
        i += used;
    }
    if (n_read) *n_read = i;
    return at;
}

int op_json_fwrite(FILE *f, const void *src, size_t n)
{
    const unsigned char *s = src;
    char chunk[1536];
    while (n) {
        size_t used, w = op_json_escape(chunk, sizeof chunk, s, n, &used);
        if (w && fwrite(chunk, 1, w, f) != w) return -1;
        s += used;
        n -= used;
    }
    return 0;
}

int op_json_fputs(FILE *f, const char *s)
{
    if (fputc('"', f) == EOF) return -1;
    if (s && op_json_fwrite(f, s, strlen(s)) != 0) return -1;
    return fputc('"', f) == EOF ? -1 : 0;
}
