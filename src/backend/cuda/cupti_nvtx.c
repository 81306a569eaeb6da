/* cupti_nvtx.c — NVTX calls, seen through CUPTI's NVTX callback domain (cupti_subscriber.c enables
 * it and hands each call here), become MARKER_API records (one per call) and MARKER_RANGE_API
 * records (one per completed range): thread ranges on a per-thread stack, process ranges
 * (nvtxRangeStart/End) in a table under a lock. */
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

static const char *attr_message(const nvtxEventAttributes_t *a)
{
    if (!a) return "";
    if (a->messageType == NVTX_MESSAGE_TYPE_ASCII) return a->message.ascii ? a->message.ascii : "";
    if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) return "<registered string>";
    if (a->messageType == NVTX_MESSAGE_TYPE_UNICODE) return "<unicode string>";
    return "";
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

void op_cuda_on_nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData *nd)
{
    if (!nd || !nd->functionParams) return;
    const void *p = nd->functionParams;
    uint64_t now = op_now_ns();
    omniprof_thread_id_t tid = op_cuda_tid();
    const char *msg = NULL;
    uint64_t domain = 0;
    const uint32_t API = OMNIPROF_BUFFER_TRACING_MARKER_API, RANGE = OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API;
    switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxMarkA: msg = ((const nvtxMarkA_params *)p)->message; goto mark;
    case CUPTI_CBID_NVTX_nvtxMarkEx: msg = attr_message(((const nvtxMarkEx_params *)p)->eventAttrib); goto mark;
    case CUPTI_CBID_NVTX_nvtxDomainMarkEx:
        domain = (uint64_t)(uintptr_t)((const nvtxDomainMarkEx_params *)p)->domain;
        msg = attr_message(((const nvtxDomainMarkEx_params *)p)->core.eventAttrib);
    mark:
        emit_marker(API, OMNIPROF_MARKER_OP_MARK, now, now, tid, tid, 0, -1, domain, msg);
        emit_marker(RANGE, OMNIPROF_MARKER_RANGE_OP_MARK, now, now, tid, tid, 0, -1, domain, msg);
        return;
    case CUPTI_CBID_NVTX_nvtxRangePushA: msg = ((const nvtxRangePushA_params *)p)->message; goto push;
    case CUPTI_CBID_NVTX_nvtxRangePushEx: msg = attr_message(((const nvtxRangePushEx_params *)p)->eventAttrib); goto push;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
        domain = (uint64_t)(uintptr_t)((const nvtxDomainRangePushEx_params *)p)->domain;
        msg = attr_message(((const nvtxDomainRangePushEx_params *)p)->core.eventAttrib);
    push: {
        int d = t_nvtx_depth;
        op_sdk_progress(4, msg); /* causal profiling: a range start is a progress point */
        emit_marker(API, OMNIPROF_MARKER_OP_RANGE_PUSH, now, now, tid, tid, 0, d + 1, domain, msg);
        if (d < NVTX_DEPTH) {
            t_nvtx_stack[d].start = now;
            t_nvtx_stack[d].domain = domain;
            copy_msg(t_nvtx_stack[d].msg, NVTX_MSG, msg);
        }
        t_nvtx_depth = d + 1;
        return;
    }
    case CUPTI_CBID_NVTX_nvtxRangePop:
    case CUPTI_CBID_NVTX_nvtxDomainRangePop: {
        int d = t_nvtx_depth;
        if (d <= 0) return; /* unbalanced pop: nothing to close */
        t_nvtx_depth = d - 1;
        if (d - 1 < NVTX_DEPTH) {
            const nvtx_open *o = &t_nvtx_stack[d - 1];
            emit_marker(API, OMNIPROF_MARKER_OP_RANGE_POP, now, now, tid, tid, 0, d, o->domain, o->msg);
            emit_marker(RANGE, OMNIPROF_MARKER_RANGE_OP_THREAD_RANGE, o->start, now, tid, tid, 0, d, o->domain, o->msg);
        }
        return;
    }
    case CUPTI_CBID_NVTX_nvtxRangeStartA: msg = ((const nvtxRangeStartA_params *)p)->message; goto start;
    case CUPTI_CBID_NVTX_nvtxRangeStartEx: msg = attr_message(((const nvtxRangeStartEx_params *)p)->eventAttrib); goto start;
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
        domain = (uint64_t)(uintptr_t)((const nvtxDomainRangeStartEx_params *)p)->domain;
        msg = attr_message(((const nvtxDomainRangeStartEx_params *)p)->core.eventAttrib);
    start: {
        uint64_t id = nd->functionReturnValue ? *(const nvtxRangeId_t *)nd->functionReturnValue : 0;
        op_sdk_progress(4, msg);
        emit_marker(API, OMNIPROF_MARKER_OP_RANGE_START, now, now, tid, tid, id, -1, domain, msg);
        if (!id) return;
        pthread_mutex_lock(&g_proc_lock);
        nvtx_open *o = &g_proc_ranges[id % NVTX_PROC_RANGES];
        o->id = id, o->start = now, o->tid = tid, o->domain = domain;
        copy_msg(o->msg, NVTX_MSG, msg);
        pthread_mutex_unlock(&g_proc_lock);
        return;
    }
    case CUPTI_CBID_NVTX_nvtxRangeEnd:
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd: {
        uint64_t id = cbid == CUPTI_CBID_NVTX_nvtxRangeEnd ? ((const nvtxRangeEnd_params *)p)->id
                                                           : ((const nvtxDomainRangeEnd_params *)p)->core.id;
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
        emit_marker(API, OMNIPROF_MARKER_OP_RANGE_STOP, now, now, tid, tid, id, -1, found ? o.domain : 0,
                    found ? o.msg : "");
        if (found)
            emit_marker(RANGE, OMNIPROF_MARKER_RANGE_OP_PROCESS_RANGE, o.start, now, o.tid, tid, id, -1, o.domain, o.msg);
        return;
    }
    case CUPTI_CBID_NVTX_nvtxNameOsThreadA:
        emit_marker(API, OMNIPROF_MARKER_OP_NAME_THREAD, now, now, tid, tid, ((const nvtxNameOsThreadA_params *)p)->threadId,
                    -1, 0, ((const nvtxNameOsThreadA_params *)p)->name);
        return;
    case CUPTI_CBID_NVTX_nvtxNameCategoryA:
        emit_marker(API, OMNIPROF_MARKER_OP_NAME_CATEGORY, now, now, tid, tid,
                    ((const nvtxNameCategoryA_params *)p)->category, -1, 0, ((const nvtxNameCategoryA_params *)p)->name);
        return;
    default: return;
    }
}
