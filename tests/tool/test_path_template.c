/* test_path_template.c — unit tests of src/common/path_template.c: every key, short forms,
 * environment expansion to a fixed point, sanitizing of command-line values, unknown keys,
 * overflow, and mkdirs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/check.h"
#include "common/path_template.h"

static op_path_context ctx;

static const char *expand(const char *t)
{
    static char out[4096];
    char err[1024];
    if (op_path_expand(t, &ctx, out, sizeof(out), err, sizeof(err)) != 0) {
        snprintf(out, sizeof(out), "ERROR: %s", err);
    }
    return out;
}

#define EXPECT(tmpl, want)                                                                    \
    do {                                                                                      \
        const char *got_ = expand(tmpl);                                                      \
        if (strcmp(got_, want) != 0) fprintf(stderr, "'%s' -> '%s', want '%s'\n", tmpl, got_, want); \
        CHECK(strcmp(got_, want) == 0);                                                       \
    } while (0)

int main(void)
{
    char *argv[] = {"/usr/bin/my app", "--flag", "a/b", NULL};
    memset(&ctx, 0, sizeof(ctx));
    unsetenv("OMNIPROF_LAUNCH_TIME");
    op_path_context_init_self(&ctx);
    ctx.pid = 1234;
    ctx.ppid = 1;
    ctx.pgid = 77;
    ctx.psid = 78;
    ctx.hostname = "node01";
    ctx.cwd = "/work";
    ctx.argv = argv;
    ctx.argc = 3;
    ctx.launch_time = 0; /* 1970-01-01 UTC */
    setenv("TZ", "UTC", 1);
    for (const char *const *v = (const char *const[]){"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID",
                                                        "MV2_COMM_WORLD_RANK", "MPI_RANK", "MPI_LOCALRANKID",
                                                        "PALS_RANKID", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                                        "SLURM_NTASKS", "MV2_COMM_WORLD_SIZE", "MPI_SIZE",
                                                        "MPI_NRANKS", "MPI_LOCALNRANKS", "SLURM_JOB_ID",
                                                        "OMNIPROF_MPI_RANK", "OMNIPROF_MPI_SIZE", "OMNIPROF_MPI_LOCAL_RANK",
                                                        "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "RANK",
                                                        "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID",
                                                        "PMIX_LOCAL_RANK", "PMIX_SIZE", "PALS_LOCAL_RANKID",
                                                        "PALS_SIZE", "MV2_COMM_WORLD_LOCAL_RANK", NULL};
         *v; v++)
        unsetenv(*v);

    EXPECT("%hostname%/%pid%", "node01/1234");
    EXPECT("%h-%p", "node01-1234");
    EXPECT("%ppid% %pgid% %psid%", "1 77 78");
    EXPECT("%cwd%/out", "/work/out");
    EXPECT("r%rank%-s%size%-n%nid%-j%job%", "r0-s1-n1234-j0");
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
    setenv("SLURM_JOB_ID", "999", 1);
    EXPECT("r%rank%-s%size%-n%nid%-j%job%", "r3-s8-n3-j999");
    EXPECT("%r.%s.%j", "3.8.999");
    unsetenv("OMPI_COMM_WORLD_RANK");
    setenv("SLURM_PROCID", "5", 1);
    EXPECT("%rank%", "5");
    unsetenv("SLURM_PROCID");
    setenv("PMI_RANK", "6", 1);
    EXPECT("%rank%", "6");
    unsetenv("PMI_RANK");
    /* issue 17: local ranks; the launcher that set the rank wins over Slurm's batch-step
     * variables (mpirun inside an allocation), torchrun over the node ranks srun gives it */
    EXPECT("%rank%.%local_rank%", "0.0");
    setenv("OMPI_COMM_WORLD_RANK", "9", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    setenv("SLURM_PROCID", "0", 1);
    setenv("SLURM_LOCALID", "0", 1);
    setenv("SLURM_NTASKS", "1", 1);
    EXPECT("%rank%.%local_rank%.%size%", "9.1.8");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    setenv("SLURM_PROCID", "12", 1);
    setenv("SLURM_LOCALID", "3", 1);
    setenv("SLURM_NTASKS", "16", 1);
    EXPECT("%rank%.%local_rank%.%size%.%nid%", "12.3.16.12");
    setenv("PMI_RANK", "13", 1); /* srun --mpi=pmi2: PMI's rank, Slurm's local id */
    EXPECT("%rank%.%local_rank%", "13.3");
    unsetenv("PMI_RANK");
    setenv("RANK", "5", 1);
    setenv("LOCAL_RANK", "1", 1);
    setenv("WORLD_SIZE", "8", 1);
    EXPECT("%rank%.%local_rank%.%size%", "12.3.16"); /* a bare RANK loses to the launcher's */
    setenv("TORCHELASTIC_RUN_ID", "job1", 1);
    EXPECT("%rank%.%local_rank%.%size%", "5.1.8"); /* torchrun under srun */
    unsetenv("SLURM_PROCID");
    unsetenv("SLURM_LOCALID");
    unsetenv("SLURM_NTASKS");
    unsetenv("TORCHELASTIC_RUN_ID");
    EXPECT("%rank%.%local_rank%.%size%", "5.1.8"); /* torch.distributed's own variables */
    setenv("OMNIPROF_MPI_RANK", "2", 1);            /* the MPI backend's, after MPI_Init */
    setenv("OMNIPROF_MPI_SIZE", "4", 1);
    EXPECT("%rank%.%size%", "2.4");
    for (const char *const *v = (const char *const[]){"RANK", "LOCAL_RANK", "WORLD_SIZE", "OMNIPROF_MPI_RANK",
                                                        "OMNIPROF_MPI_SIZE", NULL};
         *v; v++)
        unsetenv(*v);
    CHECK(strstr(expand("%foo%"), "%local_rank%") != NULL);
    EXPECT("%tag%", "my_app");
    EXPECT("%argv%", "usr_bin_my_app_--flag_a_b");
    EXPECT("%argt%", "my_app_--flag_a_b");
    EXPECT("%args%", "--flag_a_b");
    EXPECT("%arg1%:%arg2%:%arg9%", "--flag:a_b:");
    /* issue 11: an index that does not fit an int expands to nothing (it used to wrap and crash) */
    EXPECT("x%arg2147483648%y", "xy");
    EXPECT("x%arg4294967296%y", "xy");
    EXPECT("x%arg99999999999999999999999%y", "xy");
    EXPECT("x%arg00001%y", "x--flagy");
    /* issue 31: a signed index is an error naming it and the valid range (it stayed literal) */
    CHECK(strstr(expand("%arg-1%"), "ERROR: '%arg-1%' is not a valid placeholder") != NULL);
    CHECK(strstr(expand("x%arg+2%"), "from 0 (the program) to 2 (its last argument)") != NULL);
    /* issue 31: with the user's command line (the launcher), an index past it is an error
     * naming the placeholder and the range (it expanded to nothing: "-o %arg99%" became
     * "_results.db"); without (the tool in a child), it still expands to nothing (above) */
    ctx.strict_args = true;
    EXPECT("%arg0%:%arg2%", "usr_bin_my_app:a_b");
    CHECK(strstr(expand("%arg99%"), "ERROR: placeholder '%arg99%' is past the program's command line") != NULL);
    CHECK(strstr(expand("%arg3%"), "N from 0 (the program) to 2 (its last argument)") != NULL);
    CHECK(strstr(expand("x%arg99999999999999999999999%y"), "ERROR: placeholder") != NULL);
    ctx.argc = 1;
    CHECK(strstr(expand("%arg1%"), "N 0 only (the program; it has no arguments)") != NULL);
    ctx.argc = 3;
    ctx.strict_args = false;
    EXPECT("%launch_date%", "1970-01-01");
    EXPECT("%launch_time%", "1970-01-01_00.00");
    setenv("OP_TEST_VAR", "val", 1);
    EXPECT("%env{OP_TEST_VAR}%-$ENV{OP_TEST_VAR}-%q{OP_TEST_VAR}%", "val-val-val");
    EXPECT("x%env{OP_TEST_UNSET_VAR}%y", "xy");
    /* an environment value holding placeholders is expanded too (fixed point) */
    setenv("OP_TEST_NESTED", "%pid%-%env{OP_TEST_VAR}%", 1);
    EXPECT("%env{OP_TEST_NESTED}%", "1234-val");
    /* self-reference stops after OP_PATH_MAX_PASSES */
    setenv("OP_TEST_LOOP", "a%env{OP_TEST_LOOP}%", 1);
    CHECK(strncmp(expand("%env{OP_TEST_LOOP}%"), "aaaaaaaa", 8) == 0);
    EXPECT("100%%", "100%");
    EXPECT("50% done", "50% done");
    EXPECT("plain/path", "plain/path");
    CHECK(strncmp(expand("%foo%"), "ERROR: unknown placeholder '%foo%'", 34) == 0);
    CHECK(strstr(expand("%foo%"), "%hostname%") != NULL); /* the error lists the valid keys */
    CHECK(strncmp(expand("%env{X"), "ERROR: unclosed", 15) == 0);
    /* overflow */
    char small[8], err[256];
    CHECK(op_path_expand("%hostname%/%pid%", &ctx, small, sizeof(small), err, sizeof(err)) != 0);
    CHECK(strstr(err, "longer") != NULL);
    /* process keys */
    CHECK(op_path_has_process_keys("a/%pid%"));
    CHECK(op_path_has_process_keys("%p"));
    CHECK(op_path_has_process_keys("x%nid%"));
    CHECK(!op_path_has_process_keys("%hostname%/%rank%"));
    /* mkdirs */
    char dir[256];
    snprintf(dir, sizeof(dir), "/tmp/op-path-test-%d/a/b/c", (int)getpid());
    CHECK(op_path_mkdirs(dir, err, sizeof(err)) == 0);
    struct stat st;
    CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK(op_path_mkdirs(dir, err, sizeof(err)) == 0); /* exists: fine */
    CHECK(op_path_mkdirs("/etc/passwd/x", err, sizeof(err)) != 0);
    CHECK(strstr(err, "/etc/passwd") != NULL);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf /tmp/op-path-test-%d", (int)getpid());
    CHECK(system(cmd) == 0);
    return CHECK_DONE();
}
