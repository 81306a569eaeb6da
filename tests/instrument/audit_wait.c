/* audit_wait.c — fib(N) through a library's PLT (instest_fiblib), then waits for its standard
 * input to close: the instrument.audit_own test reads this process's GOT slots while it is
 * still running, after the profiler's database writer has written the calls. */
#include <stdio.h>
#include <stdlib.h>

long fib(int n);

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20;
    printf("fib(%d) = %ld\n", n, fib(n));
    fflush(stdout);
    while (getchar() != EOF) {
    }
    return 0;
}
