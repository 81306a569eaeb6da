/* suggest.h — "did you mean ...?": the edit distance between two names, and the closest of a
 * list of known names, for messages about unknown options, settings, counters and keys. */
#ifndef OMNIPROF_COMMON_SUGGEST_H
#define OMNIPROF_COMMON_SUGGEST_H

#include <stddef.h>

/* Levenshtein distance (insert, delete, replace = 1), or limit + 1 when it exceeds `limit`
 * (names over 256 bytes are always limit + 1). */
size_t op_edit_distance(const char *a, const char *b, size_t limit);

/* The known name closest to `word` (case-sensitive), or NULL when none is within a distance
 * of max(2, strlen(word) / 3): far-off names are no help. */
const char *op_suggest_closest(const char *word, const char *const *known, size_t n_known);

#endif /* OMNIPROF_COMMON_SUGGEST_H */
