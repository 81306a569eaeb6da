/* cuda_api.h — names and argument decoders of every CUDA runtime, driver and NVTX call
 * (cuda_api.c, generated rows; not API). No SDK calls: usable by a test without the SDK. */
#ifndef OMNIPROF_BACKEND_CUDA_API_H
#define OMNIPROF_BACKEND_CUDA_API_H

#include <stdint.h>

#include <cupti.h>

#include "omniprof/fwd.h"
#include "omniprof/tracing.h"

/* The call's name ("cudaMemcpy", "cuLaunchKernel", "nvtxRangePushA"); NULL for an unused id. */
const char *op_cuda_api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
/* 1 if the call's arguments are known (possibly none); else 0 and *why says why. */
int op_cuda_api_args_known(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const char **why);
/* Decode CUPTI's parameter struct of the call into out[0..max); returns how many were written.
 * Pointers and integers as given, `const char *` as STRING (pointing into the program). */
uint32_t op_cuda_api_decode(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *params,
                            omniprof_arg_t *out, uint32_t max);

#endif /* OMNIPROF_BACKEND_CUDA_API_H */
