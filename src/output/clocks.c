/* clocks.c — the clock plan of a command's inputs (docs/multinode.md, "Clocks"): for each
 * process, how its CLOCK_MONOTONIC times map onto one reference clock, so that processes of
 * different hosts line up. Built once from every input's process rows (inputs.c, through
 * op_rd_clocks); merge applies it while copying rows (op_db_merge), convert to every event it
 * reads (convert.c).
 *
 * The reference: the MPI rank 0 that measured clock offsets (omniprof_clock), else the first
 * process of the first input. A process's map:
 *   0. none when it shares the reference's clock domain (one kernel boot, one time namespace:
 *      the writer records it, op_clock_domain): its CLOCK_MONOTONIC is the reference's, exactly,
 *      while an MPI estimate has the error of a round trip — on a busy machine a fraction of a
 *      millisecond, enough to put a message's receive before its send;
 *   1. its MPI estimates against rank 0 — t' = t - (o1 + rate x (t - l1)), o1 at local time l1
 *      (init), rate = (o2 - o1) / (l2 - l1) from the second one (finalize) when the two differ
 *      by more than their errors (estimate_map): offset and drift;
 *   2. else, on another host than the reference (machine id and host name both differ, where
 *      both sides know them: other_host), the
 *      wall-clock offsets both recorded: t' = t + realtime(P) - realtime(ref) (as good as the
 *      hosts' NTP);
 *   3. else nothing: processes of one host share CLOCK_MONOTONIC.
 * A process whose times a merge already moved (its clock rows say applied) keeps its times. */
#include <stdlib.h>
#include <string.h>

#include "output/internal.h"

typedef struct clock_proc {
    uint32_t input, set;
    op_rd_process_clock pc;
    op_rd_clock_map map;
} clock_proc;

static uint64_t key3(uint64_t input, uint64_t set, uint64_t row) { return op_hash64x3(input + 1, set + 1, row + 1); }

typedef struct add_ctx {
    op_clock_plan *p;
    uint32_t input, set;
} add_ctx;

static int add_cb(const op_rd_process_clock *pc, void *arg) {
    add_ctx *c = arg;
    op_clock_plan *p = c->p;
    if (op_grow(&p->v, &p->cap, p->n + 1, sizeof *p->v)) return OP_RD_EFAIL;
    clock_proc *e = &p->v[p->n++];
    memset(e, 0, sizeof *e);
    e->input = c->input;
    e->set = c->set;
    e->pc = *pc;
    return 0;
}

int op_clock_plan_add(op_clock_plan *p, size_t input, size_t set_index, op_src *src, op_src_set *set, char *err,
                      size_t errlen) {
    add_ctx c = {p, (uint32_t)input, (uint32_t)set_index};
    return op_rd_clocks(src, set, add_cb, &c, err, errlen);
}

/* The drift is taken only when the two offsets differ by more than their error bounds together:
 * over a short run the difference is the estimates' noise, and extrapolating it to times before
 * the first estimate (MPI_Init's own start) or after the second would move them further off than
 * no drift at all. Without drift, the estimate of the smaller error is the offset. */
static void estimate_map(clock_proc *e) {
    const op_rd_process_clock *pc = &e->pc;
    const op_rd_clock_est *a = &pc->est[0], *b = pc->n == 2 ? &pc->est[1] : NULL;
    e->map.active = 1;
    e->map.offset = a->offset;
    e->map.at = a->local;
    if (!b) return;
    int64_t diff = b->offset - a->offset;
    if (b->local != a->local && llabs(diff) > a->error + b->error)
        e->map.rate = (double)diff / (double)(b->local - a->local);
    else if (b->error < a->error)
        e->map.offset = b->offset, e->map.at = b->local;
}

/* Hosts as op_rd_clocks gives them, "machine-id|hostname": another host only when every part both
 * know differs — a container on the same kernel may have its own host name (or its own machine
 * id) and still shares CLOCK_MONOTONIC; renaming one side alone must not move its times. */
static int other_host(const char *a, const char *b) {
    const char *ba = strchr(a, '|'), *bb = strchr(b, '|');
    size_t ma = ba ? (size_t)(ba - a) : strlen(a), mb = bb ? (size_t)(bb - b) : strlen(b);
    const char *ha = ba ? ba + 1 : "", *hb = bb ? bb + 1 : "";
    int known = 0, same = 0;
    if (ma && mb) known++, same |= ma == mb && strncmp(a, b, ma) == 0;
    if (*ha && *hb) known++, same |= strcmp(ha, hb) == 0;
    return known > 0 && !same;
}

void op_clock_plan_finish(op_clock_plan *p) {
    const clock_proc *ref = NULL;
    for (size_t i = 0; i < p->n && !ref; i++)
        if (p->v[i].pc.rank == 0 && p->v[i].pc.n > 0) ref = &p->v[i];
    for (size_t i = 0; i < p->n && !ref; i++)
        if (!p->v[i].pc.applied) ref = &p->v[i];
    for (size_t i = 0; i < p->n; i++) {
        clock_proc *e = &p->v[i];
        if (e->pc.applied || e == ref) continue;
        if (ref && e->pc.clock_domain[0] && strcmp(e->pc.clock_domain, ref->pc.clock_domain) == 0) {
            /* rule 0: one clock */
        } else if (e->pc.n > 0) estimate_map(e);
        else if (ref && ref->pc.has_realtime && e->pc.has_realtime && other_host(e->pc.host, ref->pc.host)) {
            e->map.active = 1;
            e->map.offset = ref->pc.realtime_offset - e->pc.realtime_offset;
        }
        if (e->map.active && (e->map.offset != 0 || e->map.rate != 0)) p->any = 1;
        else e->map.active = 0;
        op_u64map_put(&p->index, key3(e->input, e->set, (uint64_t)e->pc.process_row), i + 1);
    }
}

const op_rd_clock_map *op_clock_plan_lookup(const op_clock_plan *p, size_t input, size_t set, int64_t process_row) {
    uint64_t at;
    if (!p || !p->any || !op_u64map_get(&p->index, key3(input, set, (uint64_t)process_row), &at)) return NULL;
    return p->v[at - 1].map.active ? &p->v[at - 1].map : NULL;
}

const op_rd_clock_map *op_clock_plan_set_map(const op_clock_plan *p, size_t input, size_t set) {
    if (!p || !p->any) return NULL;
    const op_rd_clock_map *found = NULL;
    int procs = 0;
    for (size_t i = 0; i < p->n; i++) /* the plan is in input order: a short scan per set */
        if (p->v[i].input == input && p->v[i].set == set) {
            procs++;
            if (p->v[i].map.active) found = &p->v[i].map;
        }
    return procs == 1 ? found : NULL; /* a set of many processes (a merged input) is left as it is */
}

const char *op_clock_plan_guid(const op_clock_plan *p, size_t i) { return i < p->n ? p->v[i].pc.guid : NULL; }

void op_clock_plan_free(op_clock_plan *p) {
    free(p->v);
    op_u64map_free(&p->index);
    memset(p, 0, sizeof *p);
}
