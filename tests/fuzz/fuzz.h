/* fuzz.h — what the libFuzzer harnesses of tests/fuzz share: the entry points' declarations,
 * FUZZ_CHECK (a broken invariant: one line, then abort, which libFuzzer reports as a crash with
 * the input), a NUL-terminated copy of an input, an input split into lines, and a private
 * scratch directory for the harnesses that feed files (removed at exit).
 *
 * Header-only (static functions) so that each harness is one source file plus the code it
 * tests; tests/fuzz/README.md says how they are built and run. */
#ifndef OMNIPROF_TESTS_FUZZ_H
#define OMNIPROF_TESTS_FUZZ_H

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* stderr as it was before libFuzzer's -close_fd_mask closed it (fuzz_init takes the copy). */
static int g_fuzz_errfd = 2;

/* One line on the saved stderr, then abort (libFuzzer reports a crash and writes the input). */
__attribute__((format(printf, 3, 4), noreturn, unused)) static void fuzz_fail(const char *file, int line,
                                                                            const char *fmt, ...)
{
    char msg[1024];
    int n = snprintf(msg, sizeof msg, "fuzz invariant broken (%s:%d): ", file, line);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof msg) vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    size_t len = strlen(msg);
    if (len < sizeof msg - 1) msg[len++] = '\n';
    if (write(g_fuzz_errfd, msg, len) < 0) abort();
    abort();
}

#define FUZZ_CHECK(cond, ...)                                      \
    do {                                                           \
        if (!(cond)) fuzz_fail(__FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

/* Call first in LLVMFuzzerInitialize: keeps a copy of stderr for FUZZ_CHECK. */
static inline void fuzz_init(void)
{
    int fd = fcntl(2, F_DUPFD_CLOEXEC, 100);
    if (fd >= 0) g_fuzz_errfd = fd;
}

/* The input as a C string (malloc'ed; an embedded NUL ends it early, as it would in argv or
 * the environment). */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    char *t = malloc(size + 1);
    if (!t) abort();
    if (size) memcpy(t, data, size);
    t[size] = '\0';
    return t;
}

/* Splits `text` in place at each '\n' into at most `max` fields (the last keeps the rest).
 * Returns the number of fields (at least 1). */
static inline int fuzz_lines(char *text, char **field, int max)
{
    int n = 0;
    field[n++] = text;
    for (char *p = text; *p && n < max; p++)
        if (*p == '\n') {
            *p = '\0';
            field[n++] = p + 1;
        }
    return n;
}

static char g_fuzz_dir[256];

static inline void fuzz_empty_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
}

static inline void fuzz_remove_scratch(void)
{
    if (!g_fuzz_dir[0]) return;
    fuzz_empty_dir(g_fuzz_dir);
    rmdir(g_fuzz_dir);
}

/* A private directory (in /dev/shm when it exists: inputs are written once per run), made at
 * the first call and removed at exit. */
static inline const char *fuzz_scratch_dir(void)
{
    if (g_fuzz_dir[0]) return g_fuzz_dir;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(g_fuzz_dir, sizeof g_fuzz_dir, "%s/omniprof-fuzz-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(g_fuzz_dir)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(fuzz_remove_scratch);
    return g_fuzz_dir;
}

/* Writes the input to `path` (replacing it). */
static inline void fuzz_write_file(const char *path, const uint8_t *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(path);
        abort();
    }
    for (size_t off = 0; off < size;) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0) {
            perror(path);
            abort();
        }
        off += (size_t)w;
    }
    close(fd);
}

#endif /* OMNIPROF_TESTS_FUZZ_H */
