/* json_parse.c — the strict JSON reader of json_parse.h: a recursive-descent parser over a
 * byte range, depth-bounded, building a tree of op_json values.
 *
 * Grammar (RFC 8259): value = object | array | string | number | true | false | null, white
 * space is space, tab, CR, LF. Errors name the line and column (1-based, counted in bytes) of
 * the first byte that does not fit, and what was expected there. */
#include "common/json_parse.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jparser {
    const char *p, *end, *line_start;
    int line;
    char *err;
    size_t errlen;
    bool failed;
} jparser;

static int column_of(const jparser *j) { return (int)(j->p - j->line_start) + 1; }

static void *fail(jparser *j, const char *what)
{
    if (!j->failed && j->err && j->errlen) {
        if (j->p >= j->end) snprintf(j->err, j->errlen, "line %d, column %d: %s (the text ends here)", j->line, column_of(j), what);
        else snprintf(j->err, j->errlen, "line %d, column %d: %s", j->line, column_of(j), what);
    }
    j->failed = true;
    return NULL;
}

static void skip_ws(jparser *j)
{
    while (j->p < j->end) {
        char c = *j->p;
        if (c == '\n') {
            j->line++;
            j->line_start = j->p + 1;
        } else if (c != ' ' && c != '\t' && c != '\r') {
            break;
        }
        j->p++;
    }
}

op_json *op_json_new(op_json_type type, const char *text, int line, int column)
{
    op_json *v = calloc(1, sizeof(*v));
    if (!v) return NULL;
    v->type = type;
    v->line = line;
    v->column = column;
    if (text && !(v->text = strdup(text))) {
        free(v);
        return NULL;
    }
    return v;
}

void op_json_append(op_json *parent, op_json *item)
{
    if (parent->last) parent->last->next = item;
    else parent->child = item;
    parent->last = item;
    parent->n_children++;
}

void op_json_free(op_json *v)
{
    while (v) {
        op_json *next = v->next;
        op_json_free(v->child);
        free(v->text);
        free(v->key);
        free(v);
        v = next;
    }
}

const op_json *op_json_get(const op_json *object, const char *key)
{
    if (!object || object->type != OP_JSON_OBJECT) return NULL;
    for (const op_json *m = object->child; m; m = m->next)
        if (m->key && strcmp(m->key, key) == 0) return m;
    return NULL;
}

const char *op_json_type_name(op_json_type t)
{
    static const char *const names[] = {"null", "boolean", "number", "string", "array", "object"};
    return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}

/* ---- strings ------------------------------------------------------------------------------ */

typedef struct sbuf {
    char *s;
    size_t len, cap;
} sbuf;

static bool sb_put(sbuf *b, const char *data, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        while (cap < b->len + n + 1) cap *= 2;
        char *t = realloc(b->s, cap);
        if (!t) return false;
        b->s = t;
        b->cap = cap;
    }
    memcpy(b->s + b->len, data, n);
    b->len += n;
    b->s[b->len] = '\0';
    return true;
}

static int hex4(const char *p)
{
    int v = 0;
    for (int k = 0; k < 4; k++) {
        char h = p[k];
        v <<= 4;
        if (h >= '0' && h <= '9') v |= h - '0';
        else if (h >= 'a' && h <= 'f') v |= h - 'a' + 10;
        else if (h >= 'A' && h <= 'F') v |= h - 'A' + 10;
        else return -1;
    }
    return v;
}

static size_t utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* \uXXXX (and its low surrogate) at j->p, just after the 'u'. */
static bool unicode_escape(jparser *j, sbuf *b)
{
    if (j->end - j->p < 4 || hex4(j->p) < 0) return fail(j, "expected four hex digits after \\u"), false;
    uint32_t cp = (uint32_t)hex4(j->p);
    j->p += 4;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return fail(j, "a low surrogate without its high surrogate"), false;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u' || hex4(j->p + 2) < 0xDC00 || hex4(j->p + 2) > 0xDFFF)
            return fail(j, "a high surrogate must be followed by a \\u low surrogate"), false;
        cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)hex4(j->p + 2) - 0xDC00);
        j->p += 6;
    }
    if (cp == 0) return fail(j, "\\u0000 is not accepted (strings hold no NUL character)"), false;
    char u[4];
    return sb_put(b, u, utf8_encode(cp, u)) || (fail(j, "out of memory"), false);
}

static char *parse_string(jparser *j)
{
    if (j->p >= j->end || *j->p != '"') return fail(j, "expected a string");
    j->p++;
    sbuf b = {0};
    if (!sb_put(&b, "", 0)) return fail(j, "out of memory");
    while (j->p < j->end && *j->p != '"') {
        unsigned char c = (unsigned char)*j->p;
        if (c < 0x20) {
            free(b.s);
            return fail(j, c == '\n' ? "a string does not end on its line" : "a control character in a string (escape it)");
        }
        if (c != '\\') {
            const char *run = j->p;
            while (j->p < j->end && *j->p != '"' && *j->p != '\\' && (unsigned char)*j->p >= 0x20) j->p++;
            if (!sb_put(&b, run, (size_t)(j->p - run))) {
                free(b.s);
                return fail(j, "out of memory");
            }
            continue;
        }
        j->p++;
        if (j->p >= j->end) break;
        char e = *j->p++, out;
        switch (e) {
        case 'n': out = '\n'; break;
        case 't': out = '\t'; break;
        case 'r': out = '\r'; break;
        case 'b': out = '\b'; break;
        case 'f': out = '\f'; break;
        case '"': case '\\': case '/': out = e; break;
        case 'u':
            if (!unicode_escape(j, &b)) {
                free(b.s);
                return NULL;
            }
            continue;
        default:
            j->p--;
            free(b.s);
            return fail(j, "an unknown escape in a string (valid: \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
        }
        if (!sb_put(&b, &out, 1)) {
            free(b.s);
            return fail(j, "out of memory");
        }
    }
    if (j->p >= j->end) {
        free(b.s);
        return fail(j, "an unterminated string");
    }
    j->p++;
    return b.s;
}

/* ---- numbers and words -------------------------------------------------------------------- */

static op_json *parse_number(jparser *j, int line, int col)
{
    const char *s = j->p;
    if (j->p < j->end && *j->p == '-') j->p++;
    if (j->p >= j->end || *j->p < '0' || *j->p > '9') return fail(j, "expected a digit");
    if (*j->p == '0') j->p++;
    else
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9') return fail(j, "expected a digit after '.'");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9') return fail(j, "expected a digit in the exponent");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    size_t n = (size_t)(j->p - s);
    char *text = malloc(n + 1);
    if (!text) return fail(j, "out of memory");
    memcpy(text, s, n);
    text[n] = '\0';
    op_json *v = op_json_new(OP_JSON_NUMBER, NULL, line, col);
    if (!v) {
        free(text);
        return fail(j, "out of memory");
    }
    v->text = text;
    v->number = strtod(text, NULL); /* the grammar was checked; overflow gives ±HUGE_VAL */
    return v;
}

static op_json *parse_word(jparser *j, int line, int col)
{
    static const struct { const char *w; op_json_type t; bool b; } words[] = {
        {"true", OP_JSON_BOOL, true}, {"false", OP_JSON_BOOL, false}, {"null", OP_JSON_NULL, false}};
    for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++) {
        size_t n = strlen(words[k].w);
        if ((size_t)(j->end - j->p) >= n && memcmp(j->p, words[k].w, n) == 0) {
            j->p += n;
            op_json *v = op_json_new(words[k].t, words[k].t == OP_JSON_BOOL ? words[k].w : NULL, line, col);
            if (!v) return fail(j, "out of memory");
            v->boolean = words[k].b;
            return v;
        }
    }
    return fail(j, "expected a value (an object, array, string, number, true, false or null)");
}

/* ---- values ------------------------------------------------------------------------------- */

static op_json *parse_value(jparser *j, int depth);

static op_json *parse_container(jparser *j, int depth, bool object)
{
    op_json *v = op_json_new(object ? OP_JSON_OBJECT : OP_JSON_ARRAY, NULL, j->line, column_of(j));
    if (!v) return fail(j, "out of memory");
    if (depth >= OP_JSON_MAX_DEPTH) {
        op_json_free(v);
        return fail(j, "nested too deeply (more than 64 levels)");
    }
    j->p++;
    skip_ws(j);
    char close = object ? '}' : ']';
    if (j->p < j->end && *j->p == close) {
        j->p++;
        return v;
    }
    for (;;) {
        skip_ws(j);
        char *key = NULL;
        if (object) {
            if (!(key = parse_string(j))) break;
            skip_ws(j);
            if (j->p >= j->end || *j->p != ':') {
                free(key);
                fail(j, "expected ':' after the key");
                break;
            }
            j->p++;
        }
        op_json *item = parse_value(j, depth + 1);
        if (!item) {
            free(key);
            break;
        }
        item->key = key;
        op_json_append(v, item);
        skip_ws(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == close) {
            j->p++;
            return v;
        }
        fail(j, object ? "expected ',' or '}'" : "expected ',' or ']'");
        break;
    }
    op_json_free(v);
    return NULL;
}

static op_json *parse_value(jparser *j, int depth)
{
    skip_ws(j);
    int line = j->line, col = column_of(j);
    if (j->p >= j->end) return fail(j, "expected a value");
    char c = *j->p;
    if (c == '{' || c == '[') return parse_container(j, depth, c == '{');
    if (c == '"') {
        char *s = parse_string(j);
        if (!s) return NULL;
        op_json *v = op_json_new(OP_JSON_STRING, NULL, line, col);
        if (!v) {
            free(s);
            return fail(j, "out of memory");
        }
        v->text = s;
        return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number(j, line, col);
    return parse_word(j, line, col);
}

op_json *op_json_parse(const char *text, size_t len, char *err, size_t errlen)
{
    if (err && errlen) err[0] = '\0';
    jparser j = {text, text + len, text, 1, err, errlen, false};
    if (!text) return fail(&j, "no text");
    if (memchr(text, '\0', len)) {
        j.p = memchr(text, '\0', len);
        for (const char *c = text; c < j.p; c++)
            if (*c == '\n') {
                j.line++;
                j.line_start = c + 1;
            }
        return fail(&j, "a NUL byte (this is not a text file)");
    }
    op_json *v = parse_value(&j, 0);
    if (!v) return NULL;
    skip_ws(&j);
    if (j.p < j.end) {
        op_json_free(v);
        return fail(&j, "text after the value");
    }
    return v;
}
