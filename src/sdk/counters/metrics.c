/* metrics.c — counter definitions: the metrics XML reader (libxml2), the registry of
 * definitions with stable ids, built-in device constants, edit distance for suggestions.
 *
 * File layout (share/omniprof/metrics.xml; docs/counters.md "Definitions"), after ROCprofiler
 * v1's metrics.xml: per-chip blocks of base counters, then global derived metrics.
 *
 *   <omniprof-metrics version="1">
 *     <GH100 vendor="NVIDIA">                              (or <chip name="GH100">)
 *       <constant name="SM_COUNT" value="132" descr="..."/>   offline value of a constant
 *       <metric name="dram__bytes_read.sum" block="dram" unit="byte" descr="..."/>
 *     </GH100>
 *     <global>
 *       <metric name="DRAM_READ_BW" expr="dram__bytes_read.sum / gpu__time_duration.sum"
 *               unit="GB/s" descr="..."/>
 *     </global>
 *   </omniprof-metrics>
 *
 * Invariants:
 *  (1) a definition's id is its index + 1 in `defs` and never changes; defs are never freed
 *      before op_metrics_reset (pointers handed out stay valid);
 *  (2) `index` maps (chip, name) of every non-removed definition to its slot; a replaced
 *      definition keeps its slot;
 *  (3) a load is all-or-nothing: the file is parsed and every expression checked (syntax and
 *      derived-to-derived cycles) before the registry changes.
 *
 * libxml2 is loaded with dlopen at the first XML load, not linked: libomniprof-sdk.so is
 * preloaded into every profiled program, and a machine without libxml2 (and its ICU data) must
 * still trace; there only metrics.xml is unavailable (one message), vendor metrics still work. */
#include "sdk/counters/metrics.h"

#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "common/alloc.h"
#include "common/log.h"
#include "common/settings.h"
#include "common/suggest.h"

/* ---- libxml2, loaded on first use ------------------------------------------------------- */

static struct {
    int tried, ok;
    xmlDocPtr (*read_memory)(const char *, int, const char *, const char *, int);
    const xmlError *(*last_error)(void);
    xmlNodePtr (*root)(const xmlDoc *);
    xmlAttrPtr (*has_prop)(const xmlNode *, const xmlChar *);
    long (*line_no)(const xmlNode *);
    void (*free_doc)(xmlDocPtr);
    void (*init)(void);
} X;

static int xml_load(char *err, size_t errlen)
{
    if (X.tried) {
        if (!X.ok)
            snprintf(err, errlen, "libxml2 (libxml2.so.2) is not installed: metrics XML cannot be read");
        return X.ok ? 0 : -1;
    }
    X.tried = 1;
    void *h = dlopen("libxml2.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(err, errlen, "libxml2 (libxml2.so.2) is not installed: metrics XML cannot be read (%s)", dlerror());
        return -1;
    }
    *(void **)&X.read_memory = dlsym(h, "xmlReadMemory");
    *(void **)&X.last_error = dlsym(h, "xmlGetLastError");
    *(void **)&X.root = dlsym(h, "xmlDocGetRootElement");
    *(void **)&X.has_prop = dlsym(h, "xmlHasProp");
    *(void **)&X.line_no = dlsym(h, "xmlGetLineNo");
    *(void **)&X.free_doc = dlsym(h, "xmlFreeDoc");
    *(void **)&X.init = dlsym(h, "xmlInitParser");
    X.ok = X.read_memory && X.last_error && X.root && X.has_prop && X.line_no && X.free_doc && X.init;
    if (!X.ok) {
        snprintf(err, errlen, "libxml2.so.2 lacks the functions omniprof needs");
        return -1;
    }
    X.init();
    return 0;
}

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static op_metric_def **defs;
static size_t n_defs, cap_defs;
static int64_t *index_slots; /* open addressing: def index or -1 */
static size_t index_cap;
static int loaded;

void op_metrics_lock(void) { pthread_mutex_lock(&g_lock); }
void op_metrics_unlock(void) { pthread_mutex_unlock(&g_lock); }

const char *const op_metrics_constant_names[] = {
    "SM_COUNT", "SM_CLOCK_HZ", "MEM_CLOCK_HZ", "MEM_BUS_WIDTH_BITS", "L2_CACHE_BYTES", "WARP_SIZE",
    "MAX_THREADS_PER_BLOCK", "GLOBAL_MEMORY_BYTES", "MAX_SHARED_MEMORY_PER_BLOCK", NULL};
const char *const op_metrics_constant_descriptions[] = {
    "Streaming multiprocessors (compute units) of the device",
    "Core (SM) clock rate in Hz",
    "Memory clock rate in Hz",
    "Width of the memory bus in bits",
    "L2 cache size in bytes",
    "Threads per warp",
    "Largest block size in threads",
    "Global memory in bytes",
    "Shared memory per block in bytes",
    NULL};

int op_metrics_agent_constant(const char *name, const omniprof_agent_v0_t *a, double *out)
{
    if (!name || !a || !out)
        return -1;
    if (!strcmp(name, "SM_COUNT")) *out = a->cu_count;
    else if (!strcmp(name, "SM_CLOCK_HZ")) *out = (double)a->core_clock_khz * 1000.0;
    else if (!strcmp(name, "MEM_CLOCK_HZ")) *out = (double)a->memory_clock_khz * 1000.0;
    else if (!strcmp(name, "MEM_BUS_WIDTH_BITS")) *out = a->memory_bus_width_bits;
    else if (!strcmp(name, "L2_CACHE_BYTES")) *out = a->l2_cache_bytes;
    else if (!strcmp(name, "WARP_SIZE")) *out = a->warp_size;
    else if (!strcmp(name, "MAX_THREADS_PER_BLOCK")) *out = a->max_threads_per_block;
    else if (!strcmp(name, "GLOBAL_MEMORY_BYTES")) *out = (double)a->memory_bytes;
    else if (!strcmp(name, "MAX_SHARED_MEMORY_PER_BLOCK")) *out = a->max_shared_memory_per_block;
    else return -1;
    return 0;
}

/* ---- index ------------------------------------------------------------------------------ */

static uint64_t hash_key(const char *chip, const char *name)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *s = chip; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
    for (const char *s = name; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int64_t index_lookup(const char *chip, const char *name)
{
    if (!index_cap)
        return -1;
    size_t mask = index_cap - 1;
    for (size_t i = hash_key(chip, name) & mask;; i = (i + 1) & mask) {
        int64_t s = index_slots[i];
        if (s < 0)
            return -1;
        op_metric_def *d = defs[s];
        if (!strcmp(d->chip, chip) && !strcmp(d->name, name))
            return s;
    }
}

static void index_put_raw(int64_t slot)
{
    size_t mask = index_cap - 1;
    op_metric_def *d = defs[slot];
    size_t i = hash_key(d->chip, d->name) & mask;
    while (index_slots[i] >= 0)
        i = (i + 1) & mask;
    index_slots[i] = slot;
}

static int index_rebuild(size_t cap)
{
    int64_t *ns = op_malloc(cap * sizeof *ns);
    if (!ns)
        return -1;
    for (size_t i = 0; i < cap; i++)
        ns[i] = -1;
    op_free(index_slots);
    index_slots = ns;
    index_cap = cap;
    for (size_t k = 0; k < n_defs; k++)
        if (!defs[k]->removed)
            index_put_raw((int64_t)k);
    return 0;
}

static int index_add(int64_t slot)
{
    if ((n_defs + 1) * 2 > index_cap) {
        size_t cap = index_cap ? index_cap * 2 : 1024;
        while ((n_defs + 1) * 2 > cap)
            cap *= 2;
        return index_rebuild(cap); /* includes slot (already in defs) */
    }
    index_put_raw(slot);
    return 0;
}

/* ---- definitions ------------------------------------------------------------------------ */

static void def_clear(op_metric_def *d)
{
    op_free(d->name);
    op_free(d->description);
    op_free(d->chip);
    op_free(d->expression);
    op_free(d->block);
    op_free(d->unit);
    op_expr_free(d->expr);
}

static char *dup0(const char *s) { return op_strdup(s ? s : ""); }

/* A new definition (not yet indexed); NULL on out of memory. */
static op_metric_def *def_new(const char *chip, const char *name)
{
    op_metric_def *d = op_calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->chip = dup0(chip);
    d->name = dup0(name);
    d->description = dup0("");
    d->expression = dup0("");
    d->block = dup0("");
    d->unit = dup0("");
    if (!d->chip || !d->name || !d->description || !d->expression || !d->block || !d->unit) {
        def_clear(d);
        op_free(d);
        return NULL;
    }
    return d;
}

/* Insert d, or replace the definition with the same (chip, name) keeping its id. */
static op_metric_def *def_commit(op_metric_def *d)
{
    int64_t s = index_lookup(d->chip, d->name);
    if (s >= 0) {
        op_metric_def *old = defs[s];
        uint64_t id = old->id;
        def_clear(old);
        *old = *d;
        old->id = id;
        old->removed = 0;
        op_free(d);
        return old;
    }
    /* a removed definition with the same key is revived (its id stays meaningful) */
    for (size_t k = 0; k < n_defs; k++) {
        op_metric_def *old = defs[k];
        if (old->removed && !strcmp(old->chip, d->chip) && !strcmp(old->name, d->name)) {
            uint64_t id = old->id;
            def_clear(old);
            *old = *d;
            old->id = id;
            old->removed = 0;
            op_free(d);
            index_add((int64_t)k);
            return old;
        }
    }
    if (n_defs == cap_defs) {
        size_t nc = cap_defs ? cap_defs * 2 : 256;
        op_metric_def **nd = op_realloc(defs, nc * sizeof *nd);
        if (!nd) {
            def_clear(d);
            op_free(d);
            return NULL;
        }
        defs = nd;
        cap_defs = nc;
    }
    d->id = n_defs + 1;
    defs[n_defs++] = d;
    if (index_add((int64_t)(n_defs - 1))) {
        n_defs--;
        def_clear(d);
        op_free(d);
        return NULL;
    }
    return d;
}

static void add_builtin_constants(void)
{
    for (size_t i = 0; op_metrics_constant_names[i]; i++) {
        if (index_lookup("", op_metrics_constant_names[i]) >= 0)
            continue;
        op_metric_def *d = def_new("", op_metrics_constant_names[i]);
        if (!d)
            return;
        op_free(d->description);
        d->description = dup0(op_metrics_constant_descriptions[i]);
        d->type = OMNIPROF_COUNTER_TYPE_CONSTANT;
        d->is_constant = 1;
        d->origin = OP_METRIC_ORIGIN_BUILTIN;
        snprintf(d->source, sizeof d->source, "built-in");
        def_commit(d);
    }
}

void op_metrics_reset(void)
{
    for (size_t k = 0; k < n_defs; k++) {
        def_clear(defs[k]);
        op_free(defs[k]);
    }
    op_free(defs);
    defs = NULL;
    n_defs = cap_defs = 0;
    op_free(index_slots);
    index_slots = NULL;
    index_cap = 0;
    loaded = 0;
}

op_metric_def *op_metrics_find(const char *chip, const char *name)
{
    if (!name)
        return NULL;
    int64_t s = index_lookup("", name);
    if (s >= 0)
        return defs[s];
    if (chip && *chip) {
        s = index_lookup(chip, name);
        if (s >= 0)
            return defs[s];
    }
    return NULL;
}

op_metric_def *op_metrics_find_exact(const char *chip, const char *name)
{
    if (!name)
        return NULL;
    int64_t s = index_lookup(chip ? chip : "", name);
    return s >= 0 ? defs[s] : NULL;
}

op_metric_def *op_metrics_get(uint64_t id)
{
    if (id == 0 || id > n_defs)
        return NULL;
    op_metric_def *d = defs[id - 1];
    return d->removed ? NULL : d;
}

size_t op_metrics_count(void) { return n_defs; }

op_metric_def *op_metrics_add_vendor(const char *chip, const char *name, const char *description, const char *block,
                                     const char *unit, uint32_t type)
{
    int64_t s = index_lookup(chip ? chip : "", name);
    if (s >= 0)
        return defs[s];
    op_metric_def *d = def_new(chip, name);
    if (!d)
        return NULL;
    op_free(d->description);
    d->description = dup0(description);
    op_free(d->block);
    d->block = dup0(block);
    op_free(d->unit);
    d->unit = dup0(unit);
    d->type = type;
    d->origin = OP_METRIC_ORIGIN_VENDOR;
    snprintf(d->source, sizeof d->source, "vendor catalog");
    return def_commit(d);
}

/* ---- cycle check ------------------------------------------------------------------------ */

/* Pending derived definitions of a load, looked up before the registry. */
typedef struct pending {
    op_metric_def **d;
    size_t n;
} pending;

static op_metric_def *lookup_derived(const pending *p, const char *name)
{
    for (size_t i = p ? p->n : 0; i-- > 0;)
        if (p->d[i]->is_derived && !strcmp(p->d[i]->name, name))
            return p->d[i];
    int64_t s = index_lookup("", name);
    if (s >= 0 && defs[s]->is_derived)
        return defs[s];
    return NULL;
}

/* Depth-first walk; stack holds the path. Returns 0, or -1 with the cycle in err. */
static int check_cycles(const pending *p, op_metric_def *d, const op_metric_def **stack, int depth, char *err,
                        size_t errlen)
{
    for (int i = 0; i < depth; i++)
        if (stack[i] == d) {
            size_t k = 0;
            k += (size_t)snprintf(err + k, errlen - k, "derived metrics refer to each other in a cycle: ");
            for (int j = i; j < depth && k < errlen; j++)
                k += (size_t)snprintf(err + k, errlen - k, "%s -> ", stack[j]->name);
            if (k < errlen)
                snprintf(err + k, errlen - k, "%s (%s)", d->name, d->source);
            return -1;
        }
    if (depth >= 32) {
        snprintf(err, errlen, "derived metric '%s' (%s) nests more than 32 levels of other metrics", d->name,
                 d->source);
        return -1;
    }
    stack[depth] = d;
    for (size_t i = 0; i < op_expr_num_names(d->expr); i++) {
        op_metric_def *c = lookup_derived(p, op_expr_name(d->expr, i));
        if (c && c != d && check_cycles(p, c, stack, depth + 1, err, errlen))
            return -1;
        if (c == d) {
            snprintf(err, errlen, "derived metric '%s' (%s) refers to itself", d->name, d->source);
            return -1;
        }
    }
    return 0;
}

/* ---- XML -------------------------------------------------------------------------------- */

/* The attribute's text (its text children concatenated), op_malloc'd; NULL if absent. */
static char *xml_attr(xmlNode *n, const char *a)
{
    xmlAttr *at = X.has_prop(n, (const xmlChar *)a);
    if (!at)
        return NULL;
    size_t len = 0;
    for (xmlNode *c = at->children; c; c = c->next)
        if (c->content)
            len += strlen((const char *)c->content);
    char *s = op_malloc(len + 1);
    if (!s)
        return NULL;
    s[0] = '\0';
    size_t k = 0;
    for (xmlNode *c = at->children; c; c = c->next)
        if (c->content) {
            size_t l = strlen((const char *)c->content);
            memcpy(s + k, c->content, l);
            k += l;
        }
    s[k] = '\0';
    return s;
}

static char *xml_attr2(xmlNode *n, const char *a, const char *b)
{
    char *s = xml_attr(n, a);
    return s ? s : xml_attr(n, b);
}

static int is_chip_name(const char *s)
{
    /* element names of chip blocks: anything but the reserved ones */
    return strcmp(s, "global") && strcmp(s, "derived") && strcmp(s, "include");
}

/* Parse a <metric> or <constant> element into a new definition. */
static op_metric_def *parse_entry(xmlNode *n, const char *chip, const char *source, char *err, size_t errlen)
{
    int is_const = !strcmp((const char *)n->name, "constant");
    char *name = xml_attr(n, "name");
    long line = X.line_no(n);
    if (!name || !*name) {
        snprintf(err, errlen, "%s:%ld: <%s> without a name attribute", source, line, (const char *)n->name);
        op_free(name);
        return NULL;
    }
    op_metric_def *d = def_new(chip, name);
    op_free(name);
    if (!d) {
        snprintf(err, errlen, "%s: out of memory", source);
        return NULL;
    }
    snprintf(d->source, sizeof d->source, "%s:%ld", source, line);
    d->origin = OP_METRIC_ORIGIN_XML;
    char *v;
    if ((v = xml_attr2(n, "descr", "description"))) {
        op_free(d->description);
        d->description = v;
    }
    if ((v = xml_attr(n, "block"))) {
        op_free(d->block);
        d->block = v;
    }
    if ((v = xml_attr(n, "unit"))) {
        op_free(d->unit);
        d->unit = v;
    }
    char *expr = xml_attr(n, "expr");
    if (is_const) {
        d->type = OMNIPROF_COUNTER_TYPE_CONSTANT;
        d->is_constant = 1;
        char *val = xml_attr(n, "value");
        if (val) {
            char *end = NULL;
            d->value = strtod(val, &end);
            if (!*val || (end && *end)) {
                snprintf(err, errlen, "%s: constant '%s': value '%s' is not a number", d->source, d->name, val);
                op_free(val);
                op_free(expr);
                def_clear(d);
                op_free(d);
                return NULL;
            }
            d->has_value = 1;
            op_free(val);
        }
        op_free(expr);
        return d;
    }
    if (expr) {
        op_expr_error e;
        d->expr = op_expr_parse(expr, &e);
        if (!d->expr) {
            char what[256];
            snprintf(what, sizeof what, "%s: metric '%s': bad expression", d->source, d->name);
            op_expr_format_error(what, expr, &e, err, errlen);
            op_free(expr);
            def_clear(d);
            op_free(d);
            return NULL;
        }
        op_free(d->expression);
        d->expression = expr;
        d->is_derived = 1;
        d->type = OMNIPROF_COUNTER_TYPE_DERIVED;
    } else {
        if (!*chip) {
            snprintf(err, errlen, "%s: metric '%s' in <global> needs an expr attribute", d->source, d->name);
            def_clear(d);
            op_free(d);
            return NULL;
        }
        char *type = xml_attr(n, "type");
        d->type = OMNIPROF_COUNTER_TYPE_COUNTER;
        if (type && !strcmp(type, "ratio"))
            d->type = OMNIPROF_COUNTER_TYPE_RATIO;
        else if (type && !strcmp(type, "throughput"))
            d->type = OMNIPROF_COUNTER_TYPE_THROUGHPUT;
        op_free(type);
    }
    return d;
}

/* The parsed document of `xml`, or NULL with the parser's message (file:line:column). */
static xmlDoc *read_doc(const char *xml, size_t size, const char *source, char *err, size_t errlen)
{
    xmlDoc *doc = X.read_memory(xml, (int)size, source, NULL,
                                XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOBLANKS);
    if (doc)
        return doc;
    const xmlError *xe = X.last_error();
    if (xe && xe->message) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", xe->message);
        size_t l = strlen(msg);
        while (l && (msg[l - 1] == '\n' || msg[l - 1] == ' '))
            msg[--l] = '\0';
        snprintf(err, errlen, "%s:%d:%d: not well-formed XML: %s", source, xe->line, xe->int2, msg);
    } else {
        snprintf(err, errlen, "%s: not well-formed XML", source);
    }
    return NULL;
}

/* The chip a block of the document is for ("" for <global>/<derived>), malloc'd; NULL with a
 * message for a block that is not one. */
static char *block_chip(xmlNode *blk, const char *source, char *err, size_t errlen)
{
    const char *bname = (const char *)blk->name;
    if (!strcmp(bname, "global") || !strcmp(bname, "derived"))
        return op_strdup("");
    if (strcmp(bname, "chip")) {
        if (is_chip_name(bname))
            return op_strdup(bname);
        snprintf(err, errlen, "%s:%ld: unexpected <%s>", source, X.line_no(blk), bname);
        return NULL;
    }
    char *chip = xml_attr(blk, "name");
    if (!chip || !*chip) {
        snprintf(err, errlen, "%s:%ld: <chip> without a name attribute", source, X.line_no(blk));
        op_free(chip);
        return NULL;
    }
    return chip;
}

/* The <metric>/<constant> entries of one block, parsed into `p`. Returns 0 or -1 (err). */
static int read_block(xmlNode *blk, pending *p, size_t *cap, const char *source, char *err, size_t errlen)
{
    char *chip = block_chip(blk, source, err, errlen);
    if (!chip)
        return -1;
    int rc = 0;
    for (xmlNode *n = blk->children; n && rc == 0; n = n->next) {
        if (n->type != XML_ELEMENT_NODE)
            continue;
        if (strcmp((const char *)n->name, "metric") && strcmp((const char *)n->name, "constant")) {
            snprintf(err, errlen, "%s:%ld: unexpected <%s> in <%s> (valid: <metric>, <constant>)", source,
                     X.line_no(n), (const char *)n->name, (const char *)blk->name);
            rc = -1;
            break;
        }
        op_metric_def *d = parse_entry(n, chip, source, err, errlen);
        if (!d) {
            rc = -1;
            break;
        }
        if (p->n == *cap) {
            size_t nc = *cap ? *cap * 2 : 64;
            op_metric_def **nd = op_realloc(p->d, nc * sizeof *nd);
            if (!nd) {
                def_clear(d);
                op_free(d);
                snprintf(err, errlen, "%s: out of memory", source);
                rc = -1;
                break;
            }
            p->d = nd;
            *cap = nc;
        }
        p->d[p->n++] = d;
    }
    op_free(chip);
    return rc;
}

/* Check the loaded definitions for cycles, then put them in the registry (replacing the XML
 * definitions unless `append`). Nothing changes unless every check passed. */
static int commit_pending(pending *p, int append, const char *source, char *err, size_t errlen)
{
    /* cycles among derived metrics (invariant (3): checked before anything changes) */
    const op_metric_def *stack[33];
    for (size_t i = 0; i < p->n; i++)
        if (p->d[i]->is_derived && check_cycles(p, p->d[i], stack, 0, err, errlen))
            return -1;
    if (!append) {
        for (size_t k = 0; k < n_defs; k++)
            if (defs[k]->origin == OP_METRIC_ORIGIN_XML && !defs[k]->removed)
                defs[k]->removed = 1;
        index_rebuild(index_cap ? index_cap : 1024);
    }
    int rc = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (!def_commit(p->d[i])) {
            snprintf(err, errlen, "%s: out of memory", source);
            rc = -1;
        }
        p->d[i] = NULL;
    }
    return rc;
}

int op_metrics_load_xml(const char *xml, size_t size, const char *source, int append, char *err, size_t errlen)
{
    char dummy[8];
    if (!err) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    if (!source)
        source = "<memory>";
    if (!xml || size > (size_t)INT_MAX) {
        snprintf(err, errlen, "%s: no XML text", source);
        return -1;
    }
    if (xml_load(err, errlen))
        return -1;
    xmlDoc *doc = read_doc(xml, size, source, err, errlen);
    if (!doc)
        return -1;
    xmlNode *root = X.root(doc);
    pending p = {0};
    size_t cap = 0;
    int rc = 0;
    if (!root || (strcmp((const char *)root->name, "omniprof-metrics") && strcmp((const char *)root->name, "metrics"))) {
        snprintf(err, errlen, "%s: the root element must be <omniprof-metrics> (found <%s>)", source,
                 root ? (const char *)root->name : "none");
        rc = -1;
    }
    for (xmlNode *blk = root && rc == 0 ? root->children : NULL; blk && rc == 0; blk = blk->next)
        if (blk->type == XML_ELEMENT_NODE)
            rc = read_block(blk, &p, &cap, source, err, errlen);
    if (rc == 0)
        rc = commit_pending(&p, append, source, err, errlen);
    for (size_t i = 0; i < p.n; i++)
        if (p.d[i]) {
            def_clear(p.d[i]);
            op_free(p.d[i]);
        }
    op_free(p.d);
    X.free_doc(doc);
    return rc;
}

int op_metrics_load_file(const char *path, int append, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open metrics file: %m", path);
        return -1;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < 65536) {
            if (cap > (64u << 20)) {
                snprintf(err, errlen, "%s: metrics file larger than 64 MiB", path);
                op_free(buf);
                fclose(f);
                return -1;
            }
            size_t nc = cap ? cap * 2 : 262144;
            char *nb = op_realloc(buf, nc);
            if (!nb) {
                op_free(buf);
                fclose(f);
                snprintf(err, errlen, "%s: out of memory", path);
                return -1;
            }
            buf = nb;
            cap = nc;
        }
        size_t r = fread(buf + len, 1, cap - len, f);
        len += r;
        if (r == 0)
            break;
    }
    fclose(f);
    int rc = op_metrics_load_xml(buf, len, path, append, err, errlen);
    op_free(buf);
    return rc;
}

op_metric_def *op_metrics_define(const char *name, const char *expression, const char *description, char *err,
                                 size_t errlen)
{
    if (!name || !*name || !expression) {
        snprintf(err, errlen, "a derived metric needs a name and an expression");
        return NULL;
    }
    op_expr_error e;
    op_expr *x = op_expr_parse(expression, &e);
    if (!x) {
        char what[256];
        snprintf(what, sizeof what, "metric '%s': bad expression", name);
        op_expr_format_error(what, expression, &e, err, errlen);
        return NULL;
    }
    op_metric_def *d = def_new("", name);
    if (!d) {
        op_expr_free(x);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->expr = x;
    op_free(d->expression);
    d->expression = dup0(expression);
    op_free(d->description);
    d->description = dup0(description);
    d->is_derived = 1;
    d->type = OMNIPROF_COUNTER_TYPE_DERIVED;
    d->origin = OP_METRIC_ORIGIN_RUNTIME;
    snprintf(d->source, sizeof d->source, "omniprof_create_counter");
    pending p = {&d, 1};
    const op_metric_def *stack[33];
    if (check_cycles(&p, d, stack, 0, err, errlen)) {
        def_clear(d);
        op_free(d);
        return NULL;
    }
    return def_commit(d);
}

/* ---- finding the built-in file ---------------------------------------------------------- */

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int builtin_path(char *out, size_t len)
{
    const char *env = op_setting_str(OP_SET_METRICS_PATH);
    if (env && *env) {
        struct stat st;
        if (stat(env, &st) == 0 && S_ISDIR(st.st_mode))
            snprintf(out, len, "%s/metrics.xml", env);
        else
            snprintf(out, len, "%s", env);
        return 1;
    }
    Dl_info info;
    if (dladdr((void *)&builtin_path, &info) && info.dli_fname) {
        char lib[PATH_MAX];
        snprintf(lib, sizeof lib, "%s", info.dli_fname);
        char *dir = dirname(lib);
        /* relative to this library only (the tree is relocatable): <prefix>/lib/../share, or
         * <prefix>/lib/<multiarch>/../../share; the build tree has the same layout (the build
         * copies the file to <build>/share/omniprof) */
        static const char *const rel[] = {"/../share/omniprof/metrics.xml",
                                          "/../../share/omniprof/metrics.xml"};
        for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
            snprintf(out, len, "%s%s", dir, rel[i]);
            if (file_exists(out))
                return 0;
        }
    }
    return -1;
}

int op_metrics_ensure_loaded(void)
{
    if (loaded)
        return 0;
    loaded = 1;
    add_builtin_constants();
    char path[PATH_MAX + 32], err[1024];
    int rc = 0;
    int r = builtin_path(path, sizeof path);
    if (r >= 0) {
        if (op_metrics_load_file(path, 1, err, sizeof err)) {
            op_error("counters: %s", err);
            rc = -1;
        }
    } else {
        op_info("counters: no metrics.xml found (set OMNIPROF_METRICS_PATH); only vendor metrics are known");
    }
    const char *extra = op_setting_str(OP_SET_EXTRA_METRICS);
    if (extra && *extra) {
        char *list = op_strdup(extra), *save = NULL;
        for (char *f = list ? strtok_r(list, ":", &save) : NULL; f; f = strtok_r(NULL, ":", &save)) {
            if (op_metrics_load_file(f, 1, err, sizeof err)) {
                op_error("counters: %s", err);
                rc = -1;
            }
        }
        op_free(list);
    }
    return rc;
}

/* ---- edit distance ---------------------------------------------------------------------- */

size_t op_metrics_edit_distance(const char *a, const char *b, size_t limit) { return op_edit_distance(a, b, limit); }
