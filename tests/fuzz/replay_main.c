/* replay_main.c — the harnesses' main() where libFuzzer is not available (no clang): runs
 * every file of the given directories (or the given files) once through the harness, so that
 * the committed corpus, crash reproducers included, is a regression test in every build (and
 * under ASan/UBSan in `make test-sanitize`). Usage: fuzz_NAME_replay DIR|FILE...
 * Exits 0 after the last input; a broken invariant aborts. */
#include <sys/stat.h>

#include "fuzz.h"

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static size_t run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        exit(2);
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf) abort();
    /* libFuzzer hands the input in a buffer of exactly its size: so does this */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) abort();
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 1;
}

int main(int argc, char **argv)
{
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    size_t runs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: no such file or directory\n", argv[i]);
            return 2;
        }
        if (!S_ISDIR(st.st_mode)) {
            runs += run_file(argv[i]);
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            runs += run_file(path);
        }
        if (d) closedir(d);
    }
    fprintf(stderr, "replayed %zu inputs, no crash\n", runs); /* stderr: a harness may own stdout */
    return runs ? 0 : 2;
}
