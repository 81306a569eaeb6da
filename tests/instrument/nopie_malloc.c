/* nopie_malloc.c — a non-PIE program that takes malloc's address (as Debian's python3 does):
 * the loader then resolves every lookup of malloc, its own included, to this program's PLT
 * entry, so the loader's malloc (allocating a dlopened library's TLS at a thread's first
 * access) goes through the auditor's trampoline. instrument.audit_tls: the audit method must
 * not recurse there (it did, until the stack overflowed). */
#include <stdio.h>
#include <stdlib.h>

long fib(int n);

int main(int argc, char **argv)
{
    void *(*volatile get)(size_t) = malloc;
    int n = argc > 1 ? atoi(argv[1]) : 20;
    char *p = get(64);
    snprintf(p, 64, "fib(%d) = %ld", n, fib(n));
    puts(p);
    free(p);
    return 3;
}
