/* test_json_parse.c — the strict JSON reader (src/common/json_parse.c): every value type,
 * escapes and surrogate pairs, member order, and each kind of malformed text refused with the
 * line and column of the fault. */
#include <string.h>

#include "check.h"
#include "common/json_parse.h"

static op_json *parse(const char *s, char *err, size_t errlen) { return op_json_parse(s, strlen(s), err, errlen); }

/* The text must be refused with a message containing `want`. */
static void bad(const char *text, const char *want)
{
    char err[256];
    op_json *v = parse(text, err, sizeof(err));
    CHECK(v == NULL);
    if (!strstr(err, want)) fprintf(stderr, "for %s: message %s, want %s\n", text, err, want);
    CHECK(strstr(err, want) != NULL);
    op_json_free(v);
}

int main(void)
{
    char err[256];
    op_json *v = parse(" {\"a\": 1, \"b\": [true, false, null, \"x\"], \"c\": {\"d\": -2.5e3}, \"a\": 2}\n", err,
                       sizeof(err));
    CHECK(v != NULL);
    if (v) {
        CHECK(v->type == OP_JSON_OBJECT && v->n_children == 4);
        const op_json *a = op_json_get(v, "a");
        CHECK(a && a->type == OP_JSON_NUMBER && a->number == 1 && strcmp(a->text, "1") == 0);
        const op_json *b = op_json_get(v, "b");
        CHECK(b && b->type == OP_JSON_ARRAY && b->n_children == 4);
        CHECK(b && b->child->type == OP_JSON_BOOL && b->child->boolean);
        CHECK(b && !b->child->next->boolean && b->child->next->next->type == OP_JSON_NULL);
        CHECK(b && strcmp(b->child->next->next->next->text, "x") == 0);
        const op_json *d = op_json_get(op_json_get(v, "c"), "d");
        CHECK(d && d->number == -2500 && strcmp(d->text, "-2.5e3") == 0);
        CHECK(strcmp(v->child->next->next->next->key, "a") == 0); /* duplicates kept, in order */
        CHECK(b && b->line == 1 && b->column == 16);
        CHECK(op_json_get(v, "zz") == NULL && op_json_get(a, "a") == NULL);
    }
    op_json_free(v);

    /* Escapes, \u with a surrogate pair, UTF-8 passed through. */
    v = parse("\"q\\\"\\\\\\/\\b\\f\\n\\r\\t \\u00e9 \\ud83d\\ude00 \xc3\xa9\"", err, sizeof(err));
    CHECK(v && v->type == OP_JSON_STRING);
    if (v) CHECK(strcmp(v->text, "q\"\\/\b\f\n\r\t \xc3\xa9 \xf0\x9f\x98\x80 \xc3\xa9") == 0);
    op_json_free(v);

    /* Big numbers keep their text; the value overflows to inf (callers range-check the text). */
    v = parse("1e400", err, sizeof(err));
    CHECK(v && strcmp(v->text, "1e400") == 0);
    op_json_free(v);

    /* Lines and columns in messages. */
    bad("{\"a\": 1,\n  \"b\" 2}", "line 2, column 7: expected ':'");
    bad("{\"a\": tru}", "line 1, column 7: expected a value");
    bad("[1, 2", "expected ',' or ']'");
    bad("{\"a\": 1", "the text ends here");
    bad("\"abc", "unterminated string");
    bad("\"a\nb\"", "does not end on its line");
    bad("\"a\\x\"", "unknown escape");
    bad("\"\\u12\"", "four hex digits");
    bad("\"\\ud83d\"", "low surrogate");
    bad("\"\\ude00\"", "without its high surrogate");
    bad("\"\\u0000\"", "NUL");
    bad("01", "text after the value");
    bad("1.", "digit after '.'");
    bad("1e", "digit in the exponent");
    bad("-", "expected a digit");
    bad("{} {}", "text after the value");
    bad("", "expected a value");
    bad("{1: 2}", "expected a string");
    bad("NaN", "expected a value");
    bad("[1,]", "expected a value");
    char deep[200];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 99);
    deep[199] = '\0';
    bad(deep, "nested too deeply");
    v = op_json_parse("{\"a\":\0}", 7, err, sizeof(err));
    CHECK(v == NULL && strstr(err, "NUL byte"));

    /* Empty containers, and the tree builder used by the YAML reader. */
    v = parse("{\"o\": {}, \"a\": []}", err, sizeof(err));
    CHECK(v && op_json_get(v, "o")->n_children == 0 && op_json_get(v, "a")->type == OP_JSON_ARRAY);
    op_json_free(v);
    op_json *arr = op_json_new(OP_JSON_ARRAY, NULL, 1, 1);
    op_json_append(arr, op_json_new(OP_JSON_STRING, "x", 1, 2));
    op_json_append(arr, op_json_new(OP_JSON_STRING, "y", 1, 4));
    CHECK(arr->n_children == 2 && strcmp(arr->child->next->text, "y") == 0);
    op_json_free(arr);
    CHECK(strcmp(op_json_type_name(OP_JSON_OBJECT), "object") == 0);
    return CHECK_DONE();
}
