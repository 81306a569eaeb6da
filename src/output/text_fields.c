/* text_fields.c — how libomniprof-output writes a value as a field of its text formats, into an
 * op_buf (common/buf.h): a JSON string body (the escaper is common/escape.h), a CSV field, a
 * name as a terminal or Markdown table shows it, and the shortest decimal text of a double. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/internal.h"

void op_buf_json_str(op_buf *b, const unsigned char *s, size_t n) {
    op_buf_reserve(b, OP_JSON_ESCAPED_MAX(n));
    if (b->oom) return;
    b->len += op_json_escape((char *)b->p + b->len, b->cap - b->len, s, n, NULL);
}

void op_buf_term_str(op_buf *b, const unsigned char *s, size_t n, const char *special) {
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t l = c < 0x80 ? 1 : op_utf8_seq_len(s + i, n - i);
        if (c == '\n' || c == '\r' || c == '\t') {
            op_buf_putc(b, ' ');
        } else if (l == 0 || c < 0x20 || c == 0x7f || (c == 0xc2 && s[i + 1] < 0xa0)) {
            /* a control character (U+0080..U+009F is C2 80..C2 9F) or a byte that is not UTF-8 */
            size_t k = l ? l : 1;
            for (size_t j = 0; j < k; j++) op_buf_printf(b, "\\x%02x", s[i + j]);
            i += k;
            continue;
        } else if (special && c && strchr(special, c)) {
            op_buf_putc(b, '\\');
            op_buf_putc(b, c);
        } else {
            op_buf_put(b, s + i, l);
            i += l;
            continue;
        }
        i++;
    }
}

const char *op_term_text(op_buf *scratch, const char *s) {
    scratch->len = 0;
    if (s) op_buf_term_str(scratch, (const unsigned char *)s, strlen(s), NULL);
    op_buf_putc(scratch, 0);
    return scratch->oom ? "" : (const char *)scratch->p;
}

void op_buf_csv_str(op_buf *b, const unsigned char *s, size_t n, int always_quote) {
    int q = always_quote;
    if (!q) {
        for (size_t i = 0; i < n; i++)
            if (s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r') {
                q = 1;
                break;
            }
    }
    if (!q) {
        op_buf_put(b, s, n);
        return;
    }
    op_buf_putc(b, '"');
    size_t i = 0;
    while (i < n) {
        const unsigned char *qp = memchr(s + i, '"', n - i);
        size_t j = qp ? (size_t)(qp - s) : n;
        op_buf_put(b, s + i, j - i);
        if (qp) {
            op_buf_put(b, "\"\"", 2);
            j++;
        }
        i = j;
    }
    op_buf_putc(b, '"');
}

/* Shortest of %.15g / %.16g / %.17g that reads back as the same double. */
const char *op_fmt_double(char *buf, size_t n, double v) {
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}
