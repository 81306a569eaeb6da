/* test_counters_api.c — the public counters API of libomniprof-sdk.so (include/omniprof/counters.h)
 * with the NVIDIA provider loaded from libomniprof-backend-cuda.so, offline (CUPTI's Profiler
 * Host API needs no GPU: docs/cuda.md): chips, GH100's catalog, name lookup and the closest
 * matches of unknown names, counter info (ABI checks included), pass planning for GH100 (1 pass,
 * 8 passes, a mix), derived metrics expanded into base counters, configs and their handles,
 * run-time definitions and their errors. Exits 77 (skip) when the build has no CUDA backend. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "omniprof/counters.h"
#include "omniprof/omniprof.h"

static omniprof_status_t chip_cb(const char *chip, void *data)
{
    int *n = data;
    n[0]++;
    if (!strcmp(chip, "GH100"))
        n[1] = 1;
    return OMNIPROF_STATUS_SUCCESS;
}

typedef struct counts {
    size_t type[OMNIPROF_COUNTER_TYPE_LAST];
    int saw_dram, saw_dram_gbps, saw_sm_count;
    size_t stop_after;
} counts;

static omniprof_status_t count_cb(const omniprof_counter_info_v0_t *i, void *data)
{
    counts *c = data;
    if (i->type < OMNIPROF_COUNTER_TYPE_LAST)
        c->type[i->type]++;
    if (!strcmp(i->name, "dram__bytes_read") && i->id.handle == 0 && !strcmp(i->block, "dram") &&
        !strcmp(i->unit, "byte") && strstr(i->description, "DRAM"))
        c->saw_dram = 1;
    if (!strcmp(i->name, "DRAM_GBPS") && i->is_derived && i->id.handle)
        c->saw_dram_gbps = 1;
    if (!strcmp(i->name, "SM_COUNT") && i->is_constant)
        c->saw_sm_count = 1;
    if (c->stop_after && --c->stop_after == 0)
        return OMNIPROF_STATUS_ERROR; /* stop early */
    return OMNIPROF_STATUS_SUCCESS;
}

static size_t passes_of(const char *const *names, size_t n, size_t *nbase)
{
    omniprof_counter_id_t ids[32];
    for (size_t i = 0; i < n; i++)
        if (omniprof_find_counter("GH100", names[i], &ids[i]) != OMNIPROF_STATUS_SUCCESS) {
            fprintf(stderr, "find %s: %s\n", names[i], omniprof_get_counter_error_string());
            return 0;
        }
    omniprof_counter_config_id_t cfg = {0};
    if (omniprof_create_counter_config_for_chip("GH100", ids, n, &cfg) != OMNIPROF_STATUS_SUCCESS) {
        fprintf(stderr, "config: %s\n", omniprof_get_counter_error_string());
        return 0;
    }
    size_t p = 0;
    CHECK_EQ_INT(omniprof_query_counter_config_passes(cfg, &p, nbase), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(omniprof_destroy_counter_config(cfg), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(omniprof_query_counter_config_passes(cfg, &p, NULL), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    return p;
}

int main(void)
{
    int chips[2] = {0, 0};
    omniprof_status_t st = omniprof_iterate_chips(chip_cb, chips);
    if (st == OMNIPROF_STATUS_ERROR_NOT_AVAILABLE) {
        printf("SKIP: no hardware-counter provider (libomniprof-backend-cuda.so not built or CUPTI missing)\n");
        return 77;
    }
    CHECK_EQ_INT(st, OMNIPROF_STATUS_SUCCESS);
    CHECK(chips[0] >= 20); /* 30 with CUDA 13.0 */
    CHECK_EQ_INT(chips[1], 1);

    /* catalog of GH100 (CUDA 13.0: 3389 counters, 205 ratios, 56 throughputs) */
    counts c;
    memset(&c, 0, sizeof c);
    CHECK_EQ_INT(omniprof_iterate_chip_counters("GH100", 0, count_cb, &c), OMNIPROF_STATUS_SUCCESS);
    CHECK(c.type[OMNIPROF_COUNTER_TYPE_COUNTER] > 3000);
    CHECK(c.type[OMNIPROF_COUNTER_TYPE_RATIO] > 100);
    CHECK(c.type[OMNIPROF_COUNTER_TYPE_THROUGHPUT] > 40);
    CHECK_EQ_INT(c.type[OMNIPROF_COUNTER_TYPE_DERIVED], 21); /* every derived metric of metrics.xml */
    CHECK(c.saw_dram && c.saw_dram_gbps && c.saw_sm_count);
    memset(&c, 0, sizeof c);
    CHECK_EQ_INT(omniprof_iterate_chip_counters("GH100", OMNIPROF_COUNTER_ITERATE_DERIVED, count_cb, &c),
                 OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(c.type[OMNIPROF_COUNTER_TYPE_COUNTER], 0);
    CHECK_EQ_INT(c.type[OMNIPROF_COUNTER_TYPE_DERIVED], 21);
    memset(&c, 0, sizeof c);
    c.stop_after = 5;
    CHECK_EQ_INT(omniprof_iterate_chip_counters("GH100", OMNIPROF_COUNTER_ITERATE_BASE, count_cb, &c),
                 OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(c.type[OMNIPROF_COUNTER_TYPE_COUNTER], 5);
    memset(&c, 0, sizeof c);
    CHECK_EQ_INT(omniprof_iterate_chip_counters("GX999", 0, count_cb, &c),
                 OMNIPROF_STATUS_ERROR_METRIC_NOT_VALID_FOR_AGENT);
    CHECK_EQ_INT(omniprof_iterate_chip_counters("GH100", 0, NULL, NULL), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);

    /* lookups: XML base counter, a catalog metric not in the XML, derived, constant */
    omniprof_counter_id_t id, id2;
    CHECK_EQ_INT(omniprof_find_counter("GH100", "dram__bytes_read.sum", &id), OMNIPROF_STATUS_SUCCESS);
    omniprof_counter_info_v0_t info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    CHECK_EQ_INT(omniprof_query_counter_info(id, OMNIPROF_COUNTER_INFO_VERSION_0, &info), OMNIPROF_STATUS_SUCCESS);
    CHECK(!strcmp(info.name, "dram__bytes_read.sum") && !strcmp(info.chip, "GH100") && !info.is_derived &&
          info.type == OMNIPROF_COUNTER_TYPE_COUNTER && !strcmp(info.unit, "byte"));
    CHECK_EQ_INT(omniprof_find_counter("GH100", "lts__t_sectors_srcunit_tex_op_read.sum", &id2), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(omniprof_query_counter_info(id2, OMNIPROF_COUNTER_INFO_VERSION_0, &info), OMNIPROF_STATUS_SUCCESS);
    CHECK(!strcmp(info.block, "lts") && info.type == OMNIPROF_COUNTER_TYPE_COUNTER);
    CHECK_EQ_INT(omniprof_find_counter("GH100", "lts__t_sectors_srcunit_tex_op_read.sum", &id), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(id.handle, id2.handle); /* one id per (chip, name) */
    CHECK_EQ_INT(omniprof_find_counter("GH100", "DRAM_GBPS", &id), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(omniprof_query_counter_info(id, OMNIPROF_COUNTER_INFO_VERSION_0, &info), OMNIPROF_STATUS_SUCCESS);
    CHECK(info.is_derived && !strcmp(info.expression, "DRAM_BYTES / gpu__time_duration.sum") && !strcmp(info.chip, ""));
    /* a smaller caller struct gets a prefix */
    omniprof_counter_info_v0_t small;
    memset(&small, 0xab, sizeof small);
    small.size = 24;
    CHECK_EQ_INT(omniprof_query_counter_info(id, OMNIPROF_COUNTER_INFO_VERSION_0, &small), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(small.size, 24);
    CHECK_EQ_INT(small.id.handle, id.handle);
    CHECK(((const unsigned char *)&small)[24] == 0xab); /* beyond 24 bytes: untouched */
    memset(&info, 0, sizeof info);
    info.size = 8;
    CHECK_EQ_INT(omniprof_query_counter_info(id, OMNIPROF_COUNTER_INFO_VERSION_0, &info), OMNIPROF_STATUS_ERROR_INCOMPATIBLE_ABI);
    info.size = sizeof info;
    CHECK_EQ_INT(omniprof_query_counter_info(id, OMNIPROF_COUNTER_INFO_VERSION_LAST, &info), OMNIPROF_STATUS_ERROR_INCOMPATIBLE_ABI);
    CHECK_EQ_INT(omniprof_query_counter_info((omniprof_counter_id_t){999999}, OMNIPROF_COUNTER_INFO_VERSION_0, &info),
                 OMNIPROF_STATUS_ERROR_COUNTER_NOT_FOUND);
    CHECK_EQ_INT(omniprof_query_counter_info(id, OMNIPROF_COUNTER_INFO_VERSION_0, NULL), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);

    /* unknown names: closest matches by edit distance */
    CHECK_EQ_INT(omniprof_find_counter("GH100", "dram__bytes_red.sum", &id), OMNIPROF_STATUS_ERROR_COUNTER_NOT_FOUND);
    CHECK_STR_CONTAINS(omniprof_get_counter_error_string(),
                       "unknown counter or metric 'dram__bytes_red.sum' for GH100; closest: dram__bytes_read.sum");
    CHECK_EQ_INT(omniprof_find_counter("GH100", "sm__cycles_elapsed", &id), OMNIPROF_STATUS_ERROR_COUNTER_NOT_FOUND);
    CHECK_STR_CONTAINS(omniprof_get_counter_error_string(), "closest: sm__cycles_elapsed.");
    CHECK_EQ_INT(omniprof_find_counter("GH100", "dram__bytes_read.summ", &id), OMNIPROF_STATUS_ERROR_COUNTER_NOT_FOUND);
    CHECK_STR_CONTAINS(omniprof_get_counter_error_string(), "closest: dram__bytes_read.sum");
    CHECK_EQ_INT(omniprof_find_counter("GH100", "DRAM_GBSP", &id), OMNIPROF_STATUS_ERROR_COUNTER_NOT_FOUND);
    CHECK_STR_CONTAINS(omniprof_get_counter_error_string(), "closest: DRAM_GBPS");
    const char *best[5];
    size_t n = 0;
    CHECK_EQ_INT(omniprof_suggest_counters("GH100", "gpu__time_durration.sum", best, 5, &n), OMNIPROF_STATUS_SUCCESS);
    CHECK(n >= 1 && !strcmp(best[0], "gpu__time_duration.sum"));
    CHECK_EQ_INT(omniprof_suggest_counters("GH100", "x", NULL, 0, &n), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(n, 0);
    CHECK_EQ_INT(omniprof_find_counter("GX999", "dram__bytes_read.sum", &id), OMNIPROF_STATUS_ERROR_METRIC_NOT_VALID_FOR_AGENT);
    CHECK_STR_CONTAINS(omniprof_get_counter_error_string(), "unknown chip 'GX999'");
    CHECK_EQ_INT(omniprof_find_counter("GH100", NULL, &id), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    /* no GPU here: no default chip; global names still resolve */
    CHECK_EQ_INT(omniprof_find_counter(NULL, "dram__bytes_read.sum", &id), OMNIPROF_STATUS_ERROR_NOT_AVAILABLE);
    CHECK_STR_CONTAINS(omniprof_get_counter_error_string(), "no GPU chip is known yet");
    CHECK_EQ_INT(omniprof_find_counter(NULL, "DRAM_GBPS", &id), OMNIPROF_STATUS_SUCCESS);

    /* pass planning for GH100 (docs/cuda.md: plain counters 1 pass, sm__throughput 8) */
    size_t nbase = 0;
    const char *one[] = {"dram__bytes_read.sum", "sm__cycles_elapsed.max"};
    CHECK_EQ_INT(passes_of(one, 2, &nbase), 1);
    CHECK_EQ_INT(nbase, 3); /* + gpu__time_duration.sum */
    const char *eight[] = {"sm__throughput.avg.pct_of_peak_sustained_elapsed"};
    CHECK_EQ_INT(passes_of(eight, 1, &nbase), 8);
    const char *derived[] = {"DRAM_GBPS", "FP32_GFLOPS", "KERNEL_DURATION_US"};
    size_t p = passes_of(derived, 3, &nbase);
    CHECK(p >= 1 && p <= 3);
    CHECK_EQ_INT(nbase, 6); /* dram read+write, gpu time, ffma+fadd+fmul */
    const char *consts[] = {"DRAM_PCT_OF_PEAK"}; /* needs MEM_CLOCK_HZ etc.: GH100's offline values */
    CHECK_EQ_INT(passes_of(consts, 1, &nbase), 1);
    const char *onlyconst[] = {"SM_COUNT"};
    CHECK_EQ_INT(passes_of(onlyconst, 1, &nbase), 1);
    CHECK_EQ_INT(nbase, 1); /* only the duration */

    /* configs: errors */
    omniprof_counter_config_id_t cfg = {0};
    CHECK_EQ_INT(omniprof_find_counter("AD102", "DRAM_PCT_OF_PEAK", &id), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(omniprof_create_counter_config_for_chip("AD102", &id, 1, &cfg), OMNIPROF_STATUS_ERROR_NOT_AVAILABLE);
    CHECK_STR_CONTAINS(omniprof_get_counter_error_string(), "constant 'MEM_CLOCK_HZ' has no value for AD102");
    CHECK_EQ_INT(omniprof_find_counter("GH100", "dram__bytes_read.sum", &id), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(omniprof_create_counter_config_for_chip("AD102", &id, 1, &cfg),
                 OMNIPROF_STATUS_ERROR_METRIC_NOT_VALID_FOR_AGENT);
    CHECK_STR_CONTAINS(omniprof_get_counter_error_string(), "belongs to GH100, not AD102");
    CHECK_EQ_INT(omniprof_create_counter_config_for_chip("GH100", &id, 0, &cfg), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(omniprof_create_counter_config_for_chip("GH100", (omniprof_counter_id_t[]){{424242}}, 1, &cfg),
                 OMNIPROF_STATUS_ERROR_COUNTER_NOT_FOUND);
    CHECK_EQ_INT(omniprof_destroy_counter_config((omniprof_counter_config_id_t){0}), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(omniprof_destroy_counter_config((omniprof_counter_config_id_t){77777}), OMNIPROF_STATUS_SUCCESS);

    /* run-time derived metrics, and errors pointing at the unknown input */
    char err[1024];
    omniprof_counter_id_t rt;
    CHECK_EQ_INT(omniprof_create_counter("RT_BW", "DRAM_BYTES / (gpu__time_duration.sum / 1e9)", "bytes/s", &rt, err,
                                         sizeof err),
                 OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(omniprof_create_counter_config_for_chip("GH100", &rt, 1, &cfg), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(omniprof_query_counter_config_passes(cfg, &p, &nbase), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(nbase, 3);
    omniprof_destroy_counter_config(cfg);
    CHECK_EQ_INT(omniprof_create_counter("RT_BAD", "DRAM_BYTES / (", NULL, &rt, err, sizeof err), OMNIPROF_STATUS_ERROR_PARSE);
    CHECK_STR_CONTAINS(err, "metric 'RT_BAD': bad expression: expression ends");
    CHECK_STR_CONTAINS(err, "\n    DRAM_BYTES / (\n                  ^");
    CHECK_EQ_INT(omniprof_create_counter("RT_TYPO", "dram__bytes_raed.sum * 2", NULL, &rt, err, sizeof err),
                 OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(omniprof_create_counter_config_for_chip("GH100", &rt, 1, &cfg), OMNIPROF_STATUS_ERROR_COUNTER_NOT_FOUND);
    CHECK_STR_CONTAINS(omniprof_get_counter_error_string(),
                       "metric 'RT_TYPO' (omniprof_create_counter): unknown counter or metric 'dram__bytes_raed.sum' "
                       "for GH100; closest: dram__bytes_read.sum");
    CHECK_STR_CONTAINS(omniprof_get_counter_error_string(), "\n    dram__bytes_raed.sum * 2\n    ^");
    /* XML from memory */
    const char *xml = "<omniprof-metrics><global><metric name=\"X2\" expr=\"RT_BW * 2\"/></global></omniprof-metrics>";
    CHECK_EQ_INT(omniprof_load_counter_definition(xml, strlen(xml), OMNIPROF_COUNTER_FLAG_APPEND_DEFINITION, err, sizeof err),
                 OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(omniprof_find_counter("GH100", "X2", &id), OMNIPROF_STATUS_SUCCESS);
    const char *bad = "<omniprof-metrics><global><metric name=\"X3\" expr=\"2 ** 3\"/></global></omniprof-metrics>";
    CHECK_EQ_INT(omniprof_load_counter_definition(bad, strlen(bad), OMNIPROF_COUNTER_FLAG_APPEND_DEFINITION, err, sizeof err),
                 OMNIPROF_STATUS_ERROR_PARSE);
    CHECK_STR_CONTAINS(err, "metric 'X3': bad expression: unexpected '*' where a number, name or '(' was expected at column 4");
    CHECK_EQ_INT(omniprof_load_counter_definition(NULL, 0, 0, err, sizeof err), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    return CHECK_DONE();
}
