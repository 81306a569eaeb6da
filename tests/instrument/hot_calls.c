/* hot_calls.c — a small program built with -O2 whose one tiny function is called millions of
 * times from main (issue 35 item 4): under `instrument --min-instructions 0` that function is
 * throttled after its first calls, and from then on it must cost (nearly) nothing, as if it
 * were excluded. Usage: hot_calls [millions of calls]. Prints the result; exits 0. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) unsigned long hot_step(unsigned long x)
{
    __asm__ volatile("" : "+r"(x));
    return x * 6364136223846793005ul + 1442695040888963407ul;
}

int main(int argc, char **argv)
{
    long n = (long)((argc > 1 ? atof(argv[1]) : 5.0) * 1e6);
    unsigned long x = 1;
    for (long i = 0; i < n; i++) x = hot_step(x);
    printf("hot_calls: %ld calls, %lx\n", n, x & 0xffff);
    return 0;
}
