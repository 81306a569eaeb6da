/* omniprof/external_correlation.h — ids a tool attaches to everything a thread does.
 *
 * Each (context, thread) has a stack. Records produced on a thread carry the top of the stack
 * as correlation_id.external; asynchronous activity (kernels, copies) carries the value that was
 * on top when it was launched. A thread that never pushed inherits the main thread's top. */
#ifndef OMNIPROF_EXTERNAL_CORRELATION_H
#define OMNIPROF_EXTERNAL_CORRELATION_H

#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

/**
 * @brief **omniprof_push_external_correlation_id** pushes `external_correlation_id` on the
 * stack of thread `tid` (use the calling thread's id; other threads' stacks may not be pushed).
 * @return SUCCESS; ERROR_CONTEXT_NOT_FOUND; ERROR_THREAD_NOT_FOUND (tid is not the caller).
 */
OMNIPROF_API omniprof_status_t omniprof_push_external_correlation_id(omniprof_context_id_t context,
                                                                     omniprof_thread_id_t tid,
                                                                     omniprof_user_data_t external_correlation_id);

/**
 * @brief **omniprof_pop_external_correlation_id** pops; the popped value goes to *external (may be NULL).
 * @return SUCCESS; ERROR_CONTEXT_NOT_FOUND; ERROR_THREAD_NOT_FOUND; ERROR (stack empty).
 */
OMNIPROF_API omniprof_status_t omniprof_pop_external_correlation_id(omniprof_context_id_t context,
                                                                    omniprof_thread_id_t tid,
                                                                    omniprof_user_data_t *external_correlation_id);

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_EXTERNAL_CORRELATION_H */
