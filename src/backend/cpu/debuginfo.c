/* debuginfo.c — where libdw finds a module's separate debug information, on this machine only.
 *
 * libdw's dwfl_standard_find_debuginfo looks by build-id under the debug directories, then by
 * .gnu_debuglink, and when both fail it asks debuginfod: it loads libdebuginfod, whose
 * debuginfod_begin initializes libcurl (and libssh2, OpenSSL) inside the profiled program, at its
 * end, whether DEBUGINFOD_URLS is set or not. In a program that carries its own OpenSSL (Node)
 * those calls bind to the program's copy, already torn down at exit: the program crashed with
 * SIGSEGV after its last line of output (cpu.jitdump, node). And with DEBUGINFOD_URLS set (Debian's
 * login shells set it) the end of a run would fetch files over the network. So symbols.c and
 * causal_scope.c use this callback instead: the build-id lookup of libdw
 * (dwfl_build_id_find_debuginfo), then the .gnu_debuglink name (or FILE.debug) in the file's own
 * folder, its .debug/ folder and /usr/lib/debug/FOLDER, as gdb and libdw search; a candidate is
 * taken only when its CRC-32 (zlib's, the one .gnu_debuglink records) matches. Never debuginfod
 * (docs/cpu.md, "Symbols"). */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "backend/cpu/cpu_internal.h"

/* zlib's CRC-32 of the whole file (as .gnu_debuglink's), or -1 when it cannot be read. */
static int64_t file_crc(int fd)
{
    unsigned char buf[65536];
    uLong crc = crc32(0L, Z_NULL, 0);
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        crc = crc32(crc, buf, (uInt)n);
    if (n < 0 || lseek(fd, 0, SEEK_SET) != 0)
        return -1;
    return (int64_t)(crc & 0xffffffffu);
}

int op_cpu_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                          const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                          char **debuginfo_file_name)
{
    errno = 0;
    int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                          debuginfo_file_name);
    if (fd >= 0 || !file_name || file_name[0] != '/')
        return fd;
    const char *slash = strrchr(file_name, '/');
    char dir[PATH_MAX], name[NAME_MAX + 1], cand[PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - file_name), file_name);
    if (debuglink_file && *debuglink_file && !strchr(debuglink_file, '/'))
        snprintf(name, sizeof name, "%s", debuglink_file);
    else if (snprintf(name, sizeof name, "%s.debug", slash + 1) >= (int)sizeof name)
        return -1;
    const char *fmt[] = {"%s/%s", "%s/.debug/%s", "/usr/lib/debug%s/%s"};
    for (size_t i = 0; i < sizeof fmt / sizeof fmt[0]; i++) {
        if (snprintf(cand, sizeof cand, fmt[i], dir, name) >= (int)sizeof cand || strcmp(cand, file_name) == 0)
            continue;
        fd = open(cand, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        /* without a recorded CRC (FILE.debug by name) the file's DWARF is taken as it is, as libdw does */
        if (!debuglink_file || file_crc(fd) == (int64_t)debuglink_crc) {
            if (debuginfo_file_name && !*debuginfo_file_name)
                *debuginfo_file_name = strdup(cand); /* libdw's to free, as its own finder's */
            errno = 0;
            return fd;
        }
        close(fd);
    }
    errno = 0;
    return -1;
}
