/* path_template.h — expansion of output-path placeholders (%hostname%, %pid%, %rank%, ...).
 *
 * Used by the launcher (to check a template and create the static part of the output
 * directory before the program runs) and by the tool (to name its database in-process, where
 * %pid% is the traced process). The keys follow rocprofv3 (docs/run.md) and
 * rocprof-sys (docs/cpu.md):
 *
 *   %hostname% %h        host name                 %pid% %p      process id
 *   %ppid% %pgid% %psid% parent, group, session    %job% %j      SLURM_JOB_ID (else "0")
 *   %rank% %r            MPI/Slurm rank (else 0)   %size% %s     MPI/Slurm size (else 1)
 *   %local_rank%         rank on this node (else 0)
 *   %nid%                rank if known, else pid   %cwd%         working directory
 *   %argv%               whole command line        %argt%        same, argv[0] as basename
 *   %args%               arguments after argv[0]   %arg<N>%      the N-th argument (0 = program)
 *   %tag%                basename of argv[0]       %launch_date% %launch_time%  (strftime %F, %F_%H.%M)
 *   %env{VAR}% $ENV{VAR} %q{VAR}%  environment variable (empty if unset)
 *   %%                   a literal '%'
 *
 * In values taken from the command line ('argv' keys, %tag%), '/' and whitespace become '_'
 * and leading '_' are dropped, so a value never adds a directory level. Expansion repeats
 * until the text no longer changes (an environment variable may itself hold placeholders), at
 * most OP_PATH_MAX_PASSES times. A '%' that starts no placeholder is kept as is; text that
 * looks like one (`%word%`) but names no known key is an error that lists the valid keys, and
 * so is `%arg<N>%` with a sign (`%arg-1%`) and, with strict_args, an N past the command line. */
#ifndef OMNIPROF_COMMON_PATH_TEMPLATE_H
#define OMNIPROF_COMMON_PATH_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#define OP_PATH_MAX_PASSES 8

/* What the keys expand to. Fields left 0/NULL are filled from the calling process by
 * op_path_context_init_self. argv is borrowed (not copied). */
typedef struct op_path_context {
    pid_t pid, ppid, pgid, psid;
    const char *hostname;
    const char *cwd;
    char *const *argv; /* NULL-terminated, argv[0] = program; may be NULL */
    int argc;
    time_t launch_time; /* seconds since the epoch */
    /* argv is the command line the user gave (the launcher): %arg<N>% past its last word is an
     * error naming the valid range. Off (the tool, in a process whose command line may be
     * shorter, e.g. a child): such a key expands to nothing. */
    bool strict_args;
    char hostname_buf[256];
    char cwd_buf[4096];
} op_path_context;

/**
 * Fill ctx from the calling process: pid, ppid, pgid, psid, host name, cwd; launch_time from
 * OMNIPROF_LAUNCH_TIME when set (so every process of one run shares it), else now. argv and
 * argc are left as they are (set them before or after).
 */
void op_path_context_init_self(op_path_context *ctx);

/**
 * Expand `tmpl` into `out` (outlen bytes).
 * @return 0; -1 with a message in err for an unknown key, an unclosed %env{...}%, or a result
 * longer than outlen.
 */
int op_path_expand(const char *tmpl, const op_path_context *ctx, char *out, size_t outlen, char *err,
                   size_t errlen);

/** True when `tmpl` uses a key whose value differs between processes (%pid% %ppid% %pgid%
 *  %psid% %nid% and their short forms). */
bool op_path_has_process_keys(const char *tmpl);

/** Rank, size and rank on the node from the job launcher's variables: OMNIPROF_MPI_* (the MPI
 *  backend's, after MPI_Init), torchrun (RANK, LOCAL_RANK, WORLD_SIZE when TORCHELASTIC_RUN_ID
 *  is set), Open MPI (OMPI_COMM_WORLD_*), MPICH/Hydra and Cray (PMI_RANK/PMI_SIZE,
 *  MPI_LOCALRANKID), PMIx, MVAPICH, PALS, Slurm (SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS),
 *  then a bare RANK/LOCAL_RANK/WORLD_SIZE. All three come from the first launcher that set a
 *  rank. -1 when unknown. op_path_rank_source names the variable the rank came from (NULL). */
long op_path_mpi_rank(void);
long op_path_mpi_size(void);
long op_path_local_rank(void);
const char *op_path_rank_source(void);

/** mkdir -p `dir` (mode 0777 & ~umask). Returns 0, or -1 with errno set and, in err, which
 *  component failed and why. */
int op_path_mkdirs(const char *dir, char *err, size_t errlen);

#endif /* OMNIPROF_COMMON_PATH_TEMPLATE_H */
