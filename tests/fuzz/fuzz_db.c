/* fuzz_db.c — libFuzzer harness of the database reader (src/db/reader*.c) and the output
 * library over it (src/output: summary, every conversion, query, merge), fed hostile database
 * files.
 *
 * Input: the bytes of a database file. The committed corpus holds real rocpd databases
 * (from `omniprof run` and omniprof-gen-db, vacuumed to 512-byte pages; tests/fuzz/README.md),
 * whose bytes the fuzzer mutates: corrupt b-trees, a changed header, values of the wrong type,
 * NULL names, ids that point nowhere, a schema that lies. Each input is written to a file and
 * read the ways `omniprof summary`, `convert -f pftrace json csv folded wall_clock --stats`,
 * `query` and `merge` read it. Invariants: each gives a result or an error with a message
 * (never a crash, a hang, a leak or a read out of bounds); the input file is left as it was,
 * with no -wal, -shm or -journal file beside it. */
#include <sys/stat.h>

#include "fuzz.h"
#include "output/output.h"

static char g_db[512], g_out[512], g_merged[512];
static FILE *g_null;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_init();
    const char *dir = fuzz_scratch_dir();
    snprintf(g_db, sizeof g_db, "%s/in.db", dir);
    snprintf(g_out, sizeof g_out, "%s/out", dir);
    snprintf(g_merged, sizeof g_merged, "%s/merged.db", dir);
    if (mkdir(g_out, 0700) != 0) abort();
    g_null = fopen("/dev/null", "w");
    if (!g_null) abort();
    return 0;
}

static void check_status(const char *what, int rc, const char *err)
{
    FUZZ_CHECK(rc == 0 || rc == OP_OUT_EINPUT || rc == OP_OUT_EFAIL, "%s returned %d", what, rc);
    if (rc != 0) FUZZ_CHECK(err[0] != '\0', "%s failed (%d) without a message", what, rc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20)) return 0;
    fuzz_write_file(g_db, data, size);
    const char *inputs[] = {g_db};
    char err[2048];

    err[0] = '\0';
    op_out_summary_options so = {.size = sizeof so, .format = OP_OUT_SUMMARY_JSON, .units = OP_OUT_USEC,
                                 .by_rank = 1, .domain_summary = 1, .cpu_profile = OP_OUT_CPU_PROFILE_BOTH};
    check_status("summary", op_output_summary(inputs, 1, &so, g_null, err, sizeof err), err);

    err[0] = '\0';
    op_out_options co = {.size = sizeof co, .inputs = inputs, .n_inputs = 1, .formats = OP_OUT_FMT_CONVERT,
                         .out_dir = g_out, .out_name = "o"};
    check_status("convert", op_output_convert(&co, err, sizeof err), err);
    fuzz_empty_dir(g_out);

    err[0] = '\0';
    check_status("query", op_output_query(inputs, 1, "SELECT * FROM regions LIMIT 20", OP_OUT_QUERY_CSV, g_null, err,
                                          sizeof err), err);

    err[0] = '\0';
    check_status("merge", op_output_merge(inputs, 1, g_merged, 0, err, sizeof err), err);
    unlink(g_merged);

    struct stat st;
    FUZZ_CHECK(stat(g_db, &st) == 0 && (size_t)st.st_size == size, "the input file changed");
    static const char *const litter[] = {"-wal", "-shm", "-journal"};
    for (int i = 0; i < 3; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s%s", g_db, litter[i]);
        FUZZ_CHECK(stat(p, &st) != 0, "reading left %s beside the input", p);
    }
    return 0;
}
