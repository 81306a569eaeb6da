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

/* The driver entry points the application reaches through cuGetProcAddress (the path every
 * CUDA runtime takes) or through dlsym. A tool replaces an entry with its wrapper and calls the
 * previous value from it. Entries are never NULL when the table is delivered; an entry the
 * driver lacks points at a stub returning CUDA_ERROR_NOT_FOUND (500). Only entries present when
 * the table was delivered are honoured: change them inside the intercept-table callback.
 *
 * Fields are only appended (ABI rule); `size` is sizeof the struct the backend was built with. */
typedef struct omniprof_cuda_driver_table_t {
    uint64_t size;
    omniprof_cu_result_t (*cuLaunchKernel)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                           unsigned bz, unsigned shared_mem, void *stream, void **params,
                                           void **extra);
    omniprof_cu_result_t (*cuLaunchKernel_ptsz)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                                unsigned by, unsigned bz, unsigned shared_mem, void *stream,
                                                void **params, void **extra);
    omniprof_cu_result_t (*cuLaunchKernelEx)(const void *config, void *f, void **params, void **extra);
    omniprof_cu_result_t (*cuLaunchKernelEx_ptsz)(const void *config, void *f, void **params, void **extra);
    omniprof_cu_result_t (*cuMemAlloc_v2)(uint64_t *dptr, size_t bytes);
    omniprof_cu_result_t (*cuMemFree_v2)(uint64_t dptr);
    omniprof_cu_result_t (*cuMemcpyHtoD_v2)(uint64_t dst, const void *src, size_t bytes);
    omniprof_cu_result_t (*cuMemcpyDtoH_v2)(void *dst, uint64_t src, size_t bytes);
    omniprof_cu_result_t (*cuMemcpyAsync)(uint64_t dst, uint64_t src, size_t bytes, void *stream);
    omniprof_cu_result_t (*cuMemcpyAsync_ptsz)(uint64_t dst, uint64_t src, size_t bytes, void *stream);
    omniprof_cu_result_t (*cuStreamSynchronize)(void *stream);
    omniprof_cu_result_t (*cuCtxSynchronize)(void);
    omniprof_cu_result_t (*cuGraphLaunch)(void *graph_exec, void *stream);
    omniprof_cu_result_t (*cuGraphLaunch_ptsz)(void *graph_exec, void *stream);
} omniprof_cuda_driver_table_t;

/* Names of the table's entries in order (for tools that iterate); NULL-terminated. */
#define OMNIPROF_CUDA_DRIVER_TABLE_ENTRIES                                                              \
    "cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz", "cuMemAlloc_v2", \
        "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyAsync", "cuMemcpyAsync_ptsz",        \
        "cuStreamSynchronize", "cuCtxSynchronize", "cuGraphLaunch", "cuGraphLaunch_ptsz", NULL

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_CUDA_H */
