/* sympie.c — position-independent executable of the symbol test: pie_hot spins in the
 * executable, then lib_hot spins in libcputest_symlib.so. */
#include <stdio.h>

double lib_hot(long n);

__attribute__((noinline)) double pie_hot(long n)
{
    volatile double x = 0;
    for (long i = 0; i < n; i++) x += (double)i * 0.5; /* PIE_HOT_LINE */
    return x;
}

int main(void)
{
    double s = pie_hot(150000000L) + lib_hot(150000000L);
    printf("sympie done %d\n", s > 0);
    return 0;
}
