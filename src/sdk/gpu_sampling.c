/* gpu_sampling.c — the PM sampling service (include/omniprof/pm_sampling.h) and the SASS metrics
 * service (include/omniprof/sass_metrics.h): each is the buffer tracing service of its kind
 * (PM_SAMPLE, SASS_METRIC) plus a configuration the backend reads when it starts; the offline
 * questions of PM sampling (a chip's metrics, the passes of a set) are answered by the
 * provider the backend registers (backend.h), loaded with the backend that serves PM_SAMPLE.
 * Invariant: one configuration per service and process (the first context's); a context
 * asking for other values gets ERROR_CONTEXT_CONFLICT and nothing changes. Names are interned
 * (op_sdk_intern): the configurations stay valid for the process. */
#include "sdk/sdk_internal.h"

#include <regex.h>
#include <stdio.h>
#include <string.h>

static const op_pm_sampling_provider *_Atomic g_pm_provider;
/* The configurations, under the sampling services' lock (op_sdk_sampling_claim). */
static op_sdk_pm_sampling_config g_pm;
static const char *g_pm_names[OMNIPROF_PM_SAMPLING_MAX_METRICS];
static op_sdk_sass_metrics_config g_sass;
static const char *g_sass_names[OMNIPROF_SASS_METRICS_MAX_METRICS];

/* Same names in the same order (interned strings compare by pointer). */
static int same_names(const char *const *a, size_t na, const char *const *b, size_t nb)
{
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

static int same_pm(const void *want)
{
    const op_sdk_pm_sampling_config *w = want;
    return same_names(g_pm.metrics, g_pm.n_metrics, w->metrics, w->n_metrics) && g_pm.interval_ns == w->interval_ns &&
           g_pm.agent.handle == w->agent.handle;
}

static void keep_pm(const void *want)
{
    g_pm = *(const op_sdk_pm_sampling_config *)want;
    memcpy(g_pm_names, g_pm.metrics, g_pm.n_metrics * sizeof g_pm_names[0]);
    g_pm.metrics = g_pm_names;
}

static int same_sass(const void *want)
{
    const op_sdk_sass_metrics_config *w = want;
    return same_names(g_sass.metrics, g_sass.n_metrics, w->metrics, w->n_metrics) &&
           g_sass.kernel_filter == w->kernel_filter && g_sass.agent.handle == w->agent.handle;
}

static void keep_sass(const void *want)
{
    g_sass = *(const op_sdk_sass_metrics_config *)want;
    memcpy(g_sass_names, g_sass.metrics, g_sass.n_metrics * sizeof g_sass_names[0]);
    g_sass.metrics = g_sass_names;
}

static op_sdk_sampling_service g_pm_service = {OMNIPROF_BUFFER_TRACING_PM_SAMPLE, same_pm, keep_pm, 0};
static op_sdk_sampling_service g_sass_service = {OMNIPROF_BUFFER_TRACING_SASS_METRIC, same_sass, keep_sass, 0};

void op_sdk_pm_sampling_register_provider(const op_pm_sampling_provider *provider)
{
    if (provider && provider->size >= sizeof(op_pm_sampling_provider)) atomic_store(&g_pm_provider, provider);
}

int op_sdk_pm_sampling_get_config(op_sdk_pm_sampling_config *out)
{
    return op_sdk_sampling_get(&g_pm_service, &g_pm, out, sizeof g_pm);
}

int op_sdk_sass_metrics_get_config(op_sdk_sass_metrics_config *out)
{
    return op_sdk_sampling_get(&g_sass_service, &g_sass, out, sizeof g_sass);
}

/* The checks every configure call shares: open configuration, context, buffer. */
static omniprof_status_t check_target(omniprof_context_id_t context, omniprof_buffer_id_t buffer)
{
    op_sdk_ensure_init();
    omniprof_status_t st = op_sdk_config_open();
    if (st != OMNIPROF_STATUS_SUCCESS) return st;
    if (op_context_index(context) < 0) return OMNIPROF_STATUS_ERROR_CONTEXT_NOT_FOUND;
    if (!op_buffer_lookup(buffer)) return OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND;
    return OMNIPROF_STATUS_SUCCESS;
}

/* The metric names interned into names[] (ERROR_INVALID_ARGUMENT for a missing or empty one). */
static omniprof_status_t intern_names(const char *const *metrics, size_t n, const char **names)
{
    for (size_t i = 0; i < n; i++) {
        if (!metrics[i] || !*metrics[i]) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
        names[i] = op_sdk_intern(metrics[i]);
    }
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_configure_pm_sampling_service(omniprof_context_id_t context,
                                                                      omniprof_agent_id_t agent,
                                                                      const char *const *metrics, size_t num_metrics,
                                                                      uint64_t interval_ns, omniprof_buffer_id_t buffer,
                                                                      uint32_t flags)
{
    (void)flags;
    omniprof_status_t st = check_target(context, buffer);
    if (st != OMNIPROF_STATUS_SUCCESS) return st;
    if (!metrics || num_metrics == 0 || num_metrics > OMNIPROF_PM_SAMPLING_MAX_METRICS ||
        interval_ns < OMNIPROF_PM_SAMPLING_MIN_INTERVAL_NS || interval_ns > OMNIPROF_PM_SAMPLING_MAX_INTERVAL_NS)
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    const char *names[OMNIPROF_PM_SAMPLING_MAX_METRICS];
    if ((st = intern_names(metrics, num_metrics, names)) != OMNIPROF_STATUS_SUCCESS) return st;
    op_sdk_pm_sampling_config want = {.metrics = names, .n_metrics = num_metrics, .interval_ns = interval_ns, .agent = agent};
    return op_sdk_sampling_claim(&g_pm_service, &want, context, buffer);
}

static const op_pm_sampling_provider *pm_provider(void)
{
    op_sdk_ensure_init();
    if (!atomic_load(&g_pm_provider)) op_backend_load_for_kind(OMNIPROF_BUFFER_TRACING_PM_SAMPLE);
    return atomic_load(&g_pm_provider);
}

OMNIPROF_API omniprof_status_t omniprof_iterate_pm_sampling_metrics(const char *chip,
                                                                    omniprof_pm_sampling_metric_cb_t cb,
                                                                    void *user_data)
{
    if (!chip || !*chip || !cb) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    const op_pm_sampling_provider *p = pm_provider();
    if (!p || !p->iterate) return OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
    return p->iterate(chip, cb, user_data) == 0 ? OMNIPROF_STATUS_SUCCESS : OMNIPROF_STATUS_ERROR_METRIC_NOT_VALID_FOR_AGENT;
}

OMNIPROF_API omniprof_status_t omniprof_check_pm_sampling_metrics(const char *chip, const char *const *metrics,
                                                                  size_t num_metrics, size_t *passes, char *message,
                                                                  size_t message_size)
{
    char msg[1024] = "", bad[768] = "";
    size_t np = 0;
    omniprof_status_t st = OMNIPROF_STATUS_SUCCESS;
    if (passes) *passes = 0;
    if (!chip || !*chip || !metrics || num_metrics == 0 || num_metrics > OMNIPROF_PM_SAMPLING_MAX_METRICS) {
        st = OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
        snprintf(msg, sizeof msg, "give a chip and 1 to %d metric names", OMNIPROF_PM_SAMPLING_MAX_METRICS);
    } else {
        for (size_t i = 0; i < num_metrics; i++)
            if (!metrics[i] || !*metrics[i]) {
                snprintf(msg, sizeof msg, "metric %zu is empty", i + 1);
                st = OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
            }
    }
    const op_pm_sampling_provider *p = st == OMNIPROF_STATUS_SUCCESS ? pm_provider() : NULL;
    if (st == OMNIPROF_STATUS_SUCCESS && (!p || !p->check)) {
        st = OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
        snprintf(msg, sizeof msg, "no backend that can PM-sample in this build");
    }
    if (st == OMNIPROF_STATUS_SUCCESS) {
        int rc = p->check(chip, metrics, num_metrics, &np, bad, sizeof bad, msg, sizeof msg);
        if (rc == -1) {
            st = OMNIPROF_STATUS_ERROR_METRIC_NOT_VALID_FOR_AGENT;
            if (!msg[0]) snprintf(msg, sizeof msg, "CUPTI does not know the chip '%s'", chip);
        } else if (rc == -2) {
            st = OMNIPROF_STATUS_ERROR_COUNTER_NOT_FOUND;
            snprintf(msg, sizeof msg, "not PM-sampling metrics of %s: %s (a metric is a base name from `omniprof avail "
                     "--pm-metrics` with a rollup such as .sum, .avg, .max)", chip, bad);
        } else if (rc != 0) {
            st = OMNIPROF_STATUS_ERROR;
        } else if (np != 1) {
            st = OMNIPROF_STATUS_ERROR_EXCEEDS_HW_LIMIT;
            snprintf(msg, sizeof msg, "the metrics need %zu passes on %s; PM sampling collects one pass: take fewer "
                     "metrics or other ones", np, chip);
        }
    }
    if (passes) *passes = np;
    if (message && message_size) snprintf(message, message_size, "%s", msg);
    return st;
}

OMNIPROF_API omniprof_status_t omniprof_configure_sass_metrics_service(omniprof_context_id_t context,
                                                                       omniprof_agent_id_t agent,
                                                                       const char *kernel_filter,
                                                                       const char *const *metrics, size_t num_metrics,
                                                                       omniprof_buffer_id_t buffer, uint32_t flags)
{
    (void)flags;
    omniprof_status_t st = check_target(context, buffer);
    if (st != OMNIPROF_STATUS_SUCCESS) return st;
    static const char *const defaults[] = {OMNIPROF_SASS_METRIC_INST_EXECUTED, OMNIPROF_SASS_METRIC_THREAD_INST_EXECUTED};
    if (!metrics || num_metrics == 0) metrics = defaults, num_metrics = 2;
    if (num_metrics > OMNIPROF_SASS_METRICS_MAX_METRICS) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    const char *names[OMNIPROF_SASS_METRICS_MAX_METRICS];
    if ((st = intern_names(metrics, num_metrics, names)) != OMNIPROF_STATUS_SUCCESS) return st;
    if (kernel_filter && *kernel_filter) {
        regex_t re;
        if (regcomp(&re, kernel_filter, REG_EXTENDED | REG_NOSUB) != 0) return OMNIPROF_STATUS_ERROR_PARSE;
        regfree(&re);
    }
    op_sdk_sass_metrics_config want = {.metrics = names, .n_metrics = num_metrics,
                                       .kernel_filter = op_sdk_intern(kernel_filter ? kernel_filter : ""),
                                       .agent = agent};
    return op_sdk_sampling_claim(&g_sass_service, &want, context, buffer);
}
