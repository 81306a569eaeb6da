/* expr.c — parser and evaluator of derived-metric expressions (grammar in expr.h).
 *
 * The parser is recursive descent over a hand-written scanner. Nodes live in one array owned
 * by the op_expr (at most OP_EXPR_MAX_NODES), children are indices, so freeing is one call and
 * a malformed input can never leave a half-built tree behind. Depth is counted on every
 * descent (invariant (1) of expr.h) so hostile input cannot exhaust the stack.
 *
 * Evaluation walks the tree recursively (depth is bounded by the parse) and keeps each
 * intermediate value as a heap vector of doubles; scalars are vectors of length 1. */
#include "sdk/counters/expr.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

typedef enum node_type {
    N_NUM,
    N_NAME,
    N_NEG,
    N_BIN,
    N_REDUCE, /* sum avg min max over all args */
    N_ABS,
} node_type;

typedef enum reduce_op { R_SUM, R_AVG, R_MIN, R_MAX } reduce_op;

typedef struct node {
    node_type type;
    char op;         /* N_BIN: + - * / ; N_REDUCE: reduce_op */
    int column;      /* 1-based position of the token that made the node */
    int first;       /* first child (-1 none) */
    int next;        /* next sibling in an argument list (-1 none) */
    int second;      /* N_BIN: right operand */
    double number;   /* N_NUM */
    int name;        /* N_NAME: index into names */
} node;

struct op_expr {
    char *text;
    node *nodes;
    int n_nodes;
    int root;
    char **names;
    int *name_columns;
    int n_names;
};

/* ---- scanner ---------------------------------------------------------------------------- */

typedef enum tok_type { T_END, T_NUM, T_NAME, T_OP, T_BAD } tok_type;

typedef struct parser {
    const char *s;
    size_t pos;      /* byte offset of the next unread character */
    tok_type tt;     /* current token */
    size_t tstart;   /* its offset */
    size_t tlen;
    double tnum;
    char top;        /* T_OP: the character */
    int depth;
    op_expr *e;
    op_expr_error *err;
    int failed;
} parser;

static void fail(parser *p, size_t offset, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(parser *p, size_t offset, const char *fmt, ...)
{
    if (p->failed)
        return;
    p->failed = 1;
    if (p->err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err->message, sizeof p->err->message, fmt, ap);
        va_end(ap);
        p->err->column = (int)offset + 1;
    }
}

static int is_name_start(int c) { return isalpha(c) || c == '_'; }
static int is_name_char(int c) { return isalnum(c) || c == '_'; }

static void next_token(parser *p)
{
    const char *s = p->s;
    while (s[p->pos] == ' ' || s[p->pos] == '\t' || s[p->pos] == '\n' || s[p->pos] == '\r')
        p->pos++;
    p->tstart = p->pos;
    unsigned char c = (unsigned char)s[p->pos];
    if (c == '\0') {
        p->tt = T_END;
        p->tlen = 0;
        return;
    }
    if (isdigit(c) || (c == '.' && isdigit((unsigned char)s[p->pos + 1]))) {
        size_t i = p->pos;
        while (isdigit((unsigned char)s[i]))
            i++;
        if (s[i] == '.') {
            i++;
            while (isdigit((unsigned char)s[i]))
                i++;
        }
        if (s[i] == 'e' || s[i] == 'E') {
            size_t j = i + 1;
            if (s[j] == '+' || s[j] == '-')
                j++;
            if (!isdigit((unsigned char)s[j])) {
                p->pos = j;
                p->tt = T_BAD;
                fail(p, j, "exponent of a number needs digits");
                return;
            }
            while (isdigit((unsigned char)s[j]))
                j++;
            i = j;
        }
        if (is_name_start((unsigned char)s[i])) {
            p->tt = T_BAD;
            fail(p, i, "unexpected '%c' after a number", s[i]);
            return;
        }
        char buf[64];
        size_t n = i - p->pos;
        if (n >= sizeof buf) {
            p->tt = T_BAD;
            fail(p, p->pos, "number too long");
            return;
        }
        memcpy(buf, s + p->pos, n);
        buf[n] = '\0';
        p->tnum = strtod(buf, NULL);
        p->tt = T_NUM;
        p->tlen = n;
        p->pos = i;
        return;
    }
    if (is_name_start(c)) {
        size_t i = p->pos + 1;
        for (;;) {
            while (is_name_char((unsigned char)s[i]))
                i++;
            if (s[i] == '.' && is_name_char((unsigned char)s[i + 1])) {
                i++;
                continue;
            }
            break;
        }
        p->tt = T_NAME;
        p->tlen = i - p->pos;
        p->pos = i;
        return;
    }
    if (strchr("+-*/(),", c)) {
        p->tt = T_OP;
        p->top = (char)c;
        p->tlen = 1;
        p->pos++;
        return;
    }
    p->tt = T_BAD;
    if (isprint(c))
        fail(p, p->pos, "unexpected character '%c' (valid: numbers, names, + - * / ( ) ,)", c);
    else
        fail(p, p->pos, "unexpected byte 0x%02x (valid: numbers, names, + - * / ( ) ,)", c);
}

static int new_node(parser *p, node_type t, size_t offset)
{
    if (p->e->n_nodes >= OP_EXPR_MAX_NODES) {
        fail(p, offset, "expression too large (more than %d terms)", OP_EXPR_MAX_NODES);
        return -1;
    }
    node *n = &p->e->nodes[p->e->n_nodes];
    memset(n, 0, sizeof *n);
    n->type = t;
    n->column = (int)offset + 1;
    n->first = n->next = n->second = -1;
    return p->e->n_nodes++;
}

static int intern_name(parser *p, const char *s, size_t len, size_t offset)
{
    op_expr *e = p->e;
    for (int i = 0; i < e->n_names; i++)
        if (strlen(e->names[i]) == len && memcmp(e->names[i], s, len) == 0)
            return i;
    char **nn = op_realloc(e->names, (size_t)(e->n_names + 1) * sizeof *nn);
    if (!nn) {
        fail(p, offset, "out of memory");
        return -1;
    }
    e->names = nn;
    int *nc = op_realloc(e->name_columns, (size_t)(e->n_names + 1) * sizeof *nc);
    if (!nc) {
        fail(p, offset, "out of memory");
        return -1;
    }
    e->name_columns = nc;
    char *copy = op_strndup(s, len);
    if (!copy) {
        fail(p, offset, "out of memory");
        return -1;
    }
    e->names[e->n_names] = copy;
    e->name_columns[e->n_names] = (int)offset + 1;
    return e->n_names++;
}

static int parse_expr(parser *p);

static int reduce_kind(const char *s, size_t len, char *op)
{
    static const struct {
        const char *name;
        char op;
    } fns[] = {{"sum", R_SUM}, {"avg", R_AVG}, {"avr", R_AVG}, {"mean", R_AVG}, {"min", R_MIN}, {"max", R_MAX}};
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++)
        if (strlen(fns[i].name) == len && memcmp(fns[i].name, s, len) == 0) {
            *op = fns[i].op;
            return 1;
        }
    return 0;
}

static int parse_call(parser *p, size_t name_off, size_t name_len)
{
    const char *fname = p->s + name_off;
    char rop = 0;
    int is_reduce_kw = (name_len == 6 && memcmp(fname, "reduce", 6) == 0);
    int is_abs = (name_len == 3 && memcmp(fname, "abs", 3) == 0);
    if (!is_reduce_kw && !is_abs && !reduce_kind(fname, name_len, &rop)) {
        fail(p, name_off, "unknown function '%.*s' (valid: sum, avg, min, max, abs, reduce)", (int)name_len, fname);
        return -1;
    }
    next_token(p); /* past '(' */
    int n = new_node(p, is_abs ? N_ABS : N_REDUCE, name_off);
    if (n < 0)
        return -1;
    p->e->nodes[n].op = rop;
    int last = -1, nargs = 0;
    for (;;) {
        if (p->tt == T_OP && p->top == ')' && nargs == 0) {
            fail(p, p->tstart, "'%.*s' needs an argument", (int)name_len, fname);
            return -1;
        }
        if (is_reduce_kw && nargs == 1) {
            /* the second argument of reduce() is the operation name */
            if (p->tt != T_NAME || !reduce_kind(p->s + p->tstart, p->tlen, &rop)) {
                fail(p, p->tstart, "reduce() takes an operation: sum, avg, avr, min or max");
                return -1;
            }
            p->e->nodes[n].op = rop;
            next_token(p);
            nargs++;
            if (p->tt == T_OP && p->top == ',') {
                fail(p, p->tstart, "reduce() over selected dimensions is not supported (no dimensions here)");
                return -1;
            }
        } else {
            int a = parse_expr(p);
            if (a < 0)
                return -1;
            if (last < 0)
                p->e->nodes[n].first = a;
            else
                p->e->nodes[last].next = a;
            last = a;
            nargs++;
        }
        if (p->tt == T_OP && p->top == ',') {
            next_token(p);
            continue;
        }
        if (p->tt == T_OP && p->top == ')') {
            next_token(p);
            break;
        }
        if (!p->failed)
            fail(p, p->tstart, "expected ',' or ')' in the arguments of '%.*s'", (int)name_len, fname);
        return -1;
    }
    if (is_abs && nargs != 1) {
        fail(p, name_off, "abs() takes one argument");
        return -1;
    }
    if (is_reduce_kw && nargs != 2) {
        fail(p, name_off, "reduce() takes two arguments: reduce(expr, sum|avg|min|max)");
        return -1;
    }
    return n;
}

static int parse_primary(parser *p)
{
    if (p->failed)
        return -1;
    if (p->tt == T_NUM) {
        int n = new_node(p, N_NUM, p->tstart);
        if (n < 0)
            return -1;
        p->e->nodes[n].number = p->tnum;
        next_token(p);
        return n;
    }
    if (p->tt == T_NAME) {
        size_t off = p->tstart, len = p->tlen;
        next_token(p);
        if (p->tt == T_OP && p->top == '(')
            return parse_call(p, off, len);
        int n = new_node(p, N_NAME, off);
        if (n < 0)
            return -1;
        int idx = intern_name(p, p->s + off, len, off);
        if (idx < 0)
            return -1;
        p->e->nodes[n].name = idx;
        return n;
    }
    if (p->tt == T_OP && p->top == '(') {
        size_t open = p->tstart;
        next_token(p);
        int n = parse_expr(p);
        if (n < 0)
            return -1;
        if (!(p->tt == T_OP && p->top == ')')) {
            if (p->tt == T_END)
                fail(p, p->tstart, "missing ')' for the '(' at column %zu", open + 1);
            else
                fail(p, p->tstart, "expected ')'");
            return -1;
        }
        next_token(p);
        return n;
    }
    if (p->tt == T_END)
        fail(p, p->tstart, "expression ends where a number, name or '(' was expected");
    else if (p->tt == T_OP)
        fail(p, p->tstart, "unexpected '%c' where a number, name or '(' was expected", p->top);
    return -1;
}

static int parse_unary(parser *p)
{
    if (++p->depth > OP_EXPR_MAX_DEPTH) {
        fail(p, p->tstart, "expression nested too deeply (more than %d levels)", OP_EXPR_MAX_DEPTH);
        return -1;
    }
    int r;
    if (p->tt == T_OP && (p->top == '-' || p->top == '+')) {
        char op = p->top;
        size_t off = p->tstart;
        next_token(p);
        int c = parse_unary(p);
        if (c < 0) {
            r = -1;
        } else if (op == '+') {
            r = c;
        } else {
            r = new_node(p, N_NEG, off);
            if (r >= 0)
                p->e->nodes[r].first = c;
        }
    } else {
        r = parse_primary(p);
    }
    p->depth--;
    return r;
}

static int parse_term(parser *p)
{
    int l = parse_unary(p);
    while (l >= 0 && p->tt == T_OP && (p->top == '*' || p->top == '/')) {
        char op = p->top;
        size_t off = p->tstart;
        next_token(p);
        int r = parse_unary(p);
        if (r < 0)
            return -1;
        int n = new_node(p, N_BIN, off);
        if (n < 0)
            return -1;
        p->e->nodes[n].op = op;
        p->e->nodes[n].first = l;
        p->e->nodes[n].second = r;
        l = n;
    }
    return l;
}

static int parse_expr(parser *p)
{
    if (++p->depth > OP_EXPR_MAX_DEPTH) {
        fail(p, p->tstart, "expression nested too deeply (more than %d levels)", OP_EXPR_MAX_DEPTH);
        return -1;
    }
    int l = parse_term(p);
    while (l >= 0 && p->tt == T_OP && (p->top == '+' || p->top == '-')) {
        char op = p->top;
        size_t off = p->tstart;
        next_token(p);
        int r = parse_term(p);
        if (r < 0) {
            l = -1;
            break;
        }
        int n = new_node(p, N_BIN, off);
        if (n < 0) {
            l = -1;
            break;
        }
        p->e->nodes[n].op = op;
        p->e->nodes[n].first = l;
        p->e->nodes[n].second = r;
        l = n;
    }
    p->depth--;
    return l;
}

op_expr *op_expr_parse(const char *text, op_expr_error *err)
{
    op_expr_error dummy;
    if (!err)
        err = &dummy;
    err->column = 0;
    err->message[0] = '\0';
    if (!text) {
        snprintf(err->message, sizeof err->message, "no expression");
        return NULL;
    }
    size_t len = strlen(text);
    if (len > OP_EXPR_MAX_LEN) {
        err->column = OP_EXPR_MAX_LEN + 1;
        snprintf(err->message, sizeof err->message, "expression longer than %d characters", OP_EXPR_MAX_LEN);
        return NULL;
    }
    op_expr *e = op_calloc(1, sizeof *e);
    if (!e || !(e->text = op_strdup(text)) || !(e->nodes = op_calloc(OP_EXPR_MAX_NODES, sizeof *e->nodes))) {
        op_expr_free(e);
        snprintf(err->message, sizeof err->message, "out of memory");
        return NULL;
    }
    parser p = {.s = e->text, .e = e, .err = err};
    next_token(&p);
    if (p.tt == T_END && !p.failed) {
        fail(&p, p.tstart, "empty expression");
    } else {
        e->root = parse_expr(&p);
        if (!p.failed && p.tt != T_END) {
            if (p.tt == T_OP && p.top == ')')
                fail(&p, p.tstart, "')' without a matching '('");
            else
                fail(&p, p.tstart, "expected an operator (+ - * /) before this");
        }
    }
    if (p.failed || e->root < 0) {
        if (!p.failed)
            fail(&p, p.tstart, "syntax error");
        op_expr_free(e);
        return NULL;
    }
    return e;
}

void op_expr_free(op_expr *e)
{
    if (!e)
        return;
    for (int i = 0; i < e->n_names; i++)
        op_free(e->names[i]);
    op_free(e->names);
    op_free(e->name_columns);
    op_free(e->nodes);
    op_free(e->text);
    op_free(e);
}

const char *op_expr_text(const op_expr *e) { return e ? e->text : ""; }
size_t op_expr_num_names(const op_expr *e) { return e ? (size_t)e->n_names : 0; }
const char *op_expr_name(const op_expr *e, size_t i) { return (e && i < (size_t)e->n_names) ? e->names[i] : NULL; }
int op_expr_name_column(const op_expr *e, size_t i)
{
    return (e && i < (size_t)e->n_names) ? e->name_columns[i] : 0;
}

/* ---- evaluation ------------------------------------------------------------------------- */

typedef struct vec {
    size_t n;
    double *v;
} vec;

typedef struct evalctx {
    const op_expr *e;
    op_expr_lookup_fn lookup;
    void *data;
    op_expr_error *err;
} evalctx;

static int eval_fail(evalctx *c, int column, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int eval_fail(evalctx *c, int column, const char *fmt, ...)
{
    if (c->err && c->err->message[0] == '\0') {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err->message, sizeof c->err->message, fmt, ap);
        va_end(ap);
        c->err->column = column;
    }
    return -1;
}

static int vec_alloc(evalctx *c, vec *out, size_t n, int column)
{
    if (n == 0 || n > OP_EXPR_MAX_INSTANCES)
        return eval_fail(c, column, "a value has %zu instances (1..%d allowed)", n, OP_EXPR_MAX_INSTANCES);
    out->v = op_malloc(n * sizeof(double));
    if (!out->v)
        return eval_fail(c, column, "out of memory");
    out->n = n;
    return 0;
}

static double safe_div(double a, double b) { return b == 0.0 ? 0.0 : a / b; }

static int eval_node(evalctx *c, int idx, vec *out)
{
    const node *nd = &c->e->nodes[idx];
    out->n = 0;
    out->v = NULL;
    switch (nd->type) {
    case N_NUM:
        if (vec_alloc(c, out, 1, nd->column))
            return -1;
        out->v[0] = nd->number;
        return 0;
    case N_NAME: {
        const double *vals = NULL;
        size_t n = 0;
        const char *name = c->e->names[nd->name];
        if (c->lookup(name, &vals, &n, c->data) != 0 || !vals)
            return eval_fail(c, nd->column, "unknown name '%s'", name);
        if (vec_alloc(c, out, n, nd->column))
            return -1;
        memcpy(out->v, vals, n * sizeof(double));
        return 0;
    }
    case N_NEG:
    case N_ABS:
        if (eval_node(c, nd->first, out))
            return -1;
        for (size_t i = 0; i < out->n; i++)
            out->v[i] = nd->type == N_NEG ? -out->v[i] : fabs(out->v[i]);
        return 0;
    case N_BIN: {
        vec a, b;
        if (eval_node(c, nd->first, &a))
            return -1;
        if (eval_node(c, nd->second, &b)) {
            op_free(a.v);
            return -1;
        }
        if (a.n != b.n && a.n != 1 && b.n != 1) {
            op_free(a.v);
            op_free(b.v);
            return eval_fail(c, nd->column, "operands of '%c' have %zu and %zu instances", nd->op, a.n, b.n);
        }
        size_t n = a.n > b.n ? a.n : b.n;
        if (vec_alloc(c, out, n, nd->column)) {
            op_free(a.v);
            op_free(b.v);
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            double x = a.v[a.n == 1 ? 0 : i], y = b.v[b.n == 1 ? 0 : i];
            switch (nd->op) {
            case '+': out->v[i] = x + y; break;
            case '-': out->v[i] = x - y; break;
            case '*': out->v[i] = x * y; break;
            default: out->v[i] = safe_div(x, y); break;
            }
        }
        op_free(a.v);
        op_free(b.v);
        return 0;
    }
    case N_REDUCE: {
        double acc = 0;
        size_t count = 0;
        for (int ch = nd->first; ch >= 0; ch = c->e->nodes[ch].next) {
            vec a;
            if (eval_node(c, ch, &a))
                return -1;
            for (size_t i = 0; i < a.n; i++, count++) {
                double x = a.v[i];
                if (count == 0)
                    acc = x;
                else if (nd->op == R_MIN)
                    acc = x < acc ? x : acc;
                else if (nd->op == R_MAX)
                    acc = x > acc ? x : acc;
                else
                    acc += x;
            }
            op_free(a.v);
        }
        if (nd->op == R_AVG && count > 0)
            acc /= (double)count;
        if (vec_alloc(c, out, 1, nd->column))
            return -1;
        out->v[0] = acc;
        return 0;
    }
    }
    return eval_fail(c, nd->column, "internal error: bad node");
}

int op_expr_eval(const op_expr *e, op_expr_lookup_fn lookup, void *data, double *out, size_t max_out,
                 size_t *n_out, op_expr_error *err)
{
    op_expr_error dummy;
    if (!err)
        err = &dummy;
    err->column = 0;
    err->message[0] = '\0';
    if (!e || !lookup || !out || !n_out) {
        snprintf(err->message, sizeof err->message, "invalid argument");
        return -1;
    }
    evalctx c = {.e = e, .lookup = lookup, .data = data, .err = err};
    vec r;
    if (eval_node(&c, e->root, &r))
        return -1;
    if (r.n > max_out) {
        op_free(r.v);
        snprintf(err->message, sizeof err->message, "result has %zu instances, room for %zu", r.n, max_out);
        return -1;
    }
    memcpy(out, r.v, r.n * sizeof(double));
    *n_out = r.n;
    op_free(r.v);
    return 0;
}

int op_expr_eval_scalar(const op_expr *e, op_expr_lookup_fn lookup, void *data, double *out, op_expr_error *err)
{
    op_expr_error dummy;
    if (!err)
        err = &dummy;
    err->column = 0;
    err->message[0] = '\0';
    if (!e || !lookup || !out) {
        snprintf(err->message, sizeof err->message, "invalid argument");
        return -1;
    }
    evalctx c = {.e = e, .lookup = lookup, .data = data, .err = err};
    vec r;
    if (eval_node(&c, e->root, &r))
        return -1;
    double s = 0;
    for (size_t i = 0; i < r.n; i++)
        s += r.v[i];
    op_free(r.v);
    *out = s;
    return 0;
}

char *op_expr_format_error(const char *what, const char *text, const op_expr_error *err, char *buf, size_t len)
{
    if (!buf || len == 0)
        return buf;
    if (!text)
        text = "";
    if (!err || err->column <= 0) {
        snprintf(buf, len, "%s: %s", what ? what : "expression", err ? err->message : "error");
        return buf;
    }
    /* Show at most 100 characters around the column so the caret stays on screen. */
    size_t tl = strlen(text);
    size_t col = (size_t)err->column - 1;
    size_t start = col > 60 ? col - 60 : 0;
    size_t show = tl - (start < tl ? start : tl);
    if (show > 100)
        show = 100;
    char line[128];
    size_t k = 0;
    for (size_t i = 0; i < show && k + 1 < sizeof line; i++) {
        char ch = text[start + i];
        line[k++] = (ch == '\t' || ch == '\n' || ch == '\r' || !isprint((unsigned char)ch)) ? ' ' : ch;
    }
    line[k] = '\0';
    char caret[128];
    size_t pad = col - start;
    if (pad > sizeof caret - 2)
        pad = sizeof caret - 2;
    memset(caret, ' ', pad);
    caret[pad] = '^';
    caret[pad + 1] = '\0';
    snprintf(buf, len, "%s: %s at column %d\n    %s%s\n    %s%s", what ? what : "expression", err->message,
             err->column, start ? "..." : "", line, start ? "   " : "", caret);
    return buf;
}
