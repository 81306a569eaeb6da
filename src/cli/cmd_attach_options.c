/* cmd_attach_options.c — the command line of `omniprof attach` (cmd_attach.h).
 *
 * One argv, one parse (common/cli_opt.h) against three tables, in this order: attach's own
 * options (attach_options below), the instrumentation options of `omniprof instrument`
 * (ins_options: `-i` is --include here as there, run's --input is given by its long name), and
 * `omniprof run`'s table. Run's rows are stored as run stores them (run_store_option), then
 * `--input FILE` and the configuration files are read and everything is turned into settings
 * by id as run does (run_build_settings, cmd_run_env.c) — the same names, values, checks and
 * messages, printed as "omniprof attach: ...". The options that need the program started by
 * omniprof are refused by name with the reason (refused[] below); one that a configuration
 * file sets is left out for the attach. --help, the man page and completion come from the same
 * three tables.
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

/* The refused options of run, wrapped at 100 columns (attach's --help and man page). */
static void list_refused(FILE *out)
{
    fputs("Refused (they need the program started by omniprof run):\n", out);
    int col = 2;
    fputs("  ", out);
    for (size_t k = 0; k < N_REFUSED; k++) {
        const char *name = run_option_by_id(refused[k].id)->long_name;
        int w = (int)strlen(name) + 4;
        if (k) col += fprintf(out, ",");
        if (col + w > 100) {
            fputs("\n  ", out);
            col = 2;
        } else if (k) {
            col += fprintf(out, " ");
        }
        col += fprintf(out, "--%s", name);
    }
    fputs("\n", out);
}

enum { A_PID, A_DURATION, A_ATTACH_CHILDREN, A_NO_ATTACH_CHILDREN, A_INSTRUMENT, A_HELP };

static const op_cli_option attach_options[] = {
    {A_PID, "pid", 'p', OP_CLI_VALUE, "PID", NULL, NULL, "the process to attach to", -1, 0, 0},
    {A_DURATION, "duration", 0, OP_CLI_VALUE, "S", NULL, NULL,
     "collect for S seconds (default: until Ctrl-C)", -1, 0, 0},
    {A_ATTACH_CHILDREN, "attach-children", 0, OP_CLI_BOOL, NULL, NULL, NULL,
     "also its child processes (default on)", -1, 0, 0},
    {A_NO_ATTACH_CHILDREN, "no-attach-children", 0, OP_CLI_FLAG, NULL, NULL, NULL,
     "= --attach-children=false", -1, 0, 0},
    {A_INSTRUMENT, "instrument", 0, OP_CLI_FLAG, NULL, NULL, NULL,
     "record function calls (uprobes; --method compiler for a program built with "
     "-finstrument-functions); the options below as for omniprof instrument (-i implies "
     "--instrument)",
     -1, 0, 0},
    {A_HELP, "help", 'h', OP_CLI_FLAG, NULL, NULL, NULL, "this text", -1, 0, 0},
};

static const op_cli_table attach_tables[] = {
    {attach_options, (int)(sizeof attach_options / sizeof attach_options[0]), NULL, 0},
    {ins_options, INS_N_OPTIONS, "Instrumentation (with --instrument)", 0},
    {run_options, O__COUNT, "Options of omniprof run (the same values and checks)", 0},
};

const op_cli_command attach_command = {
    "attach",
    "profile a running process (and its children) for a while, leave it running",
    "omniprof attach -p PID [--duration S] [--no-attach-children]\n                [--instrument "
    "[-i REGEX] [-e REGEX] [-m REGEX] [--min-instructions N]\n                 [--max-functions N] "
    "[--throttle T] [--method uprobe|compiler]]\n                [omniprof run options]",
    "Loads the profiler into running process PID (and, by default, its child processes), collects "
    "for S seconds or until Ctrl-C, writes one database per process and leaves them running. The "
    "options of omniprof run apply with the same values and checks, e.g. -d DIR, -o NAME, -f "
    "FORMAT (converted after the attach), --sample, --kernel-trace, --pmc, --summary; --input FILE "
    "by its long name (-i is --include here).",
    "Exit status: 0 ok; 1 omniprof failed; 2 bad usage or input (nothing was attached).",
    attach_tables,
    3,
    0,
    list_refused,
};

typedef struct attach_parse {
    attach_opts *ao;
    ins_opts *ins;
    bool instrument, help;
} attach_parse;

static int on_option(void *ctx, const op_cli_option *row, const char *v, int nth,
                     const char *spelled)
{
    attach_parse *p = ctx;
    attach_opts *ao = p->ao;
    if (ins_is_option(row)) {
        ins_store_option(p->ins, row, v);
        return 0;
    }
    if (row < attach_options ||
        row >= attach_options + sizeof attach_options / sizeof attach_options[0])
        return run_store_option(&ao->ro, row, v, nth, spelled); /* one of run's */
    char *end;
    switch (row->id) {
    case A_PID: {
        long pid = strtol(v, &end, 10);
        if (!*v || *end || pid <= 0) {
            run_usage_error("-p '%s' is not a process id", v);
            return 1;
        }
        ao->pid = (pid_t)pid;
        return 0;
    }
    case A_DURATION: {
        char why[160] = "no value";
        if (op_num_seconds(v, false, &ao->duration, why, sizeof why) != 0) {
            run_usage_error("--duration '%s' is not valid: %s, in seconds; leave --duration out to "
                            "collect until the processes end or Ctrl-C",
                            v, why);
            return 1;
        }
        return 0;
    }
    case A_ATTACH_CHILDREN: ao->children = !strcmp(v, "true"); return 0;
    case A_NO_ATTACH_CHILDREN: ao->children = false; return 0;
    case A_INSTRUMENT: p->instrument = true; return 0;
    case A_HELP: p->help = true; return 0;
    }
    return 0;
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

/* Run's options into settings, as run does. Returns -1 to go on, else an exit status. */
static int read_run_options(attach_opts *ao)
{
    run_opts *ro = &ao->ro;
    if (run_opt_true(ro, O_HELP)) {
        op_cli_print_help(stdout, &attach_command);
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
    attach_parse p = {ao, &ins, false, false};
    char err[1024];
    int rest = argc;
    int rc = op_cli_parse(&attach_command, argc, argv, on_option, &p, &rest, err, sizeof err);
    if (rc == -1) run_usage_error("%s", err);
    if (rc != 0) return RUN_EXIT_USAGE;
    if (p.help) {
        op_cli_print_help(stdout, &attach_command);
        return 0;
    }
    if (ins.include[0]) p.instrument = true;
    if (ins.list) {
        run_usage_error("--list lists the functions of a program file; use omniprof instrument "
                        "--list -- PROGRAM");
        return RUN_EXIT_USAGE;
    }
    rc = -1;
    if (p.instrument && set_instrument(ao, &ins) != 0) rc = RUN_EXIT_USAGE;
    if (rc < 0) rc = read_run_options(ao);
    return rc < 0 ? check_ready(ao) : rc;
}

void attach_free_options(attach_opts *ao)
{
    for (int i = 0; i < ao->plan.n_pmc_groups; i++) free(ao->plan.pmc_groups[i]);
    run_env_free(&ao->env);
    run_free_opts(&ao->ro);
}
