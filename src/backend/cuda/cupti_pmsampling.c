/* cupti_pmsampling.c — PM sampling on CUDA (include/omniprof/pm_sampling.h) through CUPTI's PM
 * Sampling API (docs/cuda.md; verified end to end on an H100): per device, the hardware
 * writes one sample of the configured metrics every interval into a device buffer; a decode
 * thread turns them into PM_SAMPLE records (one per sample window and metric) on omniprof's clock
 * (the backend's CUPTI timestamp callback applies to PM sample times too).
 *
 * Life cycle, per device (g_dev[ordinal].state under g_lock):
 *   NONE ──first CONTEXT_CREATED on the device──▶ REQUESTED ──worker: setup──▶ RUNNING | FAILED
 *   RUNNING ──exit flush / finalization──▶ STOPPED (cuptiPmSamplingStop, the rest decoded)
 * Setup (on the worker thread): cuptiProfilerInitialize, chip name, counter availability, a
 * config image for the metrics (CUPTI_PROFILER_TYPE_PM_SAMPLING; it must need one pass),
 * cuptiPmSamplingEnable, SetConfig (GPU time interval, 64 MiB hardware buffer, newest records
 * kept), a counter-data image of PMS_MAX_SAMPLES samples, Start. The context-creation callback
 * waits for it at most PMS_SETUP_WAIT_MS, so that sampling covers the program from its first
 * kernel, without ever blocking the program for longer.
 * Decoding: every PMS_DECODE_MS the worker decodes each running device until CUPTI reports the
 * end of the records (the image is re-initialized after each batch); the first sample of a
 * device is dropped (it starts long before Start, docs/cuda.md), so are samples with an empty or
 * negative window or a non-finite value (counted).
 * Invariants: (1) every CUPTI PM call of a device is made by the worker thread; (2) a device is
 * set up at most once; (3) the sampler is never disabled (cuptiPmSamplingDisable tears CUPTI's
 * profiler state down while the process still traces): at exit it is stopped and drained.
 * Fail soft: a CUPTI call that fails logs one line naming it and its error; that device's
 * sampling stays off, the program runs on. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti_pmsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cupti_counters.h"
#include "common/alloc.h"
#include "common/clock.h"
#include "common/log.h"

#define PMS_MAX_DEV 16
#define PMS_MAX_SAMPLES 1024          /* samples per counter-data image (one decode batch) */
#define PMS_HW_BUFFER (64u << 20)     /* device buffer, bytes */
#define PMS_DECODE_MS 10
#define PMS_SETUP_WAIT_MS 3000
#define PMS_STOP_WAIT_MS 5000

enum { PMS_NONE = 0, PMS_REQUESTED, PMS_RUNNING, PMS_FAILED, PMS_STOPPED };

typedef struct pms_dev {
    int state;
    uint32_t device;
    char chip[32];
    omniprof_agent_id_t agent;
    CUpti_PmSampling_Object *obj;
    CUpti_Profiler_Host_Object *host;
    uint8_t *config;
    size_t config_size;
    uint8_t *data;
    size_t data_size;
    int first_dropped;
    uint64_t start_ns;
    uint64_t samples, invalid, overflows;
} pms_dev;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond; /* CLOCK_MONOTONIC */
static int g_on, g_thread, g_stop, g_worker_done;
static op_sdk_pm_sampling_config g_cfg;
static pms_dev g_dev[PMS_MAX_DEV];
static double *g_values;

int op_cuda_pms_start(void)
{
    if (!op_sdk_pm_sampling_get_config(&g_cfg) || !op_sdk_kind_configured(OMNIPROF_BUFFER_TRACING_PM_SAMPLE) ||
        g_cfg.n_metrics == 0)
        return 0;
    g_values = op_calloc(g_cfg.n_metrics, sizeof *g_values);
    if (!g_values) return 0;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g_cond, &ca);
    pthread_condattr_destroy(&ca);
    g_on = 1;
    return 1;
}

/* One line naming the call that failed; the device's sampling stays off. */
static int failed(pms_dev *d, const char *what, CUptiResult r)
{
    char why[384];
    op_cupti_counters_status(r, why, sizeof why);
    op_warn("cuda: PM sampling off on device %u: %s failed: %s", d->device, what, why);
    return -1;
}

static void deadline(struct timespec *ts, uint64_t ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += (time_t)(ms / 1000);
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) ts->tv_sec++, ts->tv_nsec -= 1000000000L;
}

/* ------------------------------------------------------------------------------------------ */
/* Setup (worker thread).                                                                      */

static int init_image(pms_dev *d)
{
    CUpti_PmSampling_CounterDataImage_Initialize_Params ci = {.structSize = CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    ci.pPmSamplingObject = d->obj;
    ci.counterDataSize = d->data_size;
    ci.pCounterData = d->data;
    CUptiResult r = cuptiPmSamplingCounterDataImageInitialize(&ci);
    return r == CUPTI_SUCCESS ? 0 : failed(d, "cuptiPmSamplingCounterDataImageInitialize", r);
}

static int availability(pms_dev *d, uint8_t **avail)
{
    CUpti_PmSampling_GetCounterAvailability_Params ca = {.structSize = CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE};
    ca.deviceIndex = d->device;
    CUptiResult r = cuptiPmSamplingGetCounterAvailability(&ca);
    if (r != CUPTI_SUCCESS) return failed(d, "cuptiPmSamplingGetCounterAvailability", r);
    *avail = op_malloc(ca.counterAvailabilityImageSize ? ca.counterAvailabilityImageSize : 1);
    if (!*avail) return failed(d, "allocating the availability image", CUPTI_ERROR_OUT_OF_MEMORY);
    ca.pCounterAvailabilityImage = *avail;
    r = cuptiPmSamplingGetCounterAvailability(&ca);
    return r == CUPTI_SUCCESS ? 0 : failed(d, "cuptiPmSamplingGetCounterAvailability", r);
}

static int setup(pms_dev *d)
{
    static int profiler_init;
    if (!profiler_init) {
        CUpti_Profiler_Initialize_Params pi = {.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
        CUptiResult r = cuptiProfilerInitialize(&pi);
        if (r != CUPTI_SUCCESS) return failed(d, "cuptiProfilerInitialize", r);
        profiler_init = 1;
    }
    CUpti_Device_GetChipName_Params cn = {.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    cn.deviceIndex = d->device;
    CUptiResult r = cuptiDeviceGetChipName(&cn);
    if (r != CUPTI_SUCCESS) return failed(d, "cuptiDeviceGetChipName", r);
    snprintf(d->chip, sizeof d->chip, "%s", cn.pChipName ? cn.pChipName : "?");
    uint8_t *avail = NULL;
    if (availability(d, &avail) != 0) {
        op_free(avail);
        return -1;
    }
    char err[512];
    size_t passes = 0;
    int rc = op_cupti_host_config_image(CUPTI_PROFILER_TYPE_PM_SAMPLING, d->chip, avail, g_cfg.metrics, g_cfg.n_metrics,
                                        &d->host, &d->config, &d->config_size, &passes, err, sizeof err);
    op_free(avail);
    if (rc != 0) {
        op_warn("cuda: PM sampling off on device %u (%s): %s", d->device, d->chip, err);
        return -1;
    }
    if (passes != 1) {
        op_warn("cuda: PM sampling off on device %u (%s): the metrics need %zu passes and PM sampling collects one "
                "(`omniprof avail --pm-check` finds a set that fits)",
                d->device, d->chip, passes);
        return -1;
    }
    CUpti_PmSampling_Enable_Params en = {.structSize = CUpti_PmSampling_Enable_Params_STRUCT_SIZE};
    en.deviceIndex = d->device;
    if ((r = cuptiPmSamplingEnable(&en)) != CUPTI_SUCCESS) return failed(d, "cuptiPmSamplingEnable", r);
    d->obj = en.pPmSamplingObject;
    CUpti_PmSampling_SetConfig_Params sc = {.structSize = CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE};
    sc.pPmSamplingObject = d->obj;
    sc.configSize = d->config_size;
    sc.pConfig = d->config;
    sc.hardwareBufferSize = PMS_HW_BUFFER;
    sc.samplingInterval = g_cfg.interval_ns;
    sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_LATEST;
    if ((r = cuptiPmSamplingSetConfig(&sc)) != CUPTI_SUCCESS) return failed(d, "cuptiPmSamplingSetConfig", r);
    CUpti_PmSampling_GetCounterDataSize_Params cs = {.structSize = CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE};
    cs.pPmSamplingObject = d->obj;
    cs.pMetricNames = (const char **)g_cfg.metrics;
    cs.numMetrics = g_cfg.n_metrics;
    cs.maxSamples = PMS_MAX_SAMPLES;
    if ((r = cuptiPmSamplingGetCounterDataSize(&cs)) != CUPTI_SUCCESS)
        return failed(d, "cuptiPmSamplingGetCounterDataSize", r);
    d->data_size = cs.counterDataSize;
    if (!(d->data = op_malloc(d->data_size ? d->data_size : 1)))
        return failed(d, "allocating the counter-data image", CUPTI_ERROR_OUT_OF_MEMORY);
    if (init_image(d) != 0) return -1;
    CUpti_PmSampling_Start_Params st = {.structSize = CUpti_PmSampling_Start_Params_STRUCT_SIZE};
    st.pPmSamplingObject = d->obj;
    if ((r = cuptiPmSamplingStart(&st)) != CUPTI_SUCCESS) return failed(d, "cuptiPmSamplingStart", r);
    d->start_ns = op_now_ns();
    d->agent = op_cuda_agent_of_device(d->device);
    op_info("cuda: PM sampling on (device %u, %s, %zu metric%s every %llu ns, counter data %zu bytes per %d samples)",
            d->device, d->chip, g_cfg.n_metrics, g_cfg.n_metrics == 1 ? "" : "s",
            (unsigned long long)g_cfg.interval_ns, d->data_size, PMS_MAX_SAMPLES);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Decoding (worker thread).                                                                   */

static void emit_sample(pms_dev *d, uint64_t start, uint64_t end)
{
    omniprof_pm_sample_record_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = OMNIPROF_BUFFER_TRACING_PM_SAMPLE;
    r.start_timestamp = start;
    r.end_timestamp = end;
    r.agent_id = d->agent;
    r.interval = g_cfg.interval_ns;
    r.device_index = d->device;
    for (size_t m = 0; m < g_cfg.n_metrics; m++) {
        r.metric_name = g_cfg.metrics[m];
        r.value = g_values[m];
        op_sdk_emit(r.kind, 0, &r, NULL);
    }
    d->samples++;
}

/* The completed samples of the image, then the image emptied. */
static int drain_image(pms_dev *d)
{
    CUpti_PmSampling_GetCounterDataInfo_Params gi = {.structSize = CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE};
    gi.pCounterDataImage = d->data;
    gi.counterDataImageSize = d->data_size;
    CUptiResult r = cuptiPmSamplingGetCounterDataInfo(&gi);
    if (r != CUPTI_SUCCESS) return failed(d, "cuptiPmSamplingGetCounterDataInfo", r);
    for (size_t i = 0; i < gi.numCompletedSamples; i++) {
        CUpti_PmSampling_CounterData_GetSampleInfo_Params si = {.structSize = CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE};
        si.pPmSamplingObject = d->obj;
        si.pCounterDataImage = d->data;
        si.counterDataImageSize = d->data_size;
        si.sampleIndex = i;
        if ((r = cuptiPmSamplingCounterDataGetSampleInfo(&si)) != CUPTI_SUCCESS)
            return failed(d, "cuptiPmSamplingCounterDataGetSampleInfo", r);
        int er = op_cupti_host_evaluate(d->host, d->data, d->data_size, i, g_cfg.metrics, g_cfg.n_metrics, g_values);
        if (er != 0) return failed(d, "cuptiProfilerHostEvaluateToGpuValues", (CUptiResult)er);
        if (!d->first_dropped) { /* starts long before Start (docs/cuda.md) */
            d->first_dropped = 1;
            continue;
        }
        int ok = si.endTimestamp > si.startTimestamp && si.startTimestamp + 1000000ull >= d->start_ns;
        for (size_t m = 0; ok && m < g_cfg.n_metrics; m++) ok = isfinite(g_values[m]);
        if (!ok) {
            d->invalid++;
            continue;
        }
        emit_sample(d, si.startTimestamp, si.endTimestamp);
    }
    return init_image(d);
}

/* Decode until CUPTI has no more records (bounded). 0, or -1 when the device turned off. */
static int decode(pms_dev *d)
{
    for (int round = 0; round < 256; round++) {
        CUpti_PmSampling_DecodeData_Params dd = {.structSize = CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE};
        dd.pPmSamplingObject = d->obj;
        dd.pCounterDataImage = d->data;
        dd.counterDataImageSize = d->data_size;
        CUptiResult r = cuptiPmSamplingDecodeData(&dd);
        if (r != CUPTI_SUCCESS) return failed(d, "cuptiPmSamplingDecodeData", r);
        if (dd.overflow && d->overflows++ == 0)
            op_warn("cuda: PM sampling: the hardware buffer of device %u overflowed; the oldest samples were lost "
                    "(raise --pm-sampling-interval)", d->device);
        if (drain_image(d) != 0) return -1;
        if (dd.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL) return 0;
    }
    return 0;
}

static void stop_device(pms_dev *d)
{
    CUpti_PmSampling_Stop_Params sp = {.structSize = CUpti_PmSampling_Stop_Params_STRUCT_SIZE};
    sp.pPmSamplingObject = d->obj;
    CUptiResult r = cuptiPmSamplingStop(&sp);
    if (r != CUPTI_SUCCESS) failed(d, "cuptiPmSamplingStop", r);
    decode(d);
    op_info("cuda: PM sampling: device %u: %llu samples of %zu metric%s, %llu dropped as invalid, %llu overflows",
            d->device, (unsigned long long)d->samples, g_cfg.n_metrics, g_cfg.n_metrics == 1 ? "" : "s",
            (unsigned long long)d->invalid, (unsigned long long)d->overflows);
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_lock);
    for (;;) {
        for (int i = 0; i < PMS_MAX_DEV; i++) {
            if (g_dev[i].state != PMS_REQUESTED) continue;
            pthread_mutex_unlock(&g_lock);
            int rc = g_stop ? -1 : setup(&g_dev[i]);
            pthread_mutex_lock(&g_lock);
            g_dev[i].state = rc == 0 ? PMS_RUNNING : PMS_FAILED;
            pthread_cond_broadcast(&g_cond);
        }
        int stop = g_stop;
        pthread_mutex_unlock(&g_lock);
        for (int i = 0; i < PMS_MAX_DEV; i++) { /* only this thread changes a RUNNING device */
            if (__atomic_load_n(&g_dev[i].state, __ATOMIC_ACQUIRE) != PMS_RUNNING) continue;
            if (stop) stop_device(&g_dev[i]);
            else if (decode(&g_dev[i]) != 0) __atomic_store_n(&g_dev[i].state, PMS_FAILED, __ATOMIC_RELEASE);
        }
        pthread_mutex_lock(&g_lock);
        if (stop) {
            for (int i = 0; i < PMS_MAX_DEV; i++)
                if (g_dev[i].state == PMS_RUNNING) g_dev[i].state = PMS_STOPPED;
            g_worker_done = 1;
            pthread_cond_broadcast(&g_cond);
            break;
        }
        struct timespec ts;
        deadline(&ts, PMS_DECODE_MS);
        while (!g_stop && pthread_cond_timedwait(&g_cond, &g_lock, &ts) != ETIMEDOUT) {
            int req = 0;
            for (int i = 0; i < PMS_MAX_DEV; i++) req |= g_dev[i].state == PMS_REQUESTED;
            if (req) break;
        }
    }
    pthread_mutex_unlock(&g_lock);
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Called by the subscriber.                                                                   */

void op_cuda_pms_on_context(CUcontext ctx)
{
    if (!g_on || !ctx) return;
    uint32_t dev = 0;
    if (cuptiGetDeviceId(ctx, &dev) != CUPTI_SUCCESS || dev >= PMS_MAX_DEV) return;
    if (g_cfg.agent.handle && g_cfg.agent.handle != op_cuda_agent_of_device(dev).handle) return;
    pthread_mutex_lock(&g_lock);
    if (g_dev[dev].state != PMS_NONE || g_stop) {
        pthread_mutex_unlock(&g_lock);
        return;
    }
    g_dev[dev].device = dev;
    g_dev[dev].state = PMS_REQUESTED;
    if (!g_thread) {
        pthread_t t;
        if (op_sdk_create_thread(&t, worker, NULL, OMNIPROF_LIBRARY_CUDA, "omniprof-pmsamp") != 0) {
            g_dev[dev].state = PMS_FAILED;
            pthread_mutex_unlock(&g_lock);
            op_warn("cuda: PM sampling off: its decode thread could not be started");
            return;
        }
        g_thread = 1;
    }
    pthread_cond_broadcast(&g_cond);
    /* wait for the setup, bounded: sampling then covers the program's first kernels */
    struct timespec ts;
    deadline(&ts, PMS_SETUP_WAIT_MS);
    while (g_dev[dev].state == PMS_REQUESTED)
        if (pthread_cond_timedwait(&g_cond, &g_lock, &ts) == ETIMEDOUT) break;
    if (g_dev[dev].state == PMS_REQUESTED)
        op_info("cuda: PM sampling setup of device %u takes longer than %d ms; the program goes on meanwhile", dev,
                PMS_SETUP_WAIT_MS);
    pthread_mutex_unlock(&g_lock);
}

/* At exit (contexts synchronized by the caller) and at finalization: stopped and drained. */
void op_cuda_pms_finish(void)
{
    if (!g_on) return;
    pthread_mutex_lock(&g_lock);
    g_stop = 1;
    pthread_cond_broadcast(&g_cond);
    if (g_thread) {
        struct timespec ts;
        deadline(&ts, PMS_STOP_WAIT_MS);
        while (!g_worker_done)
            if (pthread_cond_timedwait(&g_cond, &g_lock, &ts) == ETIMEDOUT) break;
        if (!g_worker_done) op_warn("cuda: PM sampling: the last samples were not decoded within %d ms", PMS_STOP_WAIT_MS);
    }
    pthread_mutex_unlock(&g_lock);
}

/* ------------------------------------------------------------------------------------------ */
/* The SDK's offline questions (omniprof_iterate_pm_sampling_metrics, ..._check_...).          */

typedef struct pm_iter {
    omniprof_pm_sampling_metric_cb_t cb;
    void *data;
} pm_iter;

static int iter_one(const op_counter_base_info *info, void *data)
{
    pm_iter *it = data;
    omniprof_pm_sampling_metric_t m;
    memset(&m, 0, sizeof m);
    m.size = sizeof m;
    m.name = info->name;
    m.description = info->description ? info->description : "";
    m.unit = info->unit ? info->unit : "";
    m.type = info->type;
    return it->cb(&m, it->data);
}

static int pm_iterate(const char *chip, omniprof_pm_sampling_metric_cb_t cb, void *data)
{
    pm_iter it = {cb, data};
    return op_cupti_host_pm_iterate_base(chip, iter_one, &it) == 0 ? 0 : -1;
}

typedef struct chip_known {
    const char *chip;
    int found;
} chip_known;

static int chip_one(const char *chip, void *data)
{
    chip_known *k = data;
    if (!strcmp(chip, k->chip)) k->found = 1;
    return k->found;
}

static int pm_check(const char *chip, const char *const *names, size_t n, size_t *passes, char *bad, size_t badlen,
                    char *msg, size_t msglen)
{
    chip_known k = {chip, 0};
    if (op_cupti_host_iterate_chips(chip_one, &k) != 0 || !k.found) {
        snprintf(msg, msglen, "CUPTI does not know the chip '%s' (`omniprof avail --pm-metrics --chip X`: GH100, AD102, ...)",
                 chip);
        return -1;
    }
    if (op_cupti_host_pm_plan(chip, names, n, passes, bad, badlen, msg, msglen) == 0) return 0;
    return bad[0] ? -2 : -3;
}

static const op_pm_sampling_provider g_provider = {sizeof(op_pm_sampling_provider), pm_iterate, pm_check};

__attribute__((constructor)) static void pms_register(void) { op_sdk_pm_sampling_register_provider(&g_provider); }
