/* cupti_counters.h — the NVIDIA hardware-counter provider, shared by its two files. Not API.
 *
 *   cupti_counters_host.c  offline: chips, catalog, validation, pass planning, error texts
 *                          (CUPTI Profiler Host API; no GPU needed)
 *   cupti_counters.c       runtime: the provider descriptor, dispatch counting with the Range
 *                          Profiler (AutoRange + KernelReplay, one range per kernel) through the
 *                          CUDA backend's launch hook, device counting (UserRange + UserReplay)
 *
 * Lock order: the dispatch lock (cupti_counters.c) > g_host_lock (cupti_counters_host.c). */
#ifndef OMNIPROF_BACKEND_CUDA_CUPTI_COUNTERS_H
#define OMNIPROF_BACKEND_CUDA_CUPTI_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include <cupti.h>
#include <cupti_profiler_host.h>

#include "sdk/counters/provider.h"

/* CUPTI's text for rc (never NULL). */
const char *op_cupti_result_text(CUptiResult rc);
/* Map a CUPTI error of the profiling APIs to a status and a message a user can act on
 * (permission, counters held by another profiler, MIG/vGPU/WSL, ...). */
omniprof_status_t op_cupti_counters_status(CUptiResult rc, char *msg, size_t len);

int op_cupti_host_iterate_chips(int (*cb)(const char *chip, void *data), void *data);
int op_cupti_host_iterate_base(const char *chip, int (*cb)(const op_counter_base_info *info, void *data), void *data);
int op_cupti_host_iterate_submetrics(const char *chip, const char *base, uint32_t type,
                                     int (*cb)(const char *suffix, void *data), void *data);
int op_cupti_host_describe(const char *chip, const char *name, op_counter_base_info *info);
int op_cupti_host_plan_passes(const char *chip, const char *const *names, size_t n, size_t *passes, char *err,
                              size_t errlen);
/* Config image for names on chip for profiler `type` (RANGE_PROFILER or PM_SAMPLING; avail: the
 * device's counter availability image or NULL). keep_host: receives the host object (for
 * evaluation) instead of destroying it. */
int op_cupti_host_config_image(CUpti_ProfilerType type, const char *chip, const uint8_t *avail,
                               const char *const *names, size_t n, CUpti_Profiler_Host_Object **keep_host,
                               uint8_t **image, size_t *image_size, size_t *passes, char *err, size_t errlen);
/* PM sampling's catalog (CUPTI_PROFILER_TYPE_PM_SAMPLING): base metrics, one full name, and the
 * passes of a set (bad: the unknown names, space-separated; -1 with err when a name is unknown
 * or CUPTI refuses the set). */
int op_cupti_host_pm_iterate_base(const char *chip, int (*cb)(const op_counter_base_info *info, void *data), void *data);
int op_cupti_host_pm_describe(const char *chip, const char *name, op_counter_base_info *info);
int op_cupti_host_pm_plan(const char *chip, const char *const *names, size_t n, size_t *passes, char *bad, size_t badlen,
                          char *err, size_t errlen);
/* Values of range `range` of a counter-data image. 0, or the CUPTI error. */
int op_cupti_host_evaluate(CUpti_Profiler_Host_Object *h, const uint8_t *counter_data, size_t size, size_t range,
                           const char *const *names, size_t n, double *values);
CUpti_Profiler_Host_Object *op_cupti_host_create(CUpti_ProfilerType type, const char *chip, const uint8_t *avail);
void op_cupti_host_destroy(CUpti_Profiler_Host_Object *h);

/* The provider descriptor (cupti_counters.c). */
extern const op_counters_provider op_cupti_counters_provider;

#endif /* OMNIPROF_BACKEND_CUDA_CUPTI_COUNTERS_H */
