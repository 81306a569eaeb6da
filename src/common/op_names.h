/* op_names.h — the names of the operations of every kind whose operations are a fixed list (not
 * a vendor API's calls, which come from the vendor's own rows: src/backend/cuda/gen_cuda_api.py,
 * the OpenCL backend's table): one table, indexed by the public enums, that the SDK (markers),
 * the backends that produce these kinds (CUDA, CPU) and the database writer's fallback all read,
 * so that a database names an operation the same way whoever wrote it. */
#ifndef OMNIPROF_COMMON_OP_NAMES_H
#define OMNIPROF_COMMON_OP_NAMES_H

#include <stdint.h>

/* The table of `kind` (entry 0, the NONE operation, is NULL) and its length; NULL and 0 for a
 * kind whose operations are not a fixed list. */
const char *const *op_fixed_operation_names(uint32_t kind, int32_t *count);

/* One name; NULL for NONE, an operation out of range or a kind without a fixed list. */
const char *op_fixed_operation_name(uint32_t kind, int32_t op);

/* OMNIPROF_MEMORY_KIND_* as text ("PAGEABLE", ...); "UNKNOWN" out of range. */
const char *op_memory_kind_name(uint32_t k);

#endif /* OMNIPROF_COMMON_OP_NAMES_H */
