/* fuzz_iteration_range.c — libFuzzer harness of kernel iteration ranges
 * (--kernel-iteration-range, OMNIPROF_KERNEL_ITERATION_RANGE: src/sdk/counters/
 * iteration_range.c over common/number.c's id lists).
 *
 * Input: the range text ("[1, [3-5]]", "1,3-5", ...). Invariants: a refusal has a message
 * that quotes the text; an accepted range has 1 <= lo <= hi in every item, holds each item's
 * bounds and no iteration 0, and agrees with op_idlist_has (the setting's own check) on every
 * probed iteration; at most `max` items are returned. */
#include "fuzz.h"
#include "common/number.h"
#include "sdk/counters/counters_internal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) return 0;
    char *text = fuzz_text(data, size);
    op_counters_range r[8];
    size_t n = 99;
    char err[512] = "";
    size_t max = 1 + (size % 8);
    int rc = op_counters_parse_iteration_range(text, r, max, &n, err, sizeof err);
    FUZZ_CHECK(rc == 0 || rc == -1, "returned %d", rc);
    if (rc != 0) {
        FUZZ_CHECK(n == 0, "a refusal left %zu items", n);
        FUZZ_CHECK(strstr(err, "kernel iteration range"), "a refusal without the message: '%s'", err);
    } else {
        FUZZ_CHECK(n <= max, "%zu items for a room of %zu", n, max);
        FUZZ_CHECK(op_idlist_validate(text, NULL, 0) == 0, "'%s' accepted here, refused as an id list", text);
        for (size_t k = 0; k < n; k++) {
            FUZZ_CHECK(r[k].lo >= 1 && r[k].lo <= r[k].hi, "item %zu: %llu-%llu", k, (unsigned long long)r[k].lo,
                       (unsigned long long)r[k].hi);
            FUZZ_CHECK(op_counters_range_contains(r, n, r[k].lo) && op_counters_range_contains(r, n, r[k].hi),
                       "'%s' lacks its own bounds", text);
        }
        FUZZ_CHECK(n == 0 || !op_counters_range_contains(r, n, 0), "'%s' holds iteration 0", text);
        uint64_t probes[] = {1, 2, 3, 5, 9, 64, 1000, UINT64_MAX};
        for (size_t p = 0; p < sizeof probes / sizeof *probes; p++)
            FUZZ_CHECK(op_counters_range_contains(r, n, probes[p]) == op_idlist_has(text, probes[p]),
                       "'%s': iteration %llu disagrees with the id list", text, (unsigned long long)probes[p]);
    }
    free(text);
    return 0;
}
