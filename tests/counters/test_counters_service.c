/* test_counters_service.c — the dispatch counting service of libomniprof-sdk.so end to end
 * without a GPU: a stand-in provider (registered like the CUDA one) plays the launches; the real
 * SDK delivers the records. Checks: configuration statuses; only selected dispatches are
 * counted; one DISPATCH_HEADER then VALUE records in request order, correlation id at offset
 * 16, derived metrics evaluated from the base values (constants from the chip block), the
 * header's end = start + GPU duration; callback mode; and the OMNIPROF_PMC path with the
 * kernel include regex and iteration range. */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "omniprof/counters.h"
#include "omniprof/omniprof.h"
#include "sdk/counters/provider.h"

/* ---- stand-in provider for chip FAKE1: metrics a.sum, b.sum, dur.sum -------------------- */

static int fake_chips(int (*cb)(const char *, void *), void *data)
{
    cb("FAKE1", data);
    return 0;
}
static int fake_describe(const char *chip, const char *name, op_counter_base_info *info)
{
    if (strcmp(chip, "FAKE1") || (strcmp(name, "a.sum") && strcmp(name, "b.sum") && strcmp(name, "dur.sum")))
        return -1;
    memset(info, 0, sizeof *info);
    info->name = name;
    info->type = OMNIPROF_COUNTER_TYPE_COUNTER;
    info->unit = "widget";
    return 0;
}
static int fake_plan(const char *chip, const char *const *names, size_t n, size_t *passes, char *err, size_t len)
{
    (void)chip, (void)names, (void)err, (void)len;
    *passes = n; /* one pass per metric: easy to check */
    return 0;
}
static int g_started;
static omniprof_status_t fake_start(void)
{
    g_started++;
    return OMNIPROF_STATUS_SUCCESS;
}
static const op_counters_provider k_fake = {
    .size = sizeof(op_counters_provider),
    .name = "fake",
    .iterate_chips = fake_chips,
    .describe = fake_describe,
    .plan_passes = fake_plan,
    .duration_metric = "dur.sum",
    .dispatch_start = fake_start,
};

/* ---- record sink -------------------------------------------------------------------------- */

typedef struct rec {
    uint32_t category, kind;
    union {
        omniprof_counter_dispatch_header_record_t h;
        omniprof_counter_value_record_t v;
    } u;
} rec;

static rec g_recs[256];
static size_t g_nrecs;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void sink(omniprof_context_id_t ctx, omniprof_buffer_id_t b, omniprof_record_header_t **h, size_t n, void *d,
                 uint64_t drops)
{
    (void)ctx, (void)b, (void)d, (void)drops;
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < n && g_nrecs < 256; i++) {
        rec *r = &g_recs[g_nrecs++];
        r->category = h[i]->category;
        r->kind = h[i]->kind;
        uint64_t size = *(const uint64_t *)h[i]->payload;
        memcpy(&r->u, h[i]->payload, size < sizeof r->u ? size : sizeof r->u);
    }
    pthread_mutex_unlock(&g_lock);
}

static omniprof_context_id_t g_ctx, g_ctx2;
static omniprof_buffer_id_t g_buf, g_buf2;
static omniprof_counter_config_id_t g_cfg;
static omniprof_status_t g_st_again, g_st_badctx, g_st_badbuf, g_st_cbnull, g_st_pmc;
static char g_pmc_err[512];

static void select_cb(const omniprof_dispatch_counting_service_data_t *d, omniprof_counter_config_id_t *cfg,
                      omniprof_user_data_t *ud, void *data)
{
    (void)data;
    if (strstr(d->kernel_name, "count_me")) {
        *cfg = g_cfg;
        ud->value = 0x5eed;
    }
}

static const char k_xml[] = "<omniprof-metrics>"
                            "<FAKE1><constant name=\"SM_COUNT\" value=\"4\"/></FAKE1>"
                            "<global><metric name=\"D\" expr=\"a.sum * 2 + b.sum / dur.sum\"/>"
                            "<metric name=\"PER_SM\" expr=\"a.sum / SM_COUNT\"/></global>"
                            "</omniprof-metrics>";

static int tool_init(omniprof_client_finalize_t fini, void *data)
{
    (void)fini, (void)data;
    char err[512];
    if (omniprof_load_counter_definition(k_xml, sizeof k_xml - 1, OMNIPROF_COUNTER_FLAG_APPEND_DEFINITION, err,
                                         sizeof err)) {
        fprintf(stderr, "load: %s\n", err);
        return 1;
    }
    omniprof_create_context(&g_ctx);
    omniprof_create_buffer(g_ctx, 65536, 0, OMNIPROF_BUFFER_POLICY_LOSSLESS, sink, NULL, &g_buf);
    const char *names[] = {"a.sum", "D", "PER_SM"};
    omniprof_counter_id_t ids[3];
    for (int i = 0; i < 3; i++)
        if (omniprof_find_counter("FAKE1", names[i], &ids[i])) {
            fprintf(stderr, "find %s: %s\n", names[i], omniprof_get_counter_error_string());
            return 1;
        }
    if (omniprof_create_counter_config_for_chip("FAKE1", ids, 3, &g_cfg)) {
        fprintf(stderr, "config: %s\n", omniprof_get_counter_error_string());
        return 1;
    }
    g_st_cbnull = omniprof_configure_buffer_dispatch_counting_service(g_ctx, g_buf, NULL, NULL);
    g_st_badctx = omniprof_configure_buffer_dispatch_counting_service((omniprof_context_id_t){12345}, g_buf, select_cb, NULL);
    g_st_badbuf = omniprof_configure_buffer_dispatch_counting_service(g_ctx, (omniprof_buffer_id_t){999}, select_cb, NULL);
    if (omniprof_configure_buffer_dispatch_counting_service(g_ctx, g_buf, select_cb, NULL))
        return 1;
    g_st_again = omniprof_configure_buffer_dispatch_counting_service(g_ctx, g_buf, select_cb, NULL);
    /* a second context counts through OMNIPROF_PMC (started later, alone) */
    omniprof_create_context(&g_ctx2);
    omniprof_create_buffer(g_ctx2, 65536, 0, OMNIPROF_BUFFER_POLICY_LOSSLESS, sink, NULL, &g_buf2);
    g_st_pmc = omniprof_configure_pmc_from_settings(g_ctx2, g_buf2, g_pmc_err, sizeof g_pmc_err);
    return 0;
}

static omniprof_tool_configure_result_t g_result = {sizeof(omniprof_tool_configure_result_t), tool_init, NULL, NULL};

static omniprof_tool_configure_result_t *configure(uint32_t v, const char *rv, uint32_t prio, omniprof_client_id_t *id)
{
    (void)v, (void)rv, (void)prio;
    id->name = "counters-test";
    return &g_result;
}

static op_counters_launch launch(const char *kernel, uint64_t corr)
{
    op_counters_launch l;
    memset(&l, 0, sizeof l);
    l.correlation_id.internal = corr;
    l.dispatch_id = corr + 1000;
    l.kernel_id = 77;
    l.kernel_name = kernel;
    l.chip = "FAKE1";
    l.grid_size = (omniprof_dim3_t){4, 2, 1};
    l.block_size = (omniprof_dim3_t){256, 1, 1};
    l.launch_timestamp = 1000000;
    return l;
}

/* base values by name for a plan */
static void complete(const op_counters_plan *p, void *token, double a, double b, double dur)
{
    double v[8];
    for (size_t i = 0; i < p->num_base; i++)
        v[i] = !strcmp(p->base_names[i], "a.sum") ? a : !strcmp(p->base_names[i], "b.sum") ? b : dur;
    op_sdk_counters_dispatch_complete(token, v, p->num_passes);
}

int main(void)
{
    /* CTest sets OMNIPROF_INIT_AT_LOAD=0 (this test configures itself), OMNIPROF_PMC="a.sum,D",
     * OMNIPROF_KERNEL_INCLUDE_REGEX="^count", OMNIPROF_KERNEL_ITERATION_RANGE="[2, [4-5]]" */
    op_sdk_counters_register_provider(&k_fake);
    CHECK_EQ_INT(omniprof_force_configure(configure), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(omniprof_initialize(), OMNIPROF_STATUS_SUCCESS);
    CHECK(g_cfg.handle != 0);
    CHECK_EQ_INT(g_st_cbnull, OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(g_st_badctx, OMNIPROF_STATUS_ERROR_CONTEXT_NOT_FOUND);
    CHECK_EQ_INT(g_st_badbuf, OMNIPROF_STATUS_ERROR_BUFFER_NOT_FOUND);
    CHECK_EQ_INT(g_st_again, OMNIPROF_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED);
    if (g_st_pmc)
        fprintf(stderr, "pmc: %s\n", g_pmc_err);
    CHECK_EQ_INT(g_st_pmc, OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(g_started, 1); /* the provider was started once */
    CHECK_EQ_INT(omniprof_configure_buffer_dispatch_counting_service(g_ctx, g_buf, select_cb, NULL),
                 OMNIPROF_STATUS_ERROR_CONFIGURATION_LOCKED);
    size_t passes = 0, nbase = 0;
    CHECK_EQ_INT(omniprof_query_counter_config_passes(g_cfg, &passes, &nbase), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(nbase, 3);
    CHECK_EQ_INT(passes, 3);

    /* nothing is active before the context starts */
    CHECK_EQ_INT(op_sdk_counters_dispatch_active(), 0);
    void *tok = NULL;
    op_counters_launch l = launch("count_me_kernel", 42);
    CHECK(op_sdk_counters_dispatch_select(&l, &tok) == NULL && tok == NULL);
    CHECK_EQ_INT(omniprof_start_context(g_ctx), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(op_sdk_counters_dispatch_active(), 1);
    /* a kernel the callback does not select */
    op_counters_launch skip = launch("skip_me", 41);
    CHECK(op_sdk_counters_dispatch_select(&skip, &tok) == NULL);
    /* a kernel on another chip than the config's */
    op_counters_launch other = launch("count_me_too", 40);
    other.chip = "OTHER";
    CHECK(op_sdk_counters_dispatch_select(&other, &tok) == NULL);
    /* counted: a.sum = 10, b.sum = 6, dur = 3 ns */
    const op_counters_plan *p = op_sdk_counters_dispatch_select(&l, &tok);
    CHECK(p && tok);
    if (p) {
        CHECK_EQ_INT(p->num_base, 3);
        CHECK(p->duration_index >= 0 && !strcmp(p->base_names[p->duration_index], "dur.sum"));
        complete(p, tok, 10, 6, 3);
    }
    /* a cancelled one leaves no record */
    p = op_sdk_counters_dispatch_select(&l, &tok);
    CHECK(p != NULL);
    op_sdk_counters_dispatch_cancel(tok);
    /* destroying the config handle while a dispatch holds it is safe */
    l.correlation_id.internal = 43;
    p = op_sdk_counters_dispatch_select(&l, &tok);
    CHECK(p != NULL);
    omniprof_counter_config_id_t keep = g_cfg;
    if (p)
        complete(p, tok, 1, 0, 0);
    /* a provider that does not know the dispatch id: numbered by the service (bit 62) */
    op_counters_launch z = launch("count_me_zero", 44);
    z.dispatch_id = 0;
    p = op_sdk_counters_dispatch_select(&z, &tok);
    CHECK(p != NULL);
    if (p)
        complete(p, tok, 1, 1, 1);
    CHECK_EQ_INT(omniprof_flush_buffer(g_buf), OMNIPROF_STATUS_SUCCESS);

    CHECK_EQ_INT(g_nrecs, 12);
    if (g_nrecs == 12) {
        uint64_t zid = g_recs[8].u.h.dispatch_id;
        CHECK(zid >> 62 == 1);
        CHECK_EQ_INT(g_recs[9].u.v.dispatch_id, zid);
        CHECK_EQ_INT(g_recs[11].u.v.dispatch_id, zid);
    }
    if (g_nrecs >= 4) {
        const omniprof_counter_dispatch_header_record_t *h = &g_recs[0].u.h;
        CHECK_EQ_INT(g_recs[0].category, OMNIPROF_RECORD_CATEGORY_COUNTERS);
        CHECK_EQ_INT(g_recs[0].kind, OMNIPROF_COUNTER_RECORD_DISPATCH_HEADER);
        CHECK_EQ_INT(h->size, sizeof *h);
        CHECK_EQ_INT(offsetof(omniprof_counter_dispatch_header_record_t, correlation_id), 16);
        CHECK_EQ_INT(offsetof(omniprof_counter_value_record_t, correlation_id), 16);
        CHECK_EQ_INT(h->correlation_id.internal, 42);
        CHECK_EQ_INT(h->dispatch_id, 1042);
        CHECK_EQ_INT(h->kernel_id, 77);
        CHECK(!strcmp(h->kernel_name, "count_me_kernel"));
        CHECK_EQ_INT(h->grid_size.x, 4);
        CHECK_EQ_INT(h->block_size.x, 256);
        CHECK_EQ_INT(h->start_timestamp, 1000000);
        CHECK_EQ_INT(h->end_timestamp, 1000003);
        CHECK_EQ_INT(h->num_values, 3);
        CHECK_EQ_INT(h->num_passes, 3);
        CHECK_EQ_INT(h->config_id.handle, keep.handle);
        CHECK_EQ_INT(h->user_data.value, 0x5eed);
        const char *want[3] = {"a.sum", "D", "PER_SM"};
        const double val[3] = {10, 22, 2.5};
        for (int i = 0; i < 3; i++) {
            const omniprof_counter_value_record_t *v = &g_recs[1 + i].u.v;
            CHECK_EQ_INT(g_recs[1 + i].kind, OMNIPROF_COUNTER_RECORD_VALUE);
            CHECK_EQ_INT(v->operation, OMNIPROF_COUNTER_OPERATION_DISPATCH);
            CHECK(!strcmp(v->counter_name, want[i]));
            CHECK_CLOSE(v->value, val[i]);
            CHECK_EQ_INT(v->dispatch_id, 1042);
            CHECK_EQ_INT(v->correlation_id.internal, 42);
            omniprof_counter_info_v0_t info = {.size = sizeof info};
            CHECK_EQ_INT(omniprof_query_counter_info(v->counter_id, OMNIPROF_COUNTER_INFO_VERSION_0, &info), 0);
            CHECK(!strcmp(info.name, want[i]));
        }
        CHECK_EQ_INT(g_recs[4].u.h.correlation_id.internal, 43);
        CHECK_CLOSE(g_recs[6].u.v.value, 2); /* D = 1*2 + 0/0 (x/0 reads 0) */
    }

    /* the OMNIPROF_PMC context: include regex ^count, iterations 2, 4, 5 of each kernel */
    CHECK_EQ_INT(omniprof_stop_context(g_ctx), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(omniprof_start_context(g_ctx2), OMNIPROF_STATUS_SUCCESS);
    g_nrecs = 0;
    int counted = 0;
    for (int i = 1; i <= 6; i++) {
        op_counters_launch a = launch("count_a", 100 + i), b = launch("other_b", 200 + i);
        p = op_sdk_counters_dispatch_select(&a, &tok);
        if (p) {
            counted++;
            complete(p, tok, i, 1, 1);
        }
        CHECK(op_sdk_counters_dispatch_select(&b, &tok) == NULL);
    }
    CHECK_EQ_INT(counted, 3);
    CHECK_EQ_INT(omniprof_flush_buffer(g_buf2), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_INT(g_nrecs, 9); /* 3 x (header + a.sum + D) */
    if (g_nrecs == 9) {
        CHECK_EQ_INT(g_recs[0].u.h.correlation_id.internal, 102);
        CHECK_EQ_INT(g_recs[3].u.h.correlation_id.internal, 104);
        CHECK_EQ_INT(g_recs[6].u.h.correlation_id.internal, 105);
        CHECK_CLOSE(g_recs[1].u.v.value, 2);     /* a.sum of iteration 2 */
        CHECK_CLOSE(g_recs[8].u.v.value, 11);    /* D = 5*2 + 1/1 */
    }
    omniprof_stop_context(g_ctx2);
    return CHECK_DONE();
}
