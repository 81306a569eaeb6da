/* test_cupti_activity.c — the CUDA backend's correlation map (src/backend/cuda/cupti_activity.c)
 * without a GPU: the source is compiled in with the SDK calls stubbed out, and the map is
 * driven the way the subscriber and the activity thread drive it.
 *  - 200,000 inserts (launches, copies, graph launches) interleaved with lookups and forgets:
 *    the entry count always equals the occupied slots, every launch is found exactly once;
 *  - a record with correlation id 0 (module static memory) finds nothing and changes nothing
 *    (regression: it used to match an empty slot and corrupt the count);
 *  - graph entries stay for every record sharing their id; copies leave through the ring;
 *  - every insert is released exactly once (retain/release balance after finalize). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

volatile int op_cuda_off;
static long g_retained, g_released;
void op_sdk_correlation_retain(uint64_t i) { (void)i; g_retained++; }
void op_sdk_correlation_release(uint64_t i) { (void)i; g_released++; }
int op_sdk_buffer_enabled(uint32_t k, int32_t o) { (void)k; (void)o; return 1; }
void op_sdk_emit(uint32_t k, int32_t o, const void *p, const op_sdk_external *e) { (void)k; (void)o; (void)p; (void)e; }
int op_sdk_kind_configured(uint32_t k) { (void)k; return 1; }
int op_sdk_is_finalizing(void) { return 0; }
int op_sdk_create_thread(pthread_t *t, void *(*f)(void *), void *a, omniprof_runtime_library_t l, const char *n)
{ (void)t; (void)f; (void)a; (void)l; (void)n; return -1; }
omniprof_agent_id_t op_cuda_agent_of_device(uint32_t d) { (void)d; return (omniprof_agent_id_t){0}; }
void op_cuda_kernel_names(const char *a, const char **m, const char **d, uint64_t *k) { *m = a, *d = a, *k = 1; }

#include "backend/cuda/cupti_activity.c"

static int g_fail;
#define CHECK(c, ...) do { if (!(c)) { printf("FAIL: " __VA_ARGS__); printf("\n"); g_fail = 1; } } while (0)

static uint32_t occupied(void)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < g_map_cap; i++) n += g_map[i].key != 0;
    return n;
}

int main(void)
{
    MAP_LOCK();
    map_grow();
    MAP_UNLOCK();
    g_ring = op_calloc(OP_CUDA_RING, sizeof *g_ring);
    op_cuda_launch_info li;
    memset(&li, 0, sizeof li);
    op_cuda_launch_info out;
    uint64_t rel;

    /* correlation id 0 finds nothing and leaves the count alone */
    li.internal = 1, li.tid = 9;
    op_cuda_corr_insert(5, OP_CUDA_CLS_LAUNCH, &li);
    CHECK(corr_lookup(0, &out, &rel) == 0 && rel == 0, "lookup of id 0 found something");
    CHECK(g_map_count == 1 && occupied() == 1, "count %u occupied %u after id-0 lookup", g_map_count, occupied());
    CHECK(corr_lookup(5, &out, &rel) == 1 && out.internal == 1 && out.tid == 9 && rel == 1, "launch 5 not found");
    op_sdk_correlation_release(rel); /* as the activity code does after emitting */
    CHECK(corr_lookup(5, &out, &rel) == 0, "launch 5 found twice");

    /* a graph launch serves every record with its id */
    li.internal = 2;
    op_cuda_corr_insert(6, OP_CUDA_CLS_GRAPH, &li);
    for (int i = 0; i < 3; i++) CHECK(corr_lookup(6, &out, &rel) == 1 && out.internal == 2 && rel == 0, "graph record %d", i);

    /* random traffic */
    srand(7);
    uint32_t next = 100, launches_found = 0, launches = 0;
    for (int step = 0; step < 400000; step++) {
        int r = rand() % 10;
        if (r < 5) {
            uint8_t cls = (rand() % 2) ? OP_CUDA_CLS_LAUNCH : (rand() % 2 ? OP_CUDA_CLS_MEMCPY : OP_CUDA_CLS_GRAPH);
            li.internal = next;
            launches += cls == OP_CUDA_CLS_LAUNCH;
            op_cuda_corr_insert(next++, cls, &li);
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
    op_cuda_activity_finalize();
    CHECK(g_map_count == 0 && occupied() == 0, "map not empty after finalize");
    CHECK(g_retained == g_released, "retained %ld != released %ld", g_retained, g_released);
    if (!g_fail) printf("PASS: %ld inserts, %u lookups matched, retain/release balanced\n", g_retained, launches_found);
    return g_fail;
}
