/* expr.h — the derived-metric expression language: parser, evaluator, error display.
 *
 * Grammar (docs/counters.md, "Expressions"):
 *     expr    := term (('+' | '-') term)*
 *     term    := unary (('*' | '/') unary)*
 *     unary   := ('-' | '+') unary | primary
 *     primary := NUMBER | NAME | NAME '(' expr (',' expr)* ')' | '(' expr ')'
 *     NUMBER  := digits ['.' digits] [('e'|'E') ['+'|'-'] digits]   (also '.5')
 *     NAME    := [A-Za-z_][A-Za-z0-9_]* ('.' [A-Za-z0-9_]+)*          (NVPW names have dots)
 * Functions: sum, avg (alias avr), min, max — each reduces every instance of all its arguments
 * to one value; abs(x) element-wise; reduce(x, sum|avg|avr|min|max) as in ROCprofiler.
 * Values are vectors of instances; + - * / work element-wise, a one-instance side broadcasts.
 * x / 0 is 0 (a metric over an empty range reads 0, as the vendor tools show it).
 *
 * Invariants:
 *  (1) parsing never recurses deeper than OP_EXPR_MAX_DEPTH and never reads past the text's
 *      terminating NUL: any byte string is safe input (tests/counters/fuzz_expr.c);
 *  (2) an error names a 1-based column inside the text (or one past its end);
 *  (3) evaluation allocates at most OP_EXPR_MAX_INSTANCES doubles per intermediate value. */
#ifndef OMNIPROF_SDK_COUNTERS_EXPR_H
#define OMNIPROF_SDK_COUNTERS_EXPR_H

#include <stddef.h>

#define OP_EXPR_MAX_LEN 4096
#define OP_EXPR_MAX_DEPTH 64
#define OP_EXPR_MAX_NODES 1024
#define OP_EXPR_MAX_INSTANCES 65536

typedef struct op_expr op_expr;

typedef struct op_expr_error {
    int column;         /* 1-based; 0 when the error has no position (evaluation) */
    char message[200];
} op_expr_error;

/* Parse `text`. Returns NULL and fills *err on a syntax error or out of memory. */
op_expr *op_expr_parse(const char *text, op_expr_error *err);
void op_expr_free(op_expr *e);
/* The source text (a copy). */
const char *op_expr_text(const op_expr *e);

/* Distinct names the expression references (not function names), in first-use order. */
size_t op_expr_num_names(const op_expr *e);
const char *op_expr_name(const op_expr *e, size_t i);
/* Column (1-based) of the first use of name i, for "unknown name" errors. */
int op_expr_name_column(const op_expr *e, size_t i);

/* Returns 0 and points *values at n values of `name`, or -1 if the name is unknown. */
typedef int (*op_expr_lookup_fn)(const char *name, const double **values, size_t *n, void *data);

/* Evaluate into out[0..*n_out). max_out: capacity of out. Returns 0, or -1 with err set
 * (unknown name, instance counts that differ, too many instances, out of memory). */
int op_expr_eval(const op_expr *e, op_expr_lookup_fn lookup, void *data, double *out, size_t max_out,
                 size_t *n_out, op_expr_error *err);

/* Evaluate to one number: a vector result is summed (the value rocprofv3's CSV reports). */
int op_expr_eval_scalar(const op_expr *e, op_expr_lookup_fn lookup, void *data, double *out, op_expr_error *err);

/* "<what>: <message> at column C\n    <text>\n    <spaces>^" into buf. Returns buf. */
char *op_expr_format_error(const char *what, const char *text, const op_expr_error *err, char *buf, size_t len);

#endif /* OMNIPROF_SDK_COUNTERS_EXPR_H */
