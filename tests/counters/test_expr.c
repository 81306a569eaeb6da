/* test_expr.c — the derived-metric expression language (src/sdk/counters/expr.c): precedence,
 * functions over instances, broadcasting, division by zero, every syntax error with its
 * column, evaluation errors, the caret display and the size limits. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sdk/counters/expr.h"

static const double k_vec3[3] = {1, 2, 3};
static const double k_vec2[2] = {10, 20};
static const double k_bytes = 134217728.0;
static const double k_ns = 76000.0;

static int lookup(const char *name, const double **v, size_t *n, void *data)
{
    (void)data;
    if (!strcmp(name, "v3")) { *v = k_vec3; *n = 3; return 0; }
    if (!strcmp(name, "v2")) { *v = k_vec2; *n = 2; return 0; }
    if (!strcmp(name, "dram__bytes_read.sum")) { *v = &k_bytes; *n = 1; return 0; }
    if (!strcmp(name, "gpu__time_duration.sum")) { *v = &k_ns; *n = 1; return 0; }
    if (!strcmp(name, "TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed")) { *v = &k_ns; *n = 1; return 0; }
    return -1;
}

static double eval1(const char *text)
{
    op_expr_error e;
    op_expr *x = op_expr_parse(text, &e);
    if (!x) {
        fprintf(stderr, "parse failed: %s: %s at %d\n", text, e.message, e.column);
        return NAN;
    }
    double out = NAN;
    if (op_expr_eval_scalar(x, lookup, NULL, &out, &e))
        fprintf(stderr, "eval failed: %s: %s\n", text, e.message);
    op_expr_free(x);
    return out;
}

static size_t evalv(const char *text, double *out, size_t max)
{
    op_expr *x = op_expr_parse(text, NULL);
    size_t n = 0;
    if (!x || op_expr_eval(x, lookup, NULL, out, max, &n, NULL))
        n = 0;
    op_expr_free(x);
    return n;
}

/* Expect a syntax error at `column` whose message contains `msg`. */
static void syntax_error(const char *text, int column, const char *msg)
{
    op_expr_error e;
    op_expr *x = op_expr_parse(text, &e);
    CHECK(x == NULL);
    op_expr_free(x);
    if (e.column != column)
        fprintf(stderr, "  for '%s': column %d (message '%s')\n", text, e.column, e.message);
    CHECK_EQ_INT(e.column, column);
    CHECK_STR_CONTAINS(e.message, msg);
}

int main(void)
{
    /* arithmetic and precedence */
    CHECK_CLOSE(eval1("1 + 2 * 3"), 7);
    CHECK_CLOSE(eval1("(1 + 2) * 3"), 9);
    CHECK_CLOSE(eval1("10 - 4 - 3"), 3);          /* left associative */
    CHECK_CLOSE(eval1("64 / 4 / 2"), 8);
    CHECK_CLOSE(eval1("-2 * -3"), 6);
    CHECK_CLOSE(eval1("+5 - -5"), 10);
    CHECK_CLOSE(eval1("1.5e3 + .5 + 2E-1"), 1500.7);
    CHECK_CLOSE(eval1("7 / 0"), 0);               /* documented: x / 0 reads 0 */
    /* NVPW names with dots, and a dotted prefix */
    CHECK_CLOSE(eval1("dram__bytes_read.sum / gpu__time_duration.sum"), 134217728.0 / 76000.0);
    CHECK_CLOSE(eval1("TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed * 2"), 152000);
    /* instances: reductions, broadcast, element-wise */
    CHECK_CLOSE(eval1("sum(v3)"), 6);
    CHECK_CLOSE(eval1("avg(v3)"), 2);
    CHECK_CLOSE(eval1("avr(v3)"), 2);
    CHECK_CLOSE(eval1("max(v3)"), 3);
    CHECK_CLOSE(eval1("min(v3, 0.5)"), 0.5);
    CHECK_CLOSE(eval1("max(v3, v2)"), 20);
    CHECK_CLOSE(eval1("reduce(v3, sum) / reduce(v3, max)"), 2);
    CHECK_CLOSE(eval1("abs(-3) + abs(2)"), 5);
    double out[8];
    CHECK_EQ_INT(evalv("v3 * 2", out, 8), 3);
    CHECK_CLOSE(out[0], 2); CHECK_CLOSE(out[2], 6);
    CHECK_EQ_INT(evalv("v3 + v3", out, 8), 3);
    CHECK_CLOSE(out[1], 4);
    CHECK_EQ_INT(evalv("-v2", out, 8), 2);
    CHECK_CLOSE(out[1], -20);
    CHECK_EQ_INT(evalv("v3 * 2", out, 2), 0);     /* no room for 3 results */
    CHECK_CLOSE(eval1("v3"), 6);                    /* scalar view of a vector: its sum */

    /* names, in first-use order, with columns */
    op_expr *x = op_expr_parse("a + b.sum * a / c", NULL);
    CHECK(x != NULL);
    CHECK_EQ_INT(op_expr_num_names(x), 3);
    CHECK(!strcmp(op_expr_name(x, 0), "a"));
    CHECK(!strcmp(op_expr_name(x, 1), "b.sum"));
    CHECK(!strcmp(op_expr_name(x, 2), "c"));
    CHECK_EQ_INT(op_expr_name_column(x, 1), 5);
    CHECK_EQ_INT(op_expr_name_column(x, 2), 17);
    CHECK(op_expr_name(x, 3) == NULL);
    CHECK(!strcmp(op_expr_text(x), "a + b.sum * a / c"));
    /* evaluation errors: unknown name with its column */
    op_expr_error e;
    double v;
    CHECK(op_expr_eval_scalar(x, lookup, NULL, &v, &e) == -1);
    CHECK_STR_CONTAINS(e.message, "unknown name 'a'");
    CHECK_EQ_INT(e.column, 1);
    op_expr_free(x);
    x = op_expr_parse("v3 + v2", NULL);
    CHECK(op_expr_eval_scalar(x, lookup, NULL, &v, &e) == -1);
    CHECK_STR_CONTAINS(e.message, "3 and 2 instances");
    CHECK_EQ_INT(e.column, 4);
    op_expr_free(x);

    /* syntax errors and their columns */
    syntax_error("", 1, "empty expression");
    syntax_error("   ", 4, "empty expression");
    syntax_error("(1+2", 5, "missing ')'");
    syntax_error("1 + * 3", 5, "unexpected '*'");
    syntax_error("1 2", 3, "expected an operator");
    syntax_error("a b", 3, "expected an operator");
    syntax_error("1)", 2, "')' without a matching '('");
    syntax_error("foo(1)", 1, "unknown function 'foo'");
    syntax_error("sum()", 5, "needs an argument");
    syntax_error("sum(1,", 7, "expression ends");
    syntax_error("sum(1 2)", 7, "expected ',' or ')'");
    syntax_error("abs(1, 2)", 1, "abs() takes one argument");
    syntax_error("reduce(v3)", 1, "reduce() takes two arguments");
    syntax_error("reduce(v3, median)", 12, "reduce() takes an operation");
    syntax_error("reduce(v3, sum, [SE])", 15, "not supported");
    syntax_error("1.5e", 5, "exponent");
    syntax_error("3x", 2, "after a number");
    syntax_error("a $ b", 3, "unexpected character '$'");
    syntax_error("a \x01 b", 3, "unexpected byte 0x01");
    syntax_error("a +", 4, "expression ends");
    syntax_error("a.", 2, "unexpected character '.'"); /* a trailing dot is not part of a name */

    /* limits: nesting depth and length */
    char deep[300];
    memset(deep, '(', 200);
    deep[200] = '1';
    memset(deep + 201, ')', 98);
    deep[299] = '\0';
    x = op_expr_parse(deep, &e);
    CHECK(x == NULL);
    CHECK_STR_CONTAINS(e.message, "nested too deeply");
    char *big = malloc(OP_EXPR_MAX_LEN + 10);
    memset(big, '1', OP_EXPR_MAX_LEN + 5);
    big[OP_EXPR_MAX_LEN + 5] = '\0';
    CHECK(op_expr_parse(big, &e) == NULL);
    CHECK_STR_CONTAINS(e.message, "longer than");
    /* 1+1+...: more terms than nodes allowed */
    size_t k = 0;
    for (int i = 0; i < 1500 && k + 2 < OP_EXPR_MAX_LEN; i++) { big[k++] = '1'; big[k++] = '+'; }
    big[k++] = '1';
    big[k] = '\0';
    CHECK(op_expr_parse(big, &e) == NULL);
    CHECK_STR_CONTAINS(e.message, "too large");
    free(big);

    /* the caret display */
    char buf[512];
    x = op_expr_parse("dram__bytes_read.sum / / 2", &e);
    CHECK(x == NULL);
    op_expr_format_error("metric 'BW'", "dram__bytes_read.sum / / 2", &e, buf, sizeof buf);
    CHECK_STR_CONTAINS(buf, "metric 'BW': unexpected '/' where a number, name or '(' was expected at column 24");
    CHECK_STR_CONTAINS(buf, "\n    dram__bytes_read.sum / / 2\n                           ^");
    op_expr_error noerr = {0, "unknown name 'x'"};
    op_expr_format_error("eval", "x", &noerr, buf, sizeof buf);
    CHECK(!strcmp(buf, "eval: unknown name 'x'"));
    /* a long expression is shown around the column */
    char longexpr[400];
    memset(longexpr, 'a', 300);
    strcpy(longexpr + 300, " + * 1");
    CHECK(op_expr_parse(longexpr, &e) == NULL);
    CHECK_EQ_INT(e.column, 304);
    op_expr_format_error("x", longexpr, &e, buf, sizeof buf);
    const char *caret = strrchr(buf, '\n');
    CHECK(caret && strchr(caret, '^') && (size_t)(strchr(caret, '^') - caret - 1) == 4 + 3 + 60);

    CHECK(op_expr_parse(NULL, &e) == NULL);
    op_expr_free(NULL);
    return CHECK_DONE();
}
