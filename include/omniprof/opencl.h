/* omniprof/opencl.h — OpenCL-specific public pieces of the OpenCL backend: operation ids of the
 * OPENCL_API kinds, the layout of their callback payloads, and the OpenCL intercept table
 * (OMNIPROF_INTERCEPT_TABLE_OPENCL).
 *
 * The backend is an ICD-loader layer (docs/opencl.md): it sits between the application and the
 * OpenCL drivers in the loader's dispatch chain, and sees every call made through the loader.
 *
 * Operations. The operation id of an OpenCL call is its position in Khronos' ICD dispatch table
 * (`cl_icd_dispatch` in <CL/cl_icd.h>, an ABI that only grows) plus one, so a tool that
 * includes <CL/cl_icd.h> can name one without a table of ours:
 *     OMNIPROF_OPENCL_OPERATION(clEnqueueNDRangeKernel)   == 60
 * omniprof_query_buffer_tracing_kind_operation_name() gives the function's name.
 *
 * Callback payloads (omniprof_callback_tracing_api_data_t in tracing.h) of OPENCL_API:
 *   function_name  "clEnqueueNDRangeKernel", ...
 *   args           an array of `const void *`, one per parameter in declaration order, each
 *                  pointing at that argument (valid only during the callback);
 *   retval         points at the return value in EXIT (cl_int, or the returned handle or
 *                  pointer), NULL in ENTER and for functions returning void;
 *   symbol_name    the kernel's name for clEnqueueNDRangeKernel/clEnqueueTask, else NULL;
 *   decoded_args   every parameter except errcode_ret (integers as UINT/INT, handles and other
 *                  pointers as POINTER, kernel_name/func_name/options as STRING), then for
 *                  dispatches the kernel name and the global/local sizes.
 * Buffer records of OPENCL_API are omniprof_buffer_tracing_api_record_t with the same decoded
 * arguments; return_value is the call's cl_int (for handle-returning calls: *errcode_ret).
 *
 * Intercept table. tables[0] of the OMNIPROF_INTERCEPT_TABLE_OPENCL delivery is a
 * `cl_icd_dispatch *` (lib_version OMNIPROF_OPENCL_TABLE_VERSION). A tool replaces an entry with
 * its wrapper and calls the previous value from it; the previous value leads to omniprof's
 * tracing and then to the next layer of the loader (or the driver). Entries are never NULL for
 * the functions OpenCL defines on this platform. The layer reads the table on every call, so a
 * replacement takes effect at once; make it in the intercept-table callback all the same (a
 * call in flight may still use the old entry). Calls the tool makes from its wrapper through the
 * ordinary cl* functions are traced like the application's. */
#ifndef OMNIPROF_OPENCL_H
#define OMNIPROF_OPENCL_H

#include <stddef.h>

#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

/* Version of the table layout delivered to intercept-table callbacks. */
#define OMNIPROF_OPENCL_TABLE_VERSION 1

/* Operation id of an OPENCL_API call, from its cl_icd_dispatch field (needs <CL/cl_icd.h>). */
#define OMNIPROF_OPENCL_OPERATION(field) ((int32_t)(offsetof(cl_icd_dispatch, field) / sizeof(void *)) + 1)

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_OPENCL_H */
