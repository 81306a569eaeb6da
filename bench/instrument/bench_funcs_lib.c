/* bench_funcs_lib.c — bench_funcs.h as a shared library (LD_AUDIT method of the benchmark). */
#include "bench_funcs.h"
