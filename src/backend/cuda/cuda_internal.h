/* cuda_internal.h — state shared by the files of the CUDA tracing backend (not API).
 *
 *   cupti_subscriber.c  backend descriptor, start, the one CUPTI subscriber and its callbacks
 *                       (runtime/driver API, resource, NVTX), the counters launch hook
 *   cupti_activity.c    CUPTI activity buffers → omniprof GPU and (activity mode) API records,
 *                       flushing
 *   cupti_corr.c        the correlation map: CUPTI correlation id → launching call's ids
 *   cuda_api.c          generated rows: every call's name and argument decoder (gen_cuda_api.py)
 *   cuda_names.c        callback-id classes, operation names, decoded arguments, demangling
 *   cuda_agents.c       CUDA devices as omniprof agents (driver API, dlopen'd)
 *
 * Lock order: the correlation map's spin lock never nests inside another lock of this backend; the SDK's
 * op_sdk_* calls are made without holding it. */
#ifndef OMNIPROF_BACKEND_CUDA_INTERNAL_H
#define OMNIPROF_BACKEND_CUDA_INTERNAL_H

#include <stdint.h>
#include <wchar.h>

#include <cuda.h>
#include <cupti.h>

#include "omniprof/omniprof.h"
#include "backend/cuda/cuda_backend.h"
#include "sdk/backend.h"

/* Classes of API calls (bit flags), decided once per callback id from its name. */
enum {
    OP_CUDA_CLS_LAUNCH = 1 << 0,  /* produces one kernel record */
    OP_CUDA_CLS_GRAPH = 1 << 1,   /* graph launch: many records share the correlation id */
    OP_CUDA_CLS_MEMCPY = 1 << 2,
    OP_CUDA_CLS_MEMSET = 1 << 3,
    OP_CUDA_CLS_ALLOC = 1 << 4,   /* allocation or free: a MEMORY2 record */
    OP_CUDA_CLS_SYNC = 1 << 5,    /* synchronization record (not always produced) */
};

typedef struct op_cuda_cbinfo {
    const char *name; /* API name without CUPTI's _vNNNN suffix; NULL if the id is unused */
    uint8_t cls;      /* OP_CUDA_CLS_* */
} op_cuda_cbinfo;

/* cuda_names.c */
void op_cuda_names_init(void);
const op_cuda_cbinfo *op_cuda_cbinfo_get(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
const char *op_cuda_operation_name(uint32_t buffer_kind, int32_t operation);
int op_cuda_iterate_operations(uint32_t buffer_kind, int (*cb)(int32_t operation, void *data), void *data);
omniprof_status_t op_cuda_iterate_record_args(const omniprof_record_header_t *header, omniprof_arg_iterate_cb_t cb,
                                              void *data);
/* The kernel name (launches), then every argument of the call (cuda_api.c's generated rows),
 * strings interned; returns how many were written (≤ max). */
uint32_t op_cuda_decode_args(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *params,
                             const char *symbol, omniprof_arg_t *out, uint32_t max);
/* Interned mangled and demangled names and a stable kernel id for a CUPTI kernel name. */
void op_cuda_kernel_names(const char *cupti_name, const char **mangled, const char **demangled, uint64_t *kernel_id);

/* cuda_agents.c */
size_t op_cuda_query_agents(omniprof_agent_v0_t *out, size_t max, int may_init);
void op_cuda_agents_at_fork_child(void); /* cuda_agents.c: resets its lock in a forked child */
/* Agent id of CUDA device ordinal `device` (resolved through the SDK once; {0} if unknown). */
omniprof_agent_id_t op_cuda_agent_of_device(uint32_t device);

/* cupti_corr.c — the correlation map (see its header comment for the invariants) */
typedef struct op_cuda_launch_info {
    uint64_t internal;        /* our correlation id of the launching call */
    omniprof_thread_id_t tid; /* launching thread */
    op_sdk_external ext;      /* external ids captured at launch */
} op_cuda_launch_info;

/* A GPU record's launching call, looked up ahead (op_cuda_corr_resolve) */
typedef struct op_cuda_corr_result {
    uint32_t id;
    uint8_t cls, found, ready;
    op_cuda_launch_info li;
    uint64_t release; /* id to release once the record was emitted (0: none) */
} op_cuda_corr_result;

enum {
    OP_CUDA_CORR_API_PENDING = 1, /* inserted at launch; the call's API activity record completes it */
    OP_CUDA_CORR_RING = 2,        /* leaves through the ring even if it is a launch */
};
void op_cuda_corr_init(void);
int op_cuda_corr_active(void);
/* Remember that CUPTI correlation id `cupti_id` belongs to the call `info` (class `cls`). */
void op_cuda_corr_insert(uint32_t cupti_id, uint8_t cls, const op_cuda_launch_info *info, int flags);
/* The call failed: forget it. */
void op_cuda_corr_forget(uint32_t cupti_id);
/* Look up n GPU records' calls under one lock; op_cuda_corr_set_current(&res[i]) before the
 * handler of record i lets op_cuda_corr_lookup use the result instead of locking again. */
void op_cuda_corr_resolve(const uint32_t *ids, int n, op_cuda_corr_result *res);
void op_cuda_corr_set_current(op_cuda_corr_result *r);
/* A GPU record's launching call: 1 if found; *release: id to release after emitting. */
int op_cuda_corr_lookup(uint32_t cupti_id, op_cuda_launch_info *out, uint64_t *release, uint8_t *cls);
/* Activity mode, an API record arrived (`failed`: the call returned an error): if its call was
 * captured at launch (API_PENDING entry), fill *out and return 1; *release is an id to release after emitting the API record. */
int op_cuda_corr_api_pending(uint32_t cupti_id, int failed, op_cuda_launch_info *out, uint64_t *release);
void op_cuda_corr_finalize(void);

/* cupti_nvtx.c: NVTX calls to marker records, from omniprof's own NVTX injection
 * (nvtx_inject.c) or from CUPTI's NVTX callback domain (op_cuda_on_nvtx) */
void op_cuda_on_nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData *nd);
void op_cuda_nvtx_mark(uint64_t domain, const char *msg);
int op_cuda_nvtx_push(uint64_t domain, const char *msg); /* the new range's level (0 = outermost) */
int op_cuda_nvtx_pop(void);                              /* the closed range's level, -1: none */
void op_cuda_nvtx_start(uint64_t id, uint64_t domain, const char *msg);
void op_cuda_nvtx_end(uint64_t id);
void op_cuda_nvtx_name(int32_t op, uint64_t id, const char *name);
const char *op_cuda_nvtx_wide(const wchar_t *w, char *buf, size_t cap);
struct nvtxEventAttributes_v2;
const char *op_cuda_nvtx_attr_message(const struct nvtxEventAttributes_v2 *a, int registered,
                                      char *wbuf, size_t cap);
/* nvtx_inject.c: the library whose InitializeInjectionNvtx2 installs the handlers (this one),
 * or NULL when its path is unknown */
const char *op_cuda_nvtx_injection_path(void);

/* cupti_activity.c */
/* activity mode: GPU records are correlated through CUPTI's API activity records (no callback on
 * the launch path); 0: through callbacks at launch (callback mode) */
extern int op_cuda_activity_mode;
/* api_traced: an API kind is traced (activity mode needs API activity records then) */
int op_cuda_activity_start(int api_traced); /* 0, or -1 (logged) */
/* Activity mode: enable CUPTI's API activity records for the traced domains (full) and for the
 * calls of classes `cls` */
void op_cuda_activity_enable_api(int rt_full, int drv_full, uint8_t cls);
/* Turns the activity kinds and API records enabled at start off (0) or on again (1): the backend
 * collects nothing while no active context wants its records or collection is paused. */
void op_cuda_activity_collect(int on);
/* 1 when CUPTI's timestamps are op_now_ns()'s (its timestamp callback registered), which the
 * spans collection was off are compared with */
extern int op_cuda_own_timestamps;
/* Activity mode: does CUPTI write an API activity record for this call? */
int op_cuda_activity_api_recorded(CUpti_CallbackDomain dom, CUpti_CallbackId cbid);
void op_cuda_activity_flush(int forced);
void op_cuda_activity_finalize(void);
/* Which CUDA activity classes are collected (OP_CUDA_CLS_* of the enabled activity kinds). */
extern uint8_t op_cuda_activity_classes;

/* cupti_pcsampling.c — PC sampling (include/omniprof/pc_sampling.h) */
int op_cuda_pcs_start(void); /* 1 when PC sampling was configured: launch and resource callbacks needed */
int op_cuda_pcs_enabled(void);
void op_cuda_pcs_on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd);
/* at a launch's ENTER (phase 1: remember cupti_corr -> internal) and EXIT (2: read the samples) */
void op_cuda_pcs_launch(int phase, uint32_t cupti_corr, uint64_t internal, CUcontext ctx);
void op_cuda_pcs_finish(void); /* everything read, sampling off (exit, finalization) */

/* cupti_pmsampling.c — PM sampling (include/omniprof/pm_sampling.h) */
int op_cuda_pms_start(void); /* 1 when PM sampling was configured: context-creation callbacks needed */
void op_cuda_pms_on_context(CUcontext ctx); /* a context was created: its device starts sampling */
void op_cuda_pms_finish(void);              /* stopped and drained (exit, finalization) */

/* cupti_sassmetrics.c — SASS metrics (include/omniprof/sass_metrics.h) */
int op_cuda_sass_start(void); /* 1 when configured: launch and resource callbacks needed */
int op_cuda_sass_on(void);    /* started and not failed: kernel records come from the KERNEL kind */
void op_cuda_sass_launch(CUcontext ctx, int enter); /* at a launch's ENTER (1) / EXIT (0), not nested */
void op_cuda_sass_on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd);
void op_cuda_sass_finish(void); /* values read and emitted (exit, finalization) */

/* cupti_unified_memory.c — unified memory events (UNIFIED_MEMORY) */
int op_cuda_um_wanted(void);     /* the kind is configured */
void op_cuda_um_on_context(void); /* counters configured and enabled, once, after driver init */
void op_cuda_um_record(const CUpti_ActivityUnifiedMemoryCounter3 *u);

/* cuda_cubins.c — loaded cubins; an instruction's source line and SASS text */
void op_cuda_cubins_on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd);
void op_cuda_code_at(uint64_t crc, uint32_t fidx, const char *fname, uint64_t pc, const char **file, uint32_t *line,
                     const char **sass);

/* cuda_sass.c — SASS text of an instruction (nvdisasm), "" when unknown */
const char *op_cuda_sass_text(uint64_t crc, const void *cubin, size_t size, const char *function, uint64_t pc);

/* cupti_subscriber.c */
extern volatile int op_cuda_off; /* 1: backend turned itself off, or finalizing */
extern volatile int op_cuda_forked; /* 1: a forked child: the parent's CUPTI state is not ours to call, no GPU is listed */
void op_cuda_own_calls(int on);  /* 1: this thread's driver calls are ours (not traced) */
omniprof_thread_id_t op_cuda_tid(void);

#endif /* OMNIPROF_BACKEND_CUDA_INTERNAL_H */
