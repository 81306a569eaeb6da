/* cmd_run_post.c — work after the run (`omniprof run --stats/--summary/-f ...`): the
 * databases the run wrote are read from the run manifest (OMNIPROF_RUN_MANIFEST: each traced
 * process appends the path of its database, one line per O_APPEND write) and converted by
 * libomniprof-output, each beside its database (DIR/NAME_results.db → DIR/NAME_<file>); the
 * summary covers them all.
 *
 * Before the run, run_check_outputs makes sure that no file the post-run work would write
 * exists already (nothing is ever replaced): when the output name is the same for every
 * process, the database the first process will take is predicted as the tool picks it (NAME,
 * else the first NAME-k whose database does not exist), and a file of that name from an
 * earlier run (its database removed since) stops the run before it starts, named. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cmd_run.h"
#include "common/path_template.h"

#ifdef OMNIPROF_HAVE_OUTPUT
#include "output/output.h"
#endif

/* The distinct lines of the manifest. */
static char **read_manifest(const char *manifest, int *n_out, int *n_removed)
{
    FILE *f = fopen(manifest, "r");
    char **dbs = NULL;
    int ndb = 0, cap = 0;
    if (f) {
        char line[4096];
        while (fgets(line, sizeof(line), f)) {
            line[strcspn(line, "\n")] = '\0';
            if (!line[0]) continue;
            if (access(line, F_OK) != 0) { /* not kept (--minimum-output-data) */
                (*n_removed)++;
                continue;
            }
            bool dup = false;
            for (int i = 0; i < ndb && !dup; i++) dup = strcmp(dbs[i], line) == 0;
            if (dup) continue;
            if (ndb == cap) {
                cap = cap ? cap * 2 : 16;
                char **t = realloc(dbs, (size_t)cap * sizeof(char *));
                if (!t) break;
                dbs = t;
            }
            dbs[ndb++] = run_xstrdup(line);
        }
        fclose(f);
    }
    *n_out = ndb;
    return dbs;
}

#ifdef OMNIPROF_HAVE_OUTPUT
/* One database (one process): <dir>/<name>_results.db → <dir>/<name>_<file>. */
static int convert_one(const char *db, unsigned fmt, int agent_index)
{
    char dir[4096], name[4096], err[1024] = "";
    snprintf(dir, sizeof(dir), "%s", db);
    char *slash = strrchr(dir, '/');
    snprintf(name, sizeof(name), "%s", slash ? slash + 1 : dir);
    size_t nl = strlen(name);
    if (nl > 11 && strcmp(name + nl - 11, "_results.db") == 0) name[nl - 11] = '\0';
    if (slash) *slash = '\0';
    else strcpy(dir, ".");
    op_out_options oo;
    memset(&oo, 0, sizeof(oo));
    oo.size = sizeof(oo);
    const char *in[1] = {db};
    oo.inputs = in;
    oo.n_inputs = 1;
    oo.formats = fmt;
    oo.out_dir = dir;
    oo.out_name = name;
    oo.window.size = sizeof(oo.window);
    oo.progress = 1;
    oo.agent_index = agent_index;
    if (op_output_convert(&oo, err, sizeof(err)) != 0) {
        fprintf(stderr, "omniprof run: converting %s: %s\n", db, err[0] ? err : "failed");
        return 1;
    }
    return 0;
}

static int summarize(char **dbs, int ndb, const run_plan *plan)
{
    op_out_summary_options so;
    memset(&so, 0, sizeof(so));
    so.size = sizeof(so);
    so.format = OP_OUT_SUMMARY_CONSOLE;
    int u = op_output_parse_units(plan->summary_units ? plan->summary_units : "nsec");
    so.units = u < 0 ? OP_OUT_NSEC : (op_out_units)u;
    so.domain_summary = 1; /* omniprof's summary is per domain: -D changes nothing more */
    so.window.size = sizeof(so.window);
    /* --summary-groups: one table per regex */
    char *groups = run_xstrdup(plan->summary_groups ? plan->summary_groups : "");
    const char *names[64];
    size_t n_groups = 0;
    for (char *save = NULL, *g = strtok_r(groups, " ", &save); g && n_groups < 64; g = strtok_r(NULL, " ", &save))
        names[n_groups++] = g;
    so.domain_groups = names;
    so.n_domain_groups = n_groups;
    const char *dest = plan->summary_output ? plan->summary_output : "stderr";
    const char *const *in = (const char *const *)dbs;
    char err[1024] = "";
    int r;
    if (strcmp(dest, "stdout") == 0) r = op_output_summary(in, (size_t)ndb, &so, stdout, err, sizeof(err));
    else if (strcmp(dest, "stderr") == 0 || !*dest) r = op_output_summary(in, (size_t)ndb, &so, stderr, err, sizeof(err));
    else r = op_output_summary_path(in, (size_t)ndb, &so, dest, err, sizeof(err));
    fflush(stdout);
    free(groups);
    if (r != 0) {
        fprintf(stderr, "omniprof run: summary: %s\n", err[0] ? err : "failed");
        return 1;
    }
    return 0;
}
#endif

int run_post(const char *manifest, const run_plan *plan)
{
    int ndb = 0, removed = 0, rc = 0;
    char **dbs = read_manifest(manifest, &ndb, &removed);
    if (ndb == 0 && removed > 0) {
        fprintf(stderr, "omniprof run: every database was below --minimum-output-data; nothing to post-process\n");
    } else if (ndb == 0) {
        fprintf(stderr, "omniprof run: no database was written by the program; nothing to post-process\n");
        rc = 1;
    } else {
#ifdef OMNIPROF_HAVE_OUTPUT
        unsigned fmt = (plan->format_bits & ~(unsigned)OP_OUT_FMT_ROCPD) | (plan->stats ? OP_OUT_FMT_STATS : 0);
        int agents = op_output_parse_agent_index(plan->agent_index);
        for (int i = 0; fmt && i < ndb; i++) rc |= convert_one(dbs[i], fmt, agents < 0 ? 0 : agents);
        if (plan->summary) rc |= summarize(dbs, ndb, plan);
#else
        (void)plan;
        for (int i = 0; i < ndb; i++) fprintf(stderr, "omniprof run: database: %s\n", dbs[i]);
#endif
    }
    for (int i = 0; i < ndb; i++) free(dbs[i]);
    free(dbs);
    return rc;
}

/* ---- before the run: no derived output may replace a file ------------------------------- */

/* Is `rest` (what follows "<base>_") the name of a file the post-run work writes? The names are
 * the output library's: results.pftrace, results.json, <table>.csv (rocprofv3's CSV names,
 * *_trace.csv, *_stats.csv), folded.txt, and the CPU backend's wall_clock.txt/.json. */
static bool is_derived(const char *rest)
{
    static const char *const exact[] = {"results.pftrace", "results.json", "folded.txt", "wall_clock.txt",
                                        "wall_clock.json", "agent_info.csv", "counter_collection.csv",
                                        "domain_stats.csv"};
    for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
        if (strcmp(rest, exact[i]) == 0) return true;
    size_t n = strlen(rest);
    if (strspn(rest, "abcdefghijklmnopqrstuvwxyz_") != n - 4 || n < 10 || strcmp(rest + n - 4, ".csv") != 0) return false;
    return (n > 10 && strncmp(rest + n - 10, "_trace.csv", 10) == 0) || strncmp(rest + n - 10, "_stats.csv", 10) == 0;
}

/* The first derived file of `base` in `dir`, into found; false when there is none. */
static bool derived_exists(const char *dir, const char *base, char *found, size_t len)
{
    DIR *d = opendir(dir);
    if (!d) return false;
    size_t bl = strlen(base);
    bool hit = false;
    for (struct dirent *e; !hit && (e = readdir(d));) {
        if (strncmp(e->d_name, base, bl) == 0 && e->d_name[bl] == '_' && is_derived(e->d_name + bl + 1)) {
            snprintf(found, len, "%.8200s/%s", dir, e->d_name);
            hit = true;
        }
    }
    closedir(d);
    return hit;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 || errno != ENOENT;
}

int run_check_outputs(const run_opts *ro, const run_plan *plan)
{
    const char *sum = plan->summary_output;
    if (plan->summary && sum && strcmp(sum, "stdout") != 0 && strcmp(sum, "stderr") != 0 && exists(sum)) {
        run_usage_error("--summary-output-file '%s' exists; nothing is replaced: remove it or name another file", sum);
        return -1;
    }
    if (!plan->non_rocpd && !plan->stats) return 0;
    const char *dir_tmpl = plan->out_dir, *file_tmpl = plan->out_file;
    if (!dir_tmpl || !file_tmpl || op_path_has_process_keys(dir_tmpl) || op_path_has_process_keys(file_tmpl))
        return 0; /* one name per process: each is new (the tool picks it when it starts) */
    op_path_context ctx;
    memset(&ctx, 0, sizeof(ctx));
    op_path_context_init_self(&ctx);
    ctx.argv = ro->program;
    ctx.argc = ro->program_argc;
    char dir[4096], file[4096], err[512], path[8200], found[8600];
    if (op_path_expand(dir_tmpl, &ctx, dir, sizeof(dir), err, sizeof(err)) != 0 ||
        op_path_expand(file_tmpl, &ctx, file, sizeof(file), err, sizeof(err)) != 0)
        return 0; /* checked before; the tool reports */
    /* NAME may hold directories: DIR/a/b → directory DIR/a, base b */
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    const char *base_name = slash + 1;
    for (int k = 0; k < 100000; k++) {
        char base[4200], db[12500];
        if (k) snprintf(base, sizeof(base), "%s-%d", base_name, k);
        else snprintf(base, sizeof(base), "%s", base_name);
        snprintf(db, sizeof(db), "%s/%s_results.db", path, base);
        if (exists(db)) continue; /* the tool will take a later name */
        if (derived_exists(path, base, found, sizeof(found))) {
            run_usage_error("'%s' exists (from an earlier run whose database is gone) and this run would write it "
                            "again; nothing is replaced: move it away or choose another -o",
                            found);
            return -1;
        }
        return 0;
    }
    return 0;
}
