/* backend_manifest.c — which backend library serves a kind, found without loading any: the
 * manifests (op_backend_manifest, backend.h) of the libomniprof-backend-*.so files beside
 * libomniprof-sdk.so, read from the files' ELF section ".omniprof_backend".
 *
 * Reading a manifest: the ELF header, the section header table and the section-name string
 * table are read with pread, every offset and size checked against the file's size; the
 * section whose name is OP_BACKEND_MANIFEST_SECTION must hold one manifest with the right
 * magic, size and a NUL-terminated name. A file that is not such an ELF object, or that has
 * no valid manifest, is skipped (one info line). The directory is scanned once, at the first
 * question; the answers are kept for the process (a backend installed later is not seen). */
#include "sdk/sdk_internal.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/log.h"

#define LIB_PREFIX "libomniprof-backend-"

typedef struct found_manifest {
    op_backend_manifest m;
    char path[PATH_MAX];
} found_manifest;

static pthread_once_t g_scan_once = PTHREAD_ONCE_INIT;
static found_manifest *g_found;
static int g_nfound;

static int read_at(int fd, off_t size, void *buf, size_t n, uint64_t off)
{
    if (off > (uint64_t)size || n > (uint64_t)size - off) return -1;
    return pread(fd, buf, n, (off_t)off) == (ssize_t)n ? 0 : -1;
}

/* 0 and *out filled when `path` is an ELF object of this process's class holding a valid
 * manifest; -1 otherwise. */
int op_manifest_read(const char *path, op_backend_manifest *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    ElfW(Ehdr) eh;
    ElfW(Shdr) *sh = NULL;
    int rc = -1;
    if (fstat(fd, &st) != 0 || read_at(fd, st.st_size, &eh, sizeof eh, 0) != 0) goto out;
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
        eh.e_shentsize != sizeof(ElfW(Shdr)) || eh.e_shnum == 0 || eh.e_shnum > 65000 || eh.e_shstrndx >= eh.e_shnum)
        goto out;
    sh = op_calloc(eh.e_shnum, sizeof *sh);
    if (!sh || read_at(fd, st.st_size, sh, (size_t)eh.e_shnum * sizeof *sh, eh.e_shoff) != 0) goto out;
    const ElfW(Shdr) *names = &sh[eh.e_shstrndx];
    static const char want[] = OP_BACKEND_MANIFEST_SECTION;
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        char name[sizeof want];
        if (sh[i].sh_name >= names->sh_size || names->sh_size - sh[i].sh_name < sizeof want) continue;
        if (read_at(fd, st.st_size, name, sizeof name, names->sh_offset + sh[i].sh_name) != 0) continue;
        if (memcmp(name, want, sizeof want) != 0) continue;
        if (sh[i].sh_size < sizeof *out || read_at(fd, st.st_size, out, sizeof *out, sh[i].sh_offset) != 0) break;
        if (memcmp(out->magic, OP_BACKEND_MANIFEST_MAGIC, sizeof OP_BACKEND_MANIFEST_MAGIC) == 0 &&
            out->size == sizeof *out && memchr(out->name, 0, sizeof out->name) && out->name[0])
            rc = 0;
        break;
    }
out:
    op_free(sh);
    close(fd);
    return rc;
}

/* The directory of libomniprof-sdk.so, where the backends are installed. */
static int sdk_dir(char *dir, size_t n)
{
    Dl_info info;
    if (!dladdr((void *)&sdk_dir, &info) || !info.dli_fname) return -1;
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", info.dli_fname);
    snprintf(dir, n, "%s", dirname(tmp));
    return 0;
}

static void scan(void)
{
    char dir[PATH_MAX];
    if (sdk_dir(dir, sizeof dir) != 0) return;
    DIR *d = opendir(dir);
    if (!d) return;
    g_found = op_calloc(OP_SDK_MAX_BACKENDS, sizeof *g_found);
    struct dirent *e;
    while (g_found && g_nfound < OP_SDK_MAX_BACKENDS && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, LIB_PREFIX, sizeof LIB_PREFIX - 1) != 0 || len < 3 ||
            strcmp(e->d_name + len - 3, ".so") != 0)
            continue;
        found_manifest *f = &g_found[g_nfound];
        if (strlen(dir) + 1 + len >= sizeof f->path) continue;
        memcpy(f->path, dir, strlen(dir));
        f->path[strlen(dir)] = '/';
        memcpy(f->path + strlen(dir) + 1, e->d_name, len + 1);
        char expect[sizeof LIB_PREFIX + sizeof f->m.name + 3];
        if (op_manifest_read(f->path, &f->m) != 0) {
            op_info("%s: no backend manifest (section %s); skipped", f->path, OP_BACKEND_MANIFEST_SECTION);
            continue;
        }
        snprintf(expect, sizeof expect, LIB_PREFIX "%s.so", f->m.name);
        if (strcmp(expect, e->d_name) != 0) {
            op_info("%s: its manifest names backend '%s' (expected file %s); skipped", f->path, f->m.name, expect);
            continue;
        }
        g_nfound++;
    }
    closedir(d);
}

bool op_manifest_serves(const op_backend_manifest *m, uint32_t category, uint32_t kind)
{
    if (!m || kind == 0) return false;
    if (category == OMNIPROF_RECORD_CATEGORY_COUNTERS) {
        for (size_t i = 0; i < sizeof m->counter_kinds / sizeof m->counter_kinds[0] && m->counter_kinds[i]; i++)
            if (m->counter_kinds[i] == kind) return true;
        return false;
    }
    for (size_t i = 0; i < OP_BACKEND_MAX_KINDS && m->buffer_kinds[i]; i++)
        if (m->buffer_kinds[i] == kind) return true;
    return false;
}

const char *op_manifest_find(uint32_t category, uint32_t kind, uint32_t table_bit, int nth,
                             const op_backend_manifest **m)
{
    pthread_once(&g_scan_once, scan);
    for (int i = 0; i < g_nfound; i++) {
        const op_backend_manifest *f = &g_found[i].m;
        if (((table_bit && (f->intercept_tables & table_bit)) || (!table_bit && op_manifest_serves(f, category, kind))) &&
            nth-- == 0) {
            if (m) *m = f;
            return g_found[i].path;
        }
    }
    return NULL;
}
