/* cmd_attach_options.c — the command line of `omniprof attach` (cmd_attach.h).
 *
 * One argv, three layers, taken in this order:
 *   1. attach's own options: -p/--pid, --duration, --attach-children[=BOOL],
 *      --no-attach-children, --instrument, -h/--help;
 *   2. the instrumentation options of `omniprof instrument` (cmd_instrument.h: -i/--include,
 *      -e/--exclude, -m/--modules, --min-instructions, --max-functions, --throttle, --method),
 *      so `-i` is --include here as there, and run's --input is given by its long name;
 *   3. every other word: `omniprof run`'s options, read by run's parser against run's table,
 *      then `--input FILE` and the configuration files, then turned into settings by id as run
 *      does (run_build_settings, cmd_run_env.c) — the same names, values, checks and messages,
 *      printed as "omniprof attach: ...". The options that need the program started by
 *      omniprof are refused by name with the reason (refused[] below); one that a
 *      configuration file sets is left out for the attach.
 * The settings reach each process through the attach's private config file (cmd_attach.c). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_attach.h"
#include "cli/cmd_instrument.h"
#include "cli/cli_lib.h"
#include "common/number.h"
#include "omniprof/defines.h"

/* The run options that cannot apply to a process that is already running. */
static const struct {
    int id;
    const char *why;
} refused[] = {
    {O_PRELOAD, "libraries are preloaded only when a program starts, and the process is already running"},
    {O_ECHO, "it prints the command omniprof run would execute; attach starts no program"},
    {O_OPENCL_TRACE, "the OpenCL loader reads its layers (OPENCL_LAYERS) when the program starts; start the program "
                     "under omniprof run --opencl-trace"},
    {O_MPI_TRACE, "MPI calls are intercepted by a library preloaded when the program starts; start the program under "
                  "omniprof run --mpi-trace"},
    {O_NCCL_TRACE, "NCCL calls are intercepted by a library preloaded when the program starts; start the program "
                   "under omniprof run --nccl-trace"},
};
#define N_REFUSED (sizeof refused / sizeof refused[0])

static const char *refused_why(int id)
{
    for (size_t k = 0; k < N_REFUSED; k++)
        if (refused[k].id == id) return refused[k].why;
    return NULL;
}

/* "--a, --b, ..." of run's options that attach takes (want_refused false) or refuses, wrapped. */
static void list_run_options(FILE *out, bool want_refused)
{
    int col = 2, n = 0;
    fputs("  ", out);
    for (int i = 0; i < run_n_options; i++) {
        const run_option *o = &run_options[i];
        if (o->id == O_HELP || o->id == O_VERSION || (refused_why(o->id) != NULL) != want_refused) continue;
        int w = (int)strlen(o->long_name) + 4;
        if (n++) col += fprintf(out, ",");
        if (col + w > 100) {
            fputs("\n  ", out);
            col = 2;
        } else if (n > 1) {
            col += fprintf(out, " ");
        }
        col += fprintf(out, "--%s", o->long_name);
    }
    fputs("\n", out);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: omniprof attach -p PID [--duration S] [--no-attach-children]\n"
            "                       [--instrument [-i REGEX] [-e REGEX] [-m REGEX] [--min-instructions N]\n"
            "                        [--max-functions N] [--throttle T] [--method uprobe|compiler]]\n"
            "                       [omniprof run options]\n"
            "Loads the profiler into running process PID (and, by default, its child processes), collects\n"
            "for S seconds or until Ctrl-C, writes one database per process and leaves them running.\n"
            "  -p, --pid PID                the process to attach to\n"
            "      --duration S             collect for S seconds (default: until Ctrl-C)\n"
            "      --attach-children[=BOOL], --no-attach-children   also its child processes (default on)\n"
            "      --instrument             record function calls (uprobes; --method compiler for a program built\n"
            "                               with -finstrument-functions); -i, --include REGEX, -e, --exclude REGEX,\n"
            "                               -m, --modules REGEX, --min-instructions N, --max-functions N and\n"
            "                               --throttle T as for omniprof instrument (-i implies --instrument)\n"
            "  -h, --help                   this text\n"
            "The options of omniprof run, with the same values and checks (omniprof run --help), e.g. -d DIR,\n"
            "-o NAME, -f FORMAT (converted after the attach), --sample, --kernel-trace, --runtime-trace,\n"
            "--pmc, --summary; --input FILE by its long name (-i is --include here):\n");
    list_run_options(out, false);
    fprintf(out, "Refused (they need the program started by omniprof run):\n");
    list_run_options(out, true);
}

/* Attach's own option at argv[*i]: 1 taken, 0 not one, -1 bad (printed), -2 --help (printed). */
static int own_option(int argc, char **argv, int *i, attach_opts *ao, bool *instrument)
{
    const char *a = argv[*i], *v = NULL;
    int r;
    char *end;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
        usage(stdout);
        return -2;
    }
    if ((r = cli_option_value(argc, argv, i, "pid", 'p', &v)) != 0) {
        long p = r > 0 ? strtol(v, &end, 10) : 0;
        if (r < 0 || *end || p <= 0) {
            run_usage_error("-p '%s' is not a process id", r < 0 ? "" : v);
            return -1;
        }
        ao->pid = (pid_t)p;
        return 1;
    }
    if ((r = cli_option_value(argc, argv, i, "duration", 0, &v)) != 0) {
        char why[160] = "no value";
        if (r < 0 || op_num_seconds(v, false, &ao->duration, why, sizeof why) != 0) {
            run_usage_error("--duration '%s' is not valid: %s, in seconds; leave --duration out to collect until the "
                            "processes end or Ctrl-C",
                            r < 0 ? "" : v, why);
            return -1;
        }
        return 1;
    }
    if (!strncmp(a, "--attach-children", 17) && (a[17] == '\0' || a[17] == '=')) {
        if (a[17] == '=' && op_parse_bool(a + 18, &ao->children) != 0) {
            run_usage_error("%s is not valid; expected true or false", a);
            return -1;
        }
        if (!a[17]) ao->children = true;
        return 1;
    }
    if (!strcmp(a, "--no-attach-children")) return ao->children = false, 1;
    if (!strcmp(a, "--instrument")) return *instrument = true, 1;
    return 0;
}

/* Layers 1 and 2; run's words go to run_argv (run_argv[0] = "attach"). Returns 0, -1 (bad
 * option, printed) or -2 (--help printed). */
static int split_options(int argc, char **argv, attach_opts *ao, ins_opts *ins, bool *instrument, char **run_argv,
                         int *n_run)
{
    char **mid = calloc((size_t)argc + 1, sizeof *mid);
    if (!mid) return -1;
    int n_mid = 0, i = 1, rc = 0;
    mid[n_mid++] = argv[0];
    for (; i < argc && strcmp(argv[i], "--") != 0 && rc >= 0; i++) {
        int r = own_option(argc, argv, &i, ao, instrument);
        if (r < 0) rc = r;
        else if (r == 0) mid[n_mid++] = argv[i];
    }
    for (; i < argc && rc == 0; i++) mid[n_mid++] = argv[i]; /* "--" and what follows: run's parser refuses it */
    run_argv[(*n_run)++] = "attach";
    int k = rc;
    if (rc == 0) {
        k = ins_parse_args(n_mid, mid, ins, run_argv, n_run, "attach");
        if (k == -2) k = -1; /* instrument's --help: cannot come, -h was taken above */
    }
    if (k >= 0) {
        for (; k < n_mid; k++) run_argv[(*n_run)++] = mid[k];
        run_argv[*n_run] = NULL;
        if (ins->include[0]) *instrument = true;
        rc = 0;
    } else {
        rc = k;
    }
    free(mid);
    return rc;
}

/* run's options that attach cannot apply: refused by name, unless a configuration file set
 * them (those are left out). Returns 0 or -1 (printed). */
static int refuse_launcher_options(run_opts *ro)
{
    int bad = 0;
    for (size_t k = 0; k < N_REFUSED; k++) {
        int id = refused[k].id;
        if (!ro->set[id]) continue;
        if (ro->from_config[id]) {
            ro->set[id] = false;
            continue;
        }
        run_usage_error("--%s%s%s%s cannot be used with attach: %s", run_option_by_id(id)->long_name,
                        ro->origin[id] ? " (from " : "", ro->origin[id] ? ro->origin[id] : "", ro->origin[id] ? ")" : "",
                        refused[k].why);
        bad = 1;
    }
    if (ro->set[O_PMC] && strchr(ro->value[O_PMC], ';')) {
        run_usage_error("--pmc is given more than once: each group needs its own run of the program, and attach "
                        "collects from one running process; give one --pmc group");
        bad = 1;
    }
    return bad ? -1 : 0;
}

/* Layer 3: run's options into settings. Returns -1 to go on, else an exit status. */
static int read_run_options(int n, char **run_argv, attach_opts *ao)
{
    run_opts *ro = &ao->ro;
    if (run_parse_command_line(ro, n, run_argv) != 0) return RUN_EXIT_USAGE;
    if (ro->program_argc > 0) {
        run_usage_error("attach starts no program ('%s'): give the running process with -p PID", ro->program[0]);
        return RUN_EXIT_USAGE;
    }
    if (run_opt_true(ro, O_HELP)) {
        usage(stdout);
        return 0;
    }
    if (run_opt_true(ro, O_VERSION)) {
        printf("omniprof %s\n", OMNIPROF_VERSION_STRING);
        return 0;
    }
    if (ro->set[O_INPUT] && run_load_input(ro, ro->value[O_INPUT]) != 0) return RUN_EXIT_USAGE;
    run_file_setting fs[RUN_MAX_FILE_SETTINGS];
    int n_fs = 0, rc = -1;
    if (run_load_config_files(ro, fs, RUN_MAX_FILE_SETTINGS, &n_fs) != 0) rc = RUN_EXIT_USAGE;
    else if (refuse_launcher_options(ro) != 0 || run_build_settings(ro, &ao->env, &ao->plan) != 0) rc = RUN_EXIT_USAGE;
    else run_add_file_settings(&ao->env, fs, n_fs);
    if (rc < 0 && run_opt_true(ro, O_OUTPUT_CONFIG)) {
        run_print_config(stdout, ro, &ao->env, fs, n_fs);
        rc = 0;
    }
    for (int i = 0; i < n_fs; i++) free(fs[i].value);
    return rc;
}

/* --instrument: the OMNIPROF_INSTRUMENT* settings. Returns 0 or -1 (printed). */
static int set_instrument(attach_opts *ao, const ins_opts *ins)
{
    if (ins->list) {
        run_usage_error("--list lists the functions of a program file; use omniprof instrument --list -- PROGRAM");
        return -1;
    }
    if (ins_check_values(ins, "attach") != 0) return -1;
    const char *method = ins->method && strcmp(ins->method, "auto") ? ins->method : "uprobe";
    if (!strcmp(method, "audit")) {
        run_usage_error("--method audit cannot be used with attach: LD_AUDIT is read only when a program starts; "
                        "expected uprobe or compiler");
        return -1;
    }
    env_list *e = &ao->env;
    int bad = run_set(e, OP_SET_INSTRUMENT, method, "--method") | run_set(e, OP_SET_INSTRUMENT_INCLUDE, ins->include, "--include") |
              run_set(e, OP_SET_INSTRUMENT_EXCLUDE, ins->exclude, "--exclude") |
              run_set(e, OP_SET_INSTRUMENT_MODULES, ins->modules, "--modules");
    if (ins->min_insns) bad |= run_set(e, OP_SET_INSTRUMENT_MIN_INSTRUCTIONS, ins->min_insns, "--min-instructions");
    if (ins->max_functions) bad |= run_set(e, OP_SET_INSTRUMENT_MAX_FUNCTIONS, ins->max_functions, "--max-functions");
    if (ins->throttle) bad |= run_set(e, OP_SET_INSTRUMENT_THROTTLE, ins->throttle, "--throttle");
    ao->plan.any_collect = true;
    return bad ? -1 : 0;
}

/* After the settings: the process, something to collect, the work after the attach. Returns
 * -1 to attach, else an exit status. */
static int check_ready(attach_opts *ao)
{
    if (!ao->pid) {
        run_usage_error("give the process with -p PID");
        return RUN_EXIT_USAGE;
    }
    if (!ao->plan.any_collect) {
        run_usage_error("nothing to collect: give a tracing option (--kernel-trace, --marker-trace, --runtime-trace, "
                        "...), --pmc, --sample or --instrument; see `omniprof attach --help`");
        return RUN_EXIT_USAGE;
    }
    if (kill(ao->pid, 0) != 0 && errno == ESRCH) {
        run_usage_error("no process %d", (int)ao->pid);
        return RUN_EXIT_USAGE;
    }
#ifdef OMNIPROF_HAVE_OUTPUT
    ao->post = ao->plan.stats || ao->plan.summary || ao->plan.non_rocpd;
#else
    if (ao->plan.stats || ao->plan.summary || ao->plan.non_rocpd) {
        run_usage_error("--stats, --summary and formats other than rocpd need libomniprof-output, which is not built");
        return RUN_EXIT_USAGE;
    }
#endif
    return run_set(&ao->env, OP_SET_ATTACH_MODE, "true", NULL) == 0 ? -1 : 1;
}

int attach_read_options(int argc, char **argv, attach_opts *ao)
{
    memset(ao, 0, sizeof *ao);
    ao->children = true;
    run_command_name = "attach";
    ins_opts ins;
    memset(&ins, 0, sizeof ins);
    bool instrument = false;
    int n_run = 0;
    char **run_argv = calloc((size_t)argc + 2, sizeof *run_argv);
    if (!run_argv) return 1;
    int rc = split_options(argc, argv, ao, &ins, &instrument, run_argv, &n_run);
    rc = rc == -2 ? 0 : rc == -1 ? RUN_EXIT_USAGE : -1;
    if (rc < 0 && instrument && set_instrument(ao, &ins) != 0) rc = RUN_EXIT_USAGE;
    if (rc < 0) rc = read_run_options(n_run, run_argv, ao);
    ao->ro.program = NULL; /* it pointed into run_argv */
    ao->ro.program_argc = 0;
    free(run_argv);
    return rc < 0 ? check_ready(ao) : rc;
}

void attach_free_options(attach_opts *ao)
{
    for (int i = 0; i < ao->plan.n_pmc_groups; i++) free(ao->plan.pmc_groups[i]);
    run_env_free(&ao->env);
    run_free_opts(&ao->ro);
}
