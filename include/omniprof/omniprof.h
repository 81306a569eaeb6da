/* omniprof/omniprof.h — the umbrella header of the omniprof SDK, and its version, status,
 * clock and thread-id calls.
 *
 * Whatever is not declared under include/omniprof/ is not API. Every function returns an
 * omniprof_status_t unless noted; omniprof_get_status_string() prints any of them. */
#ifndef OMNIPROF_OMNIPROF_H
#define OMNIPROF_OMNIPROF_H

#include "omniprof/defines.h"
#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

/**
 * @brief **omniprof_get_version** gives the run-time version of the loaded SDK.
 * @param major, minor, patch: out, each may be NULL.
 * @return OMNIPROF_STATUS_SUCCESS. Thread-safe, async-signal-safe.
 */
OMNIPROF_API omniprof_status_t omniprof_get_version(uint32_t *major, uint32_t *minor, uint32_t *patch);

/** @brief **omniprof_get_version_number** returns OMNIPROF_VERSION_NUMBER of the loaded library. */
OMNIPROF_API uint32_t omniprof_get_version_number(void);

/**
 * @brief **omniprof_get_timestamp** reads CLOCK_MONOTONIC in nanoseconds, the clock of every
 * record (GPU timestamps are mapped onto it).
 * @param ts: out, non-NULL.
 * @return SUCCESS; ERROR_INVALID_ARGUMENT if ts is NULL. Async-signal-safe.
 */
OMNIPROF_API omniprof_status_t omniprof_get_timestamp(omniprof_timestamp_t *ts);

/**
 * @brief **omniprof_get_thread_id** gives the calling thread's OS id (gettid).
 * @return SUCCESS; ERROR_INVALID_ARGUMENT if tid is NULL. Async-signal-safe.
 */
OMNIPROF_API omniprof_status_t omniprof_get_thread_id(omniprof_thread_id_t *tid);

/**
 * @brief **omniprof_get_status_name** returns the enumerator's name ("OMNIPROF_STATUS_SUCCESS").
 * Never NULL: an unknown value gives "OMNIPROF_STATUS_UNKNOWN". Thread-safe.
 */
OMNIPROF_API const char *omniprof_get_status_name(omniprof_status_t status);

/**
 * @brief **omniprof_get_status_string** returns a sentence describing the status.
 * Never NULL: an unknown value gives "unknown status". Thread-safe.
 */
OMNIPROF_API const char *omniprof_get_status_string(omniprof_status_t status);

OMNIPROF_EXTERN_C_END

#include "omniprof/registration.h"
#include "omniprof/context.h"
#include "omniprof/buffer.h"
#include "omniprof/internal_threading.h"
#include "omniprof/tracing.h"
#include "omniprof/gpu.h"
#include "omniprof/external_correlation.h"
#include "omniprof/intercept_table.h"
#include "omniprof/agent.h"
#include "omniprof/cpu.h"
#include "omniprof/causal.h"
#include "omniprof/instrument.h"
#include "omniprof/counters.h"
#include "omniprof/pc_sampling.h"
#include "omniprof/pm_sampling.h"
#include "omniprof/sass_metrics.h"
#include "omniprof/symbols.h"
#include "omniprof/comm.h"

#endif /* OMNIPROF_OMNIPROF_H */
