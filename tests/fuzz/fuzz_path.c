/* fuzz_path.c — libFuzzer harness of the output-path templates (src/common/path_template.c:
 * `-d`/`-o` of `omniprof run`, OMNIPROF_OUTPUT_PATH in the tool).
 *
 * Input: line 1 is the template; the following lines are the program's arguments (argv[1..],
 * reached by %argv% %args% %arg<N>%); OMNIPROF_FUZZ_A and _B hold placeholders that name each
 * other (an expansion that never reaches a fixed point). Each template is expanded into a
 * large buffer and into a small one. Invariants: the result is a C string shorter than the
 * buffer; a failure has a message; the same template expands the same way twice; an expanded
 * value from argv never adds a directory level ('/' is replaced). */
#include "fuzz.h"
#include "common/path_template.h"

static op_path_context g_ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_init();
    op_path_context_init_self(&g_ctx);
    g_ctx.launch_time = 1700000000;
    setenv("OMNIPROF_FUZZ_A", "%pid%/%env{OMNIPROF_FUZZ_B}%", 1);
    setenv("OMNIPROF_FUZZ_B", "x%env{OMNIPROF_FUZZ_A}%%arg1%", 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192) return 0;
    char *text = fuzz_text(data, size);
    char *lines[35]; /* [1..33]: the input's lines, then NULL */
    int n = fuzz_lines(text, lines + 1, 33);
    const char *tmpl = lines[1];
    lines[1] = "/usr/bin/prog"; /* argv[0] */
    lines[n + 1] = NULL;
    op_path_context ctx = g_ctx;
    ctx.argv = lines + 1;
    ctx.argc = n;

    static char big[8192], big2[8192], small[24];
    char err[512], err2[512];
    err[0] = err2[0] = '\0';
    int rc = op_path_expand(tmpl, &ctx, big, sizeof big, err, sizeof err);
    FUZZ_CHECK(rc == 0 || rc == -1, "op_path_expand returned %d", rc);
    if (rc == 0) FUZZ_CHECK(strlen(big) < sizeof big, "result longer than its buffer");
    else FUZZ_CHECK(err[0] != '\0', "a failure without a message");
    int rc2 = op_path_expand(tmpl, &ctx, big2, sizeof big2, err2, sizeof err2);
    FUZZ_CHECK(rc2 == rc && (rc != 0 || strcmp(big, big2) == 0), "two expansions of one template differ");
    if (rc == 0 && strchr(tmpl, '/') == NULL && strstr(tmpl, "cwd") == NULL && strchr(tmpl, '$') == NULL &&
        strstr(tmpl, "env") == NULL && strstr(tmpl, "%q{") == NULL)
        FUZZ_CHECK(strchr(big, '/') == NULL, "'%s' added a directory level: '%s'", tmpl, big);

    int rcs = op_path_expand(tmpl, &ctx, small, sizeof small, err, sizeof err);
    FUZZ_CHECK(rcs == 0 || rcs == -1, "op_path_expand returned %d", rcs);
    if (rcs == 0) FUZZ_CHECK(strlen(small) < sizeof small, "result longer than its buffer");
    (void)op_path_has_process_keys(tmpl);
    free(text);
    return 0;
}
