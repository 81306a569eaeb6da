/* cmd_run.h — the launcher's parts (`omniprof run`), one file per job:
 *
 *   cmd_run.c          run_main: the order of the steps below, exec or fork, the exit status
 *   cmd_run_options.c  the option table, command-line parsing, --help
 *   cmd_run_input.c    option sources other than the command line: `-i FILE` (JSON, YAML,
 *                      text `pmc:` lines) and the configuration files (system, user, -c)
 *   cmd_run_env.c      from options to OMNIPROF_* settings (addressed by id), their checks,
 *                      the output directory, LD_PRELOAD
 *   cmd_run_launch.c   fork+exec of the program, signal forwarding, parent-death signal
 *   cmd_run_post.c     work after the run: conversions, stats, summary
 * Library-folder lookup and counter pass planning are shared with `omniprof avail`
 * (cli_lib.h). */
#ifndef OMNIPROF_CLI_CMD_RUN_H
#define OMNIPROF_CLI_CMD_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/cli_opt.h"
#include "common/settings.h"

#define RUN_EXIT_USAGE 2
#define RUN_MAX_PMC_GROUPS 64

/* run's rows are common/cli_opt.h's: the one option struct and parser of every command. */
#define K_BOOL OP_CLI_BOOL   /* --x, --x BOOL, --x=BOOL */
#define K_VALUE OP_CLI_VALUE /* --x V, --x=V, -c V, -cV */
#define K_MULTI OP_CLI_LIST  /* --x V1 V2 ... (until the next token starting with '-'); may repeat \
                              */
#define K_OPTVAL OP_CLI_OPTVAL /* --x [V]: V consumed only if it is one of the option's values */

/* One id per option; the table in cmd_run_options.c has one row per id, in this order. */
enum {
    O_KERNEL_TRACE,
    O_MEMORY_COPY_TRACE,
    O_MEMORY_SET_TRACE,
    O_MEMORY_ALLOCATION_TRACE,
    O_MARKER_TRACE,
    O_CUDA_RUNTIME_TRACE,
    O_CUDA_DRIVER_TRACE,
    O_OPENCL_TRACE,
    O_SYNC_TRACE,
    O_MPI_TRACE,
    O_NCCL_TRACE,
    O_RUNTIME_TRACE,
    O_SYS_TRACE,
    O_PMC,
    O_EXTRA_METRICS,
    O_KERNEL_ITERATION_RANGE,
    O_SAMPLE,
    O_SAMPLING_FREQ,
    O_PERF_EVENTS,
    O_PROCESS_SAMPLING,
    O_PC_SAMPLING,
    O_PC_SAMPLING_INTERVAL,
    O_PC_SAMPLING_METHOD,
    O_PM_SAMPLING,
    O_PM_SAMPLING_INTERVAL,
    O_SASS_METRICS,
    O_UNIFIED_MEMORY_TRACE,
    O_LITE,
    O_TORCH,
    O_OUTPUT_DIRECTORY,
    O_OUTPUT_FILE,
    O_OUTPUT_FORMAT,
    O_STATS,
    O_SUMMARY,
    O_SUMMARY_OUTPUT_FILE,
    O_SUMMARY_UNITS,
    O_SUMMARY_PER_DOMAIN,
    O_SUMMARY_GROUPS,
    O_MINIMUM_OUTPUT_DATA,
    O_AGENT_INDEX,
    O_KERNEL_INCLUDE_REGEX,
    O_KERNEL_EXCLUDE_REGEX,
    O_COLLECTION_PERIOD,
    O_COLLECTION_PERIOD_UNIT,
    O_FLUSH_INTERVAL,
    O_MANGLED_KERNELS,
    O_TRUNCATE_KERNELS,
    O_KERNEL_RENAME,
    O_SELECTED_REGIONS,
    O_PRELOAD,
    O_LOG_LEVEL,
    O_DISABLE_SIGNAL_HANDLERS,
    O_ECHO,
    O_INPUT,
    O_INPUT_JOB,
    O_CONFIG,
    O_OUTPUT_CONFIG,
    O_VERSION,
    O_HELP,
    O__COUNT
};

/* How an option reaches its setting (run_option.setting). */
typedef enum run_opt_map {
    M_NONE,    /* no setting, or a handler in cmd_run_env.c sets it */
    M_DIRECT,  /* the value as given (a boolean as true/false) */
    M_INVERT,  /* a boolean, negated (-M → DEMANGLE_KERNELS=false) */
} run_opt_map;

/* Tracing options implied by the aggregate ones. */
#define IMPLIED_BY_RUNTIME 1 /* -r/--runtime-trace (and so -s) */
#define IMPLIED_BY_SYS 2     /* -s/--sys-trace */

/* A row: id, long_name, short_name, kind, metavar, values (K_OPTVAL: the words it may take, "#"
 * = a number), group (help section, printed when it changes), help, setting (the OP_SET_* it
 * sets, or -1), map (run_opt_map), implied_by (IMPLIED_BY_* bits of tracing options). */
typedef op_cli_option run_option;

extern const run_option run_options[O__COUNT];
extern const int run_n_options;
/* `omniprof run` and `omniprof sample` (= run --sample --summary): the same table. */
extern const op_cli_command run_command, sample_command;

typedef struct run_opts {
    char *value[O__COUNT]; /* normalized text: "true"/"false" for booleans; multi: space-joined */
    bool set[O__COUNT];
    const char *origin[O__COUNT]; /* where the value came from: NULL = the command line, else a file */
    bool from_config[O__COUNT];   /* set by a configuration file (a later file or the command line wins) */
    char **program;               /* argv of the program (points into the command line) */
    int program_argc;
} run_opts;

/* ---- cmd_run_options.c ---- */
/* The command named in messages ("omniprof run: ...", "see `omniprof run --help`"): "run", or
 * "attach" when `omniprof attach` parses run's options (cmd_attach_options.c). */
extern const char *run_command_name;
void run_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *run_xstrdup(const char *s);
void run_append_word(char **dst, const char *word);
const run_option *run_option_by_long(const char *name, size_t n);
const run_option *run_option_by_id(int id);
bool run_opt_true(const run_opts *ro, int id);
/* Parse argv (argv[0] is the command's name) against `cmd`'s tables (run's, or a command that
 * includes run's). Returns 0, or -1 after printing an error. */
int run_parse_command_line(run_opts *ro, const op_cli_command *cmd, int argc, char **argv);
/* The parser's callback for run's rows (ctx: the run_opts): stores one value. */
int run_store_option(void *ro, const run_option *o, const char *value, int nth,
                     const char *spelled);
/* Normalize a value of `o` given in a file (booleans to true/false). Returns a malloc'd text,
 * or NULL with a message in err. */
char *run_normalize_value(const run_option *o, const char *text, char *err, size_t errlen);
/* Do two texts of option `o` mean the same value? */
bool run_same_value(const run_option *o, const char *a, const char *b);
void run_free_opts(run_opts *ro);

/* ---- cmd_run_input.c ---- */
/* Merge the options of `-i FILE` (JSON, YAML or text, by content). Returns 0, or -1 (printed). */
int run_load_input(run_opts *ro, const char *file);
/* The launcher's own argv (argv[0] the command, "run" or "sample"): with it, an -i file whose
 * jobs differ in more than "pmc" runs each job as a pass of its own (`--input-job K`). */
/* run_pass runs one pass (run_child; a parameter so that the input parser links alone, as
 * its fuzz harness does). */
void run_input_set_argv(int argc, char **argv, int (*run_pass)(const char *, char **));

/* One setting from a configuration file that no option carries. */
typedef struct run_file_setting {
    op_setting_id id;
    char *value;
    const char *file; /* where it was read (static storage of run_load_config_files) */
} run_file_setting;

#define RUN_MAX_FILE_SETTINGS OP_SET__COUNT

/* The configuration-file layer: the system file, the user file, then `-c FILE`s, each
 * overriding the one before; values reach options that are not set yet (the command line and
 * -i win) or, for settings no option carries, `out`. Returns 0, or -1 (printed). */
int run_load_config_files(run_opts *ro, run_file_setting *out, int max, int *n_out);

/* ---- cmd_run_env.c ---- */
typedef struct env_list {
    char **items; /* "NAME=VALUE", malloc'd */
    int n, cap;
} env_list;

/* What the options decided, beyond the environment. */
typedef struct run_plan {
    bool any_collect;             /* something is traced, counted or sampled */
    bool stats, summary;          /* post-run work asked for */
    bool non_rocpd;               /* a format converted after the run */
    bool cpu_backend;             /* the CPU backend must be preloaded */
    bool mpi_backend;             /* the MPI backend must be preloaded (--mpi-trace, --nccl-trace) */
    bool post;                    /* fork+wait: post-run work or several --pmc groups */
    const char *formats;          /* -f, space-separated */
    unsigned format_bits;         /* OP_OUT_FMT_* of -f (with libomniprof-output) */
    const char *summary_units;    /* -u (NULL: the default) */
    const char *summary_output;   /* --summary-output-file (NULL: stderr) */
    bool summary_per_domain;      /* -D: the table of domains after theirs */
    const char *summary_groups;   /* --summary-groups: regexes separated by spaces (NULL: none) */
    const char *agent_index;      /* -A: absolute, relative, type-relative (NULL: relative) */
    char *pmc_groups[RUN_MAX_PMC_GROUPS];
    int n_pmc_groups;
} run_plan;

void run_env_add(env_list *e, const char *name, const char *value);
void run_env_free(env_list *e);
/* Set setting `id` after validating `value` through the registry; the message names the
 * option (from_option, may be NULL) and the setting. Returns 0 or -1 (printed). */
int run_set(env_list *e, op_setting_id id, const char *value, const char *from_option);
/* Every option → settings. Returns 0, or -1 when some value was bad (each printed). */
int run_build_settings(run_opts *ro, env_list *env, run_plan *plan);
/* Print every setting as it would reach the program (a configuration file, with where each
 * value came from), for --output-config. */
void run_print_config(FILE *out, const run_opts *ro, const env_list *env, const run_file_setting *fs, int n_fs);
/* LD_PRELOAD: --preload libraries (checked), libomniprof-preload.so (the libc interposers),
 * the tool, the SDK, the CPU backend when needed, the MPI backend with it or when MPI/NCCL
 * tracing asks for it, then what was already there. Returns 0, RUN_EXIT_USAGE or 1 (printed). */
int run_build_preload(const run_opts *ro, const run_plan *plan, env_list *env);
/* Find `prog` as execvp would. Returns 0 and the path, or -1. */
int run_resolve_program(const char *prog, char *out, size_t outlen);

/* ---- cmd_run.c ---- */
/* Settings from configuration files that no option carries: into the environment unless an
 * option set them (the command line wins). */
void run_add_file_settings(env_list *env, const run_file_setting *fs, int n);

/* ---- cmd_run_launch.c ---- */
/* fork+exec the program with SIGINT/SIGTERM/SIGQUIT/SIGHUP forwarded and a parent-death
 * signal set; returns its status (128+N for signal N) or -1 when it could not be started. */
int run_child(const char *prog_path, char **argv);

/* ---- cmd_run_post.c ---- */
/* Post-run work over the databases listed in the manifest. Returns 0 or 1 (printed). */
int run_post(const char *manifest, const run_plan *plan);
/* Marks the start of the run: run_post names the files written since (the derived ones). */
void run_post_mark_start(void);

#endif /* OMNIPROF_CLI_CMD_RUN_H */
