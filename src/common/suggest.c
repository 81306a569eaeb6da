/* suggest.c — edit distance and closest-name suggestions (suggest.h). */
#include "common/suggest.h"

#include <string.h>

size_t op_edit_distance(const char *a, const char *b, size_t limit)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 256 || lb > 256) return limit + 1;
    if ((la > lb ? la - lb : lb - la) > limit) return limit + 1;
    size_t row[257];
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t prev = row[0], best = i;
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cur = row[j];
            size_t v = prev + (a[i - 1] == b[j - 1] ? 0 : 1);
            if (row[j] + 1 < v) v = row[j] + 1;
            if (row[j - 1] + 1 < v) v = row[j - 1] + 1;
            row[j] = v;
            prev = cur;
            if (v < best) best = v;
        }
        if (best > limit) return limit + 1; /* every later row is at least this far */
    }
    return row[lb] > limit ? limit + 1 : row[lb];
}

const char *op_suggest_closest(const char *word, const char *const *known, size_t n_known)
{
    size_t limit = strlen(word) / 3 > 2 ? strlen(word) / 3 : 2;
    const char *best = NULL;
    size_t best_d = limit + 1;
    for (size_t i = 0; i < n_known; i++) {
        size_t d = op_edit_distance(word, known[i], limit);
        if (d < best_d) {
            best_d = d;
            best = known[i];
        }
    }
    return best;
}
