/* omniprof/cuda.h — CUDA-specific public pieces of the CUDA backend: the driver API intercept
 * table handed to tools (OMNIPROF_INTERCEPT_TABLE_CUDA_DRIVER) and the layout of CUDA callback
 * payloads.
 *
 * This header does not include cuda.h: entry points are declared with plain C types (handles
 * as void *, CUresult as int) so a tool can use the table without the CUDA toolkit.
 *
 * Callback payloads (omniprof_callback_tracing_api_data_t in tracing.h) of the CUDA kinds:
 *   args          points at CUPTI's parameter struct of the call (`<function>_params` from
 *                 CUPTI's generated_cuda_meta.h / generated_cuda_runtime_api_meta.h), valid
 *                 only during the callback;
 *   retval        points at the CUresult / cudaError_t in EXIT, NULL in ENTER;
 *   symbol_name   the kernel's mangled name for launch calls, else NULL;
 *   decoded_args  launches: gridDimX..Z, blockDimX..Z, sharedMemBytes, stream, function;
 *                 copies: dst, src, bytes, copyKind, stream; sets: dst, value, bytes, stream;
 *                 allocations: ptr (EXIT only), bytes. */
#ifndef OMNIPROF_CUDA_H
#define OMNIPROF_CUDA_H

#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

/* Version of omniprof_cuda_driver_table_t; passed as lib_version to the intercept callback. */
#define OMNIPROF_CUDA_DRIVER_TABLE_VERSION 1

typedef int omniprof_cu_result_t; /* CUresult */

/* The table's entries, one row each in the struct's order: X(FIELD, LOOKUP, PTSZ, PARAMS, ARGS).
 * FIELD is the field and the driver's symbol of the entry; LOOKUP the name a runtime asks
 * cuGetProcAddress for (without _v2 / _ptsz); PTSZ 1 for the per-thread-default-stream flavour
 * of LOOKUP (asked for with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM); PARAMS the parameter
 * list and ARGS the same names as arguments. The struct below, the names list, and the
 * preloaded library's stubs, wrappers, exported symbols and address rewriting are expanded from
 * these rows. Rows are only appended (ABI rule). */
#define OMNIPROF_CUDA_DRIVER_TABLE(X)                                                              \
    X(cuLaunchKernel, "cuLaunchKernel", 0,                                                         \
      (void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,      \
       unsigned shared_mem, void *stream, void **params, void **extra),                            \
      (f, gx, gy, gz, bx, by, bz, shared_mem, stream, params, extra))                              \
    X(cuLaunchKernel_ptsz, "cuLaunchKernel", 1,                                                    \
      (void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,      \
       unsigned shared_mem, void *stream, void **params, void **extra),                            \
      (f, gx, gy, gz, bx, by, bz, shared_mem, stream, params, extra))                              \
    X(cuLaunchKernelEx, "cuLaunchKernelEx", 0,                                                     \
      (const void *config, void *f, void **params, void **extra), (config, f, params, extra))      \
    X(cuLaunchKernelEx_ptsz, "cuLaunchKernelEx", 1,                                                \
      (const void *config, void *f, void **params, void **extra), (config, f, params, extra))      \
    X(cuMemAlloc_v2, "cuMemAlloc", 0, (uint64_t *dptr, size_t bytes), (dptr, bytes))               \
    X(cuMemFree_v2, "cuMemFree", 0, (uint64_t dptr), (dptr))                                        \
    X(cuMemcpyHtoD_v2, "cuMemcpyHtoD", 0, (uint64_t dst, const void *src, size_t bytes),           \
      (dst, src, bytes))                                                                           \
    X(cuMemcpyDtoH_v2, "cuMemcpyDtoH", 0, (void *dst, uint64_t src, size_t bytes),                 \
      (dst, src, bytes))                                                                           \
    X(cuMemcpyAsync, "cuMemcpyAsync", 0, (uint64_t dst, uint64_t src, size_t bytes, void *stream), \
      (dst, src, bytes, stream))                                                                   \
    X(cuMemcpyAsync_ptsz, "cuMemcpyAsync", 1,                                                      \
      (uint64_t dst, uint64_t src, size_t bytes, void *stream), (dst, src, bytes, stream))         \
    X(cuStreamSynchronize, "cuStreamSynchronize", 0, (void *stream), (stream))                     \
    X(cuCtxSynchronize, "cuCtxSynchronize", 0, (void), ())                                         \
    X(cuGraphLaunch, "cuGraphLaunch", 0, (void *graph_exec, void *stream), (graph_exec, stream))   \
    X(cuGraphLaunch_ptsz, "cuGraphLaunch", 1, (void *graph_exec, void *stream),                    \
      (graph_exec, stream))

/* The driver entry points the application reaches through cuGetProcAddress (the path every
 * CUDA runtime takes) or through dlsym. A tool replaces an entry with its wrapper and calls the
 * previous value from it. Entries are never NULL when the table is delivered; an entry the
 * driver lacks points at a stub returning CUDA_ERROR_NOT_FOUND (500). Only entries present when
 * the table was delivered are honoured: change them inside the intercept-table callback.
 * `size` is sizeof the struct the backend was built with. */
#define OMNIPROF_CU_FIELD_(FIELD, LOOKUP, PTSZ, PARAMS, ARGS) omniprof_cu_result_t(*FIELD) PARAMS;
typedef struct omniprof_cuda_driver_table_t {
    uint64_t size;
    OMNIPROF_CUDA_DRIVER_TABLE(OMNIPROF_CU_FIELD_)
} omniprof_cuda_driver_table_t;
#undef OMNIPROF_CU_FIELD_

/* Names of the table's entries in order (for tools that iterate); NULL-terminated. */
#define OMNIPROF_CU_NAME_(FIELD, LOOKUP, PTSZ, PARAMS, ARGS) #FIELD,
#define OMNIPROF_CUDA_DRIVER_TABLE_ENTRIES OMNIPROF_CUDA_DRIVER_TABLE(OMNIPROF_CU_NAME_) NULL

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_CUDA_H */
