/* cmd_avail_cpu.c — `omniprof avail --components` and `omniprof avail --cpu-events` (the CPU
 * module's sections of `omniprof avail`, reached through op_avail_components in commands.h).
 *
 *   --components   the measurement components of the region profile (OMNIPROF_COMPONENTS)
 *   --cpu-events   the perf_event counters a sample can carry (OMNIPROF_SAMPLING_PERF_EVENTS),
 *                  each probed on this process: "yes", or "no" with the kernel's reason (no PMU
 *                  in a VM, perf_event_paranoid, ...)
 *   --format text|json   (text by default)
 * Both lists come from the CPU backend through its catalog calls (include/omniprof/cpu.h):
 * the library is loaded with RTLD_LOCAL, so its interposers (pthread_create, fork, ...) stay
 * out of this process's symbol lookups. Exit status: 0; 1 when the CPU backend is not built. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli_lib.h"
#include "cli/commands.h"
#include "omniprof/cpu.h"

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') putchar('\\');
        putchar(*s);
    }
    putchar('"');
}

typedef struct print_ctx {
    int json;
    size_t n;
} print_ctx;

static int print_component(const omniprof_cpu_component_info_t *c, void *data)
{
    print_ctx *p = data;
    if (p->json) {
        printf("%s{\"name\": ", p->n ? ", " : "");
        json_str(c->name);
        printf(", \"units\": ");
        json_str(c->units);
        printf(", \"description\": ");
        json_str(c->description);
        printf("}");
    } else {
        printf("  %-18s %-6s %s\n", c->name, c->units, c->description);
    }
    p->n++;
    return 0;
}

static int print_event(const omniprof_cpu_event_info_t *e, void *data)
{
    print_ctx *p = data;
    if (p->json) {
        printf("%s{\"name\": ", p->n ? ", " : "");
        json_str(e->name);
        printf(", \"type\": \"%s\", \"available\": %s, \"description\": ", e->is_hardware ? "hardware" : "software",
               e->available ? "true" : "false");
        json_str(e->description);
        if (!e->available) {
            printf(", \"reason\": ");
            json_str(e->reason);
        }
        printf("}");
    } else {
        printf("  %-18s %-9s %-5s %s%s%s\n", e->name, e->is_hardware ? "hardware" : "software",
               e->available ? "yes" : "no", e->description, e->available ? "" : " — ", e->available ? "" : e->reason);
    }
    p->n++;
    return 0;
}

int op_avail_components(const avail_args *a)
{
    int components = a->components, events = a->cpu_events, json = a->json;
    char err[512];
    void *h = cli_dlopen("libomniprof-backend-cpu.so", RTLD_NOW | RTLD_LOCAL, err, sizeof(err));
    omniprof_status_t (*iter_events)(omniprof_cpu_event_cb_t, void *) = NULL;
    omniprof_status_t (*iter_components)(omniprof_cpu_component_cb_t, void *) = NULL;
    if (h) {
        *(void **)&iter_events = dlsym(h, "omniprof_cpu_iterate_events");
        *(void **)&iter_components = dlsym(h, "omniprof_cpu_iterate_components");
    }
    if (!iter_events || !iter_components) {
        fprintf(stderr, "omniprof avail: the CPU backend is not available: %s\n", h ? "it has no catalog calls" : err);
        return 1;
    }
    print_ctx p = {json, 0};
    if (json) printf("{");
    if (components) {
        if (json) printf("\"components\": [");
        else {
            printf("CPU components (OMNIPROF_COMPONENTS; per region: count, sum, mean, min, max, stddev, self)\n");
            printf("  %-18s %-6s %s\n", "NAME", "UNITS", "DESCRIPTION");
        }
        iter_components(print_component, &p);
        if (json) printf("]");
    }
    if (events) {
        p.n = 0;
        if (json) printf("%s\"cpu_events\": [", components ? ", " : "");
        else {
            if (components) printf("\n");
            printf("CPU perf events (OMNIPROF_SAMPLING_PERF_EVENTS, up to 8 per sample)\n");
            printf("  %-18s %-9s %-5s %s\n", "NAME", "TYPE", "AVAIL", "DESCRIPTION");
        }
        iter_events(print_event, &p);
        if (json) printf("]");
        else /* the forms beyond the named events (common/perf_event_names.h) */
            printf("  also perf's aliases (cpu-cycles, faults, cs, ...), cache events "
                   "<cache>-<op>s and <cache>-<op>-misses\n  (e.g. L1-dcache-load-misses, "
                   "LLC-loads) and raw PMU events r<hex> (e.g. r00c0); "
                   "`omniprof run --perf-events`\n");
    }
    if (json) printf("}\n");
    return 0;
}
