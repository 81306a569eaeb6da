/* agent.c — the agents (CPUs, then GPUs) a process can see: one CPU agent per NUMA node, read
 * from /proc/cpuinfo and /sys/devices/system/node, then the GPUs of each registered backend
 * (op_backend.query_agents). The list is built once and kept for the process; an agent's handle
 * is its position in it plus one. */
#include "sdk/sdk_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"

#define MAX_AGENTS 64

static omniprof_agent_v0_t g_agents[MAX_AGENTS];
static size_t g_nagents;
static pthread_once_t g_agents_once = PTHREAD_ONCE_INIT;

static void cpuinfo_field(const char *key, char *out, size_t n)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) != 0) continue;
        char *colon = strchr(line, ':');
        if (!colon) continue;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(out, n, "%s", colon);
        break;
    }
    fclose(f);
}

/* Number of CPUs in a cpulist such as "0-3,8,10-11". */
static uint32_t count_cpulist(const char *s)
{
    uint32_t n = 0;
    while (*s && *s != '\n') {
        char *end;
        long a = strtol(s, &end, 10);
        if (end == s) break;
        long b = a;
        if (*end == '-') b = strtol(end + 1, &end, 10);
        if (b >= a) n += (uint32_t)(b - a + 1);
        s = end;
        if (*s == ',') s++;
    }
    return n;
}

static void build_agents(void)
{
    char model[256], vendor[128];
    cpuinfo_field("model name", model, sizeof model);
    cpuinfo_field("vendor_id", vendor, sizeof vendor);
    if (!model[0]) snprintf(model, sizeof model, "CPU");
    if (!vendor[0]) snprintf(vendor, sizeof vendor, "unknown");
    const char *imodel = op_sdk_intern(model), *ivendor = op_sdk_intern(vendor);

    uint32_t ncpu_total = (uint32_t)sysconf(_SC_NPROCESSORS_CONF);
    uint32_t nodes = 0;
    for (uint32_t node = 0; node < 1024 && g_nagents < MAX_AGENTS; node++) {
        char path[128], buf[4096];
        snprintf(path, sizeof path, "/sys/devices/system/node/node%u/cpulist", node);
        FILE *f = fopen(path, "r");
        if (!f) {
            if (node > 64) break;
            continue;
        }
        uint32_t n = 0;
        if (fgets(buf, sizeof buf, f)) n = count_cpulist(buf);
        fclose(f);
        if (n == 0) continue; /* memory-only node */
        omniprof_agent_v0_t *a = &g_agents[g_nagents];
        a->type = OMNIPROF_AGENT_TYPE_CPU;
        a->type_index = nodes++;
        a->node_id = node;
        a->cu_count = n;
        g_nagents++;
    }
    if (g_nagents == 0) {
        g_agents[0].type = OMNIPROF_AGENT_TYPE_CPU;
        g_agents[0].cu_count = ncpu_total ? ncpu_total : 1;
        g_nagents = 1;
    }
    for (size_t i = 0; i < g_nagents; i++) {
        g_agents[i].name = imodel;
        g_agents[i].model_name = imodel;
        g_agents[i].product_name = imodel;
        g_agents[i].vendor_name = ivendor;
        g_agents[i].simd_per_cu = 1;
    }
    for (uint32_t b = 0; b < op_backend_count() && g_nagents < MAX_AGENTS; b++) {
        const op_backend *be = op_backend_at(b);
        if (!be || !be->query_agents) continue;
        size_t room = MAX_AGENTS - g_nagents;
        size_t got = be->query_agents(&g_agents[g_nagents], room);
        if (got > room) got = room;
        for (size_t i = 0; i < got; i++) g_agents[g_nagents + i].type = OMNIPROF_AGENT_TYPE_GPU;
        g_nagents += got;
    }
    for (size_t i = 0; i < g_nagents; i++) {
        g_agents[i].size = sizeof(omniprof_agent_v0_t);
        g_agents[i].id.handle = i + 1;
        g_agents[i].logical_index = (uint32_t)i;
    }
}

OMNIPROF_API omniprof_status_t omniprof_query_available_agents(omniprof_agent_version_t version,
                                                               omniprof_query_available_agents_cb_t callback,
                                                               size_t agent_size, void *data)
{
    if (!callback) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    if (version != OMNIPROF_AGENT_INFO_VERSION_0 || agent_size < offsetof(omniprof_agent_v0_t, uuid))
        return OMNIPROF_STATUS_ERROR_INCOMPATIBLE_ABI;
    pthread_once(&g_agents_once, build_agents);
    const void *ptrs[MAX_AGENTS];
    for (size_t i = 0; i < g_nagents; i++) ptrs[i] = &g_agents[i];
    return callback(version, ptrs, g_nagents, data);
}

int op_sdk_agent_lookup(omniprof_agent_id_t id, omniprof_agent_v0_t *out)
{
    pthread_once(&g_agents_once, build_agents);
    if (id.handle < 1 || id.handle > g_nagents) return -1;
    *out = g_agents[id.handle - 1];
    return 0;
}
