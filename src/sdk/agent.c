/* agent.c — the agents (CPUs, then GPUs) a process can see: one CPU agent per NUMA node, read
 * from /proc/cpuinfo and /sys/devices/system/node, then the GPUs of each registered backend
 * (op_backend.query_agents). An agent's handle is its position in the list plus one.
 *
 * The list only grows: entries below the published count (g_nagents, stored with release after
 * the entries are complete) never change, so readers take no lock. A backend whose driver the
 * program has not initialized yet answers OP_AGENTS_LATER when it may not initialize it (CUDA:
 * cuInit in the parent breaks a program that forks before its first CUDA call), and is asked
 * again by each later query: omniprof_query_ready_agents asks without initializing (its GPUs
 * appear once the program initialized the driver itself), omniprof_query_available_agents and
 * op_sdk_agent_lookup ask with initializing (a tool that wants the GPUs at its start gets them). */
#include "sdk/sdk_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"

#define MAX_AGENTS 64

static omniprof_agent_v0_t g_agents[MAX_AGENTS];
static _Atomic size_t g_nagents; /* published entries */
static pthread_once_t g_agents_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_more_lock = PTHREAD_MUTEX_INITIALIZER; /* appends after the first build */
static _Atomic uint32_t g_answered; /* bit per backend index: its agents are in the list (or it has none) */
_Static_assert(OP_SDK_MAX_BACKENDS < 32, "g_answered has a bit per backend");

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

/* Append the agents of the backends not answered yet; with may_init 0 a backend may defer
 * (OP_AGENTS_LATER). Called with g_more_lock held. */
static void ask_backends(int may_init)
{
    uint32_t nb = op_backend_count();
    for (uint32_t b = 0; b < nb; b++) {
        if (atomic_load_explicit(&g_answered, memory_order_relaxed) & (1u << b)) continue;
        const op_backend *be = op_backend_at(b);
        size_t n = atomic_load_explicit(&g_nagents, memory_order_relaxed), room = MAX_AGENTS - n;
        size_t got = be && be->query_agents && room ? be->query_agents(&g_agents[n], room, may_init) : 0;
        if (got == OP_AGENTS_LATER) continue;
        if (got > room) got = room;
        for (size_t i = n; i < n + got; i++) {
            g_agents[i].type = OMNIPROF_AGENT_TYPE_GPU;
            g_agents[i].size = sizeof(omniprof_agent_v0_t);
            g_agents[i].id.handle = i + 1;
            g_agents[i].logical_index = (uint32_t)i;
        }
        atomic_store_explicit(&g_nagents, n + got, memory_order_release);
        atomic_fetch_or_explicit(&g_answered, 1u << b, memory_order_release);
    }
}

/* Does a registered backend still owe its agents? */
static int agents_owed(void)
{
    uint32_t all = (1u << op_backend_count()) - 1u; /* at most OP_SDK_MAX_BACKENDS < 32 bits */
    return (atomic_load_explicit(&g_answered, memory_order_acquire) & all) != all;
}

static void more_agents(int may_init)
{
    if (!agents_owed()) return;
    pthread_mutex_lock(&g_more_lock);
    ask_backends(may_init);
    pthread_mutex_unlock(&g_more_lock);
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
    size_t n = 0;
    for (uint32_t node = 0; node < 1024 && n < MAX_AGENTS; node++) {
        char path[128], buf[4096];
        snprintf(path, sizeof path, "/sys/devices/system/node/node%u/cpulist", node);
        FILE *f = fopen(path, "r");
        if (!f) {
            if (node > 64) break;
            continue;
        }
        uint32_t c = 0;
        if (fgets(buf, sizeof buf, f)) c = count_cpulist(buf);
        fclose(f);
        if (c == 0) continue; /* memory-only node */
        omniprof_agent_v0_t *a = &g_agents[n];
        a->type = OMNIPROF_AGENT_TYPE_CPU;
        a->type_index = nodes++;
        a->node_id = node;
        a->cu_count = c;
        n++;
    }
    if (n == 0) {
        g_agents[0].type = OMNIPROF_AGENT_TYPE_CPU;
        g_agents[0].cu_count = ncpu_total ? ncpu_total : 1;
        n = 1;
    }
    for (size_t i = 0; i < n; i++) {
        g_agents[i].name = imodel;
        g_agents[i].model_name = imodel;
        g_agents[i].product_name = imodel;
        g_agents[i].vendor_name = ivendor;
        g_agents[i].simd_per_cu = 1;
        g_agents[i].size = sizeof(omniprof_agent_v0_t);
        g_agents[i].id.handle = i + 1;
        g_agents[i].logical_index = (uint32_t)i;
    }
    atomic_store_explicit(&g_nagents, n, memory_order_release);
    more_agents(0);
}

static omniprof_status_t report_agents(omniprof_agent_version_t version, omniprof_query_available_agents_cb_t callback,
                                       size_t agent_size, void *data, int may_init)
{
    if (!callback) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    if (version != OMNIPROF_AGENT_INFO_VERSION_0 || agent_size < offsetof(omniprof_agent_v0_t, uuid))
        return OMNIPROF_STATUS_ERROR_INCOMPATIBLE_ABI;
    pthread_once(&g_agents_once, build_agents);
    more_agents(may_init);
    const void *ptrs[MAX_AGENTS];
    size_t n = atomic_load_explicit(&g_nagents, memory_order_acquire);
    for (size_t i = 0; i < n; i++) ptrs[i] = &g_agents[i];
    return callback(version, ptrs, n, data);
}

OMNIPROF_API omniprof_status_t omniprof_query_available_agents(omniprof_agent_version_t version,
                                                               omniprof_query_available_agents_cb_t callback,
                                                               size_t agent_size, void *data)
{
    return report_agents(version, callback, agent_size, data, 1);
}

OMNIPROF_API omniprof_status_t omniprof_query_ready_agents(omniprof_agent_version_t version,
                                                           omniprof_query_available_agents_cb_t callback,
                                                           size_t agent_size, void *data)
{
    return report_agents(version, callback, agent_size, data, 0);
}

/* In a forked child only the forking thread exists: a query another thread was making at the
 * fork leaves the lock taken. What it appended but had not published stays unpublished, and its
 * backend stays unanswered, so the child asks that backend again. */
void op_agents_at_fork_child(void) { pthread_mutex_init(&g_more_lock, NULL); }

int op_sdk_agent_lookup(omniprof_agent_id_t id, omniprof_agent_v0_t *out)
{
    pthread_once(&g_agents_once, build_agents);
    if (id.handle > atomic_load_explicit(&g_nagents, memory_order_acquire)) more_agents(1);
    if (id.handle < 1 || id.handle > atomic_load_explicit(&g_nagents, memory_order_acquire)) return -1;
    *out = g_agents[id.handle - 1];
    return 0;
}
