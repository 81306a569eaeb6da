/* bench_interp.h — the interpreter of the instrumentation benchmark (bench_interp_lib.c). */
#ifndef BENCH_INTERP_H
#define BENCH_INTERP_H

#include <stdio.h>

#define BENCH_INTERP_STMTS 200
#define BENCH_INTERP_MAX_STMTS 256

/* `rounds` times: parse the generated program, evaluate it 8 times, sort the variables.
 * Returns a checksum; *nodes = AST nodes of one parse. */
long interp_run(int rounds, long *nodes);

#endif
