// cuda_workloads.cu — the CUDA programs the GPU tests trace. One binary, one scenario per run
// (argv[1]); each prints one line "EXPECT <json>" with the exact records the scenario must
// produce (kernels by name with grid/block, copies by direction with bytes, memsets, allocations,
// NVTX ranges), which tests/gpu/validate.py checks against the trace.
//
// Scenarios: multistream graph copies memset alloc nvtx threads lazy many external driverapi windows forkchild
// (run under --selected-regions: tests/gpu/run.sh), and
// exitthread / sigterm (the process ends by exit() from another thread / by SIGTERM).
// GPU_TEST_INIT_SDK=1 calls omniprof_initialize() first (for OMNIPROF_INIT_AT_LOAD=false runs).
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

__global__ void k_empty() {}
__global__ void k_add(float *y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += 1.0f; }
__global__ void k_scale(float *y, int n, float a) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] *= a; }
__global__ void k_graph_a(float *y) { y[threadIdx.x] = 1.0f; }
__global__ void k_graph_b(float *y) { y[threadIdx.x] += 2.0f; }
__global__ void k_graph_c(float *y) { y[threadIdx.x] *= 3.0f; }
__global__ void k_lazy1(int *p) { p[0] = 1; }
__global__ void k_lazy2(int *p) { p[1] = 2; }
__global__ void k_lazy3(int *p) { p[2] = 3; }
__global__ void k_thread(float *y, int t) { y[t * 32 + threadIdx.x] += 1.0f; }

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #x, __FILE__, __LINE__, cudaGetErrorString(e_)); exit(2); } } while (0)

// Accumulates the EXPECT json.
static char g_exp[16384];
static size_t g_len;
static void ex(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void ex(const char *fmt, ...) {
    va_list ap; va_start(ap, fmt);
    g_len += (size_t)vsnprintf(g_exp + g_len, sizeof g_exp - g_len, fmt, ap);
    va_end(ap);
}

static void init(void) { CK(cudaSetDevice(0)); CK(cudaDeviceSynchronize()); }

static int multistream(void) {
    const int S = 4, K = 25, n = 1 << 16;
    float *y; CK(cudaMalloc(&y, n * sizeof(float)));
    cudaStream_t st[4];
    for (int s = 0; s < S; s++) CK(cudaStreamCreateWithFlags(&st[s], cudaStreamNonBlocking));
    for (int k = 0; k < K; k++)
        for (int s = 0; s < S; s++) k_add<<<dim3(s + 1, 2, 1), dim3(32 * (s + 1), 1, 1), 0, st[s]>>>(y, n);
    for (int s = 0; s < S; s++) k_scale<<<dim3(8, 1, 1), dim3(256, 1, 1), 0, st[s]>>>(y, n, 1.0f);
    CK(cudaDeviceSynchronize());
    for (int s = 0; s < S; s++) CK(cudaStreamDestroy(st[s]));
    CK(cudaFree(y));
    // k_add has 4 distinct shapes: the validator checks shapes per stream-shape as a multiset.
    ex("{\"kernels\":{\"k_add\":{\"count\":100,\"shapes\":[[[1,2,1],[32,1,1],25],[[2,2,1],[64,1,1],25],[[3,2,1],[96,1,1],25],[[4,2,1],[128,1,1],25]]},"
       "\"k_scale\":{\"count\":4,\"shapes\":[[[8,1,1],[256,1,1],4]]}},\"streams_min\":4}");
    return 0;
}

static int graph(void) {
    float *y; CK(cudaMalloc(&y, 256 * sizeof(float)));
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t g; cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    k_graph_a<<<1, 64, 0, s>>>(y); k_graph_b<<<1, 64, 0, s>>>(y); k_graph_c<<<1, 64, 0, s>>>(y);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    for (int i = 0; i < 5; i++) CK(cudaGraphLaunch(ge, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaGraphExecDestroy(ge)); CK(cudaGraphDestroy(g)); CK(cudaStreamDestroy(s)); CK(cudaFree(y));
    ex("{\"kernels\":{\"k_graph_a\":{\"count\":5,\"shapes\":[[[1,1,1],[64,1,1],5]]},\"k_graph_b\":{\"count\":5,\"shapes\":[[[1,1,1],[64,1,1],5]]},"
       "\"k_graph_c\":{\"count\":5,\"shapes\":[[[1,1,1],[64,1,1],5]]}},\"graph\":true,\"graph_launch_api\":5}");
    return 0;
}

static int copies(void) {
    const size_t B = 1 << 20;
    char *pg = (char *)malloc(B), *pg2 = (char *)malloc(B);
    memset(pg, 1, B);
    char *pin, *pin2; CK(cudaMallocHost(&pin, B)); CK(cudaMallocHost(&pin2, B));
    char *d1, *d2; CK(cudaMalloc(&d1, B)); CK(cudaMalloc(&d2, B));
    cudaStream_t s; CK(cudaStreamCreate(&s));
    CK(cudaMemcpy(d1, pg, B, cudaMemcpyHostToDevice));           // H2D pageable
    CK(cudaMemcpy(d1, pin, B / 2, cudaMemcpyHostToDevice));      // H2D pinned
    CK(cudaMemcpyAsync(d2, pin, B / 4, cudaMemcpyHostToDevice, s)); // H2D pinned async
    CK(cudaMemcpy(pg2, d1, B, cudaMemcpyDeviceToHost));          // D2H pageable
    CK(cudaMemcpyAsync(pin2, d1, B / 8, cudaMemcpyDeviceToHost, s)); // D2H pinned async
    CK(cudaMemcpy(d2, d1, B, cudaMemcpyDeviceToDevice));         // D2D
    CK(cudaMemcpy(pin2, pin, 4096, cudaMemcpyHostToHost));       // H2H pinned
    CK(cudaStreamSynchronize(s)); CK(cudaDeviceSynchronize());
    CK(cudaStreamDestroy(s)); CK(cudaFree(d1)); CK(cudaFree(d2)); CK(cudaFreeHost(pin)); CK(cudaFreeHost(pin2));
    free(pg); free(pg2);
    ex("{\"kernels\":{},\"copies\":{\"HOST_TO_DEVICE\":[3,%zu],\"DEVICE_TO_HOST\":[2,%zu],\"DEVICE_TO_DEVICE\":[1,%zu],\"HOST_TO_HOST\":[1,4096]},"
       "\"copy_kinds\":{\"PAGEABLE->DEVICE\":1,\"PINNED->DEVICE\":2,\"DEVICE->PAGEABLE\":1,\"DEVICE->PINNED\":1,\"DEVICE->DEVICE\":1}}",
       B + B / 2 + B / 4, B + B / 8, B);
    return 0;
}

static int memset_(void) {
    char *d; CK(cudaMalloc(&d, 1 << 20));
    cudaStream_t s; CK(cudaStreamCreate(&s));
    CK(cudaMemset(d, 0, 4096)); CK(cudaMemset(d, 1, 8192)); CK(cudaMemset(d, 2, 1 << 20));
    CK(cudaMemsetAsync(d, 3, 65536, s)); CK(cudaMemsetAsync(d, 4, 512, s));
    CK(cudaStreamSynchronize(s)); CK(cudaStreamDestroy(s)); CK(cudaFree(d));
    ex("{\"kernels\":{},\"memsets\":[5,%d]}", 4096 + 8192 + (1 << 20) + 65536 + 512);
    return 0;
}

static int alloc(void) {
    void *p[3]; size_t sz[3] = {1 << 20, 3 << 20, 12345 * 8};
    for (int i = 0; i < 3; i++) CK(cudaMalloc(&p[i], sz[i]));
    for (int i = 0; i < 3; i++) CK(cudaFree(p[i]));
    ex("{\"kernels\":{},\"allocs\":{\"ALLOCATE\":[3,%zu],\"FREE\":[3,%zu]}}", sz[0] + sz[1] + sz[2], sz[0] + sz[1] + sz[2]);
    return 0;
}

static int nvtx(void) {
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "nvtx-main");
    nvtxRangePushA("outer");
    for (int i = 0; i < 3; i++) {
        nvtxRangePushA("inner");
        k_empty<<<1, 32>>>(); k_empty<<<1, 32>>>();
        nvtxRangePop();
    }
    nvtxRangePop();
    nvtxRangeId_t id = nvtxRangeStartA("proc");
    k_empty<<<1, 32>>>();
    nvtxRangeEnd(id);
    nvtxMarkA("mark1");
    /* a domain, a registered string as the message, a wide message (omniprof's own NVTX
     * injection resolves registered strings and keeps the ASCII of wide ones) */
    nvtxDomainHandle_t dom = nvtxDomainCreateA("omniprof-test");
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = nvtxDomainRegisterStringA(dom, "registered");
    nvtxDomainRangePushEx(dom, &a);
    k_empty<<<1, 32>>>();
    nvtxDomainRangePop(dom);
    nvtxRangePushW(L"wide");
    nvtxRangePop();
    CK(cudaDeviceSynchronize());
    ex("{\"kernels\":{\"k_empty\":{\"count\":8,\"shapes\":[[[1,1,1],[32,1,1],8]]}},"
       "\"ranges\":{\"outer\":1,\"inner\":3,\"registered\":1,\"wide\":1},\"process_ranges\":{\"proc\":1},"
       "\"marks\":{\"mark1\":1},\"enclosed\":{\"inner\":6,\"outer\":6,\"proc\":1,\"registered\":1}}");
    return 0;
}

static float *g_ty;
static void *thread_main(void *arg) {
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < 50; i++) k_thread<<<1, 32>>>(g_ty, t);
    cudaStreamSynchronize(0);
    return NULL;
}
static int threads(void) {
    const int T = 8;
    CK(cudaMalloc(&g_ty, T * 32 * sizeof(float)));
    pthread_t th[8];
    for (int t = 0; t < T; t++) pthread_create(&th[t], NULL, thread_main, (void *)(intptr_t)t);
    for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
    CK(cudaDeviceSynchronize()); CK(cudaFree(g_ty));
    ex("{\"kernels\":{\"k_thread\":{\"count\":400,\"shapes\":[[[1,1,1],[32,1,1],400]]}},\"launch_threads\":8}");
    return 0;
}

static int lazy(void) {
    int *p; CK(cudaMalloc(&p, 64));
    k_lazy1<<<1, 1>>>(p); k_lazy2<<<1, 1>>>(p); k_lazy3<<<1, 1>>>(p);
    CK(cudaDeviceSynchronize()); CK(cudaFree(p));
    const char *mode = getenv("CUDA_MODULE_LOADING");
    ex("{\"kernels\":{\"k_lazy1\":{\"count\":1,\"shapes\":[[[1,1,1],[1,1,1],1]]},\"k_lazy2\":{\"count\":1,\"shapes\":[[[1,1,1],[1,1,1],1]]},"
       "\"k_lazy3\":{\"count\":1,\"shapes\":[[[1,1,1],[1,1,1],1]]}},\"symbols\":[\"k_lazy1\",\"k_lazy2\",\"k_lazy3\"],\"module_loading\":\"%s\"}",
       mode ? mode : "default");
    return 0;
}

static int many(void) {
    const int N = 100000;
    for (int i = 0; i < N; i++) k_empty<<<1, 32>>>();
    CK(cudaDeviceSynchronize());
    ex("{\"kernels\":{\"k_empty\":{\"count\":%d,\"shapes\":[[[1,1,1],[32,1,1],%d]]}}}", N, N);
    return 0;
}

// The driver API called directly (as Triton or JAX do: dlopen libcuda, cuLaunchKernel): the
// kernel records must resolve to the cuLaunchKernel calls themselves.
typedef int (*culaunch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                          void **, void **);
static int driverapi(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    culaunch_t launch = h ? (culaunch_t)dlsym(h, "cuLaunchKernel") : NULL;
    cudaFunction_t f;
    CK(cudaGetFuncBySymbol(&f, (const void *)k_empty));
    if (!launch) { fprintf(stderr, "no cuLaunchKernel\n"); return 2; }
    for (int i = 0; i < 10; i++) {
        int r = launch((void *)f, 2, 1, 1, 64, 1, 1, 0, NULL, NULL, NULL);
        if (r != 0) { fprintf(stderr, "cuLaunchKernel -> %d\n", r); return 2; }
    }
    CK(cudaDeviceSynchronize());
    ex("{\"kernels\":{\"k_empty\":{\"count\":10,\"shapes\":[[[2,1,1],[64,1,1],10]]}},\"launch_api\":\"cuLaunchKernel\"}");
    return 0;
}

// External correlation: the test tool exports its context handle; push 1000+i around launch i.
typedef int (*push_t)(uint64_t, uint64_t, uint64_t);
typedef int (*pop_t)(uint64_t, uint64_t, uint64_t *);
typedef uint64_t (*ctx_t)(void);
static int external(void) {
    ctx_t getctx = (ctx_t)dlsym(RTLD_DEFAULT, "gpu_test_tool_context");
    push_t push = (push_t)dlsym(RTLD_DEFAULT, "omniprof_push_external_correlation_id");
    pop_t pop = (pop_t)dlsym(RTLD_DEFAULT, "omniprof_pop_external_correlation_id");
    uint64_t tid = (uint64_t)syscall(SYS_gettid);
    int have = getctx && push && pop;
    for (int i = 0; i < 10; i++) {
        if (have) push(getctx(), tid, 1000 + i);
        k_empty<<<1, 32>>>();
        uint64_t v;
        if (have) pop(getctx(), tid, &v);
    }
    CK(cudaDeviceSynchronize());
    ex("{\"kernels\":{\"k_empty\":{\"count\":10,\"shapes\":[[[1,1,1],[32,1,1],10]]}},\"external\":%s}",
       have ? "[1000,1001,1002,1003,1004,1005,1006,1007,1008,1009]" : "null");
    return 0;
}

// --selected-regions: only the kernels between cudaProfilerStart and cudaProfilerStop (k_add), and
// between the driver's cuProfilerStart and cuProfilerStop (k_scale), are recorded; k_empty, launched
// outside, is not (nor its launching call: CUPTI is off between the windows).
typedef int (*cu_profiler_t)(void);
static int windows(void) {
    const int n = 1 << 12;
    float *y; CK(cudaMalloc(&y, n * sizeof(float)));
    void *drv = dlopen("libcuda.so.1", RTLD_LAZY);
    cu_profiler_t cu_start = drv ? (cu_profiler_t)dlsym(drv, "cuProfilerStart") : NULL;
    cu_profiler_t cu_stop = drv ? (cu_profiler_t)dlsym(drv, "cuProfilerStop") : NULL;
    if (!cu_start || !cu_stop) { fprintf(stderr, "cuProfilerStart/Stop not found in libcuda.so.1\n"); return 1; }
    for (int w = 0; w < 3; w++) {
        for (int i = 0; i < 20; i++) k_empty<<<1, 32>>>();
        CK(cudaDeviceSynchronize());
        CK(cudaProfilerStart());
        for (int i = 0; i < 10; i++) k_add<<<2, 64>>>(y, n);
        CK(cudaDeviceSynchronize());
        CK(cudaProfilerStop());
    }
    for (int i = 0; i < 20; i++) k_empty<<<1, 32>>>();
    CK(cudaDeviceSynchronize());
    if (cu_start() != 0) { fprintf(stderr, "cuProfilerStart failed\n"); return 1; }
    for (int i = 0; i < 5; i++) k_scale<<<4, 32>>>(y, n, 1.0f);
    CK(cudaDeviceSynchronize());
    if (cu_stop() != 0) { fprintf(stderr, "cuProfilerStop failed\n"); return 1; }
    for (int i = 0; i < 20; i++) k_empty<<<1, 32>>>();
    CK(cudaDeviceSynchronize());
    CK(cudaFree(y));
    ex("{\"kernels\":{\"k_add\":{\"count\":30,\"shapes\":[[[2,1,1],[64,1,1],30]]},"
       "\"k_scale\":{\"count\":5,\"shapes\":[[[4,1,1],[32,1,1],5]]}}}");
    return 0;
}

// exit() from another thread / SIGTERM after the work: nothing may be lost.
static void *exit_from_thread(void *arg) { (void)arg; exit(0); return NULL; }
static int ending(const char *how) {
    for (int i = 0; i < 50; i++) k_empty<<<1, 32>>>();
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < 20; i++) k_add<<<4, 64>>>(NULL, 0); // n == 0: writes nothing; left running at exit
    printf("EXPECT {\"kernels\":{\"k_empty\":{\"count\":50,\"shapes\":[[[1,1,1],[32,1,1],50]]},"
           "\"k_add\":{\"count\":20,\"shapes\":[[[4,1,1],[64,1,1],20]]}}}\n");
    fflush(stdout);
    if (!strcmp(how, "exitthread")) {
        pthread_t t;
        pthread_create(&t, NULL, exit_from_thread, NULL);
        pthread_join(t, NULL);
    }
    raise(SIGTERM);
    return 0;
}

// The parent never touches CUDA; a forked child does (CUDA used only after the fork, in the
// child: NVIDIA's rule is no CUDA in a child forked after the parent initialized CUDA). A profiler
// that initializes CUDA in the parent (cuInit at its own start) breaks this program.
static int forkchild(void) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); return 1; }
    if (pid == 0) {
        const int n = 1 << 12;
        float *y = NULL;
        cudaError_t e = cudaSetDevice(0);
        if (e == cudaSuccess) e = cudaMalloc(&y, n * sizeof(float));
        if (e == cudaSuccess) {
            for (int i = 0; i < 10; i++) k_add<<<2, 64>>>(y, n);
            e = cudaDeviceSynchronize();
        }
        if (e == cudaSuccess) e = cudaFree(y);
        printf("child: %s\n", e == cudaSuccess ? "10 kernels ran" : cudaGetErrorString(e));
        fflush(stdout);
        _exit(e == cudaSuccess ? 0 : 1);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) { perror("waitpid"); return 1; }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s multistream|graph|copies|memset|alloc|nvtx|threads|lazy|many|external|driverapi|windows|exitthread|sigterm|forkchild\n", argv[0]); return 64; }
    // "held" test: the SDK initializes only now (OMNIPROF_INIT_AT_LOAD=false), after the
    // program's own CUPTI subscriber (libomniprof-cupti-holder.so's constructor) took CUPTI.
    if (getenv("GPU_TEST_INIT_SDK")) {
        typedef int (*init_t)(void);
        init_t f = (init_t)dlsym(RTLD_DEFAULT, "omniprof_initialize");
        if (f) f();
    }
    if (!strcmp(argv[1], "forkchild")) return forkchild(); // before init(): the parent stays without CUDA
    init();
    int rc;
    const char *s = argv[1];
    if (!strcmp(s, "multistream")) rc = multistream();
    else if (!strcmp(s, "graph")) rc = graph();
    else if (!strcmp(s, "copies")) rc = copies();
    else if (!strcmp(s, "memset")) rc = memset_();
    else if (!strcmp(s, "alloc")) rc = alloc();
    else if (!strcmp(s, "nvtx")) rc = nvtx();
    else if (!strcmp(s, "threads")) rc = threads();
    else if (!strcmp(s, "lazy")) rc = lazy();
    else if (!strcmp(s, "many")) rc = many();
    else if (!strcmp(s, "external")) rc = external();
    else if (!strcmp(s, "driverapi")) rc = driverapi();
    else if (!strcmp(s, "windows")) rc = windows();
    else if (!strcmp(s, "exitthread") || !strcmp(s, "sigterm")) return ending(s);
    else { fprintf(stderr, "unknown scenario '%s'\n", s); return 64; }
    printf("EXPECT %s\n", g_exp);
    fflush(stdout);
    return rc;
}
