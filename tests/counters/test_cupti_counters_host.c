/* test_cupti_counters_host.c — the offline half of the NVIDIA provider
 * (src/backend/cuda/cupti_counters_host.c), linked directly: the message and status of every
 * CUPTI profiling error a user can meet (no permission, counters held by another profiler, another
 * tool owning CUPTI, MIG, vGPU, WSL, confidential computing, unknown chip or metric), metric
 * validation (a bare base name is not collectable; dotted-prefix names are), and pass planning for
 * GH100, including that a refused name does not poison later plans. */
#include <string.h>

#include "backend/cuda/cupti_counters.h"
#include "check.h"

static int count_cb(const char *suffix, void *data)
{
    (void)suffix;
    (*(int *)data)++;
    return 0;
}

int main(void)
{
    char msg[512];
    CHECK_EQ_INT(op_cupti_counters_status(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, msg, sizeof msg),
                 OMNIPROF_STATUS_ERROR_PERMISSION_DENIED);
    CHECK_STR_CONTAINS(msg, "NVreg_RestrictProfilingToAdminUsers=1");
    CHECK_STR_CONTAINS(msg, "ERR_NVGPUCTRPERM");
    CHECK_STR_CONTAINS(msg, "(CUPTI error 35)");
    CHECK_EQ_INT(op_cupti_counters_status(CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES, msg, sizeof msg),
                 OMNIPROF_STATUS_ERROR_PERMISSION_DENIED);
    CHECK_EQ_INT(op_cupti_counters_status(CUPTI_ERROR_HARDWARE_BUSY, msg, sizeof msg), OMNIPROF_STATUS_ERROR_BACKEND_BUSY);
    CHECK_STR_CONTAINS(msg, "held by another profiler");
    CHECK_STR_CONTAINS(msg, "(CUPTI error 26)");
    CHECK_EQ_INT(op_cupti_counters_status(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, msg, sizeof msg),
                 OMNIPROF_STATUS_ERROR_BACKEND_BUSY);
    CHECK_STR_CONTAINS(msg, "owns CUPTI in this process");
    CHECK_EQ_INT(op_cupti_counters_status(CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED, msg, sizeof msg), OMNIPROF_STATUS_ERROR_NOT_AVAILABLE);
    CHECK_STR_CONTAINS(msg, "MIG");
    CHECK_EQ_INT(op_cupti_counters_status(CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED, msg, sizeof msg), OMNIPROF_STATUS_ERROR_NOT_AVAILABLE);
    CHECK_STR_CONTAINS(msg, "virtual GPU");
    CHECK_EQ_INT(op_cupti_counters_status(CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED, msg, sizeof msg), OMNIPROF_STATUS_ERROR_NOT_AVAILABLE);
    CHECK_STR_CONTAINS(msg, "WSL");
    CHECK_EQ_INT(op_cupti_counters_status(CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED, msg, sizeof msg), OMNIPROF_STATUS_ERROR_NOT_AVAILABLE);
    CHECK_STR_CONTAINS(msg, "confidential computing");
    CHECK_EQ_INT(op_cupti_counters_status(CUPTI_ERROR_INVALID_CHIP_NAME, msg, sizeof msg),
                 OMNIPROF_STATUS_ERROR_METRIC_NOT_VALID_FOR_AGENT);
    CHECK_EQ_INT(op_cupti_counters_status(CUPTI_ERROR_INVALID_METRIC_NAME, msg, sizeof msg),
                 OMNIPROF_STATUS_ERROR_COUNTER_NOT_FOUND);
    CHECK_EQ_INT(op_cupti_counters_status((CUptiResult)999, msg, sizeof msg), OMNIPROF_STATUS_ERROR);
    CHECK_STR_CONTAINS(msg, "CUPTI error 999");
    CHECK_EQ_INT(op_cupti_counters_status(CUPTI_SUCCESS, msg, sizeof msg), OMNIPROF_STATUS_SUCCESS);
    CHECK(msg[0] == '\0');
    CHECK(op_cupti_result_text((CUptiResult)123456) != NULL);

    /* validation */
    op_counter_base_info info;
    CHECK_EQ_INT(op_cupti_host_describe("GH100", "dram__bytes_read.sum", &info), 0);
    CHECK(info.type == OMNIPROF_COUNTER_TYPE_COUNTER && !strcmp(info.unit, "byte") && !strcmp(info.block, "dram"));
    CHECK_EQ_INT(op_cupti_host_describe("GH100", "dram__bytes_read.sum.per_second", &info), 0);
    CHECK_EQ_INT(op_cupti_host_describe("GH100", "sm__throughput.avg.pct_of_peak_sustained_elapsed", &info), 0);
    CHECK(info.type == OMNIPROF_COUNTER_TYPE_THROUGHPUT);
    CHECK_EQ_INT(op_cupti_host_describe("GH100", "TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed", &info), 0);
    CHECK_EQ_INT(op_cupti_host_describe("GH100", "lts__t_sector_hit_rate.pct", &info), 0);
    CHECK(info.type == OMNIPROF_COUNTER_TYPE_RATIO);
    CHECK_EQ_INT(op_cupti_host_describe("GH100", "sm__cycles_elapsed", &info), -1);      /* bare base name */
    CHECK_EQ_INT(op_cupti_host_describe("GH100", "sm__cycles_elapsed.summ", &info), -1);
    CHECK_EQ_INT(op_cupti_host_describe("GH100", "nothing__here.sum", &info), -1);
    CHECK_EQ_INT(op_cupti_host_describe("GX999", "dram__bytes_read.sum", &info), -1);
    int n = 0;
    CHECK_EQ_INT(op_cupti_host_iterate_submetrics("GH100", "dram__bytes_read", OMNIPROF_COUNTER_TYPE_COUNTER, count_cb, &n), 0);
    CHECK_EQ_INT(n, 44);
    n = 0;
    CHECK_EQ_INT(op_cupti_host_iterate_submetrics("GH100", "sm__throughput", OMNIPROF_COUNTER_TYPE_THROUGHPUT, count_cb, &n), 0);
    CHECK_EQ_INT(n, 8);

    /* pass planning (docs/cuda.md; measured offline on GH100) */
    char err[512];
    size_t passes = 0;
    const char *one[] = {"gpu__time_duration.sum", "dram__bytes_read.sum", "smsp__inst_executed.sum",
                         "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
                         "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"};
    for (int i = 0; i < 5; i++) { /* each alone: 1 pass */
        CHECK_EQ_INT(op_cupti_host_plan_passes("GH100", &one[i], 1, &passes, err, sizeof err), 0);
        CHECK_EQ_INT(passes, 1);
    }
    CHECK_EQ_INT(op_cupti_host_plan_passes("GH100", one, 5, &passes, err, sizeof err), 0);
    CHECK_EQ_INT(passes, 2); /* together they need 2 (CUDA 13.0) */
    const char *eight[] = {"sm__throughput.avg.pct_of_peak_sustained_elapsed"};
    CHECK_EQ_INT(op_cupti_host_plan_passes("GH100", eight, 1, &passes, err, sizeof err), 0);
    CHECK_EQ_INT(passes, 8);
    const char *five[] = {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"};
    CHECK_EQ_INT(op_cupti_host_plan_passes("GH100", five, 1, &passes, err, sizeof err), 0);
    CHECK_EQ_INT(passes, 5);
    const char *bad[] = {"dram__bytes_read.sum", "sm__cycles_elapsed"};
    CHECK_EQ_INT(op_cupti_host_plan_passes("GH100", bad, 2, &passes, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "'sm__cycles_elapsed' is not a collectable metric of GH100");
    CHECK_EQ_INT(op_cupti_host_plan_passes("GH100", one, 2, &passes, err, sizeof err), 0); /* not poisoned */
    CHECK_EQ_INT(passes, 1);
    CHECK_EQ_INT(op_cupti_host_plan_passes("GX999", one, 1, &passes, err, sizeof err), -1);
    return CHECK_DONE();
}
