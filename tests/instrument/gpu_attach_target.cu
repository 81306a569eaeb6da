// gpu_attach_target.cu — a CUDA program that is already running when `omniprof attach` comes:
// it launches one small kernel every 2 ms for SECONDS seconds, prints "pid P" at start and
// "done N kernels" at the end, exits 7 (tests/instrument/gpu_tests.sh).
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <unistd.h>

__global__ void attach_probe_kernel(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * 1.0001f + 1.0f;
}

static double now()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 10;
    const int n = 1 << 16;
    float *x = nullptr;
    if (cudaMalloc(&x, n * sizeof(float)) != cudaSuccess) {
        fprintf(stderr, "no GPU\n");
        return 77;
    }
    printf("pid %d\n", (int)getpid());
    fflush(stdout);
    long kernels = 0;
    double t0 = now();
    while (now() - t0 < secs) {
        attach_probe_kernel<<<(n + 255) / 256, 256>>>(x, n);
        cudaDeviceSynchronize();
        kernels++;
        usleep(2000);
    }
    cudaFree(x);
    printf("done %ld kernels\n", kernels);
    return 7;
}
