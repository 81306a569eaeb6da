/* reuselib.c — the two libraries of tests/cpu/dlreuse.c, built from this one source with
 * WORK_NAME liba_work or libb_work: the same code at the same offsets, so that a sample of one
 * resolved against the other names the other's function. */
#include <stdint.h>
__attribute__((noinline, visibility("default"))) uint64_t WORK_NAME(uint64_t x, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}
