/* cuda_sass.c — the SASS text of an instruction of a loaded cubin, for PC samples and SASS metrics: CUPTI gives
 * (cubin CRC, function, PC offset) but no disassembly, so the cubin is disassembled once with
 * NVIDIA's nvdisasm (OMNIPROF_NVDISASM, else PATH, else /usr/local/cuda/bin) and its
 * instructions are kept per (function, offset). Without nvdisasm, or for cubins larger than
 * SASS_MAX_CUBIN, or with OMNIPROF_PC_SAMPLING_SASS=false, the text is "" (one log line).
 * nvdisasm runs without LD_PRELOAD, OMNIPROF_ settings and CUDA injections: it is not profiled itself.
 * Called under the cubin lock (cuda_cubins.c), so it keeps no lock of its own. */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/cuda/cuda_internal.h"
#include "common/alloc.h"
#include "common/log.h"
#include "common/settings.h"
#include "common/u64map.h"

#define SASS_MAX_CUBIN (64u << 20)
#define SASS_MAX_DONE 256

static op_u64map g_text;           /* hash(crc, function, offset) -> interned text pointer */
static uint64_t g_done[SASS_MAX_DONE]; /* cubins disassembled (or tried) */
static int g_ndone, g_no_tool, g_warned;
static char g_tool[512];

static int find_tool(void)
{
    if (g_tool[0]) return 1;
    if (g_no_tool) return 0;
    const char *env = getenv("OMNIPROF_NVDISASM");
    if (env && *env && access(env, X_OK) == 0) {
        snprintf(g_tool, sizeof g_tool, "%s", env);
        return 1;
    }
    const char *path = getenv("PATH");
    char dirs[4096];
    snprintf(dirs, sizeof dirs, "%s:/usr/local/cuda/bin", path ? path : "");
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char cand[512];
        snprintf(cand, sizeof cand, "%s/nvdisasm", d);
        if (access(cand, X_OK) == 0) {
            snprintf(g_tool, sizeof g_tool, "%s", cand);
            return 1;
        }
    }
    g_no_tool = 1;
    op_info("cuda: nvdisasm not found (PATH, /usr/local/cuda/bin, OMNIPROF_NVDISASM): PC samples carry no SASS text");
    return 0;
}

static uint64_t key_of(uint64_t crc, const char *fn, size_t fnlen, uint64_t off)
{
    return op_hash64x3(crc, op_hash_bytes(fn, fnlen), off);
}

/* One line of `nvdisasm -c`: "name:" opens a function (".text.<name>:" too); a line starting
 * with the offset in a comment ("slash-star 0a30 star-slash TEXT ;") is an instruction at
 * offset 0xa30 of the current function. */
static void parse_line(uint64_t crc, char *line, char *fn, size_t fncap)
{
    char *s = line;
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' ')) s[--n] = '\0';
    if (n > 1 && s[n - 1] == ':' && s[0] != '/') {
        s[n - 1] = '\0';
        const char *name = strncmp(s, ".text.", 6) == 0 ? s + 6 : s;
        if (name[0] != '.') snprintf(fn, fncap, "%s", name);
        return;
    }
    if (strncmp(s, "/*", 2) != 0 || !fn[0]) return;
    char *end = NULL;
    unsigned long long off = strtoull(s + 2, &end, 16);
    if (!end || strncmp(end, "*/", 2) != 0) return;
    char *text = end + 2;
    while (*text == ' ' || *text == '\t') text++;
    char *semi = strstr(text, " ;");
    if (semi) *semi = '\0';
    if (!*text) return;
    op_u64map_put(&g_text, key_of(crc, fn, strlen(fn), off), (uint64_t)(uintptr_t)op_sdk_intern(text));
}

/* nvdisasm runs without our preloads and injections (it must not be profiled itself: it would
 * write its own database), its stdout on a pipe, its stderr on /dev/null. */
static FILE *spawn_tool(const char *path, pid_t *pid)
{
    extern char **environ;
    size_t n = 0;
    while (environ[n]) n++;
    char **env = op_calloc(n + 1, sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = environ[i];
        if (!strncmp(e, "LD_PRELOAD=", 11) || !strncmp(e, "OMNIPROF_", 9) || !strncmp(e, "CUDA_INJECTION64_PATH=", 22) ||
            !strncmp(e, "NVTX_INJECTION64_PATH=", 22))
            continue;
        env[k++] = environ[i];
    }
    int fds[2];
    FILE *f = NULL;
    if (pipe2(fds, O_CLOEXEC) == 0) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        char *argv[] = {g_tool, "-c", (char *)path, NULL};
        if (posix_spawn(pid, g_tool, &fa, NULL, argv, env) == 0) f = fdopen(fds[0], "r");
        else close(fds[0]);
        close(fds[1]);
        posix_spawn_file_actions_destroy(&fa);
    }
    op_free(env);
    return f;
}

static void disassemble(uint64_t crc, const void *cubin, size_t size)
{
    char path[] = "/tmp/omniprof-cubin-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return;
    const char *p = cubin;
    size_t left = size;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w <= 0) break;
        p += w, left -= (size_t)w;
    }
    close(fd);
    pid_t pid = 0;
    FILE *f = left == 0 ? spawn_tool(path, &pid) : NULL;
    if (f) {
        char line[1024], fn[512] = "";
        while (fgets(line, sizeof line, f)) parse_line(crc, line, fn, sizeof fn);
        fclose(f);
        int status = 0;
        if ((waitpid(pid, &status, 0) != pid || status != 0) && !g_warned) {
            g_warned = 1;
            op_info("cuda: nvdisasm failed on a cubin (%zu bytes); some PC samples carry no SASS text", size);
        }
    }
    unlink(path);
}

const char *op_cuda_sass_text(uint64_t crc, const void *cubin, size_t size, const char *function, uint64_t pc)
{
    if (!function || !op_setting_bool(OP_SET_PC_SAMPLING_SASS)) return "";
    int done = 0;
    for (int i = 0; i < g_ndone && !done; i++) done = g_done[i] == crc;
    if (!done && cubin && size <= SASS_MAX_CUBIN && g_ndone < SASS_MAX_DONE && find_tool()) {
        g_done[g_ndone++] = crc;
        disassemble(crc, cubin, size);
    }
    uint64_t v;
    if (op_u64map_get(&g_text, key_of(crc, function, strlen(function), pc), &v)) return (const char *)(uintptr_t)v;
    return "";
}
