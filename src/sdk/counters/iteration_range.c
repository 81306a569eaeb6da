/* iteration_range.c — parsing of --kernel-iteration-range / OMNIPROF_KERNEL_ITERATION_RANGE:
 * which launches of each kernel name are counted, 1-based. Accepts rocprofv3's form
 * "[1, [3-5]]" and the plain "1,3-5": brackets, commas and blanks separate items; an item is N
 * or N-M (M >= N >= 1). The parsing is common/number.c's id lists. */
#include <stdio.h>

#include "common/number.h"
#include "sdk/counters/counters_internal.h"

int op_counters_parse_iteration_range(const char *text, op_counters_range *out, size_t max, size_t *n, char *err,
                                      size_t errlen)
{
    /* The one id-list parser (common/number.c); iterations are 1-based. */
    op_id_range r[64];
    size_t got = 0;
    char why[256];
    *n = 0;
    if (op_idlist_parse(text, 1, r, max < 64 ? max : 64, &got, why, sizeof why) != 0) {
        snprintf(err, errlen, "kernel iteration range '%s': %s (valid: '[1, [3-5]]' or '1,3-5', 1-based)", text, why);
        return -1;
    }
    for (size_t i = 0; i < got; i++) out[i] = (op_counters_range){r[i].lo, r[i].hi};
    *n = got;
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
