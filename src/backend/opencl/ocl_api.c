/* ocl_api.c — the traced wrapper of every OpenCL dispatch entry (generated from ocl_api.def):
 * OPENCL_API buffer records and ENTER/EXIT callbacks with names and decoded arguments,
 * correlation ids (the SDK's, with the thread's external ids), and the names, operations and
 * arguments the SDK asks the backend for.
 *
 * A wrapper, trace_<NAME>, does:
 *   1. ocl_enter: nothing traces this call → forward at once (to ocl_next, or to the special
 *      implementation with f == NULL). Otherwise begin a correlation id.
 *   2. For calls returning a handle, make errcode_ret non-NULL (our own variable when the
 *      program passed NULL), so the record has the error code; the program sees no difference.
 *   3. Callback ENTER (arguments decoded), then the start timestamp, the call, the end timestamp.
 *   4. ocl_exit: callback EXIT, the buffer record, the correlation id ended (invariant 2).
 *
 * Cost when traced: two clock reads, the SDK's correlation begin/end, the decoding of the
 * parameters (stores only) and one emit. When nothing is traced: two relaxed loads. */
#include <string.h>

#include "backend/opencl/ocl_internal.h"
#include "common/clock.h"

static const char *const g_names[OCL_NUM_ENTRIES] = {
#define OCL_API(IDX, NAME, RK, RET, S, PARAMS, ARGS, ADDRS, DECODE) [IDX] = #NAME,
#define OCL_API_NONE(IDX, NAME)
#include "backend/opencl/ocl_api.def"
#undef OCL_API
#undef OCL_API_NONE
};

#define OP_OF(NAME) OMNIPROF_OPENCL_OPERATION(NAME) /* omniprof/opencl.h */

const char *ocl_api_name(int32_t op)
{
    return op > 0 && (uint32_t)op <= OCL_NUM_ENTRIES ? g_names[op - 1] : NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Frames.                                                                                     */

/* The activity kind (OCL_ACT_*) a call can produce records of; 0 for most calls. */
static int op_activity(int32_t op)
{
    switch (op) {
    case OP_OF(clEnqueueNDRangeKernel):
    case OP_OF(clEnqueueTask): return OCL_ACT_KERNEL;
    case OP_OF(clEnqueueReadBuffer):
    case OP_OF(clEnqueueWriteBuffer):
    case OP_OF(clEnqueueCopyBuffer):
    case OP_OF(clEnqueueReadBufferRect):
    case OP_OF(clEnqueueWriteBufferRect):
    case OP_OF(clEnqueueCopyBufferRect):
    case OP_OF(clEnqueueReadImage):
    case OP_OF(clEnqueueWriteImage):
    case OP_OF(clEnqueueCopyImage):
    case OP_OF(clEnqueueCopyImageToBuffer):
    case OP_OF(clEnqueueCopyBufferToImage):
    case OP_OF(clEnqueueSVMMemcpy):
    case OP_OF(clEnqueueMapBuffer):
    case OP_OF(clEnqueueMapImage):
    case OP_OF(clEnqueueUnmapMemObject):
    case OP_OF(clEnqueueSVMMap):
    case OP_OF(clEnqueueSVMUnmap): return OCL_ACT_COPY;
    case OP_OF(clEnqueueFillBuffer):
    case OP_OF(clEnqueueFillImage):
    case OP_OF(clEnqueueSVMMemFill): return OCL_ACT_SET;
    case OP_OF(clCreateBuffer):
    case OP_OF(clCreateBufferWithProperties):
    case OP_OF(clCreateImage):
    case OP_OF(clCreateImage2D):
    case OP_OF(clCreateImage3D):
    case OP_OF(clCreateImageWithProperties):
    case OP_OF(clReleaseMemObject):
    case OP_OF(clSVMAlloc):
    case OP_OF(clSVMFree):
    case OP_OF(clEnqueueSVMFree): return OCL_ACT_ALLOC;
    default: return 0;
    }
}

int ocl_enter(ocl_frame *f, int32_t op)
{
    if (!atomic_load_explicit(&ocl_on, memory_order_relaxed) || ocl_internal_calls) return 0;
    int buf = op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_OPENCL_API, op);
    int cbk = op_sdk_callback_enabled(OMNIPROF_CALLBACK_TRACING_OPENCL_API, op);
    int act = op_activity(op) & atomic_load_explicit(&ocl_activity, memory_order_relaxed);
    if (!buf && !cbk && !act) return 0;
    f->op = op;
    f->buf = (uint8_t)buf;
    f->cbk = (uint8_t)cbk;
    f->symbol = NULL;
    f->nextra = 0;
    f->start = 0;
    op_sdk_correlation_begin(&f->corr);
    return 1;
}

void ocl_end(ocl_frame *f) { op_sdk_correlation_end(&f->corr); }

static inline void arg_u(omniprof_arg_t *a, const char *name, uint64_t v)
{
    a->name = name, a->type = OMNIPROF_ARG_TYPE_UINT, a->reserved = 0, a->value.u64 = v;
}
static inline void arg_i(omniprof_arg_t *a, const char *name, int64_t v)
{
    a->name = name, a->type = OMNIPROF_ARG_TYPE_INT, a->reserved = 0, a->value.i64 = v;
}
static inline void arg_p(omniprof_arg_t *a, const char *name, const void *v)
{
    a->name = name, a->type = OMNIPROF_ARG_TYPE_POINTER, a->reserved = 0, a->value.u64 = (uint64_t)(uintptr_t)v;
}
/* Strings are interned (records outlive the call): only kernel names, function names and build
 * options are stored as text, a few distinct values per process; long ones are cut. */
static void arg_s(omniprof_arg_t *a, const char *name, const char *s)
{
    char cut[256];
    if (s && strlen(s) >= sizeof cut) {
        memcpy(cut, s, sizeof cut - 4);
        memcpy(cut + sizeof cut - 4, "...", 4);
        s = cut;
    }
    a->name = name, a->type = OMNIPROF_ARG_TYPE_STRING, a->reserved = 0, a->value.str = s ? op_sdk_intern(s) : "";
}

void ocl_add_arg_u(ocl_frame *f, const char *name, uint64_t v)
{
    if (f && f->nextra < OCL_MAX_EXTRA) arg_u(&f->extra[f->nextra++], name, v);
}
void ocl_add_arg_interned(ocl_frame *f, const char *name, const char *interned)
{
    if (!f || f->nextra >= OCL_MAX_EXTRA) return;
    omniprof_arg_t *a = &f->extra[f->nextra++];
    a->name = name, a->type = OMNIPROF_ARG_TYPE_STRING, a->reserved = 0, a->value.str = interned;
}

/* The kernel a dispatch runs (its second parameter), for ENTER callbacks. */
static const char *dispatch_symbol(int32_t op, const void *const *addrs)
{
    if (op != OP_OF(clEnqueueNDRangeKernel) && op != OP_OF(clEnqueueTask)) return NULL;
    uint64_t id;
    return ocl_kernel_name(*(const cl_kernel *)addrs[1], &id);
}

static void cb_enter(ocl_frame *f, const void *const *addrs, const omniprof_arg_t *args, uint32_t n)
{
    f->symbol = dispatch_symbol(f->op, addrs);
    omniprof_callback_tracing_api_data_t p = {sizeof p, ocl_api_name(f->op), addrs, NULL, f->symbol, n, 0, args};
    memset(&f->cbstate, 0, sizeof f->cbstate);
    op_sdk_callback_enter(OMNIPROF_CALLBACK_TRACING_OPENCL_API, f->op, &f->corr, &p, &f->cbstate);
}

typedef union api_storage {
    omniprof_buffer_tracing_api_record_t rec;
    unsigned char bytes[sizeof(omniprof_buffer_tracing_api_record_t) + (OCL_MAX_ARGS + OCL_MAX_EXTRA) * sizeof(omniprof_arg_t)];
} api_storage;

/* args has room for OCL_MAX_ARGS + OCL_MAX_EXTRA entries; n are filled. */
static void ocl_exit(ocl_frame *f, uint64_t end, const void *const *addrs, const void *retp, int32_t rv,
                     omniprof_arg_t *args, uint32_t n)
{
    for (uint32_t i = 0; i < f->nextra && n < OCL_MAX_ARGS + OCL_MAX_EXTRA; i++) args[n++] = f->extra[i];
    if (f->cbk) {
        omniprof_callback_tracing_api_data_t p = {sizeof p, ocl_api_name(f->op), addrs, retp, f->symbol, n, 0, args};
        op_sdk_callback_exit(OMNIPROF_CALLBACK_TRACING_OPENCL_API, f->op, &f->corr, &p, &f->cbstate);
    }
    if (f->buf) {
        api_storage st;
        omniprof_buffer_tracing_api_record_t *r = &st.rec;
        memcpy(r->args, args, n * sizeof(omniprof_arg_t));
        r->size = sizeof *r + n * sizeof(omniprof_arg_t);
        r->kind = OMNIPROF_BUFFER_TRACING_OPENCL_API;
        r->operation = f->op;
        r->correlation_id = f->corr;
        r->start_timestamp = f->start;
        r->end_timestamp = end;
        r->thread_id = ocl_tid();
        r->num_args = n;
        r->return_value = rv;
        op_sdk_emit(OMNIPROF_BUFFER_TRACING_OPENCL_API, f->op, r, NULL);
    }
    op_sdk_correlation_end(&f->corr);
}

/* ------------------------------------------------------------------------------------------ */
/* The wrappers.                                                                               */

#define OCL_U(x) arg_u(&a_[n_++], #x, (uint64_t)(x));
#define OCL_I(x) arg_i(&a_[n_++], #x, (int64_t)(x));
#define OCL_P(x) arg_p(&a_[n_++], #x, (const void *)(uintptr_t)(x));
#define OCL_S(x) arg_s(&a_[n_++], #x, (x));

#define OCL_CALL_G(NAME, F, ARGS) ocl_next.NAME ARGS
#define OCL_CALL_S(NAME, F, ARGS) ocl_impl_##NAME(F, OCL_UNPAREN ARGS)

#define OCL_PRE_ERR
#define OCL_PRE_PTR
#define OCL_PRE_VOID
#define OCL_PRE_OBJ                                                                                \
    cl_int e_ = CL_SUCCESS;                                                                        \
    if (!errcode_ret) errcode_ret = &e_;
#define OCL_RUN_ERR(RET, CALL) RET r_ = CALL;
#define OCL_RUN_OBJ OCL_RUN_ERR
#define OCL_RUN_PTR OCL_RUN_ERR
#define OCL_RUN_VOID(RET, CALL) CALL;
#define OCL_RETP_ERR (&r_)
#define OCL_RETP_OBJ (&r_)
#define OCL_RETP_PTR (&r_)
#define OCL_RETP_VOID NULL
#define OCL_RV_ERR ((int32_t)r_)
#define OCL_RV_OBJ ((int32_t)*errcode_ret)
#define OCL_RV_PTR 0
#define OCL_RV_VOID 0
#define OCL_FAST_ERR(CALL) return CALL;
#define OCL_FAST_OBJ OCL_FAST_ERR
#define OCL_FAST_PTR OCL_FAST_ERR
#define OCL_FAST_VOID(CALL)                                                                        \
    {                                                                                              \
        CALL;                                                                                      \
        return;                                                                                    \
    }
#define OCL_RETURN_ERR return r_;
#define OCL_RETURN_OBJ return r_;
#define OCL_RETURN_PTR return r_;
#define OCL_RETURN_VOID return;

#define OCL_API(IDX, NAME, RK, RET, S, PARAMS, ARGS, ADDRS, DECODE)                                \
    static RET CL_API_CALL trace_##NAME PARAMS                                                     \
    {                                                                                              \
        ocl_frame f_;                                                                              \
        if (!ocl_enter(&f_, IDX + 1)) OCL_FAST_##RK(OCL_CALL_##S(NAME, NULL, ARGS)) \
        OCL_PRE_##RK                                                                               \
        const void *const p_[] = {OCL_UNPAREN ADDRS};                                              \
        omniprof_arg_t a_[OCL_MAX_ARGS + OCL_MAX_EXTRA];                                           \
        uint32_t n_ = 0;                                                                           \
        if (f_.cbk) {                                                                              \
            DECODE                                                                                 \
            cb_enter(&f_, p_, a_, n_);                                                             \
            n_ = 0;                                                                                \
        }                                                                                          \
        if (f_.buf) f_.start = op_now_ns();                                                        \
        OCL_RUN_##RK(RET, OCL_CALL_##S(NAME, &f_, ARGS))                                           \
        uint64_t end_ = f_.buf ? op_now_ns() : 0;                                                  \
        if (f_.buf || f_.cbk) {                                                                    \
            DECODE                                                                                 \
            ocl_exit(&f_, end_, p_, OCL_RETP_##RK, OCL_RV_##RK, a_, n_);                           \
        } else {                                                                                   \
            ocl_end(&f_);                                                                          \
        }                                                                                          \
        OCL_RETURN_##RK                                                                            \
    }
#define OCL_API_NONE(IDX, NAME)
#include "backend/opencl/ocl_api.def"
#undef OCL_API
#undef OCL_API_NONE

const cl_icd_dispatch ocl_trace = {
#define OCL_API(IDX, NAME, RK, RET, S, PARAMS, ARGS, ADDRS, DECODE) .NAME = trace_##NAME,
#define OCL_API_NONE(IDX, NAME)
#include "backend/opencl/ocl_api.def"
#undef OCL_API
#undef OCL_API_NONE
};

/* ------------------------------------------------------------------------------------------ */
/* Names, operations and arguments (the descriptor's callbacks).                              */

const char *ocl_operation_name(uint32_t kind, int32_t op)
{
    return kind == OMNIPROF_BUFFER_TRACING_OPENCL_API ? ocl_api_name(op) : NULL;
}

int ocl_iterate_operations(uint32_t kind, int (*cb)(int32_t op, void *data), void *data)
{
    if (kind != OMNIPROF_BUFFER_TRACING_OPENCL_API) return -1;
    for (uint32_t i = 0; i < OCL_NUM_ENTRIES; i++)
        if (g_names[i] && cb((int32_t)i + 1, data)) break;
    return 0;
}
