/* omniprof/context.h — contexts: the unit a tool configures, starts and stops.
 *
 * A context groups services (tracing kinds, counters, sampling). Records are produced for a
 * context only while it is active. Contexts are created during initialize (before the
 * configuration lock); they may be started and stopped at any time afterwards, from any thread. */
#ifndef OMNIPROF_CONTEXT_H
#define OMNIPROF_CONTEXT_H

#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

/**
 * @brief **omniprof_create_context** creates an inactive context.
 * @return SUCCESS; ERROR_INVALID_ARGUMENT (NULL); ERROR_CONFIGURATION_LOCKED after initialize;
 * ERROR_OUT_OF_RESOURCES; ERROR_FINALIZED.
 */
OMNIPROF_API omniprof_status_t omniprof_create_context(omniprof_context_id_t *context_id);

/**
 * @brief **omniprof_start_context** activates a context; its services begin producing.
 * @return SUCCESS (also if already active); ERROR_CONTEXT_NOT_FOUND; ERROR_CONTEXT_INVALID
 * (a service could not start: the log says which); ERROR_FINALIZED.
 */
OMNIPROF_API omniprof_status_t omniprof_start_context(omniprof_context_id_t context_id);

/** @brief **omniprof_stop_context** deactivates; SUCCESS also if inactive; ERROR_CONTEXT_NOT_FOUND. */
OMNIPROF_API omniprof_status_t omniprof_stop_context(omniprof_context_id_t context_id);

/** @brief **omniprof_context_is_active**: *status = 1 active, 0 not. ERROR_CONTEXT_NOT_FOUND. */
OMNIPROF_API omniprof_status_t omniprof_context_is_active(omniprof_context_id_t context_id, int *status);

/** @brief **omniprof_context_is_valid**: *status = 1 if the id names a context, 0 otherwise (SUCCESS). */
OMNIPROF_API omniprof_status_t omniprof_context_is_valid(omniprof_context_id_t context_id, int *status);

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_CONTEXT_H */
