/* fuzz_expr.c — libFuzzer harness of the counter expression parser and evaluator
 * (src/sdk/counters/expr.c; tests/fuzz/README.md says how harnesses are built and run).
 *
 * The input is an expression. It must parse or fail with a column inside the text (invariant
 * (2) of expr.h), and evaluate or fail, without crashing; names resolve to vectors of 1 to 5
 * instances (broadcast and mismatch), some names are unknown. */
#include "fuzz.h"
#include "sdk/counters/expr.h"

static int lookup(const char *name, const double **v, size_t *n, void *data)
{
    (void)data;
    static const double vals[5] = {1.5, -2, 0, 1e300, 7};
    size_t len = strlen(name);
    if (len % 7 == 0)
        return -1; /* some names are unknown */
    *v = vals;
    *n = 1 + len % 5; /* vectors of 1..5 instances: exercises broadcast and mismatch */
    return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 2 * OP_EXPR_MAX_LEN)
        size = 2 * OP_EXPR_MAX_LEN;
    char *text = fuzz_text(data, size);
    size_t len = strlen(text);
    op_expr_error e;
    op_expr *x = op_expr_parse(text, &e);
    if (!x) {
        FUZZ_CHECK((e.column >= 1 && (size_t)e.column <= len + 1) ||
                       (len > OP_EXPR_MAX_LEN && e.column == OP_EXPR_MAX_LEN + 1),
                   "error column %d outside the text (%zu bytes)", e.column, len); /* invariant (2) */
        char buf[512];
        op_expr_format_error("fuzz", text, &e, buf, sizeof buf);
    } else {
        double out[64];
        size_t n = 0;
        FUZZ_CHECK(op_expr_eval(x, lookup, NULL, out, 64, &n, &e) != 0 || n > 0, "evaluated to no value");
        double s;
        op_expr_eval_scalar(x, lookup, NULL, &s, &e);
        for (size_t i = 0; i < op_expr_num_names(x); i++)
            FUZZ_CHECK(op_expr_name(x, i) && op_expr_name_column(x, i) >= 1, "name %zu without text or column", i);
        op_expr_free(x);
    }
    free(text);
    return 0;
}
