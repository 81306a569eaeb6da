/* status.c — status names and sentences, version and timestamp calls.
 *
 * The tables are indexed by status value, one line per slot; an out-of-range value (LAST,
 * negative, anything unknown) gets a fixed text, never NULL (tests/sdk/test_status.c checks
 * 0, LAST-1, LAST, INT_MIN, INT_MAX). */
#include "sdk/sdk_internal.h"

#include "common/clock.h"

#define S(name, text) [OMNIPROF_STATUS_##name] = {"OMNIPROF_STATUS_" #name, text}

static const struct {
    const char *name;
    const char *text;
} g_status[OMNIPROF_STATUS_LAST] = {
    S(SUCCESS, "success"),
    S(ERROR, "generic error"),
    S(ERROR_CONTEXT_NOT_FOUND, "context id is stale or unknown"),
    S(ERROR_BUFFER_NOT_FOUND, "buffer id is stale or unknown"),
    S(ERROR_KIND_NOT_FOUND, "tracing kind is unknown"),
    S(ERROR_OPERATION_NOT_FOUND, "operation is not one of the kind's operations"),
    S(ERROR_THREAD_NOT_FOUND, "thread id is unknown"),
    S(ERROR_AGENT_NOT_FOUND, "agent id is unknown"),
    S(ERROR_COUNTER_NOT_FOUND, "counter or metric is unknown"),
    S(ERROR_CONTEXT_ERROR, "the context could not be started"),
    S(ERROR_CONTEXT_INVALID, "the context's configuration is inconsistent"),
    S(ERROR_CONTEXT_NOT_STARTED, "the operation needs a started context"),
    S(ERROR_CONTEXT_CONFLICT, "another active context holds the service"),
    S(ERROR_BUFFER_BUSY, "the buffer is being flushed or its callback is running"),
    S(ERROR_SERVICE_ALREADY_CONFIGURED, "the service is already configured for this context and kind"),
    S(ERROR_CONFIGURATION_LOCKED, "configuration is locked once tools have initialized"),
    S(ERROR_NOT_IMPLEMENTED, "not implemented in this build"),
    S(ERROR_INCOMPATIBLE_ABI, "struct size or version not understood"),
    S(ERROR_INVALID_ARGUMENT, "invalid argument"),
    S(ERROR_FINALIZED, "the SDK has finalized"),
    S(ERROR_OUT_OF_RESOURCES, "out of memory, threads or descriptors"),
    S(ERROR_NOT_AVAILABLE, "backend or device not available"),
    S(ERROR_PERMISSION_DENIED, "permission denied by the OS or driver"),
    S(ERROR_BACKEND_BUSY, "another profiler holds the vendor facility"),
    S(ERROR_METRIC_NOT_VALID_FOR_AGENT, "metric is not valid for this agent"),
    S(ERROR_EXCEEDS_HW_LIMIT, "counter set exceeds the hardware limit"),
    S(ERROR_PARSE, "text could not be parsed"),
    S(ERROR_IO, "file or database I/O failed"),
};

OMNIPROF_API const char *omniprof_get_status_name(omniprof_status_t status)
{
    if ((int)status < 0 || (int)status >= OMNIPROF_STATUS_LAST || !g_status[status].name)
        return "OMNIPROF_STATUS_UNKNOWN";
    return g_status[status].name;
}

OMNIPROF_API const char *omniprof_get_status_string(omniprof_status_t status)
{
    if ((int)status < 0 || (int)status >= OMNIPROF_STATUS_LAST || !g_status[status].text) return "unknown status";
    return g_status[status].text;
}

OMNIPROF_API omniprof_status_t omniprof_get_version(uint32_t *major, uint32_t *minor, uint32_t *patch)
{
    if (major) *major = OMNIPROF_VERSION_MAJOR;
    if (minor) *minor = OMNIPROF_VERSION_MINOR;
    if (patch) *patch = OMNIPROF_VERSION_PATCH;
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API uint32_t omniprof_get_version_number(void) { return OMNIPROF_VERSION_NUMBER; }

OMNIPROF_API omniprof_status_t omniprof_get_timestamp(omniprof_timestamp_t *ts)
{
    if (!ts) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    *ts = op_now_ns();
    return OMNIPROF_STATUS_SUCCESS;
}
