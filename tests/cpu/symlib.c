/* symlib.c — shared library of the symbol test: lib_hot spins (the loop is on a known line). */
double lib_hot(long n);
__attribute__((noinline, visibility("default"))) double lib_hot(long n)
{
    volatile double x = 0;
    for (long i = 0; i < n; i++) x += (double)i * 0.75; /* LIB_HOT_LINE */
    return x;
}
