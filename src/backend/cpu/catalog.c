/* catalog.c — the CPU backend's catalog as a library call (include/omniprof/cpu.h): its
 * perf_event counters, each probed on the calling thread, and its region-profile components.
 * `omniprof avail` loads this library with RTLD_LOCAL to ask, so the CLI never includes a
 * backend header nor calls perf_event_open itself. The data is cpu_catalog.h's. */
#include <errno.h>
#include <string.h>

#include "backend/cpu/cpu_catalog.h"
#include "backend/cpu/cpu_internal.h"
#include "omniprof/cpu.h"

static const char *why_not(int rc)
{
    switch (-rc) {
    case ENOENT:
    case EOPNOTSUPP: return "not supported here (no PMU or no such event)";
    case EACCES:
    case EPERM: return "not permitted (see /proc/sys/kernel/perf_event_paranoid)";
    case ENOSYS: return "perf_event_open not available";
    default: return strerror(-rc);
    }
}

OMNIPROF_API omniprof_status_t omniprof_cpu_iterate_events(omniprof_cpu_event_cb_t cb, void *data)
{
    if (!cb) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    size_t n = 0;
    const op_cpu_perf_event_desc *known = op_cpu_perf_known(&n);
    for (size_t i = 0; i < n; i++) {
        int rc = op_cpu_perf_probe(&known[i]);
        omniprof_cpu_event_info_t info = {sizeof(info), known[i].name, known[i].description,
                                          known[i].type == PERF_TYPE_HARDWARE, rc == 0, rc == 0 ? "" : why_not(rc)};
        if (cb(&info, data)) break;
    }
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_cpu_iterate_components(omniprof_cpu_component_cb_t cb, void *data)
{
    if (!cb) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    for (size_t i = 0; i < OP_CPU_CATALOG_N_COMPONENTS; i++) {
        const op_cpu_catalog_component *c = &op_cpu_catalog_components[i];
        omniprof_cpu_component_info_t info = {sizeof(info), c->name, c->units, c->description};
        if (cb(&info, data)) break;
    }
    return OMNIPROF_STATUS_SUCCESS;
}
