/* bench_interp_lib.c — a small expression interpreter: the representative call-heavy program of
 * the instrumentation benchmark (bench_interp.c runs it; bench_instrument.py measures it).
 *
 * Each round lexes and parses a generated program (assignments of arithmetic expressions over
 * 26 variables, with calls of three built-in functions) into an AST by recursive descent,
 * evaluates it many times, and sorts the variables' values with qsort and a comparison
 * callback. Its functions have the sizes such code has (a lexer with loops, parse functions of
 * 30-100 instructions, a recursive evaluator, one-line helpers) and are called millions of
 * times a second. The functions are global so that, built as a shared library, their calls to
 * each other go through the PLT (what the LD_AUDIT method sees). */
#include <stdlib.h>
#include <string.h>

#include "bench_interp.h"

typedef enum { T_END, T_NUM, T_VAR, T_OP, T_LP, T_RP, T_COMMA, T_ASSIGN, T_SEMI, T_FN } tok_kind;
typedef enum { N_NUM, N_VAR, N_BIN, N_NEG, N_CALL } node_kind;

typedef struct node {
    node_kind kind;
    int op;    /* N_BIN: '+', '-', '*', '/', '%'; N_CALL: 0 min, 1 max, 2 mix */
    long value; /* N_NUM */
    int var;   /* N_VAR */
    struct node *a, *b;
} node;

typedef struct lexer {
    const char *p;
    tok_kind kind;
    long num;
    int var, op;
} lexer;

typedef struct program {
    node *pool;
    int n_nodes, cap_nodes;
    node *stmt_expr[BENCH_INTERP_MAX_STMTS];
    int stmt_var[BENCH_INTERP_MAX_STMTS];
    int n_stmts;
} program;

void lex_next(lexer *lx)
{
    while (*lx->p == ' ' || *lx->p == '\n' || *lx->p == '\t') lx->p++;
    char c = *lx->p;
    if (!c) {
        lx->kind = T_END;
    } else if (c >= '0' && c <= '9') {
        long v = 0;
        while (*lx->p >= '0' && *lx->p <= '9') v = v * 10 + (*lx->p++ - '0');
        lx->kind = T_NUM;
        lx->num = v;
    } else if (c >= 'a' && c <= 'z') {
        if (!strncmp(lx->p, "min(", 4) || !strncmp(lx->p, "max(", 4) || !strncmp(lx->p, "mix(", 4)) {
            lx->kind = T_FN;
            lx->op = lx->p[1] == 'i' ? (lx->p[2] == 'n' ? 0 : 2) : 1;
            lx->p += 3;
        } else {
            lx->kind = T_VAR;
            lx->var = c - 'a';
            lx->p++;
        }
    } else {
        lx->p++;
        switch (c) {
        case '(': lx->kind = T_LP; break;
        case ')': lx->kind = T_RP; break;
        case ',': lx->kind = T_COMMA; break;
        case '=': lx->kind = T_ASSIGN; break;
        case ';': lx->kind = T_SEMI; break;
        default: lx->kind = T_OP; lx->op = c; break;
        }
    }
}

node *node_new(program *pg, node_kind kind)
{
    if (pg->n_nodes == pg->cap_nodes) abort();
    node *n = &pg->pool[pg->n_nodes++];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    return n;
}

node *parse_expr(program *pg, lexer *lx);

node *parse_primary(program *pg, lexer *lx)
{
    node *n;
    if (lx->kind == T_NUM) {
        n = node_new(pg, N_NUM);
        n->value = lx->num;
        lex_next(lx);
    } else if (lx->kind == T_VAR) {
        n = node_new(pg, N_VAR);
        n->var = lx->var;
        lex_next(lx);
    } else if (lx->kind == T_FN) {
        n = node_new(pg, N_CALL);
        n->op = lx->op;
        lex_next(lx); /* ( */
        lex_next(lx);
        n->a = parse_expr(pg, lx);
        lex_next(lx); /* , */
        n->b = parse_expr(pg, lx);
        lex_next(lx); /* ) */
    } else if (lx->kind == T_LP) {
        lex_next(lx);
        n = parse_expr(pg, lx);
        lex_next(lx); /* ) */
    } else if (lx->kind == T_OP && lx->op == '-') {
        lex_next(lx);
        n = node_new(pg, N_NEG);
        n->a = parse_primary(pg, lx);
    } else {
        abort();
    }
    return n;
}

node *parse_term(program *pg, lexer *lx)
{
    node *n = parse_primary(pg, lx);
    while (lx->kind == T_OP && (lx->op == '*' || lx->op == '/' || lx->op == '%')) {
        node *b = node_new(pg, N_BIN);
        b->op = lx->op;
        b->a = n;
        lex_next(lx);
        b->b = parse_primary(pg, lx);
        n = b;
    }
    return n;
}

node *parse_expr(program *pg, lexer *lx)
{
    node *n = parse_term(pg, lx);
    while (lx->kind == T_OP && (lx->op == '+' || lx->op == '-')) {
        node *b = node_new(pg, N_BIN);
        b->op = lx->op;
        b->a = n;
        lex_next(lx);
        b->b = parse_term(pg, lx);
        n = b;
    }
    return n;
}

void parse_program(program *pg, const char *src)
{
    lexer lx = {.p = src};
    pg->n_nodes = 0;
    pg->n_stmts = 0;
    lex_next(&lx);
    while (lx.kind == T_VAR && pg->n_stmts < BENCH_INTERP_MAX_STMTS) {
        pg->stmt_var[pg->n_stmts] = lx.var;
        lex_next(&lx); /* = */
        lex_next(&lx);
        pg->stmt_expr[pg->n_stmts++] = parse_expr(pg, &lx);
        lex_next(&lx); /* ; */
    }
}

long builtin(int which, long x, long y)
{
    switch (which) {
    case 0: return x < y ? x : y;
    case 1: return x > y ? x : y;
    default: return (x * 31 + y) ^ (x >> 3);
    }
}

long eval(const node *n, const long *env)
{
    switch (n->kind) {
    case N_NUM: return n->value;
    case N_VAR: return env[n->var];
    case N_NEG: return -eval(n->a, env);
    case N_CALL: return builtin(n->op, eval(n->a, env), eval(n->b, env));
    case N_BIN: {
        long x = eval(n->a, env), y = eval(n->b, env);
        switch (n->op) {
        case '+': return x + y;
        case '-': return x - y;
        case '*': return (x * y) % 1000003;
        case '/': return y ? x / y : x;
        default: return y ? x % y : x;
        }
    }
    }
    return 0;
}

int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

long run_program(const program *pg, long *env, int times)
{
    long acc = 0;
    for (int t = 0; t < times; t++)
        for (int i = 0; i < pg->n_stmts; i++) {
            long v = eval(pg->stmt_expr[i], env) % 1000003;
            env[pg->stmt_var[i]] = v;
            acc += v;
        }
    return acc;
}

/* The source: n_stmts random assignments (a fixed generator, so every run is the same). */
char *make_source(int n_stmts, unsigned seed)
{
    size_t cap = (size_t)n_stmts * 96 + 1, len = 0;
    char *s = malloc(cap);
    if (!s) abort();
    static const char ops[] = "+-*%+-";
    for (int i = 0; i < n_stmts; i++) {
        seed = seed * 1103515245u + 12345u;
        int terms = 2 + (int)(seed >> 16) % 4;
        len += (size_t)snprintf(s + len, cap - len, "%c = ", 'a' + (int)(seed >> 8) % 26);
        for (int t = 0; t < terms; t++) {
            seed = seed * 1103515245u + 12345u;
            unsigned r = seed >> 12;
            if (t) len += (size_t)snprintf(s + len, cap - len, " %c ", ops[r % 6]);
            if (r % 7 == 0)
                len += (size_t)snprintf(s + len, cap - len, "mix(%c, %u)", 'a' + (int)(r >> 3) % 26, r % 97 + 1);
            else if (r % 5 == 0)
                len += (size_t)snprintf(s + len, cap - len, "(%c - %u)", 'a' + (int)(r >> 5) % 26, r % 13 + 1);
            else if (r % 2)
                len += (size_t)snprintf(s + len, cap - len, "%c", 'a' + (int)(r >> 4) % 26);
            else
                len += (size_t)snprintf(s + len, cap - len, "%u", r % 1000 + 1);
        }
        len += (size_t)snprintf(s + len, cap - len, ";\n");
    }
    return s;
}

long interp_run(int rounds, long *calls_hint)
{
    program pg = {.cap_nodes = BENCH_INTERP_MAX_STMTS * 24};
    pg.pool = malloc(sizeof(node) * (size_t)pg.cap_nodes);
    if (!pg.pool) abort();
    char *src = make_source(BENCH_INTERP_STMTS, 12345u);
    long env[26], acc = 0;
    for (int i = 0; i < 26; i++) env[i] = i + 1;
    for (int r = 0; r < rounds; r++) {
        parse_program(&pg, src);
        acc += run_program(&pg, env, 8);
        long sorted[26];
        memcpy(sorted, env, sizeof sorted);
        qsort(sorted, 26, sizeof sorted[0], cmp_long);
        acc += sorted[13];
    }
    *calls_hint = pg.n_nodes;
    free(src);
    free(pg.pool);
    return acc;
}
