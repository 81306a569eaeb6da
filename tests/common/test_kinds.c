/* test_kinds.c — the tables generated from include/omniprof/kinds.def (src/common/kinds.c):
 * enum values stay what they were (ABI), names, which kinds carry a correlation id, payload
 * layouts, string members, callback -> buffer kinds, intercept table names. */
#include <string.h>

#include "check.h"
#include "common/kinds.h"

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
    return CHECK_DONE();
}
