/* process_sampler.c — one background thread that records process and machine metrics at a
 * fixed interval as PROCESS_SAMPLE records (one record per metric and time; the database
 * writer turns each metric_name into a counter track).
 *
 *   operation PROCESS   rss_bytes, peak_rss_bytes, virtual_memory_bytes (/proc/self/statm,
 *                       getrusage), user_cpu_time_ns, system_cpu_time_ns, context_switches
 *                       (voluntary + involuntary), page_faults (minor + major)
 *   operation CPU_FREQ  cpu_freq_mhz.<core> per core in OMNIPROF_SAMPLING_CPUS (cpufreq sysfs,
 *                       else /proc/cpuinfo "cpu MHz"); device_index = core
 *   operation GPU       gpu<i>.utilization_pct, .memory_used_bytes, .power_w, .temperature_c,
 *                       .sm_clock_mhz through NVML, dlopen("libnvidia-ml.so.1") when present
 *                       (absent here: the GPU part turns itself off with one info line)
 *
 * The thread starts with every signal blocked (op_sdk_create_thread) and is marked internal
 * (never sampled, sequent value offset). It waits on a CLOCK_MONOTONIC condition variable until absolute
 * tick times, so the interval does not drift and a stop wakes it at once, honours OMNIPROF_PROCESS_SAMPLING_DELAY/DURATION and the time
 * windows, and stops when the backend finalizes; finalize wakes it and waits until it left its
 * loop, at most 2 s, never joining. Metric names are static strings or interned once. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"
#include "common/alloc.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/settings.h"
#include "sdk/backend.h"

/* ---- NVML (types kept opaque; only the calls we need) --------------------------------- */
typedef void *nvmlDevice_t;
typedef struct {
    unsigned int gpu, memory;
} nvml_utilization_t;
typedef struct {
    unsigned long long total, free, used;
} nvml_memory_t;
/* nvmlMemory_v2_t: `used` excludes the driver's reserved memory, as nvidia-smi's memory.used
 * (the v1 call counts it: ~0.5 GB more on an H100, seen against nvidia-smi in tests/gpu/run.sh) */
typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvml_memory_v2_t;
#define NVML_MEMORY_V2_VERSION ((unsigned int)(sizeof(nvml_memory_v2_t) | (2u << 24)))
typedef int (*nvml_mem2_t)(nvmlDevice_t, nvml_memory_v2_t *);
typedef int (*nvml_init_t)(void);
typedef int (*nvml_count_t)(unsigned int *);
typedef int (*nvml_handle_t)(unsigned int, nvmlDevice_t *);
typedef int (*nvml_util_t)(nvmlDevice_t, nvml_utilization_t *);
typedef int (*nvml_mem_t)(nvmlDevice_t, nvml_memory_t *);
typedef int (*nvml_uint_t)(nvmlDevice_t, unsigned int *);
typedef int (*nvml_temp_t)(nvmlDevice_t, int, unsigned int *);
typedef int (*nvml_clock_t)(nvmlDevice_t, int, unsigned int *);

typedef struct gpu_metrics {
    nvmlDevice_t dev;
    unsigned int index;
    const char *util, *mem, *power, *temp, *clock;
} gpu_metrics;

static struct {
    void *lib;
    nvml_util_t util;
    nvml_mem_t mem;
    nvml_mem2_t mem2;
    nvml_uint_t power;
    nvml_temp_t temp;
    nvml_clock_t clock;
    gpu_metrics *gpus;
    unsigned int n;
} g_nvml;

typedef struct cpu_freq_src {
    int core;
    const char *name;
} cpu_freq_src;

static cpu_freq_src *g_cores;
static int g_n_cores;
static pthread_t g_thread;
static bool g_running;
static _Atomic int g_stop;
static _Atomic int g_done; /* the thread left its loop */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv;
static bool g_cv_ready;

static void nvml_setup(void)
{
    const char *sel = op_setting_str(OP_SET_SAMPLING_GPUS);
    if (sel && !strcmp(sel, "none")) return;
    g_nvml.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!g_nvml.lib) {
        op_info("cpu: NVML (libnvidia-ml.so.1) not found; no GPU metrics in process samples");
        return;
    }
    nvml_init_t init = (nvml_init_t)dlsym(g_nvml.lib, "nvmlInit_v2");
    nvml_count_t count = (nvml_count_t)dlsym(g_nvml.lib, "nvmlDeviceGetCount_v2");
    nvml_handle_t handle = (nvml_handle_t)dlsym(g_nvml.lib, "nvmlDeviceGetHandleByIndex_v2");
    g_nvml.util = (nvml_util_t)dlsym(g_nvml.lib, "nvmlDeviceGetUtilizationRates");
    g_nvml.mem = (nvml_mem_t)dlsym(g_nvml.lib, "nvmlDeviceGetMemoryInfo");
    g_nvml.mem2 = (nvml_mem2_t)dlsym(g_nvml.lib, "nvmlDeviceGetMemoryInfo_v2");
    g_nvml.power = (nvml_uint_t)dlsym(g_nvml.lib, "nvmlDeviceGetPowerUsage");
    g_nvml.temp = (nvml_temp_t)dlsym(g_nvml.lib, "nvmlDeviceGetTemperature");
    g_nvml.clock = (nvml_clock_t)dlsym(g_nvml.lib, "nvmlDeviceGetClockInfo");
    unsigned int n = 0;
    if (!init || !count || !handle || init() != 0 || count(&n) != 0 || n == 0) {
        op_info("cpu: NVML present but no GPU could be queried; no GPU metrics");
        n = 0;
    }
    g_nvml.gpus = n ? op_calloc(n, sizeof *g_nvml.gpus) : NULL;
    for (unsigned int i = 0; i < n && g_nvml.gpus; i++) {
        if (!op_cpu_id_in_list(sel, i)) continue;
        gpu_metrics *g = &g_nvml.gpus[g_nvml.n];
        if (handle(i, &g->dev) != 0) continue;
        char buf[64];
        g->index = i;
        snprintf(buf, sizeof buf, "gpu%u.utilization_pct", i);
        g->util = op_sdk_intern(buf);
        snprintf(buf, sizeof buf, "gpu%u.memory_used_bytes", i);
        g->mem = op_sdk_intern(buf);
        snprintf(buf, sizeof buf, "gpu%u.power_w", i);
        g->power = op_sdk_intern(buf);
        snprintf(buf, sizeof buf, "gpu%u.temperature_c", i);
        g->temp = op_sdk_intern(buf);
        snprintf(buf, sizeof buf, "gpu%u.sm_clock_mhz", i);
        g->clock = op_sdk_intern(buf);
        g_nvml.n++;
    }
}

static void cores_setup(void)
{
    const char *sel = op_setting_str(OP_SET_SAMPLING_CPUS);
    if (sel && !strcmp(sel, "none")) return;
    long n = sysconf(_SC_NPROCESSORS_CONF);
    if (n <= 0) return;
    g_cores = op_calloc((size_t)n, sizeof *g_cores);
    if (!g_cores) return;
    for (long c = 0; c < n; c++) {
        if (!op_cpu_id_in_list(sel, (uint64_t)c)) continue;
        char buf[48];
        snprintf(buf, sizeof buf, "cpu_freq_mhz.%ld", c);
        g_cores[g_n_cores].core = (int)c;
        g_cores[g_n_cores].name = op_sdk_intern(buf);
        g_n_cores++;
    }
}

static void emit(int op, uint64_t ts, const char *name, const char *units, double value, uint32_t dev)
{
    omniprof_process_sample_record_t r;
    OP_SDK_RECORD_INIT(r, OMNIPROF_BUFFER_TRACING_PROCESS_SAMPLE, op);
    r.timestamp = ts;
    r.metric_name = name;
    r.units = units;
    r.value = value;
    r.device_index = dev;
    op_sdk_emit(OMNIPROF_BUFFER_TRACING_PROCESS_SAMPLE, op, &r, NULL);
}

/* Per-core MHz: sysfs cpufreq when the kernel exposes it, else one pass over /proc/cpuinfo. */
static void sample_freq(uint64_t ts)
{
    if (!g_n_cores || !op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_PROCESS_SAMPLE, OMNIPROF_PROCESS_SAMPLE_CPU_FREQ))
        return;
    double *mhz = op_calloc((size_t)g_cores[g_n_cores - 1].core + 1, sizeof *mhz);
    if (!mhz) return;
    bool have_sysfs = false;
    for (int i = 0; i < g_n_cores; i++) {
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq", g_cores[i].core);
        FILE *f = fopen(path, "re");
        if (!f) continue;
        unsigned long khz;
        if (fscanf(f, "%lu", &khz) == 1) {
            mhz[g_cores[i].core] = (double)khz / 1000.0;
            have_sysfs = true;
        }
        fclose(f);
    }
    if (!have_sysfs) {
        FILE *f = fopen("/proc/cpuinfo", "re");
        if (f) {
            char line[256];
            int core = -1;
            while (fgets(line, sizeof line, f)) {
                if (!strncmp(line, "processor", 9)) {
                    const char *c = strchr(line, ':');
                    core = c ? atoi(c + 1) : -1;
                } else if (!strncmp(line, "cpu MHz", 7) && core >= 0 && core <= g_cores[g_n_cores - 1].core) {
                    const char *c = strchr(line, ':');
                    if (c) mhz[core] = atof(c + 1);
                }
            }
            fclose(f);
        }
    }
    for (int i = 0; i < g_n_cores; i++)
        emit(OMNIPROF_PROCESS_SAMPLE_CPU_FREQ, ts, g_cores[i].name, "MHz", mhz[g_cores[i].core], (uint32_t)g_cores[i].core);
    op_free(mhz);
}

static void sample_process(uint64_t ts)
{
    if (!op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_PROCESS_SAMPLE, OMNIPROF_PROCESS_SAMPLE_PROCESS)) return;
    long page = sysconf(_SC_PAGESIZE);
    unsigned long vm = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "re");
    if (f) {
        if (fscanf(f, "%lu %lu", &vm, &rss) != 2) vm = rss = 0;
        fclose(f);
    }
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    getrusage(RUSAGE_SELF, &ru);
    const int op = OMNIPROF_PROCESS_SAMPLE_PROCESS;
    emit(op, ts, "rss_bytes", "bytes", (double)rss * (double)page, 0);
    emit(op, ts, "peak_rss_bytes", "bytes", (double)ru.ru_maxrss * 1024.0, 0);
    emit(op, ts, "virtual_memory_bytes", "bytes", (double)vm * (double)page, 0);
    emit(op, ts, "user_cpu_time_ns", "ns", (double)ru.ru_utime.tv_sec * 1e9 + (double)ru.ru_utime.tv_usec * 1e3, 0);
    emit(op, ts, "system_cpu_time_ns", "ns", (double)ru.ru_stime.tv_sec * 1e9 + (double)ru.ru_stime.tv_usec * 1e3, 0);
    emit(op, ts, "context_switches", "count", (double)(ru.ru_nvcsw + ru.ru_nivcsw), 0);
    emit(op, ts, "page_faults", "count", (double)(ru.ru_minflt + ru.ru_majflt), 0);
}

static void sample_gpus(uint64_t ts)
{
    if (!g_nvml.n || !op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_PROCESS_SAMPLE, OMNIPROF_PROCESS_SAMPLE_GPU))
        return;
    const int op = OMNIPROF_PROCESS_SAMPLE_GPU;
    for (unsigned int i = 0; i < g_nvml.n; i++) {
        gpu_metrics *g = &g_nvml.gpus[i];
        nvml_utilization_t u;
        nvml_memory_t m;
        unsigned int v;
        if (g_nvml.util && g_nvml.util(g->dev, &u) == 0) emit(op, ts, g->util, "%", u.gpu, g->index);
        nvml_memory_v2_t m2 = {.version = NVML_MEMORY_V2_VERSION};
        if (g_nvml.mem2 && g_nvml.mem2(g->dev, &m2) == 0) emit(op, ts, g->mem, "bytes", (double)m2.used, g->index);
        else if (g_nvml.mem && g_nvml.mem(g->dev, &m) == 0) emit(op, ts, g->mem, "bytes", (double)m.used, g->index);
        if (g_nvml.power && g_nvml.power(g->dev, &v) == 0) emit(op, ts, g->power, "W", v / 1000.0, g->index);
        if (g_nvml.temp && g_nvml.temp(g->dev, 0 /* NVML_TEMPERATURE_GPU */, &v) == 0)
            emit(op, ts, g->temp, "C", v, g->index);
        if (g_nvml.clock && g_nvml.clock(g->dev, 1 /* NVML_CLOCK_SM */, &v) == 0) emit(op, ts, g->clock, "MHz", v, g->index);
    }
}

static void *sampler_main(void *arg)
{
    (void)arg;
    const op_cpu_config *c = &g_op_cpu_cfg;
    uint64_t interval = (uint64_t)(c->process_interval * 1e9);
    uint64_t begin = g_op_cpu_start_ns + (uint64_t)(c->process_delay > 0 ? c->process_delay * 1e9 : 0);
    uint64_t end = c->process_duration > 0 ? begin + (uint64_t)(c->process_duration * 1e9) : 0;
    uint64_t next = begin;
    while (!atomic_load(&g_stop) && !atomic_load(&g_op_cpu_stopping)) {
        struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
        pthread_mutex_lock(&g_mu);
        while (!atomic_load(&g_stop) && pthread_cond_timedwait(&g_cv, &g_mu, &ts) != ETIMEDOUT) {}
        pthread_mutex_unlock(&g_mu);
        if (atomic_load(&g_stop) || atomic_load(&g_op_cpu_stopping)) break;
        uint64_t now = op_now_ns();
        if (end && now >= end) break;
        op_cpu_threads_emit_pending();
        if (op_cpu_window_open()) {
            sample_process(now);
            sample_freq(now);
            sample_gpus(now);
        }
        next += interval;
        if (next < now) next = now + interval; /* fell behind: skip, do not burst */
    }
    atomic_store(&g_done, 1);
    return NULL;
}

int op_cpu_process_sampler_start(void)
{
    atomic_store(&g_stop, 0);
    atomic_store(&g_done, 0);
    if (!g_cv_ready) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&g_cv, &ca);
        pthread_condattr_destroy(&ca);
        g_cv_ready = true;
    }
    if (!g_cores && !g_n_cores) cores_setup();
    if (!g_nvml.lib && !g_nvml.n) nvml_setup();
    if (op_sdk_create_thread(&g_thread, sampler_main, NULL, OMNIPROF_LIBRARY, "omniprof.procsampler") != 0) return -1;
    g_running = true;
    return 0;
}

void op_cpu_process_sampler_stop(void)
{
    if (!g_running) return;
    pthread_mutex_lock(&g_mu);
    atomic_store(&g_stop, 1);
    pthread_cond_signal(&g_cv);
    pthread_mutex_unlock(&g_mu);
    /* wait until it left its loop, at most 2 s (bounded, never a join: the SDK may have
     * created it detached, and DESIGN rule 1 forbids unbounded waits at exit) */
    for (int i = 0; i < 2000 && !atomic_load(&g_done); i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    g_running = false;
}

void op_cpu_process_sampler_at_fork_child(void)
{
    g_running = false; /* the thread did not survive the fork */
    atomic_store(&g_stop, 0);
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    g_mu = fresh;
    g_cv_ready = false;
}
