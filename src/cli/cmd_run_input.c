/* cmd_run_input.c — option sources other than the command line: the configuration files
 * (system, user, `-c FILE`; see the section at the end) and `omniprof run -i FILE`, as
 * rocprofv3 takes it
 * (docs/run.md): a JSON or YAML object whose keys are the long option names
 * ("kernel_trace" or "kernel-trace"), optionally as rocprofv3's `jobs` list, or a text file
 * of `pmc: A B C` lines, one pass per line.
 *
 * Format: by extension (.json, .yaml/.yml, .txt), else by content (a '{' first: JSON; only
 * `pmc:` lines and comments: text; otherwise YAML). JSON is read by common/json_parse.c; YAML
 * by libyaml, loaded with dlopen when a YAML file is given (the launcher must start on a machine
 * without it), into the same tree. Values: true/false, strings, numbers, lists of scalars for
 * multi-valued options; null leaves an option unset.
 *
 * Several jobs run the program once per job; jobs may differ only in `pmc` (their groups
 * become the `--pmc` groups, in order). A key also given on the command line with a different
 * value is an error naming both (rocprofv3's rule). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/cmd_run.h"
#include "common/json_parse.h"
#include "common/suggest.h"

#define INPUT_MAX_BYTES (16u << 20)
#define YAML_MAX_NODES 100000

/* ---- reading the file --------------------------------------------------------------------- */

static char *read_file(const char *file, size_t *len)
{
    FILE *f = fopen(file, "rb");
    if (!f) {
        run_usage_error("-i %s: cannot open: %s", file, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
        if (n + 1 >= cap) {
            if (cap >= INPUT_MAX_BYTES) {
                free(buf);
                fclose(f);
                run_usage_error("-i %s: larger than %u MiB; an options file is small", file, INPUT_MAX_BYTES >> 20);
                return NULL;
            }
            char *t = realloc(buf, cap * 2);
            if (!t) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = t;
            cap *= 2;
        }
    }
    bool failed = ferror(f);
    fclose(f);
    if (!buf || failed) {
        free(buf);
        run_usage_error("-i %s: cannot read the file", file);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* ---- YAML through libyaml (dlopen) -------------------------------------------------------- */

#ifdef OMNIPROF_HAVE_YAML
#include <dlfcn.h>
#include <yaml.h>

typedef struct yaml_api {
    int (*init)(yaml_parser_t *);
    void (*del)(yaml_parser_t *);
    void (*input)(yaml_parser_t *, const unsigned char *, size_t);
    int (*load)(yaml_parser_t *, yaml_document_t *);
    void (*doc_del)(yaml_document_t *);
    yaml_node_t *(*root)(yaml_document_t *);
    yaml_node_t *(*node)(yaml_document_t *, int);
} yaml_api;

static int yaml_load_api(yaml_api *a, char *err, size_t errlen)
{
    void *h = dlopen("libyaml-0.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(err, errlen, "YAML input needs libyaml (libyaml-0.so.2), which cannot be loaded: %s", dlerror());
        return -1;
    }
    *(void **)&a->init = dlsym(h, "yaml_parser_initialize");
    *(void **)&a->del = dlsym(h, "yaml_parser_delete");
    *(void **)&a->input = dlsym(h, "yaml_parser_set_input_string");
    *(void **)&a->load = dlsym(h, "yaml_parser_load");
    *(void **)&a->doc_del = dlsym(h, "yaml_document_delete");
    *(void **)&a->root = dlsym(h, "yaml_document_get_root_node");
    *(void **)&a->node = dlsym(h, "yaml_document_get_node");
    if (!a->init || !a->del || !a->input || !a->load || !a->doc_del || !a->root || !a->node) {
        snprintf(err, errlen, "libyaml-0.so.2 lacks the document API");
        return -1;
    }
    return 0;
}

typedef struct yconv {
    const yaml_api *api;
    yaml_document_t *doc;
    size_t budget; /* nodes left: an alias repeated many times cannot blow the tree up */
    char *err;
    size_t errlen;
} yconv;

static op_json *yaml_node_to_json(yconv *c, yaml_node_t *n, int depth)
{
    int line = (int)n->start_mark.line + 1, col = (int)n->start_mark.column + 1;
    if (c->budget-- == 0 || depth > OP_JSON_MAX_DEPTH) {
        snprintf(c->err, c->errlen, "line %d, column %d: too many or too deeply nested values", line, col);
        return NULL;
    }
    if (n->type == YAML_SCALAR_NODE) {
        const char *v = (const char *)n->data.scalar.value;
        bool plain = n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        if (plain && (!*v || !strcmp(v, "~") || !strcasecmp(v, "null"))) return op_json_new(OP_JSON_NULL, NULL, line, col);
        return op_json_new(OP_JSON_STRING, v, line, col);
    }
    bool map = n->type == YAML_MAPPING_NODE;
    op_json *out = op_json_new(map ? OP_JSON_OBJECT : OP_JSON_ARRAY, NULL, line, col);
    if (!out) return NULL;
    if (map) {
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
            yaml_node_t *k = c->api->node(c->doc, p->key), *v = c->api->node(c->doc, p->value);
            if (!k || !v || k->type != YAML_SCALAR_NODE) {
                snprintf(c->err, c->errlen, "line %d, column %d: a key must be a plain word", line, col);
                op_json_free(out);
                return NULL;
            }
            op_json *item = yaml_node_to_json(c, v, depth + 1);
            if (!item) {
                op_json_free(out);
                return NULL;
            }
            item->key = run_xstrdup((const char *)k->data.scalar.value);
            op_json_append(out, item);
        }
    } else {
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
            yaml_node_t *v = c->api->node(c->doc, *it);
            op_json *item = v ? yaml_node_to_json(c, v, depth + 1) : NULL;
            if (!item) {
                op_json_free(out);
                return NULL;
            }
            op_json_append(out, item);
        }
    }
    return out;
}

static op_json *parse_yaml(const char *text, size_t len, char *err, size_t errlen)
{
    yaml_api api;
    if (yaml_load_api(&api, err, errlen) != 0) return NULL;
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!api.init(&parser)) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    api.input(&parser, (const unsigned char *)text, len);
    op_json *out = NULL;
    if (!api.load(&parser, &doc)) {
        snprintf(err, errlen, "line %zu, column %zu: %s%s%s", parser.problem_mark.line + 1,
                 parser.problem_mark.column + 1, parser.problem ? parser.problem : "not valid YAML",
                 parser.context ? " " : "", parser.context ? parser.context : "");
    } else {
        yaml_node_t *root = api.root(&doc);
        if (!root) snprintf(err, errlen, "the file holds no document");
        else {
            yconv c = {&api, &doc, YAML_MAX_NODES, err, errlen};
            out = yaml_node_to_json(&c, root, 0);
        }
        api.doc_del(&doc);
    }
    api.del(&parser);
    return out;
}
#else
static op_json *parse_yaml(const char *text, size_t len, char *err, size_t errlen)
{
    (void)text;
    (void)len;
    snprintf(err, errlen, "YAML input is not built into this omniprof (libyaml-dev was missing); use JSON");
    return NULL;
}
#endif

/* ---- text `pmc:` lines -------------------------------------------------------------------- */

/* Is every line a comment, empty, or `pmc: ...`? (The old rocprof text format.) */
static bool is_pmc_text(const char *text)
{
    bool any = false;
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        const char *s = p;
        while (s < p + n && (*s == ' ' || *s == '\t' || *s == '\r')) s++;
        if (s < p + n && *s != '#') {
            if (strncmp(s, "pmc", 3) != 0) return false;
            const char *c = s + 3;
            while (*c == ' ' || *c == '\t') c++;
            if (*c != ':') return false;
            any = true;
        }
        p += n;
        if (*p) p++;
    }
    return any;
}

/* The text format as a tree: {"jobs": [{"pmc": "A B"}, ...]}. */
static op_json *parse_pmc_text(const char *text)
{
    op_json *root = op_json_new(OP_JSON_OBJECT, NULL, 1, 1), *jobs = op_json_new(OP_JSON_ARRAY, NULL, 1, 1);
    if (!root || !jobs) exit(1);
    jobs->key = run_xstrdup("jobs");
    op_json_append(root, jobs);
    int line = 1;
    for (const char *p = text; *p; line++) {
        size_t n = strcspn(p, "\n");
        char buf[4096];
        snprintf(buf, sizeof(buf), "%.*s", (int)(n < sizeof(buf) - 1 ? n : sizeof(buf) - 1), p);
        char *hash = strchr(buf, '#');
        if (hash) *hash = '\0';
        char *colon = strchr(buf, ':');
        if (colon) {
            /* the counters, separated by single spaces */
            char *v = colon + 1, *o = v;
            for (char *c = v; *c; c++) {
                bool sep = *c == ',' || *c == ' ' || *c == '\t' || *c == '\r';
                if (!sep) *o++ = *c;
                else if (o > v && o[-1] != ' ') *o++ = ' ';
            }
            if (o > v && o[-1] == ' ') o--;
            *o = '\0';
            op_json *job = op_json_new(OP_JSON_OBJECT, NULL, line, 1), *pmc = op_json_new(OP_JSON_STRING, v, line, 1);
            if (!job || !pmc) exit(1);
            pmc->key = run_xstrdup("pmc");
            op_json_append(job, pmc);
            op_json_append(jobs, job);
        }
        p += n;
        if (*p) p++;
    }
    return root;
}

/* ---- merging into the options ------------------------------------------------------------- */

/* A value as option text: scalars as written, a list of scalars joined by spaces. Returns a
 * malloc'd text; NULL for null (not set) with *null = true, or NULL with a message. */
static char *value_text(const op_json *v, bool *null, char *err, size_t errlen)
{
    *null = false;
    if (v->type == OP_JSON_NULL) {
        *null = true;
        return NULL;
    }
    if (v->type != OP_JSON_ARRAY && v->type != OP_JSON_OBJECT) return run_xstrdup(v->text ? v->text : "");
    if (v->type == OP_JSON_OBJECT) {
        snprintf(err, errlen, "line %d: \"%s\" is an object; expected a value or a list of values", v->line, v->key);
        return NULL;
    }
    char *acc = NULL;
    for (const op_json *it = v->child; it; it = it->next) {
        if (it->type == OP_JSON_ARRAY || it->type == OP_JSON_OBJECT) {
            free(acc);
            snprintf(err, errlen, "line %d: \"%s\" holds a nested %s; expected a list of words", it->line, v->key,
                     op_json_type_name(it->type));
            return NULL;
        }
        if (it->type != OP_JSON_NULL) run_append_word(&acc, it->text);
    }
    return acc ? acc : run_xstrdup("");
}

/* rocprofv3's option names (the keys of its input files) that are not omniprof's own: the
 * option each one means on CUDA and the CPU, or NULL where it has no meaning there (ROCm's
 * HSA, image and finalizer APIs, rocDecode/rocJPEG, scratch memory, thread trace, the Perfetto
 * SDK's buffers, the ROCm install...): such a key is reported with a warning and skipped, as
 * a file written for rocprofv3 must still run (docs/run.md, "Input files"). A "att" prefix
 * covers every thread-trace key. */
static const struct {
    const char *key, *ours;
} rocprofv3_keys[] = {
    {"hip-trace", "cuda-runtime-trace"},
    {"hip-runtime-trace", "cuda-runtime-trace"},
    {"hsa-trace", "cuda-driver-trace"},
    {"hsa-core-trace", "cuda-driver-trace"},
    {"hsa-amd-trace", "cuda-driver-trace"},
    {"rccl-trace", "nccl-trace"},
    {"kfd-trace", "unified-memory-trace"},
    {"kfd-page-migration-trace", "unified-memory-trace"},
    {"hip-compiler-trace", NULL},
    {"hsa-image-trace", NULL},
    {"hsa-finalizer-trace", NULL},
    {"scratch-memory-trace", NULL},
    {"rocdecode-trace", NULL},
    {"rocjpeg-trace", NULL},
    {"kokkos-trace", NULL},
    {"kfd-page-mapping-trace", NULL},
    {"kfd-queue-trace", NULL},
    {"kfd-dropped-events-trace", NULL},
    {"pc-sampling-beta-enabled", NULL},
    {"pc-sampling-unit", NULL},
    {"pmc-groups", NULL},
    {"pmc-group-interval", NULL},
    {"perfetto-backend", NULL},
    {"perfetto-buffer-size", NULL},
    {"perfetto-buffer-fill-policy", NULL},
    {"perfetto-shmem-size-hint", NULL},
    {"group-by-queue", NULL},
    {"rocm-root", NULL},
    {"sdk-soversion", NULL},
    {"sdk-version", NULL},
    {"list-avail", NULL},
    {"suppress-marker-preload", NULL},
    {"benchmark-mode", NULL},
    {"process-sync", NULL},
    {"readlink", NULL},
    {"realpath", NULL},
    {"advanced-thread-trace", NULL},
    {"att", NULL}, /* and every att-* key */
};

/* Whether `name` (dashes) is one of rocprofv3's keys above (*known), and then the option it
 * means here (NULL: none). */
static const char *rocprofv3_key(const char *name, bool *known)
{
    size_t n = sizeof rocprofv3_keys / sizeof rocprofv3_keys[0];
    *known = !strncmp(name, "att-", 4);
    for (size_t i = 0; i < n && !*known; i++)
        if (!strcmp(name, rocprofv3_keys[i].key)) {
            *known = true;
            return rocprofv3_keys[i].ours;
        }
    return NULL;
}

/* 1 when key `k` (underscores or dashes) of an input file is skipped: a rocprofv3 option with
 * no CUDA/CPU meaning. */
static bool skipped_key(const char *k)
{
    char name[128];
    snprintf(name, sizeof(name), "%s", k);
    for (char *c = name; *c; c++)
        if (*c == '_') *c = '-';
    bool known;
    return rocprofv3_key(name, &known) == NULL && known;
}

/* Set option `key` of a job to `v`. An option already given keeps its value when it is the
 * same; a different one is an error naming both places. */
static int merge_member(run_opts *ro, const op_json *v, const char *file, char *err, size_t errlen)
{
    char name[128];
    snprintf(name, sizeof(name), "%s", v->key);
    for (char *c = name; *c; c++)
        if (*c == '_') *c = '-';
    const run_option *o = run_option_by_long(name, strlen(name));
    if (!o) {
        bool known;
        const char *ours = rocprofv3_key(name, &known);
        if (known && !ours) {
            bool off = v->type == OP_JSON_NULL || (v->text && !strcasecmp(v->text, "false"));
            if (!off)
                fprintf(stderr,
                        "omniprof run: warning: -i %s: line %d: \"%s\" is a rocprofv3 "
                        "option without a CUDA/CPU meaning: skipped\n",
                        file, v->line, v->key);
            return 0;
        }
        if (known) o = run_option_by_long(ours, strlen(ours));
    }
    if (!o || o->id == O_INPUT || o->id == O_HELP) {
        snprintf(err, errlen,
                 "line %d: unknown option \"%s\"; keys are the long option names of `omniprof run --help` (e.g. "
                 "\"kernel_trace\", \"output_directory\")",
                 v->line, v->key);
        return -1;
    }
    bool null;
    char *text = value_text(v, &null, err, errlen);
    if (!text) return null ? 0 : -1;
    char why[256];
    char *norm = run_normalize_value(o, text, why, sizeof(why));
    free(text);
    if (!norm) {
        snprintf(err, errlen, "line %d: %s", v->line, why);
        return -1;
    }
    if (ro->set[o->id]) {
        bool same = run_same_value(o, ro->value[o->id], norm);
        if (!same) {
            snprintf(err, errlen, "--%s is '%s' on the command line but '%s' in %s; give it in one place only",
                     o->long_name, ro->value[o->id], norm, file);
            free(norm);
            return -1;
        }
        free(norm);
        return 0;
    }
    ro->value[o->id] = norm;
    ro->set[o->id] = true;
    ro->origin[o->id] = file;
    return 0;
}

static int merge_job(run_opts *ro, const op_json *job, const char *file, bool skip_pmc, char *err, size_t errlen)
{
    if (job->type != OP_JSON_OBJECT) {
        snprintf(err, errlen, "line %d: a job must be an object of options, not %s", job->line,
                 op_json_type_name(job->type));
        return -1;
    }
    for (const op_json *m = job->child; m; m = m->next) {
        if (skip_pmc && strcmp(m->key, "pmc") == 0) continue;
        if (strcmp(m->key, "jobs") == 0) {
            snprintf(err, errlen, "line %d: \"jobs\" inside a job", m->line);
            return -1;
        }
        if (merge_member(ro, m, file, err, errlen) != 0) return -1;
    }
    return 0;
}

static int g_argc;
static char **g_argv;
static int (*g_run_pass)(const char *, char **);

void run_input_set_argv(int argc, char **argv, int (*run_pass)(const char *, char **))
{
    g_argc = argc;
    g_argv = argv;
    g_run_pass = run_pass;
}

/* Jobs that differ in more than "pmc" (rocprofv3 runs each job on its own): each job is one
 * pass, the launcher run again as `omniprof run --input-job K <the same arguments>`, one after
 * the other; then the launcher exits with the first failing pass's status (else 0). */
static void run_job_passes(size_t n, const char *file, const char *key, int line)
{
    int status = 0;
    for (size_t k = 1; k <= n; k++) {
        char num[24];
        snprintf(num, sizeof num, "%zu", k);
        char **av = calloc((size_t)g_argc + 5, sizeof *av);
        if (!av) exit(1);
        int j = 0;
        av[j++] = (char *)"omniprof";
        av[j++] = g_argv[0];
        av[j++] = (char *)"--input-job";
        av[j++] = num;
        for (int i = 1; i < g_argc; i++) av[j++] = g_argv[i];
        fprintf(stderr,
                "omniprof %s: -i %s: job %zu of %zu (the jobs differ in \"%s\", line %d: "
                "one pass each)\n",
                g_argv[0], file, k, n, key, line);
        int st = g_run_pass("/proc/self/exe", av);
        free(av);
        if (st < 0) st = 1;
        if (!status) status = st;
    }
    exit(status);
}

/* 1 when some job's member `m` (not pmc, not skipped) differs from `other`'s (absent counts). */
static bool member_differs(const op_json *m, const op_json *other)
{
    if (!strcmp(m->key, "pmc") || skipped_key(m->key)) return false;
    const op_json *f = op_json_get(other, m->key);
    if (!f) return m->type != OP_JSON_NULL;
    char e[64];
    bool n1, n2;
    char *a = value_text(f, &n1, e, sizeof e), *b = value_text(m, &n2, e, sizeof e);
    bool same = (a && b && !strcmp(a, b)) || (n1 && n2);
    free(a);
    free(b);
    return !same;
}

/* The first member in which two jobs differ (NULL: they differ at most in pmc). */
static const op_json *jobs_differ(const op_json *jobs)
{
    const op_json *first = jobs->child;
    for (const op_json *j = first ? first->next : NULL; j; j = j->next) {
        if (j->type != OP_JSON_OBJECT || first->type != OP_JSON_OBJECT) return NULL;
        for (const op_json *m = j->child; m; m = m->next)
            if (member_differs(m, first)) return m;
        for (const op_json *m = first->child; m; m = m->next)
            if (member_differs(m, j)) return m;
    }
    return NULL;
}

/* The job of --input-job K (1-based) merged alone. */
static int merge_selected_job(run_opts *ro, const op_json *jobs, const char *file, char *err,
                              size_t errlen)
{
    char *end;
    unsigned long k = strtoul(ro->value[O_INPUT_JOB], &end, 10);
    if (*end || k < 1 || k > jobs->n_children) {
        snprintf(err, errlen, "--input-job %s: give a job number from 1 to %zu",
                 ro->value[O_INPUT_JOB], jobs->n_children);
        return -1;
    }
    const op_json *j = jobs->child;
    for (unsigned long i = 1; i < k; i++) j = j->next;
    return merge_job(ro, j, file, false, err, errlen);
}

/* Jobs that differ only in "pmc": one run per job, their groups in order. Jobs that differ in
 * anything else: one pass per job (run_job_passes). */
static int merge_jobs(run_opts *ro, const op_json *jobs, const char *file, char *err, size_t errlen)
{
    if (jobs->type != OP_JSON_ARRAY || jobs->n_children == 0) {
        snprintf(err, errlen, "line %d: \"jobs\" must be a non-empty list of objects", jobs->line);
        return -1;
    }
    if (jobs->n_children > RUN_MAX_PMC_GROUPS) { /* before any work that grows with the count */
        snprintf(err, errlen, "line %d: %zu jobs; at most %d (each job is one run of the program)", jobs->line,
                 jobs->n_children, RUN_MAX_PMC_GROUPS);
        return -1;
    }
    const op_json *first = jobs->child;
    if (ro->set[O_INPUT_JOB]) return merge_selected_job(ro, jobs, file, err, errlen);
    if (jobs->n_children == 1) return merge_job(ro, first, file, false, err, errlen);
    const op_json *d = g_argv && g_run_pass ? jobs_differ(jobs) : NULL;
    if (d) run_job_passes(jobs->n_children, file, d->key, d->line); /* exits */
    char *groups = NULL;
    for (const op_json *j = first; j; j = j->next) {
        if (j->type != OP_JSON_OBJECT) {
            free(groups);
            return merge_job(ro, j, file, false, err, errlen); /* the message */
        }
        /* Every member other than pmc must be the same in every job. */
        for (const op_json *m = j->child; m; m = m->next) {
            if (!strcmp(m->key, "pmc") || skipped_key(m->key)) continue;
            const op_json *f = op_json_get(first, m->key);
            bool n1, n2;
            char *a = f ? value_text(f, &n1, err, errlen) : NULL, *b = value_text(m, &n2, err, errlen);
            bool same = f && ((a && b && !strcmp(a, b)) || (n1 && n2));
            free(a);
            free(b);
            if (!same) {
                free(groups);
                snprintf(err, errlen,
                         "line %d: jobs differ in \"%s\"; several jobs may differ only in \"pmc\" (one run per job)",
                         m->line, m->key);
                return -1;
            }
        }
        const op_json *pmc = op_json_get(j, "pmc");
        bool null;
        char *g = pmc ? value_text(pmc, &null, err, errlen) : NULL;
        if (!g || !*g) {
            free(g);
            free(groups);
            snprintf(err, errlen, "line %d: each of several jobs needs its \"pmc\" counters", j->line);
            return -1;
        }
        if (groups) run_append_word(&groups, ";");
        run_append_word(&groups, g);
        free(g);
    }
    int rc = merge_job(ro, first, file, true, err, errlen);
    if (rc == 0 && ro->set[O_PMC] && strcmp(ro->value[O_PMC], groups) != 0) {
        snprintf(err, errlen, "--pmc is given on the command line and as several jobs in %s; give it in one place only",
                 file);
        rc = -1;
    } else if (rc == 0 && !ro->set[O_PMC]) {
        ro->value[O_PMC] = groups;
        ro->set[O_PMC] = true;
        ro->origin[O_PMC] = file;
        groups = NULL;
    }
    free(groups);
    return rc;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

int run_load_input(run_opts *ro, const char *file)
{
    size_t len;
    char *text = read_file(file, &len);
    if (!text) return -1;
    char err[1024] = "";
    const char *p = text + strspn(text, " \t\r\n");
    op_json *root;
    if (ends_with(file, ".json") || (!ends_with(file, ".yaml") && !ends_with(file, ".yml") && *p == '{'))
        root = op_json_parse(text, len, err, sizeof(err));
    else if (ends_with(file, ".txt") || (!ends_with(file, ".yaml") && !ends_with(file, ".yml") && is_pmc_text(text)))
        root = parse_pmc_text(text);
    else
        root = parse_yaml(text, len, err, sizeof(err));
    free(text);
    int rc = -1;
    if (root && root->type != OP_JSON_OBJECT)
        snprintf(err, sizeof(err), "the file holds %s; expected an object of options (or rocprofv3's \"jobs\" list)",
                 op_json_type_name(root->type));
    else if (root) {
        const op_json *jobs = op_json_get(root, "jobs");
        if (jobs && root->n_children > 1)
            snprintf(err, sizeof(err), "give options either inside \"jobs\" or at the top, not both");
        else
            rc = jobs ? merge_jobs(ro, jobs, file, err, sizeof(err)) : merge_job(ro, root, file, false, err, sizeof(err));
    }
    op_json_free(root);
    if (rc != 0) {
        if (strncmp(err, "--", 2) == 0) run_usage_error("%s", err);
        else run_usage_error("-i %s: %s", file, err);
    }
    return rc;
}

/* ---- configuration files ------------------------------------------------------------------
 *
 * `KEY = value` lines; '#' starts a comment; blank lines are skipped; a value may be quoted.
 * KEY is a long option name (`kernel-trace`, `kernel_trace`), or a setting: `OMNIPROF_X` always
 * names setting X (`OMNIPROF_COLLECTION_PERIOD` is in ns, `collection_period` in -P's unit), a
 * bare name that is no option names a setting too; case-insensitive. A setting that an option carries goes to that option
 * (so `OMNIPROF_STATS = true` asks for the post-run work as `--stats` does); the others are
 * settings for the program. Files are read in order — the system file, the user file, then
 * each `-c` file — and a later one overrides an earlier one; the command line and `-i` override
 * them all; they override the environment. An unknown key or a bad value is an error naming the
 * file and line. */

#define CFG_MAX_FILES 16
#define CFG_MAX_BYTES (1u << 20)

static char g_cfg_names[CFG_MAX_FILES][4096]; /* the files read: origins point here */
static int g_n_cfg;

/* The option that carries setting `id` directly, or NULL. */
static const run_option *option_for_setting(int id)
{
    for (int i = 0; i < run_n_options; i++)
        if (run_options[i].setting == id) return &run_options[i];
    return NULL;
}

static void set_option_from_file(run_opts *ro, const run_option *o, char *value, const char *file)
{
    if (ro->set[o->id] && !ro->from_config[o->id]) { /* the command line or -i wins */
        free(value);
        return;
    }
    if (!*value && o->kind != K_BOOL) { /* an empty value leaves the option unset (as its default) */
        free(value);
        free(ro->value[o->id]);
        ro->value[o->id] = NULL;
        ro->set[o->id] = ro->from_config[o->id] = false;
        ro->origin[o->id] = NULL;
        return;
    }
    free(ro->value[o->id]);
    ro->value[o->id] = value;
    ro->set[o->id] = true;
    ro->from_config[o->id] = true;
    ro->origin[o->id] = file;
}

/* The unknown key `key`: the closest option or setting name. */
static const char *closest_key(const char *key)
{
    const char *names[O__COUNT + OP_SET__COUNT];
    size_t n = 0;
    for (int i = 0; i < run_n_options; i++) names[n++] = run_options[i].long_name;
    for (int i = 0; i < OP_SET__COUNT; i++) names[n++] = op_setting_get_info((op_setting_id)i)->env_name;
    return op_suggest_closest(key, names, n);
}

/* Apply one entry. Returns 0, or -1 with the message in err. */
static int config_entry(run_opts *ro, run_file_setting *out, int max, int *n_out, const char *file, const char *key,
                        const char *value, char *err, size_t errlen)
{
    bool prefixed = strncasecmp(key, "OMNIPROF_", 9) == 0; /* a setting, never an option */
    const char *bare = prefixed ? key + 9 : key;
    char name[128];
    snprintf(name, sizeof(name), "%s", bare);
    for (char *c = name; *c; c++) *c = *c == '_' ? '-' : (char)tolower((unsigned char)*c);
    const run_option *o = prefixed ? NULL : run_option_by_long(name, strlen(name));
    if (o && (o->id == O_INPUT || o->id == O_CONFIG || o->id == O_OUTPUT_CONFIG || o->id == O_VERSION ||
              o->id == O_HELP)) {
        snprintf(err, errlen, "\"%s\" cannot be given in a configuration file", key);
        return -1;
    }
    if (o) {
        char *norm = run_normalize_value(o, value, err, errlen);
        if (!norm) return -1;
        if (o->map == M_DIRECT && op_setting_validate((op_setting_id)o->setting, norm, err, errlen) != 0) {
            free(norm);
            return -1;
        }
        set_option_from_file(ro, o, norm, file);
        return 0;
    }
    for (char *c = name; *c; c++) *c = *c == '-' ? '_' : (char)toupper((unsigned char)*c);
    int id = op_setting_find(name);
    if (id < 0) {
        const char *close = closest_key(key);
        snprintf(err, errlen, "unknown key \"%s\"%s%s%s; keys are long option names or settings (`omniprof avail "
                 "--settings`)", key, close ? " (did you mean " : "", close ? close : "", close ? "?)" : "");
        return -1;
    }
    if (op_setting_validate((op_setting_id)id, value, err, errlen) != 0) return -1;
    o = option_for_setting(id);
    if (o && o->id == O_COLLECTION_PERIOD) { /* ns triplets, ';'-separated: -P in nsec */
        char *v = run_xstrdup(value);
        for (char *c = v; *c; c++)
            if (*c == ';') *c = ' ';
        if (ro->set[O_COLLECTION_PERIOD] && !ro->from_config[O_COLLECTION_PERIOD]) {
            free(v);
            return 0;
        }
        set_option_from_file(ro, o, v, file);
        set_option_from_file(ro, run_option_by_id(O_COLLECTION_PERIOD_UNIT), run_xstrdup("nsec"), file);
        return 0;
    }
    if (o && o->id == O_PROCESS_SAMPLING) { /* a boolean setting; the option's value is the interval */
        bool b = false;
        op_parse_bool(value, &b);
        set_option_from_file(ro, o, run_xstrdup(b ? "" : "false"), file);
        return 0;
    }
    if (o) {
        bool b;
        if (o->map == M_INVERT && op_parse_bool(value, &b) == 0) value = b ? "false" : "true";
        char *norm = run_normalize_value(o, value, err, errlen);
        if (!norm) return -1;
        set_option_from_file(ro, o, norm, file);
        return 0;
    }
    for (int i = 0; i < *n_out; i++)
        if (out[i].id == (op_setting_id)id) { /* a later file overrides */
            free(out[i].value);
            out[i].value = run_xstrdup(value);
            out[i].file = file;
            return 0;
        }
    if (*n_out >= max) {
        snprintf(err, errlen, "too many settings");
        return -1;
    }
    out[*n_out].id = (op_setting_id)id;
    out[*n_out].value = run_xstrdup(value);
    out[*n_out].file = file;
    (*n_out)++;
    return 0;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n')) s[--n] = '\0';
    return s;
}

/* Read one file. A file that is missing, or that this user may not read (EACCES: another
 * user's home, a locked-down system file), is skipped when `optional` (the default system and
 * user files), the latter with one warning. Returns 0, or -1 (printed). */
static int load_config_file(run_opts *ro, const char *path, bool optional, run_file_setting *out, int max, int *n)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        if (optional && errno == ENOENT) return 0;
        if (optional && errno == EACCES) {
            fprintf(stderr, "omniprof run: warning: configuration file %s: cannot read it (%s); it is ignored\n", path,
                    strerror(errno));
            return 0;
        }
        run_usage_error("configuration file %s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    if (g_n_cfg == CFG_MAX_FILES) {
        fclose(f);
        run_usage_error("configuration file %s: more than %d files", path, CFG_MAX_FILES);
        return -1;
    }
    const char *file = g_cfg_names[g_n_cfg];
    snprintf(g_cfg_names[g_n_cfg++], sizeof(g_cfg_names[0]), "%s", path);
    char line[8192], err[1024];
    int lineno = 0, rc = 0;
    size_t total = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        total += strlen(line);
        if (total > CFG_MAX_BYTES || (!strchr(line, '\n') && !feof(f))) {
            run_usage_error("%s:%d: %s", path, lineno, total > CFG_MAX_BYTES ? "the file is too large" : "line too long");
            rc = -1;
            break;
        }
        char *p = trim(line);
        if (!*p || *p == '#') continue;
        char *eq = strchr(p, '=');
        if (!eq) {
            run_usage_error("%s:%d: expected KEY = value, got '%s'", path, lineno, p);
            rc = -1;
            break;
        }
        *eq = '\0';
        char *key = trim(p), *value = trim(eq + 1);
        const char *bad = *key ? NULL : "a line without a key";
        if (value[0] == '"' || value[0] == '\'') { /* quoted: up to the same quote, then a comment */
            char *close = strchr(value + 1, value[0]);
            char *rest = close ? trim(close + 1) : NULL;
            if (!close || (*rest && *rest != '#')) bad = "a quoted value must end with its quote (a comment may follow)";
            else {
                *close = '\0';
                value++;
            }
        } else {
            char *hash = strstr(value, " #");
            if (hash) value = trim((*hash = '\0', value));
        }
        if (bad || config_entry(ro, out, max, n, file, key, value, err, sizeof(err)) != 0) {
            run_usage_error("%s:%d: %s", path, lineno, bad ? bad : err);
            rc = -1;
        }
    }
    fclose(f);
    return rc;
}

/* Each ':'-separated file of `list`. */
static int load_config_list(run_opts *ro, const char *list, bool optional, run_file_setting *out, int max, int *n)
{
    char *copy = run_xstrdup(list);
    int rc = 0;
    for (char *save = NULL, *f = strtok_r(copy, ":", &save); f && rc == 0; f = strtok_r(NULL, ":", &save))
        rc = load_config_file(ro, f, optional, out, max, n);
    free(copy);
    return rc;
}

int run_load_config_files(run_opts *ro, run_file_setting *out, int max, int *n_out)
{
    *n_out = 0;
    g_n_cfg = 0;
    const char *sys = getenv(op_setting_get_info(OP_SET_SYSTEM_CONFIG_FILE)->env_name);
    const char *user = getenv(op_setting_get_info(OP_SET_CONFIG_FILE)->env_name);
    char path[4096 + 64];
    if (!sys || !*sys) {
        char dir[4096];
        ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
        if (n > 0) {
            dir[n] = '\0';
            char *slash = strrchr(dir, '/');
            if (slash) *slash = '\0';
            snprintf(path, sizeof(path), "%s/../etc/omniprof.cfg", dir);
            if (load_config_file(ro, path, true, out, max, n_out) != 0) return -1;
        }
    } else if (strcmp(sys, "none") != 0 && load_config_list(ro, sys, false, out, max, n_out) != 0) {
        return -1;
    }
    if (!user || !*user) {
        const char *home = getenv("HOME");
        if (home && *home) {
            snprintf(path, sizeof(path), "%s/.omniprof.cfg", home);
            if (load_config_file(ro, path, true, out, max, n_out) != 0) return -1;
        }
    } else if (strcmp(user, "none") != 0 && load_config_list(ro, user, false, out, max, n_out) != 0) {
        return -1;
    }
    if (ro->set[O_CONFIG] && load_config_list(ro, ro->value[O_CONFIG], false, out, max, n_out) != 0) return -1;
    return 0;
}
