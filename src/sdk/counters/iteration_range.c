/* iteration_range.c — parsing of --kernel-iteration-range / OMNIPROF_KERNEL_ITERATION_RANGE:
 * which launches of each kernel name are counted, 1-based. Accepts rocprofv3's form
 * "[1, [3-5]]" and the plain "1,3-5": brackets, commas and blanks separate items; an item is N
 * or N-M (M >= N >= 1). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "sdk/counters/counters_internal.h"

static int is_sep(char c) { return c == ' ' || c == '\t' || c == '[' || c == ']' || c == ','; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

int op_counters_parse_iteration_range(const char *text, op_counters_range *out, size_t max, size_t *n, char *err,
                                      size_t errlen)
{
    *n = 0;
    if (!text)
        return 0;
    const char *s = text;
    while (*s) {
        while (is_sep(*s))
            s++;
        if (!*s)
            break;
        if (!is_digit(*s)) {
            snprintf(err, errlen,
                     "kernel iteration range '%s': unexpected '%c' at column %d (valid: '[1, [3-5]]' or '1,3-5')",
                     text, *s, (int)(s - text) + 1);
            return -1;
        }
        char *end;
        errno = 0;
        uint64_t lo = strtoull(s, &end, 10), hi = lo;
        s = end;
        while (*s == ' ')
            s++;
        if (*s == '-') {
            s++;
            while (*s == ' ')
                s++;
            if (!is_digit(*s)) {
                snprintf(err, errlen, "kernel iteration range '%s': a range needs an end at column %d", text,
                         (int)(s - text) + 1);
                return -1;
            }
            hi = strtoull(s, &end, 10);
            s = end;
        }
        if (errno == ERANGE) {
            snprintf(err, errlen, "kernel iteration range '%s': number too large", text);
            return -1;
        }
        if (lo == 0 || hi < lo) {
            snprintf(err, errlen, "kernel iteration range '%s': iterations are 1-based and ranges ascending (N-M, M >= N)",
                     text);
            return -1;
        }
        if (*s && !is_sep(*s)) {
            snprintf(err, errlen, "kernel iteration range '%s': unexpected '%c' at column %d", text, *s,
                     (int)(s - text) + 1);
            return -1;
        }
        if (*n >= max) {
            snprintf(err, errlen, "kernel iteration range '%s': more than %zu ranges", text, max);
            return -1;
        }
        out[(*n)++] = (op_counters_range){lo, hi};
    }
    return 0;
}

int op_counters_range_contains(const op_counters_range *r, size_t n, uint64_t iteration)
{
    if (n == 0)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (iteration >= r[i].lo && iteration <= r[i].hi)
            return 1;
    return 0;
}
