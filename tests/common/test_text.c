/* test_text.c — reversible valid-UTF-8 text (common/text.h): each rule on its own, and a round
 * trip of random byte strings (backslashes, "x", hex digits and invalid bytes are over-weighted)
 * whose escaped form is always valid UTF-8 and always decodes to the original bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/escape.h"
#include "common/text.h"

static int esc_is(const char *in, size_t n, const char *want)
{
    char out[512];
    size_t w = op_text_escape(out, in, n);
    out[w] = 0;
    if (strcmp(out, want) != 0 || op_text_is_clean(in, n) != (w == n && memcmp(in, out, n) == 0)) {
        fprintf(stderr, "text escape of %zu bytes gave \"%s\", wanted \"%s\" (clean=%d)\n", n, out, want,
                op_text_is_clean(in, n));
        return 0;
    }
    unsigned char back[512];
    size_t b = op_text_unescape(back, out, w);
    if (b != n || memcmp(back, in, n) != 0) {
        fprintf(stderr, "\"%s\" did not decode to its %zu input bytes\n", out, n);
        return 0;
    }
    return 1;
}
#define ESC(lit, want) esc_is(lit, sizeof(lit) - 1, want)

int main(void)
{
    CHECK(ESC("plain name", "plain name"));
    CHECK(ESC("", ""));
    CHECK(ESC("caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac"));    /* valid UTF-8 as is */
    CHECK(ESC("C:\\path\\file", "C:\\path\\file"));                        /* lone backslashes as is */
    CHECK(ESC("k_\xff\xfe_b", "k_\\xFF\\xFE_b"));                          /* invalid bytes */
    CHECK(ESC("\xe9t\xe9", "\\xE9t\\xE9"));                                /* Latin-1 */
    CHECK(ESC("\xc3", "\\xC3"));                                           /* cut sequence */
    CHECK(ESC("\xed\xa0\x80", "\\xED\\xA0\\x80"));                         /* surrogate */
    CHECK(ESC("lit \\x41", "lit \\\\x41"));                                /* literal \xHH text */
    CHECK(ESC("two \\\\x41", "two \\\\\\\\x41"));
    CHECK(ESC("\\\xff", "\\\\\\xFF"));                                     /* backslash, invalid byte */
    CHECK(ESC("\\xZZ", "\\xZZ"));                                          /* not hex: as is */
    CHECK(ESC("end\\", "end\\"));
    CHECK(op_text_is_clean("axpy(float*)", 12));
    CHECK(!op_text_is_clean("a\xff", 2));

    srand(7);
    static const unsigned char alphabet[] = {'\\', 'x', 'A', 'f', '0', '9', 'q', 0xff, 0xc3, 0xa9, 0xe2, 0x82, 0x80, ' '};
    for (int round = 0; round < 200000 && !g_failures; round++) {
        unsigned char in[24], out[OP_TEXT_ESCAPED_MAX(24)], back[OP_TEXT_ESCAPED_MAX(24)];
        size_t n = (size_t)(rand() % 24);
        for (size_t i = 0; i < n; i++) in[i] = alphabet[rand() % (int)sizeof alphabet];
        size_t w = op_text_escape((char *)out, in, n);
        CHECK(op_utf8_valid(out, w));
        size_t b = op_text_unescape(back, (const char *)out, w);
        CHECK(b == n && memcmp(back, in, n) == 0);
        if (op_text_is_clean(in, n)) CHECK(w == n && memcmp(out, in, n) == 0);
    }
    return CHECK_DONE();
}
