/* cli_lib.h — what the omniprof binary's commands share: where omniprof's libraries are, the
 * SDK's counters API (loaded with dlopen: the binary must start without the SDK), and counter
 * pass planning, which `omniprof avail --pmc-check` prints and `omniprof run --pmc` checks
 * before the program starts. */
#ifndef OMNIPROF_CLI_CLI_LIB_H
#define OMNIPROF_CLI_CLI_LIB_H

#include <stdbool.h>
#include <stddef.h>

#include "omniprof/counters.h"
#include "omniprof/pm_sampling.h"

/* omniprof's library directory: ../lib beside this binary (or lib64, or the multiarch
 * directory, whichever holds libomniprof-tool.so). Returns 0, or -1 when there is none. */
int cli_lib_dir(char *out, size_t outlen);

/* `name` in the library directory, readable: its path in out. Returns 0, or -1. */
int cli_lib_file(const char *name, char *out, size_t outlen);

/* The one check of an output location, before any program runs (run, sample, instrument,
 * attach: the database's directory; causal: the profile's and the databases' directories).
 * `dir` (absolute, expanded) is where files will be created: every component of it that exists
 * must be a directory; with `create`, the missing ones are created (mkdir -p); the deepest one
 * that exists must accept a new file (a probe file is created and removed). Returns 0, or -1
 * with the reason in err, naming the component ("'/a/b' is not a directory (it is a file)", "cannot
 * create files in '/a': Read-only file system"). */
int cli_check_output_dir(const char *dir, bool create, char *err, size_t errlen);

/* A command's private temporary file (dir false: mkstemp, the descriptor closed) or folder (dir
 * true: mkdtemp) in $TMPDIR, else /tmp, named omniprof-KIND-NS-PID-XXXXXX (NS: the inode of this
 * process's pid namespace, PID: this process). Before creating it, removes the leftovers of
 * earlier omniprof commands of the same user and pid namespace whose process is gone (a
 * SIGKILLed `omniprof run` leaves its manifest, `attach` its folder); a folder's entries (never
 * subfolders) go with it. Returns 0 with the path in out, or -1 with errno set and the
 * temporary directory in out, for the message. */
int cli_tmp_create(const char *kind, bool dir, char *out, size_t outlen);

/* Removes such a folder with its entries (not subfolders). */
void cli_tmp_remove_dir(const char *dir);

/* dlopen `soname` from the library directory, else from the loader's search path. Returns the
 * handle, or NULL with dlerror's text in err. */
void *cli_dlopen(const char *soname, int flags, char *err, size_t errlen);

/* The public counters API of libomniprof-sdk.so (include/omniprof/counters.h). */
typedef struct cli_counters_api {
    omniprof_status_t (*find)(const char *, const char *, omniprof_counter_id_t *);
    omniprof_status_t (*suggest)(const char *, const char *, const char **, size_t, size_t *);
    omniprof_status_t (*iterate)(const char *, uint32_t, omniprof_counter_iterate_cb_t, void *);
    omniprof_status_t (*chips)(omniprof_status_t (*)(const char *, void *), void *);
    omniprof_status_t (*info)(omniprof_counter_id_t, omniprof_counter_info_version_t, void *);
    omniprof_status_t (*config)(const char *, const omniprof_counter_id_t *, size_t, omniprof_counter_config_id_t *);
    omniprof_status_t (*passes)(omniprof_counter_config_id_t, size_t *, size_t *);
    omniprof_status_t (*destroy)(omniprof_counter_config_id_t);
    omniprof_status_t (*load_definition)(const char *, size_t, uint32_t, char *, size_t);
    const char *(*status_string)(omniprof_status_t);
    const char *(*last_error)(void);
    /* PM sampling (include/omniprof/pm_sampling.h); NULL in an SDK without it */
    omniprof_status_t (*pm_check)(const char *, const char *const *, size_t, size_t *, char *, size_t);
    omniprof_status_t (*pm_iterate)(const char *, omniprof_pm_sampling_metric_cb_t, void *);
} cli_counters_api;

/* Loads the SDK once. Returns the API, or NULL with the reason in err. */
const cli_counters_api *cli_counters(char *err, size_t errlen);

/* Does the counters backend know `chip`? (Prints nothing.) */
bool cli_chip_known(const cli_counters_api *api, const char *chip);

/* Result of planning one counter set (one --pmc group). */
typedef enum cli_pmc_status {
    CLI_PMC_OK = 0,
    CLI_PMC_UNAVAILABLE = 1,     /* no SDK or no counters backend in this build */
    CLI_PMC_BAD = 2,             /* unknown chip or counter, a metrics file that does not load */
    CLI_PMC_NOT_COLLECTABLE = 3, /* more passes than the replay mode or OMNIPROF_PMC_MAX_PASSES allow */
} cli_pmc_status;

typedef struct cli_pmc_plan {
    cli_pmc_status status;
    size_t n_counters, passes, n_base;
    char chip[64];
    bool chip_assumed;   /* no chip given: GH100 */
    char message[2048];  /* why it is not OK (one line per problem, "closest: ..." for names) */
} cli_pmc_plan;

/* Loads each ':'-separated metrics file of `files` into the SDK (once per file and process), the
 * way `omniprof run --extra-metrics` files are loaded. 0, or -1 with msg "--extra-metrics F: why"
 * (cannot be read, or the loader's message: the line and what is wrong) for the first bad file. */
int cli_load_extra_metrics(const cli_counters_api *api, const char *files, char *msg, size_t msglen);

/* Plan `names` on `chip` (NULL: GH100) in `replay_mode` ("kernel" or "none"), after loading
 * the metrics files of `extra_metrics` (':'-separated, NULL for none) into the SDK. */
cli_pmc_status cli_pmc_plan_set(const char *const *names, size_t n, const char *chip, const char *replay_mode,
                                const char *extra_metrics, cli_pmc_plan *out);

/* PM sampling's offline check (`omniprof run --pm-sampling`, `omniprof avail --pm-check`): every
 * name is a PM-sampling metric of `chip` (NULL: GH100, chip_assumed) and the set needs one pass.
 * CLI_PMC_OK; CLI_PMC_UNAVAILABLE (no SDK or no backend that can sample: message says why);
 * CLI_PMC_BAD (unknown chip or names: message names them); CLI_PMC_NOT_COLLECTABLE (passes > 1). */
cli_pmc_status cli_pm_check(const char *const *names, size_t n, const char *chip, cli_pmc_plan *out);

#endif /* OMNIPROF_CLI_CLI_LIB_H */
