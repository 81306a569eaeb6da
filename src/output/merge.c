/* merge.c — `omniprof merge` (op_output_merge): the checks around the database reader's merge
 * (src/db/reader_merge.c copies the rows): the output must not exist and must not be an input,
 * every input must be a distinct rocpd database, and the merged file is built under a
 * temporary name beside the output and linked into place only when whole (link, not rename:
 * it never replaces a file created meanwhile), so a failed merge leaves nothing behind. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/internal.h"

int op_out_inputs_distinct(const char *const *inputs, size_t n_inputs, char *err, size_t errlen) {
    op_guid_set seen = {0};
    int rc = 0;
    for (size_t i = 0; i < n_inputs && !rc; i++) {
        op_src *s;
        rc = op_src_open(inputs[i], &s, err, errlen);
        if (rc) break;
        for (size_t k = 0; k < s->n_sets && !rc; k++)
            if (guid_seen(&seen, s->sets[k].guid, inputs[i], err, errlen)) rc = OP_OUT_EINPUT;
        op_src_close(s);
    }
    guid_seen_free(&seen);
    return rc;
}

static void merge_tick(void *arg) { op_progress_tick(arg, 1); }

int op_output_merge(const char *const *inputs, size_t n_inputs, const char *out_path, int progress, char *err,
                    size_t errlen) {
    if (!inputs || n_inputs == 0) {
        op_seterr(err, errlen, "no input database given (-i DB...)");
        return OP_OUT_EINPUT;
    }
    if (!out_path || !*out_path) {
        op_seterr(err, errlen, "no output given (-o merged.db)");
        return OP_OUT_EINPUT;
    }
    struct stat st_out;
    if (stat(out_path, &st_out) == 0) {
        /* Says whether it is one of the inputs, the worse mistake. */
        for (size_t i = 0; i < n_inputs; i++) {
            struct stat st_in;
            if (stat(inputs[i], &st_in) == 0 && st_in.st_dev == st_out.st_dev && st_in.st_ino == st_out.st_ino) {
                op_seterr(err, errlen, "%s: refusing to overwrite an input database", out_path);
                return OP_OUT_EINPUT;
            }
        }
        op_seterr(err, errlen, "%s: exists; refusing to overwrite it (remove it or choose another -o)", out_path);
        return OP_OUT_EINPUT;
    }
    /* Validate every input before writing anything. */
    int rc = op_out_inputs_distinct(inputs, n_inputs, err, errlen);
    if (rc) return rc;
    size_t tl = strlen(out_path) + 64;
    char *tmp = malloc(tl);
    if (!tmp) return OP_OUT_EFAIL;
    snprintf(tmp, tl, "%s.tmp-%ld", out_path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        op_seterr(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        free(tmp);
        return OP_OUT_EFAIL;
    }
    close(fd);
    op_progress prog;
    op_progress_init(&prog, progress, "merge: databases", n_inputs);
    prog.next = 1;
    rc = op_db_merge(inputs, n_inputs, tmp, merge_tick, &prog, err, errlen);
    if (!rc && link(tmp, out_path) != 0) {
        op_seterr(err, errlen, "%s: cannot create: %s", out_path, strerror(errno));
        rc = errno == EEXIST ? OP_OUT_EINPUT : OP_OUT_EFAIL;
    }
    if (!rc) op_progress_done(&prog);
    unlink(tmp);
    free(tmp);
    return rc;
}
