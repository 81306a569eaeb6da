/* fib_lib_a.c — fib in a shared library for the LD_AUDIT test. Its recursion calls fib_rec,
 * defined in another file of the library, which calls fib again: both calls are to global
 * symbols of another translation unit, so each goes through the PLT (a recursion inside one
 * function would be bound directly by the compiler and never reach the audit interface). */
long fib_rec(int n);
long fib(int n) { return n < 2 ? n : fib_rec(n - 1) + fib_rec(n - 2); }
