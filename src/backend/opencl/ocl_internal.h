/* ocl_internal.h — state shared by the files of the OpenCL backend (not API).
 *
 *   ocl_layer.c     the ICD-loader layer (clGetLayerInfo, clInitLayer), the front dispatch table
 *                   the loader calls, the intercept table tools wrap, the backend descriptor
 *   ocl_api.c       the traced wrapper of every dispatch entry (ocl_api.def): OPENCL_API
 *                   records and callbacks, names, operations, arguments
 *   ocl_queue.c     queues (profiling turned on behind the program's back), devices as agents,
 *                   device-to-host clock mapping, kernel names
 *   ocl_activity.c  the calls that make GPU activity: dispatches, copies, maps, fills (timed from
 *                   OpenCL event profiling) and allocations
 *
 * How a call flows (app → loader → layer → next layer or driver):
 *
 *   loader ──▶ ocl_front.X ──▶ ocl_table.X ──▶ (tool wrappers ...) ──▶ trace_X ──▶ ocl_next.X
 *              (fixed, given     (intercept table:                     (ocl_api.c)   (the target
 *               to the loader)    tools replace entries)                              dispatch)
 *
 * The backend's own calls into OpenCL (event profiling, queue and device queries) go straight to
 * ocl_next: they are never traced and never seen by tools.
 *
 * Invariants:
 *  (1) ocl_next is filled once, by clInitLayer, before the loader hands out any object; entries
 *      the next layer lacks stay NULL and their front entries are NULL too (the loader then
 *      uses its own).
 *  (2) Every frame that began a correlation id ends it (ocl_end/ocl_exit), on the same thread.
 *  (3) An async record (dispatch, copy, set) retains its launching call's correlation id at
 *      enqueue and releases it once its record is emitted or dropped.
 *  (4) The program's view is unchanged: its queue properties, its events (none created when it
 *      passed none, none retained), its profiling results and error codes. */
#ifndef OMNIPROF_BACKEND_OPENCL_INTERNAL_H
#define OMNIPROF_BACKEND_OPENCL_INTERNAL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#define CL_USE_DEPRECATED_OPENCL_1_0_APIS
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_2_0_APIS
#include <CL/cl_icd.h>
#include <CL/cl_ext.h>
#include <CL/cl_gl.h>

#include <stdatomic.h>
#include <stdint.h>

#include "omniprof/omniprof.h"
#include "omniprof/opencl.h"
#include "sdk/backend.h"

#define OCL_MAX_ARGS 16  /* most parameters of a dispatch entry (clEnqueueReadBufferRect: 14) */
#define OCL_MAX_EXTRA 8  /* decoded values a special call adds (kernel name, sizes) */
#define OCL_NUM_ENTRIES ((uint32_t)(sizeof(cl_icd_dispatch) / sizeof(void *)))

/* Activity kinds configured at start (bits of ocl_activity). */
enum {
    OCL_ACT_KERNEL = 1 << 0, /* KERNEL_DISPATCH */
    OCL_ACT_COPY = 1 << 1,   /* MEMORY_COPY (copies and maps) */
    OCL_ACT_SET = 1 << 2,    /* MEMORY_SET (fills) */
    OCL_ACT_ALLOC = 1 << 3,  /* MEMORY_ALLOCATION */
};
#define OCL_ACT_TIMED (OCL_ACT_KERNEL | OCL_ACT_COPY | OCL_ACT_SET) /* need event profiling */

/* One traced call on the calling thread (stack storage, enter to exit). */
typedef struct ocl_frame {
    omniprof_correlation_id_t corr;
    uint64_t start;        /* host ns at entry (buffer mode) */
    int32_t op;            /* dispatch index + 1 */
    uint8_t buf, cbk;      /* OPENCL_API traced in buffer / callback mode */
    uint8_t pad[2];
    const char *symbol;    /* kernel name of a dispatch, for callbacks */
    uint32_t nextra;       /* decoded values the special implementation added */
    omniprof_arg_t extra[OCL_MAX_EXTRA];
    op_sdk_callback_state cbstate;
} ocl_frame;

/* ocl_layer.c */
extern cl_icd_dispatch ocl_next;  /* the next layer's (or the loader's) entries */
extern cl_icd_dispatch ocl_table; /* the intercept table (tools wrap its entries) */
extern _Atomic int ocl_on;        /* 1 while the backend traces (started, not finalized) */
extern _Atomic int ocl_activity;  /* OCL_ACT_* configured */
extern _Atomic int ocl_layer_ready; /* clInitLayer ran: ocl_next is valid */
/* >0 while the backend itself calls OpenCL through the loader (agents): not traced */
extern __thread int ocl_internal_calls;
omniprof_thread_id_t ocl_tid(void);
/* Loaded by the SDK, not (yet) by the loader: add this library to OPENCL_LAYERS. */
void ocl_join_loader_chain(void);

/* ocl_api.c */
extern const cl_icd_dispatch ocl_trace; /* the traced wrappers, ocl_table's initial entries */
const char *ocl_api_name(int32_t op);
int ocl_enter(ocl_frame *f, int32_t op);
void ocl_end(ocl_frame *f);
void ocl_add_arg_u(ocl_frame *f, const char *name, uint64_t v);
void ocl_add_arg_interned(ocl_frame *f, const char *name, const char *interned); /* op_sdk_intern'ed */
const char *ocl_operation_name(uint32_t kind, int32_t op);
int ocl_iterate_operations(uint32_t kind, int (*cb)(int32_t op, void *data), void *data);

/* ocl_queue.c */
typedef struct ocl_device {
    cl_device_id id;
    uint32_t ordinal;         /* index among the process's OpenCL devices */
    const char *version;      /* interned CL_DEVICE_VERSION (the agent's model_name) */
    omniprof_agent_id_t agent;
    _Atomic int64_t offset_ns;   /* host - device clock, best lower bound (see ocl_queue.c) */
    _Atomic uint64_t offset_at;  /* host ns when offset_ns was last raised */
} ocl_device;

typedef struct ocl_queue {
    cl_command_queue id;
    ocl_device *dev;
    uint64_t queue_id;                    /* stream id of its records */
    cl_command_queue_properties app_props; /* what the program asked for */
    int forced;                           /* profiling turned on by us */
    uint32_t n_app_array;                 /* entries of app_array (0: not given) */
    cl_queue_properties app_array[16];    /* CL_QUEUE_PROPERTIES_ARRAY as the program gave it */
} ocl_queue;

ocl_device *ocl_device_get(cl_device_id id);
ocl_device *ocl_context_device(cl_context ctx); /* its (first) device */
omniprof_agent_id_t ocl_device_agent(ocl_device *d);
ocl_queue *ocl_queue_get(cl_command_queue q); /* NULL when unknown */
/* Map a device timestamp to CLOCK_MONOTONIC ns given the host ns just before the enqueue call
 * and the command's QUEUED device timestamp (0 if unknown). */
uint64_t ocl_device_to_host(ocl_device *d, uint64_t enqueue_host_ns, uint64_t queued_dev, uint64_t dev_ns);
const char *ocl_kernel_name(cl_kernel k, uint64_t *kernel_id);
void ocl_kernel_forget(cl_kernel k);
void ocl_kernel_remember(cl_kernel k, const char *name);
void ocl_map_remember(const void *ptr, uint64_t bytes); /* size of a mapped region, for its unmap */
uint64_t ocl_map_forget(const void *ptr);
size_t ocl_query_agents(omniprof_agent_v0_t *out, size_t max, int may_init);
void ocl_queues_at_fork_child(void);

/* The backend's own implementation of each special entry (S in ocl_api.def), in ocl_queue.c and
 * ocl_activity.c: RET ocl_impl_<NAME>(ocl_frame *f, <the entry's parameters>). It calls
 * ocl_next itself. f is NULL when nothing traces the call; the program's view must still be the
 * same (invariant 4). */
#define OCL_UNPAREN(...) __VA_ARGS__
#define OCL_DECL_G(RET, NAME, PARAMS)
#define OCL_DECL_S(RET, NAME, PARAMS) RET ocl_impl_##NAME(ocl_frame *f, OCL_UNPAREN PARAMS);
#define OCL_API(IDX, NAME, RK, RET, S, PARAMS, ARGS, ADDRS, DECODE) OCL_DECL_##S(RET, NAME, PARAMS)
#define OCL_API_NONE(IDX, NAME)
#include "backend/opencl/ocl_api.def"
#undef OCL_API
#undef OCL_API_NONE

/* ocl_activity.c */
void ocl_activity_finalize(void);

#endif /* OMNIPROF_BACKEND_OPENCL_INTERNAL_H */
