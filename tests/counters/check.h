/* check.h — the counters tests' checks: the common ones (tests/common/check.h) plus
 * CHECK_CLOSE, equality of computed doubles to a relative 1e-9. */
#ifndef OMNIPROF_TESTS_COUNTERS_CHECK_H
#define OMNIPROF_TESTS_COUNTERS_CHECK_H
#include "../common/check.h"
#define CHECK_CLOSE(a, b) CHECK_NEAR(a, b, 1e-9 * (fabs((double)(b)) > 1 ? fabs((double)(b)) : 1))
#endif
