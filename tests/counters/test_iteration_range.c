/* test_iteration_range.c — --kernel-iteration-range parsing (src/sdk/counters/iteration_range.c):
 * rocprofv3's bracket form and the plain form, membership, and each error naming the item. */
#include "check.h"
#include "sdk/counters/counters_internal.h"

static void bad(const char *text, const char *msg)
{
    op_counters_range r[4];
    size_t n = 99;
    char err[256] = "";
    CHECK_EQ_INT(op_counters_parse_iteration_range(text, r, 4, &n, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, msg);
}

int main(void)
{
    op_counters_range r[8];
    size_t n = 0;
    char err[256];
    CHECK_EQ_INT(op_counters_parse_iteration_range("[1, [3-5]]", r, 8, &n, err, sizeof err), 0);
    CHECK_EQ_INT(n, 2);
    CHECK(r[0].lo == 1 && r[0].hi == 1 && r[1].lo == 3 && r[1].hi == 5);
    CHECK_EQ_INT(op_counters_range_contains(r, n, 1), 1);
    CHECK_EQ_INT(op_counters_range_contains(r, n, 2), 0);
    CHECK_EQ_INT(op_counters_range_contains(r, n, 5), 1);
    CHECK_EQ_INT(op_counters_range_contains(r, n, 6), 0);
    CHECK_EQ_INT(op_counters_parse_iteration_range("2,4 - 7, 10", r, 8, &n, err, sizeof err), 0);
    CHECK_EQ_INT(n, 3);
    CHECK(r[1].lo == 4 && r[1].hi == 7 && r[2].lo == 10 && r[2].hi == 10);
    CHECK_EQ_INT(op_counters_parse_iteration_range("", r, 8, &n, err, sizeof err), 0);
    CHECK_EQ_INT(n, 0);
    CHECK_EQ_INT(op_counters_range_contains(r, 0, 12345), 1); /* no ranges: every launch */
    CHECK_EQ_INT(op_counters_parse_iteration_range(NULL, r, 8, &n, err, sizeof err), 0);
    /* The parser is common/number.c's id lists (tests/common/test_number.c tests it in full). */
    bad("[1, x]", "'x' is not an id");
    bad("3-", "'3-' is not an id");
    bad("0", "below the first id, 1");
    bad("5-3", "reversed range");
    bad("1,2,3,4,5", "more than 4 ids or ranges");
    bad("2x", "'2x' is not an id");
    bad("99999999999999999999999", "too large");
    return CHECK_DONE();
}
