/* test_marker_fill.c — op_sdk_marker_record_fill (src/sdk/marker.c), the marker-record fill that
 * the user API's markers and the CUDA backend's NVTX markers share: header and span fields, the
 * message inline and NUL-terminated, cut to cap - 1 bytes ending in "..." when longer. */
#include "sdk_test.h"

int main(void)
{
    union {
        omniprof_buffer_tracing_marker_record_t r;
        unsigned char b[sizeof(omniprof_buffer_tracing_marker_record_t) + 16];
    } u;
    omniprof_buffer_tracing_marker_record_t *r = &u.r;
    memset(&u, 0xab, sizeof u);
    op_sdk_marker_span span = {.start = 10, .end = 20, .tid = 7, .end_tid = 8, .range_id = 3, .nesting = 2};
    op_sdk_marker_record_fill(r, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, 5, &span, OMNIPROF_MARKER_SOURCE_NVTX,
                              "hello world", 8);
    CHECK(strcmp(r->message, "hell...") == 0);
    CHECK_EQ_U(r->message_length, 7);
    CHECK_EQ_U(r->size, sizeof *r + 8);
    CHECK_EQ_U(r->kind, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API);
    CHECK_EQ_U(r->operation, 5);
    CHECK(r->start_timestamp == 10 && r->end_timestamp == 20 && r->thread_id == 7 && r->end_thread_id == 8);
    CHECK(r->range_id == 3 && r->nesting_level == 2 && r->source == OMNIPROF_MARKER_SOURCE_NVTX);
    CHECK(r->domain_id == 0 && r->correlation_id.internal == 0);
    op_sdk_marker_record_fill(r, OMNIPROF_BUFFER_TRACING_MARKER_API, 1, &span, OMNIPROF_MARKER_SOURCE_USER_API,
                              "abcdefg", 8);
    CHECK(strcmp(r->message, "abcdefg") == 0);
    CHECK_EQ_U(r->message_length, 7);
    op_sdk_marker_record_fill(r, OMNIPROF_BUFFER_TRACING_MARKER_API, 1, &span, OMNIPROF_MARKER_SOURCE_USER_API, NULL, 8);
    CHECK(r->message[0] == '\0' && r->message_length == 0 && r->size == sizeof *r + 1);
    return CHECK_DONE();
}
