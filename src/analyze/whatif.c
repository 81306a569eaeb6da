/* whatif.c — what-if specifications ("kernel:gemm.*=0.5") and the per-node duration factors
 * they give (analyze.h). A spec is TARGET:REGEX=FACTOR; REGEX is a POSIX extended regular
 * expression searched in the name (anchor it with ^...$ for an exact name), FACTOR >= 0 scales
 * the matching work (0 removes it, 0.5 halves it). Targets:
 *   kernel    GPU kernels by name            copy   copies and memsets by name
 *   api       GPU API and wrapped calls      mpi    MPI calls (a wait: its own time after the
 *                                                   last thing it waited for)
 *   range     everything a thread does inside a user range (markers, NVTX) of that name
 *   function  the CPU work whose call-stack samples have the function on the stack: a node's
 *             time x (1 - share of its samples that match x (1 - FACTOR))
 *   rank      every host node of the rank(s) whose number matches
 * Several specs multiply where they meet. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"
#include "common/alloc.h"
#include "common/regex_bound.h"

const char *const an_target_name[AT_TARGETS] = {"kernel", "copy",     "api", "mpi",
                                                "range",  "function", "rank"};

int an_whatif_parse(const char *spec, an_whatif *w, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    const char *colon = strchr(spec, ':');
    const char *eq = strrchr(spec, '=');
    if (!colon || !eq || eq < colon) {
        snprintf(
            err, errlen,
            "what-if '%s': expected TARGET:REGEX=FACTOR (targets: kernel, copy, api, mpi, range, "
            "function, rank), e.g. 'kernel:gemm.*=0.5'",
            spec);
        return -1;
    }
    w->target = -1;
    for (int t = 0; t < AT_TARGETS; t++)
        if ((size_t)(colon - spec) == strlen(an_target_name[t]) &&
            !strncmp(spec, an_target_name[t], (size_t)(colon - spec)))
            w->target = t;
    if (w->target < 0) {
        snprintf(err, errlen,
                 "what-if '%s': unknown target '%.*s' (valid: kernel, copy, api, mpi, range, "
                 "function, rank)",
                 spec, (int)(colon - spec), spec);
        return -1;
    }
    char *endp = NULL;
    w->factor = strtod(eq + 1, &endp);
    if (!eq[1] || (endp && *endp) || !(w->factor >= 0) || w->factor > 1e6) {
        snprintf(err, errlen,
                 "what-if '%s': factor '%s' is not a number >= 0 (0 removes, 0.5 halves)", spec,
                 eq + 1);
        return -1;
    }
    w->pattern = op_strndup(colon + 1, (size_t)(eq - colon - 1));
    w->text = op_strdup(spec);
    if (!w->pattern || !w->text) {
        snprintf(err, errlen, "out of memory");
        an_whatif_free(w);
        return -1;
    }
    char rerr[256];
    if (op_regex_compile(&w->re, w->pattern, REG_NOSUB, rerr, sizeof rerr) != 0) {
        snprintf(err, errlen, "what-if '%s': bad regular expression '%s': %s", spec, w->pattern,
                 rerr);
        op_free(w->pattern);
        op_free(w->text);
        w->pattern = w->text = NULL;
        return -1;
    }
    return 0;
}

void an_whatif_free(an_whatif *w)
{
    if (!w) return;
    if (w->pattern) regfree(&w->re);
    op_free(w->pattern);
    op_free(w->text);
    memset(w, 0, sizeof *w);
}

static int matches(const an_graph *g, const an_whatif *w, uint32_t name)
{
    const char *s = op_strtab_str(&g->names, name);
    return s && regexec(&w->re, s, 0, NULL, 0) == 0;
}

void an_factors(an_graph *g, const an_whatif *ws, size_t nw)
{
    for (size_t i = 0; i < g->n_nodes; i++) g->factor[i] = 1.0f;
    if (!nw) return;
    /* per-name match cache: 0 unknown, 1 no, 2 yes; one byte per (name, spec) */
    size_t n_names = op_strtab_count(&g->names);
    uint8_t *cache = op_calloc(n_names * nw + 1, 1);
    float *range_f = op_malloc((g->n_ranges + 1) * sizeof *range_f);
    uint8_t *stack_m = op_calloc(g->n_stacks * nw + 1, 1);
    if (!cache || !range_f || !stack_m) goto done;
#define MATCH(k, name)                                                                             \
    (cache[(size_t)(name)*nw + (k)]                                                                \
         ? cache[(size_t)(name)*nw + (k)] == 2                                                     \
         : (cache[(size_t)(name)*nw + (k)] = matches(g, &ws[k], (name)) ? 2 : 1) == 2)
    /* ranges: parents come before their children in the array */
    for (size_t r = 0; r < g->n_ranges; r++) {
        const an_range *R = &g->ranges[r];
        float f = R->parent >= 0 ? range_f[R->parent] : 1.0f;
        for (size_t k = 0; k < nw; k++)
            if (ws[k].target == AT_RANGE && MATCH(k, R->name)) f *= (float)ws[k].factor;
        range_f[r] = f;
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        const an_node *n = &g->nodes[i];
        const an_lane *L = &g->lanes[n->lane];
        float f = 1.0f;
        if (!L->gpu && n->region >= 0) f *= range_f[n->region];
        for (size_t k = 0; k < nw; k++) {
            const an_whatif *w = &ws[k];
            switch (w->target) {
            case AT_KERNEL:
                if (n->kind == AN_KERNEL && MATCH(k, n->name)) f *= (float)w->factor;
                break;
            case AT_COPY:
                if ((n->kind == AN_COPY || n->kind == AN_SET) && MATCH(k, n->name))
                    f *= (float)w->factor;
                break;
            case AT_API:
                if ((n->kind == AN_API || n->kind == AN_LAUNCH || n->kind == AN_GPUWAIT ||
                     n->kind == AN_WRAP || n->kind == AN_JOIN) &&
                    MATCH(k, n->name))
                    f *= (float)w->factor;
                break;
            case AT_MPI:
                if ((n->kind == AN_MPI || n->kind == AN_MPIWAIT) && MATCH(k, n->name))
                    f *= (float)w->factor;
                break;
            case AT_RANK: {
                char num[24];
                snprintf(num, sizeof num, "%d", L->rank);
                if (!L->gpu && L->rank >= 0 && regexec(&w->re, num, 0, NULL, 0) == 0 &&
                    (n->kind == AN_CPU || n->kind == AN_API || n->kind == AN_LAUNCH ||
                     n->kind == AN_WRAP || n->kind == AN_MPI))
                    f *= (float)w->factor;
                break;
            }
            default: break;
            }
        }
        g->factor[i] = f;
    }
    /* functions: by the share of each CPU node's samples that have the function on the stack */
    for (size_t k = 0; k < nw; k++) {
        if (ws[k].target != AT_FUNCTION) continue;
        for (size_t s = 0; s < g->n_stacks; s++) {
            const uint32_t *fr = &g->stack_frames[g->stacks[s]];
            uint8_t m = 1;
            for (uint32_t j = 0; j < fr[0] && m == 1; j++)
                if (MATCH(k, fr[1 + j])) m = 2;
            stack_m[s * nw + k] = m;
        }
        size_t si = 0;
        for (size_t l = 0; l < g->n_lanes; l++) {
            const an_lane *L = &g->lanes[l];
            if (L->gpu) continue;
            while (si < g->n_samples && g->samples[si].lane < l) si++;
            size_t sj = si;
            for (uint32_t i = L->first; i < L->first + L->n; i++) {
                const an_node *n = &g->nodes[i];
                while (sj < g->n_samples && g->samples[sj].lane == l && g->samples[sj].t < n->start)
                    sj++;
                size_t tot = 0, hit = 0;
                size_t sk = sj;
                while (sk < g->n_samples && g->samples[sk].lane == l &&
                       g->samples[sk].t <= n->end) {
                    tot++;
                    if (stack_m[(size_t)g->samples[sk].stack * nw + k] == 2) hit++;
                    sk++;
                }
                if (tot && (n->kind == AN_CPU || n->kind == AN_API || n->kind == AN_WRAP ||
                            n->kind == AN_MPI))
                    g->factor[i] *= (float)(1.0 - (double)hit / (double)tot * (1.0 - ws[k].factor));
            }
        }
    }
#undef MATCH
done:
    op_free(cache);
    op_free(range_f);
    op_free(stack_m);
}
