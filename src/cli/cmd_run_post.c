/* cmd_run_post.c — work after the run (`omniprof run --stats/--summary/-f ...`): the
 * databases the run wrote are read from the run manifest (OMNIPROF_RUN_MANIFEST: each traced
 * process appends the path of its database, one line per O_APPEND write) and converted by
 * libomniprof-output, each beside its database (DIR/NAME_results.db → DIR/NAME_<file>); the
 * summary covers them all.
 * Nothing is replaced: the output library writes a derived file (or the summary file) that
 * exists already under the next free NAME-N name and says so (src/output/outfile.c). */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cmd_run.h"
#include "common/number.h"

#ifdef OMNIPROF_HAVE_OUTPUT
#include "output/output.h"
#endif

static struct timespec g_started; /* run_post_mark_start */

void run_post_mark_start(void) { clock_gettime(CLOCK_REALTIME, &g_started); }

static int after_start(const struct stat *st)
{
    return st->st_mtim.tv_sec > g_started.tv_sec ||
           (st->st_mtim.tv_sec == g_started.tv_sec && st->st_mtim.tv_nsec >= g_started.tv_nsec);
}

#define REPORT_MAX_DBS 8 /* more databases: the first ones, then their count and folder */

/* After the run: where each database went and which derived files were written beside it
 * (DIR/NAME_* written since the run started: conversions, summaries), with sizes. */
static void report_outputs(char **dbs, int ndb)
{
    for (int i = 0; i < ndb; i++) { /* "DIR/./NAME" (a -d of ".") reads as "DIR/NAME" */
        for (char *p; (p = strstr(dbs[i], "/./"));) memmove(p, p + 2, strlen(p + 2) + 1);
        if (i == REPORT_MAX_DBS - 1 && ndb > REPORT_MAX_DBS) {
            const char *slash = strrchr(dbs[i], '/');
            fprintf(stderr, "omniprof run: ... and %d more databases in %.*s\n", ndb - i,
                    slash ? (int)(slash - dbs[i]) : 1, slash ? dbs[i] : ".");
            break;
        }
        struct stat st;
        char size[OP_FMT_BYTES_LEN] = "?";
        if (stat(dbs[i], &st) == 0) op_fmt_bytes(size, sizeof size, (uint64_t)st.st_size);
        fprintf(stderr, "omniprof run: database: %s (%s)\n", dbs[i], size);
        /* its derived files: DIR/NAME_<file>, NAME the database's name before _results.db */
        char dir[4096], prefix[4096];
        snprintf(dir, sizeof dir, "%s", dbs[i]);
        char *slash = strrchr(dir, '/');
        snprintf(prefix, sizeof prefix, "%s", slash ? slash + 1 : dir);
        size_t pl = strlen(prefix);
        if (pl <= 11 || strcmp(prefix + pl - 11, "_results.db") != 0) continue;
        prefix[pl - 10] = '\0'; /* keeps the '_' */
        pl -= 10;
        if (slash) *slash = '\0';
        else strcpy(dir, ".");
        DIR *d = opendir(dir);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strncmp(e->d_name, prefix, pl) || !strcmp(e->d_name, prefix + 0) ||
                !strncmp(e->d_name + pl, "results.db", 10) || strstr(e->d_name, ".tmp-"))
                continue;
            char path[8192];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (stat(path, &st) || !S_ISREG(st.st_mode) || !after_start(&st)) continue;
            fprintf(stderr, "omniprof run:   derived: %s (%s)\n", path,
                    op_fmt_bytes(size, sizeof size, (uint64_t)st.st_size));
        }
        closedir(d);
    }
}

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
        /* The program has ended: a SIGINT/SIGTERM/SIGHUP now stops the launcher, and removes the
         * output it was writing (never a finished file, never a database). */
        op_output_remove_temps_on_signals(1);
        unsigned fmt = (plan->format_bits & ~(unsigned)OP_OUT_FMT_ROCPD) | (plan->stats ? OP_OUT_FMT_STATS : 0);
        int agents = op_output_parse_agent_index(plan->agent_index);
        for (int i = 0; fmt && i < ndb; i++) rc |= convert_one(dbs[i], fmt, agents < 0 ? 0 : agents);
        if (plan->summary) rc |= summarize(dbs, ndb, plan);
        op_output_remove_temps_on_signals(0);
#else
        (void)plan;
#endif
        report_outputs(dbs, ndb);
    }
    for (int i = 0; i < ndb; i++) free(dbs[i]);
    free(dbs);
    return rc;
}
