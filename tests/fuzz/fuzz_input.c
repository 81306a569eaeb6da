/* fuzz_input.c — libFuzzer harness of the launcher's option files: `omniprof run -i FILE`
 * (JSON through src/common/json_parse.c, YAML through libyaml, text `pmc:` lines) and the
 * configuration files (`KEY = value` lines), src/cli/cmd_run_input.c.
 *
 * Input: the first byte picks how the rest is read: as FILE.json, FILE.yaml, FILE.txt, a
 * file without extension (format by content) or a user configuration file
 * (OMNIPROF_CONFIG_FILE). Invariants: loading succeeds or fails (with its message on
 * stderr), never crashes, hangs or leaks; what it sets is an option's normalized text; a
 * JSON text that op_json_parse accepts is a tree whose counts match its children. */
#include "fuzz.h"
#include "cli/cmd_run.h"
#include "common/json_parse.h"

static char g_path[5][512];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_init();
    static const char *const names[5] = {"in.json", "in.yaml", "in.txt", "in", "omniprof.cfg"};
    for (int i = 0; i < 5; i++) snprintf(g_path[i], sizeof g_path[i], "%s/%s", fuzz_scratch_dir(), names[i]);
    setenv("OMNIPROF_SYSTEM_CONFIG_FILE", "none", 1);
    setenv("OMNIPROF_CONFIG_FILE", g_path[4], 1);
    return 0;
}

/* Every array and object holds as many children as it says; depth stays bounded. */
static size_t check_tree(const op_json *v, int depth)
{
    FUZZ_CHECK(depth <= OP_JSON_MAX_DEPTH + 1, "a tree deeper than OP_JSON_MAX_DEPTH");
    size_t nodes = 1, n = 0;
    for (const op_json *c = v->child; c; c = c->next, n++) {
        if (v->type == OP_JSON_OBJECT) FUZZ_CHECK(c->key != NULL, "an object member without a key");
        nodes += check_tree(c, depth + 1);
    }
    FUZZ_CHECK(n == v->n_children, "n_children %zu, children %zu", v->n_children, n);
    if (v->type == OP_JSON_STRING || v->type == OP_JSON_NUMBER) FUZZ_CHECK(v->text != NULL, "a value without text");
    return nodes;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (64u << 10)) return 0;
    int kind = data[0] % 5;
    fuzz_write_file(g_path[kind], data + 1, size - 1);
    run_opts ro;
    memset(&ro, 0, sizeof ro);
    if (kind < 4) {
        (void)run_load_input(&ro, g_path[kind]);
        char err[512];
        op_json *j = op_json_parse((const char *)data + 1, size - 1, err, sizeof err);
        if (j) check_tree(j, 0);
        else FUZZ_CHECK(strstr(err, "line ") || strstr(err, "memory"), "a JSON refusal without its place: '%s'", err);
        op_json_free(j);
    } else {
        run_file_setting fs[64];
        int n = 0;
        (void)run_load_config_files(&ro, fs, 64, &n);
        FUZZ_CHECK(n >= 0 && n <= 64, "%d settings", n);
        for (int i = 0; i < n; i++) {
            FUZZ_CHECK(fs[i].value != NULL, "a setting without a value");
            free(fs[i].value);
        }
    }
    for (int i = 0; i < O__COUNT; i++)
        if (ro.set[i]) FUZZ_CHECK(ro.value[i] != NULL || run_option_by_id(i)->kind == K_BOOL, "option %d set to NULL", i);
    run_free_opts(&ro);
    unlink(g_path[kind]);
    return 0;
}
