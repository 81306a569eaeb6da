/* check.h — the one assertion helper of the C tests: each macro prints the failing check with
 * its file and line (and an optional printf-style message) to stderr and counts it in
 * g_failures; main ends with `return CHECK_DONE();` (0 when every check held, else 1).
 *
 *   CHECK(cond)  CHECK(cond, "fmt", ...)   CHECK_EQ_INT(a, b)   CHECK_EQ_U(a, b)
 *   CHECK_EQ_STR(a, b)   CHECK_NEAR(a, b, tol)   CHECK_STR_CONTAINS(hay, needle)
 *
 * Areas add their own checks on top (tests/sdk/sdk_test.h: CHECK_ST for SDK status codes). */
#ifndef OMNIPROF_TESTS_CHECK_H
#define OMNIPROF_TESTS_CHECK_H
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int g_failures;

/* The message's format is not checked by the compiler (the macro appends an empty argument so
 * that the message is optional; vfprintf ignores it). */
static inline void check_failed_(const char *file, int line, const char *expr, const char *fmt, ...)
{
    fprintf(stderr, "FAIL %s:%d: %s", file, line, expr);
    if (fmt && *fmt) {
        va_list ap;
        va_start(ap, fmt);
        fputs(": ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
    g_failures++;
}

#define CHECK(...) CHECK_WITH_(__VA_ARGS__, "")
#define CHECK_WITH_(cond, ...)                                                  \
    do {                                                                        \
        if (!(cond)) check_failed_(__FILE__, __LINE__, #cond, __VA_ARGS__);     \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                        \
    do {                                                                                          \
        long long a_ = (long long)(a), b_ = (long long)(b);                                       \
        if (a_ != b_) check_failed_(__FILE__, __LINE__, #a " == " #b, "%lld != %lld", a_, b_);    \
    } while (0)

#define CHECK_EQ_U(a, b)                                                                          \
    do {                                                                                          \
        unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b);            \
        if (a_ != b_) check_failed_(__FILE__, __LINE__, #a " == " #b, "%llu != %llu", a_, b_);    \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                                        \
    do {                                                                                          \
        const char *a_ = (a), *b_ = (b);                                                          \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                                                    \
            check_failed_(__FILE__, __LINE__, #a " == " #b, "'%s' != '%s'", a_ ? a_ : "(null)",   \
                          b_ ? b_ : "(null)");                                                    \
    } while (0)

/* |a - b| <= tol */
#define CHECK_NEAR(a, b, tol)                                                                     \
    do {                                                                                          \
        double a_ = (a), b_ = (b);                                                                \
        if (!(fabs(a_ - b_) <= (tol)))                                                            \
            check_failed_(__FILE__, __LINE__, #a " ~ " #b, "%.17g vs %.17g", a_, b_);             \
    } while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                                           \
    do {                                                                                          \
        const char *h_ = (hay), *n_ = (needle);                                                   \
        if (!h_ || !strstr(h_, n_))                                                               \
            check_failed_(__FILE__, __LINE__, #hay " contains " #needle, "'%s' lacks '%s'",       \
                          h_ ? h_ : "(null)", n_);                                                \
    } while (0)

#define CHECK_DONE() (g_failures ? (fprintf(stderr, "%d check(s) failed\n", g_failures), 1) : 0)
#endif
