/* omniprof/internal_threading.h — the SDK's callback threads, and notice of its own threads.
 *
 * One default callback thread delivers every buffer unless a tool creates more and assigns
 * buffers to them (during configuration). All SDK threads start with every signal blocked. */
#ifndef OMNIPROF_INTERNAL_THREADING_H
#define OMNIPROF_INTERNAL_THREADING_H

#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

/**
 * @brief **omniprof_create_callback_thread** creates a delivery thread (started lazily).
 * @return SUCCESS; ERROR_INVALID_ARGUMENT; ERROR_CONFIGURATION_LOCKED; ERROR_OUT_OF_RESOURCES.
 */
OMNIPROF_API omniprof_status_t omniprof_create_callback_thread(omniprof_callback_thread_t *cb_thread_id);

/**
 * @brief **omniprof_assign_callback_thread** makes cb_thread_id deliver buffer_id's records.
 * @return SUCCESS; ERROR_BUFFER_NOT_FOUND; ERROR_THREAD_NOT_FOUND; ERROR_CONFIGURATION_LOCKED.
 */
OMNIPROF_API omniprof_status_t omniprof_assign_callback_thread(omniprof_buffer_id_t buffer_id,
                                                               omniprof_callback_thread_t cb_thread_id);

typedef void (*omniprof_internal_thread_library_cb_t)(omniprof_runtime_library_t lib, void *data);

/**
 * @brief **omniprof_at_internal_thread_create** asks to be called on the creating thread just
 * before (precreate) and just after (postcreate) the SDK or a backend creates a thread of one
 * of `libs`, so that a tool can tell profiler threads from the application's.
 * @return SUCCESS; ERROR_INVALID_ARGUMENT (both callbacks NULL); ERROR_CONFIGURATION_LOCKED.
 */
OMNIPROF_API omniprof_status_t omniprof_at_internal_thread_create(omniprof_internal_thread_library_cb_t precreate,
                                                                  omniprof_internal_thread_library_cb_t postcreate,
                                                                  int libs, void *data);

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_INTERNAL_THREADING_H */
