/* ocl_activity.c — the OpenCL calls that make device activity: kernel dispatches
 * (clEnqueueNDRangeKernel, clEnqueueTask → KERNEL_DISPATCH), copies and maps (→ MEMORY_COPY),
 * fills (→ MEMORY_SET), timed from OpenCL event profiling; and allocations and frees of buffers,
 * images and SVM (→ MEMORY_ALLOCATION), recorded at the call.
 *
 * A timed enqueue, when its kind is traced:
 *   1. take a command slot (ocl_cmd) holding what the record needs from the launching call:
 *      correlation id (retained, invariant 3), thread, external ids, queue, sizes;
 *   2. read the host clock, then call the next layer with the program's event pointer, or with
 *      our own when the program passed none (the program never sees that event);
 *   3. on success register a CL_COMPLETE callback on the event (clSetEventCallback: no
 *      reference is taken on the program's event, invariant 4);
 *   4. the callback (a driver thread, or this thread if already complete) claims the slot, reads
 *      QUEUED/START/END, maps them onto the host clock (ocl_queue.c), emits the record, releases
 *      our own event and the correlation id, and frees the slot.
 * At finalization, commands still pending are waited for (bounded, FINALIZE_WAIT_MS in all) and
 * emitted, or dropped and counted in one log line.
 *
 * Slot states: FREE ──alloc──▶ FILLING ──callback registered──▶ PENDING ──claim──▶ (emitted) FREE
 * A slot is claimed by exactly one of the completion callback and finalization (CAS PENDING →
 * CLAIMED); slots finalization claimed are never reused, so a late callback finds CLAIMED and
 * returns. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "backend/opencl/ocl_internal.h"
#include "common/alloc.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/u64map.h"

#define CHUNK 256
#define MAX_CHUNKS 4096 /* at most 1M commands in flight are tracked */
#define FINALIZE_WAIT_MS 2000

enum { CMD_FREE = 0, CMD_FILLING, CMD_PENDING, CMD_CLAIMED };

typedef struct ocl_cmd {
    _Atomic int state;
    uint32_t kind; /* KERNEL_DISPATCH, MEMORY_COPY, MEMORY_SET */
    int32_t operation;
    int own_event;
    cl_event event;
    cl_command_queue queue;
    ocl_device *dev;
    omniprof_agent_id_t agent; /* resolved at the enqueue, never on a driver thread */
    uint64_t queue_id;
    uint64_t enqueue_ns;
    uint64_t internal;
    omniprof_thread_id_t tid;
    op_sdk_external ext;
    /* kernels */
    const char *kernel_name;
    uint64_t kernel_id;
    omniprof_dim3_t grid, block;
    /* copies and fills */
    uint64_t bytes;
    uint32_t value;
    struct ocl_cmd *next_free;
} ocl_cmd;

static ocl_cmd *g_chunks[MAX_CHUNKS];
static _Atomic uint32_t g_nchunks;
static ocl_cmd *g_free;
static pthread_mutex_t g_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t g_dropped, g_untimed;
static int g_pool_full_logged;

static ocl_cmd *cmd_alloc(void)
{
    pthread_mutex_lock(&g_pool_lock);
    if (!g_free) {
        uint32_t n = atomic_load(&g_nchunks);
        ocl_cmd *chunk = n < MAX_CHUNKS ? op_calloc(CHUNK, sizeof *chunk) : NULL;
        if (!chunk) {
            if (!g_pool_full_logged) {
                g_pool_full_logged = 1;
                op_warn("opencl: too many commands in flight (%u); further ones are not timed", MAX_CHUNKS * CHUNK);
            }
            pthread_mutex_unlock(&g_pool_lock);
            return NULL;
        }
        for (int i = CHUNK - 1; i >= 0; i--) chunk[i].next_free = g_free, g_free = &chunk[i];
        g_chunks[n] = chunk;
        atomic_store_explicit(&g_nchunks, n + 1, memory_order_release);
    }
    ocl_cmd *c = g_free;
    g_free = c->next_free;
    pthread_mutex_unlock(&g_pool_lock);
    atomic_store(&c->state, CMD_FILLING);
    return c;
}

static void cmd_free(ocl_cmd *c)
{
    pthread_mutex_lock(&g_pool_lock);
    atomic_store(&c->state, CMD_FREE);
    c->next_free = g_free;
    g_free = c;
    pthread_mutex_unlock(&g_pool_lock);
}

static int cmd_claim(ocl_cmd *c)
{
    int expect = CMD_PENDING;
    return atomic_compare_exchange_strong(&c->state, &expect, CMD_CLAIMED);
}

/* ------------------------------------------------------------------------------------------ */
/* Records.                                                                                    */

static void emit_kernel(const ocl_cmd *c, uint64_t start, uint64_t end)
{
    omniprof_buffer_tracing_kernel_dispatch_record_t r;
    OP_SDK_RECORD_INIT(r, OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH, OMNIPROF_KERNEL_DISPATCH_COMPLETE);
    r.correlation_id.internal = c->internal;
    r.thread_id = c->tid;
    r.start_timestamp = start;
    r.end_timestamp = end;
    r.agent_id = c->agent;
    r.device_id = c->dev ? c->dev->ordinal : 0;
    r.stream_id.handle = c->queue_id;
    r.kernel_id = c->kernel_id;
    r.dispatch_id = c->internal;
    r.kernel_name = c->kernel_name;
    r.kernel_name_demangled = c->kernel_name;
    r.grid_size = c->grid;
    r.block_size = c->block;
    op_sdk_emit(r.kind, r.operation, &r, &c->ext);
}

static void emit_copy(const ocl_cmd *c, uint64_t start, uint64_t end)
{
    omniprof_buffer_tracing_memory_copy_record_t r;
    OP_SDK_RECORD_INIT(r, OMNIPROF_BUFFER_TRACING_MEMORY_COPY, c->operation);
    r.correlation_id.internal = c->internal;
    r.thread_id = c->tid;
    r.start_timestamp = start;
    r.end_timestamp = end;
    if (c->operation != OMNIPROF_MEMORY_COPY_HOST_TO_DEVICE) r.src_agent_id = c->agent;
    if (c->operation != OMNIPROF_MEMORY_COPY_DEVICE_TO_HOST) r.dst_agent_id = c->agent;
    r.bytes = c->bytes;
    r.src_memory_kind = c->operation == OMNIPROF_MEMORY_COPY_HOST_TO_DEVICE ? OMNIPROF_MEMORY_KIND_PAGEABLE
                                                                             : OMNIPROF_MEMORY_KIND_DEVICE;
    r.dst_memory_kind = c->operation == OMNIPROF_MEMORY_COPY_DEVICE_TO_HOST ? OMNIPROF_MEMORY_KIND_PAGEABLE
                                                                             : OMNIPROF_MEMORY_KIND_DEVICE;
    r.stream_id.handle = c->queue_id;
    r.is_async = 1;
    r.device_id = c->dev ? c->dev->ordinal : 0;
    op_sdk_emit(r.kind, r.operation, &r, &c->ext);
}

static void emit_set(const ocl_cmd *c, uint64_t start, uint64_t end)
{
    omniprof_buffer_tracing_memory_set_record_t r;
    OP_SDK_RECORD_INIT(r, OMNIPROF_BUFFER_TRACING_MEMORY_SET, 1);
    r.correlation_id.internal = c->internal;
    r.thread_id = c->tid;
    r.start_timestamp = start;
    r.end_timestamp = end;
    r.agent_id = c->agent;
    r.bytes = c->bytes;
    r.value = c->value;
    r.memory_kind = OMNIPROF_MEMORY_KIND_DEVICE;
    r.stream_id.handle = c->queue_id;
    r.is_async = 1;
    r.device_id = c->dev ? c->dev->ordinal : 0;
    op_sdk_emit(r.kind, r.operation, &r, &c->ext);
}

/* The slot is claimed. Emit (or count a drop), release what the command held, free the slot
 * unless finalization claimed it (`recycle` 0). */
static void finish(ocl_cmd *c, cl_int status, int recycle)
{
    cl_ulong q = 0, s = 0, e = 0;
    int timed = status == CL_COMPLETE &&
                ocl_next.clGetEventProfilingInfo(c->event, CL_PROFILING_COMMAND_START, sizeof s, &s, NULL) == CL_SUCCESS &&
                ocl_next.clGetEventProfilingInfo(c->event, CL_PROFILING_COMMAND_END, sizeof e, &e, NULL) == CL_SUCCESS;
    if (timed && ocl_next.clGetEventProfilingInfo(c->event, CL_PROFILING_COMMAND_QUEUED, sizeof q, &q, NULL) != CL_SUCCESS)
        q = 0;
    if (timed) {
        uint64_t start = ocl_device_to_host(c->dev, c->enqueue_ns, q, s);
        uint64_t end = ocl_device_to_host(c->dev, c->enqueue_ns, q, e >= s ? e : s);
        if (c->kind == OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH) emit_kernel(c, start, end);
        else if (c->kind == OMNIPROF_BUFFER_TRACING_MEMORY_COPY) emit_copy(c, start, end);
        else emit_set(c, start, end);
    } else {
        atomic_fetch_add(status == CL_COMPLETE ? &g_untimed : &g_dropped, 1);
    }
    if (c->own_event) ocl_next.clReleaseEvent(c->event);
    op_sdk_correlation_release(c->internal);
    if (recycle) cmd_free(c);
}

static void CL_CALLBACK on_complete(cl_event ev, cl_int status, void *user)
{
    (void)ev;
    ocl_cmd *c = user;
    if (cmd_claim(c)) finish(c, status, 1);
}

/* ------------------------------------------------------------------------------------------ */
/* Tracking an enqueue.                                                                        */

typedef struct ocl_track {
    ocl_cmd *c;
    cl_event own;
    cl_event *evp; /* what the next layer gets */
} ocl_track;

/* Returns 1 when the command's record is wanted; then t->evp is the event pointer to pass and
 * t->c the slot to fill. */
static int track_begin(ocl_track *t, ocl_frame *f, int act_bit, uint32_t kind, int32_t op, cl_command_queue queue,
                       cl_event *app_event)
{
    t->c = NULL;
    t->own = NULL;
    t->evp = app_event;
    if (!f || !(atomic_load_explicit(&ocl_activity, memory_order_relaxed) & act_bit) || !op_sdk_buffer_enabled(kind, op))
        return 0;
    ocl_queue *q = ocl_queue_get(queue);
    if (q && !q->forced && !(q->app_props & CL_QUEUE_PROFILING_ENABLE)) {
        atomic_fetch_add(&g_untimed, 1); /* profiling could not be turned on for this queue */
        return 0;
    }
    ocl_cmd *c = cmd_alloc();
    if (!c) return 0;
    c->kind = kind;
    c->operation = op;
    c->queue = queue;
    c->dev = q ? q->dev : NULL;
    c->agent = ocl_device_agent(c->dev);
    c->queue_id = q ? q->queue_id : 0;
    c->internal = f->corr.internal;
    c->tid = ocl_tid();
    op_sdk_external_capture(&c->ext);
    c->kernel_name = NULL;
    c->bytes = 0;
    c->value = 0;
    t->c = c;
    t->evp = app_event ? app_event : &t->own;
    c->enqueue_ns = op_now_ns(); /* last: the bound of invariant in ocl_queue.c's clock mapping */
    return 1;
}

static cl_int track_end(ocl_track *t, cl_int r)
{
    ocl_cmd *c = t->c;
    if (!c) return r;
    if (r != CL_SUCCESS || !*t->evp) {
        cmd_free(c);
        return r;
    }
    c->event = *t->evp;
    c->own_event = t->evp == &t->own;
    op_sdk_correlation_retain(c->internal);
    atomic_store(&c->state, CMD_PENDING);
    if (ocl_next.clSetEventCallback(c->event, CL_COMPLETE, on_complete, c) != CL_SUCCESS && cmd_claim(c)) {
        atomic_fetch_add(&g_dropped, 1);
        if (c->own_event) ocl_next.clReleaseEvent(c->event);
        op_sdk_correlation_release(c->internal);
        cmd_free(c);
    }
    return r;
}

static uint64_t region_elems(const size_t *region)
{
    return region ? (uint64_t)region[0] * region[1] * region[2] : 0;
}

static uint64_t image_bytes(cl_mem image, const size_t *region)
{
    size_t elem = 0;
    if (ocl_next.clGetImageInfo(image, CL_IMAGE_ELEMENT_SIZE, sizeof elem, &elem, NULL) != CL_SUCCESS) elem = 1;
    return region_elems(region) * elem;
}

/* An enqueue whose last parameter is `event`: forward untracked, or tracked with BYTES. */
#define TRACKED_COPY(NAME, OP, BYTES, ...)                                                                       \
    ocl_track t_;                                                                                                \
    if (!track_begin(&t_, f, OCL_ACT_COPY, OMNIPROF_BUFFER_TRACING_MEMORY_COPY, OMNIPROF_MEMORY_COPY_##OP,      \
                     command_queue, event))                                                                      \
        return ocl_next.NAME(__VA_ARGS__, event);                                                                \
    t_.c->bytes = (BYTES);                                                                                       \
    return track_end(&t_, ocl_next.NAME(__VA_ARGS__, t_.evp));

/* ------------------------------------------------------------------------------------------ */
/* Kernel dispatches.                                                                          */

static void dispatch_geometry(cl_uint dim, const size_t *gws, const size_t *lws, omniprof_dim3_t *grid,
                              omniprof_dim3_t *block)
{
    uint32_t g[3] = {1, 1, 1}, b[3] = {1, 1, 1};
    for (cl_uint i = 0; i < dim && i < 3; i++) {
        uint64_t global = gws ? gws[i] : 1, local = lws && lws[i] ? lws[i] : 1;
        b[i] = (uint32_t)local;
        g[i] = (uint32_t)((global + local - 1) / local);
    }
    *grid = (omniprof_dim3_t){g[0], g[1], g[2]};
    *block = (omniprof_dim3_t){b[0], b[1], b[2]};
}

/* KERNEL_DISPATCH callback at enqueue, as the CUDA backend gives it. */
static void notify_enqueue(ocl_frame *f, const char *name, uint64_t kernel_id, omniprof_dim3_t grid,
                           omniprof_dim3_t block)
{
    if (!op_sdk_callback_enabled(OMNIPROF_CALLBACK_TRACING_KERNEL_DISPATCH, OMNIPROF_KERNEL_DISPATCH_ENQUEUE)) return;
    omniprof_buffer_tracing_kernel_dispatch_record_t r;
    OP_SDK_RECORD_INIT(r, OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH, OMNIPROF_KERNEL_DISPATCH_ENQUEUE);
    r.correlation_id.internal = f->corr.internal;
    r.thread_id = ocl_tid();
    r.start_timestamp = op_now_ns();
    r.kernel_name = r.kernel_name_demangled = name;
    r.kernel_id = kernel_id;
    r.dispatch_id = f->corr.internal;
    r.grid_size = grid;
    r.block_size = block;
    op_sdk_callback_notify(OMNIPROF_CALLBACK_TRACING_KERNEL_DISPATCH, OMNIPROF_KERNEL_DISPATCH_ENQUEUE,
                           OMNIPROF_CALLBACK_PHASE_ENTER, &f->corr, &r);
}

static cl_int dispatch(ocl_frame *f, cl_command_queue command_queue, cl_kernel kernel, cl_uint dim,
                       const size_t *offset, const size_t *gws, const size_t *lws, cl_uint nwait,
                       const cl_event *waits, cl_event *event, int task)
{
#define NEXT(EVP)                                                                                                \
    (task ? ocl_next.clEnqueueTask(command_queue, kernel, nwait, waits, EVP)                                     \
          : ocl_next.clEnqueueNDRangeKernel(command_queue, kernel, dim, offset, gws, lws, nwait, waits, EVP))
    if (!f) return NEXT(event);
    uint64_t kid;
    const char *name = ocl_kernel_name(kernel, &kid);
    omniprof_dim3_t grid, block;
    dispatch_geometry(dim, gws, lws, &grid, &block);
    f->symbol = name;
    if (f->buf || f->cbk) {
        static const char *const gn[3] = {"global_x", "global_y", "global_z"}, *const ln[3] = {"local_x", "local_y", "local_z"};
        ocl_add_arg_interned(f, "kernel", name); /* ocl_kernel_name interned it */
        for (cl_uint i = 0; i < dim && i < 3; i++) ocl_add_arg_u(f, gn[i], gws ? gws[i] : 1);
        for (cl_uint i = 0; lws && i < dim && i < 3; i++) ocl_add_arg_u(f, ln[i], lws[i]);
    }
    notify_enqueue(f, name, kid, grid, block);
    ocl_track t;
    if (!track_begin(&t, f, OCL_ACT_KERNEL, OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH, OMNIPROF_KERNEL_DISPATCH_COMPLETE,
                     command_queue, event))
        return NEXT(event);
    t.c->kernel_name = name;
    t.c->kernel_id = kid;
    t.c->grid = grid;
    t.c->block = block;
    return track_end(&t, NEXT(t.evp));
#undef NEXT
}

cl_int ocl_impl_clEnqueueNDRangeKernel(ocl_frame *f, cl_command_queue command_queue, cl_kernel kernel, cl_uint work_dim,
                                       const size_t *global_work_offset, const size_t *global_work_size,
                                       const size_t *local_work_size, cl_uint num_events_in_wait_list,
                                       const cl_event *event_wait_list, cl_event *event)
{
    return dispatch(f, command_queue, kernel, work_dim, global_work_offset, global_work_size, local_work_size,
                    num_events_in_wait_list, event_wait_list, event, 0);
}

cl_int ocl_impl_clEnqueueTask(ocl_frame *f, cl_command_queue command_queue, cl_kernel kernel,
                              cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event)
{
    return dispatch(f, command_queue, kernel, 1, NULL, NULL, NULL, num_events_in_wait_list, event_wait_list, event, 1);
}

/* ------------------------------------------------------------------------------------------ */
/* Copies.                                                                                     */

/* A read and a write between host and buffer take the same parameters (but the pointer's
 * constness) and are tracked alike. */
#define HOST_TRANSFER(NAME, OP, PTR_T)                                                                            \
    cl_int ocl_impl_##NAME(ocl_frame *f, cl_command_queue command_queue, cl_mem buffer, cl_bool blocking,         \
                           size_t offset, size_t size, PTR_T ptr, cl_uint num_events_in_wait_list,                 \
                           const cl_event *event_wait_list, cl_event *event)                                       \
    {                                                                                                             \
        TRACKED_COPY(NAME, OP, size, command_queue, buffer, blocking, offset, size, ptr, num_events_in_wait_list, \
                     event_wait_list)                                                                             \
    }

HOST_TRANSFER(clEnqueueReadBuffer, DEVICE_TO_HOST, void *)
HOST_TRANSFER(clEnqueueWriteBuffer, HOST_TO_DEVICE, const void *)

cl_int ocl_impl_clEnqueueCopyBuffer(ocl_frame *f, cl_command_queue command_queue, cl_mem src_buffer, cl_mem dst_buffer,
                                    size_t src_offset, size_t dst_offset, size_t size, cl_uint num_events_in_wait_list,
                                    const cl_event *event_wait_list, cl_event *event)
{
    TRACKED_COPY(clEnqueueCopyBuffer, DEVICE_TO_DEVICE, size, command_queue, src_buffer, dst_buffer, src_offset,
                 dst_offset, size, num_events_in_wait_list, event_wait_list)
}

/* The same for rectangles. */
#define HOST_RECT_TRANSFER(NAME, OP, PTR_T)                                                                        \
    cl_int ocl_impl_##NAME(ocl_frame *f, cl_command_queue command_queue, cl_mem buffer, cl_bool blocking,          \
                           const size_t *buffer_origin, const size_t *host_origin, const size_t *region,            \
                           size_t buffer_row_pitch, size_t buffer_slice_pitch, size_t host_row_pitch,               \
                           size_t host_slice_pitch, PTR_T ptr, cl_uint num_events_in_wait_list,                     \
                           const cl_event *event_wait_list, cl_event *event)                                        \
    {                                                                                                              \
        TRACKED_COPY(NAME, OP, region_elems(region), command_queue, buffer, blocking, buffer_origin, host_origin,  \
                     region, buffer_row_pitch, buffer_slice_pitch, host_row_pitch, host_slice_pitch, ptr,          \
                     num_events_in_wait_list, event_wait_list)                                                     \
    }

HOST_RECT_TRANSFER(clEnqueueReadBufferRect, DEVICE_TO_HOST, void *)
HOST_RECT_TRANSFER(clEnqueueWriteBufferRect, HOST_TO_DEVICE, const void *)

cl_int ocl_impl_clEnqueueCopyBufferRect(ocl_frame *f, cl_command_queue command_queue, cl_mem src_buffer,
                                        cl_mem dst_buffer, const size_t *src_origin, const size_t *dst_origin,
                                        const size_t *region, size_t src_row_pitch, size_t src_slice_pitch,
                                        size_t dst_row_pitch, size_t dst_slice_pitch, cl_uint num_events_in_wait_list,
                                        const cl_event *event_wait_list, cl_event *event)
{
    TRACKED_COPY(clEnqueueCopyBufferRect, DEVICE_TO_DEVICE, region_elems(region), command_queue, src_buffer,
                 dst_buffer, src_origin, dst_origin, region, src_row_pitch, src_slice_pitch, dst_row_pitch,
                 dst_slice_pitch, num_events_in_wait_list, event_wait_list)
}

cl_int ocl_impl_clEnqueueReadImage(ocl_frame *f, cl_command_queue command_queue, cl_mem image, cl_bool blocking_read,
                                   const size_t *origin, const size_t *region, size_t row_pitch, size_t slice_pitch,
                                   void *ptr, cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                                   cl_event *event)
{
    TRACKED_COPY(clEnqueueReadImage, DEVICE_TO_HOST, image_bytes(image, region), command_queue, image, blocking_read,
                 origin, region, row_pitch, slice_pitch, ptr, num_events_in_wait_list, event_wait_list)
}

cl_int ocl_impl_clEnqueueWriteImage(ocl_frame *f, cl_command_queue command_queue, cl_mem image, cl_bool blocking_write,
                                    const size_t *origin, const size_t *region, size_t input_row_pitch,
                                    size_t input_slice_pitch, const void *ptr, cl_uint num_events_in_wait_list,
                                    const cl_event *event_wait_list, cl_event *event)
{
    TRACKED_COPY(clEnqueueWriteImage, HOST_TO_DEVICE, image_bytes(image, region), command_queue, image, blocking_write,
                 origin, region, input_row_pitch, input_slice_pitch, ptr, num_events_in_wait_list, event_wait_list)
}

cl_int ocl_impl_clEnqueueCopyImage(ocl_frame *f, cl_command_queue command_queue, cl_mem src_image, cl_mem dst_image,
                                   const size_t *src_origin, const size_t *dst_origin, const size_t *region,
                                   cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event)
{
    TRACKED_COPY(clEnqueueCopyImage, DEVICE_TO_DEVICE, image_bytes(src_image, region), command_queue, src_image,
                 dst_image, src_origin, dst_origin, region, num_events_in_wait_list, event_wait_list)
}

cl_int ocl_impl_clEnqueueCopyImageToBuffer(ocl_frame *f, cl_command_queue command_queue, cl_mem src_image,
                                           cl_mem dst_buffer, const size_t *src_origin, const size_t *region,
                                           size_t dst_offset, cl_uint num_events_in_wait_list,
                                           const cl_event *event_wait_list, cl_event *event)
{
    TRACKED_COPY(clEnqueueCopyImageToBuffer, DEVICE_TO_DEVICE, image_bytes(src_image, region), command_queue,
                 src_image, dst_buffer, src_origin, region, dst_offset, num_events_in_wait_list, event_wait_list)
}

cl_int ocl_impl_clEnqueueCopyBufferToImage(ocl_frame *f, cl_command_queue command_queue, cl_mem src_buffer,
                                           cl_mem dst_image, size_t src_offset, const size_t *dst_origin,
                                           const size_t *region, cl_uint num_events_in_wait_list,
                                           const cl_event *event_wait_list, cl_event *event)
{
    TRACKED_COPY(clEnqueueCopyBufferToImage, DEVICE_TO_DEVICE, image_bytes(dst_image, region), command_queue,
                 src_buffer, dst_image, src_offset, dst_origin, region, num_events_in_wait_list, event_wait_list)
}

cl_int ocl_impl_clEnqueueSVMMemcpy(ocl_frame *f, cl_command_queue command_queue, cl_bool blocking_copy, void *dst_ptr,
                                   const void *src_ptr, size_t size, cl_uint num_events_in_wait_list,
                                   const cl_event *event_wait_list, cl_event *event)
{
    TRACKED_COPY(clEnqueueSVMMemcpy, DEVICE_TO_DEVICE, size, command_queue, blocking_copy, dst_ptr, src_ptr, size,
                 num_events_in_wait_list, event_wait_list)
}

/* ------------------------------------------------------------------------------------------ */
/* Maps: a map is a device-to-host copy of the mapped bytes, an unmap a host-to-device one.     */

void *ocl_impl_clEnqueueMapBuffer(ocl_frame *f, cl_command_queue command_queue, cl_mem buffer, cl_bool blocking_map,
                                  cl_map_flags map_flags, size_t offset, size_t size, cl_uint num_events_in_wait_list,
                                  const cl_event *event_wait_list, cl_event *event, cl_int *errcode_ret)
{
    ocl_track t;
    int on = track_begin(&t, f, OCL_ACT_COPY, OMNIPROF_BUFFER_TRACING_MEMORY_COPY, OMNIPROF_MEMORY_COPY_DEVICE_TO_HOST,
                         command_queue, event);
    void *p = ocl_next.clEnqueueMapBuffer(command_queue, buffer, blocking_map, map_flags, offset, size,
                                          num_events_in_wait_list, event_wait_list, t.evp, errcode_ret);
    if (p && f) ocl_map_remember(p, size);
    if (on) {
        t.c->bytes = size;
        track_end(&t, p ? CL_SUCCESS : CL_MAP_FAILURE);
    }
    return p;
}

void *ocl_impl_clEnqueueMapImage(ocl_frame *f, cl_command_queue command_queue, cl_mem image, cl_bool blocking_map,
                                 cl_map_flags map_flags, const size_t *origin, const size_t *region,
                                 size_t *image_row_pitch, size_t *image_slice_pitch, cl_uint num_events_in_wait_list,
                                 const cl_event *event_wait_list, cl_event *event, cl_int *errcode_ret)
{
    ocl_track t;
    int on = track_begin(&t, f, OCL_ACT_COPY, OMNIPROF_BUFFER_TRACING_MEMORY_COPY, OMNIPROF_MEMORY_COPY_DEVICE_TO_HOST,
                         command_queue, event);
    uint64_t bytes = on || f ? image_bytes(image, region) : 0;
    void *p = ocl_next.clEnqueueMapImage(command_queue, image, blocking_map, map_flags, origin, region, image_row_pitch,
                                         image_slice_pitch, num_events_in_wait_list, event_wait_list, t.evp, errcode_ret);
    if (p && f) ocl_map_remember(p, bytes);
    if (on) {
        t.c->bytes = bytes;
        track_end(&t, p ? CL_SUCCESS : CL_MAP_FAILURE);
    }
    return p;
}

cl_int ocl_impl_clEnqueueUnmapMemObject(ocl_frame *f, cl_command_queue command_queue, cl_mem memobj, void *mapped_ptr,
                                        cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                                        cl_event *event)
{
    uint64_t bytes = f ? ocl_map_forget(mapped_ptr) : 0;
    TRACKED_COPY(clEnqueueUnmapMemObject, HOST_TO_DEVICE, bytes, command_queue, memobj,
                 mapped_ptr, num_events_in_wait_list, event_wait_list)
}

cl_int ocl_impl_clEnqueueSVMMap(ocl_frame *f, cl_command_queue command_queue, cl_bool blocking_map, cl_map_flags flags,
                                void *svm_ptr, size_t size, cl_uint num_events_in_wait_list,
                                const cl_event *event_wait_list, cl_event *event)
{
    if (f) ocl_map_remember(svm_ptr, size);
    TRACKED_COPY(clEnqueueSVMMap, DEVICE_TO_HOST, size, command_queue, blocking_map, flags, svm_ptr, size,
                 num_events_in_wait_list, event_wait_list)
}

cl_int ocl_impl_clEnqueueSVMUnmap(ocl_frame *f, cl_command_queue command_queue, void *svm_ptr,
                                  cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event)
{
    uint64_t bytes = f ? ocl_map_forget(svm_ptr) : 0;
    TRACKED_COPY(clEnqueueSVMUnmap, HOST_TO_DEVICE, bytes, command_queue, svm_ptr,
                 num_events_in_wait_list, event_wait_list)
}

/* ------------------------------------------------------------------------------------------ */
/* Fills.                                                                                      */

static uint32_t pattern_value(const void *pattern, size_t n)
{
    uint32_t v = 0;
    if (pattern) memcpy(&v, pattern, n < sizeof v ? n : sizeof v);
    return v;
}

#define TRACKED_SET(NAME, BYTES, VALUE, ...)                                                                     \
    ocl_track t_;                                                                                                \
    if (!track_begin(&t_, f, OCL_ACT_SET, OMNIPROF_BUFFER_TRACING_MEMORY_SET, 1, command_queue, event))         \
        return ocl_next.NAME(__VA_ARGS__, event);                                                                \
    t_.c->bytes = (BYTES);                                                                                       \
    t_.c->value = (VALUE);                                                                                       \
    return track_end(&t_, ocl_next.NAME(__VA_ARGS__, t_.evp));

cl_int ocl_impl_clEnqueueFillBuffer(ocl_frame *f, cl_command_queue command_queue, cl_mem buffer, const void *pattern,
                                    size_t pattern_size, size_t offset, size_t size, cl_uint num_events_in_wait_list,
                                    const cl_event *event_wait_list, cl_event *event)
{
    TRACKED_SET(clEnqueueFillBuffer, size, pattern_value(pattern, pattern_size), command_queue, buffer, pattern,
                pattern_size, offset, size, num_events_in_wait_list, event_wait_list)
}

cl_int ocl_impl_clEnqueueFillImage(ocl_frame *f, cl_command_queue command_queue, cl_mem image, const void *fill_color,
                                   const size_t *origin, const size_t *region, cl_uint num_events_in_wait_list,
                                   const cl_event *event_wait_list, cl_event *event)
{
    TRACKED_SET(clEnqueueFillImage, image_bytes(image, region), pattern_value(fill_color, 4), command_queue, image,
                fill_color, origin, region, num_events_in_wait_list, event_wait_list)
}

cl_int ocl_impl_clEnqueueSVMMemFill(ocl_frame *f, cl_command_queue command_queue, void *svm_ptr, const void *pattern,
                                    size_t pattern_size, size_t size, cl_uint num_events_in_wait_list,
                                    const cl_event *event_wait_list, cl_event *event)
{
    TRACKED_SET(clEnqueueSVMMemFill, size, pattern_value(pattern, pattern_size), command_queue, svm_ptr, pattern,
                pattern_size, size, num_events_in_wait_list, event_wait_list)
}

/* ------------------------------------------------------------------------------------------ */
/* Allocations: recorded at the call (start and end of the API call), on the calling thread.  */

static int alloc_traced(ocl_frame *f, int32_t op)
{
    return f && (atomic_load_explicit(&ocl_activity, memory_order_relaxed) & OCL_ACT_ALLOC) &&
           op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION, op);
}

static void emit_alloc(ocl_frame *f, int32_t op, const void *address, uint64_t bytes, uint32_t memory_kind,
                       ocl_device *d, uint64_t start)
{
    omniprof_buffer_tracing_memory_allocation_record_t r;
    OP_SDK_RECORD_INIT(r, OMNIPROF_BUFFER_TRACING_MEMORY_ALLOCATION, op);
    r.correlation_id = f->corr;
    r.thread_id = ocl_tid();
    r.start_timestamp = start;
    r.end_timestamp = op_now_ns();
    r.agent_id = ocl_device_agent(d);
    r.address = (uint64_t)(uintptr_t)address;
    r.allocation_size = bytes;
    r.memory_kind = memory_kind;
    r.device_id = d ? d->ordinal : 0;
    op_sdk_emit(r.kind, r.operation, &r, NULL);
}

static uint64_t mem_size(cl_mem m)
{
    size_t n = 0;
    return ocl_next.clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof n, &n, NULL) == CL_SUCCESS ? n : 0;
}

/* The program's own references to the buffers and images it created while traced (creation 1,
 * clRetainMemObject +1, clReleaseMemObject -1; 0 once freed): the FREE record comes at the release
 * that drops them to 0. CL_MEM_REFERENCE_COUNT cannot tell: the implementation's commands hold
 * references of their own until they complete (PoCL does), so a buffer released while a command
 * using it is still in flight reads 2. Objects not in the map (created before tracing) fall back
 * to that count. */
static pthread_mutex_t g_refs_lock = PTHREAD_MUTEX_INITIALIZER;
static op_u64map g_refs;

static void refs_created(cl_mem m)
{
    pthread_mutex_lock(&g_refs_lock);
    static int told;
    if (op_u64map_put(&g_refs, (uint64_t)(uintptr_t)m, 1) != 0 && !told++)
        op_warn("opencl: no memory for the map of buffer references; frees are found by the driver's count");
    pthread_mutex_unlock(&g_refs_lock);
}

/* Adds delta to the program's references of m; returns the new count, or -1 when m is not known. */
static int64_t refs_add(cl_mem m, int delta)
{
    uint64_t n = 0;
    pthread_mutex_lock(&g_refs_lock);
    int known = op_u64map_get(&g_refs, (uint64_t)(uintptr_t)m, &n) && n > 0;
    if (known) {
        n = (uint64_t)((int64_t)n + delta);
        op_u64map_put(&g_refs, (uint64_t)(uintptr_t)m, n);
    }
    pthread_mutex_unlock(&g_refs_lock);
    return known ? (int64_t)n : -1;
}

#define TRACKED_ALLOC(CALL, CONTEXT)                                                                             \
    if (!alloc_traced(f, OMNIPROF_MEMORY_ALLOCATION_ALLOCATE)) return CALL;                                      \
    uint64_t t0_ = op_now_ns();                                                                                  \
    cl_mem m_ = CALL;                                                                                            \
    if (m_) {                                                                                                    \
        refs_created(m_);                                                                                        \
        emit_alloc(f, OMNIPROF_MEMORY_ALLOCATION_ALLOCATE, m_, mem_size(m_), OMNIPROF_MEMORY_KIND_DEVICE,        \
                   ocl_context_device(CONTEXT), t0_);                                                            \
    }                                                                                                            \
    return m_;

cl_mem ocl_impl_clCreateBuffer(ocl_frame *f, cl_context context, cl_mem_flags flags, size_t size, void *host_ptr,
                               cl_int *errcode_ret)
{
    TRACKED_ALLOC(ocl_next.clCreateBuffer(context, flags, size, host_ptr, errcode_ret), context)
}

cl_mem ocl_impl_clCreateBufferWithProperties(ocl_frame *f, cl_context context, const cl_mem_properties *properties,
                                             cl_mem_flags flags, size_t size, void *host_ptr, cl_int *errcode_ret)
{
    TRACKED_ALLOC(ocl_next.clCreateBufferWithProperties(context, properties, flags, size, host_ptr, errcode_ret), context)
}

cl_mem ocl_impl_clCreateImage(ocl_frame *f, cl_context context, cl_mem_flags flags, const cl_image_format *image_format,
                              const cl_image_desc *image_desc, void *host_ptr, cl_int *errcode_ret)
{
    TRACKED_ALLOC(ocl_next.clCreateImage(context, flags, image_format, image_desc, host_ptr, errcode_ret), context)
}

cl_mem ocl_impl_clCreateImage2D(ocl_frame *f, cl_context context, cl_mem_flags flags,
                                const cl_image_format *image_format, size_t image_width, size_t image_height,
                                size_t image_row_pitch, void *host_ptr, cl_int *errcode_ret)
{
    TRACKED_ALLOC(ocl_next.clCreateImage2D(context, flags, image_format, image_width, image_height, image_row_pitch,
                                           host_ptr, errcode_ret),
                  context)
}

cl_mem ocl_impl_clCreateImage3D(ocl_frame *f, cl_context context, cl_mem_flags flags,
                                const cl_image_format *image_format, size_t image_width, size_t image_height,
                                size_t image_depth, size_t image_row_pitch, size_t image_slice_pitch, void *host_ptr,
                                cl_int *errcode_ret)
{
    TRACKED_ALLOC(ocl_next.clCreateImage3D(context, flags, image_format, image_width, image_height, image_depth,
                                           image_row_pitch, image_slice_pitch, host_ptr, errcode_ret),
                  context)
}

cl_mem ocl_impl_clCreateImageWithProperties(ocl_frame *f, cl_context context, const cl_mem_properties *properties,
                                            cl_mem_flags flags, const cl_image_format *image_format,
                                            const cl_image_desc *image_desc, void *host_ptr, cl_int *errcode_ret)
{
    TRACKED_ALLOC(ocl_next.clCreateImageWithProperties(context, properties, flags, image_format, image_desc, host_ptr,
                                                       errcode_ret),
                  context)
}

/* The program's last reference to a buffer or image (not a sub-buffer): a FREE record. */
cl_int ocl_impl_clReleaseMemObject(ocl_frame *f, cl_mem memobj)
{
    if (!alloc_traced(f, OMNIPROF_MEMORY_ALLOCATION_FREE)) return ocl_next.clReleaseMemObject(memobj);
    uint64_t t0 = op_now_ns();
    cl_uint refs = 0;
    cl_mem parent = NULL;
    cl_context ctx = NULL;
    int64_t own = refs_add(memobj, 0); /* the program's references, -1 when not created while traced */
    int last = (own >= 0 ? own == 1
                         : ocl_next.clGetMemObjectInfo(memobj, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, NULL) ==
                                   CL_SUCCESS &&
                               refs == 1 &&
                               ocl_next.clGetMemObjectInfo(memobj, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent,
                                                           &parent, NULL) == CL_SUCCESS &&
                               !parent) &&
               ocl_next.clGetMemObjectInfo(memobj, CL_MEM_CONTEXT, sizeof ctx, &ctx, NULL) == CL_SUCCESS;
    uint64_t bytes = last ? mem_size(memobj) : 0;
    cl_int r = ocl_next.clReleaseMemObject(memobj);
    if (r == CL_SUCCESS && own >= 0) refs_add(memobj, -1);
    if (r == CL_SUCCESS && last)
        emit_alloc(f, OMNIPROF_MEMORY_ALLOCATION_FREE, memobj, bytes, OMNIPROF_MEMORY_KIND_DEVICE, ocl_context_device(ctx),
                   t0);
    return r;
}

/* A retain by the program: one more reference of its own (see refs_add). */
cl_int ocl_impl_clRetainMemObject(ocl_frame *f, cl_mem memobj)
{
    (void)f;
    cl_int r = ocl_next.clRetainMemObject(memobj);
    if (r == CL_SUCCESS) refs_add(memobj, 1);
    return r;
}

void *ocl_impl_clSVMAlloc(ocl_frame *f, cl_context context, cl_svm_mem_flags flags, size_t size, cl_uint alignment)
{
    if (!alloc_traced(f, OMNIPROF_MEMORY_ALLOCATION_ALLOCATE)) return ocl_next.clSVMAlloc(context, flags, size, alignment);
    uint64_t t0 = op_now_ns();
    void *p = ocl_next.clSVMAlloc(context, flags, size, alignment);
    if (p)
        emit_alloc(f, OMNIPROF_MEMORY_ALLOCATION_ALLOCATE, p, size, OMNIPROF_MEMORY_KIND_MANAGED, ocl_context_device(context),
                   t0);
    return p;
}

void ocl_impl_clSVMFree(ocl_frame *f, cl_context context, void *svm_pointer)
{
    if (!alloc_traced(f, OMNIPROF_MEMORY_ALLOCATION_FREE) || !svm_pointer) {
        ocl_next.clSVMFree(context, svm_pointer);
        return;
    }
    uint64_t t0 = op_now_ns();
    ocl_next.clSVMFree(context, svm_pointer);
    emit_alloc(f, OMNIPROF_MEMORY_ALLOCATION_FREE, svm_pointer, 0, OMNIPROF_MEMORY_KIND_MANAGED,
               ocl_context_device(context), t0);
}

cl_int ocl_impl_clEnqueueSVMFree(ocl_frame *f, cl_command_queue command_queue, cl_uint num_svm_pointers,
                                 void *svm_pointers[],
                                 void(CL_CALLBACK *pfn_free_func)(cl_command_queue queue, cl_uint num_svm_pointers,
                                                                  void *svm_pointers[], void *user_data),
                                 void *user_data, cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                                 cl_event *event)
{
    uint64_t t0 = op_now_ns();
    cl_int r = ocl_next.clEnqueueSVMFree(command_queue, num_svm_pointers, svm_pointers, pfn_free_func, user_data,
                                         num_events_in_wait_list, event_wait_list, event);
    if (r == CL_SUCCESS && svm_pointers && alloc_traced(f, OMNIPROF_MEMORY_ALLOCATION_FREE)) {
        ocl_queue *q = ocl_queue_get(command_queue);
        for (cl_uint i = 0; i < num_svm_pointers; i++)
            emit_alloc(f, OMNIPROF_MEMORY_ALLOCATION_FREE, svm_pointers[i], 0, OMNIPROF_MEMORY_KIND_MANAGED,
                       q ? q->dev : NULL, t0);
    }
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* Finalization.                                                                               */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

void ocl_activity_finalize(void)
{
    uint64_t deadline = op_now_ns() + FINALIZE_WAIT_MS * 1000000ull;
    uint64_t lost = 0, done = 0;
    uint32_t nch = atomic_load_explicit(&g_nchunks, memory_order_acquire);
    for (uint32_t ch = 0; ch < nch; ch++) {
        for (int i = 0; i < CHUNK; i++) {
            ocl_cmd *c = &g_chunks[ch][i];
            if (atomic_load(&c->state) != CMD_PENDING) continue;
            cl_int st = CL_QUEUED;
            for (;;) {
                if (ocl_next.clGetEventInfo(c->event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL) != CL_SUCCESS)
                    st = CL_INVALID_EVENT;
                if (st <= CL_COMPLETE || op_now_ns() > deadline || atomic_load(&c->state) != CMD_PENDING) break;
                sleep_ms(1);
            }
            if (!cmd_claim(c)) continue; /* its callback took it */
            if (st <= CL_COMPLETE) done++;
            else lost++;
            finish(c, st <= CL_COMPLETE ? st : CL_INVALID_EVENT, 0);
        }
    }
    uint64_t missing = atomic_load(&g_dropped) + atomic_load(&g_untimed);
    if (missing)
        op_warn("opencl: %llu commands have no record (%llu still running at exit, the others failed or could not be "
                "timed); %llu completed during finalization",
                (unsigned long long)missing, (unsigned long long)lost, (unsigned long long)done);
}
