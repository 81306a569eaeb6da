/* cmd_instrument.c — `omniprof instrument [options] [run options] -- program [args]`: record
 * the entry and exit of functions of an unmodified program (and of its shared libraries) as
 * FUNCTION_CALL regions, and `--list` of what can be instrumented (docs/instrument.md).
 *
 * The options are the rows of ins_options below (shared with `omniprof attach --instrument`)
 * followed by every `omniprof run` option (output directory, formats, --sample, ...), one table
 * for the parser, --help, the man page and completion (common/cli_opt.h). The command sets the
 * OMNIPROF_INSTRUMENT* settings and LD_AUDIT when needed, then runs `omniprof run` with the
 * run options, spelled again.
 *
 * --method auto chooses, and says why on stderr:
 *   compiler  when the program calls __cyg_profile_func_enter (built with -finstrument-functions
 *             and linked with -lomniprof-user): the hooks are there, cheaper than any probe;
 *   uprobe    otherwise, when this user may open a uprobe with perf_event_open (root or
 *             CAP_PERFMON);
 *   audit     otherwise (LD_AUDIT: only calls through the PLT into shared libraries).
 * Exit status: that of `omniprof run` (the program's), 2 for a bad option or regex. */
#include <errno.h>
#include <linux/perf_event.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elf/ins_functions.h"
#include "cli/cli_lib.h"
#include "cli/cmd_instrument.h"
#include "cli/cmd_run.h"
#include "cli/commands.h"
#include "common/settings.h"

#define EXIT_USAGE 2

static void append_regex(char *dst, size_t n, const char *re)
{
    size_t len = strlen(dst);
    if (len == 0) snprintf(dst, n, "%s", re);
    else if (dst[0] == '(') snprintf(dst + len, n - len, "|(%s)", re);
    else {
        char tmp[2048];
        snprintf(tmp, sizeof tmp, "(%s)|(%s)", dst, re);
        snprintf(dst, n, "%s", tmp);
    }
}

/* May this user place a uprobe? Tried on this very binary (pid 0 = ourselves). */
static int uprobe_permitted(char *why, size_t n)
{
    FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "re");
    int type = -1;
    if (f) {
        if (fscanf(f, "%d", &type) != 1) type = -1;
        fclose(f);
    }
    if (type < 0) {
        snprintf(why, n, "the kernel has no uprobe PMU");
        return 0;
    }
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        snprintf(why, n, "cannot read /proc/self/exe");
        return 0;
    }
    self[len] = '\0';
    op_ins_module m;
    char err[256];
    uint64_t off = 0;
    if (op_ins_module_read(self, true, &m, err, sizeof err) == 0) {
        for (size_t i = 0; i < m.n_fns && !off; i++)
            if (m.fns[i].status == OP_INS_OK && m.fns[i].size) off = m.fns[i].file_offset;
        op_ins_module_free(&m);
    }
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = (uint32_t)type;
    a.config1 = (uint64_t)(uintptr_t)self;
    a.config2 = off;
    a.disabled = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        snprintf(why, n, "perf_event_open may place uprobes");
        return 1;
    }
    snprintf(why, n, "perf_event_open refuses uprobes (%s; needs root or CAP_PERFMON)", strerror(errno));
    return 0;
}

static bool calls_cyg_hooks(const char *prog)
{
    op_ins_module m;
    char err[256];
    if (op_ins_module_read(prog, true, &m, err, sizeof err) != 0) return false;
    bool yes = false;
    for (size_t i = 0; i < m.n_imports && !yes; i++) yes = !strcmp(m.imports[i], "__cyg_profile_func_enter");
    op_ins_module_free(&m);
    return yes;
}

static int find_program(const char *prog, char *out, size_t n)
{
    if (strchr(prog, '/')) {
        if (!realpath(prog, out)) return -1;
        return access(out, X_OK);
    }
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        const char *c = strchr(p, ':');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        char cand[PATH_MAX];
        snprintf(cand, sizeof cand, "%.*s/%s", (int)l, p, prog);
        if (access(cand, X_OK) == 0 && realpath(cand, out)) return 0;
        p += l + (c ? 1 : 0);
        if (!c) break;
    }
    (void)n;
    return -1;
}

/* The shared libraries the program would load, as the dynamic loader resolves them
 * (`ld.so --list`, which maps but runs nothing). */
static int list_libraries(const char *prog, char ***out)
{
    int n = 0, cap = 16;
    char **libs = calloc((size_t)cap, sizeof *libs);
    int pipefd[2];
    if (!libs || pipe(pipefd) != 0) {
        free(libs);
        return 0;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pipefd[1], 1);
        close(pipefd[0]);
        close(pipefd[1]);
        execl("/lib64/ld-linux-x86-64.so.2", "ld.so", "--list", prog, (char *)NULL);
        execl("/lib/ld-linux-aarch64.so.1", "ld.so", "--list", prog, (char *)NULL);
        _exit(127);
    }
    close(pipefd[1]);
    FILE *f = fdopen(pipefd[0], "r");
    char line[PATH_MAX + 64];
    while (f && fgets(line, sizeof line, f)) {
        char *arrow = strstr(line, "=> ");
        char *path = arrow ? arrow + 3 : line;
        while (*path == ' ' || *path == '\t') path++;
        if (*path != '/') continue;
        char *end = strstr(path, " (");
        if (end) *end = '\0';
        path[strcspn(path, "\n")] = '\0';
        if (n == cap) {
            char **p = realloc(libs, (size_t)(cap *= 2) * sizeof *libs);
            if (!p) break;
            libs = p;
        }
        libs[n++] = strdup(path);
    }
    if (f) fclose(f);
    if (pid > 0) waitpid(pid, NULL, 0);
    *out = libs;
    return n;
}

static void print_module(op_ins_module *m, size_t *n_avail, size_t *n_ins, size_t *n_exc)
{
    if (m->status != OP_INS_OK) {
        printf("excluded      %-40s %s: %s\n", "(every function)", m->path, m->module_reason);
        (*n_exc)++;
        return;
    }
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < m->n_fns; i++) {
            const op_ins_fn *fn = &m->fns[i];
            bool ok = fn->status == OP_INS_OK;
            if (ok != (pass == 0)) continue;
            if (fn->status != OP_INS_INLINED && fn->status != OP_INS_NO_SYMBOL) (*n_avail)++;
            if (ok) {
                (*n_ins)++;
                printf("instrumented  %-40s %6u insns  %s\n", fn->name, fn->insns, m->path);
            } else {
                (*n_exc)++;
                printf("excluded      %-40s %6u insns  %s: %s%s%s\n", fn->name, fn->insns, m->path,
                       op_ins_status_reason(fn->status), fn->alias_of ? " " : "", fn->alias_of ? fn->alias_of : "");
            }
        }
}

/* The program and its libraries, read and given their status under the options and the
 * method, as the profiled process would (what --list prints, what the checks before a run
 * count). */
typedef struct ins_selection {
    op_ins_filter filter;
    uint64_t min_insns;
    char **libs;
    int n_libs;
    op_ins_module *mods;
    int n_mods;
    char **imports; /* every module's PLT imports (borrowed from mods) */
    size_t n_imports;
    size_t n_ok;
} ins_selection;

static void selection_free(ins_selection *s)
{
    free(s->imports);
    for (int i = 0; i < s->n_mods; i++) op_ins_module_free(&s->mods[i]);
    free(s->mods);
    for (int i = 0; i < s->n_libs; i++) free(s->libs[i]);
    free(s->libs);
    op_ins_filter_fini(&s->filter);
    memset(s, 0, sizeof *s);
}

/* Returns 0; EXIT_USAGE (printed) for a bad filter or a program that is not an ELF file (a
 * library that cannot be read is said and left out). */
static int read_selection(const ins_opts *o, const char *prog, op_ins_method method, ins_selection *s)
{
    memset(s, 0, sizeof *s);
    char err[512];
    s->min_insns = 64;
    if (o->min_insns) op_parse_uint(o->min_insns, &s->min_insns);
    if (op_ins_filter_init(&s->filter, o->include, o->exclude, o->modules, s->min_insns, method, err, sizeof err) != 0) {
        fprintf(stderr, "omniprof instrument: %s\n", err);
        return EXIT_USAGE;
    }
    s->mods = calloc(1, sizeof *s->mods);
    if (!s->mods || op_ins_module_read(prog, true, &s->mods[0], err, sizeof err) != 0) {
        fprintf(stderr, "omniprof instrument: %s: it has no functions to instrument (give an ELF executable; for a "
                        "script, instrument its interpreter)\n", s->mods ? err : "out of memory");
        selection_free(s);
        return EXIT_USAGE;
    }
    s->n_mods = 1;
    s->n_libs = list_libraries(prog, &s->libs);
    op_ins_module *more = realloc(s->mods, ((size_t)s->n_libs + 1) * sizeof *more);
    if (!more) return 0;
    s->mods = more;
    /* read every module first: the audit method needs every caller's PLT imports */
    for (int i = 0; i < s->n_libs; i++) {
        if (op_ins_module_read(s->libs[i], false, &s->mods[s->n_mods], err, sizeof err) != 0) {
            fprintf(stderr, "omniprof instrument: %s\n", err);
            continue;
        }
        s->n_mods++;
    }
    for (int i = 0; i < s->n_mods; i++) {
        char **p = realloc(s->imports, (s->n_imports + s->mods[i].n_imports + 1) * sizeof *p);
        if (!p) break;
        s->imports = p;
        for (size_t k = 0; k < s->mods[i].n_imports; k++) s->imports[s->n_imports++] = s->mods[i].imports[k];
    }
    for (int i = 0; i < s->n_mods; i++)
        s->n_ok += op_ins_module_select(&s->mods[i], &s->filter, method == OP_INS_METHOD_AUDIT ? s->imports : NULL,
                                        s->n_imports);
    return 0;
}

static const char *const g_method_names[] = {[OP_INS_METHOD_UPROBE] = "uprobe", [OP_INS_METHOD_AUDIT] = "audit",
                                             [OP_INS_METHOD_COMPILER] = "compiler"};

static int do_list(const ins_opts *o, const char *prog, op_ins_method method)
{
    ins_selection s;
    int rc = read_selection(o, prog, method, &s);
    if (rc != 0) return rc;
    printf("# omniprof instrument --list: %s (method %s; min %llu instructions%s)\n", prog, g_method_names[method],
           (unsigned long long)s.min_insns, s.n_mods && s.mods[0].exact_insns ? "" : ", counted as bytes/4");
    size_t n_avail = 0, n_ins = 0, n_exc = 0;
    for (int i = 0; i < s.n_mods; i++) print_module(&s.mods[i], &n_avail, &n_ins, &n_exc);
    printf("# %zu available, %zu instrumented, %zu excluded\n", n_avail, n_ins, n_exc);
    selection_free(&s);
    return 0;
}

/* Can the method see what the options select? Said before the run, as perf and uftrace do
 * when a probe cannot be placed: nothing at all to record is an error (the program is not
 * run); functions named by -i that the method cannot see, while others are recorded, are a
 * warning naming them. `uprobe_why`: why auto did not take uprobes ("" when it was not
 * asked). Returns 0 to run, EXIT_USAGE (printed). */
static int check_method_sees(const ins_opts *o, const char *prog, op_ins_method method, const char *uprobe_why)
{
    char alt[512];
    snprintf(alt, sizeof alt, "--method uprobe (any function with a symbol; needs root or CAP_PERFMON%s%s)",
             *uprobe_why ? ": " : "", uprobe_why);
    if (method == OP_INS_METHOD_COMPILER) {
        ins_selection s;
        int rc = read_selection(o, prog, method, &s);
        if (rc != 0) return rc;
        const char *caller = NULL;
        bool user_lib = false;
        for (int i = 0; i < s.n_mods; i++) {
            const char *base = strrchr(s.mods[i].path, '/');
            base = base ? base + 1 : s.mods[i].path;
            if (!strncmp(base, "libomniprof-user.so", 19)) user_lib = true;
            for (size_t k = 0; k < s.mods[i].n_imports && !caller; k++)
                if (!strcmp(s.mods[i].imports[k], "__cyg_profile_func_enter")) caller = s.mods[i].path;
        }
        if (!caller || (!user_lib && s.n_libs > 0)) {
            fprintf(stderr,
                    "omniprof instrument: --method compiler cannot record anything in %s: %s; build it with "
                    "-finstrument-functions and link it with -lomniprof-user, or use %s or --method audit (calls "
                    "into shared libraries)\nomniprof instrument: the program was not run\n",
                    prog,
                    !caller ? "neither it nor its libraries call the -finstrument-functions hooks "
                              "(__cyg_profile_func_enter)"
                            : "it calls the -finstrument-functions hooks but is not linked with libomniprof-user, "
                              "which hands them to omniprof",
                    alt);
            rc = EXIT_USAGE;
        }
        selection_free(&s);
        return rc;
    }
    if (method != OP_INS_METHOD_AUDIT) return 0;
    ins_selection s;
    int rc = read_selection(o, prog, method, &s);
    if (rc != 0) return rc;
    char unseen[512] = "";
    size_t n_unseen = 0, used = 0;
    for (int i = 0; i < s.n_mods; i++)
        for (size_t k = 0; k < s.mods[i].n_fns; k++) {
            const op_ins_fn *fn = &s.mods[i].fns[k];
            if (fn->status != OP_INS_NOT_PLT || (!fn->forced && s.n_ok)) continue;
            if (n_unseen++ < 4 && used < sizeof unseen - 1) {
                int w = snprintf(unseen + used, sizeof unseen - used, "%s%s", used ? ", " : "", fn->name);
                used = w > 0 && (size_t)w < sizeof unseen - used ? used + (size_t)w : sizeof unseen - 1;
            }
        }
    char more[32] = "";
    if (n_unseen > 4) snprintf(more, sizeof more, " and %zu more", n_unseen - 4);
    /* (no function selected at all, whatever the method: --list says why; not this check's) */
    if (s.n_ok == 0 && n_unseen) {
        fprintf(stderr,
                "omniprof instrument: --method audit cannot record anything in %s: LD_AUDIT sees only calls through the "
                "PLT into shared libraries, and no selected function is called that way (%s%s); use %s, or build "
                "the program with -finstrument-functions -lomniprof-user and use --method compiler\n"
                "omniprof instrument: the program was not run\n",
                prog, unseen, more, alt);
        rc = EXIT_USAGE;
    } else if (n_unseen) {
        fprintf(stderr,
                "omniprof instrument: warning: --method audit cannot see %s%s (named by -i, not called through the "
                "PLT) will not be recorded; %s sees such functions\n",
                unseen, more, alt);
    }
    selection_free(&s);
    return rc;
}

enum {
    I_INCLUDE,
    I_EXCLUDE,
    I_MODULES,
    I_MIN_INSTRUCTIONS,
    I_MAX_FUNCTIONS,
    I_THROTTLE,
    I_METHOD,
    I_LIST
};

const op_cli_option ins_options[] = {
    {I_INCLUDE, "include", 'i', OP_CLI_VALUE, "REGEX", NULL, NULL,
     "only functions whose name matches (no size limit, no throttle for them); several -i are OR'd",
     -1, 0, 0},
    {I_EXCLUDE, "exclude", 'e', OP_CLI_VALUE, "REGEX", NULL, NULL,
     "never functions whose name matches (wins over -i); several are OR'd", -1, 0, 0},
    {I_MODULES, "modules", 'm', OP_CLI_VALUE, "REGEX", NULL, NULL,
     "also the shared libraries whose path matches", -1, 0, 0},
    {I_MIN_INSTRUCTIONS, "min-instructions", 0, OP_CLI_VALUE, "N", NULL, NULL,
     "leave out functions with fewer instructions (default 64)", -1, 0, 0},
    {I_MAX_FUNCTIONS, "max-functions", 0, OP_CLI_VALUE, "N", NULL, NULL,
     "instrument at most N functions (default 1024)", -1, 0, 0},
    {I_THROTTLE, "throttle", 0, OP_CLI_VALUE, "auto|off|CALLS:NS", "auto|off", NULL,
     "auto (default): stop recording a function after 100 calls shorter than 20x the method's "
     "cost; off; or CALLS:NS",
     -1, 0, 0},
    {I_METHOD, "method", 0, OP_CLI_ENUM, NULL, "auto|uprobe|audit|compiler", NULL,
     "auto (default), uprobe, audit (LD_AUDIT), compiler (-finstrument-functions)", -1, 0, 0},
    {I_LIST, "list", 0, OP_CLI_FLAG, NULL, NULL, NULL,
     "list the available, instrumented and excluded functions (with the reason for each "
     "exclusion); do not run",
     -1, 0, 0},
};
const int ins_n_options = (int)(sizeof ins_options / sizeof ins_options[0]);

bool ins_is_option(const op_cli_option *row)
{
    return row >= ins_options && row < ins_options + ins_n_options;
}

void ins_store_option(ins_opts *o, const op_cli_option *row, const char *v)
{
    switch (row->id) {
    case I_INCLUDE: append_regex(o->include, sizeof o->include, v); break;
    case I_EXCLUDE: append_regex(o->exclude, sizeof o->exclude, v); break;
    case I_MODULES: append_regex(o->modules, sizeof o->modules, v); break;
    case I_MIN_INSTRUCTIONS: o->min_insns = v; break;
    case I_MAX_FUNCTIONS: o->max_functions = v; break;
    case I_THROTTLE: o->throttle = v; break;
    case I_METHOD: o->method = v; break;
    case I_LIST: o->list = true; break;
    }
}

static const op_cli_table instrument_tables[] = {
    {ins_options, (int)(sizeof ins_options / sizeof ins_options[0]), NULL, 0},
    {run_options, O__COUNT, "Options of omniprof run (the program runs under it)", 0},
};

const op_cli_command instrument_command = {
    "instrument",
    "record function calls of a program (uprobes, LD_AUDIT, -finstrument-functions)",
    "omniprof instrument [-i REGEX] [-e REGEX] [-m REGEX] [--min-instructions N]\n"
    "                    [--max-functions N] [--throttle auto|off|CALLS:NS]\n"
    "                    [--method auto|uprobe|audit|compiler] [--list]\n"
    "                    [omniprof run options] -- program [args]",
    "Records each call of the selected functions (entry to return) as a FUNCTION_CALL region in "
    "the database: exact call counts, inclusive and exclusive time (docs/instrument.md). --method "
    "auto chooses compiler when the program calls the -finstrument-functions hooks, else uprobe "
    "when this user may place uprobes (root or CAP_PERFMON), else audit (LD_AUDIT: only calls "
    "through the PLT into shared libraries), and says why. The options of omniprof run apply "
    "(run's --input by its long name: -i is --include here).",
    "Exit status: that of omniprof run (the program's); 2 for a bad option or regex.",
    instrument_tables,
    2,
    OP_CLI_PROGRAM,
    NULL,
};

typedef struct ins_parse {
    ins_opts *o;
    char **fwd;
    int *nf;
    bool help;
    char words[64][256]; /* run's options, spelled again for `omniprof run` */
    int n_words;
} ins_parse;

static int on_option(void *ctx, const op_cli_option *row, const char *v, int nth,
                     const char *spelled)
{
    ins_parse *p = ctx;
    (void)spelled;
    if (ins_is_option(row)) {
        ins_store_option(p->o, row, v);
        return 0;
    }
    if (row->id == O_HELP && row == run_option_by_id(O_HELP)) {
        p->help = true;
        return 0;
    }
    if (p->n_words == 64) {
        fprintf(stderr, "omniprof instrument: too many options\n");
        return 1;
    }
    op_cli_respell(row, v, nth, p->words[p->n_words], sizeof p->words[0]);
    p->fwd[(*p->nf)++] = p->words[p->n_words++];
    return 0;
}

int ins_check_values(const ins_opts *o, const char *cmd)
{
    uint64_t u;
    const char *bad = o->min_insns && op_parse_uint(o->min_insns, &u) != 0 ? "min-instructions"
                      : o->max_functions && op_parse_uint(o->max_functions, &u) != 0 ? "max-functions"
                                                                                    : NULL;
    if (bad) {
        fprintf(stderr, "omniprof %s: --%s '%s' is not a non-negative integer\n", cmd, bad,
                bad[1] == 'i' ? o->min_insns : o->max_functions);
        return -1;
    }
    uint64_t tc, tn;
    char why[256];
    if (o->throttle && op_ins_throttle_parse(o->throttle, &tc, &tn, why, sizeof why) < 0) {
        fprintf(stderr, "omniprof %s: --throttle '%s' is not valid; %s\n", cmd, o->throttle, why);
        return -1;
    }
    const char *method = o->method ? o->method : "auto";
    if (strcmp(method, "auto") && strcmp(method, "uprobe") && strcmp(method, "audit") && strcmp(method, "compiler")) {
        fprintf(stderr, "omniprof %s: --method '%s' is not valid; expected auto, uprobe, audit or compiler\n", cmd, method);
        return -1;
    }
    op_ins_filter f;
    char err[512];
    if (op_ins_filter_init(&f, o->include, o->exclude, o->modules, 0, OP_INS_METHOD_UPROBE, err, sizeof err) != 0) {
        fprintf(stderr, "omniprof %s: %s\n", cmd, err);
        return -1;
    }
    op_ins_filter_fini(&f);
    return 0;
}

/* --method (auto: chosen here, and said why unless listing) into `methods`; why auto left
 * uprobes out, in uprobe_why ("" otherwise). */
static op_ins_method choose_method(const ins_opts *o, const char *prog, char *methods, size_t n, char *uprobe_why,
                                   size_t uwlen)
{
    const char *method = o->method ? o->method : "auto";
    char why[256] = "";
    uprobe_why[0] = '\0';
    if (!strcmp(method, "auto")) {
        if (calls_cyg_hooks(prog)) snprintf(methods, n, "compiler"), snprintf(why, sizeof why, "the program calls the -finstrument-functions hooks");
        else if (uprobe_permitted(why, sizeof why)) snprintf(methods, n, "uprobe");
        else snprintf(methods, n, "audit"), snprintf(uprobe_why, uwlen, "%s", why);
        if (!o->list) fprintf(stderr, "omniprof instrument: method %s (%s)\n", methods, why);
    } else {
        snprintf(methods, n, "%s", method);
    }
    return !strncmp(methods, "audit", 5)      ? OP_INS_METHOD_AUDIT
           : !strncmp(methods, "compiler", 8) ? OP_INS_METHOD_COMPILER
                                              : OP_INS_METHOD_UPROBE;
}

/* The OMNIPROF_INSTRUMENT* settings (and LD_AUDIT for the audit method) for `omniprof run`.
 * Returns 0 or 1 (printed). */
static int export_settings(const ins_opts *o, const char *methods)
{
    setenv("OMNIPROF_INSTRUMENT", methods, 1);
    setenv("OMNIPROF_INSTRUMENT_INCLUDE", o->include, 1);
    setenv("OMNIPROF_INSTRUMENT_EXCLUDE", o->exclude, 1);
    setenv("OMNIPROF_INSTRUMENT_MODULES", o->modules, 1);
    if (o->min_insns) setenv("OMNIPROF_INSTRUMENT_MIN_INSTRUCTIONS", o->min_insns, 1);
    if (o->max_functions) setenv("OMNIPROF_INSTRUMENT_MAX_FUNCTIONS", o->max_functions, 1);
    if (o->throttle) setenv("OMNIPROF_INSTRUMENT_THROTTLE", o->throttle, 1);
    if (!strstr(methods, "audit")) return 0;
    char audit[PATH_MAX];
    if (cli_lib_file("libomniprof-audit.so", audit, sizeof audit) != 0) {
        fprintf(stderr, "omniprof instrument: libomniprof-audit.so not found beside the omniprof libraries\n");
        return 1;
    }
    const char *old = getenv("LD_AUDIT");
    char value[2 * PATH_MAX];
    snprintf(value, sizeof value, "%s%s%s", audit, old && *old ? ":" : "", old && *old ? old : "");
    setenv("LD_AUDIT", value, 1);
    return 0;
}

/* Everything before `omniprof run`: returns -1 to run it, else an exit status. */
static int prepare(int argc, char **argv, ins_parse *p)
{
    ins_opts *o = p->o;
    char err[1024];
    int i = argc;
    int rc = op_cli_parse(&instrument_command, argc, argv, on_option, p, &i, err, sizeof err);
    if (rc == -1) fprintf(stderr, "omniprof instrument: %s\n", err);
    if (rc != 0) return EXIT_USAGE;
    if (p->help) {
        op_cli_print_help(stdout, &instrument_command);
        return 0;
    }
    if (i >= argc) {
        fprintf(stderr, "omniprof instrument: no program given (omniprof instrument [options] -- program [args])\n");
        return EXIT_USAGE;
    }
    if (ins_check_values(o, "instrument") != 0) return EXIT_USAGE;
    const char *prog_arg = argv[i];
    char prog[PATH_MAX];
    if (find_program(prog_arg, prog, sizeof prog) != 0) {
        fprintf(stderr, "omniprof instrument: program '%s' not found or not executable\n", prog_arg);
        return EXIT_USAGE;
    }
    char methods[64] = "", uprobe_why[256];
    op_ins_method lm =
        choose_method(o, prog, methods, sizeof methods, uprobe_why, sizeof uprobe_why);
    if (o->list) return do_list(o, prog, lm);
    rc = check_method_sees(o, prog, lm, uprobe_why);
    if (rc != 0) return rc;
    if (export_settings(o, methods) != 0) return 1;
    p->fwd[(*p->nf)++] = "--";
    for (; i < argc; i++) p->fwd[(*p->nf)++] = argv[i];
    p->fwd[*p->nf] = NULL;
    return -1;
}

int op_cmd_instrument(int argc, char **argv)
{
    char **fwd = calloc((size_t)argc + 4, sizeof *fwd);
    int nf = 0;
    if (!fwd) return 1;
    ins_opts o;
    memset(&o, 0, sizeof o);
    ins_parse *p = calloc(1, sizeof *p);
    if (!p) {
        free(fwd);
        return 1;
    }
    p->o = &o;
    p->fwd = fwd;
    p->nf = &nf;
    fwd[nf++] = "run";
    int rc = prepare(argc, argv, p);
    if (rc < 0) rc = op_cmd_run ? op_cmd_run(nf, fwd) : 1;
    free(p);
    free(fwd);
    return rc;
}
