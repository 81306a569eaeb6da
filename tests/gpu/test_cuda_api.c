/* test_cuda_api.c — the generated CUDA API rows (src/backend/cuda/cuda_api.c over the build's
 * cuda_api.def) without a GPU:
 *  - every runtime and driver callback id's name equals CUPTI's own (cuptiGetCallbackName, which
 *    needs no GPU) with the "_v<digits>" suffix cut, as the writer recorded before the rows were
 *    generated (CUPTI names no NVTX id: those need a name of their own);
 *  - the decoded arguments of cudaMemcpy, cudaLaunchKernel (dim3 by value), cudaLaunchKernelExC
 *    (the launch config behind a pointer, and a NULL one), cuLaunchKernel, nvtxRangePushA and
 *    nvtxDomainRangePushEx are the call's parameters, by name, type and value;
 *  - `test_cuda_api --dump FILE` writes one line per id (domain, id, name, known 1/0, why) for
 *    check_cuda_api.py, which compares it with the callback-id headers. */
#include <stdio.h>
#include <string.h>

#include "backend/cuda/cuda_api.h"

#include "cuda_api_args.h"

#include "../common/check.h" /* CHECK, g_failures */

static const struct {
    CUpti_CallbackDomain dom;
    const char *name;
    uint32_t size;
} k_domains[] = {
    {CUPTI_CB_DOMAIN_RUNTIME_API, "RUNTIME", CUPTI_RUNTIME_TRACE_CBID_SIZE},
    {CUPTI_CB_DOMAIN_DRIVER_API, "DRIVER", CUPTI_DRIVER_TRACE_CBID_SIZE},
    {CUPTI_CB_DOMAIN_NVTX, "NVTX", CUPTI_CBID_NVTX_SIZE},
};

static void cut_version(char *s)
{
    char *v = strrchr(s, '_');
    if (!v || v[1] != 'v' || v[2] < '0' || v[2] > '9') return;
    for (const char *p = v + 2; *p; p++)
        if (*p < '0' || *p > '9') return;
    *v = 0;
}

static void check_names(FILE *dump)
{
    for (size_t d = 0; d < sizeof k_domains / sizeof k_domains[0]; d++) {
        uint32_t n = 0, differ = 0;
        for (uint32_t id = 1; id < k_domains[d].size; id++) {
            const char *ours = op_cuda_api_name(k_domains[d].dom, id), *why = NULL;
            const char *cupti = NULL;
            char want[256] = "";
            if (cuptiGetCallbackName(k_domains[d].dom, id, &cupti) == CUPTI_SUCCESS && cupti &&
                *cupti) {
                snprintf(want, sizeof want, "%s", cupti);
                cut_version(want);
            }
            int known = op_cuda_api_args_known(k_domains[d].dom, id, &why);
            if (dump && ours)
                fprintf(dump, "%s %u %s %d %s\n", k_domains[d].name, id, ours, known,
                        known ? "-" : why);
            if (!want[0] && !ours) continue;
            /* NVTX: CUPTI names no NVTX id (cuptiGetCallbackName gives ""): ours must exist */
            if (!want[0] && k_domains[d].dom == CUPTI_CB_DOMAIN_NVTX) {
                n++;
                continue;
            }
            n++;
            if (!ours || strcmp(ours, want) != 0) {
                if (differ++ < 5)
                    CHECK(0, "%s id %u: generated name '%s', CUPTI's '%s'", k_domains[d].name, id,
                          ours ? ours : "(none)", want);
            }
        }
        CHECK(differ == 0, "%s: %u of %u names differ from cuptiGetCallbackName's",
              k_domains[d].name, differ, n);
        printf("%s: %u names%s\n", k_domains[d].name, n - differ,
               k_domains[d].dom == CUPTI_CB_DOMAIN_NVTX ? "" : ", all equal to CUPTI's");
    }
}

typedef struct want_arg {
    const char *name;
    omniprof_arg_type_t type;
    uint64_t u;
    const char *s;
} want_arg;

static void check_args(const char *what, CUpti_CallbackDomain dom, CUpti_CallbackId id,
                       const void *params, const want_arg *want, uint32_t nwant)
{
    omniprof_arg_t got[24];
    uint32_t n = op_cuda_api_decode(dom, id, params, got, 24);
    CHECK(n == nwant, "%s: %u arguments decoded, expected %u", what, n, nwant);
    for (uint32_t i = 0; i < n && i < nwant; i++) {
        CHECK(!strcmp(got[i].name, want[i].name), "%s: argument %u is '%s', expected '%s'", what, i,
              got[i].name, want[i].name);
        CHECK(got[i].type == want[i].type, "%s: %s has type %d, expected %d", what, want[i].name,
              (int)got[i].type, (int)want[i].type);
        if (want[i].type == OMNIPROF_ARG_TYPE_STRING)
            CHECK(got[i].value.str && !strcmp(got[i].value.str, want[i].s),
                  "%s: %s = '%s', expected '%s'", what, want[i].name,
                  got[i].value.str ? got[i].value.str : "(null)", want[i].s);
        else
            CHECK(got[i].value.u64 == want[i].u, "%s: %s = %llu, expected %llu", what, want[i].name,
                  (unsigned long long)got[i].value.u64, (unsigned long long)want[i].u);
    }
    /* a short array: never more than max */
    CHECK(op_cuda_api_decode(dom, id, params, got, 2) == (nwant < 2 ? nwant : 2),
          "%s: max not kept", what);
    if (!g_failures) printf("%s: %u arguments as declared\n", what, n);
}

#define P_ OMNIPROF_ARG_TYPE_POINTER
#define U_ OMNIPROF_ARG_TYPE_UINT
#define I_ OMNIPROF_ARG_TYPE_INT
#define S_ OMNIPROF_ARG_TYPE_STRING
#define PTR(x) ((uint64_t)(uintptr_t)(x))

int main(int argc, char **argv)
{
    FILE *dump = NULL;
    if (argc == 3 && !strcmp(argv[1], "--dump") && !(dump = fopen(argv[2], "w"))) {
        perror(argv[2]);
        return 1;
    }
    check_names(dump);
    if (dump) fclose(dump);

    static char dst[16], src[16];
    cudaMemcpy_v3020_params mc = {dst, src, 4096, cudaMemcpyHostToDevice};
    const want_arg w_mc[] = {{"dst", P_, PTR(dst), 0},
                             {"src", P_, PTR(src), 0},
                             {"count", U_, 4096, 0},
                             {"kind", I_, cudaMemcpyHostToDevice, 0}};
    check_args("cudaMemcpy", CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
               &mc, w_mc, 4);

    void *kargs[1] = {dst};
    cudaLaunchKernel_v7000_params lk = {src,   {4, 2, 1}, {128, 1, 1},
                                        kargs, 512,       (cudaStream_t)(uintptr_t)0x5000};
    const want_arg w_lk[] = {{"func", P_, PTR(src), 0}, {"gridDimX", U_, 4, 0},
                             {"gridDimY", U_, 2, 0},    {"gridDimZ", U_, 1, 0},
                             {"blockDimX", U_, 128, 0}, {"blockDimY", U_, 1, 0},
                             {"blockDimZ", U_, 1, 0},   {"args", P_, PTR(kargs), 0},
                             {"sharedMem", U_, 512, 0}, {"stream", P_, 0x5000, 0}};
    check_args("cudaLaunchKernel", CUPTI_CB_DOMAIN_RUNTIME_API,
               CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &lk, w_lk, 10);

    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDim = (dim3){8, 1, 1};
    cfg.blockDim = (dim3){64, 2, 1};
    cfg.dynamicSmemBytes = 1024;
    cudaLaunchKernelExC_v11060_params lx = {&cfg, src, kargs};
    omniprof_arg_t got[24];
    uint32_t n =
        op_cuda_api_decode(CUPTI_CB_DOMAIN_RUNTIME_API,
                           CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, &lx, got, 24);
    int grid = 0, block = 0, smem = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!strcmp(got[i].name, "gridDimX") && got[i].value.u64 == 8) grid = 1;
        if (!strcmp(got[i].name, "blockDimY") && got[i].value.u64 == 2) block = 1;
        if (!strcmp(got[i].name, "dynamicSmemBytes") && got[i].value.u64 == 1024) smem = 1;
    }
    CHECK(grid && block && smem,
          "cudaLaunchKernelExC: the config's grid/block/shared memory not decoded (%u args)", n);
    lx.config = NULL;
    n = op_cuda_api_decode(CUPTI_CB_DOMAIN_RUNTIME_API,
                           CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, &lx, got, 24);
    CHECK(n == 3,
          "cudaLaunchKernelExC with a NULL config: %u arguments, expected config, func, args", n);

    cuLaunchKernel_params cl = {(CUfunction)(uintptr_t)0x10,
                                3,
                                2,
                                1,
                                32,
                                4,
                                1,
                                256,
                                (CUstream)(uintptr_t)0x20,
                                (void **)kargs,
                                NULL};
    const want_arg w_cl[] = {{"f", P_, 0x10, 0},       {"gridDimX", U_, 3, 0},
                             {"gridDimY", U_, 2, 0},   {"gridDimZ", U_, 1, 0},
                             {"blockDimX", U_, 32, 0}, {"blockDimY", U_, 4, 0},
                             {"blockDimZ", U_, 1, 0},  {"sharedMemBytes", U_, 256, 0},
                             {"hStream", P_, 0x20, 0}, {"kernelParams", P_, PTR(kargs), 0},
                             {"extra", P_, 0, 0}};
    check_args("cuLaunchKernel", CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
               &cl, w_cl, 11);

    nvtxRangePushA_params np = {"step 1"};
    const want_arg w_np[] = {{"message", S_, 0, "step 1"}};
    check_args("nvtxRangePushA", CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangePushA, &np, w_np,
               1);

    nvtxEventAttributes_t attr;
    memset(&attr, 0, sizeof attr);
    nvtxDomainRangePushEx_params dp = {(nvtxDomainHandle_t)(uintptr_t)0x30, {&attr}};
    const want_arg w_dp[] = {{"domain", P_, 0x30, 0}, {"eventAttrib", P_, PTR(&attr), 0}};
    check_args("nvtxDomainRangePushEx", CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
               &dp, w_dp, 2);

    const char *why = NULL;
    CHECK(op_cuda_api_args_known(CUPTI_CB_DOMAIN_RUNTIME_API,
                                 CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, &why),
          "cudaDeviceSynchronize (no arguments) is not known: %s", why ? why : "");
    CHECK(op_cuda_api_decode(CUPTI_CB_DOMAIN_RUNTIME_API,
                             CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, &np, got,
                             24) == 0,
          "cudaDeviceSynchronize decodes arguments");
    CHECK(!op_cuda_api_args_known(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cu64MemAlloc,
                                  &why) &&
              why && strstr(why, "removed"),
          "cu64MemAlloc: %s", why ? why : "(no reason)");
    CHECK(op_cuda_api_name(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE) == NULL,
          "an id past the end");
    printf(g_failures ? "FAILED\n" : "PASS\n");
    return g_failures ? 1 : 0;
}
