/* fuzz_window.c — libFuzzer harness of time windows: OMNIPROF_TRACE_PERIODS (the CPU
 * backend's collection windows, src/backend/cpu/time_window.c) and the window options of
 * `omniprof convert|summary` (--start/--end in ns or %, --start-marker/--end-marker,
 * --inclusive: src/output/cli.c and window.c) over a real database.
 *
 * Input: the whole text is parsed as TRACE_PERIODS; its lines are the values of --start,
 * --end, --start-marker, --end-marker and --inclusive (an empty line leaves that option out)
 * of `omniprof summary` over the database FUZZ_WINDOW_DB (a committed corpus file of
 * fuzz_db, which holds regions and marks). Invariants: a period list is refused with a message
 * naming OMNIPROF_TRACE_PERIODS or parsed into delays and durations within [0 s, a year];
 * the command ends with 0 (ok) or 2 (bad window, one message) — never 1 (a failure) on a
 * database that is fine. */
#include "fuzz.h"
#include "backend/cpu/cpu_internal.h"
#include "output/output.h"


#ifndef FUZZ_WINDOW_DB
#error "FUZZ_WINDOW_DB: the database the window options are applied to"
#endif

/* The two backend symbols time_window.c uses (tests/cpu/test_time_window.c does the same). */
_Atomic int g_op_cpu_stopping;
int op_sdk_create_thread(pthread_t *t, void *(*fn)(void *), void *arg, omniprof_runtime_library_t lib,
                         const char *name)
{
    (void)t, (void)fn, (void)arg, (void)lib, (void)name;
    return -1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_init();
    int null = open("/dev/null", O_WRONLY);
    if (null < 0 || dup2(null, 1) < 0) abort(); /* the summaries */
    close(null);
    return 0;
}

static void check_periods(const char *text)
{
    op_cpu_period p[8];
    char err[512] = "";
    int n = op_cpu_window_parse(text, p, 8, err, sizeof err);
    if (n < 0) {
        FUZZ_CHECK(strstr(err, "OMNIPROF_TRACE_PERIODS"), "refused without naming the setting: '%s'", err);
        return;
    }
    FUZZ_CHECK(n <= 8, "%d periods for a room of 8", n);
    for (int i = 0; i < n; i++)
        FUZZ_CHECK(p[i].delay >= 0 && p[i].delay <= 31536000 && p[i].duration >= 0 && p[i].duration <= 31536000,
                   "'%s': period %d has delay %g, duration %g", text, i, p[i].delay, p[i].duration);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) return 0;
    char *text = fuzz_text(data, size);
    check_periods(text);

    char *f[5] = {"", "", "", "", ""};
    fuzz_lines(text, f, 5);
    static const char *const opt[5] = {"--start", "--end", "--start-marker", "--end-marker", "--inclusive"};
    char *argv[16] = {"summary", "-i", FUZZ_WINDOW_DB, "-u", "usec"};
    int argc = 5;
    for (int i = 0; i < 5; i++)
        if (f[i][0]) {
            argv[argc++] = (char *)opt[i];
            argv[argc++] = f[i];
        }
    argv[argc] = NULL;
    char msg[1024] = "";
    int rc = op_output_cli_err(argc, argv, msg, sizeof msg);
    FUZZ_CHECK(rc == 0 || rc == 2, "summary with a window ended with %d: %s", rc, msg);
    if (rc == 2) FUZZ_CHECK(msg[0], "a refusal without a message");
    free(text);
    return 0;
}
