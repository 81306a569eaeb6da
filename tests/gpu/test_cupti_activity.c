/* test_cupti_activity.c — the CUDA backend's correlation map (src/backend/cuda/cupti_corr.c) and
 * activity-mode delivery (src/backend/cuda/cupti_activity.c) without a GPU: the sources are
 * compiled in with the SDK calls stubbed out, and they are driven the way the subscriber and
 * CUPTI's delivery thread drive them, with CUPTI activity records built here.
 *  - 400,000 steps of inserts (launches, copies, graph launches), lookups and forgets: the entry
 *    count always equals the occupied slots, every launch is found exactly once;
 *  - a record with correlation id 0 (module static memory) finds nothing and changes nothing;
 *  - graph entries stay for every record sharing their id; copies leave through the ring;
 *  - activity mode: a kernel delivered before its API record waits and then gets the API
 *    record's internal id and thread, and is emitted after it; a kernel whose API record never
 *    comes is emitted unresolved at the forced flush; an entry captured at launch
 *    (API_PENDING) serves the kernel before and the API record after, with the same id; a
 *    failed call's capture entry leaves with its API record; a nested driver launch's entry
 *    leaves through the ring; a launch made while collection was off adds no entry, the others
 *    after a switch go through the ring;
 *  - every insert is released exactly once (retain/release balance after finalize). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

volatile int op_cuda_off;
static long g_retained, g_released;
static uint64_t g_next_internal = 1000;
void op_sdk_correlation_retain(uint64_t i) { (void)i; g_retained++; }
void op_sdk_correlation_release(uint64_t i) { (void)i; g_released++; }
void op_sdk_correlation_begin(omniprof_correlation_id_t *c) { memset(c, 0, sizeof *c); c->internal = g_next_internal++; }
void op_sdk_correlation_end(const omniprof_correlation_id_t *c) { (void)c; }
int op_sdk_buffer_enabled(uint32_t k, int32_t o) { (void)k; (void)o; return 1; }

/* emitted records, in order: kind, internal id, thread */
typedef struct { uint32_t kind; uint64_t internal, tid, ext; } emitted;
static emitted g_emitted[64];
static int g_n_emitted;
void op_sdk_emit(uint32_t k, int32_t o, const void *p, const op_sdk_external *e)
{
    (void)o;
    const omniprof_buffer_tracing_api_record_t *a = p; /* kernel and API records share the head */
    const omniprof_buffer_tracing_kernel_dispatch_record_t *kr = p;
    if (g_n_emitted >= 64) return;
    emitted *x = &g_emitted[g_n_emitted++];
    x->kind = k;
    x->internal = a->correlation_id.internal;
    x->tid = k == OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH ? kr->thread_id : a->thread_id;
    x->ext = e && e->count ? e->value[0].value : 0;
}
int op_sdk_kind_configured(uint32_t k) { (void)k; return 1; }
int op_sdk_kind_op_configured(uint32_t k, int32_t o) { (void)k; (void)o; return 1; }
int op_sdk_is_finalizing(void) { return 0; }
int op_sdk_create_thread(pthread_t *t, void *(*f)(void *), void *a, omniprof_runtime_library_t l, const char *n)
{ (void)t; (void)f; (void)a; (void)l; (void)n; return -1; }
omniprof_agent_id_t op_cuda_agent_of_device(uint32_t d) { (void)d; return (omniprof_agent_id_t){0}; }
void op_cuda_kernel_names(const char *a, const char **m, const char **d, uint64_t *k) { *m = a, *d = a, *k = 1; }
int op_cuda_um_wanted(void) { return 0; } /* unified memory (cupti_unified_memory.c): not driven here */
void op_cuda_um_record(const CUpti_ActivityUnifiedMemoryCounter3 *u) { (void)u; }
int op_cuda_sass_on(void) { return 0; } /* SASS metrics (cupti_sassmetrics.c): off here */
static const op_cuda_cbinfo k_launch = {"cudaLaunchKernel", OP_CUDA_CLS_LAUNCH}, k_other = {"cudaGetDevice", 0};
const op_cuda_cbinfo *op_cuda_cbinfo_get(CUpti_CallbackDomain d, CUpti_CallbackId id)
{
    (void)d;
    return id == 211 || id == 307 ? &k_launch : &k_other;
}

#include "backend/cuda/cupti_corr.c"
#include "backend/cuda/cupti_activity.c"

#include "../common/check.h" /* CHECK, g_failures */

static uint32_t occupied(void)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < g_map_cap; i++) n += g_map[i].key != 0;
    return n;
}

static int corr_lookup(uint32_t id, op_cuda_launch_info *out, uint64_t *rel) { return op_cuda_corr_lookup(id, out, rel, NULL); }

static void random_traffic(void)
{
    op_cuda_launch_info li, out;
    memset(&li, 0, sizeof li);
    uint64_t rel;
    /* correlation id 0 finds nothing and leaves the count alone */
    li.internal = 1, li.tid = 9;
    op_cuda_corr_insert(5, OP_CUDA_CLS_LAUNCH, &li, 0);
    CHECK(corr_lookup(0, &out, &rel) == 0 && rel == 0, "lookup of id 0 found something");
    CHECK(g_map_count == 1 && occupied() == 1, "count %u occupied %u after id-0 lookup", g_map_count, occupied());
    CHECK(corr_lookup(5, &out, &rel) == 1 && out.internal == 1 && out.tid == 9 && rel == 1, "launch 5 not found");
    op_sdk_correlation_release(rel); /* as the activity code does after emitting */
    CHECK(corr_lookup(5, &out, &rel) == 0, "launch 5 found twice");

    /* a graph launch serves every record with its id */
    li.internal = 2;
    op_cuda_corr_insert(6, OP_CUDA_CLS_GRAPH, &li, 0);
    for (int i = 0; i < 3; i++) CHECK(corr_lookup(6, &out, &rel) == 1 && out.internal == 2 && rel == 0, "graph record %d", i);

    srand(7);
    uint32_t next = 100, launches_found = 0;
    for (int step = 0; step < 400000; step++) {
        int r = rand() % 10;
        if (r < 5) {
            uint8_t cls = (rand() % 2) ? OP_CUDA_CLS_LAUNCH : (rand() % 2 ? OP_CUDA_CLS_MEMCPY : OP_CUDA_CLS_GRAPH);
            li.internal = next;
            op_cuda_corr_insert(next++, cls, &li, 0);
        } else if (r < 8) {
            uint32_t k = next - 1 - (uint32_t)(rand() % 64);
            if (corr_lookup(k, &out, &rel) && rel) {
                CHECK(out.internal == k, "id %u maps to %llu", k, (unsigned long long)out.internal);
                launches_found++;
                op_sdk_correlation_release(rel);
            }
            corr_lookup(0, &out, &rel);
        } else {
            op_cuda_corr_forget(next - 1 - (uint32_t)(rand() % 64));
        }
        if (step % 50000 == 0) CHECK(occupied() == g_map_count, "step %d: count %u, occupied %u", step, g_map_count, occupied());
    }
    CHECK(g_map_refused == 0, "%llu inserts refused", (unsigned long long)g_map_refused);
    printf("random traffic: %u lookups matched\n", launches_found);
}

static CUpti_ActivityAPI api_rec(CUpti_ActivityKind kind, uint32_t cbid, uint32_t corr, uint32_t tid, uint32_t ret)
{
    CUpti_ActivityAPI a;
    memset(&a, 0, sizeof a);
    a.kind = kind, a.cbid = cbid, a.correlationId = corr, a.threadId = tid, a.returnValue = ret;
    a.start = 10, a.end = 20;
    return a;
}

static CUpti_ActivityKernel10 kernel_rec(uint32_t corr)
{
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, k.correlationId = corr, k.name = "k", k.start = 30, k.end = 40;
    return k;
}

static const emitted *find(uint32_t kind, int nth)
{
    for (int i = 0; i < g_n_emitted; i++)
        if (g_emitted[i].kind == kind && nth-- == 0) return &g_emitted[i];
    return NULL;
}

static void activity_mode(void)
{
    op_cuda_activity_mode = 1;
    op_cuda_activity_classes = OP_CUDA_CLS_LAUNCH | OP_CUDA_CLS_GRAPH;
    const uint32_t K = OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH, RT = OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API;
    uint32_t base_count = g_map_count;

    /* 1: API record, then its kernel in a later buffer */
    CUpti_ActivityAPI a1 = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 50001, 77, 0);
    CUpti_ActivityKernel10 k1 = kernel_rec(50001);
    CUpti_Activity *b[2] = {(CUpti_Activity *)&a1};
    CHECK(deliver_batch(b, 1) == 1, "launch API record added no entry");
    b[0] = (CUpti_Activity *)&k1;
    deliver_batch(b, 1);
    const emitted *ea = find(RT, 0), *ek = find(K, 0);
    CHECK(ea && ek && ea->internal == ek->internal && ek->tid == 77 && ea < ek, "case 1: kernel not joined to its API record");

    /* 2: kernel first (waits), then its API record: joined, emitted after the API record */
    CUpti_ActivityKernel10 k2 = kernel_rec(50002);
    CUpti_ActivityAPI a2 = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 50002, 78, 0);
    b[0] = (CUpti_Activity *)&k2;
    deliver_batch(b, 1);
    CHECK(find(K, 1) == NULL && g_pend_n == 1, "case 2: kernel emitted before its API record (pending %u)", g_pend_n);
    b[0] = (CUpti_Activity *)&a2;
    if (deliver_batch(b, 1)) retry_pending(0);
    ea = find(RT, 1), ek = find(K, 1);
    CHECK(ea && ek && ea->internal == ek->internal && ek->tid == 78 && ea < ek && g_pend_n == 0,
          "case 2: waiting kernel not joined after its API record");

    /* 3: a kernel whose API record never comes goes out unresolved at the forced flush */
    CUpti_ActivityKernel10 k3 = kernel_rec(50003);
    b[0] = (CUpti_Activity *)&k3;
    deliver_batch(b, 1);
    CHECK(find(K, 2) == NULL, "case 3: kernel emitted at once");
    retry_pending(1);
    ek = find(K, 2);
    CHECK(ek && ek->internal == 0 && ek->tid == 0 && g_unresolved == 1, "case 3: not emitted unresolved at the forced flush");

    /* 4: captured at launch (external id 4242): kernel before the API record, both share the id */
    op_cuda_launch_info li;
    memset(&li, 0, sizeof li);
    li.internal = 555, li.tid = 79, li.ext.count = 1, li.ext.value[0].value = 4242;
    op_cuda_corr_insert(50004, OP_CUDA_CLS_LAUNCH, &li, OP_CUDA_CORR_API_PENDING);
    CUpti_ActivityKernel10 k4 = kernel_rec(50004);
    CUpti_ActivityAPI a4 = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 50004, 79, 0);
    b[0] = (CUpti_Activity *)&k4, b[1] = (CUpti_Activity *)&a4;
    deliver_batch(b, 2);
    ek = find(K, 3), ea = find(RT, 2);
    CHECK(ek && ea && ek->internal == 555 && ea->internal == 555 && ek->ext == 4242 && ea->ext == 4242,
          "case 4: captured entry not shared by kernel and API record: k %p %llu %llu a %p %llu %llu", (void *)ek, ek ? (unsigned long long)ek->internal : 0ull, ek ? (unsigned long long)ek->ext : 0ull, (void *)ea, ea ? (unsigned long long)ea->internal : 0ull, ea ? (unsigned long long)ea->ext : 0ull);

    /* 5: a captured call that failed: its API record removes the entry */
    li.internal = 556;
    op_cuda_corr_insert(50005, OP_CUDA_CLS_LAUNCH, &li, OP_CUDA_CORR_API_PENDING);
    CUpti_ActivityAPI a5 = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 50005, 79, 1);
    b[0] = (CUpti_Activity *)&a5;
    deliver_batch(b, 1);
    CHECK(g_map_count == base_count, "case 5: entries left: %u (expected %u)", g_map_count, base_count);

    /* 6: a driver launch (maybe nested in a runtime launch): its entry leaves through the ring */
    CUpti_ActivityAPI a6 = api_rec(CUPTI_ACTIVITY_KIND_DRIVER, 307, 50006, 79, 0);
    b[0] = (CUpti_Activity *)&a6;
    deliver_batch(b, 1);
    uint32_t at = (g_ring_pos - 1) & (OP_CUDA_RING - 1);
    CHECK(g_ring[at] == 50006, "case 6: driver launch entry not in the ring");

    /* 7: collection off, then on again (op_cuda_activity_collect; no kind was enabled here, so it
     * makes no CUPTI call): a launch made while off adds no entry, although its record is delivered
     * after collection came back (no kernel record will take it); launches made before or after the
     * off span, or without a start time, add one that goes through the ring (bounded) */
    uint32_t before = g_map_count;
    uint64_t t_before = op_now_ns();
    op_cuda_activity_collect(0);
    uint64_t t_off = op_now_ns();
    op_cuda_activity_collect(1);
    uint64_t t_on = op_now_ns();
    CUpti_ActivityAPI a7 = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 50007, 80, 0);
    a7.start = t_off, a7.end = t_off + 1;
    b[0] = (CUpti_Activity *)&a7;
    CHECK(deliver_batch(b, 1) == 0 && g_map_count == before && map_find(50007) == NULL,
          "case 7: a launch made while off added an entry (%u, %u)", g_map_count, before);
    static const uint32_t ids[3] = {50008, 50009, 50010};
    const uint64_t starts[3] = {t_on, t_before - 1, 0};
    for (int i = 0; i < 3; i++) {
        CUpti_ActivityAPI ax = api_rec(CUPTI_ACTIVITY_KIND_RUNTIME, 211, ids[i], 81, 0);
        ax.start = starts[i], ax.end = starts[i] + 1;
        b[0] = (CUpti_Activity *)&ax;
        CHECK(deliver_batch(b, 1) == 1 && map_find(ids[i]) != NULL, "case 7: launch %u added no entry", ids[i]);
        CHECK(g_ring[(g_ring_pos - 1) & (OP_CUDA_RING - 1)] == ids[i], "case 7: launch %u's entry not in the ring", ids[i]);
    }
    CUpti_ActivityKernel10 k8 = kernel_rec(50008);
    b[0] = (CUpti_Activity *)&k8;
    int nk = 0;
    for (int i = 0; i < g_n_emitted; i++) nk += g_emitted[i].kind == K;
    deliver_batch(b, 1);
    ek = find(K, nk);
    CHECK(ek && ek->tid == 81 && ek->internal != 0 && map_find(50008) == NULL, "case 7: the kernel of a launch after the off span not joined");
    printf("activity mode: %d records emitted, %llu unresolved\n", g_n_emitted, (unsigned long long)g_unresolved);
}

int main(void)
{
    op_cuda_corr_init();
    random_traffic();
    activity_mode();
    op_cuda_activity_finalize();
    CHECK(g_map_count == 0 && occupied() == 0, "map not empty after finalize");
    CHECK(g_retained == g_released, "retained %ld != released %ld", g_retained, g_released);
    if (!g_failures) printf("PASS: %ld inserts, retain/release balanced\n", g_retained);
    return g_failures ? 1 : 0;
}
