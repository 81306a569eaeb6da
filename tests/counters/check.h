/* check.h — the assertion macros of the counters tests: print the failing expression with its
 * file and line, count failures, and make main's exit status say whether all held. */
#ifndef OMNIPROF_TESTS_COUNTERS_CHECK_H
#define OMNIPROF_TESTS_COUNTERS_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int g_failures;
static int g_checks;

#define CHECK(cond)                                                                                  \
    do {                                                                                             \
        g_checks++;                                                                                  \
        if (!(cond)) {                                                                               \
            g_failures++;                                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                 \
        }                                                                                            \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                           \
    do {                                                                                             \
        long long a_ = (long long)(a), b_ = (long long)(b);                                          \
        g_checks++;                                                                                  \
        if (a_ != b_) {                                                                              \
            g_failures++;                                                                            \
            fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__, #a, a_, b_);   \
        }                                                                                            \
    } while (0)

#define CHECK_NEAR(a, b)                                                                             \
    do {                                                                                             \
        double a_ = (a), b_ = (b);                                                                   \
        g_checks++;                                                                                  \
        if (!(fabs(a_ - b_) <= 1e-9 * (fabs(b_) > 1 ? fabs(b_) : 1))) {                              \
            g_failures++;                                                                            \
            fprintf(stderr, "%s:%d: %s == %.17g, expected %.17g\n", __FILE__, __LINE__, #a, a_, b_); \
        }                                                                                            \
    } while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                                              \
    do {                                                                                             \
        const char *h_ = (hay), *n_ = (needle);                                                      \
        g_checks++;                                                                                  \
        if (!h_ || !strstr(h_, n_)) {                                                                \
            g_failures++;                                                                            \
            fprintf(stderr, "%s:%d: '%s' does not contain '%s'\n", __FILE__, __LINE__, h_ ? h_ : "(null)", n_); \
        }                                                                                            \
    } while (0)

#define CHECK_DONE()                                                                                 \
    do {                                                                                             \
        printf("%d checks, %d failed\n", g_checks, g_failures);                                      \
        return g_failures ? 1 : 0;                                                                   \
    } while (0)

#endif
