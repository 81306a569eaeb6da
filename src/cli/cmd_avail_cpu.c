/* cmd_avail_cpu.c — `omniprof avail --components` and `omniprof avail --cpu-events` (the CPU
 * module's sections of `omniprof avail`, reached through op_avail_components in commands.h).
 *
 *   --components   the measurement components of the region profile (OMNIPROF_COMPONENTS)
 *   --cpu-events   the perf_event counters a sample can carry (OMNIPROF_SAMPLING_PERF_EVENTS),
 *                  each probed here with perf_event_open on this process: "yes", or "no" with
 *                  the kernel's reason (no PMU in a VM, perf_event_paranoid, ...)
 *   --format text|json   (text by default)
 * Exit status: 0, or 2 for a bad option. The catalog is cpu_catalog.h (data only): the CLI
 * never loads the backend library itself. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/cpu/cpu_catalog.h"
#include "cli/commands.h"

static int probe(const op_cpu_catalog_event *e)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = e->type;
    attr.config = e->config;
    attr.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        attr.exclude_kernel = 1;
        fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    }
    if (fd < 0) return -errno;
    close(fd);
    return 0;
}

static const char *why(int rc)
{
    switch (-rc) {
    case ENOENT:
    case EOPNOTSUPP: return "not supported here (no PMU or no such event)";
    case EACCES:
    case EPERM: return "not permitted (see /proc/sys/kernel/perf_event_paranoid)";
    case ENOSYS: return "perf_event_open not available";
    default: return strerror(-rc);
    }
}

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') putchar('\\');
        putchar(*s);
    }
    putchar('"');
}

int op_avail_components(int argc, char **argv)
{
    int components = 0, events = 0, json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--components")) components = 1;
        else if (!strcmp(a, "--cpu-events")) events = 1;
        else if (!strcmp(a, "--format") && i + 1 < argc) json = !strcmp(argv[++i], "json");
        else if (!strncmp(a, "--format=", 9)) json = !strcmp(a + 9, "json");
        else if (!strcmp(a, "--json")) json = 1;
    }
    if (json) printf("{");
    if (components) {
        if (json) {
            printf("\"components\": [");
            for (size_t i = 0; i < OP_CPU_CATALOG_N_COMPONENTS; i++) {
                const op_cpu_catalog_component *c = &op_cpu_catalog_components[i];
                printf("%s{\"name\": ", i ? ", " : "");
                json_str(c->name);
                printf(", \"units\": ");
                json_str(c->units);
                printf(", \"description\": ");
                json_str(c->description);
                printf("}");
            }
            printf("]");
        } else {
            printf("CPU components (OMNIPROF_COMPONENTS; per region: count, sum, mean, min, max, stddev, self)\n");
            printf("  %-18s %-6s %s\n", "NAME", "UNITS", "DESCRIPTION");
            for (size_t i = 0; i < OP_CPU_CATALOG_N_COMPONENTS; i++)
                printf("  %-18s %-6s %s\n", op_cpu_catalog_components[i].name, op_cpu_catalog_components[i].units,
                       op_cpu_catalog_components[i].description);
        }
    }
    if (events) {
        if (json) {
            printf("%s\"cpu_events\": [", components ? ", " : "");
            for (size_t i = 0; i < OP_CPU_CATALOG_N_EVENTS; i++) {
                const op_cpu_catalog_event *e = &op_cpu_catalog_events[i];
                int rc = probe(e);
                printf("%s{\"name\": ", i ? ", " : "");
                json_str(e->name);
                printf(", \"type\": \"%s\", \"available\": %s, \"description\": ",
                       e->type == PERF_TYPE_HARDWARE ? "hardware" : "software", rc == 0 ? "true" : "false");
                json_str(e->description);
                if (rc) {
                    printf(", \"reason\": ");
                    json_str(why(rc));
                }
                printf("}");
            }
            printf("]");
        } else {
            if (components) printf("\n");
            printf("CPU perf events (OMNIPROF_SAMPLING_PERF_EVENTS, up to 8 per sample)\n");
            printf("  %-18s %-9s %-5s %s\n", "NAME", "TYPE", "AVAIL", "DESCRIPTION");
            for (size_t i = 0; i < OP_CPU_CATALOG_N_EVENTS; i++) {
                const op_cpu_catalog_event *e = &op_cpu_catalog_events[i];
                int rc = probe(e);
                printf("  %-18s %-9s %-5s %s%s%s\n", e->name, e->type == PERF_TYPE_HARDWARE ? "hardware" : "software",
                       rc == 0 ? "yes" : "no", e->description, rc ? " — " : "", rc ? why(rc) : "");
            }
        }
    }
    if (json) printf("}\n");
    return 0;
}
