/* ocl_workload.c — the OpenCL program of the OpenCL backend's tests (CI on PoCL, and the GPU
 * machine on NVIDIA's OpenCL): known kernels, copies, maps, a fill and allocations, on queues
 * with and without profiling, from two threads, with and without events of its own.
 *
 * What it does (the counts tests/opencl/check_trace.py expects, printed as the "expect" line):
 *   phase 1, queue A (no profiling asked, clCreateCommandQueueWithProperties):
 *            2 writes (H2D), 1 fill, 8 vadd (no events), 4 scale (own events: profiling must be
 *            unavailable), 1 copy (D2D), 1 blocking read (D2H), 1 map (D2H) + unmap (H2D)
 *   phase 2, queue B (profiling asked, clCreateCommandQueue): 3 vadd and 1 read with own events,
 *            whose profiling times it reads (printed to the report file, not to stdout), then
 *            1 vadd whose event it releases at once
 *   phase 3, two threads, each its own queue (no profiling asked): 5 scale each, no events
 *   4 buffers allocated and released (4 ALLOCATE + 4 FREE)
 * Before each phase it pushes an external correlation id (1000 + phase) on the test tool's
 * context when the tool is loaded (ocl_test_tool_push_external), and pops it after.
 *
 * stdout holds only what must be identical with and without tracing: results, the queue
 * properties it reads back, whether profiling was available on its events.
 * OCL_WORKLOAD_REPORT=path gets one JSON line with host times and its own events' profiling.
 * OCL_WORKLOAD_PLATFORM=substring picks the platform whose name contains it.
 * Exit status: 0 ok, 1 an OpenCL call failed or a check did not hold, 77 no OpenCL device. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS /* clCreateCommandQueue: what older programs call */
#include <CL/cl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 4096

static const char *k_src =
    "__kernel void vadd(__global const float *a, __global const float *b, __global float *c)\n"
    "{ size_t i = get_global_id(0); c[i] = a[i] + b[i]; }\n"
    "__kernel void scale(__global float *x, float f)\n"
    "{ size_t i = get_global_id(0); x[i] = x[i] * f; }\n";

static cl_context g_ctx;
static cl_device_id g_dev;
static cl_program g_prog;
static FILE *g_report;
static int g_fail;

#define CK(call)                                                                                   \
    do {                                                                                           \
        cl_int e_ = (call);                                                                        \
        if (e_ != CL_SUCCESS) {                                                                    \
            fprintf(stderr, "ocl_workload: %s failed: %d (line %d)\n", #call, e_, __LINE__);        \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "ocl_workload: check failed: %s\n", what);
        g_fail = 1;
    }
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* External correlation on the test tool's context, when the tool is there. */
static void push_external(uint64_t v)
{
    void (*push)(uint64_t) = (void (*)(uint64_t))dlsym(RTLD_DEFAULT, "ocl_test_tool_push_external");
    if (push) push(v);
}
static void pop_external(void)
{
    void (*pop)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "ocl_test_tool_pop_external");
    if (pop) pop();
}

static void pick_device(void)
{
    cl_platform_id plats[8];
    cl_uint np = 0;
    if (clGetPlatformIDs(8, plats, &np) != CL_SUCCESS || np == 0) {
        printf("SKIP: no OpenCL platform\n");
        exit(77);
    }
    const char *want = getenv("OCL_WORKLOAD_PLATFORM");
    for (cl_uint p = 0; p < np && p < 8; p++) {
        char name[256] = "";
        clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (want && *want && !strstr(name, want)) continue;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 1, &g_dev, NULL) == CL_SUCCESS) return;
    }
    printf("SKIP: no OpenCL device%s%s\n", want ? " on a platform named like " : "", want ? want : "");
    exit(77);
}

static cl_kernel kernel(const char *name)
{
    cl_int e;
    cl_kernel k = clCreateKernel(g_prog, name, &e);
    CK(e);
    return k;
}

static cl_mem buffer(void)
{
    cl_int e;
    cl_mem m = clCreateBuffer(g_ctx, CL_MEM_READ_WRITE, N * sizeof(float), NULL, &e);
    CK(e);
    return m;
}

static void enqueue_scale(cl_command_queue q, cl_kernel k, cl_mem x, float f, cl_event *ev)
{
    size_t global = N;
    CK(clSetKernelArg(k, 0, sizeof x, &x));
    CK(clSetKernelArg(k, 1, sizeof f, &f));
    CK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, ev));
}

typedef struct worker {
    cl_command_queue q;
    cl_mem x;
} worker;

static void *thread_main(void *arg)
{
    worker *w = arg;
    cl_kernel k = kernel("scale");
    push_external(1003);
    for (int i = 0; i < 5; i++) enqueue_scale(w->q, k, w->x, 1.0f, NULL);
    CK(clFinish(w->q));
    pop_external();
    CK(clReleaseKernel(k));
    return NULL;
}

int main(void)
{
    cl_int e;
    pick_device();
    g_ctx = clCreateContext(NULL, 1, &g_dev, NULL, NULL, &e);
    CK(e);
    g_prog = clCreateProgramWithSource(g_ctx, 1, &k_src, NULL, &e);
    CK(e);
    CK(clBuildProgram(g_prog, 1, &g_dev, "", NULL, NULL));
    cl_kernel vadd = kernel("vadd"), scale = kernel("scale");
    const char *rp = getenv("OCL_WORKLOAD_REPORT");
    g_report = rp && *rp ? fopen(rp, "w") : NULL;

    cl_command_queue qa = clCreateCommandQueueWithProperties(g_ctx, g_dev, NULL, &e);
    CK(e);
    cl_command_queue qb = clCreateCommandQueue(g_ctx, g_dev, CL_QUEUE_PROFILING_ENABLE, &e);
    CK(e);
    cl_command_queue_properties pa = 99, pb = 99;
    CK(clGetCommandQueueInfo(qa, CL_QUEUE_PROPERTIES, sizeof pa, &pa, NULL));
    CK(clGetCommandQueueInfo(qb, CL_QUEUE_PROPERTIES, sizeof pb, &pb, NULL));
    size_t arr_size = 99;
    cl_int ae = clGetCommandQueueInfo(qa, CL_QUEUE_PROPERTIES_ARRAY, 0, NULL, &arr_size); /* OpenCL 3.0 */
    printf("queue A properties 0x%llx (array: status %d, %zu bytes), queue B properties 0x%llx\n",
           (unsigned long long)pa, ae, ae == CL_SUCCESS ? arr_size : 0, (unsigned long long)pb);

    cl_mem a = buffer(), b = buffer(), c = buffer(), d = buffer();
    float ha[N], hb[N], hc[N];
    for (int i = 0; i < N; i++) ha[i] = (float)i, hb[i] = 2.0f * (float)i;

    /* phase 1: queue A, no profiling asked */
    uint64_t t1 = now_ns();
    push_external(1001);
    CK(clEnqueueWriteBuffer(qa, a, CL_FALSE, 0, sizeof ha, ha, 0, NULL, NULL));
    CK(clEnqueueWriteBuffer(qa, b, CL_FALSE, 0, sizeof hb, hb, 0, NULL, NULL));
    float zero = 0.0f;
    CK(clEnqueueFillBuffer(qa, c, &zero, sizeof zero, 0, N * sizeof(float), 0, NULL, NULL));
    size_t global = N, local = 64;
    CK(clSetKernelArg(vadd, 0, sizeof a, &a));
    CK(clSetKernelArg(vadd, 1, sizeof b, &b));
    CK(clSetKernelArg(vadd, 2, sizeof c, &c));
    for (int i = 0; i < 8; i++) CK(clEnqueueNDRangeKernel(qa, vadd, 1, NULL, &global, &local, 0, NULL, NULL));
    CK(clEnqueueCopyBuffer(qa, c, d, 0, 0, N * sizeof(float), 0, NULL, NULL));
    cl_event own[4];
    for (int i = 0; i < 4; i++) enqueue_scale(qa, scale, d, 0.5f, &own[i]);
    CK(clWaitForEvents(4, own));
    int unavailable = 0;
    for (int i = 0; i < 4; i++) {
        cl_ulong s = 0;
        if (clGetEventProfilingInfo(own[i], CL_PROFILING_COMMAND_START, sizeof s, &s, NULL) ==
            CL_PROFILING_INFO_NOT_AVAILABLE)
            unavailable++;
        CK(clReleaseEvent(own[i]));
    }
    printf("queue A: profiling unavailable on %d of 4 events\n", unavailable);
    CK(clEnqueueReadBuffer(qa, d, CL_TRUE, 0, sizeof hc, hc, 0, NULL, NULL));
    float *m = clEnqueueMapBuffer(qa, d, CL_TRUE, CL_MAP_READ, 0, N * sizeof(float), 0, NULL, NULL, &e);
    CK(e);
    double sum = 0;
    for (int i = 0; i < N; i++) sum += m[i];
    CK(clEnqueueUnmapMemObject(qa, d, m, 0, NULL, NULL));
    CK(clFinish(qa));
    pop_external();
    uint64_t t1_done = now_ns();
    printf("phase 1: d[10] = %.1f, sum of d = %.1f\n", hc[10], sum);
    check(hc[10] == 30.0f / 16.0f, "d[10] == 30/16 after vadd and four halvings");

    /* phase 2: queue B, profiling asked, own events */
    uint64_t t2 = now_ns();
    push_external(1002);
    cl_event ev[4];
    for (int i = 0; i < 3; i++) CK(clEnqueueNDRangeKernel(qb, vadd, 1, NULL, &global, &local, 0, NULL, &ev[i]));
    CK(clEnqueueReadBuffer(qb, c, CL_FALSE, 0, sizeof hc, hc, 0, NULL, &ev[3]));
    cl_event dropped; /* released before it completes: the layer's callback must still come */
    CK(clEnqueueNDRangeKernel(qb, vadd, 1, NULL, &global, &local, 0, NULL, &dropped));
    CK(clReleaseEvent(dropped));
    CK(clWaitForEvents(4, ev));
    CK(clFinish(qb));
    pop_external();
    uint64_t t2_done = now_ns();
    int profiled = 0;
    if (g_report) fprintf(g_report, "{\"own_events\":[");
    for (int i = 0; i < 4; i++) {
        cl_ulong s = 0, en = 0;
        if (clGetEventProfilingInfo(ev[i], CL_PROFILING_COMMAND_START, sizeof s, &s, NULL) == CL_SUCCESS &&
            clGetEventProfilingInfo(ev[i], CL_PROFILING_COMMAND_END, sizeof en, &en, NULL) == CL_SUCCESS && en >= s)
            profiled++;
        if (g_report)
            fprintf(g_report, "%s{\"kind\":\"%s\",\"start\":%llu,\"end\":%llu}", i ? "," : "", i < 3 ? "vadd" : "read",
                    (unsigned long long)s, (unsigned long long)en);
        CK(clReleaseEvent(ev[i]));
    }
    if (g_report) fprintf(g_report, "],");
    printf("queue B: profiling available on %d of 4 events; c[10] = %.1f\n", profiled, hc[10]);

    /* phase 3: two threads */
    uint64_t t3 = now_ns();
    worker w[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        w[i].q = clCreateCommandQueueWithProperties(g_ctx, g_dev, NULL, &e);
        CK(e);
        w[i].x = i == 0 ? a : b;
        pthread_create(&th[i], NULL, thread_main, &w[i]);
    }
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    uint64_t t3_done = now_ns();
    for (int i = 0; i < 2; i++) CK(clReleaseCommandQueue(w[i].q));
    printf("phase 3: two threads, 5 kernels each\n");

    if (g_report) {
        fprintf(g_report,
                "\"phases\":[[%llu,%llu],[%llu,%llu],[%llu,%llu]],"
                "\"expect\":{\"vadd\":12,\"scale\":14,\"h2d\":3,\"d2h\":3,\"d2d\":1,\"fill\":1,\"alloc\":4,\"free\":4}}\n",
                (unsigned long long)t1, (unsigned long long)t1_done, (unsigned long long)t2, (unsigned long long)t2_done,
                (unsigned long long)t3, (unsigned long long)t3_done);
        fclose(g_report);
    }
    CK(clReleaseMemObject(a));
    CK(clReleaseMemObject(b));
    CK(clReleaseMemObject(c));
    CK(clReleaseMemObject(d));
    CK(clReleaseKernel(vadd));
    CK(clReleaseKernel(scale));
    CK(clReleaseProgram(g_prog));
    CK(clReleaseCommandQueue(qa));
    CK(clReleaseCommandQueue(qb));
    CK(clReleaseContext(g_ctx));
    return g_fail;
}
