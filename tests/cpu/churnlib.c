/* churnlib.c — the library tests/cpu/dlclose_churn.c loads, runs and closes in a loop: a few
 * frames of plain arithmetic, so that samples land in it and their walks read its unwind tables. */
#include <stdint.h>
__attribute__((noinline)) static uint64_t churn_leaf(uint64_t x, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}
__attribute__((noinline, visibility("default"))) uint64_t churn_mid(uint64_t x, uint64_t n, int depth)
{
    if (depth > 0) return churn_mid(x + 1, n, depth - 1) + 1;
    return churn_leaf(x, n);
}
