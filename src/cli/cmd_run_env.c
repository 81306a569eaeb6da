/* cmd_run_env.c — from `omniprof run` options to the OMNIPROF_* settings the tool reads.
 *
 * A setting is addressed by its id (OP_SET_*) from the option table to here: the table's
 * M_DIRECT and M_INVERT rows are copied generically, the others have a handler below. Every
 * value is validated through the settings registry (type, range, choices) before it is put in
 * the environment, and the message names the option, the setting, the value and what is
 * valid. The environment is only the transport to the traced processes.
 *
 * Also here: the checks that need the file system (the output directory is created and
 * written to, --extra-metrics files exist, the program is found on PATH) and LD_PRELOAD. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli_lib.h"
#include "cli/cmd_run.h"
#include "common/number.h"
#include "common/path_template.h"
#include "common/regex_bound.h"

#ifdef OMNIPROF_HAVE_OUTPUT
#include "output/output.h"
#endif

/* ---- the environment list ----------------------------------------------------------------- */

void run_env_add(env_list *e, const char *name, const char *value)
{
    size_t nl = strlen(name);
    for (int i = 0; i < e->n; i++) {
        if (strncmp(e->items[i], name, nl) == 0 && e->items[i][nl] == '=') {
            free(e->items[i]);
            for (int k = i; k + 1 < e->n; k++) e->items[k] = e->items[k + 1];
            e->n--;
            break;
        }
    }
    if (e->n + 1 >= e->cap) {
        e->cap = e->cap ? e->cap * 2 : 64;
        e->items = realloc(e->items, (size_t)e->cap * sizeof(char *));
        if (!e->items) {
            fputs("omniprof run: out of memory\n", stderr);
            exit(1);
        }
    }
    size_t len = nl + strlen(value) + 2;
    char *s = malloc(len);
    if (!s) exit(1);
    snprintf(s, len, "%s=%s", name, value);
    e->items[e->n++] = s;
}

void run_env_free(env_list *e)
{
    for (int i = 0; i < e->n; i++) free(e->items[i]);
    free(e->items);
    memset(e, 0, sizeof(*e));
}

int run_set(env_list *e, op_setting_id id, const char *value, const char *from_option)
{
    const op_setting_info *info = op_setting_get_info(id);
    char err[768];
    if (op_setting_validate(id, value, err, sizeof(err)) != 0) {
        if (from_option) run_usage_error("%s: %s", from_option, err);
        else run_usage_error("%s", err);
        return -1;
    }
    run_env_add(e, info->env_name, value);
    return 0;
}

static bool file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* "--name" for messages. */
static const char *spelled(int id)
{
    static char buf[64];
    snprintf(buf, sizeof(buf), "--%s", run_option_by_id(id)->long_name);
    return buf;
}

/* ---- generic rows: tracing flags and plain values ------------------------------------------- */

static int set_table_rows(run_opts *ro, env_list *env, run_plan *plan)
{
    int bad = 0;
    int implied = 0;
    if (run_opt_true(ro, O_RUNTIME_TRACE) || run_opt_true(ro, O_SYS_TRACE)) implied |= IMPLIED_BY_RUNTIME;
    if (run_opt_true(ro, O_SYS_TRACE)) implied |= IMPLIED_BY_SYS;
    for (int i = 0; i < run_n_options; i++) {
        const run_option *o = &run_options[i];
        if (o->map == M_NONE) continue;
        bool on_by_aggregate = (o->implied_by & implied) != 0;
        if (!ro->set[o->id] && !on_by_aggregate) continue;
        const char *value = ro->set[o->id] ? ro->value[o->id] : "true";
        if (on_by_aggregate) value = "true"; /* -r/-s turn their members on */
        if (o->kind == K_BOOL) {
            bool b = false;
            op_parse_bool(value, &b);
            if (o->implied_by && b) plan->any_collect = true;
            if (o->map == M_INVERT) b = !b;
            value = b ? "true" : "false";
        }
        bad |= run_set(env, (op_setting_id)o->setting, value, spelled(o->id)) != 0;
    }
    plan->stats = run_opt_true(ro, O_STATS);
    plan->summary_per_domain = run_opt_true(ro, O_SUMMARY_PER_DOMAIN);
    plan->summary_groups = ro->set[O_SUMMARY_GROUPS] ? ro->value[O_SUMMARY_GROUPS] : NULL;
    /* -D and --summary-groups shape the summary, so they ask for it */
    plan->summary = run_opt_true(ro, O_SUMMARY) || plan->summary_per_domain || plan->summary_groups;
    plan->agent_index = ro->set[O_AGENT_INDEX] ? ro->value[O_AGENT_INDEX] : NULL;
    plan->summary_units = ro->set[O_SUMMARY_UNITS] ? ro->value[O_SUMMARY_UNITS] : NULL;
    plan->summary_output = ro->set[O_SUMMARY_OUTPUT_FILE] ? ro->value[O_SUMMARY_OUTPUT_FILE] : NULL;
    return bad ? -1 : 0;
}

/* ---- counters ----------------------------------------------------------------------------- */

static int set_counters(run_opts *ro, env_list *env, run_plan *plan)
{
    int bad = 0;
    if (ro->set[O_PMC]) {
        char *copy = run_xstrdup(ro->value[O_PMC]);
        for (char *save = NULL, *g = strtok_r(copy, ";", &save); g; g = strtok_r(NULL, ";", &save)) {
            while (*g == ' ') g++;
            size_t len = strlen(g);
            while (len && g[len - 1] == ' ') g[--len] = '\0';
            if (!len) continue;
            if (plan->n_pmc_groups == RUN_MAX_PMC_GROUPS) {
                run_usage_error("--pmc: more than %d groups", RUN_MAX_PMC_GROUPS);
                bad = 1;
                break;
            }
            plan->pmc_groups[plan->n_pmc_groups++] = run_xstrdup(g);
            bad |= run_set(env, OP_SET_PMC, g, "--pmc") != 0;
        }
        free(copy);
        if (plan->n_pmc_groups > 0) run_env_add(env, op_setting_get_info(OP_SET_PMC)->env_name, plan->pmc_groups[0]);
        plan->any_collect = true;
    }
    if (ro->set[O_EXTRA_METRICS]) {
        char *copy = run_xstrdup(ro->value[O_EXTRA_METRICS]);
        for (char *save = NULL, *f = strtok_r(copy, ":", &save); f; f = strtok_r(NULL, ":", &save))
            if (!file_exists(f)) {
                run_usage_error("--extra-metrics '%s': no such file", f);
                bad = 1;
            }
        free(copy);
        bad |= run_set(env, OP_SET_EXTRA_METRICS, ro->value[O_EXTRA_METRICS], "--extra-metrics") != 0;
    }
    if (ro->set[O_KERNEL_ITERATION_RANGE]) {
        const char *kr = ro->value[O_KERNEL_ITERATION_RANGE];
        op_id_range r[64];
        size_t n = 0;
        char why[256] = "no launch named";
        if (!*kr || op_idlist_parse(kr, 1, r, 64, &n, why, sizeof(why)) != 0 || n == 0) {
            run_usage_error("--kernel-iteration-range '%s' is not valid: %s; expected 1-based launches like '[1, [3-5]]' "
                            "or '1,3-5'",
                            kr, why);
            bad = 1;
        } else {
            bad |= run_set(env, OP_SET_KERNEL_ITERATION_RANGE, kr, "--kernel-iteration-range") != 0;
        }
    }
    return bad ? -1 : 0;
}

/* ---- CPU sampling ------------------------------------------------------------------------- */

/* --torch: the folder of omniprof's sitecustomize (python/omniprof/torch_hook) first on
 * PYTHONPATH: <build>/python/omniprof/torch_hook beside <build>/lib, or the installed package's
 * <libdir>/python3/dist-packages/omniprof/torch_hook. */
static int add_torch_hook(env_list *env)
{
    char lib[PATH_MAX], dir[PATH_MAX + 64];
    static const char *const k_rel[] = {"/../python/omniprof/torch_hook", "/python3/dist-packages/omniprof/torch_hook"};
    struct stat st;
    bool found = false;
    if (cli_lib_dir(lib, sizeof lib) == 0)
        for (size_t i = 0; i < sizeof k_rel / sizeof k_rel[0] && !found; i++) {
            snprintf(dir, sizeof dir, "%s%s", lib, k_rel[i]);
            char real[PATH_MAX];
            if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && realpath(dir, real)) {
                snprintf(dir, sizeof dir, "%s", real);
                found = true;
            }
        }
    if (!found) {
        run_usage_error("--torch: omniprof's Python hook (omniprof/torch_hook) is not installed beside %s",
                        cli_lib_dir(lib, sizeof lib) == 0 ? lib : "the omniprof binary");
        return 1;
    }
    const char *old = getenv("PYTHONPATH");
    size_t n = strlen(dir) + (old ? strlen(old) : 0) + 2;
    char *pp = malloc(n);
    if (!pp) return 1;
    snprintf(pp, n, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
    run_env_add(env, "PYTHONPATH", pp);
    free(pp);
    return 0;
}

static int set_cpu(run_opts *ro, env_list *env, run_plan *plan)
{
    int bad = 0;
    /* a frequency or counters ask for sampling */
    if ((ro->set[O_SAMPLING_FREQ] || ro->set[O_PERF_EVENTS]) && !ro->set[O_SAMPLE]) {
        ro->set[O_SAMPLE] = true;
        ro->value[O_SAMPLE] = run_xstrdup("cputime");
    }
    if (ro->set[O_SAMPLE]) {
        bad |= run_set(env, OP_SET_SAMPLE, *ro->value[O_SAMPLE] ? ro->value[O_SAMPLE] : "cputime", "--sample");
        plan->any_collect = plan->cpu_backend = true;
    }
    if (run_opt_true(ro, O_PC_SAMPLING) || ro->set[O_PC_SAMPLING_INTERVAL] || ro->set[O_PC_SAMPLING_METHOD]) {
        bad |= run_set(env, OP_SET_PC_SAMPLING, "true", "--pc-sampling");
        plan->any_collect = true;
    }
    if (ro->set[O_PM_SAMPLING]) { /* the metrics as one list (checked offline by cmd_run.c) */
        char *list = run_xstrdup(ro->value[O_PM_SAMPLING]);
        for (char *c = list; *c; c++)
            if (*c == ' ') *c = ',';
        if (!*list) {
            run_usage_error("--pm-sampling needs metric names (`omniprof avail --pm-metrics` lists them)");
            bad = 1;
        } else {
            bad |= run_set(env, OP_SET_PM_SAMPLING, list, "--pm-sampling");
        }
        free(list);
        plan->any_collect = true;
    } else if (ro->set[O_PM_SAMPLING_INTERVAL]) {
        run_usage_error("--pm-sampling-interval needs --pm-sampling METRIC...");
        bad = 1;
    }
    if (ro->set[O_SASS_METRICS] || run_opt_true(ro, O_UNIFIED_MEMORY_TRACE)) plan->any_collect = true;
    if (ro->set[O_SASS_METRICS] && (run_opt_true(ro, O_PC_SAMPLING) || ro->set[O_PC_SAMPLING_INTERVAL] ||
                                    ro->set[O_PC_SAMPLING_METHOD])) {
        run_usage_error("--sass-metrics and --pc-sampling cannot run in one process (CUPTI's profiler blocks its PC "
                        "sampling); run the program once with each");
        bad = 1;
    }
    if (run_opt_true(ro, O_LITE)) { /* docs/cuda.md, "lite" */
        bad |= run_set(env, OP_SET_KERNEL_TRACE, "true", "--lite");
        bad |= run_set(env, OP_SET_MARKER_TRACE, "true", "--lite");
        bad |= run_set(env, OP_SET_CUDA_KERNEL_CORRELATION, "false", "--lite");
        plan->any_collect = true;
    }
    if (run_opt_true(ro, O_TORCH)) { /* docs/python.md, "PyTorch operators" */
        bad |= run_set(env, OP_SET_TORCH, "true", "--torch");
        bad |= run_set(env, OP_SET_KERNEL_TRACE, "true", "--torch");
        bad |= run_set(env, OP_SET_MARKER_TRACE, "true", "--torch");
        /* the runtime's launching, copying and synchronizing calls, not the whole runtime API
         * (its per-launch queries cost CUPTI's interception; docs/python.md); cuBLAS/CUTLASS
         * launch through the driver API: their kernels' launching calls are driver calls
         * (without them 240 of 5,940 kernels of the test loop had no operator). A list of the
         * user's own stays. */
        if (!getenv("OMNIPROF_CUDA_RUNTIME_API_CALLS"))
            bad |= run_set(env, OP_SET_CUDA_RUNTIME_API_CALLS, "launches,copies,syncs", "--torch");
        if (!getenv("OMNIPROF_CUDA_DRIVER_API_CALLS"))
            bad |= run_set(env, OP_SET_CUDA_DRIVER_API_CALLS, "launches", "--torch");
        bad |= add_torch_hook(env);
        plan->any_collect = true;
    }
    const char *ps = ro->set[O_PROCESS_SAMPLING] ? ro->value[O_PROCESS_SAMPLING] : NULL;
    if (ps && strcmp(ps, "false") != 0) {
        bad |= run_set(env, OP_SET_PROCESS_SAMPLING, "true", "--process-sampling");
        if (*ps && strcmp(ps, "true") != 0)
            bad |= run_set(env, OP_SET_PROCESS_SAMPLING_INTERVAL, ps, "--process-sampling");
        plan->any_collect = plan->cpu_backend = true;
    }
    return bad ? -1 : 0;
}

/* ---- MPI and NCCL (docs/multinode.md) ------------------------------------------------------- */

static int set_comm(run_opts *ro, env_list *env, run_plan *plan)
{
    int bad = 0;
    if (run_opt_true(ro, O_MPI_TRACE)) plan->any_collect = plan->mpi_backend = true;
    if (run_opt_true(ro, O_NCCL_TRACE)) {
        /* the kernels NCCL launches are found through the CUDA calls made inside its calls */
        plan->any_collect = plan->mpi_backend = true;
        bad |= run_set(env, OP_SET_KERNEL_TRACE, "true", "--nccl-trace");
        bad |= run_set(env, OP_SET_CUDA_RUNTIME_API_TRACE, "true", "--nccl-trace");
        bad |= run_set(env, OP_SET_CUDA_DRIVER_API_TRACE, "true", "--nccl-trace");
    }
    return bad ? -1 : 0;
}

/* ---- collection periods ------------------------------------------------------------------- */

#define PERIOD_MAX_SEC OP_NUM_SECONDS_MAX /* a year: DELAY and DURATION */
#define PERIOD_MAX_REPEAT 1000000000ull

/* "D:D:R D:D:R" in `unit` → "d:d:r;d:d:r" in ns. Returns 0 or -1 (printed). */
static int convert_periods(const char *text, const char *unit, char *out, size_t outlen)
{
    static const struct { const char *name; double ns; } units[] = {
        {"hour", 3600e9}, {"min", 60e9}, {"sec", 1e9}, {"msec", 1e6}, {"usec", 1e3}, {"nsec", 1}};
    double scale = 0;
    for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++)
        if (strcmp(unit, units[k].name) == 0) scale = units[k].ns;
    if (scale == 0) {
        run_usage_error("--collection-period-unit='%s' is not valid; expected hour, min, sec, msec, usec or nsec", unit);
        return -1;
    }
    out[0] = '\0';
    size_t used = 0;
    char max_text[64];
    snprintf(max_text, sizeof(max_text), "[0,%.17g]", PERIOD_MAX_SEC * 1e9 / scale);
    for (const char *p = text; *p;) {
        while (*p == ' ' || *p == ';' || *p == ',') p++;
        if (!*p) break;
        size_t len = strcspn(p, " ;,");
        char item[128], why[192] = "";
        snprintf(item, sizeof(item), "%.*s", (int)(len < 127 ? len : 127), p);
        char *second = strchr(item, ':'), *third = second ? strchr(second + 1, ':') : NULL;
        double delay = 0, duration = 0;
        uint64_t repeat = 0;
        int rc = -1;
        if (second && third && !strchr(third + 1, ':')) {
            *second = *third = '\0';
            rc = op_num_parse_checked(item, OP_NUM_TYPE_DOUBLE, max_text, &delay, NULL, NULL, why, sizeof(why));
            if (rc == 0) rc = op_num_parse_checked(second + 1, OP_NUM_TYPE_DOUBLE, max_text, &duration, NULL, NULL, why,
                                                   sizeof(why));
            if (rc == 0) rc = op_num_parse_checked(third + 1, OP_NUM_TYPE_UINT, "[0,1000000000]", NULL, NULL, &repeat,
                                                   why, sizeof(why));
            *second = *third = ':';
        }
        if (rc != 0) {
            run_usage_error("--collection-period '%s' is not valid%s%s; expected DELAY:DURATION:REPEAT with DELAY and "
                            "DURATION in %s %s and an integer REPEAT (0 = forever), e.g. 1:2:0",
                            item, why[0] ? ": " : "", why, max_text, unit);
            return -1;
        }
        if (duration <= 0) {
            run_usage_error("--collection-period '%s': DURATION must be greater than 0", item);
            return -1;
        }
        int w = snprintf(out + used, outlen - used, "%s%llu:%llu:%llu", used ? ";" : "",
                         (unsigned long long)(delay * scale), (unsigned long long)(duration * scale),
                         (unsigned long long)repeat);
        if (w < 0 || (size_t)w >= outlen - used) {
            run_usage_error("--collection-period: too many periods");
            return -1;
        }
        used += (size_t)w;
        p += len;
    }
    if (used == 0) {
        run_usage_error("--collection-period needs DELAY:DURATION:REPEAT");
        return -1;
    }
    return 0;
}

static int set_control(run_opts *ro, env_list *env)
{
    if (ro->set[O_COLLECTION_PERIOD_UNIT] && !ro->set[O_COLLECTION_PERIOD]) {
        run_usage_error("--collection-period-unit needs --collection-period");
        return -1;
    }
    if (!ro->set[O_COLLECTION_PERIOD]) return 0;
    char ns[2048];
    const char *unit = ro->set[O_COLLECTION_PERIOD_UNIT] ? ro->value[O_COLLECTION_PERIOD_UNIT] : "sec";
    if (convert_periods(ro->value[O_COLLECTION_PERIOD], unit, ns, sizeof(ns)) != 0) return -1;
    return run_set(env, OP_SET_COLLECTION_PERIOD, ns, "--collection-period");
}

/* ---- output ------------------------------------------------------------------------------- */

/* The leading directories of `tmpl` (an absolute path template) that are the same in every
 * process: up to the first component with a per-process key ("/" at least). */
static void static_prefix(const char *tmpl, char *out, size_t n)
{
    snprintf(out, n, "%s", tmpl);
    if (!op_path_has_process_keys(out)) return;
    char *cut = out;
    for (char *slash = strchr(out + 1, '/');; slash = strchr(slash + 1, '/')) {
        char saved = slash ? *slash : '\0';
        if (slash) *slash = '\0';
        bool has = op_path_has_process_keys(out);
        if (slash) *slash = saved;
        if (has) break;
        cut = slash ? slash : out + strlen(out);
        if (!slash) break;
    }
    *cut = '\0';
    if (!out[0]) snprintf(out, n, "/");
}

/* The output location, checked before the program runs: expand the templates in this process,
 * make the directory absolute, create its process-independent leading part, and check (without
 * creating them: the tool does, in each process) the directories that -o adds below it (or
 * names itself, when absolute): every one that exists is a directory, the deepest accepts a
 * new file (cli_check_output_dir). */
static int check_output(const char *dir_tmpl, const char *file_tmpl, const op_path_context *ctx, char *abs_tmpl,
                        size_t abs_len)
{
    char err[1024], expanded[4096];
    if (op_path_expand(dir_tmpl, ctx, expanded, sizeof(expanded), err, sizeof(err)) != 0) {
        run_usage_error("--output-directory '%s': %s", dir_tmpl, err);
        return -1;
    }
    if (expanded[0] == '\0') {
        run_usage_error("--output-directory '%s' expands to an empty path", dir_tmpl);
        return -1;
    }
    bool relative = expanded[0] != '/';
    if (op_path_expand(file_tmpl, ctx, expanded, sizeof(expanded), err, sizeof(err)) != 0) {
        run_usage_error("--output-file '%s': %s", file_tmpl, err);
        return -1;
    }
    if (!*file_tmpl || file_tmpl[strlen(file_tmpl) - 1] == '/') {
        run_usage_error("--output-file '%s' is not valid: it must name a file (e.g. %%hostname%%/%%pid%%)", file_tmpl);
        return -1;
    }
    if (relative) snprintf(abs_tmpl, abs_len, "%s/%s", ctx->cwd, dir_tmpl);
    else snprintf(abs_tmpl, abs_len, "%s", dir_tmpl);

    char prefix_tmpl[8448], dir[4096];
    static_prefix(abs_tmpl, prefix_tmpl, sizeof(prefix_tmpl));
    if (op_path_expand(prefix_tmpl, ctx, dir, sizeof(dir), err, sizeof(err)) != 0) {
        run_usage_error("--output-directory '%s': %s", dir_tmpl, err);
        return -1;
    }
    if (cli_check_output_dir(dir, true, err, sizeof(err)) != 0) {
        run_usage_error("--output-directory '%s': %s; give a writable directory that exists or can be created", dir_tmpl,
                        err);
        return -1;
    }
    /* The directories of the database's path: -o's own, below -d unless -o is absolute. */
    char full[8448 + 4096];
    const char *last = strrchr(file_tmpl, '/');
    if (!last) return 0; /* a plain name: the directory above is checked */
    if (file_tmpl[0] == '/') snprintf(full, sizeof(full), "%.*s", (int)(last - file_tmpl), file_tmpl);
    else snprintf(full, sizeof(full), "%s/%.*s", abs_tmpl, (int)(last - file_tmpl), file_tmpl);
    static_prefix(full, prefix_tmpl, sizeof(prefix_tmpl));
    if (op_path_expand(prefix_tmpl, ctx, dir, sizeof(dir), err, sizeof(err)) != 0) {
        run_usage_error("--output-file '%s': %s", file_tmpl, err);
        return -1;
    }
    if (cli_check_output_dir(dir, false, err, sizeof(err)) != 0) {
        run_usage_error("--output-file '%s': %s; the database would be written below it", file_tmpl, err);
        return -1;
    }
    return 0;
}

static int set_output(run_opts *ro, env_list *env, run_plan *plan)
{
    op_path_context ctx;
    memset(&ctx, 0, sizeof(ctx));
    op_path_context_init_self(&ctx);
    ctx.argv = ro->program;
    ctx.argc = ro->program_argc;
    ctx.strict_args = ro->program_argc > 0; /* %arg<N>% names a word of this command line */
    char launch[32];
    snprintf(launch, sizeof(launch), "%lld", (long long)ctx.launch_time);
    if (run_set(env, OP_SET_LAUNCH_TIME, launch, NULL) != 0) return -1;
    /* Default directory: where omniprof run was started (not each process's own cwd, which a
     * child may have changed), with any '%' in it escaped. */
    char cwd_tmpl[8192];
    size_t o = 0;
    for (const char *c = ctx.cwd; *c && o + 3 < sizeof(cwd_tmpl); c++) {
        if (*c == '%') cwd_tmpl[o++] = '%';
        cwd_tmpl[o++] = *c;
    }
    cwd_tmpl[o] = '\0';
    const char *dir_tmpl = ro->set[O_OUTPUT_DIRECTORY] ? ro->value[O_OUTPUT_DIRECTORY] : cwd_tmpl;
    const char *file_tmpl = ro->set[O_OUTPUT_FILE] ? ro->value[O_OUTPUT_FILE] : "%hostname%/%pid%";
    char abs_dir[8448];
    if (check_output(dir_tmpl, file_tmpl, &ctx, abs_dir, sizeof(abs_dir)) != 0) return -1;
    int bad = run_set(env, OP_SET_OUTPUT_PATH, abs_dir, "--output-directory") != 0;
    bad |= run_set(env, OP_SET_OUTPUT_FILE, file_tmpl, "--output-file") != 0;
    plan->formats = ro->set[O_OUTPUT_FORMAT] ? ro->value[O_OUTPUT_FORMAT] : "rocpd";
    bad |= run_set(env, OP_SET_OUTPUT_FORMAT, plan->formats, "--output-format") != 0;
#ifdef OMNIPROF_HAVE_OUTPUT
    char err[512];
    if (!bad && op_output_parse_formats(plan->formats, OP_OUT_FMT_RUN, &plan->format_bits, err, sizeof(err)) != 0) {
        run_usage_error("--output-format: %s", err);
        return -1;
    }
    plan->non_rocpd = (plan->format_bits & ~(unsigned)OP_OUT_FMT_ROCPD) != 0;
#else /* only rocpd can be written: any other name is refused later */
    for (const char *p = plan->formats; *p;) {
        while (*p == ' ' || *p == ',') p++;
        size_t len = strcspn(p, " ,");
        if (len && !(len == 5 && strncmp(p, "rocpd", 5) == 0)) plan->non_rocpd = true;
        p += len;
    }
#endif
    return bad ? -1 : 0;
}

/* Each regex of --summary-groups compiles (size-bounded). */
static int check_summary_groups(const run_plan *plan)
{
    if (!plan->summary_groups) return 0;
    char *copy = run_xstrdup(plan->summary_groups);
    int bad = 0;
    for (char *save = NULL, *g = strtok_r(copy, " ", &save); g; g = strtok_r(NULL, " ", &save)) {
        regex_t re;
        char why[256];
        if (op_regex_compile(&re, g, REG_NOSUB, why, sizeof(why)) != 0) {
            run_usage_error("--summary-groups '%s' is not a usable POSIX extended regular expression: %s", g, why);
            bad = 1;
        } else {
            regfree(&re);
        }
    }
    free(copy);
    return bad ? -1 : 0;
}

int run_build_settings(run_opts *ro, env_list *env, run_plan *plan)
{
    int bad = 0;
    bad |= set_table_rows(ro, env, plan);
    bad |= check_summary_groups(plan);
    bad |= set_counters(ro, env, plan);
    bad |= set_cpu(ro, env, plan);
    bad |= set_comm(ro, env, plan);
    /* `omniprof instrument` sets OMNIPROF_INSTRUMENT (the methods) before it calls run */
    const char *instrument = getenv("OMNIPROF_INSTRUMENT");
    if (instrument && *instrument) plan->any_collect = true;
    if (set_output(ro, env, plan) != 0) return -1; /* later checks would repeat its message */
    if ((plan->stats || plan->summary) && !plan->any_collect) {
        run_usage_error("--stats and --summary need something to collect: a tracing option (e.g. --runtime-trace, "
                        "--marker-trace), --pmc or --sample");
        return -1;
    }
    bad |= set_control(ro, env);
    return bad ? -1 : 0;
}

/* ---- the program and LD_PRELOAD ----------------------------------------------------------- */

int run_resolve_program(const char *prog, char *out, size_t outlen)
{
    if (strchr(prog, '/')) {
        if (access(prog, X_OK) != 0 || !file_exists(prog)) return -1;
        snprintf(out, outlen, "%s", prog);
        return 0;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        size_t len = strcspn(p, ":");
        char cand[PATH_MAX];
        snprintf(cand, sizeof(cand), "%.*s/%s", (int)(len ? len : 1), len ? p : ".", prog);
        if (access(cand, X_OK) == 0 && file_exists(cand)) {
            snprintf(out, outlen, "%s", cand);
            return 0;
        }
        p += len;
        if (*p == ':') p++;
    }
    return -1;
}

static void lp_add(char **lp, const char *s)
{
    if (!s || !*s) return;
    if (*lp && **lp) run_append_word(lp, s);
    else {
        free(*lp);
        *lp = run_xstrdup(s);
    }
}

/* The OpenCL layer (docs/opencl.md) goes into OPENCL_LAYERS for OpenCL API tracing and for the
 * GPU activity kinds: last in the list, so that it is the outermost layer and sees the calls as
 * the program made them. */
static int add_opencl_layer(const run_opts *ro, const char *libdir, env_list *env)
{
    static const int wanting[] = {O_OPENCL_TRACE, O_KERNEL_TRACE, O_MEMORY_COPY_TRACE, O_MEMORY_SET_TRACE,
                                  O_MEMORY_ALLOCATION_TRACE, O_RUNTIME_TRACE, O_SYS_TRACE};
    char layer[PATH_MAX + 40];
    snprintf(layer, sizeof(layer), "%s/libomniprof-backend-opencl.so", libdir);
    if (run_opt_true(ro, O_OPENCL_TRACE) && !file_exists(layer)) {
        run_usage_error("--opencl-trace needs the OpenCL backend, which is not built (%s is missing)", layer);
        return RUN_EXIT_USAGE;
    }
    bool wanted = false;
    for (size_t i = 0; i < sizeof wanting / sizeof wanting[0]; i++) wanted |= run_opt_true(ro, wanting[i]);
    if (!wanted || !file_exists(layer)) return 0;
    const char *old = getenv("OPENCL_LAYERS");
    char *layers = malloc((old ? strlen(old) : 0) + strlen(layer) + 2);
    if (!layers) return 1;
    if (old && *old) sprintf(layers, "%s:%s", old, layer);
    else strcpy(layers, layer);
    run_env_add(env, "OPENCL_LAYERS", layers);
    free(layers);
    return 0;
}

/* True when the run sets `id` true: in the list being built (options, input files) or else in
 * the environment the program inherits. */
static bool setting_on(const env_list *env, op_setting_id id)
{
    const char *name = op_setting_get_info(id)->env_name, *value = NULL;
    size_t nl = strlen(name);
    for (int i = 0; i < env->n; i++)
        if (strncmp(env->items[i], name, nl) == 0 && env->items[i][nl] == '=') value = env->items[i] + nl + 1;
    if (!value) value = getenv(name);
    bool on = false;
    return value && op_parse_bool(value, &on) == 0 && on;
}

int run_build_preload(const run_opts *ro, const run_plan *plan, env_list *env)
{
    char libdir[PATH_MAX];
    if (cli_lib_dir(libdir, sizeof(libdir)) != 0) {
        fprintf(stderr, "omniprof run: cannot find omniprof's library directory (../lib beside the binary)\n");
        return 1;
    }
    char tool[PATH_MAX + 32], sdk[PATH_MAX + 32], cpu[PATH_MAX + 40], pre[PATH_MAX + 40], mpi[PATH_MAX + 40];
    char sync[PATH_MAX + 40];
    snprintf(pre, sizeof(pre), "%s/libomniprof-preload.so", libdir); /* the libc interposers: first */
    snprintf(sync, sizeof(sync), "%s/libomniprof-sync.so", libdir);  /* lock calls, only when traced */
    snprintf(tool, sizeof(tool), "%s/libomniprof-tool.so", libdir);
    snprintf(sdk, sizeof(sdk), "%s/libomniprof-sdk.so", libdir);
    snprintf(cpu, sizeof(cpu), "%s/libomniprof-backend-cpu.so", libdir);
    snprintf(mpi, sizeof(mpi), "%s/libomniprof-backend-mpi.so", libdir);
    if (!file_exists(tool) || !file_exists(sdk)) {
        fprintf(stderr, "omniprof run: %s is not built (looked in %s); build the targets omniprof-tool and omniprof-sdk\n",
                file_exists(tool) ? "libomniprof-sdk.so" : "libomniprof-tool.so", libdir);
        return 1;
    }
    if (plan->cpu_backend && !file_exists(cpu)) {
        run_usage_error("--sample/--process-sampling need the CPU backend, which is not built (%s is missing)", cpu);
        return RUN_EXIT_USAGE;
    }
    if (plan->mpi_backend && !file_exists(mpi)) {
        run_usage_error("--mpi-trace/--nccl-trace need the MPI backend, which is not built (%s is missing)", mpi);
        return RUN_EXIT_USAGE;
    }
    /* Words separated by spaces while building; ':' in LD_PRELOAD at the end. */
    char *lp = NULL;
    if (ro->set[O_PRELOAD]) {
        char *copy = run_xstrdup(ro->value[O_PRELOAD]);
        for (char *save = NULL, *w = strtok_r(copy, " :", &save); w; w = strtok_r(NULL, " :", &save)) {
            if (strchr(w, '/') && !file_exists(w)) {
                run_usage_error("--preload '%s': no such file", w);
                free(copy);
                free(lp);
                return RUN_EXIT_USAGE;
            }
            lp_add(&lp, w);
        }
        free(copy);
    }
    if (file_exists(pre)) lp_add(&lp, pre);
    bool locks = false;
    for (op_setting_id id = OP_SET_TRACE_THREAD_LOCKS; id <= OP_SET_TRACE_THREAD_JOIN; id++)
        locks |= setting_on(env, id);
    if (plan->cpu_backend && locks && file_exists(sync)) lp_add(&lp, sync);
    lp_add(&lp, tool);
    lp_add(&lp, sdk);
    if (plan->cpu_backend) lp_add(&lp, cpu);
    /* the MPI backend owns the MPI symbols: with the CPU backend too (MPI_Init names the rank,
     * the causal profiler's MPI waits) */
    if ((plan->mpi_backend || plan->cpu_backend) && file_exists(mpi)) lp_add(&lp, mpi);
    const char *old = getenv("LD_PRELOAD");
    if (old && *old) {
        char *copy = run_xstrdup(old);
        for (char *save = NULL, *w = strtok_r(copy, " :", &save); w; w = strtok_r(NULL, " :", &save))
            if (strcmp(w, tool) != 0 && strcmp(w, sdk) != 0 && strcmp(w, cpu) != 0 && strcmp(w, pre) != 0 &&
                strcmp(w, mpi) != 0 && strcmp(w, sync) != 0)
                lp_add(&lp, w);
        free(copy);
    }
    for (char *c = lp; c && *c; c++)
        if (*c == ' ') *c = ':';
    run_env_add(env, "LD_PRELOAD", lp ? lp : "");
    free(lp);
    return add_opencl_layer(ro, libdir, env);
}

/* ---- --output-config ---------------------------------------------------------------------- */

static const char *env_value(const env_list *env, const char *name)
{
    size_t nl = strlen(name);
    for (int i = 0; i < env->n; i++)
        if (strncmp(env->items[i], name, nl) == 0 && env->items[i][nl] == '=') return env->items[i] + nl + 1;
    return NULL;
}

/* Where the launcher's value of setting `id` came from. */
static const char *launcher_source(const run_opts *ro, op_setting_id id, const run_file_setting *fs, int n_fs)
{
    for (int i = 0; i < n_fs; i++)
        if (fs[i].id == id) return fs[i].file;
    for (int i = 0; i < run_n_options; i++) {
        const run_option *o = &run_options[i];
        if (o->setting != (int)id) continue;
        if (ro->set[o->id]) return ro->origin[o->id] ? ro->origin[o->id] : "command line";
        if (o->implied_by) return ro->set[O_SYS_TRACE] ? "--sys-trace" : "--runtime-trace";
    }
    if (id == OP_SET_OUTPUT_PATH || id == OP_SET_OUTPUT_FILE || id == OP_SET_OUTPUT_FORMAT) return "default of omniprof run";
    if (id == OP_SET_SAMPLE) return "command line"; /* --sampling-freq asks for sampling */
    if (id == OP_SET_PROCESS_SAMPLING_INTERVAL) return ro->origin[O_PROCESS_SAMPLING] ? ro->origin[O_PROCESS_SAMPLING]
                                                                                     : "command line";
    return "omniprof run";
}

void run_print_config(FILE *out, const run_opts *ro, const env_list *env, const run_file_setting *fs, int n_fs)
{
    fprintf(out, "# omniprof run --output-config: every setting as the program would get it\n"
                 "# (default < environment < configuration files < command line). Usable with `-c FILE`;\n"
                 "# defaults and per-run values are commented out.\n");
    for (int i = 0; i < OP_SET__COUNT; i++) {
        const op_setting_info *info = op_setting_get_info((op_setting_id)i);
        const char *v = env_value(env, info->env_name), *source;
        if (v) source = launcher_source(ro, (op_setting_id)i, fs, n_fs);
        else if ((v = getenv(info->env_name))) source = "environment";
        else v = info->default_value, source = "default";
        /* defaults, what the launcher sets for each run, the files themselves: commented out, so
         * that the file given back to -c changes only what was changed */
        bool internal = i == OP_SET_LAUNCH_TIME || i == OP_SET_RUN_MANIFEST || i == OP_SET_CONFIG_FILE ||
                        i == OP_SET_SYSTEM_CONFIG_FILE || !strcmp(source, "default");
        bool quote = !*v || strchr(v, '#') || v[0] == ' ' || v[strlen(v) - 1] == ' ' || v[0] == '"';
        char line[8192];
        snprintf(line, sizeof(line), "%s%s = %s%s%s", internal ? "# " : "", info->env_name, quote ? "\"" : "", v,
                 quote ? "\"" : "");
        fprintf(out, "%-60s # %s\n", line, source);
    }
}
