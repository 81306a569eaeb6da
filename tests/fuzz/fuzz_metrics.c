/* fuzz_metrics.c — libFuzzer harness of the metrics XML loader (src/sdk/counters/metrics.c:
 * share/omniprof/metrics.xml, --extra-metrics, OMNIPROF_METRICS_PATH) and, through it, of the
 * expressions of derived metrics.
 *
 * Input: an XML text. It is loaded into an empty registry; when the load succeeds, the same
 * text is loaded again in append mode. Invariants: a refusal has a message and leaves the
 * registry empty (a load is all-or-nothing); after a success every definition is found again
 * by its chip and name, a derived one has its parsed expression, and loading the same text
 * again (append) keeps every id (a replaced definition keeps its id). */
#include "fuzz.h"
#include "sdk/counters/metrics.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (256u << 10)) return 0;
    char err[1024] = "";
    op_metrics_lock();
    op_metrics_reset();
    int rc = op_metrics_load_xml((const char *)data, size, "fuzz.xml", 0, err, sizeof err);
    FUZZ_CHECK(rc == 0 || rc == -1, "load returned %d", rc);
    if (rc != 0) {
        FUZZ_CHECK(err[0], "a refusal without a message");
        FUZZ_CHECK(op_metrics_count() == 0, "a refused load left %zu definitions", op_metrics_count());
    } else {
        size_t count = op_metrics_count();
        for (uint64_t id = 1; id <= count; id++) {
            op_metric_def *d = op_metrics_get(id);
            if (!d || d->removed) continue;
            FUZZ_CHECK(d->name && d->chip, "definition %llu without name or chip", (unsigned long long)id);
            FUZZ_CHECK(op_metrics_find_exact(d->chip, d->name) == d, "'%s' (chip '%s') not found again", d->name,
                       d->chip);
            if (d->is_derived) FUZZ_CHECK(d->expr != NULL, "derived '%s' without its expression", d->name);
        }
        err[0] = '\0';
        int again = op_metrics_load_xml((const char *)data, size, "fuzz.xml", 1, err, sizeof err);
        FUZZ_CHECK(again == 0, "the same text loaded once, refused in append mode: %s", err);
        FUZZ_CHECK(op_metrics_count() == count, "appending the same text: %zu definitions, then %zu", count,
                   op_metrics_count());
    }
    op_metrics_reset();
    op_metrics_unlock();
    return 0;
}
