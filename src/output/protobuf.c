/* protobuf.c — the protobuf wire-format writer of libomniprof-output (internal.h "protobuf
 * wire writer"), used by the Perfetto sink (pftrace.c, which names every field through the header
 * generated from Perfetto's schema).
 *
 * Protobuf wire format (what pb_* emit): a field is a varint key (field << 3 | wire type) then
 * its payload: type 0 varint, type 1 eight little-endian bytes, type 2 varint length + bytes.
 * Nested messages are type 2; pb_begin reserves 4 bytes for the length, pb_end writes the
 * minimal varint and moves the body back over the unused bytes (bodies under 16 KiB: nearly
 * all) or, for longer ones, writes a 4-byte redundant varint (0x80|b0, 0x80|b1, 0x80|b2, b3),
 * which protobuf parsers accept. Since nested messages end innermost first, an outer message's
 * offset is never behind a moved body. One nested message is bounded to 2^28 - 1 bytes, far
 * above any packet written here (a packet holds one event). */
#include <stdlib.h>
#include <string.h>

#include "output/internal.h"

void pb_varint_slow(op_buf *b, uint64_t v) {
    if (b->len + 10 > b->cap) {
        op_buf_reserve(b, 10);
        if (b->len + 10 > b->cap) return;
    }
    unsigned char *p = b->p + b->len;
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    b->len = (size_t)(p - b->p);
}

void pb_int(op_buf *b, uint32_t field, int64_t v) { pb_uint(b, field, (uint64_t)v); }

void pb_fixed64(op_buf *b, uint32_t field, uint64_t v) {
    pb_varint(b, (uint64_t)field << 3 | 1);
    unsigned char x[8];
    for (int i = 0; i < 8; i++) x[i] = (unsigned char)(v >> (8 * i));
    op_buf_put(b, x, 8);
}

void pb_double(op_buf *b, uint32_t field, double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    pb_fixed64(b, field, u);
}

void pb_bytes(op_buf *b, uint32_t field, const void *data, size_t n) {
    pb_varint(b, (uint64_t)field << 3 | 2);
    pb_varint(b, n);
    op_buf_put(b, data, n);
}

void pb_str(op_buf *b, uint32_t field, const char *s) { pb_bytes(b, field, s, strlen(s)); }

size_t pb_begin(op_buf *b, uint32_t field) {
    pb_varint(b, (uint64_t)field << 3 | 2);
    size_t off = b->len;
    op_buf_put(b, "\0\0\0\0", 4);
    return off;
}

void pb_end(op_buf *b, size_t off) {
    if (b->oom || off + 4 > b->len) return;
    size_t n = b->len - off - 4;
    unsigned char *p = b->p + off;
    if (n < 128) { /* the common case: a one-byte length; move the body 3 bytes back */
        p[0] = (unsigned char)n;
        memmove(p + 1, p + 4, n);
        b->len -= 3;
        return;
    }
    if (n < 16384) {
        p[0] = (unsigned char)(0x80 | (n & 0x7F));
        p[1] = (unsigned char)(n >> 7);
        memmove(p + 2, p + 4, n);
        b->len -= 2;
        return;
    }
    p[0] = (unsigned char)(0x80 | (n & 0x7F));
    p[1] = (unsigned char)(0x80 | ((n >> 7) & 0x7F));
    p[2] = (unsigned char)(0x80 | ((n >> 14) & 0x7F));
    p[3] = (unsigned char)((n >> 21) & 0x7F);
}


void pb_text(op_buf *b, uint32_t field, const unsigned char *s, size_t n) {
    if (op_utf8_valid(s, n)) {
        pb_bytes(b, field, s, n);
        return;
    }
    op_buf t = {0};
    for (size_t i = 0; i < n;) {
        size_t l = s[i] < 0x80 ? 1 : op_utf8_seq_len(s + i, n - i);
        if (l) {
            op_buf_put(&t, s + i, l);
            i += l;
        } else {
            op_buf_printf(&t, "\\x%02X", s[i]);
            i++;
        }
    }
    pb_bytes(b, field, t.p, t.len);
    op_buf_free(&t);
}
