/* tool_db.c — what the tool hands the database writer besides records: the names of kinds and
 * operations, symbols and kernel renames (the writer's callbacks), and the run manifest's line
 * for each database opened (OMNIPROF_RUN_MANIFEST, read by the launcher). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/fd_guard.h"
#include "common/log.h"
#include "common/settings.h"
#include "omniprof/omniprof.h"
#include "tool/tool.h"

const char *op_tool_db_kind_name(uint32_t kind, void *user)
{
    (void)user;
    const char *name = NULL;
    uint64_t len = 0;
    if (omniprof_query_buffer_tracing_kind_name((omniprof_buffer_tracing_kind_t)kind, &name, &len) != 0) return NULL;
    return name;
}

const char *op_tool_db_operation_name(uint32_t kind, int32_t op, void *user)
{
    (void)user;
    const char *name = NULL;
    uint64_t len = 0;
    if (omniprof_query_buffer_tracing_kind_operation_name((omniprof_buffer_tracing_kind_t)kind, op, &name, &len) != 0)
        return NULL;
    return name;
}

omniprof_status_t op_tool_db_symbolize(uint64_t address, omniprof_symbol_cb_t cb, void *cb_data, void *user)
{
    (void)user;
    return omniprof_query_address_symbols(address, cb, cb_data);
}

const char *op_tool_db_kernel_rename(uint64_t external, void *user)
{
    (void)user;
    return op_tool_rename_name(external);
}

void op_tool_manifest_append(const char *path)
{
    const char *m = op_setting_str(OP_SET_RUN_MANIFEST);
    if (!m || !*m) return;
    int fd = open(m, O_WRONLY | O_APPEND | O_CLOEXEC);
    /* adopted like every fd of the profiler's, even for one write: a program closing every fd
     * meanwhile must not get our line into a file of its own on that number */
    if (fd >= 0) fd = op_fd_adopt_path(fd, m, OP_FD_IDENTITY);
    if (fd < 0) {
        op_warn("cannot append to the run manifest %s: %s", m, strerror(errno));
        return;
    }
    char line[PATH_MAX + 2];
    int n = snprintf(line, sizeof(line), "%s\n", path);
    if (n > 0 && (size_t)n < sizeof(line)) {
        ssize_t wr = op_fd_write_checked(fd, line, (size_t)n, true); /* one O_APPEND write: lines never interleave */
        (void)wr;
    }
    op_fd_close(fd);
}
