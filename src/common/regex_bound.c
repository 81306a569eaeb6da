/* regex_bound.c — the size estimate and bounded compile of regex_bound.h.
 *
 * The estimate walks the pattern once with a stack of open groups. Each frame keeps the sum of
 * the atoms seen in the group so far and the weight of the last atom (what a following
 * repetition applies to). Bracket expressions ("[]a-z[:digit:]]") and escapes are one atom.
 * Malformed patterns are not judged here: regcomp reports them with its own message. */
#include "common/regex_bound.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GROUPS 256

typedef struct frame {
    double sum, last;
    int depth, last_depth; /* repetitions nested: the deepest in the group, and on its last atom */
} frame;

/* End of the bracket expression starting at p ('['): the index after its ']'. */
static const char *skip_bracket(const char *p)
{
    p++;
    if (*p == '^') p++;
    if (*p == ']') p++;
    while (*p && *p != ']') {
        if (p[0] == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
            char close = p[1];
            const char *e = p + 2;
            while (*e && !(e[0] == close && e[1] == ']')) e++;
            p = *e ? e + 2 : e;
        } else {
            p++;
        }
    }
    return *p ? p + 1 : p;
}

/* The factor of a repetition "{m}", "{m,}", "{m,n}" at p; *end past it. 0 if not one. */
static double bound_factor(const char *p, const char **end)
{
    const char *q = p + 1;
    char *e;
    unsigned long m = strtoul(q, &e, 10), n;
    if (e == q) return 0;
    if (*e == '}') {
        *end = e + 1;
        return m ? (double)m : 1;
    }
    if (*e != ',') return 0;
    q = e + 1;
    if (*q == '}') {
        *end = q + 1;
        return (double)m + 1;
    }
    n = strtoul(q, &e, 10);
    if (e == q || *e != '}') return 0;
    *end = e + 1;
    return n ? (double)n : 1;
}

/* An atom is done (another follows, its branch or group ends, or the pattern does): an atom under
 * two or more nested repetitions adds 2^depth to *nested (see regex_bound.h: anchors). */
static void settle(const frame *f, double *nested)
{
    if (f->last_depth >= 2) *nested += f->last_depth > 60 ? 1e18 : (double)(1ULL << f->last_depth);
}

/* One walk: the expanded size; in *depth how many repetitions apply one over another at most
 * ('a??+' 3, '((a?)+)*' 3); in *nested the sum of 2^depth over the atoms nested two deep or more;
 * in *anchored whether the pattern has an anchor (^, $, \<, \>, \b, \B, \`, \'). */
static double walk(const char *pattern, int *depth, double *nested, bool *anchored)
{
    frame stack[MAX_GROUPS + 1];
    int d = 0;
    double nest = 0;
    bool anch = false;
    stack[0] = (frame){0, 0, 0, 0};
    for (const char *p = pattern; *p;) {
        frame *f = &stack[d];
        double factor = 0, atom = -1;
        int atom_depth = 0;
        const char *next = p + 1;
        switch (*p) {
        case '(':
            if (d < MAX_GROUPS) stack[++d] = (frame){0, 0, 0, 0};
            break;
        case ')':
            if (d > 0) {
                settle(&stack[d], &nest);
                atom = stack[d].sum;
                atom_depth = stack[d].depth;
                f = &stack[--d];
            }
            break;
        case '|': settle(f, &nest), f->last = 0, f->last_depth = 0; break;
        case '*': case '+': case '?': factor = 2; break;
        case '{': factor = bound_factor(p, &next); if (factor == 0) atom = 1; break;
        case '[': next = skip_bracket(p); atom = 1; break;
        case '\\':
            if (p[1] && strchr("<>bB`'", p[1])) {
                anch = true; /* a word or buffer anchor, not an atom */
                next = p + 2;
                break;
            }
            if (p[1]) next = p + 2;
            atom = 1;
            break;
        case '^': case '$': anch = true; break;
        default: atom = 1; break;
        }
        if (atom >= 0) {
            settle(f, &nest);
            f->sum += atom;
            f->last = atom;
            f->last_depth = atom_depth;
        } else if (factor > 0) {
            f->sum += f->last * (factor - 1);
            f->last *= factor;
            f->last_depth++;
        }
        if (f->last_depth > f->depth) f->depth = f->last_depth;
        if (f->sum > 1e15) break; /* far over any bound: stop counting */
        p = next;
    }
    double total = 0;
    int deepest = 0;
    for (int k = 0; k <= d; k++) {
        total += stack[k].sum;
        if (stack[k].depth > deepest) deepest = stack[k].depth;
        settle(&stack[k], &nest);
    }
    *depth = deepest;
    *nested = nest;
    *anchored = anch;
    return total > 1e15 ? 1e15 : total;
}

double op_regex_weight(const char *pattern)
{
    int depth;
    double nested;
    bool anchored;
    return walk(pattern, &depth, &nested, &anchored);
}

int op_regex_compile(regex_t *re, const char *pattern, int cflags, char *err, size_t errlen)
{
    size_t len = strlen(pattern);
    if (len > OP_REGEX_MAX_LENGTH) {
        snprintf(err, errlen, "longer than %d characters", OP_REGEX_MAX_LENGTH);
        return -1;
    }
    for (const char *p = pattern; *p; p++) {
        if (*p == '[') {
            p = skip_bracket(p) - 1;
            continue;
        }
        if (p[0] == '\\' && p[1] >= '1' && p[1] <= '9') {
            snprintf(err, errlen, "backreferences (\\%c) are not supported", p[1]);
            return -1;
        }
        if (p[0] == '\\' && p[1]) p++;
    }
    int depth;
    double nested;
    bool anchored;
    double w = walk(pattern, &depth, &nested, &anchored);
    if (depth > OP_REGEX_MAX_NESTED) {
        snprintf(err, errlen,
                 "repeats a repetition %d deep (as in 'a??+++' or '((a?)+)+'; at most %d): regcomp's time grows "
                 "exponentially with it",
                 depth, OP_REGEX_MAX_NESTED);
        return -1;
    }
    if (anchored && nested > OP_REGEX_MAX_ANCHORED_NESTING) {
        snprintf(err, errlen,
                 "combines an anchor (^, $, \\<, \\>, \\b, \\B) with repetitions of repetitions (as in "
                 "'$x??+++$y??+++': weight %.0f, at most %d, where each atom under d nested repetitions, d >= 2, "
                 "weighs 2^d): regcomp's time grows exponentially with it",
                 nested, OP_REGEX_MAX_ANCHORED_NESTING);
        return -1;
    }
    if (w > OP_REGEX_MAX_WEIGHT) {
        snprintf(err, errlen,
                 "too large once its repetitions are expanded (about %.3g elements, at most %.0f); use fewer or "
                 "smaller {m,n} counts",
                 w, OP_REGEX_MAX_WEIGHT);
        return -1;
    }
    int rc = regcomp(re, pattern, REG_EXTENDED | cflags);
    if (rc != 0) {
        regerror(rc, re, err, errlen);
        regfree(re);
        return -1;
    }
    return 0;
}
