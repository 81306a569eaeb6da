/* bench_enqueue.c — host cost of one clEnqueueNDRangeKernel, the figure bench/opencl/run_bench.py
 * compares with and without omniprof's OpenCL layer. Enqueues an empty kernel N times (no event)
 * on a queue that did not ask for profiling, timing only the enqueue calls (the queue is drained
 * with clFinish every BATCH calls, outside the timed part), and prints
 *     enqueue_ns=<mean ns per call> best_batch_ns=<ns per call in the fastest batch> calls=<N>
 * The fastest batch is the figure least disturbed by other work on the machine (the driver's
 * own threads run the kernels on the same cores).
 * usage: bench_opencl_enqueue [N]   (default 20000). Exit 77 without an OpenCL device. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BATCH 500

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define CK(x)                                                                                       \
    do {                                                                                            \
        cl_int e_ = (x);                                                                            \
        if (e_ != CL_SUCCESS) {                                                                     \
            fprintf(stderr, "bench_opencl_enqueue: %s: %d\n", #x, e_);                              \
            return 1;                                                                               \
        }                                                                                           \
    } while (0)

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000;
    const char *src = "__kernel void empty(__global int *x) { }\n";
    cl_platform_id plat;
    cl_device_id dev;
    cl_int e;
    if (clGetPlatformIDs(1, &plat, NULL) != CL_SUCCESS || clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) {
        printf("SKIP: no OpenCL device\n");
        return 77;
    }
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    CK(e);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &e);
    CK(e);
    CK(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
    cl_kernel k = clCreateKernel(prog, "empty", &e);
    CK(e);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &e);
    CK(e);
    CK(clSetKernelArg(k, 0, sizeof buf, &buf));
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &e);
    CK(e);
    size_t global = 1;
    for (int i = 0; i < BATCH; i++) CK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
    CK(clFinish(q));
    uint64_t spent = 0;
    double best = 1e18;
    for (long done = 0; done < n;) {
        long m = n - done < BATCH ? n - done : BATCH;
        uint64_t t0 = now_ns();
        for (long i = 0; i < m; i++) CK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
        uint64_t dt = now_ns() - t0;
        spent += dt;
        if (m == BATCH && (double)dt / (double)m < best) best = (double)dt / (double)m;
        CK(clFinish(q));
        done += m;
    }
    printf("enqueue_ns=%.1f best_batch_ns=%.1f calls=%ld\n", (double)spent / (double)n, best, n);
    clReleaseCommandQueue(q);
    clReleaseMemObject(buf);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseContext(ctx);
    return 0;
}
