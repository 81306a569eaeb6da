/* cmd_run_options.c — the options of `omniprof run` (rocprofv3's, docs/run.md):
 * the table, its command descriptors (run, sample) and what stores a value.
 *
 * Each row names the setting it feeds by its id (OP_SET_*), so an option that names a setting
 * that does not exist does not compile; cmd_run_env.c turns M_DIRECT/M_INVERT rows into
 * settings generically and handles the rest one by one.
 *
 * The syntax is common/cli_opt.h's, the one parser of every omniprof command: `--opt`,
 * `--opt=V`, `--opt V`, `-x V`, `-xV`, `-x=V`; booleans `--opt`, `--opt BOOL` or `--opt=BOOL`;
 * multi-valued options take every following word up to the next one that starts with '-' (a
 * negative number such as `-1:2:3` is a word, not an option); `--` ends the options, the first
 * word that is not an option starts the program. --help, the man pages and the completion
 * scripts are generated from the table below (run_command). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_run.h"
#include "common/number.h"

/* clang-format off */
const run_option run_options[] = {
    {O_KERNEL_TRACE, "kernel-trace", 0, K_BOOL, NULL, NULL, "Tracing", "GPU kernel dispatches",
     OP_SET_KERNEL_TRACE, M_DIRECT, IMPLIED_BY_RUNTIME},
    {O_MEMORY_COPY_TRACE, "memory-copy-trace", 0, K_BOOL, NULL, NULL, NULL, "GPU memory copies",
     OP_SET_MEMORY_COPY_TRACE, M_DIRECT, IMPLIED_BY_RUNTIME},
    {O_MEMORY_SET_TRACE, "memory-set-trace", 0, K_BOOL, NULL, NULL, NULL, "GPU memory sets (memset)",
     OP_SET_MEMORY_SET_TRACE, M_DIRECT, IMPLIED_BY_RUNTIME},
    {O_MEMORY_ALLOCATION_TRACE, "memory-allocation-trace", 0, K_BOOL, NULL, NULL, NULL,
     "GPU memory allocations and frees", OP_SET_MEMORY_ALLOCATION_TRACE, M_DIRECT, IMPLIED_BY_RUNTIME},
    {O_MARKER_TRACE, "marker-trace", 0, K_BOOL, NULL, NULL, NULL, "user-API (omniprof_range_push...) and NVTX markers",
     OP_SET_MARKER_TRACE, M_DIRECT, IMPLIED_BY_RUNTIME},
    {O_CUDA_RUNTIME_TRACE, "cuda-runtime-trace", 0, K_BOOL, NULL, NULL, NULL, "CUDA runtime API calls",
     OP_SET_CUDA_RUNTIME_API_TRACE, M_DIRECT, IMPLIED_BY_RUNTIME},
    {O_CUDA_DRIVER_TRACE, "cuda-driver-trace", 0, K_BOOL, NULL, NULL, NULL, "CUDA driver API calls",
     OP_SET_CUDA_DRIVER_API_TRACE, M_DIRECT, IMPLIED_BY_SYS},
    {O_OPENCL_TRACE, "opencl-trace", 0, K_BOOL, NULL, NULL, NULL, "OpenCL API calls (docs/opencl.md)",
     OP_SET_OPENCL_API_TRACE, M_DIRECT, IMPLIED_BY_RUNTIME},
    {O_SYNC_TRACE, "sync-trace", 0, K_BOOL, NULL, NULL, NULL,
     "GPU synchronization waits (stream, event, device) and CUDA event recordings",
     OP_SET_SYNC_TRACE, M_DIRECT, IMPLIED_BY_SYS},
    {O_MPI_TRACE, "mpi-trace", 0, K_BOOL, NULL, NULL, NULL,
     "MPI calls (point-to-point, collectives, waits, one-sided, communicators) with bytes, peers, tags; "
     "clocks measured against rank 0 (docs/multinode.md)", OP_SET_MPI_TRACE, M_DIRECT, 0},
    {O_NCCL_TRACE, "nccl-trace", 0, K_BOOL, NULL, NULL, NULL,
     "NCCL collectives and point-to-point operations, with the kernels they launch (implies --kernel-trace, "
     "--cuda-runtime-trace, --cuda-driver-trace)", OP_SET_NCCL_TRACE, M_DIRECT, 0},
    {O_RUNTIME_TRACE, "runtime-trace", 'r', K_BOOL, NULL, NULL, NULL,
     "= --cuda-runtime-trace --opencl-trace --kernel-trace --memory-copy-trace --memory-set-trace "
     "--memory-allocation-trace --marker-trace", -1, M_NONE, 0},
    {O_SYS_TRACE, "sys-trace", 's', K_BOOL, NULL, NULL, NULL, "= --runtime-trace --cuda-driver-trace --sync-trace",
     -1, M_NONE, 0},
    {O_PMC, "pmc", 0, K_MULTI, "COUNTER...", NULL, "Counters and CPU sampling",
     "hardware counters per kernel dispatch (`omniprof avail --counters`); repeat --pmc to run the "
     "program once per group", OP_SET_PMC, M_NONE, 0},
    {O_EXTRA_METRICS, "extra-metrics", 'E', K_VALUE, "FILE.xml", NULL, NULL,
     "add or override metric definitions (':'-separated files)", OP_SET_EXTRA_METRICS, M_NONE, 0},
    {O_KERNEL_ITERATION_RANGE, "kernel-iteration-range", 0, K_VALUE, "RANGE", NULL, NULL,
     "which launches of each kernel are counted, 1-based: '[1, [3-5]]' or '1,3-5'",
     OP_SET_KERNEL_ITERATION_RANGE, M_NONE, 0},
    {O_SAMPLE, "sample", 0, K_OPTVAL, "[cputime|realtime]", "cputime|realtime", NULL,
     "call-stack sampling on the thread CPU-time (default) or wall clock", OP_SET_SAMPLE, M_NONE, 0},
    {O_SAMPLING_FREQ, "sampling-freq", 0, K_VALUE, "HZ", NULL, NULL, "samples per second per thread (default 300)",
     OP_SET_SAMPLING_FREQ, M_DIRECT, 0},
    {O_PERF_EVENTS, "perf-events", 0, K_VALUE, "EVENT,...", NULL, NULL,
     "perf_event counters every CPU sample reads, as perf names them: task-clock, page-faults, cycles, "
     "instructions, cache-misses, L1-dcache-load-misses, r<hex> (at most 8; implies --sample; docs/cpu.md)",
     OP_SET_SAMPLING_PERF_EVENTS, M_DIRECT, 0},
    {O_PROCESS_SAMPLING, "process-sampling", 0, K_OPTVAL, "[INTERVAL_SEC]", "#", NULL,
     "sample process metrics (RSS, CPU time, faults, frequencies) every INTERVAL_SEC (default 0.1)",
     OP_SET_PROCESS_SAMPLING, M_NONE, 0},
    {O_PC_SAMPLING, "pc-sampling", 0, K_BOOL, NULL, NULL, NULL,
     "GPU PC sampling: where warps are and why they stall (pc_samples, pc_sampling_stalls, pc_sampling_lines)",
     OP_SET_PC_SAMPLING, M_DIRECT, 0},
    {O_PC_SAMPLING_INTERVAL, "pc-sampling-interval", 0, K_VALUE, "CYCLES", NULL, NULL,
     "cycles between PC samples, rounded down to a power of two in [32, 2^31] (implies --pc-sampling)",
     OP_SET_PC_SAMPLING_INTERVAL, M_DIRECT, 0},
    {O_PC_SAMPLING_METHOD, "pc-sampling-method", 0, K_VALUE, "kernel-serialized|continuous", NULL, NULL,
     "kernel-serialized (samples name their dispatch; kernels run one at a time) or continuous (implies --pc-sampling)",
     OP_SET_PC_SAMPLING_METHOD, M_DIRECT, 0},
    {O_PM_SAMPLING, "pm-sampling", 0, K_MULTI, "METRIC...", NULL, NULL,
     "GPU metrics sampled every interval, independent of kernels, as counter tracks (pm_samples; "
     "`omniprof avail --pm-metrics`; checked offline before the run: one pass)", OP_SET_PM_SAMPLING, M_NONE, 0},
    {O_PM_SAMPLING_INTERVAL, "pm-sampling-interval", 0, K_VALUE, "US", NULL, NULL,
     "microseconds between PM samples (default 100)", OP_SET_PM_SAMPLING_INTERVAL, M_DIRECT, 0},
    {O_SASS_METRICS, "sass-metrics", 0, K_VALUE, "REGEX", NULL, NULL,
     "exact executions of every SASS instruction of the kernels matching REGEX ('.' for all), per source line "
     "(sass_instructions, sass_lines; patched kernels run several times slower)", OP_SET_SASS_METRICS, M_DIRECT, 0},
    {O_UNIFIED_MEMORY_TRACE, "unified-memory-trace", 0, K_BOOL, NULL, NULL, NULL,
     "unified-memory page migrations, page faults and thrashing (memory_migrations, memory_page_faults)",
     OP_SET_UNIFIED_MEMORY_TRACE, M_DIRECT, 0},
    {O_LITE, "lite", 0, K_BOOL, NULL, NULL, NULL,
     "= --kernel-trace --marker-trace without the launching calls of GPU records: the cheapest GPU trace",
     -1, M_NONE, 0},
    {O_TORCH, "torch", 0, K_BOOL, NULL, NULL, NULL,
     "PyTorch operators as regions (name, input shapes, sequence number), kernels linked to them; "
     "= --kernel-trace --marker-trace, the CUDA runtime's launch, copy and synchronize calls, the driver's launch calls and torch's NVTX path, turned on at its import",
     OP_SET_TORCH, M_NONE, 0},
    {O_OUTPUT_DIRECTORY, "output-directory", 'd', K_VALUE, "DIR", NULL, "Output",
     "output directory (default: the current directory); placeholders allowed", OP_SET_OUTPUT_PATH, M_NONE, 0},
    {O_OUTPUT_FILE, "output-file", 'o', K_VALUE, "NAME", NULL, NULL,
     "file name prefix (default %hostname%/%pid%); the database is DIR/NAME_results.db", OP_SET_OUTPUT_FILE, M_NONE, 0},
    {O_OUTPUT_FORMAT, "output-format", 'f', K_MULTI, "FORMAT...", NULL, NULL,
     "rocpd (default), pftrace, json, csv, folded, otf2; several allowed; non-rocpd formats are converted after the run",
     OP_SET_OUTPUT_FORMAT, M_NONE, 0},
    {O_STATS, "stats", 0, K_BOOL, NULL, NULL, NULL, "after the run, write DIR/NAME_<domain>_stats.csv",
     OP_SET_STATS, M_DIRECT, 0},
    {O_SUMMARY, "summary", 'S', K_BOOL, NULL, NULL, NULL, "after the run, print summary tables",
     OP_SET_SUMMARY, M_DIRECT, 0},
    {O_SUMMARY_OUTPUT_FILE, "summary-output-file", 0, K_VALUE, "FILE", NULL, NULL,
     "where the summary goes: stdout, stderr (default) or a file", OP_SET_SUMMARY_OUTPUT_FILE, M_DIRECT, 0},
    {O_SUMMARY_UNITS, "summary-units", 'u', K_VALUE, "UNIT", NULL, NULL, "sec, msec, usec or nsec (default)",
     OP_SET_SUMMARY_UNITS, M_DIRECT, 0},
    {O_SUMMARY_PER_DOMAIN, "summary-per-domain", 'D', K_BOOL, NULL, NULL, NULL,
     "after the run, print the summary with a table of the domains (implies --summary)", OP_SET_SUMMARY_PER_DOMAIN,
     M_DIRECT, 0},
    {O_SUMMARY_GROUPS, "summary-groups", 0, K_MULTI, "REGEX...", NULL, NULL,
     "after the run, one summary table per group of domains matching REGEX, e.g. 'KERNEL_DISPATCH|MEMORY_COPY' "
     "(implies --summary)", OP_SET_SUMMARY_GROUPS, M_DIRECT, 0},
    {O_MINIMUM_OUTPUT_DATA, "minimum-output-data", 0, K_VALUE, "KB", NULL, NULL,
     "keep a process's database only if it recorded at least KB kilobytes of data (0 = always)",
     OP_SET_MINIMUM_OUTPUT_DATA, M_DIRECT, 0},
    {O_AGENT_INDEX, "agent-index", 'A', K_VALUE, "MODE", NULL, NULL,
     "how agents are numbered in outputs (\"Agent N\"): absolute (node id), relative (default), type-relative",
     OP_SET_AGENT_INDEX, M_DIRECT, 0},
    {O_KERNEL_INCLUDE_REGEX, "kernel-include-regex", 0, K_VALUE, "REGEX", NULL, "Filtering and control",
     "count only kernels whose name matches (POSIX extended regex; counters)", OP_SET_KERNEL_INCLUDE_REGEX, M_DIRECT, 0},
    {O_KERNEL_EXCLUDE_REGEX, "kernel-exclude-regex", 0, K_VALUE, "REGEX", NULL, NULL,
     "do not count kernels whose name matches", OP_SET_KERNEL_EXCLUDE_REGEX, M_DIRECT, 0},
    {O_COLLECTION_PERIOD, "collection-period", 'P', K_MULTI, "DELAY:DURATION:REPEAT...", NULL, NULL,
     "collect only in these windows (REPEAT 0 = forever)", OP_SET_COLLECTION_PERIOD, M_NONE, 0},
    {O_COLLECTION_PERIOD_UNIT, "collection-period-unit", 0, K_VALUE, "UNIT", NULL, NULL,
     "unit of --collection-period: hour, min, sec (default), msec, usec, nsec", -1, M_NONE, 0},
    {O_FLUSH_INTERVAL, "flush-interval", 0, K_VALUE, "MSEC", NULL, NULL,
     "flush buffers and database every MSEC milliseconds (default 1000; 0 = only at exit)",
     OP_SET_FLUSH_INTERVAL, M_DIRECT, 0},
    {O_MANGLED_KERNELS, "mangled-kernels", 'M', K_BOOL, NULL, NULL, NULL, "keep kernel names mangled",
     OP_SET_DEMANGLE_KERNELS, M_INVERT, 0},
    {O_TRUNCATE_KERNELS, "truncate-kernels", 'T', K_BOOL, NULL, NULL, NULL,
     "truncate kernel names to the function name (no arguments, templates)", OP_SET_TRUNCATE_KERNELS, M_DIRECT, 0},
    {O_KERNEL_RENAME, "kernel-rename", 0, K_BOOL, NULL, NULL, NULL,
     "name each kernel dispatch by the user-API or NVTX range open around its launch", OP_SET_KERNEL_RENAME, M_DIRECT, 0},
    {O_SELECTED_REGIONS, "selected-regions", 0, K_BOOL, NULL, NULL, NULL,
     "start paused: collect only between omniprof_resume() and omniprof_pause() (or cudaProfilerStart/Stop)",
     OP_SET_SELECTED_REGIONS, M_DIRECT, 0},
    {O_PRELOAD, "preload", 0, K_MULTI, "LIB...", NULL, "Advanced", "libraries to put into LD_PRELOAD before omniprof's",
     -1, M_NONE, 0},
    {O_LOG_LEVEL, "log-level", 0, K_VALUE, "LEVEL", NULL, NULL, "fatal, error, warning (default), info, trace",
     OP_SET_LOG_LEVEL, M_DIRECT, 0},
    {O_DISABLE_SIGNAL_HANDLERS, "disable-signal-handlers", 0, K_BOOL, NULL, NULL, NULL,
     "do not flush on SIGINT/SIGTERM/SIGQUIT/SIGABRT", OP_SET_SIGNAL_HANDLERS, M_INVERT, 0},
    {O_ECHO, "echo", 0, K_BOOL, NULL, NULL, NULL, "print the environment and command to stderr, then run", -1, M_NONE, 0},
    {O_INPUT, "input", 'i', K_VALUE, "FILE", NULL, NULL,
     "read options from a JSON or YAML file (keys: long option names, '-' or '_') or text 'pmc:' lines",
     -1, M_NONE, 0},
    {O_INPUT_JOB, "input-job", 0, K_VALUE, "K", NULL, NULL,
     "run only job K (1, 2, ...) of the -i file's jobs list; the launcher runs each job as a "
     "pass of its own this way when the jobs differ in more than pmc",
     -1, M_NONE, 0},
    {O_CONFIG, "config", 'c', K_VALUE, "FILE", NULL, NULL,
     "configuration file(s), ':'-separated, read after the system and user files (KEY = value lines)",
     -1, M_NONE, 0},
    {O_OUTPUT_CONFIG, "output-config", 0, K_BOOL, NULL, NULL, NULL,
     "print every setting as the program would get it (a configuration file) and exit", -1, M_NONE, 0},
    {O_VERSION, "version", 'v', K_BOOL, NULL, NULL, NULL, "print omniprof's version and exit", -1, M_NONE, 0},
    {O_HELP, "help", 'h', K_BOOL, NULL, NULL, NULL, "show this help", -1, M_NONE, 0},
};
/* clang-format on */

const int run_n_options = (int)(sizeof(run_options) / sizeof(run_options[0]));
_Static_assert(sizeof(run_options) / sizeof(run_options[0]) == O__COUNT, "one row per option id, in order");

const char *run_command_name = "run";

void run_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "omniprof %s: ", run_command_name);
    vfprintf(stderr, fmt, ap);
    fputs("\n", stderr);
    va_end(ap);
}

char *run_xstrdup(const char *s)
{
    char *p = strdup(s ? s : "");
    if (!p) {
        fputs("omniprof run: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

void run_append_word(char **dst, const char *word)
{
    if (!*dst || !**dst) {
        free(*dst);
        *dst = run_xstrdup(word);
        return;
    }
    size_t a = strlen(*dst), b = strlen(word);
    char *p = realloc(*dst, a + b + 2);
    if (!p) {
        fputs("omniprof run: out of memory\n", stderr);
        exit(1);
    }
    p[a] = ' ';
    memcpy(p + a + 1, word, b + 1);
    *dst = p;
}

const run_option *run_option_by_long(const char *name, size_t n)
{
    for (int i = 0; i < run_n_options; i++)
        if (strlen(run_options[i].long_name) == n && strncmp(run_options[i].long_name, name, n) == 0)
            return &run_options[i];
    return NULL;
}

const run_option *run_option_by_id(int id) { return id >= 0 && id < O__COUNT ? &run_options[id] : NULL; }

bool run_opt_true(const run_opts *ro, int id)
{
    bool b = false;
    return ro->set[id] && ro->value[id] && op_parse_bool(ro->value[id], &b) == 0 && b;
}

/* Does `word` appear in the '|'-separated list? "#" in the list accepts any number. */
static bool word_in(const char *list, const char *word)
{
    if (!list || !word) return false;
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, "|");
        double d;
        if (len == 1 && *p == '#') {
            /* any number, NaN and overflow included: the setting's check then names its range */
            int rc = op_num_double(word, &d);
            if (rc != OP_NUM_SYNTAX && rc != OP_NUM_EMPTY) return true;
        } else if (len == n && strncmp(p, word, n) == 0) {
            return true;
        }
        p += len;
        if (*p == '|') p++;
    }
    return false;
}

char *run_normalize_value(const run_option *o, const char *text, char *err, size_t errlen)
{
    if (o->kind == K_BOOL) {
        bool b;
        if (op_parse_bool(text, &b) != 0) {
            snprintf(err, errlen, "\"%s\" must be true or false, not '%s'", o->long_name, text);
            return NULL;
        }
        return run_xstrdup(b ? "true" : "false");
    }
    if (o->kind == K_OPTVAL && *text && strcmp(text, "true") != 0 && !word_in(o->values, text)) {
        snprintf(err, errlen, "\"%s\" is '%s'; expected %s", o->long_name, text, o->metavar);
        return NULL;
    }
    return run_xstrdup(text);
}

bool run_same_value(const run_option *o, const char *a, const char *b)
{
    if (o->kind == K_BOOL) {
        bool x, y;
        return op_parse_bool(a, &x) == 0 && op_parse_bool(b, &y) == 0 && x == y;
    }
    return strcmp(a, b) == 0;
}

int run_store_option(void *ctx, const run_option *o, const char *value, int nth,
                     const char *spelled)
{
    run_opts *ro = ctx;
    (void)spelled;
    if (o->kind == K_MULTI) {
        /* A repeated --pmc starts a new group: the program runs once per group. */
        if (nth == 0 && o->id == O_PMC && ro->set[O_PMC]) run_append_word(&ro->value[o->id], ";");
        run_append_word(&ro->value[o->id], value);
    } else {
        free(ro->value[o->id]);
        ro->value[o->id] = run_xstrdup(value ? value : "true");
    }
    ro->set[o->id] = true;
    return 0;
}

int run_parse_command_line(run_opts *ro, const op_cli_command *cmd, int argc, char **argv)
{
    char err[1024];
    int rest = argc;
    int rc = op_cli_parse(cmd, argc, argv, run_store_option, ro, &rest, err, sizeof err);
    if (rc == -1) run_usage_error("%s", err);
    if (rc != 0) return -1;
    ro->program = argv + rest;
    ro->program_argc = argc - rest;
    return 0;
}

static const op_cli_table run_tables[] = {
    {run_options, (int)(sizeof run_options / sizeof run_options[0]), NULL, 0}};

#define RUN_NOTES                                                                                  \
    "Placeholders in -d and -o: %hostname% %pid% %ppid% %pgid% %psid% %rank% %local_rank% %size% " \
    "%job% %nid% "                                                                                 \
    "%cwd% %argv% %argt% %args% %arg<N>% %tag% %launch_date% %launch_time% %env{VAR}% (rank, "     \
    "local rank, size "                                                                            \
    "from Open MPI, MPICH/PMI, PMIx, Slurm SLURM_PROCID/SLURM_LOCALID, torchrun "                  \
    "RANK/LOCAL_RANK/WORLD_SIZE; "                                                                 \
    "docs/multinode.md).\n\n"                                                                      \
    "Exit status: the program's (128+N if signal N ended it); 2 for bad options (the program is "  \
    "not run); 1 if "                                                                              \
    "omniprof itself failed. Every OMNIPROF_* setting: `omniprof avail --settings`."

const op_cli_command run_command = {
    "run",
    "run a program under the tracer (rocprofv3 options); writes <name>_results.db",
    "omniprof run [options] -- program [args...]",
    "Runs the program with omniprof's tool preloaded; each process writes DIR/NAME_results.db "
    "(rocpd schema). "
    "The options are rocprofv3's; a configuration file (-c) and an input file (-i) may give them "
    "too.",
    RUN_NOTES,
    run_tables,
    1,
    OP_CLI_PROGRAM,
    NULL,
};

const op_cli_command sample_command = {
    "sample",
    "run a program with call-stack sampling (= run --sample --summary)",
    "omniprof sample [options] -- program [args...]",
    "Runs the program as `omniprof run --sample --summary` does: call-stack sampling on the thread "
    "CPU time, "
    "then the summary with the CPU flat and call-tree profiles (--summary=false leaves it out, "
    "--sample realtime "
    "samples the wall clock). Every option of `omniprof run` applies.",
    RUN_NOTES,
    run_tables,
    1,
    OP_CLI_PROGRAM,
    NULL,
};

void run_free_opts(run_opts *ro)
{
    for (int i = 0; i < O__COUNT; i++) {
        free(ro->value[i]);
        ro->value[i] = NULL;
    }
}
