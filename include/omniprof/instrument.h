/* omniprof/instrument.h — instrumented function calls: one FUNCTION_CALL record per call.
 *
 * Produced by the instrumentation backend (src/backend/instrument/, docs/instrument.md): the
 * record's operation says how the call was seen — a uprobe/uretprobe pair placed through
 * perf_event_open, the dynamic loader's audit interface (LD_AUDIT la_pltenter/la_pltexit, calls
 * into shared libraries through the PLT), or the hooks a compiler inserts with
 * -finstrument-functions (__cyg_profile_func_enter/exit, served by libomniprof-user.so). One
 * record is emitted when the call returns; calls still open when collection stops are emitted
 * with OMNIPROF_FUNCTION_CALL_FLAG_UNFINISHED and the stop time as their end. */
#ifndef OMNIPROF_INSTRUMENT_H
#define OMNIPROF_INSTRUMENT_H

#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

typedef enum omniprof_function_call_operation_t {
    OMNIPROF_FUNCTION_CALL_NONE = 0,
    OMNIPROF_FUNCTION_CALL_UPROBE,   /* uprobe at entry + uretprobe (perf_event_open, uprobe PMU) */
    OMNIPROF_FUNCTION_CALL_AUDIT,    /* LD_AUDIT la_pltenter + la_pltexit (PLT calls into libraries) */
    OMNIPROF_FUNCTION_CALL_COMPILER, /* -finstrument-functions: __cyg_profile_func_enter/exit */
    OMNIPROF_FUNCTION_CALL_LAST
} omniprof_function_call_operation_t;

/* flags of omniprof_function_call_record_t */
#define OMNIPROF_FUNCTION_CALL_FLAG_UNFINISHED 0x1u /* still open when collection stopped */

/* FUNCTION_CALL: one call of an instrumented function, from entry to return. */
typedef struct omniprof_function_call_record_t {
    uint64_t size;
    uint32_t kind;
    omniprof_tracing_operation_t operation; /* omniprof_function_call_operation_t: the method */
    omniprof_timestamp_t start_timestamp;
    omniprof_timestamp_t end_timestamp;
    omniprof_thread_id_t thread_id;
    uint64_t exclusive_ns;                  /* duration less the instrumented calls it made */
    const char *function;                   /* interned: the symbol name (mangled as in the ELF) */
    const char *module;                     /* interned: path of the executable or library */
    uint64_t address;                       /* the function's entry address in the process */
    uint32_t depth;                         /* nesting among this thread's instrumented calls, 0 = outermost */
    uint32_t flags;                         /* OMNIPROF_FUNCTION_CALL_FLAG_* */
} omniprof_function_call_record_t;

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_INSTRUMENT_H */
