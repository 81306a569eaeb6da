/* number.c — the number, range and id-list parsers of number.h. The grammar is checked by
 * hand before strtod/strtoull see the text, so that what those functions accept beyond it
 * (nan, inf, hex floats, leading spaces, octal with base 0) never reaches a setting. */
#include "common/number.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_xdigit(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

/* A word that spells NaN or infinity, with an optional sign. */
static bool spells_not_finite(const char *t)
{
    if (*t == '+' || *t == '-') t++;
    return strncasecmp(t, "nan", 3) == 0 || strncasecmp(t, "inf", 3) == 0;
}

int op_num_double(const char *text, double *out)
{
    if (!text || !*text) return OP_NUM_EMPTY;
    if (spells_not_finite(text)) return OP_NUM_NOT_FINITE;
    const char *p = text;
    if (*p == '+' || *p == '-') p++;
    size_t digits = 0;
    while (is_digit(*p)) p++, digits++;
    if (*p == '.') {
        p++;
        while (is_digit(*p)) p++, digits++;
    }
    if (digits == 0) return OP_NUM_SYNTAX;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!is_digit(*p)) return OP_NUM_SYNTAX;
        while (is_digit(*p)) p++;
    }
    if (*p) return OP_NUM_SYNTAX;
    errno = 0;
    double v = strtod(text, NULL);
    if (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL)) return OP_NUM_OVERFLOW;
    if (!isfinite(v)) return OP_NUM_OVERFLOW;
    *out = v;
    return OP_NUM_OK;
}

/* Magnitude of an unsigned decimal or 0x-hex integer at t (no sign). */
static int parse_magnitude(const char *t, uint64_t *out)
{
    if (!*t) return OP_NUM_SYNTAX;
    if (spells_not_finite(t)) return OP_NUM_NOT_FINITE;
    int base = 10;
    const char *p = t;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
        if (!is_xdigit(*p)) return OP_NUM_SYNTAX;
        for (const char *q = p; *q; q++)
            if (!is_xdigit(*q)) return OP_NUM_SYNTAX;
    } else {
        for (const char *q = p; *q; q++)
            if (!is_digit(*q)) {
                /* "1.5" or "1e3" for an integer: a number, but not of this type */
                return OP_NUM_SYNTAX;
            }
    }
    errno = 0;
    unsigned long long v = strtoull(p, NULL, base);
    if (errno == ERANGE) return OP_NUM_OVERFLOW;
    *out = (uint64_t)v;
    return OP_NUM_OK;
}

int op_num_u64(const char *text, uint64_t *out)
{
    if (!text || !*text) return OP_NUM_EMPTY;
    const char *p = text;
    if (*p == '-') {
        uint64_t m;
        int rc = parse_magnitude(p + 1, &m);
        if (rc != OP_NUM_OK) return rc;
        if (m == 0) {
            *out = 0;
            return OP_NUM_OK;
        }
        return OP_NUM_NEGATIVE;
    }
    if (*p == '+') p++;
    return parse_magnitude(p, out);
}

int op_num_i64(const char *text, int64_t *out)
{
    if (!text || !*text) return OP_NUM_EMPTY;
    const char *p = text;
    bool neg = false;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    uint64_t m;
    int rc = parse_magnitude(p, &m);
    if (rc != OP_NUM_OK) return rc;
    if (neg ? m > (uint64_t)INT64_MAX + 1 : m > (uint64_t)INT64_MAX) return OP_NUM_OVERFLOW;
    *out = neg ? (int64_t)(0 - m) : (int64_t)m;
    return OP_NUM_OK;
}

const char *op_num_reason(int code)
{
    switch (code) {
    case OP_NUM_OK: return "ok";
    case OP_NUM_EMPTY: return "no value";
    case OP_NUM_SYNTAX: return "not a number of that kind";
    case OP_NUM_NOT_FINITE: return "NaN and infinity are not accepted";
    case OP_NUM_OVERFLOW: return "too large";
    case OP_NUM_NEGATIVE: return "negative";
    case OP_NUM_RANGE: return "out of range";
    default: return "not valid";
    }
}

int op_num_range_parse(const char *spec, op_num_range *r)
{
    if (!spec) return -1;
    size_t n = strlen(spec);
    if (n < 5 || (spec[0] != '[' && spec[0] != '(') || (spec[n - 1] != ']' && spec[n - 1] != ')')) return -1;
    const char *comma = strchr(spec, ',');
    if (!comma) return -1;
    char lo[64], hi[64];
    size_t nl = (size_t)(comma - spec - 1), nh = (size_t)(spec + n - 1 - comma - 1);
    if (nl == 0 || nh == 0 || nl >= sizeof(lo) || nh >= sizeof(hi)) return -1;
    memcpy(lo, spec + 1, nl);
    lo[nl] = '\0';
    memcpy(hi, comma + 1, nh);
    hi[nh] = '\0';
    op_num_range t = {0, 0, spec[0] == '(', spec[n - 1] == ')'};
    if (op_num_double(lo, &t.lo) != OP_NUM_OK || op_num_double(hi, &t.hi) != OP_NUM_OK || t.lo > t.hi) return -1;
    if (t.lo == t.hi && (t.lo_open || t.hi_open)) return -1; /* "(0,0]": holds nothing */
    *r = t;
    return 0;
}

bool op_num_range_has(const op_num_range *r, double v)
{
    if (v < r->lo || (r->lo_open && v == r->lo)) return false;
    if (v > r->hi || (r->hi_open && v == r->hi)) return false;
    return true;
}

int op_num_parse_checked(const char *text, op_num_type type, const char *range, double *out, int64_t *i, uint64_t *u,
                         char *why, size_t whylen)
{
    static const char *const what[] = {"an integer", "a non-negative integer", "a number"};
    op_num_range r;
    bool has_range = range && *range && op_num_range_parse(range, &r) == 0;
    int64_t iv = 0;
    uint64_t uv = 0;
    double d = 0;
    int rc;
    switch (type) {
    case OP_NUM_TYPE_INT:
        rc = op_num_i64(text, &iv);
        d = (double)iv;
        break;
    case OP_NUM_TYPE_UINT:
        rc = op_num_u64(text, &uv);
        d = (double)uv;
        break;
    default: rc = op_num_double(text, &d); break;
    }
    if (rc == OP_NUM_OK && has_range && !op_num_range_has(&r, d)) rc = OP_NUM_RANGE;
    if (rc != OP_NUM_OK) {
        if (why && whylen)
            snprintf(why, whylen, "expected %s%s%s (%s)", what[type], has_range ? " in " : "", has_range ? range : "",
                     op_num_reason(rc));
        return rc;
    }
    if (out) *out = d;
    if (i) *i = iv;
    if (u) *u = uv;
    return OP_NUM_OK;
}

int op_num_seconds(const char *text, bool zero_ok, double *out, char *why, size_t whylen)
{
    char range[48];
    snprintf(range, sizeof range, "%c0,%.0f]", zero_ok ? '[' : '(', OP_NUM_SECONDS_MAX);
    return op_num_parse_checked(text, OP_NUM_TYPE_DOUBLE, range, out, NULL, NULL, why, whylen);
}

/* ---- id lists ----------------------------------------------------------------------------- */

/* Items are separated by commas, blanks and brackets (rocprofv3 writes "[1, [3-5]]"). */
#define ID_SEPARATORS ", \t[]"

/* Calls item(lo, hi) for each item; returns 0, or -1 with the reason when an item is bad. */
static int walk_items(const char *text, bool (*item)(uint64_t lo, uint64_t hi, void *data), void *data, char *why,
                      size_t whylen)
{
    const char *p = text;
    while (*p) {
        while (*p && strchr(ID_SEPARATORS, *p)) p++;
        if (!*p) break;
        size_t n = strcspn(p, ID_SEPARATORS);
        char tok[64];
        if (n >= sizeof(tok)) {
            if (why) snprintf(why, whylen, "'%.20s...' is too long for an id or range", p);
            return -1;
        }
        memcpy(tok, p, n);
        tok[n] = '\0';
        /* digits, or digits-digits: no signs, no hex */
        char *dash = strchr(tok, '-');
        bool shape = tok[0] != '-' && strspn(tok, "0123456789-") == n && (!dash || !strchr(dash + 1, '-'));
        uint64_t lo = 0, hi = 0;
        int rc = shape ? OP_NUM_OK : (tok[0] == '-' ? OP_NUM_NEGATIVE : OP_NUM_SYNTAX);
        if (rc == OP_NUM_OK) {
            if (dash) *dash = '\0';
            rc = op_num_u64(tok, &lo);
            if (rc == OP_NUM_OK) rc = dash ? op_num_u64(dash + 1, &hi) : OP_NUM_OK;
            if (!dash) hi = lo;
            if (dash) *dash = '-';
        }
        if (rc != OP_NUM_OK) {
            if (why)
                snprintf(why, whylen, "'%s' is not an id or a range A-B of non-negative integers (%s)", tok,
                         op_num_reason(rc));
            return -1;
        }
        if (lo > hi) {
            if (why) snprintf(why, whylen, "'%s' is a reversed range (%llu > %llu); write %llu-%llu", tok,
                              (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)hi,
                              (unsigned long long)lo);
            return -1;
        }
        if (item && item(lo, hi, data)) return 0;
        p += n;
    }
    return 0;
}

/* walk_items over a copy of the text without the blanks around '-' ("4 - 7" is "4-7"). */
static int idlist_walk(const char *text, bool (*item)(uint64_t lo, uint64_t hi, void *data), void *data, char *why,
                       size_t whylen)
{
    size_t len = strlen(text);
    char *copy = malloc(len + 1);
    if (!copy) {
        if (why) snprintf(why, whylen, "out of memory");
        return -1;
    }
    size_t o = 0;
    for (size_t k = 0; k < len; k++) {
        if (text[k] == ' ' || text[k] == '\t') {
            size_t j = k;
            while (j < len && (text[j] == ' ' || text[j] == '\t')) j++;
            if ((o > 0 && copy[o - 1] == '-') || (j < len && text[j] == '-')) {
                k = j - 1;
                continue;
            }
        }
        copy[o++] = text[k];
    }
    copy[o] = '\0';
    int rc = walk_items(copy, item, data, why, whylen);
    free(copy);
    return rc;
}

int op_idlist_validate(const char *text, char *why, size_t whylen)
{
    if (!text || !*text || strcasecmp(text, "all") == 0 || strcasecmp(text, "none") == 0) return 0;
    return idlist_walk(text, NULL, NULL, why, whylen);
}

typedef struct idlist_find {
    uint64_t value;
    bool found, any;
} idlist_find;

static bool find_item(uint64_t lo, uint64_t hi, void *data)
{
    idlist_find *f = data;
    f->any = true;
    if (f->value >= lo && f->value <= hi) f->found = true;
    return f->found;
}

bool op_idlist_has(const char *text, uint64_t value)
{
    if (!text || !*text || strcasecmp(text, "all") == 0) return true;
    if (strcasecmp(text, "none") == 0) return false;
    idlist_find f = {value, false, false};
    if (idlist_walk(text, find_item, &f, NULL, 0) != 0) return false;
    return f.found || !f.any; /* separators only ("[ ]", ","): an empty list, as "" */
}

typedef struct idlist_collect {
    op_id_range *out;
    size_t max, n;
    bool overflow;
} idlist_collect;

static bool collect_item(uint64_t lo, uint64_t hi, void *data)
{
    idlist_collect *c = data;
    if (c->n >= c->max) {
        c->overflow = true;
        return true;
    }
    c->out[c->n++] = (op_id_range){lo, hi};
    return false;
}

int op_idlist_parse(const char *text, uint64_t min_id, op_id_range *out, size_t max, size_t *n, char *why,
                    size_t whylen)
{
    idlist_collect c = {out, max, 0, false};
    *n = 0;
    if (idlist_walk(text ? text : "", collect_item, &c, why, whylen) != 0) return -1;
    if (c.overflow) {
        if (why) snprintf(why, whylen, "more than %zu ids or ranges", max);
        return -1;
    }
    for (size_t i = 0; i < c.n; i++)
        if (out[i].lo < min_id) {
            if (why) snprintf(why, whylen, "%llu is below the first id, %llu", (unsigned long long)out[i].lo,
                              (unsigned long long)min_id);
            return -1;
        }
    *n = c.n;
    return 0;
}

const char *op_fmt_bytes(char *buf, size_t n, uint64_t bytes)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 6) v /= 1024.0, u++;
    if (u == 0) snprintf(buf, n, "%llu B", (unsigned long long)bytes);
    else snprintf(buf, n, v < 9.995 ? "%.2f %s" : v < 99.95 ? "%.1f %s" : "%.0f %s", v, unit[u]);
    return buf;
}
