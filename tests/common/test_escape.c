/* test_escape.c — the one JSON string escaper: every rule of escape.h on its own byte, whole
 * escapes only when the output is short, the FILE writers, and UTF-8 validation at its edges. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/escape.h"

static int esc_is(const char *in, size_t n, const char *want)
{
    char out[512];
    size_t used, w = op_json_escape(out, sizeof out, in, n, &used);
    out[w] = 0;
    if (used != n || strcmp(out, want) != 0) {
        fprintf(stderr, "escape of %zu bytes gave \"%s\" (read %zu), wanted \"%s\"\n", n, out, used, want);
        return 0;
    }
    return 1;
}
#define ESC(lit, want) esc_is(lit, sizeof(lit) - 1, want)

int main(void)
{
    CHECK(ESC("plain text 123", "plain text 123"));
    CHECK(ESC("", ""));
    CHECK(ESC("a\"b\\c", "a\\\"b\\\\c"));
    CHECK(ESC("\n\t\r", "\\n\\t\\r"));
    CHECK(ESC("\x01\x1f\b\f", "\\u0001\\u001f\\u0008\\u000c"));
    CHECK(ESC("nul\0x", "nul\\u0000x"));
    CHECK(ESC("\x7f", "\x7f"));                                   /* DEL is valid JSON text */
    CHECK(ESC("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
    CHECK(ESC("\xff", "\\udcff"));                                /* not UTF-8 */
    CHECK(ESC("\xc3", "\\udcc3"));                                /* cut short */
    CHECK(ESC("\xc0\x80", "\\udcc0\\udc80"));                     /* overlong */
    CHECK(ESC("\xed\xa0\x80", "\\udced\\udca0\\udc80"));          /* a surrogate */
    CHECK(ESC("\xf4\x90\x80\x80", "\\udcf4\\udc90\\udc80\\udc80")); /* above U+10FFFF */

    /* short output: whole escapes only, and the count read says where to resume */
    char out[8];
    size_t used;
    CHECK(op_json_escape(out, 3, "ab\"c", 4, &used) == 2 && used == 2 && memcmp(out, "ab", 2) == 0);
    CHECK(op_json_escape(out, 5, "\x01", 1, &used) == 0 && used == 0);
    CHECK(op_json_escape(out, 2, "x\xc3\xa9", 3, &used) == 1 && used == 1);
    CHECK(op_json_escape(out, 0, "x", 1, &used) == 0 && used == 0);
    CHECK(op_json_escape(out, OP_JSON_ESCAPED_MAX(1), "\x02", 1, &used) == 6 && used == 1);

    /* FILE writers: a long text crosses the chunk size, with escapes on the boundaries */
    size_t n = 10000;
    char *big = malloc(n);
    for (size_t i = 0; i < n; i++) big[i] = i % 97 == 0 ? '"' : i % 89 == 0 ? '\x01' : 'a' + (char)(i % 26);
    char *mem = NULL;
    size_t mem_len = 0;
    FILE *f = open_memstream(&mem, &mem_len);
    CHECK(f && op_json_fputs(f, "x\"y") == 0 && op_json_fputs(f, NULL) == 0 && op_json_fwrite(f, big, n) == 0);
    fclose(f);
    char *want = malloc(OP_JSON_ESCAPED_MAX(n) + 16);
    strcpy(want, "\"x\\\"y\"\"\"");
    size_t wl = strlen(want);
    wl += op_json_escape(want + wl, OP_JSON_ESCAPED_MAX(n), big, n, &used);
    CHECK(used == n && mem_len == wl && memcmp(mem, want, wl) == 0);
    free(mem);
    free(want);
    free(big);

    CHECK(op_utf8_valid((const unsigned char *)"", 0));
    CHECK(op_utf8_valid((const unsigned char *)"\xf4\x8f\xbf\xbf", 4));  /* U+10FFFF */
    CHECK(!op_utf8_valid((const unsigned char *)"\xef\xbf", 2));
    CHECK(op_utf8_seq_len((const unsigned char *)"\xe2\x82\xac", 3) == 3);
    CHECK(op_utf8_seq_len((const unsigned char *)"\x80", 1) == 0);
    return CHECK_DONE();
}
