/* cmd_run.c — `omniprof run [options] -- program [args]`: the tracer launcher (rocprofv3's
 * options and behavior, docs/run.md), and `omniprof sample` (= run --sample --summary).
 *
 * What it does, in order (each step in its own file, cmd_run.h):
 *  1. Parse the command line into `run_opts`, then merge the options of `-i FILE` (a value
 *     given both ways differently is an error), then the configuration files (system, user,
 *     `-c FILE`: below the command line, above the environment) (cmd_run_options.c,
 *     cmd_run_input.c). --output-config prints the resolved settings and stops here.
 *  2. Turn the options into OMNIPROF_* settings, each checked by the settings registry (type,
 *     range, choices); compile regexes with a size bound; expand output templates; create the
 *     output directory's process-independent part and write a file in it (cmd_run_env.c).
 *     Check inherited OMNIPROF_* variables the options do not replace. Plan every --pmc group
 *     (cli_lib.c: unknown counters, too many passes). Find the program on PATH and the
 *     libraries to preload. Any failure prints one message naming the input and what would be
 *     valid, and returns 2: the program is not run with a broken configuration.
 *  3. Build the environment: the settings, LD_PRELOAD = --preload libraries, then
 *     libomniprof-preload.so, libomniprof-tool.so and libomniprof-sdk.so (and the CPU backend when a CPU feature is
 *     asked for) from omniprof's library directory, then the LD_PRELOAD already set.
 *  4. Without post-run work, exec the program: its exit status is then the program's own.
 *     With post-run work (--stats, --summary, a non-rocpd format, several --pmc groups),
 *     fork+exec it once per group (cmd_run_launch.c: signals forwarded, the program dies with
 *     the launcher), wait, convert the databases listed in the run manifest
 *     (cmd_run_post.c), and return the program's status (128+N if signal N ended it).
 * docs/run.md describes the options and this choice for users. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_lib.h"
#include "cli/cmd_run.h"
#include "cli/commands.h"
#include "common/once.h"
#include "omniprof/defines.h"

extern char **environ;

/* ---- checks before the run ---------------------------------------------------------------- */

typedef struct env_check {
    const env_list *env;
    int bad;
} env_check;

/* An inherited OMNIPROF_* value the options do not replace would reach the program: a bad one
 * stops the run; an unknown name is a warning (with the closest setting). */
static void inherited_problem(int id, const char *message, void *data)
{
    env_check *c = data;
    if (!op_once(message)) return; /* once per process (the settings module says it otherwise) */
    if (id < 0) {
        fprintf(stderr, "omniprof run: warning: %s\n", message);
        return;
    }
    const char *name = op_setting_get_info((op_setting_id)id)->env_name;
    size_t nl = strlen(name);
    for (int i = 0; i < c->env->n; i++)
        if (strncmp(c->env->items[i], name, nl) == 0 && c->env->items[i][nl] == '=') return; /* replaced */
    run_usage_error("%s (in the environment); fix or unset it", message);
    c->bad++;
}

/* Plan each --pmc group before the run and say on stderr how many passes it needs (the
 * program's stdout stays its own). An unknown counter, a metrics file that does not load, or
 * a set that cannot be collected stops the launch. Returns 0 to go on. */
static int check_pmc_groups(const run_opts *ro, const run_plan *plan)
{
    const char *extra = ro->set[O_EXTRA_METRICS] ? ro->value[O_EXTRA_METRICS] : NULL;
    const char *mode = op_setting_str(OP_SET_PMC_REPLAY_MODE);
    int rc_all = 0;
    for (int i = 0; i < plan->n_pmc_groups; i++) {
        char *copy = run_xstrdup(plan->pmc_groups[i]);
        const char *names[256];
        size_t n = 0;
        for (char *save = NULL, *t = strtok_r(copy, " ,", &save); t && n < 256; t = strtok_r(NULL, " ,", &save))
            names[n++] = t;
        cli_pmc_plan p;
        cli_pmc_status st = cli_pmc_plan_set(names, n, NULL, mode && *mode ? mode : "kernel", extra, &p);
        if (st == CLI_PMC_UNAVAILABLE) { /* counters module not built: the tool reports it */
            free(copy);
            return 0;
        }
        char group[32] = "";
        if (plan->n_pmc_groups > 1) snprintf(group, sizeof(group), "group %d of %d: ", i + 1, plan->n_pmc_groups);
        if (st == CLI_PMC_OK) {
            fprintf(stderr, "omniprof run: --pmc %s%s: %zu counter%s need %zu pass%s%s\n", group, plan->pmc_groups[i],
                    p.n_counters, p.n_counters == 1 ? "" : "s", p.passes, p.passes == 1 ? "" : "es",
                    p.chip_assumed ? " (planned for GH100)" : "");
        } else {
            for (char *line = p.message, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                nl = strchr(line, '\n');
                fprintf(stderr, "omniprof run: --pmc %s%.*s\n", group, (int)(nl ? nl - line : (long)strlen(line)), line);
            }
            rc_all = RUN_EXIT_USAGE;
        }
        free(copy);
    }
    if (rc_all) fprintf(stderr, "omniprof run: the program was not run\n");
    return rc_all;
}

/* --pm-sampling: the metrics checked offline (names known on the chip, one pass), and said on
 * stderr. A bad set stops the launch. Returns 0 to go on. */
static int check_pm_sampling(const run_opts *ro)
{
    char *copy = run_xstrdup(ro->value[O_PM_SAMPLING]);
    const char *names[64];
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(copy, " ,", &save); t && n < 64; t = strtok_r(NULL, " ,", &save)) names[n++] = t;
    cli_pmc_plan p;
    cli_pmc_status st = cli_pm_check(names, n, NULL, &p);
    int rc = 0;
    if (st == CLI_PMC_OK) {
        fprintf(stderr, "omniprof run: --pm-sampling: %zu metric%s in one pass on %s%s\n", n, n == 1 ? "" : "s", p.chip,
                p.chip_assumed ? " (planned for GH100)" : "");
    } else if (st == CLI_PMC_UNAVAILABLE) { /* no CUDA backend here: the tool says so at run time */
        fprintf(stderr, "omniprof run: --pm-sampling: not checked before the run: %s\n", p.message);
    } else {
        fprintf(stderr, "omniprof run: --pm-sampling: %s%s\nomniprof run: the program was not run\n", p.message,
                p.chip_assumed ? " (planned for GH100)" : "");
        rc = RUN_EXIT_USAGE;
    }
    free(copy);
    return rc;
}

/* ---- running ------------------------------------------------------------------------------ */

static void echo_command(const env_list *env, const run_opts *ro)
{
    for (int k = 0; k < env->n; k++) fprintf(stderr, "export %s\n", env->items[k]);
    fputs("exec", stderr);
    for (int k = 0; k < ro->program_argc; k++) fprintf(stderr, " %s", ro->program[k]);
    fputs("\n", stderr);
    fflush(stderr);
}

/* fork+exec once per --pmc group, wait, post-process. Returns the program's status. */
static int run_and_wait(const char *prog_path, const run_opts *ro, const run_plan *plan, const char *manifest)
{
    int status = 0;
    run_post_mark_start();
    for (int pass = 0; pass < plan->n_pmc_groups || (pass == 0 && plan->n_pmc_groups == 0); pass++) {
        if (plan->n_pmc_groups > 1) {
            setenv("OMNIPROF_PMC", plan->pmc_groups[pass], 1);
            fprintf(stderr, "omniprof run: pass %d of %d: --pmc %s\n", pass + 1, plan->n_pmc_groups,
                    plan->pmc_groups[pass]);
        }
        int st = run_child(prog_path, ro->program);
        if (st < 0) return 1;
        if (pass == 0 || status == 0) status = st; /* the first failing pass decides */
    }
    if (run_post(manifest, plan) != 0 && status == 0)
        fprintf(stderr, "omniprof run: post-processing failed (the databases are kept)\n");
    return status;
}

static int make_manifest(env_list *env, char *manifest, size_t len)
{
    if (cli_tmp_create("run", false, manifest, len) != 0) {
        fprintf(stderr, "omniprof run: cannot create the run manifest in %s: %s\n", manifest, strerror(errno));
        manifest[0] = '\0';
        return -1;
    }
    return run_set(env, OP_SET_RUN_MANIFEST, manifest, NULL);
}

void run_add_file_settings(env_list *env, const run_file_setting *fs, int n)
{
    for (int i = 0; i < n; i++) {
        const char *name = op_setting_get_info(fs[i].id)->env_name;
        size_t nl = strlen(name);
        bool set = false;
        for (int k = 0; k < env->n && !set; k++) set = strncmp(env->items[k], name, nl) == 0 && env->items[k][nl] == '=';
        if (!set) run_env_add(env, name, fs[i].value);
    }
}

/* Steps 1-2 up to the settings. Returns -1 to go on, else an exit status. */
static int read_options(const op_cli_command *cmd, int argc, char **argv, run_opts *ro,
                        env_list *env, run_plan *plan, run_file_setting *fs, int *n_fs)
{
    if (run_parse_command_line(ro, cmd, argc, argv) != 0) return RUN_EXIT_USAGE;
    if (run_opt_true(ro, O_HELP)) {
        op_cli_print_help(stdout, cmd);
        return 0;
    }
    if (cmd == &sample_command) { /* = run --sample --summary, unless given otherwise */
        if (!ro->set[O_SAMPLE]) run_store_option(ro, run_option_by_id(O_SAMPLE), "", 0, "--sample");
#ifdef OMNIPROF_HAVE_OUTPUT
        if (!ro->set[O_SUMMARY])
            run_store_option(ro, run_option_by_id(O_SUMMARY), "true", 0, "--summary");
#endif
    }
    if (run_opt_true(ro, O_VERSION)) {
        printf("omniprof %s\n", OMNIPROF_VERSION_STRING);
        return 0;
    }
    if (ro->set[O_INPUT] && run_load_input(ro, ro->value[O_INPUT]) != 0) return RUN_EXIT_USAGE;
    if (run_load_config_files(ro, fs, RUN_MAX_FILE_SETTINGS, n_fs) != 0) return RUN_EXIT_USAGE;
    bool output_config = run_opt_true(ro, O_OUTPUT_CONFIG);
    if (ro->program_argc <= 0 && !output_config) {
        run_usage_error("no program to run; usage: omniprof run [options] -- program [args...]");
        return RUN_EXIT_USAGE;
    }
    if (run_build_settings(ro, env, plan) != 0) return RUN_EXIT_USAGE;
    run_add_file_settings(env, fs, *n_fs);
    env_check ec = {env, 0};
    op_settings_check_environment(inherited_problem, &ec);
    if (ec.bad) return RUN_EXIT_USAGE;
    if (output_config) {
        run_print_config(stdout, ro, env, fs, *n_fs);
        return 0;
    }
    return -1;
}

/* Everything before the program starts (steps 1-3). Returns -1 to go on, else an exit status. */
static int prepare(const op_cli_command *cmd, int argc, char **argv, run_opts *ro, env_list *env,
                   run_plan *plan, char *prog_path, size_t plen)
{
    run_file_setting fs[RUN_MAX_FILE_SETTINGS];
    int n_fs = 0;
    int rc = read_options(cmd, argc, argv, ro, env, plan, fs, &n_fs);
    for (int i = 0; i < n_fs; i++) free(fs[i].value);
    if (rc >= 0) return rc;
    if (!plan->any_collect) {
        run_usage_error("nothing to collect: give a tracing option (--kernel-trace, --marker-trace, --runtime-trace, "
                        "--sys-trace, ...), --pmc, --pc-sampling, --pm-sampling or --sample; see `omniprof run --help`");
        return RUN_EXIT_USAGE;
    }
    if (plan->n_pmc_groups > 0 && check_pmc_groups(ro, plan) != 0) return RUN_EXIT_USAGE;
    if (ro->set[O_PM_SAMPLING] && check_pm_sampling(ro) != 0) return RUN_EXIT_USAGE;
    if (run_resolve_program(ro->program[0], prog_path, plen) != 0) {
        run_usage_error("cannot run '%s': %s", ro->program[0],
                        strchr(ro->program[0], '/') ? "no such executable file" : "not found in PATH");
        return RUN_EXIT_USAGE;
    }
#ifndef OMNIPROF_HAVE_OUTPUT
    if (plan->non_rocpd) {
        run_usage_error("--output-format '%s': only rocpd is available; pftrace, json and csv need libomniprof-output, "
                        "which is not built",
                        plan->formats);
        return RUN_EXIT_USAGE;
    }
    if (plan->stats || plan->summary)
        fprintf(stderr, "omniprof run: --stats/--summary need libomniprof-output, which is not built: skipped (the "
                        "database is still written)\n");
    plan->post = false;
#else
    plan->post = plan->stats || plan->summary || plan->non_rocpd;
#endif
    if (plan->n_pmc_groups > 1) plan->post = true; /* one run per --pmc group: the launcher stays */
    rc = run_build_preload(ro, plan, env);
    return rc == 0 ? -1 : rc;
}

static int run_main(const op_cli_command *cmd, int argc, char **argv)
{
    run_opts ro;
    env_list env;
    run_plan plan;
    memset(&ro, 0, sizeof(ro));
    memset(&env, 0, sizeof(env));
    memset(&plan, 0, sizeof(plan));
    char prog_path[PATH_MAX], manifest[PATH_MAX] = "";
    run_input_set_argv(argc, argv, run_child);
    int rc = prepare(cmd, argc, argv, &ro, &env, &plan, prog_path, sizeof(prog_path));
    if (rc < 0 && plan.post && make_manifest(&env, manifest, sizeof(manifest)) != 0) rc = 1;
    if (rc < 0) {
        if (run_opt_true(&ro, O_ECHO)) echo_command(&env, &ro);
        for (int k = 0; k < env.n; k++) {
            char *eq = strchr(env.items[k], '=');
            *eq = '\0';
            setenv(env.items[k], eq + 1, 1);
            *eq = '=';
        }
        fflush(stdout);
        fflush(stderr);
        if (!plan.post) {
            execv(prog_path, ro.program);
            fprintf(stderr, "omniprof run: cannot run '%s': %s\n", prog_path, strerror(errno));
            rc = 127;
        } else {
            rc = run_and_wait(prog_path, &ro, &plan, manifest);
        }
    }
    if (manifest[0]) unlink(manifest);
    for (int i = 0; i < plan.n_pmc_groups; i++) free(plan.pmc_groups[i]);
    run_env_free(&env);
    run_free_opts(&ro);
    return rc;
}

int op_cmd_run(int argc, char **argv)
{
    return run_main(&run_command, argc, argv);
}

/* `omniprof sample [opts] -- prog` = `omniprof run --sample --summary [opts] -- prog`: the
 * summary after the run holds the CPU flat and call-tree profiles (unless --summary=false). */
int op_cmd_sample(int argc, char **argv)
{
    run_command_name = "sample"; /* its usage errors say "omniprof sample:" */
    return run_main(&sample_command, argc, argv);
}
