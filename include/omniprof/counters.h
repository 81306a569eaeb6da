/* omniprof/counters.h — hardware counters and derived metrics (issue 7 fills this in).
 *
 * Counter records use category OMNIPROF_RECORD_CATEGORY_COUNTERS. */
#ifndef OMNIPROF_COUNTERS_H
#define OMNIPROF_COUNTERS_H

#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

typedef enum omniprof_counter_record_kind_t {
    OMNIPROF_COUNTER_RECORD_NONE = 0,
    OMNIPROF_COUNTER_RECORD_DISPATCH_HEADER, /* precedes the values of one dispatch */
    OMNIPROF_COUNTER_RECORD_VALUE,
    OMNIPROF_COUNTER_RECORD_LAST
} omniprof_counter_record_kind_t;

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_COUNTERS_H */
