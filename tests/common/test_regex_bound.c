/* test_regex_bound.c — src/common/regex_bound.c: the bounds a user's regular expression must keep
 * before glibc's regcomp sees it. Patterns that glibc compiles in seconds (measured: docs in
 * regex_bound.h) are refused with a message naming the bound, and quickly; usual patterns compile
 * and match. The anchored cases are the ones fuzz_settings found ('$x??++++' took 4 s in regcomp,
 * '$x??+++$y??+++$z??+++' over 20 s). */
#include <string.h>
#include <time.h>

#include "check.h"
#include "common/regex_bound.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* compiles (1) or refuses (0) pattern; a refusal's message must contain `why` */
static int try(const char *pattern, const char *why)
{
    regex_t re;
    char err[512] = "";
    double t0 = now();
    int rc = op_regex_compile(&re, pattern, REG_NOSUB, err, sizeof err);
    double took = now() - t0;
    if (took > 2.0) fprintf(stderr, "'%s' took %.1f s\n", pattern, took);
    CHECK(took < 2.0); /* the refused ones take seconds in regcomp; a bounded one milliseconds */
    if (rc == 0) {
        regfree(&re);
        return 1;
    }
    if (why && !strstr(err, why)) fprintf(stderr, "'%s': '%s' lacks '%s'\n", pattern, err, why);
    CHECK(!why || strstr(err, why) != NULL);
    return 0;
}

int main(void)
{
    /* usual kernel filters */
    CHECK(try("^(gemm|conv)_.*_nn$", NULL));
    CHECK(try("(gemm|conv)+_.*?[0-9]*", NULL));
    CHECK(try("^ampere_sgemm_[0-9]+x[0-9]+_(nn|tn)$", NULL));
    CHECK(try("\\<vectorized_elementwise\\>", NULL));
    CHECK(try("^(a+)+$", NULL)); /* 2 deep, one atom: 4 */
    /* anchored, nested repetitions: refused */
    const char *anch = "combines an anchor";
    CHECK(!try("$x??++++", NULL)); /* 6 deep: within OP_REGEX_MAX_NESTED, over the anchored bound */
    CHECK(!try("$x??++++", anch));
    CHECK(!try("$x??+++$y??+++", anch));
    CHECK(!try("$x??+++$y??+++$z??+++", anch));
    CHECK(!try("$x??++$y??++$z??++$w??++", anch));
    CHECK(!try("^x??++++", anch));
    CHECK(!try("\\<x??++++", anch));
    CHECK(!try("(^|a)x??+++y??+++", anch));
    CHECK(!try("$x??+$y??+$z??+$w??+$v??+$u??+$t??+$s??+", anch));
    /* the fuzz_settings input (a setting's value; 13 s in glibc's regcomp) */
    CHECK(!try(",i?'?????$\x9d??++++OMNIPROF_SAMPLING_TIDS++\xd8", anch));
    /* the same weight without an anchor compiles fast; anchored at the bound too */
    CHECK(try("x??+++y??+++z??+++w??+++", NULL));
    CHECK(try("$x??+++", NULL));
    CHECK(try("$x??+$y??+$z??+$w??+", NULL));
    CHECK(try("(^|^|^)x??+++", NULL));
    CHECK(try("[$^]x??++++", NULL)); /* in brackets and escaped, not anchors */
    CHECK(try("\\$x??++++", NULL));
    /* the earlier bounds keep their messages */
    CHECK(!try("k??+++++++++++", "repeats a repetition 13 deep"));
    CHECK(!try("a{1000}{1000}", "too large"));
    CHECK(!try("(a)\\1", "backreferences"));
    /* a bounded pattern matches as regcomp's does */
    regex_t re;
    char err[256];
    CHECK(op_regex_compile(&re, "^(gemm|conv)_.*_nn$", REG_NOSUB, err, sizeof err) == 0);
    CHECK(regexec(&re, "gemm_128x64_nn", 0, NULL, 0) == 0);
    CHECK(regexec(&re, "xgemm_nn", 0, NULL, 0) != 0);
    regfree(&re);
    return CHECK_DONE();
}
