/* text.c — reversible valid-UTF-8 text (the rule is in text.h). */
#include "common/text.h"

#include <string.h>

#include "common/escape.h"

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* 1 when s[i..n) starts with the literal text "xHH". */
static int literal_xhh(const unsigned char *s, size_t i, size_t n)
{
    return i + 3 <= n && s[i] == 'x' && hexval((char)s[i + 1]) >= 0 && hexval((char)s[i + 2]) >= 0;
}

int op_text_is_clean(const void *src, size_t n)
{
    const unsigned char *s = src;
    for (size_t i = 0; i < n;) {
        if (s[i] == '\\') {
            size_t j = i;
            while (j < n && s[j] == '\\') j++;
            if (j < n && (literal_xhh(s, j, n) || !op_utf8_seq_len(s + j, n - j))) return 0;
            i = j;
        } else if (s[i] < 0x80) {
            i++;
        } else {
            size_t l = op_utf8_seq_len(s + i, n - i);
            if (!l) return 0;
            i += l;
        }
    }
    return 1;
}

size_t op_text_escape(char *dst, const void *src, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *s = src;
    size_t at = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] == '\\') {
            size_t j = i;
            while (j < n && s[j] == '\\') j++;
            size_t run = j - i;
            int escape_follows = j < n && (literal_xhh(s, j, n) || !op_utf8_seq_len(s + j, n - j));
            for (size_t k = 0; k < (escape_follows ? 2 * run : run); k++) dst[at++] = '\\';
            i = j;
            continue;
        }
        size_t l = s[i] < 0x80 ? 1 : op_utf8_seq_len(s + i, n - i);
        if (l) {
            memcpy(dst + at, s + i, l);
            at += l;
            i += l;
        } else {
            dst[at++] = '\\', dst[at++] = 'x', dst[at++] = hex[s[i] >> 4], dst[at++] = hex[s[i] & 15];
            i++;
        }
    }
    return at;
}

size_t op_text_unescape(void *dst_, const char *s, size_t n)
{
    unsigned char *dst = dst_;
    size_t at = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] != '\\') {
            dst[at++] = (unsigned char)s[i++];
            continue;
        }
        size_t j = i;
        while (j < n && s[j] == '\\') j++;
        size_t run = j - i;
        if (!literal_xhh((const unsigned char *)s, j, n)) {
            memcpy(dst + at, s + i, run);
            at += run;
        } else {
            memset(dst + at, '\\', run / 2);
            at += run / 2;
            if (run % 2) {
                dst[at++] = (unsigned char)(hexval(s[j + 1]) << 4 | hexval(s[j + 2]));
                j += 3;
            }
        }
        i = j;
    }
    return at;
}
