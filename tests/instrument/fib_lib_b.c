/* fib_lib_b.c — see fib_lib_a.c: the other half of the PLT round trip. */
long fib(int n);
long fib_rec(int n) { return fib(n); }
