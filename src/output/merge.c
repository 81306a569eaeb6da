/* merge.c — `omniprof merge` (op_output_merge): the checks around the database reader's merge
 * (src/db/reader_merge.c copies the rows): the output must not exist and must not be an input,
 * the inputs pass the one input check (inputs.c), and the merged file is built under a
 * temporary name beside the output and linked into place only when whole (link, not rename:
 * it never replaces a file created meanwhile), so a failed merge leaves nothing behind. The
 * inputs' clock plan (clocks.c) moves each process's times onto the reference clock. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/internal.h"

typedef struct merge_ctx {
    op_progress prog;
    const op_clock_plan *clocks;
} merge_ctx;

static int merge_tick(void *arg) {
    op_progress_tick(&((merge_ctx *)arg)->prog, 1);
    return op_out_interrupted();
}

/* Times of a set move onto the reference clock as they are copied (clocks.c). */
static const op_rd_clock_map *merge_clock(void *arg, size_t input, size_t set) {
    return op_clock_plan_set_map(((merge_ctx *)arg)->clocks, input, set);
}

int op_output_merge(const char *const *inputs, size_t n_inputs, const char *out_path, int progress, char *err,
                    size_t errlen) {
    if (!out_path || !*out_path) {
        op_seterr(err, errlen, "no output given (-o merged.db)");
        return OP_OUT_EINPUT;
    }
    /* Every input is checked before anything is written. */
    op_out_inputs in;
    int rc = op_out_inputs_begin(&in, inputs, n_inputs, err, errlen);
    struct stat st_out;
    if (!rc && stat(out_path, &st_out) == 0) {
        rc = OP_OUT_EINPUT;
        op_seterr(err, errlen, "%s: exists; refusing to overwrite it (remove it or choose another -o)", out_path);
        for (size_t i = 0; i < in.ids.n; i++) /* say whether it is one of the inputs, the worse mistake */
            if (in.ids.v[i].dev == st_out.st_dev && in.ids.v[i].ino == st_out.st_ino)
                op_seterr(err, errlen, "%s: is the input %s; refusing to overwrite an input database", out_path,
                          in.ids.v[i].path);
    }
    char *tmp = NULL;
    if (!rc) {
        size_t tl = strlen(out_path) + 64;
        if (!(tmp = malloc(tl))) rc = OP_OUT_EFAIL;
        else snprintf(tmp, tl, "%s.tmp-%ld", out_path, (long)getpid());
    }
    if (!rc) {
        op_out_tmp_register(tmp);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) {
            op_seterr(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
            op_out_tmp_unregister(tmp);
            free(tmp);
            op_out_inputs_end(&in);
            return OP_OUT_EFAIL;
        }
        close(fd);
        merge_ctx ctx = {.clocks = &in.clocks};
        op_progress_init(&ctx.prog, progress, "merge: databases", in.n);
        rc = op_db_merge(in.v, in.n, tmp, merge_tick, merge_clock, &ctx, err, errlen);
        if (!rc && link(tmp, out_path) != 0) {
            op_seterr(err, errlen, "%s: cannot create: %s", out_path, strerror(errno));
            rc = errno == EEXIST ? OP_OUT_EINPUT : OP_OUT_EFAIL;
        }
        if (!rc) op_progress_done(&ctx.prog);
        unlink(tmp);
        op_out_tmp_unregister(tmp);
    }
    free(tmp);
    op_out_inputs_end(&in);
    return rc;
}
