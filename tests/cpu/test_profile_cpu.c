/* test_profile_cpu.c — driver for src/output/profile_cpu.c and folded.c: writes the flat and
 * call-tree profiles (text or JSON) or folded stacks of the databases given on the command
 * line, so cpu_check.py can assert on them.
 * usage: test_profile_cpu text|json|folded|has DB... */
#include <stdio.h>
#include <string.h>

#include "output/profile_cpu.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s text|json|folded|has DB...\n", argv[0]);
        return 2;
    }
    const char *const *in = (const char *const *)(argv + 2);
    size_t n = (size_t)(argc - 2);
    char err[512] = "";
    int rc;
    if (!strcmp(argv[1], "has")) {
        printf("%d\n", op_cpu_profile_has_samples(in, n));
        return 0;
    }
    if (!strcmp(argv[1], "folded")) {
        rc = op_cpu_folded_write(in, n, stdout, err, sizeof err);
    } else {
        op_cpu_profile_options o = {sizeof o, !strcmp(argv[1], "json") ? OP_CPU_PROFILE_JSON : OP_CPU_PROFILE_TEXT,
                                    1, 1, 30, 0.5, 0};
        rc = op_cpu_profile_write(in, n, stdout, &o, err, sizeof err);
    }
    if (rc) fprintf(stderr, "error %d: %s\n", rc, err);
    return rc;
}
