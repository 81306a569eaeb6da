/* test_finalize.c — finalization at exit (registration.c, buffer.c), each case in a child
 * process so that exit() really runs:
 *   hang:        a buffer callback never returns; exit() still finishes within
 *                OMNIPROF_FINALIZE_TIMEOUT_MS (+ slack), tools' finalize runs, exit status kept;
 *   exit_in_cb:  exit(3) from inside a buffer callback: no deadlock, status 3, finalize runs;
 *   flush_in_fini: every record is delivered before the tool's finalize, and a flush from
 *                finalize (during finalization) succeeds. */
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sdk_test.h"

static const char *g_mode = "";
static omniprof_context_id_t g_ctx;
static omniprof_buffer_id_t g_buf;
static _Atomic uint64_t g_got;
static _Atomic int g_in_cb;

static void cb(omniprof_context_id_t c, omniprof_buffer_id_t b, omniprof_record_header_t **h, size_t n, void *d,
               uint64_t drops)
{
    (void)c; (void)b; (void)h; (void)d; (void)drops;
    atomic_fetch_add(&g_got, n);
    atomic_store(&g_in_cb, 1);
    if (strcmp(g_mode, "hang") == 0)
        for (;;) pause();
    if (strcmp(g_mode, "exit_in_cb") == 0) exit(3);
}

static int init(omniprof_client_finalize_t f, void *d)
{
    (void)f; (void)d;
    size_t wm = strcmp(g_mode, "flush_in_fini") == 0 ? 65536 : 0;
    omniprof_create_context(&g_ctx);
    omniprof_create_buffer(g_ctx, 65536, wm, OMNIPROF_BUFFER_POLICY_LOSSLESS, cb, NULL, &g_buf);
    omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_MARKER_RANGE_API, NULL, 0, g_buf);
    omniprof_start_context(g_ctx);
    return 0;
}

static void fini(void *d)
{
    (void)d;
    if (strcmp(g_mode, "flush_in_fini") == 0) {
        printf("fini got=%llu", (unsigned long long)atomic_load(&g_got));
        printf(" flush=%s", omniprof_get_status_name(omniprof_flush_buffer(g_buf)));
        int f = 0;
        omniprof_is_finalized(&f);
        printf(" finalized=%d\n", f);
    } else {
        printf("fini\n");
    }
    fflush(stdout);
}

omniprof_tool_configure_result_t *omniprof_configure(uint32_t v, const char *rv, uint32_t p, omniprof_client_id_t *id)
{
    (void)v; (void)rv; (void)p; (void)id;
    static omniprof_tool_configure_result_t r = {sizeof r, init, fini, NULL};
    return &r;
}

static int child(const char *mode)
{
    g_mode = mode;
    omniprof_initialize();
    if (strcmp(mode, "flush_in_fini") == 0) {
        for (uint64_t i = 0; i < 500; i++) test_emit(i, 7);
        return 0; /* atexit delivers the 500 records, then calls fini */
    }
    test_emit(0, 7);
    for (int i = 0; i < 5000 && !atomic_load(&g_in_cb); i++) sleep_ms(1);
    if (strcmp(mode, "hang") == 0) return 5;
    sleep_ms(5000); /* exit_in_cb: the callback exits */
    return 9;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void run(const char *self, const char *mode, int want_status, const char *want_out, double max_s)
{
    int fds[2];
    CHECK(pipe(fds) == 0);
    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        setenv("OMNIPROF_FINALIZE_TIMEOUT_MS", "300", 1);
        execl(self, self, mode, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char out[256] = {0};
    size_t n = 0;
    ssize_t r;
    while (n < sizeof out - 1 && (r = read(fds[0], out + n, sizeof out - 1 - n)) > 0) n += (size_t)r;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    double dt = now() - t0;
    printf("%s: status %d, %.2f s, output '%s'\n", mode, WIFEXITED(status) ? WEXITSTATUS(status) : -1, dt, out);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == want_status);
    CHECK(strcmp(out, want_out) == 0);
    CHECK(dt < max_s);
}

int main(int argc, char **argv)
{
    if (argc > 1) return child(argv[1]);
    run(argv[0], "hang", 5, "fini\n", 3.0);
    run(argv[0], "exit_in_cb", 3, "fini\n", 3.0);
    run(argv[0], "flush_in_fini", 0, "fini got=500 flush=OMNIPROF_STATUS_SUCCESS finalized=-1\n", 10.0);
    TEST_DONE();
}
