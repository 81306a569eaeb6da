/* omniprof/intercept_table.h — dispatch-table chaining (seed 004).
 *
 * A runtime (the user API library, the CUDA driver through the CUDA backend) hands its table
 * of entry points to the SDK. Each tool that registered for that table receives it, in
 * registration order, and may replace entries with wrappers that call the previous value. The
 * application then calls through the final table. Register from omniprof_configure or
 * initialize to be sure to see every table. */
#ifndef OMNIPROF_INTERCEPT_TABLE_H
#define OMNIPROF_INTERCEPT_TABLE_H

#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

/* tables[i] point at the runtime's tables (e.g. one omniprof_user_api_table_t). */
typedef void (*omniprof_intercept_library_cb_t)(omniprof_intercept_table_t type, uint64_t lib_version,
                                                uint64_t lib_instance, void **tables, uint64_t num_tables,
                                                void *data);

/**
 * @brief **omniprof_at_intercept_table_registration** asks for the tables in `types` (bitmask).
 * Tables already registered are delivered at once, on the calling thread.
 * @return SUCCESS; ERROR_INVALID_ARGUMENT (NULL callback or empty mask);
 * ERROR_CONFIGURATION_LOCKED; ERROR_NOT_AVAILABLE (a requested table's backend is not built).
 */
OMNIPROF_API omniprof_status_t omniprof_at_intercept_table_registration(omniprof_intercept_library_cb_t callback,
                                                                        int types, void *data);

/** @brief **omniprof_query_intercept_table_name**: "USER_API", "CUDA_DRIVER", "OPENCL",
 * "CUDA_RUNTIME", "NVTX" (kinds.def). */
OMNIPROF_API omniprof_status_t omniprof_query_intercept_table_name(omniprof_intercept_table_t type,
                                                                   const char **name, uint64_t *name_len);

/**
 * @brief **omniprof_set_api_table** is called by a runtime library to hand its tables to the SDK
 * (the user API library does so on its first call). Not for tools.
 * @return SUCCESS; ERROR_INVALID_ARGUMENT; ERROR_FINALIZED (the table is left as it was).
 */
OMNIPROF_API omniprof_status_t omniprof_set_api_table(const char *name, uint64_t lib_version, uint64_t lib_instance,
                                                      void **tables, uint64_t num_tables);

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_INTERCEPT_TABLE_H */
