/* cuda_api.c — names and argument decoders of every CUDA runtime, driver and NVTX call, from the
 * rows the build generates out of CUPTI's own headers (cuda_api.def, written by
 * gen_cuda_api.py into the build tree; its head says what a row holds).
 *
 * One table per callback domain, indexed by CUPTI's callback id: the call's name (the id's name
 * without CUPTI's "_v<digits>" suffix, what cuptiGetCallbackName gives once that suffix is cut)
 * and a decoder generated from the row, which reads CUPTI's parameter struct of the call and
 * writes one omniprof_arg_t per argument. An id whose arguments the toolkit does not describe
 * (Windows-only, removed, nvcc-internal: the row says why) has its name and no decoder.
 *
 * Nothing here allocates, locks or calls the SDK: the decoders read only the parameter struct
 * (never through an argument the program passed: an out-pointer is recorded as the pointer), so
 * they are safe on any thread, at ENTER and EXIT alike. String arguments (`const char *`) point
 * into the program's memory; a caller that keeps them past the call interns them. */
#include <stddef.h>
#include <stdint.h>

#include "backend/cuda/cuda_api.h"

#include "cuda_api_args.h" /* generated: argument structs of calls CUPTI gives no struct for */

typedef uint32_t (*op_cuda_decode_fn)(const void *params, omniprof_arg_t *out, uint32_t max);

typedef struct api_row {
    const char *name;
    op_cuda_decode_fn decode; /* NULL: no arguments (NOARGS) or not known (NONE, see why) */
    const char *why;          /* NONE rows: why the arguments are not known */
} api_row;

static void put(omniprof_arg_t *a, const char *name, omniprof_arg_type_t type)
{
    a->name = name;
    a->type = type;
    a->reserved = 0;
}

#define OP_CA_U(NAME, V)                            \
    if (n < max) {                                  \
        put(&out[n], NAME, OMNIPROF_ARG_TYPE_UINT); \
        out[n++].value.u64 = (uint64_t)(V);         \
    }
#define OP_CA_I(NAME, V)                           \
    if (n < max) {                                 \
        put(&out[n], NAME, OMNIPROF_ARG_TYPE_INT); \
        out[n++].value.i64 = (int64_t)(V);         \
    }
#define OP_CA_D(NAME, V)                              \
    if (n < max) {                                    \
        put(&out[n], NAME, OMNIPROF_ARG_TYPE_DOUBLE); \
        out[n++].value.f64 = (double)(V);             \
    }
#define OP_CA_P(NAME, V)                               \
    if (n < max) {                                     \
        put(&out[n], NAME, OMNIPROF_ARG_TYPE_POINTER); \
        out[n++].value.u64 = (uint64_t)(uintptr_t)(V); \
    }
#define OP_CA_S(NAME, V)                                                               \
    if (n < max) {                                                                     \
        const char *s_ = (V);                                                          \
        put(&out[n], NAME, s_ ? OMNIPROF_ARG_TYPE_STRING : OMNIPROF_ARG_TYPE_POINTER); \
        if (s_)                                                                        \
            out[n++].value.str = s_;                                                   \
        else                                                                           \
            out[n++].value.u64 = 0;                                                    \
    }
#define OP_CA(K, NAME, V) OP_CA_##K(NAME, V)
#define OP_CAG(GUARD, K, NAME, V) \
    if (GUARD) { OP_CA_##K(NAME, V) }

/* One decoder per row with arguments: dec_<DOMAIN>_<CBID>. */
#define OP_CUDA_API(D, C, N, P, X)                                                   \
    static uint32_t dec_##D##_##C(const void *p_, omniprof_arg_t *out, uint32_t max) \
    {                                                                                \
        const P *a = p_;                                                             \
        uint32_t n = 0;                                                              \
        (void)a, (void)out, (void)max;                                               \
        X return n;                                                                  \
    }
#include "cuda_api.def"

/* The three tables. A row expands only in its own domain's table. NAME is made a string at
 * the first expansion: cuda.h defines many names as macros (cuMemAlloc → cuMemAlloc_v2). */
#define ROW_API(D, C, S, X) [C] = {S, dec_##D##_##C, NULL},
#define ROW_NOARGS(C, S) [C] = {S, NULL, NULL},
#define ROW_NONE(C, S, W) [C] = {S, NULL, W},
#define SKIP(...)

#define OP_CUDA_API(D, C, N, P, X) ROW_API_##D(D, C, #N, X)
#define OP_CUDA_API_NOARGS(D, C, N) ROW_NOARGS_##D(C, #N)
#define OP_CUDA_API_NONE(D, C, N, W) ROW_NONE_##D(C, #N, W)

#define ROW_API_RUNTIME ROW_API
#define ROW_NOARGS_RUNTIME ROW_NOARGS
#define ROW_NONE_RUNTIME ROW_NONE
#define ROW_API_DRIVER SKIP
#define ROW_NOARGS_DRIVER SKIP
#define ROW_NONE_DRIVER SKIP
#define ROW_API_NVTX SKIP
#define ROW_NOARGS_NVTX SKIP
#define ROW_NONE_NVTX SKIP
static const api_row k_runtime[CUPTI_RUNTIME_TRACE_CBID_SIZE] = {
#include "cuda_api.def"
};

#define OP_CUDA_API(D, C, N, P, X) ROW_API_##D(D, C, #N, X)
#define OP_CUDA_API_NOARGS(D, C, N) ROW_NOARGS_##D(C, #N)
#define OP_CUDA_API_NONE(D, C, N, W) ROW_NONE_##D(C, #N, W)
#undef ROW_API_RUNTIME
#undef ROW_NOARGS_RUNTIME
#undef ROW_NONE_RUNTIME
#undef ROW_API_DRIVER
#undef ROW_NOARGS_DRIVER
#undef ROW_NONE_DRIVER
#define ROW_API_RUNTIME SKIP
#define ROW_NOARGS_RUNTIME SKIP
#define ROW_NONE_RUNTIME SKIP
#define ROW_API_DRIVER ROW_API
#define ROW_NOARGS_DRIVER ROW_NOARGS
#define ROW_NONE_DRIVER ROW_NONE
static const api_row k_driver[CUPTI_DRIVER_TRACE_CBID_SIZE] = {
#include "cuda_api.def"
};

#define OP_CUDA_API(D, C, N, P, X) ROW_API_##D(D, C, #N, X)
#define OP_CUDA_API_NOARGS(D, C, N) ROW_NOARGS_##D(C, #N)
#define OP_CUDA_API_NONE(D, C, N, W) ROW_NONE_##D(C, #N, W)
#undef ROW_API_DRIVER
#undef ROW_NOARGS_DRIVER
#undef ROW_NONE_DRIVER
#undef ROW_API_NVTX
#undef ROW_NOARGS_NVTX
#undef ROW_NONE_NVTX
#define ROW_API_DRIVER SKIP
#define ROW_NOARGS_DRIVER SKIP
#define ROW_NONE_DRIVER SKIP
#define ROW_API_NVTX ROW_API
#define ROW_NOARGS_NVTX ROW_NOARGS
#define ROW_NONE_NVTX ROW_NONE
static const api_row k_nvtx[CUPTI_CBID_NVTX_SIZE] = {
#include "cuda_api.def"
};

static const api_row *row(CUpti_CallbackDomain dom, CUpti_CallbackId id)
{
    const api_row *r = NULL;
    if (dom == CUPTI_CB_DOMAIN_RUNTIME_API && id < CUPTI_RUNTIME_TRACE_CBID_SIZE)
        r = &k_runtime[id];
    else if (dom == CUPTI_CB_DOMAIN_DRIVER_API && id < CUPTI_DRIVER_TRACE_CBID_SIZE)
        r = &k_driver[id];
    else if (dom == CUPTI_CB_DOMAIN_NVTX && id < CUPTI_CBID_NVTX_SIZE)
        r = &k_nvtx[id];
    return r && r->name ? r : NULL;
}

const char *op_cuda_api_name(CUpti_CallbackDomain dom, CUpti_CallbackId id)
{
    const api_row *r = row(dom, id);
    return r ? r->name : NULL;
}

int op_cuda_api_args_known(CUpti_CallbackDomain dom, CUpti_CallbackId id, const char **why)
{
    const api_row *r = row(dom, id);
    if (why) *why = r ? r->why : "no such callback id";
    return r && !r->why;
}

uint32_t op_cuda_api_decode(CUpti_CallbackDomain dom, CUpti_CallbackId id, const void *params,
                            omniprof_arg_t *out, uint32_t max)
{
    const api_row *r = row(dom, id);
    if (!r || !r->decode || !params || !out) return 0;
    return r->decode(params, out, max);
}
