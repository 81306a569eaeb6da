/* util.c — small helpers of libomniprof-output: JSON and CSV fields into an op_buf (the buffer
 * is common/buf.h, the escaper common/escape.h), the protobuf wire-format writer, progress
 * lines and output paths.
 *
 * Protobuf wire format (what pb_* emit): a field is a varint key (field << 3 | wire type) then
 * its payload: type 0 varint, type 1 eight little-endian bytes, type 2 varint length + bytes.
 * Nested messages are type 2; pb_begin reserves 4 bytes for the length, pb_end writes the
 * minimal varint and moves the body back over the unused bytes (bodies under 16 KiB: nearly
 * all) or, for longer ones, writes a 4-byte redundant varint (0x80|b0, 0x80|b1, 0x80|b2, b3),
 * which protobuf parsers accept. Since nested messages end innermost first, an outer message's
 * offset is never behind a moved body. One nested message is bounded to 2^28 - 1 bytes, far
 * above any packet written here (a packet holds one event). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/term.h"
#include "output/internal.h"

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

/* ---- protobuf ------------------------------------------------------------------------------ */

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

/* ---- progress -----------------------------------------------------------------------------
 * One line on stderr, rewritten in place at most every 100 ms, only when stderr is a terminal;
 * colours per common/term.h. A stage names a step without a count (report passes, summary
 * inputs); ticks count events or inputs. The closing line stays when anything was shown. */

static int64_t progress_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void op_progress_init(op_progress *p, int enabled, const char *what, uint64_t total) {
    memset(p, 0, sizeof(*p));
    p->on = enabled && isatty(2);
    p->what = what;
    p->total = total;
    p->t0 = progress_now();
}

static void progress_line(op_progress *p, int64_t now) {
    const char *c = op_term_sgr(stderr, OP_TERM_CYAN), *b = op_term_sgr(stderr, OP_TERM_BOLD),
               *r = op_term_sgr(stderr, OP_TERM_RESET), *d = op_term_sgr(stderr, OP_TERM_DIM);
    fprintf(stderr, "\r\033[Komniprof: %s%s%s", c, p->what, r);
    if (p->stage[0]) fprintf(stderr, " %s", p->stage);
    if (p->total)
        fprintf(stderr, " %s%llu/%llu%s (%.0f%%)", b, (unsigned long long)p->done, (unsigned long long)p->total, r,
                100.0 * (double)p->done / (double)p->total);
    else if (p->done)
        fprintf(stderr, " %s%llu%s", b, (unsigned long long)p->done, r);
    fprintf(stderr, " %s%.1f s%s", d, (double)(now - p->t0) / 1e9, r);
    fflush(stderr);
    p->last = now;
    p->shown = 1;
}

void op_progress_tick(op_progress *p, uint64_t n) {
    p->done += n;
    if (!p->on) return;
    int64_t now = progress_now();
    if (now - p->last >= 100000000) progress_line(p, now);
}

void op_progress_stage(op_progress *p, const char *fmt, ...) {
    if (!p->on) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->stage, sizeof p->stage, fmt, ap);
    va_end(ap);
    progress_line(p, progress_now());
}

void op_progress_clear(op_progress *p) {
    if (!p->on || !p->shown) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    p->shown = 0;
}

void op_progress_done(op_progress *p) {
    if (!p->on || !p->shown) return;
    int64_t now = progress_now();
    fprintf(stderr, "\r\033[Komniprof: %s%s%s ", op_term_sgr(stderr, OP_TERM_CYAN), p->what,
            op_term_sgr(stderr, OP_TERM_RESET));
    if (p->done) fprintf(stderr, "%llu ", (unsigned long long)p->done);
    fprintf(stderr, "%sdone%s in %.1f s\n", op_term_sgr(stderr, OP_TERM_GREEN), op_term_sgr(stderr, OP_TERM_RESET),
            (double)(now - p->t0) / 1e9);
    p->shown = 0;
}

/* ---- paths -------------------------------------------------------------------------------- */

int op_mkdirs(const char *path) {
    if (!path || !*path) return 0;
    char *p = strdup(path);
    if (!p) return -1;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            free(p);
            return -1;
        }
        *s = '/';
    }
    int rc = (mkdir(p, 0777) != 0 && errno != EEXIST) ? -1 : 0;
    free(p);
    return rc;
}

char *op_out_path(const char *dir, const char *name, const char *file) {
    op_buf b = {0};
    op_buf_puts(&b, dir && *dir ? dir : ".");
    op_buf_putc(&b, '/');
    if (name && *name) {
        op_buf_puts(&b, name);
        op_buf_putc(&b, '_');
    }
    op_buf_puts(&b, file);
    op_buf_putc(&b, 0);
    if (b.oom) {
        op_buf_free(&b);
        return NULL;
    }
    return (char *)b.p;
}

/* ---- guid set ----------------------------------------------------------------------------- */

int guid_seen(op_guid_set *g, const char *guid, const char *path, char *err, size_t errlen) {
    if (!guid || !*guid) return 0;
    uint64_t h = op_hash_bytes(guid, strlen(guid));
    uint64_t v;
    if (op_u64map_get(&g->hashes, h, &v) && !strcmp(g->names[v - 1], guid)) {
        const char *other = g->names[v - 1] + strlen(guid) + 1;
        op_seterr(err, errlen, "%s: process %s is also in %s: the same database given twice?", path, guid, other);
        return 1;
    }
    char **n = realloc(g->names, (g->n + 1) * sizeof(char *));
    if (!n) return 0;
    g->names = n;
    size_t lg = strlen(guid), lp = strlen(path);
    char *e = malloc(lg + lp + 2);
    if (!e) return 0;
    memcpy(e, guid, lg + 1);
    memcpy(e + lg + 1, path, lp + 1);
    g->names[g->n++] = e;
    op_u64map_put(&g->hashes, h, g->n);
    return 0;
}

void guid_seen_free(op_guid_set *g) {
    for (size_t i = 0; i < g->n; i++) free(g->names[i]);
    free(g->names);
    op_u64map_free(&g->hashes);
    memset(g, 0, sizeof(*g));
}

/* Shortest of %.15g / %.16g / %.17g that reads back as the same double. */
const char *op_fmt_double(char *buf, size_t n, double v) {
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}
