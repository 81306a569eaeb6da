/* cuda_backend.h — what other parts of the CUDA backend (the counters collector in
 * cupti_counters*.c) may use of the CUDA tracing backend: its single CUPTI subscriber.
 *
 * CUDA 13.0 allows one CUPTI subscriber per process (docs/cuda.md), so the tracing backend
 * (cupti_subscriber.c) owns it and fans callbacks out. The counters collector needs kernel
 * launch ENTER/EXIT notifications (to start/stop Range Profiler ranges and to record the launch
 * order); it installs one hook here instead of subscribing itself.
 *
 * Invariants:
 *  (1) The hook is called on the launching thread, synchronously inside the CUPTI callback of
 *      a kernel-launch API (runtime cudaLaunchKernel*, cudaLaunchCooperativeKernel*,
 *      cudaGraphLaunch, driver cuLaunchKernel*, cuLaunchCooperativeKernel*, cuGraphLaunch),
 *      phase 1 at ENTER and 2 at EXIT. A runtime launch is seen twice (runtime API, then the
 *      driver API it calls): cb->callbackSite/domain tell them apart — the hook receives the
 *      CUPTI domain through op_cuda_launch_domain(cb) (see below).
 *  (2) The hook is called whether or not any context traces the API kinds: installing it makes
 *      the backend enable the launch callbacks it needs.
 *  (3) Setting a new hook replaces the previous one; NULL removes it. The pointer pair is
 *      published atomically; a hook may still be called once by a racing launch right after
 *      removal, so `data` must outlive the process or be static.
 *  (4) The hook must not call CUPTI subscribe/unsubscribe functions nor block unboundedly.
 */
#ifndef OMNIPROF_BACKEND_CUDA_BACKEND_H
#define OMNIPROF_BACKEND_CUDA_BACKEND_H

#include <cuda.h>
#include <cupti.h>

#define OP_CUDA_LAUNCH_ENTER 1
#define OP_CUDA_LAUNCH_EXIT 2

/* phase: OP_CUDA_LAUNCH_ENTER / OP_CUDA_LAUNCH_EXIT; cb: CUPTI's callback data (valid only
 * during the call: cb->correlationId, cb->symbolName, cb->functionParams, cb->context);
 * ctx: cb->context (the launching CUDA context); data: as given to op_cuda_set_launch_hook. */
typedef void (*op_cuda_launch_hook_t)(int phase, const CUpti_CallbackData *cb, CUcontext ctx, void *data);

/* Install (or, with NULL, remove) the launch hook. Thread-safe. May be called before the
 * backend started: the hook becomes active when the subscriber exists. */
void op_cuda_set_launch_hook(op_cuda_launch_hook_t hook, void *data);

/* 1 when this process's CUPTI subscriber is ours and active; 0 when the backend is off (no GPU,
 * no driver, another tool holds CUPTI, or not started yet). */
int op_cuda_backend_subscribed(void);

/* The CUPTI domain (CUPTI_CB_DOMAIN_RUNTIME_API or CUPTI_CB_DOMAIN_DRIVER_API) and callback id
 * of the launch the hook is being called for; valid only inside the hook on that thread. */
CUpti_CallbackDomain op_cuda_launch_domain(void);
CUpti_CallbackId op_cuda_launch_cbid(void);

/* Inside the hook: the internal correlation id the kernel's dispatch record will carry (for a
 * runtime launch, the runtime call's id, also while the hook runs for its nested driver call),
 * and the dispatch id that record will have (the same id for plain launches; 0 for graph
 * launches, whose kernels get sequence numbers). 0 when kernel activity is not collected. */
uint64_t op_cuda_launch_correlation_id(void);
uint64_t op_cuda_launch_dispatch_id(void);

/* Make sure the backend (and its subscriber) is started even if no tracing kind was configured:
 * the counters service calls this from its own start. Returns 0 on success, -1 when CUPTI could
 * not be taken (the reason was logged once). Idempotent. */
int op_cuda_backend_ensure_started(void);

#endif /* OMNIPROF_BACKEND_CUDA_BACKEND_H */
