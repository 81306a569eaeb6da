/* test_status.c — src/sdk/status.c: status names and strings at their boundaries (0, LAST-1,
 * LAST, INT_MIN, INT_MAX, -1), every status named, version and timestamp calls. */
#include <limits.h>
#include <time.h>
#include <unistd.h>

#include "sdk_test.h"

int main(void)
{
    int probes[] = {0, OMNIPROF_STATUS_LAST - 1, OMNIPROF_STATUS_LAST, INT_MIN, INT_MAX, -1};
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        const char *n = omniprof_get_status_name((omniprof_status_t)probes[i]);
        const char *s = omniprof_get_status_string((omniprof_status_t)probes[i]);
        CHECK(n != NULL && n[0]);
        CHECK(s != NULL && s[0]);
    }
    CHECK(strcmp(omniprof_get_status_name(OMNIPROF_STATUS_SUCCESS), "OMNIPROF_STATUS_SUCCESS") == 0);
    CHECK(strcmp(omniprof_get_status_string(OMNIPROF_STATUS_SUCCESS), "success") == 0);
    CHECK(strcmp(omniprof_get_status_name(OMNIPROF_STATUS_ERROR_IO), "OMNIPROF_STATUS_ERROR_IO") == 0);
    CHECK(strcmp(omniprof_get_status_name(OMNIPROF_STATUS_LAST), "OMNIPROF_STATUS_UNKNOWN") == 0);
    CHECK(strcmp(omniprof_get_status_name((omniprof_status_t)INT_MIN), "OMNIPROF_STATUS_UNKNOWN") == 0);
    CHECK(strcmp(omniprof_get_status_string((omniprof_status_t)INT_MAX), "unknown status") == 0);
    /* every status has its own name and a sentence */
    for (int i = 0; i < OMNIPROF_STATUS_LAST; i++) {
        const char *n = omniprof_get_status_name((omniprof_status_t)i);
        CHECK(strncmp(n, "OMNIPROF_STATUS_", 16) == 0 && strcmp(n, "OMNIPROF_STATUS_UNKNOWN") != 0);
        CHECK(strcmp(omniprof_get_status_string((omniprof_status_t)i), "unknown status") != 0);
        for (int j = 0; j < i; j++) CHECK(strcmp(n, omniprof_get_status_name((omniprof_status_t)j)) != 0);
    }

    uint32_t ma = 9, mi = 9, pa = 9;
    CHECK_ST(omniprof_get_version(&ma, &mi, &pa), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(ma * 10000 + mi * 100 + pa, OMNIPROF_VERSION_NUMBER);
    CHECK_ST(omniprof_get_version(NULL, NULL, NULL), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(omniprof_get_version_number(), OMNIPROF_VERSION_NUMBER);

    omniprof_timestamp_t a, b;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t before = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    CHECK_ST(omniprof_get_timestamp(&a), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(omniprof_get_timestamp(&b), OMNIPROF_STATUS_SUCCESS);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t after = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    CHECK(before <= a && a <= b && b <= after); /* CLOCK_MONOTONIC, not BOOTTIME or REALTIME */
    CHECK_ST(omniprof_get_timestamp(NULL), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);

    omniprof_thread_id_t tid = 0;
    CHECK_ST(omniprof_get_thread_id(&tid), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(tid, (uint64_t)getpid()); /* main thread: tid == pid */
    CHECK_ST(omniprof_get_thread_id(NULL), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    TEST_DONE();
}
