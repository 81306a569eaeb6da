/* pc_sampling.c — the PC sampling service (include/omniprof/pc_sampling.h): the query of an
 * agent's configurations (answered by the backend's provider, backend.h) and the per-context
 * configuration, which is the buffer tracing service of OMNIPROF_BUFFER_TRACING_PC_SAMPLE plus
 * the method and interval that the backend reads when it starts.
 * Invariant: one configuration per process (the first context's); a context asking for other
 * values gets ERROR_CONTEXT_CONFLICT and nothing changes. */
#include "sdk/sdk_internal.h"

#include <string.h>

static const op_pc_sampling_provider *_Atomic g_provider;
static op_sdk_pc_sampling_config g_config; /* under the sampling services' lock (op_sdk_sampling_claim) */

static int same_config(const void *want)
{
    const op_sdk_pc_sampling_config *w = want;
    return g_config.method == w->method && g_config.interval == w->interval && g_config.agent.handle == w->agent.handle;
}

static void keep_config(const void *want) { g_config = *(const op_sdk_pc_sampling_config *)want; }

static op_sdk_sampling_service g_service = {OMNIPROF_BUFFER_TRACING_PC_SAMPLE, same_config, keep_config, 0};

void op_sdk_pc_sampling_register_provider(const op_pc_sampling_provider *provider)
{
    if (provider && provider->size >= sizeof(op_pc_sampling_provider)) atomic_store(&g_provider, provider);
}

int op_sdk_pc_sampling_get_config(op_sdk_pc_sampling_config *out)
{
    return op_sdk_sampling_get(&g_service, &g_config, out, sizeof g_config);
}

/* A GPU agent PC sampling can run on (CUPTI: compute capability 7.0 and later). */
static omniprof_status_t check_agent(omniprof_agent_id_t id)
{
    omniprof_agent_v0_t a;
    if (op_sdk_agent_lookup(id, &a)) return OMNIPROF_STATUS_ERROR_AGENT_NOT_FOUND;
    if (a.type != OMNIPROF_AGENT_TYPE_GPU || a.compute_capability_major < 7)
        return OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_query_pc_sampling_agent_configurations(
    omniprof_agent_id_t agent, omniprof_pc_sampling_configuration_cb_t cb, void *user_data)
{
    if (!cb) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    op_sdk_ensure_init();
    omniprof_status_t st = check_agent(agent);
    if (st != OMNIPROF_STATUS_SUCCESS) return st;
    op_backend_load_for_kind(OMNIPROF_BUFFER_TRACING_PC_SAMPLE);
    const op_pc_sampling_provider *p = atomic_load(&g_provider);
    if (!p || !p->query) return OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
    omniprof_pc_sampling_configuration_t configs[8];
    size_t n = p->query(agent, configs, 8);
    if (n == 0) return OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
    return cb(configs, n < 8 ? n : 8, user_data);
}

OMNIPROF_API omniprof_status_t omniprof_configure_pc_sampling_service(omniprof_context_id_t context,
                                                                      omniprof_agent_id_t agent,
                                                                      omniprof_pc_sampling_method_t method,
                                                                      omniprof_pc_sampling_unit_t unit,
                                                                      uint64_t interval, omniprof_buffer_id_t buffer,
                                                                      uint32_t flags)
{
    (void)flags;
    op_sdk_ensure_init();
    omniprof_status_t st = op_sdk_config_context(context, NULL);
    if (st != OMNIPROF_STATUS_SUCCESS) return st;
    if (method <= OMNIPROF_PC_SAMPLING_METHOD_NONE || method >= OMNIPROF_PC_SAMPLING_METHOD_LAST ||
        unit != OMNIPROF_PC_SAMPLING_UNIT_CYCLES || (interval && (interval < 32 || interval > (1ull << 31))))
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    if (!op_buffer_lookup(buffer)) return OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND;
    op_sdk_pc_sampling_config want = {method, unit, interval, agent};
    return op_sdk_sampling_claim(&g_service, &want, context, buffer);
}
