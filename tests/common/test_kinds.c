/* test_kinds.c — the tables generated from include/omniprof/kinds.def (src/common/kinds.c):
 * enum values stay what they were (ABI), names, which kinds carry a correlation id, payload
 * layouts, string members, callback -> buffer kinds, intercept table names, the switches (which
 * settings turn a kind on, into which buffer) and what a multi-kind flag expands to. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/kinds.h"
#include "common/settings.h"

int main(void)
{
    /* ABI: the values released before the list existed never change. */
    CHECK(OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API == 1 && OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH == 5);
    CHECK(OMNIPROF_BUFFER_TRACING_CORRELATION_ID_RETIREMENT == 10 && OMNIPROF_BUFFER_TRACING_THREAD == 16);
    CHECK(OMNIPROF_BUFFER_TRACING_LAST >= 17);
    CHECK(OMNIPROF_CALLBACK_TRACING_FUNCTION_WRAPPER == 8 && OMNIPROF_COUNTER_RECORD_VALUE == 2);
    CHECK(OMNIPROF_INTERCEPT_TABLE_USER_API == 1 && OMNIPROF_INTERCEPT_TABLE_CUDA_DRIVER == 2);
    CHECK(OMNIPROF_INTERCEPT_TABLE_LAST >= 4);

    /* every buffer kind has a row; names as enumerators */
    for (uint32_t k = 1; k < OMNIPROF_BUFFER_TRACING_LAST; k++) {
        const op_kind_info *i = op_kind_info_get(OMNIPROF_RECORD_CATEGORY_TRACING, k);
        CHECK(i && i->name && i->payload_size >= 16 && op_buffer_kind_name(k) == i->name);
        CHECK(i && i->layout <= OP_KIND_LAYOUT_ARGS);
    }
    CHECK(op_buffer_kind_name(0) == NULL && op_buffer_kind_name(OMNIPROF_BUFFER_TRACING_LAST) == NULL);
    CHECK(strcmp(op_buffer_kind_name(OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH), "KERNEL_DISPATCH") == 0);
    CHECK(strcmp(op_callback_kind_name(OMNIPROF_CALLBACK_TRACING_MEMORY_COPY), "MEMORY_COPY") == 0);
    CHECK(op_kind_info_get(OMNIPROF_RECORD_CATEGORY_NONE, 5) == NULL);
    CHECK(op_kind_info_get(OMNIPROF_RECORD_CATEGORY_COUNTERS, OMNIPROF_COUNTER_RECORD_LAST) == NULL);

    /* correlation ids: of the first release's kinds, exactly the API, marker and GPU activity
     * kinds; and counter records */
    uint32_t corr[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 15};
    uint32_t n_corr = 0;
    for (uint32_t k = 1; k <= OMNIPROF_BUFFER_TRACING_THREAD; k++) /* the kinds of the first release */
        n_corr += op_kind_has_correlation(OMNIPROF_RECORD_CATEGORY_TRACING, k);
    CHECK(n_corr == sizeof corr / sizeof corr[0]);
    for (size_t i = 0; i < sizeof corr / sizeof corr[0]; i++)
        CHECK(op_kind_has_correlation(OMNIPROF_RECORD_CATEGORY_TRACING, corr[i]));
    CHECK(op_kind_has_correlation(OMNIPROF_RECORD_CATEGORY_SAMPLING, OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH));
    CHECK(op_kind_has_correlation(OMNIPROF_RECORD_CATEGORY_COUNTERS, OMNIPROF_COUNTER_RECORD_DISPATCH_HEADER));
    CHECK(!op_kind_has_correlation(OMNIPROF_RECORD_CATEGORY_TRACING, OMNIPROF_BUFFER_TRACING_CPU_SAMPLE));

    /* layouts and string members */
    CHECK(op_kind_info_get(1, OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER)->layout == OP_KIND_LAYOUT_ARGS);
    CHECK(op_kind_info_get(1, OMNIPROF_BUFFER_TRACING_MARKER_API)->layout == OP_KIND_LAYOUT_HEAD);
    CHECK(op_kind_info_get(1, OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH)->payload_size ==
          sizeof(omniprof_buffer_tracing_kernel_dispatch_record_t));
    uint32_t offs[OP_KIND_MAX_STRINGS];
    size_t n = op_kind_string_fields(OMNIPROF_RECORD_CATEGORY_TRACING, OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH,
                                     sizeof(omniprof_buffer_tracing_kernel_dispatch_record_t), offs);
    CHECK(n == 2 && offs[0] == offsetof(omniprof_buffer_tracing_kernel_dispatch_record_t, kernel_name) &&
          offs[1] == offsetof(omniprof_buffer_tracing_kernel_dispatch_record_t, kernel_name_demangled));
    /* a shorter (older) payload lists only the members it has */
    n = op_kind_string_fields(OMNIPROF_RECORD_CATEGORY_TRACING, OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH,
                              offsetof(omniprof_buffer_tracing_kernel_dispatch_record_t, kernel_name_demangled), offs);
    CHECK(n == 1);
    CHECK(op_kind_string_fields(OMNIPROF_RECORD_CATEGORY_COUNTERS, OMNIPROF_COUNTER_RECORD_VALUE, 4096, offs) == 1 &&
          offs[0] == offsetof(omniprof_counter_value_record_t, counter_name));
    CHECK(op_kind_string_fields(OMNIPROF_RECORD_CATEGORY_TRACING, OMNIPROF_BUFFER_TRACING_THREAD, 4096, offs) == 0);
    CHECK(op_kind_string_fields(OMNIPROF_RECORD_CATEGORY_TRACING, 999, 4096, offs) == 0);

    /* callback kinds and intercept tables */
    CHECK(op_callback_kind_to_buffer_kind(OMNIPROF_CALLBACK_TRACING_CODE_OBJECT) == OMNIPROF_BUFFER_TRACING_CODE_OBJECT);
    CHECK(op_callback_kind_to_buffer_kind(OMNIPROF_CALLBACK_TRACING_LAST) == OMNIPROF_BUFFER_TRACING_NONE);
    CHECK(op_callback_kind_payload(OMNIPROF_CALLBACK_TRACING_CUDA_DRIVER_API) == OP_CALLBACK_PAYLOAD_API);
    CHECK(op_callback_kind_payload(OMNIPROF_CALLBACK_TRACING_KERNEL_DISPATCH) == OP_CALLBACK_PAYLOAD_RECORD);
    CHECK(op_callback_kind_payload(0) == OP_CALLBACK_PAYLOAD_NONE);
    CHECK(strcmp(op_intercept_table_name(OMNIPROF_INTERCEPT_TABLE_CUDA_DRIVER), "CUDA_DRIVER") == 0);
    CHECK(op_intercept_table_from_registration_name("user") == OMNIPROF_INTERCEPT_TABLE_USER_API);
    CHECK(op_intercept_table_from_registration_name("nope") == OMNIPROF_INTERCEPT_TABLE_NONE);
    CHECK(strcmp(op_intercept_table_registration_name(OMNIPROF_INTERCEPT_TABLE_USER_API), "user") == 0);

    /* switches (BUFFER, SWITCH): one row per buffer and counter kind, in kinds.def order; a kind
     * has a buffer exactly when a setting turns it on */
    size_t n_sw = 0;
    const op_kind_switch *sw = op_kind_switches(&n_sw);
    CHECK(n_sw == OMNIPROF_BUFFER_TRACING_LAST - 1 + OMNIPROF_COUNTER_RECORD_LAST - 1);
    for (size_t i = 0; i < n_sw; i++) {
        CHECK(sw[i].on && sw[i].also && sw[i].setup && sw[i].name);
        CHECK((sw[i].buffer != OP_KIND_BUFFER_NONE) == (sw[i].on[0] >= 0));
        CHECK(sw[i].also[0] < 0 || sw[i].on[0] >= 0); /* an _IF alone turns nothing on */
        const op_kind_info *ki = op_kind_info_get(sw[i].category, sw[i].kind);
        CHECK(ki && !strcmp(ki->name, sw[i].name));
    }
    CHECK(sw[0].kind == OMNIPROF_BUFFER_TRACING_CUDA_RUNTIME_API && sw[0].buffer == OP_KIND_BUFFER_API);
    CHECK(sw[OMNIPROF_BUFFER_TRACING_MARKER_API - 1].buffer == OP_KIND_BUFFER_NONE); /* per call: never */
    const op_kind_switch *region = &sw[OMNIPROF_BUFFER_TRACING_REGION_PROFILE - 1];
    CHECK(region->on[0] == OP_SET_SAMPLE && region->on[1] == OP_SET_PROCESS_SAMPLING && region->on[2] < 0);
    CHECK(region->also[0] == OP_SET_REGION_PROFILE && region->also[1] < 0 && !region->setup[0]);
    CHECK(!strcmp(sw[OMNIPROF_BUFFER_TRACING_PC_SAMPLE - 1].setup, "pc_sampling"));
    CHECK(sw[n_sw - 1].category == OMNIPROF_RECORD_CATEGORY_COUNTERS && !strcmp(sw[n_sw - 1].setup, "pmc"));
    /* a flag that turns several kinds on expands from the rows */
    const char *names[8];
    CHECK(op_setting_kinds(OP_SET_KERNEL_TRACE, names, 8) == 3);
    CHECK(!strcmp(names[0], "KERNEL_DISPATCH") && !strcmp(names[1], "CODE_OBJECT") && !strcmp(names[2], "KERNEL_SYMBOL"));
    CHECK(op_setting_kinds(OP_SET_MPI_TRACE, names, 1) == 2 && !strcmp(names[0], "MPI_API"));
    CHECK(op_setting_kinds(OP_SET_OUTPUT_PATH, names, 8) == 0);
    CHECK(op_setting_kinds(OP_SET_REGION_PROFILE, names, 8) == 0); /* an _IF, not a switch */
    CHECK(!strcmp(op_kind_buffer_name(OP_KIND_BUFFER_GPU), "gpu") && op_kind_buffer_name(OP_KIND_BUFFER_NONE) == NULL);
    /* on under the settings: a BOOL true, a LIST not empty, and the _IF */
    setenv("OMNIPROF_KERNEL_TRACE", "true", 1);
    setenv("OMNIPROF_SAMPLE", "cputime", 1);
    setenv("OMNIPROF_REGION_PROFILE", "false", 1);
    op_settings_reset();
    op_settings_load();
    CHECK(op_kind_switch_on(&sw[OMNIPROF_BUFFER_TRACING_KERNEL_SYMBOL - 1]));
    CHECK(op_kind_switch_on(&sw[OMNIPROF_BUFFER_TRACING_THREAD - 1]));
    CHECK(!op_kind_switch_on(region));
    CHECK(!op_kind_switch_on(&sw[OMNIPROF_BUFFER_TRACING_MEMORY_COPY - 1]));
    CHECK(!op_kind_switch_on(&sw[OMNIPROF_BUFFER_TRACING_MARKER_API - 1]));
    setenv("OMNIPROF_REGION_PROFILE", "true", 1);
    op_settings_reset();
    op_settings_load();
    CHECK(op_kind_switch_on(region));
    return CHECK_DONE();
}
