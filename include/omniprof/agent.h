/* omniprof/agent.h — the CPUs and GPUs a process can see. */
#ifndef OMNIPROF_AGENT_H
#define OMNIPROF_AGENT_H

#include "omniprof/fwd.h"

OMNIPROF_EXTERN_C_BEGIN

typedef struct omniprof_agent_v0_t {
    uint64_t size;
    omniprof_agent_id_t id;
    uint32_t type;           /* omniprof_agent_type_t */
    uint32_t logical_index;  /* index among all agents */
    uint32_t type_index;     /* index among agents of its type (CUDA ordinal for GPUs) */
    uint32_t node_id;        /* NUMA node for CPUs */
    const char *name;        /* "NVIDIA H100 80GB HBM3", CPU model name */
    const char *vendor_name; /* "NVIDIA", "GenuineIntel" */
    const char *product_name;
    const char *model_name;  /* GPU: chip name (e.g. "GH100"); CPU: model */
    char uuid[48];           /* GPU UUID as nvidia-smi prints it ("GPU-xxxxxxxx-..."), "" for CPUs */
    char pci_bus_id[32];     /* "0000:19:00.0", "" for CPUs */
    uint32_t compute_capability_major;
    uint32_t compute_capability_minor;
    uint32_t cu_count;       /* SMs for GPUs, logical cores for a CPU agent */
    uint32_t simd_per_cu;
    uint64_t memory_bytes;   /* global memory for GPUs */
    uint64_t core_clock_khz;
    uint64_t memory_clock_khz;
    uint32_t memory_bus_width_bits;
    uint32_t l2_cache_bytes;
    uint32_t max_threads_per_block;
    uint32_t warp_size;
    uint32_t max_shared_memory_per_block;
    uint32_t reserved;
    /* Fields below exist when size covers them (added after the first release). GPUs: */
    uint32_t max_threads_per_cu;       /* resident threads per SM */
    uint32_t max_shared_memory_per_cu; /* bytes per SM */
    uint32_t async_engine_count;       /* copy engines */
    uint32_t max_block_dim[3];         /* threads per block, per dimension */
    uint32_t max_grid_dim[3];          /* blocks per grid, per dimension */
} omniprof_agent_v0_t;

typedef enum omniprof_agent_version_t {
    OMNIPROF_AGENT_INFO_VERSION_NONE = 0,
    OMNIPROF_AGENT_INFO_VERSION_0,
    OMNIPROF_AGENT_INFO_VERSION_LAST
} omniprof_agent_version_t;

typedef omniprof_status_t (*omniprof_query_available_agents_cb_t)(omniprof_agent_version_t version,
                                                                  const void **agents, size_t num_agents,
                                                                  void *data);

/**
 * @brief **omniprof_query_available_agents** calls `callback` once with every agent: the CPU
 * agents first (one per NUMA node), then each GPU of every built backend that found one. It
 * initializes the device drivers that are not yet (CUDA: cuInit); a tool that must not (the
 * program may fork before its first CUDA call) uses omniprof_query_ready_agents.
 * @param agent_size: sizeof(omniprof_agent_v0_t) as the caller knows it.
 * @return SUCCESS; ERROR_INVALID_ARGUMENT; ERROR_INCOMPATIBLE_ABI (unknown version or size too small).
 */
OMNIPROF_API omniprof_status_t omniprof_query_available_agents(omniprof_agent_version_t version,
                                                               omniprof_query_available_agents_cb_t callback,
                                                               size_t agent_size, void *data);

/**
 * @brief **omniprof_query_ready_agents** calls `callback` once with the agents known without
 * initializing a device driver: the CPU agents, then the GPUs of each backend whose driver the
 * program has already initialized. It never initializes one itself (CUDA: no cuInit, which a
 * program that forks before its first CUDA call must not have in the parent); a later call may
 * report more agents, at the end of the list, and the agents reported earlier keep their ids and
 * their place. omniprof_query_available_agents initializes the drivers it needs and reports every
 * agent; after it, both report the same list. Parameters and return values are those of
 * omniprof_query_available_agents.
 */
OMNIPROF_API omniprof_status_t omniprof_query_ready_agents(omniprof_agent_version_t version,
                                                           omniprof_query_available_agents_cb_t callback,
                                                           size_t agent_size, void *data);

OMNIPROF_EXTERN_C_END

#endif /* OMNIPROF_AGENT_H */
