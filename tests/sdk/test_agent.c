/* test_agent.c — src/sdk/agent.c: CPU agents (one per NUMA node with CPUs) cover every
 * configured CPU; statuses for a bad version, a too-small struct and a NULL callback. */
#include <unistd.h>

#include "sdk_test.h"

static omniprof_status_t on_agents(omniprof_agent_version_t v, const void **agents, size_t n, void *data)
{
    CHECK(v == OMNIPROF_AGENT_INFO_VERSION_0);
    uint32_t cpus = 0, ncpu_agents = 0;
    for (size_t i = 0; i < n; i++) {
        const omniprof_agent_v0_t *a = agents[i];
        CHECK(a->size == sizeof *a);
        CHECK(a->id.handle != 0 && a->logical_index == i);
        CHECK(a->name && a->vendor_name);
        if (a->type == OMNIPROF_AGENT_TYPE_CPU) {
            cpus += a->cu_count;
            CHECK(a->type_index == ncpu_agents);
            ncpu_agents++;
        } else {
            CHECK(a->type == OMNIPROF_AGENT_TYPE_GPU && ncpu_agents > 0); /* CPUs come first */
        }
    }
    CHECK(ncpu_agents >= 1);
    CHECK_EQ_U(cpus, (uint64_t)sysconf(_SC_NPROCESSORS_CONF));
    (*(int *)data)++;
    return OMNIPROF_STATUS_SUCCESS;
}

int main(void)
{
    int calls = 0;
    CHECK_ST(omniprof_query_available_agents(OMNIPROF_AGENT_INFO_VERSION_0, on_agents, sizeof(omniprof_agent_v0_t), &calls),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(calls, 1);
    CHECK_ST(omniprof_query_available_agents(OMNIPROF_AGENT_INFO_VERSION_NONE, on_agents, sizeof(omniprof_agent_v0_t), &calls),
             OMNIPROF_STATUS_ERROR_INCOMPATIBLE_ABI);
    CHECK_ST(omniprof_query_available_agents(OMNIPROF_AGENT_INFO_VERSION_LAST, on_agents, sizeof(omniprof_agent_v0_t), &calls),
             OMNIPROF_STATUS_ERROR_INCOMPATIBLE_ABI);
    CHECK_ST(omniprof_query_available_agents(OMNIPROF_AGENT_INFO_VERSION_0, on_agents, 8, &calls),
             OMNIPROF_STATUS_ERROR_INCOMPATIBLE_ABI);
    CHECK_ST(omniprof_query_available_agents(OMNIPROF_AGENT_INFO_VERSION_0, NULL, sizeof(omniprof_agent_v0_t), &calls),
             OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_U(calls, 1);
    /* symbols: without a backend that can symbolize, NOT_AVAILABLE (or a backend answers) */
    omniprof_status_t st = omniprof_query_address_symbols((uint64_t)(uintptr_t)&main, NULL, NULL);
    CHECK(st == OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    TEST_DONE();
}
