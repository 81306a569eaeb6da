/* check.h — the minimal assertion helper of the common unit tests: prints the failing
 * expression with its line and counts failures; main returns the count. */
#ifndef OMNIPROF_TESTS_CHECK_H
#define OMNIPROF_TESTS_CHECK_H
#include <stdio.h>
static int g_failures;
#define CHECK(cond)                                                           \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            g_failures++;                                                     \
        }                                                                     \
    } while (0)
#define CHECK_DONE() (g_failures ? (fprintf(stderr, "%d check(s) failed\n", g_failures), 1) : 0)
#endif
