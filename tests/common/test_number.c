/* test_number.c — the one number parser (src/common/number.c): integers and reals, what
 * strtod/strtoull would have let through (NaN, inf, hex floats, octal, wrap-around), ranges,
 * id lists, edit distance and suggestions (src/common/suggest.c). */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "common/number.h"
#include "common/suggest.h"

int main(void)
{
    double d;
    int64_t i;
    uint64_t u;
    /* sizes in messages: binary units, three significant digits */
    char fb[OP_FMT_BYTES_LEN];
    CHECK(!strcmp(op_fmt_bytes(fb, sizeof fb, 0), "0 B"));
    CHECK(!strcmp(op_fmt_bytes(fb, sizeof fb, 1023), "1023 B"));
    CHECK(!strcmp(op_fmt_bytes(fb, sizeof fb, 1536), "1.50 KiB"));
    CHECK(!strcmp(op_fmt_bytes(fb, sizeof fb, 12900000), "12.3 MiB"));
    CHECK(!strcmp(op_fmt_bytes(fb, sizeof fb, 300ull << 20), "300 MiB"));
    CHECK(!strcmp(op_fmt_bytes(fb, sizeof fb, 1288490189ull), "1.20 GiB"));
    CHECK(!strcmp(op_fmt_bytes(fb, sizeof fb, UINT64_MAX), "16.0 EiB"));
    CHECK(op_num_double("2.5", &d) == OP_NUM_OK && d == 2.5);
    CHECK(op_num_double(".5", &d) == OP_NUM_OK && d == 0.5);
    CHECK(op_num_double("-3e2", &d) == OP_NUM_OK && d == -300);
    CHECK(op_num_double("1e-400", &d) == OP_NUM_OK); /* underflow to 0 is a number */
    CHECK(op_num_double("nan", &d) == OP_NUM_NOT_FINITE);
    CHECK(op_num_double("-NaN", &d) == OP_NUM_NOT_FINITE);
    CHECK(op_num_double("inf", &d) == OP_NUM_NOT_FINITE);
    CHECK(op_num_double("Infinity", &d) == OP_NUM_NOT_FINITE);
    CHECK(op_num_double("1e300", &d) == OP_NUM_OK);
    CHECK(op_num_double("1e400", &d) == OP_NUM_OVERFLOW);
    CHECK(op_num_double("0x1p3", &d) == OP_NUM_SYNTAX);
    CHECK(op_num_double(" 1", &d) == OP_NUM_SYNTAX);
    CHECK(op_num_double("1 ", &d) == OP_NUM_SYNTAX);
    CHECK(op_num_double("", &d) == OP_NUM_EMPTY);
    CHECK(op_num_double("1e", &d) == OP_NUM_SYNTAX);
    CHECK(op_num_double(".", &d) == OP_NUM_SYNTAX);

    CHECK(op_num_i64("-42", &i) == OP_NUM_OK && i == -42);
    CHECK(op_num_i64("010", &i) == OP_NUM_OK && i == 10);
    CHECK(op_num_i64("0x10", &i) == OP_NUM_OK && i == 16);
    CHECK(op_num_i64("9223372036854775807", &i) == OP_NUM_OK && i == INT64_MAX);
    CHECK(op_num_i64("-9223372036854775808", &i) == OP_NUM_OK && i == INT64_MIN);
    CHECK(op_num_i64("9223372036854775808", &i) == OP_NUM_OVERFLOW);
    CHECK(op_num_i64("1.5", &i) == OP_NUM_SYNTAX);
    CHECK(op_num_i64("inf", &i) == OP_NUM_NOT_FINITE);
    CHECK(op_num_u64("18446744073709551615", &u) == OP_NUM_OK && u == UINT64_MAX);
    CHECK(op_num_u64("18446744073709551616", &u) == OP_NUM_OVERFLOW);
    CHECK(op_num_u64("-1", &u) == OP_NUM_NEGATIVE);
    CHECK(op_num_u64("-0", &u) == OP_NUM_OK && u == 0);
    CHECK(op_num_u64("+7", &u) == OP_NUM_OK && u == 7);
    CHECK(op_num_u64("0x", &u) == OP_NUM_SYNTAX);
    CHECK(strstr(op_num_reason(OP_NUM_NOT_FINITE), "NaN") != NULL);

    op_num_range r;
    CHECK(op_num_range_parse("[0,60000]", &r) == 0 && op_num_range_has(&r, 0) && op_num_range_has(&r, 60000));
    CHECK(!op_num_range_has(&r, 60000.5) && !op_num_range_has(&r, -1));
    CHECK(op_num_range_parse("(0,1)", &r) == 0 && !op_num_range_has(&r, 0) && !op_num_range_has(&r, 1));
    CHECK(op_num_range_has(&r, 0.5));
    CHECK(op_num_range_parse("[2,1]", &r) == -1);
    CHECK(op_num_range_parse("(0,0E6]", &r) == -1 && op_num_range_parse("[1,1)", &r) == -1); /* empty (fuzz.settings) */
    CHECK(op_num_range_parse("[1,1]", &r) == 0 && op_num_range_has(&r, 1));
    CHECK(op_num_range_parse("0..1", &r) == -1);
    CHECK(op_num_range_parse("[nan,1]", &r) == -1);

    char why[256];
    CHECK(op_num_parse_checked("5", OP_NUM_TYPE_UINT, "[1,4]", &d, NULL, &u, why, sizeof why) == OP_NUM_RANGE);
    CHECK(strstr(why, "expected a non-negative integer in [1,4] (out of range)") != NULL);
    CHECK(op_num_parse_checked("3", OP_NUM_TYPE_UINT, "[1,4]", &d, NULL, &u, why, sizeof why) == 0 && u == 3 && d == 3);
    CHECK(op_num_parse_checked("nan", OP_NUM_TYPE_DOUBLE, "(0,10]", &d, NULL, NULL, why, sizeof why) ==
          OP_NUM_NOT_FINITE);
    CHECK(strstr(why, "expected a number in (0,10] (NaN and infinity are not accepted)") != NULL);
    CHECK(op_num_parse_checked("-2", OP_NUM_TYPE_INT, NULL, &d, &i, NULL, why, sizeof why) == 0 && i == -2);

    CHECK(op_idlist_validate("0,2,5-8", why, sizeof why) == 0);
    CHECK(op_idlist_validate("all", why, sizeof why) == 0 && op_idlist_validate("", why, sizeof why) == 0);
    CHECK(op_idlist_validate("5-1", why, sizeof why) == -1 && strstr(why, "reversed range") && strstr(why, "1-5"));
    CHECK(op_idlist_validate("3-", why, sizeof why) == -1 && strstr(why, "'3-'"));
    CHECK(op_idlist_validate("-3", why, sizeof why) == -1);
    CHECK(op_idlist_validate("1-2-3", why, sizeof why) == -1);
    CHECK(op_idlist_validate("0x3", why, sizeof why) == -1);
    CHECK(op_idlist_validate("99999999999999999999", why, sizeof why) == -1 && strstr(why, "too large"));
    CHECK(op_idlist_has("0,2,5-8", 0) && op_idlist_has("0,2,5-8", 6) && !op_idlist_has("0,2,5-8", 3));
    CHECK(op_idlist_has("", 12345) && op_idlist_has("ALL", 1) && !op_idlist_has("none", 0));
    CHECK(!op_idlist_has("5-1", 3));
    /* separators only: empty, as "" (fuzz.iteration_range found has() and parse() disagreeing) */
    CHECK(op_idlist_has("[", 1) && op_idlist_has("[ ]", 7) && op_idlist_has(" , ", 0));

    CHECK(op_edit_distance("kitten", "sitting", 10) == 3);
    CHECK(op_edit_distance("abc", "xyzxyz", 2) == 3);
    const char *known[] = {"kernel-trace", "marker-trace", "memory-copy-trace"};
    CHECK(op_suggest_closest("kernel-tarce", known, 3) == known[0]);
    CHECK(op_suggest_closest("zzzzzzzz", known, 3) == NULL);
    return CHECK_DONE();
}
