/* cupti_counters_host.c — the offline half of the NVIDIA counter provider: chips, the metric
 * catalog, metric validation and pass planning through CUPTI's Profiler Host API, which needs
 * no GPU and no driver (docs/cuda.md), for the Range Profiler (per-kernel counters)
 * and for PM sampling (its own, smaller catalog: op_cupti_host_pm_*). Also the text of CUPTI
 * profiling errors.
 *
 * Facts this file is built on (measured on GH100, CUDA 13.0):
 *  - cuptiProfilerHostGetBaseMetrics gives base names ("dram__bytes_read"); a collectable name
 *    is a base name plus one of its sub-metrics (".sum", ".avg.pct_of_peak_sustained_elapsed");
 *    a bare base name is rejected by ConfigAddMetrics;
 *  - after ConfigAddMetrics fails once, the host object refuses every later call (error 999),
 *    so names are validated first (op_cupti_host_describe) and each plan uses a fresh object;
 *  - the catalog of one chip takes ~1 ms to read; it is cached per chip.
 *
 * Invariants:
 *  (1) every host-API call is made under g_host_lock (the host objects are not documented as
 *      thread-safe);
 *  (2) cached catalogs are never freed while the process runs: strings handed out stay valid
 *      (provider.h invariant (2)). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>
#include <cupti_profiler_host.h>

#include "backend/cuda/cupti_counters.h"
#include "common/alloc.h"
#include "common/log.h"

static pthread_mutex_t g_host_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct base_entry {
    const char *name; /* CUPTI-owned for the life of the host object (kept alive) */
    uint32_t type;    /* omniprof_counter_type_t */
    const char **subs;
    size_t n_subs;    /* 0 until read */
    int subs_read;
} base_entry;

typedef struct chip_catalog {
    char chip[32];
    CUpti_ProfilerType type;          /* RANGE_PROFILER or PM_SAMPLING: each has its catalog */
    CUpti_Profiler_Host_Object *host; /* kept for the process: owns the name strings */
    base_entry *base;
    size_t n_base;
    /* open-addressing index over base names */
    int32_t *slots;
    size_t n_slots;
} chip_catalog;

#define MAX_CHIPS 48
static chip_catalog g_cat[MAX_CHIPS];
static size_t g_n_cat;

const char *op_cupti_result_text(CUptiResult rc)
{
    const char *s = NULL;
    if (cuptiGetResultString(rc, &s) != CUPTI_SUCCESS || !s)
        s = "unknown CUPTI error";
    return s;
}

omniprof_status_t op_cupti_counters_status(CUptiResult rc, char *msg, size_t len)
{
    const char *why;
    omniprof_status_t st;
    switch ((int)rc) {
    case CUPTI_SUCCESS:
        if (msg && len)
            msg[0] = '\0';
        return OMNIPROF_STATUS_SUCCESS;
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        why = "no permission to read GPU performance counters: the driver restricts profiling to admin users "
              "(NVreg_RestrictProfilingToAdminUsers=1, 'RmProfilingAdminOnly: 1' in /proc/driver/nvidia/params; "
              "in a container also --cap-add SYS_ADMIN). Run as root or set the driver option to 0 "
              "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)";
        st = OMNIPROF_STATUS_ERROR_PERMISSION_DENIED;
        break;
    case CUPTI_ERROR_HARDWARE_BUSY:
        why = "the GPU performance counters are held by another profiler (DCGM, Nsight Compute, another CUPTI "
              "client); stop it (e.g. `dcgmi profile --pause`) and run again";
        st = OMNIPROF_STATUS_ERROR_BACKEND_BUSY;
        break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
        why = "another tool (nsys, ncu, compute-sanitizer, a CUPTI client) owns CUPTI in this process";
        st = OMNIPROF_STATUS_ERROR_BACKEND_BUSY;
        break;
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
        why = "counters are not available on a MIG instance";
        st = OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
        break;
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
        why = "counters are not available on this virtual GPU";
        st = OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
        break;
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
        why = "counters are not available under WSL";
        st = OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
        break;
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
        why = "counters are not available with confidential computing on";
        st = OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
        break;
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_NOT_SUPPORTED:
        why = "this GPU does not support the CUPTI Range Profiler";
        st = OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
        break;
    case CUPTI_ERROR_INVALID_CHIP_NAME:
        why = "CUPTI does not know this chip";
        st = OMNIPROF_STATUS_ERROR_METRIC_NOT_VALID_FOR_AGENT;
        break;
    case CUPTI_ERROR_INVALID_METRIC_NAME:
        why = "CUPTI does not know this metric";
        st = OMNIPROF_STATUS_ERROR_COUNTER_NOT_FOUND;
        break;
    default:
        why = NULL;
        st = OMNIPROF_STATUS_ERROR;
        break;
    }
    if (msg && len) {
        if (why)
            snprintf(msg, len, "%s (CUPTI error %d)", why, (int)rc);
        else
            snprintf(msg, len, "CUPTI error %d: %s", (int)rc, op_cupti_result_text(rc));
    }
    return st;
}

/* ---- catalogs -------------------------------------------------------------------------- */

static uint64_t hstr(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static CUpti_Profiler_Host_Object *host_init(CUpti_ProfilerType type, const char *chip, const uint8_t *avail)
{
    CUpti_Profiler_Host_Initialize_Params hi = {.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    hi.profilerType = type;
    hi.pChipName = chip;
    hi.pCounterAvailabilityImage = avail;
    if (cuptiProfilerHostInitialize(&hi) != CUPTI_SUCCESS)
        return NULL;
    return hi.pHostObject;
}

static void host_deinit(CUpti_Profiler_Host_Object *h)
{
    if (!h)
        return;
    CUpti_Profiler_Host_Deinitialize_Params hd = {.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    hd.pHostObject = h;
    cuptiProfilerHostDeinitialize(&hd);
}

CUpti_Profiler_Host_Object *op_cupti_host_create(CUpti_ProfilerType type, const char *chip, const uint8_t *avail)
{
    pthread_mutex_lock(&g_host_lock);
    CUpti_Profiler_Host_Object *h = host_init(type, chip, avail);
    pthread_mutex_unlock(&g_host_lock);
    return h;
}

void op_cupti_host_destroy(CUpti_Profiler_Host_Object *h)
{
    pthread_mutex_lock(&g_host_lock);
    host_deinit(h);
    pthread_mutex_unlock(&g_host_lock);
}

static int chip_supported(const char *chip)
{
    CUpti_Profiler_Host_GetSupportedChips_Params sc = {.structSize = CUpti_Profiler_Host_GetSupportedChips_Params_STRUCT_SIZE};
    if (cuptiProfilerHostGetSupportedChips(&sc) != CUPTI_SUCCESS)
        return 0;
    for (size_t i = 0; i < sc.numChips; i++)
        if (!strcmp(sc.ppChipNames[i], chip))
            return 1;
    return 0;
}

/* The catalog of (chip, profiler type), read on first use. Lock held. NULL if the chip is unknown. */
static chip_catalog *catalog_of(const char *chip, CUpti_ProfilerType type)
{
    for (size_t i = 0; i < g_n_cat; i++)
        if (!strcmp(g_cat[i].chip, chip) && g_cat[i].type == type)
            return g_cat[i].host ? &g_cat[i] : NULL;
    if (g_n_cat >= MAX_CHIPS || strlen(chip) >= sizeof g_cat[0].chip)
        return NULL;
    chip_catalog *c = &g_cat[g_n_cat++];
    memset(c, 0, sizeof *c);
    snprintf(c->chip, sizeof c->chip, "%s", chip);
    c->type = type;
    if (!chip_supported(chip))
        return NULL; /* remembered as unknown (host == NULL) */
    CUpti_Profiler_Host_Object *h = host_init(type, chip, NULL);
    if (!h)
        return NULL;
    static const struct {
        CUpti_MetricType t;
        uint32_t ours;
    } types[] = {{CUPTI_METRIC_TYPE_COUNTER, OMNIPROF_COUNTER_TYPE_COUNTER},
                 {CUPTI_METRIC_TYPE_RATIO, OMNIPROF_COUNTER_TYPE_RATIO},
                 {CUPTI_METRIC_TYPE_THROUGHPUT, OMNIPROF_COUNTER_TYPE_THROUGHPUT}};
    size_t total = 0;
    CUpti_Profiler_Host_GetBaseMetrics_Params bm[3];
    for (int t = 0; t < 3; t++) {
        memset(&bm[t], 0, sizeof bm[t]);
        bm[t].structSize = CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE;
        bm[t].pHostObject = h;
        bm[t].metricType = types[t].t;
        if (cuptiProfilerHostGetBaseMetrics(&bm[t]) != CUPTI_SUCCESS)
            bm[t].numMetrics = 0;
        total += bm[t].numMetrics;
    }
    c->base = op_calloc(total ? total : 1, sizeof *c->base);
    c->n_slots = 1;
    while (c->n_slots < total * 2 + 2)
        c->n_slots *= 2;
    c->slots = op_malloc(c->n_slots * sizeof *c->slots);
    if (!c->base || !c->slots) {
        host_deinit(h);
        return NULL;
    }
    for (size_t i = 0; i < c->n_slots; i++)
        c->slots[i] = -1;
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < bm[t].numMetrics; i++) {
            base_entry *e = &c->base[c->n_base];
            e->name = bm[t].ppMetricNames[i];
            e->type = types[t].ours;
            size_t s = hstr(e->name) & (c->n_slots - 1);
            while (c->slots[s] >= 0)
                s = (s + 1) & (c->n_slots - 1);
            c->slots[s] = (int32_t)c->n_base++;
        }
    c->host = h;
    return c;
}

static chip_catalog *catalog(const char *chip) { return catalog_of(chip, CUPTI_PROFILER_TYPE_RANGE_PROFILER); }

static base_entry *find_base(chip_catalog *c, const char *name, size_t len)
{
    size_t s = 0;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)name[i]) * 1099511628211ull;
    for (s = h & (c->n_slots - 1); c->slots[s] >= 0; s = (s + 1) & (c->n_slots - 1)) {
        base_entry *e = &c->base[c->slots[s]];
        if (strlen(e->name) == len && !memcmp(e->name, name, len))
            return e;
    }
    return NULL;
}

static CUpti_MetricType cupti_type(uint32_t t)
{
    return t == OMNIPROF_COUNTER_TYPE_RATIO        ? CUPTI_METRIC_TYPE_RATIO
           : t == OMNIPROF_COUNTER_TYPE_THROUGHPUT ? CUPTI_METRIC_TYPE_THROUGHPUT
                                                   : CUPTI_METRIC_TYPE_COUNTER;
}

static void read_subs(chip_catalog *c, base_entry *e)
{
    if (e->subs_read)
        return;
    e->subs_read = 1;
    CUpti_Profiler_Host_GetSubMetrics_Params sm = {.structSize = CUpti_Profiler_Host_GetSubMetrics_Params_STRUCT_SIZE};
    sm.pHostObject = c->host;
    sm.metricType = cupti_type(e->type);
    sm.pMetricName = e->name;
    if (cuptiProfilerHostGetSubMetrics(&sm) == CUPTI_SUCCESS) {
        e->subs = sm.ppSubMetrics;
        e->n_subs = sm.numOfSubmetrics;
    }
}

int op_cupti_host_iterate_chips(int (*cb)(const char *chip, void *data), void *data)
{
    pthread_mutex_lock(&g_host_lock);
    CUpti_Profiler_Host_GetSupportedChips_Params sc = {.structSize = CUpti_Profiler_Host_GetSupportedChips_Params_STRUCT_SIZE};
    CUptiResult rc = cuptiProfilerHostGetSupportedChips(&sc);
    pthread_mutex_unlock(&g_host_lock);
    if (rc != CUPTI_SUCCESS)
        return -1;
    for (size_t i = 0; i < sc.numChips; i++)
        if (cb(sc.ppChipNames[i], data))
            break;
    return 0;
}

static int iterate_base(CUpti_ProfilerType type, const char *chip,
                        int (*cb)(const op_counter_base_info *info, void *data), void *data)
{
    pthread_mutex_lock(&g_host_lock);
    chip_catalog *c = catalog_of(chip, type);
    pthread_mutex_unlock(&g_host_lock);
    if (!c)
        return -1;
    for (size_t i = 0; i < c->n_base; i++) {
        op_counter_base_info info;
        memset(&info, 0, sizeof info);
        info.name = c->base[i].name;
        info.type = c->base[i].type;
        pthread_mutex_lock(&g_host_lock);
        CUpti_Profiler_Host_GetMetricProperties_Params mp = {.structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
        mp.pHostObject = c->host;
        mp.pMetricName = info.name;
        if (cuptiProfilerHostGetMetricProperties(&mp) == CUPTI_SUCCESS) {
            info.description = mp.pDescription;
            info.block = mp.pHwUnit;
            info.unit = mp.pDimUnit;
        }
        pthread_mutex_unlock(&g_host_lock);
        if (cb(&info, data))
            break;
    }
    return 0;
}

int op_cupti_host_iterate_base(const char *chip, int (*cb)(const op_counter_base_info *info, void *data), void *data)
{
    return iterate_base(CUPTI_PROFILER_TYPE_RANGE_PROFILER, chip, cb, data);
}

int op_cupti_host_pm_iterate_base(const char *chip, int (*cb)(const op_counter_base_info *info, void *data), void *data)
{
    return iterate_base(CUPTI_PROFILER_TYPE_PM_SAMPLING, chip, cb, data);
}

int op_cupti_host_iterate_submetrics(const char *chip, const char *base, uint32_t type,
                                     int (*cb)(const char *suffix, void *data), void *data)
{
    (void)type;
    pthread_mutex_lock(&g_host_lock);
    chip_catalog *c = catalog(chip);
    base_entry *e = c ? find_base(c, base, strlen(base)) : NULL;
    if (e)
        read_subs(c, e);
    pthread_mutex_unlock(&g_host_lock);
    if (!e)
        return -1;
    for (size_t i = 0; i < e->n_subs; i++)
        if (cb(e->subs[i], data))
            break;
    return 0;
}

static int describe(CUpti_ProfilerType type, const char *chip, const char *name, op_counter_base_info *info)
{
    if (!chip || !name)
        return -1;
    int ok = -1;
    pthread_mutex_lock(&g_host_lock);
    chip_catalog *c = catalog_of(chip, type);
    /* name = <base><sub-metric>: try every '.' as the split point, longest base first */
    size_t len = strlen(name);
    for (size_t cut = len; c && cut-- > 1 && ok != 0;) {
        if (name[cut] != '.')
            continue;
        base_entry *e = find_base(c, name, cut);
        if (!e)
            continue;
        read_subs(c, e);
        for (size_t i = 0; i < e->n_subs; i++)
            if (!strcmp(e->subs[i], name + cut)) {
                ok = 0;
                break;
            }
        if (ok == 0) {
            CUpti_Profiler_Host_GetMetricProperties_Params mp = {.structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
            mp.pHostObject = c->host;
            mp.pMetricName = name;
            memset(info, 0, sizeof *info);
            info->name = name;
            info->type = e->type;
            if (cuptiProfilerHostGetMetricProperties(&mp) == CUPTI_SUCCESS) {
                info->description = mp.pDescription;
                info->block = mp.pHwUnit;
                info->unit = mp.pDimUnit;
            }
        }
    }
    pthread_mutex_unlock(&g_host_lock);
    return ok;
}

int op_cupti_host_describe(const char *chip, const char *name, op_counter_base_info *info)
{
    return describe(CUPTI_PROFILER_TYPE_RANGE_PROFILER, chip, name, info);
}

int op_cupti_host_pm_describe(const char *chip, const char *name, op_counter_base_info *info)
{
    return describe(CUPTI_PROFILER_TYPE_PM_SAMPLING, chip, name, info);
}

int op_cupti_host_config_image(CUpti_ProfilerType type, const char *chip, const uint8_t *avail,
                               const char *const *names, size_t n, CUpti_Profiler_Host_Object **keep_host,
                               uint8_t **image, size_t *image_size, size_t *passes, char *err, size_t errlen)
{
    int rc = -1;
    pthread_mutex_lock(&g_host_lock);
    CUpti_Profiler_Host_Object *h = host_init(type, chip, avail);
    if (!h) {
        snprintf(err, errlen, "CUPTI cannot plan counters for chip '%s'", chip);
        goto out;
    }
    CUpti_Profiler_Host_ConfigAddMetrics_Params am = {.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    am.pHostObject = h;
    am.ppMetricNames = (const char **)names;
    am.numMetrics = n;
    CUptiResult r = cuptiProfilerHostConfigAddMetrics(&am);
    if (r != CUPTI_SUCCESS) {
        char why[256];
        op_cupti_counters_status(r, why, sizeof why);
        snprintf(err, errlen, "CUPTI refused the counter set on %s: %s", chip, why);
        goto out;
    }
    CUpti_Profiler_Host_GetConfigImageSize_Params gs = {.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    gs.pHostObject = h;
    if ((r = cuptiProfilerHostGetConfigImageSize(&gs)) != CUPTI_SUCCESS || gs.configImageSize == 0) {
        snprintf(err, errlen, "CUPTI could not size the config image for %s (%s)", chip, op_cupti_result_text(r));
        goto out;
    }
    uint8_t *img = op_malloc(gs.configImageSize);
    if (!img) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    CUpti_Profiler_Host_GetConfigImage_Params gc = {.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    gc.pHostObject = h;
    gc.configImageSize = gs.configImageSize;
    gc.pConfigImage = img;
    if ((r = cuptiProfilerHostGetConfigImage(&gc)) != CUPTI_SUCCESS) {
        op_free(img);
        snprintf(err, errlen, "CUPTI could not build the config image for %s (%s)", chip, op_cupti_result_text(r));
        goto out;
    }
    CUpti_Profiler_Host_GetNumOfPasses_Params np = {.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
    np.configImageSize = gs.configImageSize;
    np.pConfigImage = img;
    if ((r = cuptiProfilerHostGetNumOfPasses(&np)) != CUPTI_SUCCESS) {
        op_free(img);
        snprintf(err, errlen, "CUPTI could not count the passes for %s (%s)", chip, op_cupti_result_text(r));
        goto out;
    }
    *passes = np.numOfPasses;
    if (image) {
        *image = img;
        *image_size = gs.configImageSize;
    } else {
        op_free(img);
    }
    rc = 0;
out:
    if (rc == 0 && keep_host) {
        *keep_host = h;
    } else {
        host_deinit(h);
    }
    pthread_mutex_unlock(&g_host_lock);
    return rc;
}

int op_cupti_host_plan_passes(const char *chip, const char *const *names, size_t n, size_t *passes, char *err,
                              size_t errlen)
{
    /* validate first: a failed ConfigAddMetrics poisons the host object */
    for (size_t i = 0; i < n; i++) {
        op_counter_base_info info;
        if (op_cupti_host_describe(chip, names[i], &info) != 0) {
            snprintf(err, errlen, "'%s' is not a collectable metric of %s", names[i], chip);
            return -1;
        }
    }
    return op_cupti_host_config_image(CUPTI_PROFILER_TYPE_RANGE_PROFILER, chip, NULL, names, n, NULL, NULL, NULL, passes,
                                      err, errlen);
}

int op_cupti_host_pm_plan(const char *chip, const char *const *names, size_t n, size_t *passes, char *bad, size_t badlen,
                          char *err, size_t errlen)
{
    /* every unknown name is listed in bad (a failed ConfigAddMetrics poisons the host object) */
    size_t at = 0;
    if (bad && badlen) bad[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        op_counter_base_info info;
        if (describe(CUPTI_PROFILER_TYPE_PM_SAMPLING, chip, names[i], &info) != 0 && bad && at < badlen)
            at += (size_t)snprintf(bad + at, badlen - at, "%s%s", at ? " " : "", names[i]);
    }
    if (bad && bad[0]) {
        *passes = 0;
        snprintf(err, errlen, "not PM-sampling metrics of %s: %s", chip, bad);
        return -1;
    }
    return op_cupti_host_config_image(CUPTI_PROFILER_TYPE_PM_SAMPLING, chip, NULL, names, n, NULL, NULL, NULL, passes,
                                      err, errlen);
}

int op_cupti_host_evaluate(CUpti_Profiler_Host_Object *h, const uint8_t *counter_data, size_t size, size_t range,
                           const char *const *names, size_t n, double *values)
{
    pthread_mutex_lock(&g_host_lock);
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    ev.pHostObject = h;
    ev.pCounterDataImage = counter_data;
    ev.counterDataImageSize = size;
    ev.rangeIndex = range;
    ev.ppMetricNames = (const char **)names;
    ev.numMetrics = n;
    ev.pMetricValues = values;
    CUptiResult r = cuptiProfilerHostEvaluateToGpuValues(&ev);
    pthread_mutex_unlock(&g_host_lock);
    return r == CUPTI_SUCCESS ? 0 : (int)r;
}
