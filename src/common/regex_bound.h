/* regex_bound.h — POSIX extended regular expressions from users (kernel filters), compiled
 * with a bound on their size.
 *
 * glibc's regcomp expands counted repetitions: 'a{1000}{1000}{10}' becomes ten million copies
 * of 'a' and takes gigabytes and seconds to compile (in the launcher and again in every traced
 * process). Before regcomp sees a pattern, its expanded size is estimated from its structure —
 * each atom counts 1, a group the sum of its branches, a repetition multiplies what it repeats
 * ({m,n}: n, {m,}: m+1, * + ?: 2) — and a pattern over OP_REGEX_MAX_WEIGHT is refused, as is
 * one longer than OP_REGEX_MAX_LENGTH or using a backreference (not ERE; matching time can grow
 * exponentially). regcomp's own time and memory are then proportional to that bound. A pattern
 * that repeats a repetition more than OP_REGEX_MAX_NESTED deep ('a??+++++++++++', found by
 * fuzz_settings: over 100 s in glibc's regcomp at a weight of 8,192) is refused too: regcomp's
 * time grows about 7x per level over an optional atom, far beyond the size estimate. With an
 * anchor in the pattern (^, $, \<, \>, \b, \B, \`, \'), glibc's epsilon closures grow far
 * faster: '$x??++++' takes 4 s, '$x??+++$y??+++' 3.5 s, '$x??+++$y??+++$z??+++' over 20 s (2-core
 * VM; found by fuzz_settings). Each atom under d >= 2 nested repetitions weighs 2^d; a pattern with
 * an anchor and a total weight over OP_REGEX_MAX_ANCHORED_NESTING is refused (at 32 every
 * pattern measured compiled in under 20 ms; at 64, in 0.3-4 s). */
#ifndef OMNIPROF_COMMON_REGEX_BOUND_H
#define OMNIPROF_COMMON_REGEX_BOUND_H

#include <regex.h>
#include <stddef.h>

#define OP_REGEX_MAX_LENGTH 4096
#define OP_REGEX_MAX_WEIGHT 20000.0
#define OP_REGEX_MAX_NESTED 6
#define OP_REGEX_MAX_ANCHORED_NESTING 32

/* The estimated expanded size of an ERE (0 for an empty pattern). */
double op_regex_weight(const char *pattern);

/* regcomp(re, pattern, REG_EXTENDED | cflags) after the bounds above. Returns 0, or -1 with a
 * message in err (regerror's text, or the bound that was exceeded); nothing to free then. */
int op_regex_compile(regex_t *re, const char *pattern, int cflags, char *err, size_t errlen);

#endif /* OMNIPROF_COMMON_REGEX_BOUND_H */
