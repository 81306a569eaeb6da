/* test_cuda_names.c — CUDA backend names without a GPU: operation names of the CUDA API kinds
 * come from CUPTI's callback-id tables (no driver needed), with the version suffix removed;
 * the GPU activity kinds have fixed operation names; unknown operations are refused. */
#include <stdio.h>
#include <string.h>

#include "omniprof/omniprof.h"

#include "../common/check.h" /* CHECK, g_failures */

typedef struct { const char *want; int found; int count; } find_t;

static int find_op(omniprof_buffer_tracing_kind_t kind, omniprof_tracing_operation_t op, void *data)
{
    find_t *f = data;
    const char *n = NULL;
    uint64_t len = 0;
    f->count++;
    if (omniprof_query_buffer_tracing_kind_operation_name(kind, op, &n, &len) == OMNIPROF_STATUS_SUCCESS && n &&
        !strcmp(n, f->want))
        f->found = op;
    return 0;
}

static int lookup(omniprof_buffer_tracing_kind_t kind, const char *name, int *count)
{
    find_t f = {name, 0, 0};
    omniprof_status_t st = omniprof_iterate_buffer_tracing_kind_operations(kind, find_op, &f);
    CHECK(st == OMNIPROF_STATUS_SUCCESS, "iterate kind %d: %s", (int)kind, omniprof_get_status_string(st));
    if (count) *count = f.count;
    return f.found;
}

int main(void)
{
    int nrt = 0, ndrv = 0;
    int op = lookup(OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API, "cudaLaunchKernel", &nrt);
    CHECK(op == 211, "cudaLaunchKernel is operation %d, expected CUPTI's cbid 211", op);
    op = lookup(OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API, "__cudaLaunchKernel", NULL);
    CHECK(op == 505, "__cudaLaunchKernel (CUDA 13 <<<>>> path) is operation %d, expected 505", op);
    op = lookup(OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API, "cudaMemcpyAsync_ptsz", NULL);
    CHECK(op > 0, "cudaMemcpyAsync_ptsz not found");
    op = lookup(OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API, "cuLaunchKernel", &ndrv);
    CHECK(op == 307, "cuLaunchKernel is operation %d, expected 307", op);
    CHECK(nrt > 400 && ndrv > 600, "operation counts runtime %d driver %d too small", nrt, ndrv);
    op = lookup(OMNIPROF_BUFFER_TRACING_MEMORY_COPY, "MEMORY_COPY_HOST_TO_DEVICE", NULL);
    CHECK(op == OMNIPROF_MEMORY_COPY_HOST_TO_DEVICE, "MEMORY_COPY_HOST_TO_DEVICE is %d", op);
    op = lookup(OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH, "KERNEL_DISPATCH_COMPLETE", NULL);
    CHECK(op == OMNIPROF_KERNEL_DISPATCH_COMPLETE, "KERNEL_DISPATCH_COMPLETE is %d", op);
    const char *n = NULL;
    uint64_t len = 0;
    omniprof_status_t st = omniprof_query_buffer_tracing_kind_operation_name(OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API, 100000, &n, &len);
    CHECK(st == OMNIPROF_STATUS_ERROR_OPERATION_NOT_FOUND, "operation 100000: %s", omniprof_get_status_name(st));
    st = omniprof_query_buffer_tracing_kind_operation_name(OMNIPROF_BUFFER_TRACING_MEMORY_SET, 1, &n, &len);
    CHECK(st == OMNIPROF_STATUS_SUCCESS && n && !strcmp(n, "MEMORY_SET") && len == 10, "MEMORY_SET name");
    if (!g_failures) printf("PASS: %d runtime and %d driver operations named from CUPTI\n", nrt, ndrv);
    return g_failures ? 1 : 0;
}
