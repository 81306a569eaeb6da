/* merge_mpi.c — omniprof-merge-mpi, the tree merge behind `omniprof merge --mpi` (docs/multinode.md,
 * "Merging under the launcher"). Started under the job launcher (`mpirun -np K omniprof merge
 * --mpi -o OUT INPUTS...`: the omniprof binary, which links no MPI, execs this helper, built only
 * where an MPI compiler is found):
 *
 *   1. rank 0 checks that OUT does not exist and makes a folder for the partial merges beside it
 *      (OUT.mpi-parts-<pid>: every rank must see it — a shared file system, as the inputs are);
 *      a refusal ends every rank with rank 0's message;
 *   2. leaves: rank r merges its contiguous share of the inputs (inputs r*N/K .. (r+1)*N/K - 1)
 *      into a partial database, through op_output_merge (the merge core of libomniprof-output,
 *      which applies the clock plan and checks every input);
 *   3. a tree of fan-in F (--fan-in, default 8): at level l the ranks that are multiples of F^l
 *      receive the partials of ranks r + j F^(l-1) (j = 1..F-1) — a status and a path, over MPI —
 *      and merge them with their own into one; at the top, rank 0 merges into OUT;
 *   4. rank 0 broadcasts the outcome: every rank exits with it (0, 1 failure, 2 bad input), rank 0
 *      prints the first error; partials are removed as soon as they are merged, the folder at
 *      the end, whatever happened.
 * The cost model (docs/multinode.md) follows from it: the leaves divide the per-input work by K,
 * the levels above copy rows that are already merged, and the root writes every row once more. */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cli_opt.h"
#include "output/output.h"

#define TAG_PART 17
#define PATH_MAX_LEN 4096

/* What a child sends its parent: its partial (path "" when it had no inputs) or its failure. */
typedef struct part_msg {
    int rc;
    char path[PATH_MAX_LEN];
    char err[1024];
} part_msg;

typedef struct args {
    const char **inputs;
    int n_inputs;
    const char *out;
    int fan_in;
    int times;
    int help;
} args;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The parser's callback over the rows of `omniprof merge` (the options are its table's,
 * op_output_cli_command("merge"), read by omniprof's one parser). */
typedef struct parse_ctx {
    args *a;
    char *err;
    size_t errlen;
} parse_ctx;

static int on_option(void *ctx, const op_cli_option *o, const char *v, int nth, const char *spelled) {
    parse_ctx *p = ctx;
    args *a = p->a;
    (void)nth;
    if (!strcmp(o->long_name, "input")) {
        a->inputs[a->n_inputs++] = v;
    } else if (!strcmp(o->long_name, "output")) {
        a->out = v;
    } else if (!strcmp(o->long_name, "fan-in")) {
        char *e;
        long f = strtol(v, &e, 10);
        if (*e || e == v || f < 2 || f > 1024)
            return snprintf(p->err, p->errlen, "%s: '%s' is not a number in 2..1024", spelled, v), 2;
        a->fan_in = (int)f;
    } else if (!strcmp(o->long_name, "times")) {
        a->times = 1;
    } else if (!strcmp(o->long_name, "help")) {
        a->help = 1;
    } /* --mpi, --no-progress (progress lines are never shown under the launcher), --strict */
    return 0;
}

/* 0, or 2 with err filled (the same outcome on every rank: the arguments are the same). The
 * inputs may also be plain arguments: each parse stops at one, which is taken, and the next
 * parse goes on after it. */
static int parse(int argc, char **argv, args *a, char *err, size_t errlen) {
    memset(a, 0, sizeof *a);
    a->fan_in = 8;
    a->inputs = calloc((size_t)argc + 1, sizeof *a->inputs);
    if (!a->inputs) {
        snprintf(err, errlen, "out of memory");
        return 1;
    }
    const op_cli_command *merge = op_output_cli_command("merge");
    op_cli_command cmd = *merge;
    cmd.flags |= OP_CLI_PROGRAM; /* a plain word ends a parse: it is an input */
    parse_ctx p = {a, err, errlen};
    for (char **av = argv; argc > 0;) {
        int rest = argc;
        int rc = op_cli_parse(&cmd, argc, av, on_option, &p, &rest, err, errlen);
        if (rc) return 2;
        if (rest >= argc) break;
        if (!strcmp(av[rest - 1], "--")) { /* everything after "--" is an input */
            while (rest < argc) a->inputs[a->n_inputs++] = av[rest++];
            break;
        }
        a->inputs[a->n_inputs++] = av[rest];
        av += rest; /* av[0]: the input just taken, where the parser expects the command's name */
        argc -= rest;
    }
    if (a->help) return 0;
    if (!a->out || !*a->out) return snprintf(err, errlen, "no output given (-o merged.db)"), 2;
    if (!a->n_inputs) return snprintf(err, errlen, "no input databases given"), 2;
    return 0;
}

/* Rank 0's checks and the partials' folder: rc 0, or 1/2 with err. */
static int prepare(const args *a, char *dir, size_t dirlen, char *err, size_t errlen) {
    struct stat st;
    if (stat(a->out, &st) == 0) {
        snprintf(err, errlen, "%s: exists; refusing to overwrite it (remove it or choose another -o)", a->out);
        return 2;
    }
    /* room is left for the partials' names inside (".../l<level>-r<rank>.db") */
    if (snprintf(dir, dirlen, "%s.mpi-parts-%ld", a->out, (long)getpid()) >= (int)dirlen - 32) {
        snprintf(err, errlen, "%s: the output path is too long", a->out);
        return 2;
    }
    if (mkdir(dir, 0700) != 0) {
        int e = errno;
        snprintf(err, errlen, "%s: cannot create the folder of the partial merges: %s", dir, strerror(e));
        dir[0] = 0;
        return e == ENOENT || e == ENOTDIR || e == EEXIST ? 2 : 1;
    }
    return 0;
}

/* Merges the n paths into out (one level of the tree, or a leaf), removing the partials among
 * them (is_part) whatever happens. */
static int merge_into(const char **paths, int n, int is_part, const char *out, char *err, size_t errlen) {
    int rc = op_output_merge(paths, (size_t)n, out, 0, err, errlen);
    for (int i = 0; is_part && i < n; i++) unlink(paths[i]);
    return rc;
}

/* The tree above the leaves for this rank: receives its children's partials level by level,
 * merges them with its own (*mine, updated), and returns at the level where it sends its own
 * to its parent (or, rank 0, after writing OUT). level_s[l] gets the seconds of level l. */
static int climb(const args *a, int rank, int size, const char *dir, part_msg *mine, double *level_s, int *levels) {
    const char **paths = calloc((size_t)a->fan_in, sizeof *paths);
    part_msg *kids = calloc((size_t)a->fan_in, sizeof *kids);
    if (!paths || !kids) {
        mine->rc = 1;
        snprintf(mine->err, sizeof mine->err, "out of memory");
    }
    long step = 1; /* F^(l-1) */
    int l = 1;
    for (; paths && kids && step < size; l++, step *= a->fan_in) {
        long span = step * a->fan_in;
        if (rank % span != 0) { /* a child at this level: hand the partial up */
            MPI_Send(mine, (int)sizeof *mine, MPI_BYTE, (int)(rank - rank % span), TAG_PART, MPI_COMM_WORLD);
            mine->path[0] = 0;
            break;
        }
        double t0 = now_s();
        int n = 0;
        if (mine->path[0]) paths[n++] = mine->path;
        for (int j = 1; j < a->fan_in && rank + j * step < size; j++) {
            MPI_Recv(&kids[j], (int)sizeof kids[j], MPI_BYTE, (int)(rank + j * step), TAG_PART, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            if (kids[j].rc && !mine->rc) {
                mine->rc = kids[j].rc;
                memcpy(mine->err, kids[j].err, sizeof mine->err);
            }
            if (kids[j].path[0]) paths[n++] = kids[j].path;
        }
        int top = span >= size;
        char out[PATH_MAX_LEN];
        if (top) snprintf(out, sizeof out, "%s", a->out);
        else snprintf(out, sizeof out, "%s/l%d-r%d.db", dir, l, rank);
        if (mine->rc || (!top && n <= 1)) { /* a failure below, or one partial: nothing to merge */
            if (mine->rc)
                for (int i = 0; i < n; i++) unlink(paths[i]);
            else if (n == 1 && paths[0] != mine->path)
                snprintf(mine->path, sizeof mine->path, "%s", paths[0]);
        } else {
            mine->rc = merge_into(paths, n, 1, out, mine->err, sizeof mine->err);
            snprintf(mine->path, sizeof mine->path, "%s", mine->rc ? "" : out);
        }
        if (level_s) level_s[l] = now_s() - t0;
    }
    *levels = l;
    free(paths);
    free(kids);
    return mine->rc;
}

int main(int argc, char **argv) {
    args a;
    part_msg mine = {0};
    char dir[PATH_MAX_LEN] = "";
    mine.rc = parse(argc, argv, &a, mine.err, sizeof mine.err); /* before MPI_Init: --help */
    if (!mine.rc && a.help) {
        op_cli_print_help(stdout, op_output_cli_command("merge"));
        return 0;
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!mine.rc && rank == 0) mine.rc = prepare(&a, dir, sizeof dir, mine.err, sizeof mine.err);
    int go[2] = {mine.rc, 0};
    MPI_Bcast(go, 2, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(dir, (int)sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    double t0 = now_s(), leaf_s = 0, level_s[64] = {0};
    int levels = 0, rc = go[0];
    if (!rc) {
        /* leaves: rank r's contiguous share of the inputs */
        long lo = (long)a.n_inputs * rank / size, hi = (long)a.n_inputs * (rank + 1) / size;
        if (hi > lo) {
            int len = size == 1 ? snprintf(mine.path, sizeof mine.path, "%s", a.out)
                                : snprintf(mine.path, sizeof mine.path, "%s/l0-r%d.db", dir, rank);
            if (len >= (int)sizeof mine.path) { /* prepare() left room: never a cut path */
                mine.rc = 2;
                snprintf(mine.err, sizeof mine.err, "%s: the output path is too long", a.out);
            } else {
                mine.rc = merge_into(a.inputs + lo, (int)(hi - lo), 0, mine.path, mine.err, sizeof mine.err);
            }
            if (mine.rc) mine.path[0] = 0;
        }
        leaf_s = now_s() - t0;
        climb(&a, rank, size, dir, &mine, rank == 0 ? level_s : NULL, &levels);
        double slowest = 0;
        MPI_Reduce(&leaf_s, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        leaf_s = slowest;
        if (rank == 0) go[0] = mine.rc;
        MPI_Bcast(go, 2, MPI_INT, 0, MPI_COMM_WORLD);
        rc = go[0];
    }
    if (rank == 0) {
        if (dir[0]) rmdir(dir);
        if (rc) fprintf(stderr, "omniprof merge --mpi: %s\n", mine.err[0] ? mine.err : "failed");
        else if (a.times) {
            fprintf(stderr, "omniprof merge --mpi: %d ranks, %d inputs, fan-in %d: leaves %.3f s (slowest rank)", size,
                    a.n_inputs, a.fan_in, leaf_s);
            for (int l = 1; l < levels && l < 64; l++) fprintf(stderr, ", level %d %.3f s", l, level_s[l]);
            fprintf(stderr, ", total %.3f s\n", now_s() - t0);
        }
    }
    free(a.inputs);
    MPI_Finalize();
    return rc;
}
