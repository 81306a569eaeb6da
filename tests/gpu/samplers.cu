// samplers.cu — programs of known character for the GPU samplers (tests/gpu/check_samplers.py):
//   phases   memory-bound kernels (k_stream: 256 MiB through DRAM per launch), an idle gap, then
//            compute-bound kernels (k_fma: register FMA chains, no DRAM traffic): PM sampling of
//            dram__bytes_read.sum is high during k_stream and near zero during k_fma
//   count    k_count: a loop of exactly TRIPS iterations (runtime trip count, not unrolled) in
//            BLOCKS x THREADS threads, launched LAUNCHES times: every SASS instruction of the
//            loop body executes BLOCKS*THREADS/32*TRIPS*LAUNCHES times per warp (SASS metrics)
//   managed  a managed buffer of PAGES 64 KiB pages written by the CPU, then read and written by
//            a GPU kernel (host->device migrations of every byte), then read by the CPU
//            (device->host migrations and CPU page faults)
// Built with -lineinfo (source lines). Prints one EXPECT line (JSON) with what the check needs.
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

__global__ void k_stream(const float *x, float *y, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = 2.0f * x[i] + y[i];
}

__global__ void k_fma(float *out, int iters) {
    float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.5f, d = 0.25f;
    for (int i = 0; i < iters; i++) {
        a = fmaf(a, b, c);
        d = fmaf(d, b, a);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a + d;
}

__global__ void k_count(float *out, int trips) {
    float acc = threadIdx.x;
#pragma unroll 1
    for (int i = 0; i < trips; i++) acc = fmaf(acc, 1.00001f, 0.5f); // SAMPLERS-LOOP-LINE
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

__global__ void k_touch(char *p, size_t bytes, size_t page) {
    size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * page;
    if (i < bytes) p[i] += 1;
}

static int phases(void) {
    const size_t n = 64u << 20;
    float *x, *y, *o;
    CK(cudaMalloc(&x, n * 4));
    CK(cudaMalloc(&y, n * 4));
    CK(cudaMalloc(&o, 1 << 24));
    CK(cudaMemset(x, 0, n * 4));
    CK(cudaMemset(y, 0, n * 4));
    CK(cudaDeviceSynchronize());
    for (int r = 0; r < 60; r++) k_stream<<<1024, 256>>>(x, y, n); // ~25 ms of DRAM traffic on an H100
    CK(cudaDeviceSynchronize());
    usleep(20000);
    for (int r = 0; r < 20; r++) k_fma<<<528, 256>>>(o, 200000); // compute bound, ~same duration
    CK(cudaDeviceSynchronize());
    printf("EXPECT {\"mode\":\"phases\",\"memory\":\"k_stream\",\"compute\":\"k_fma\",\"stream_launches\":60,"
           "\"fma_launches\":20}\n");
    cudaFree(x);
    cudaFree(y);
    cudaFree(o);
    return 0;
}

static int count(void) {
    const int blocks = 132, threads = 256, trips = 1000, launches = 3;
    float *o;
    CK(cudaMalloc(&o, blocks * threads * 4));
    for (int r = 0; r < launches; r++) k_count<<<blocks, threads>>>(o, trips);
    CK(cudaDeviceSynchronize());
    printf("EXPECT {\"mode\":\"count\",\"kernel\":\"k_count\",\"warps\":%d,\"trips\":%d,\"launches\":%d,"
           "\"per_instruction\":%lld}\n", blocks * threads / 32, trips, launches,
           (long long)blocks * threads / 32 * trips * launches);
    cudaFree(o);
    return 0;
}

static int managed(void) {
    const size_t page = 64u << 10, pages = 1024, bytes = page * pages; // 64 MiB
    char *p;
    CK(cudaMallocManaged(&p, bytes));
    memset(p, 1, bytes); // resident on the host
    k_touch<<<(unsigned)((pages + 255) / 256), 256>>>(p, bytes, page);
    CK(cudaDeviceSynchronize());
    // a whole page per thread would migrate the same bytes; one byte per 64 KiB lets the driver
    // migrate the rest of each page on its own: every byte still goes host -> device once
    k_touch<<<(unsigned)((bytes / 4096 + 255) / 256), 256>>>(p, bytes, 4096);
    CK(cudaDeviceSynchronize());
    long sum = 0;
    for (size_t i = 0; i < bytes; i += 4096) sum += p[i]; // back on the host
    printf("EXPECT {\"mode\":\"managed\",\"bytes\":%zu,\"pages\":%zu,\"page\":%zu,\"sum\":%ld}\n", bytes, pages, page,
           sum);
    cudaFree(p);
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "phases";
    if (!strcmp(mode, "phases")) return phases();
    if (!strcmp(mode, "count")) return count();
    if (!strcmp(mode, "managed")) return managed();
    fprintf(stderr, "usage: %s phases|count|managed\n", argv[0]);
    return 2;
}
