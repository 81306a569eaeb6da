/* cupti_nvtx.c — NVTX calls become MARKER_API records (one per call) and MARKER_RANGE_API
 * records (one per completed range): thread ranges on a per-thread stack, process ranges
 * (nvtxRangeStart/End) in a table under a lock. The calls come from omniprof's own NVTX
 * injection (nvtx_inject.c, the default) or, with OMNIPROF_CUDA_NVTX_CUPTI=true, through CUPTI's
 * NVTX callback domain (op_cuda_on_nvtx below); both end in the op_cuda_nvtx_* functions. */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "generated_nvtx_meta.h"

#include "backend/cuda/cuda_internal.h"
#include "common/clock.h"

/* NVTX → MARKER_API (one record per call) and MARKER_RANGE_API (one per completed range).    */

#define NVTX_MSG 256
#define NVTX_DEPTH 64
#define NVTX_PROC_RANGES 1024

typedef struct nvtx_open {
    uint64_t start;
    uint64_t domain;
    omniprof_thread_id_t tid;
    uint64_t id; /* process ranges: nvtxRangeId_t, 0 = free slot */
    char msg[NVTX_MSG];
} nvtx_open;

static __thread nvtx_open t_nvtx_stack[NVTX_DEPTH];
static __thread int t_nvtx_depth;
static nvtx_open g_proc_ranges[NVTX_PROC_RANGES];
static pthread_mutex_t g_proc_lock = PTHREAD_MUTEX_INITIALIZER;

static void copy_msg(char *dst, size_t cap, const char *src)
{
    if (!src) src = "";
    size_t n = strlen(src);
    if (n >= cap) {
        memcpy(dst, src, cap - 4);
        memcpy(dst + cap - 4, "...", 4);
    } else {
        memcpy(dst, src, n + 1);
    }
}

/* The message of an event's attributes. `registered`: a registered string handle is the
 * string itself (omniprof's own injection makes them so), else it cannot be read. A wide
 * message is kept as its ASCII characters (others become '?') in `wbuf`. */
const char *op_cuda_nvtx_attr_message(const nvtxEventAttributes_t *a, int registered, char *wbuf,
                                      size_t cap)
{
    if (!a) return "";
    if (a->messageType == NVTX_MESSAGE_TYPE_ASCII) return a->message.ascii ? a->message.ascii : "";
    if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED)
        return registered && a->message.registered ? (const char *)a->message.registered
                                                   : "<registered string>";
    if (a->messageType == NVTX_MESSAGE_TYPE_UNICODE)
        return wbuf ? op_cuda_nvtx_wide(a->message.unicode, wbuf, cap) : "<unicode string>";
    return "";
}

const char *op_cuda_nvtx_wide(const wchar_t *w, char *buf, size_t cap)
{
    size_t i = 0;
    for (; w && w[i] && i + 1 < cap; i++) buf[i] = w[i] > 0 && w[i] < 128 ? (char)w[i] : '?';
    buf[i] = 0;
    return buf;
}

static const char *attr_message(const nvtxEventAttributes_t *a)
{
    return op_cuda_nvtx_attr_message(a, 0, NULL, 0);
}

static void emit_marker(uint32_t kind, int32_t op, uint64_t start, uint64_t end, omniprof_thread_id_t tid,
                        omniprof_thread_id_t end_tid, uint64_t range_id, int32_t level, uint64_t domain, const char *msg)
{
    /* per-call records also go to MARKER_API callbacks (the tool's --kernel-rename follows them) */
    bool to_buffer = op_sdk_buffer_enabled(kind, op) != 0;
    bool to_callback = kind == OMNIPROF_BUFFER_TRACING_MARKER_API &&
                       op_sdk_callback_enabled(OMNIPROF_CALLBACK_TRACING_MARKER_API, op);
    if (!to_buffer && !to_callback) return;
    union {
        omniprof_buffer_tracing_marker_record_t r;
        unsigned char b[sizeof(omniprof_buffer_tracing_marker_record_t) + NVTX_MSG + 8];
    } u;
    omniprof_buffer_tracing_marker_record_t *r = &u.r;
    op_sdk_marker_span span = {start, end, tid, end_tid, range_id, level};
    op_sdk_marker_record_fill(r, kind, op, &span, OMNIPROF_MARKER_SOURCE_NVTX, msg, NVTX_MSG);
    r->domain_id = domain;
    omniprof_correlation_id_t corr;
    op_sdk_correlation_begin(&corr);
    r->correlation_id = corr;
    op_sdk_callback_state cs;
    if (to_callback) op_sdk_callback_enter(OMNIPROF_CALLBACK_TRACING_MARKER_API, op, &corr, r, &cs);
    if (to_buffer) op_sdk_emit(kind, op, r, NULL);
    if (to_callback) op_sdk_callback_exit(OMNIPROF_CALLBACK_TRACING_MARKER_API, op, &corr, r, &cs);
    op_sdk_correlation_end(&corr);
}

/* The marker records of one NVTX call, at time `now` on the calling thread. */
void op_cuda_nvtx_mark(uint64_t domain, const char *msg)
{
    uint64_t now = op_now_ns();
    omniprof_thread_id_t tid = op_cuda_tid();
    emit_marker(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_MARK, now, now, tid, tid, 0, -1,
                domain, msg);
    emit_marker(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, OMNIPROF_MARKER_RANGE_OP_MARK, now, now, tid, tid,
                0, -1, domain, msg);
}

int op_cuda_nvtx_push(uint64_t domain, const char *msg)
{
    uint64_t now = op_now_ns();
    omniprof_thread_id_t tid = op_cuda_tid();
    int d = t_nvtx_depth;
    op_sdk_progress(4, msg); /* causal profiling: a range start is a progress point */
    emit_marker(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_RANGE_PUSH, now, now, tid, tid, 0,
                d + 1, domain, msg);
    if (d < NVTX_DEPTH) {
        t_nvtx_stack[d].start = now;
        t_nvtx_stack[d].domain = domain;
        copy_msg(t_nvtx_stack[d].msg, NVTX_MSG, msg);
    }
    t_nvtx_depth = d + 1;
    return d;
}

int op_cuda_nvtx_pop(void)
{
    int d = t_nvtx_depth;
    if (d <= 0) return -1; /* unbalanced pop: nothing to close */
    uint64_t now = op_now_ns();
    omniprof_thread_id_t tid = op_cuda_tid();
    t_nvtx_depth = d - 1;
    if (d - 1 < NVTX_DEPTH) {
        const nvtx_open *o = &t_nvtx_stack[d - 1];
        emit_marker(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_RANGE_POP, now, now, tid, tid, 0, d,
                    o->domain, o->msg);
        emit_marker(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, OMNIPROF_MARKER_RANGE_OP_THREAD_RANGE, o->start,
                    now, tid, tid, 0, d, o->domain, o->msg);
    }
    return d - 1;
}

void op_cuda_nvtx_start(uint64_t id, uint64_t domain, const char *msg)
{
    uint64_t now = op_now_ns();
    omniprof_thread_id_t tid = op_cuda_tid();
    op_sdk_progress(4, msg);
    emit_marker(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_RANGE_START, now, now, tid, tid, id, -1,
                domain, msg);
    if (!id) return;
    pthread_mutex_lock(&g_proc_lock);
    nvtx_open *o = &g_proc_ranges[id % NVTX_PROC_RANGES];
    o->id = id, o->start = now, o->tid = tid, o->domain = domain;
    copy_msg(o->msg, NVTX_MSG, msg);
    pthread_mutex_unlock(&g_proc_lock);
}

void op_cuda_nvtx_end(uint64_t id)
{
    uint64_t now = op_now_ns();
    omniprof_thread_id_t tid = op_cuda_tid();
    nvtx_open o;
    int found = 0;
    pthread_mutex_lock(&g_proc_lock);
    nvtx_open *s = &g_proc_ranges[id % NVTX_PROC_RANGES];
    if (id && s->id == id) {
        o = *s;
        s->id = 0;
        found = 1;
    }
    pthread_mutex_unlock(&g_proc_lock);
    emit_marker(OMNIPROF_BUFFER_TRACING_MARKER_API, OMNIPROF_MARKER_OP_RANGE_STOP, now, now, tid, tid, id, -1,
                found ? o.domain : 0, found ? o.msg : "");
    if (found)
        emit_marker(OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, OMNIPROF_MARKER_RANGE_OP_PROCESS_RANGE, o.start,
                    now, o.tid, tid, id, -1, o.domain, o.msg);
}

/* nvtxNameOsThread (op OMNIPROF_MARKER_OP_NAME_THREAD, id = the OS thread id) and
 * nvtxNameCategory (OMNIPROF_MARKER_OP_NAME_CATEGORY, id = the category). */
void op_cuda_nvtx_name(int32_t op, uint64_t id, const char *name)
{
    uint64_t now = op_now_ns();
    omniprof_thread_id_t tid = op_cuda_tid();
    emit_marker(OMNIPROF_BUFFER_TRACING_MARKER_API, op, now, now, tid, tid, id, -1, 0, name);
}

/* CUPTI's NVTX callback domain: the call's parameters to the functions above. */
void op_cuda_on_nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData *nd)
{
    if (!nd || !nd->functionParams) return;
    const void *p = nd->functionParams;
    switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxMarkA: op_cuda_nvtx_mark(0, ((const nvtxMarkA_params *)p)->message); return;
    case CUPTI_CBID_NVTX_nvtxMarkEx:
        op_cuda_nvtx_mark(0, attr_message(((const nvtxMarkEx_params *)p)->eventAttrib));
        return;
    case CUPTI_CBID_NVTX_nvtxDomainMarkEx:
        op_cuda_nvtx_mark((uint64_t)(uintptr_t)((const nvtxDomainMarkEx_params *)p)->domain,
                          attr_message(((const nvtxDomainMarkEx_params *)p)->core.eventAttrib));
        return;
    case CUPTI_CBID_NVTX_nvtxRangePushA: op_cuda_nvtx_push(0, ((const nvtxRangePushA_params *)p)->message); return;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
        op_cuda_nvtx_push(0, attr_message(((const nvtxRangePushEx_params *)p)->eventAttrib));
        return;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
        op_cuda_nvtx_push((uint64_t)(uintptr_t)((const nvtxDomainRangePushEx_params *)p)->domain,
                          attr_message(((const nvtxDomainRangePushEx_params *)p)->core.eventAttrib));
        return;
    case CUPTI_CBID_NVTX_nvtxRangePop:
    case CUPTI_CBID_NVTX_nvtxDomainRangePop: op_cuda_nvtx_pop(); return;
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx: {
        uint64_t id = nd->functionReturnValue ? *(const nvtxRangeId_t *)nd->functionReturnValue : 0;
        if (cbid == CUPTI_CBID_NVTX_nvtxRangeStartA)
            op_cuda_nvtx_start(id, 0, ((const nvtxRangeStartA_params *)p)->message);
        else if (cbid == CUPTI_CBID_NVTX_nvtxRangeStartEx)
            op_cuda_nvtx_start(id, 0, attr_message(((const nvtxRangeStartEx_params *)p)->eventAttrib));
        else
            op_cuda_nvtx_start(id, (uint64_t)(uintptr_t)((const nvtxDomainRangeStartEx_params *)p)->domain,
                               attr_message(((const nvtxDomainRangeStartEx_params *)p)->core.eventAttrib));
        return;
    }
    case CUPTI_CBID_NVTX_nvtxRangeEnd: op_cuda_nvtx_end(((const nvtxRangeEnd_params *)p)->id); return;
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd: op_cuda_nvtx_end(((const nvtxDomainRangeEnd_params *)p)->core.id); return;
    case CUPTI_CBID_NVTX_nvtxNameOsThreadA:
        op_cuda_nvtx_name(OMNIPROF_MARKER_OP_NAME_THREAD, ((const nvtxNameOsThreadA_params *)p)->threadId,
                          ((const nvtxNameOsThreadA_params *)p)->name);
        return;
    case CUPTI_CBID_NVTX_nvtxNameCategoryA:
        op_cuda_nvtx_name(OMNIPROF_MARKER_OP_NAME_CATEGORY, ((const nvtxNameCategoryA_params *)p)->category,
                          ((const nvtxNameCategoryA_params *)p)->name);
        return;
    default: return;
    }
}
