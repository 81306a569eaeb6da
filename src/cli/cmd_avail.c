/* cmd_avail.c — `omniprof avail`: what this build can collect and how it is configured.
 *
 *   --settings [--format text|json]   every OMNIPROF_* setting: name, variable, type, default,
 *                                     choices or valid range, description (settings.def), and
 *                                     the record kinds it turns on (kinds.def's SWITCH column)
 *   --counters, --pmc-check ...       hardware counters (the counters module, when built)
 *   --components, --cpu-events        CPU components and events (the CPU module, when built)
 *   --pm-metrics, --pm-check, --pc-sampling   the GPU samplers (cmd_avail_gpu.c)
 * With no section, --settings is printed. The options are the rows of avail_options below,
 * parsed once (common/cli_opt.h) into avail_args for every section. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "common/cli_opt.h"
#include "common/kinds.h"
#include "common/settings.h"

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(out, "\\%c", *p);
        else if (*p < 0x20) fprintf(out, "\\u%04x", *p);
        else fputc(*p, out);
    }
    fputc('"', out);
}

static int print_settings(int json)
{
    FILE *out = stdout;
    if (json) {
        fputs("[\n", out);
        for (int i = 0; i < OP_SET__COUNT; i++) {
            const op_setting_info *s = op_setting_get_info((op_setting_id)i);
            fputs("  {\"name\": ", out);
            json_string(out, s->env_name + 9);
            fputs(", \"variable\": ", out);
            json_string(out, s->env_name);
            fputs(", \"type\": ", out);
            json_string(out, s->type_name);
            fputs(", \"default\": ", out);
            json_string(out, s->default_value);
            bool numeric = s->type == OP_SETTING_TYPE_INT || s->type == OP_SETTING_TYPE_UINT ||
                           s->type == OP_SETTING_TYPE_DOUBLE;
            fputs(numeric ? ", \"range\": " : ", \"choices\": ", out);
            json_string(out, s->choices);
            fputs(", \"description\": ", out);
            json_string(out, s->description);
            const char *kinds[OMNIPROF_BUFFER_TRACING_LAST + OMNIPROF_COUNTER_RECORD_LAST];
            size_t nk = op_setting_kinds(i, kinds, sizeof kinds / sizeof kinds[0]);
            fputs(", \"kinds\": [", out);
            for (size_t k = 0; k < nk && k < sizeof kinds / sizeof kinds[0]; k++) {
                if (k) fputs(", ", out);
                json_string(out, kinds[k]);
            }
            fprintf(out, "]}%s\n", i + 1 < OP_SET__COUNT ? "," : "");
        }
        fputs("]\n", out);
        return 0;
    }
    fprintf(out, "%-28s %-38s %-7s %-18s %s\n", "NAME", "VARIABLE", "TYPE", "DEFAULT", "DESCRIPTION");
    for (int i = 0; i < OP_SET__COUNT; i++) {
        const op_setting_info *s = op_setting_get_info((op_setting_id)i);
        const char *def = s->default_value[0] ? s->default_value : "\"\"";
        fprintf(out, "%-28s %-38s %-7s %-18s %s", s->env_name + 9, s->env_name, s->type_name, def, s->description);
        if (s->type == OP_SETTING_TYPE_ENUM || s->type == OP_SETTING_TYPE_LIST) fprintf(out, " [%s]", s->choices);
        else if (s->choices[0]) fprintf(out, " (valid: %s)", s->choices);
        const char *kinds[OMNIPROF_BUFFER_TRACING_LAST + OMNIPROF_COUNTER_RECORD_LAST];
        size_t nk = op_setting_kinds(i, kinds, sizeof kinds / sizeof kinds[0]);
        for (size_t k = 0; k < nk && k < sizeof kinds / sizeof kinds[0]; k++)
            fprintf(out, "%s%s", k ? " " : " (kinds: ", kinds[k]);
        if (nk) fputc(')', out);
        fputc('\n', out);
    }
    return 0;
}

enum {
    V_SETTINGS,
    V_FORMAT,
    V_JSON,
    V_COUNTERS,
    V_PMC,
    V_PMC_CHECK,
    V_CHIP,
    V_LIST_CHIPS,
    V_BASE,
    V_DERIVED,
    V_CONSTANTS,
    V_GREP,
    V_REPLAY_MODE,
    V_EXTRA_METRICS,
    V_COMPONENTS,
    V_CPU_EVENTS,
    V_PM_METRICS,
    V_PM_CHECK,
    V_PC_SAMPLING,
    V_HELP
};

#define ROW(ID, LONG, SHORT, KIND, META, VALUES, GROUP, HELP)                                      \
    {                                                                                              \
        ID, LONG, SHORT, KIND, META, VALUES, GROUP, HELP, -1, 0, 0                                 \
    }
static const op_cli_option avail_options[] = {
    ROW(V_SETTINGS, "settings", 's', OP_CLI_FLAG, NULL, NULL,
        "Sections (--settings when none is given)",
        "every OMNIPROF_* setting: name, variable, type, default, choices or valid range, "
        "description"),
    ROW(V_COUNTERS, "counters", 0, OP_CLI_FLAG, NULL, NULL, NULL,
        "hardware counters and derived metrics of a chip (offline, CUPTI's host API)"),
    ROW(V_PMC, "pmc", 0, OP_CLI_FLAG, NULL, NULL, NULL, "= --counters"),
    ROW(V_PMC_CHECK, "pmc-check", 0, OP_CLI_LIST, "COUNTER...", NULL, NULL,
        "how many passes a set of counters needs, and whether it can be collected"),
    ROW(V_COMPONENTS, "components", 0, OP_CLI_FLAG, NULL, NULL, NULL, "CPU measurement components"),
    ROW(V_CPU_EVENTS, "cpu-events", 0, OP_CLI_FLAG, NULL, NULL, NULL, "CPU perf events"),
    ROW(V_PM_METRICS, "pm-metrics", 0, OP_CLI_FLAG, NULL, NULL, NULL,
        "metrics GPU PM sampling can collect on a chip (offline; --chip, default GH100; --grep)"),
    ROW(V_PM_CHECK, "pm-check", 0, OP_CLI_LIST, "METRIC...", NULL, NULL,
        "whether metrics can be PM-sampled together (one pass, offline)"),
    ROW(V_PC_SAMPLING, "pc-sampling", 0, OP_CLI_FLAG, NULL, NULL, NULL,
        "PC sampling configurations of the GPU agents"),
    ROW(V_FORMAT, "format", 0, OP_CLI_ENUM, NULL, "text|json", "Listing",
        "the listing as text (default) or JSON (--settings, --components, --cpu-events)"),
    ROW(V_JSON, "json", 0, OP_CLI_FLAG, NULL, NULL, NULL, "= --format json"),
    ROW(V_CHIP, "chip", 0, OP_CLI_VALUE, "NAME", NULL, "Counters and PM sampling",
        "the GPU chip (GH100, ...; default: the GPU present, else GH100)"),
    ROW(V_LIST_CHIPS, "list-chips", 0, OP_CLI_FLAG, NULL, NULL, NULL,
        "the chips the metrics files describe"),
    ROW(V_BASE, "base", 0, OP_CLI_FLAG, NULL, NULL, NULL, "list only base metrics"),
    ROW(V_DERIVED, "derived", 0, OP_CLI_FLAG, NULL, NULL, NULL, "list only derived metrics"),
    ROW(V_CONSTANTS, "constants", 0, OP_CLI_FLAG, NULL, NULL, NULL, "list only constants"),
    ROW(V_GREP, "grep", 0, OP_CLI_VALUE, "TEXT", NULL, NULL, "only names containing TEXT"),
    ROW(V_REPLAY_MODE, "replay-mode", 0, OP_CLI_VALUE, "kernel|none", "kernel|none", NULL,
        "pass planning with or without kernel replay (--pmc-check)"),
    ROW(V_EXTRA_METRICS, "extra-metrics", 0, OP_CLI_VALUE, "FILE.xml", NULL, NULL,
        "load more metric definitions first (':'-separated files)"),
    ROW(V_HELP, "help", 'h', OP_CLI_FLAG, NULL, NULL, "Other", "this text"),
};
#undef ROW

static const op_cli_table avail_tables[] = {
    {avail_options, (int)(sizeof avail_options / sizeof avail_options[0]), NULL, 0}};

const op_cli_command avail_command = {
    "avail",
    "list settings, counters, components",
    "omniprof avail [--settings [--format text|json]] [--counters ...] [--pmc-check "
    "COUNTER...]\n               [--components] [--cpu-events] [--pm-metrics [--chip C]] "
    "[--pm-check METRIC...]\n               [--pc-sampling]",
    "What this build can collect and how it is configured. Counters and PM sampling are listed "
    "offline, without a GPU.",
    "Exit status: 0 ok; 1 a module or library is missing; 2 bad input (unknown chip or metric: the "
    "closest names are printed); 3 a counter set that cannot be collected in the chosen mode.",
    avail_tables,
    1,
    0,
    NULL,
};

static int on_option(void *ctx, const op_cli_option *o, const char *v, int nth, const char *spelled)
{
    avail_args *a = ctx;
    (void)nth, (void)spelled;
    switch (o->id) {
    case V_SETTINGS: a->settings = true; break;
    case V_FORMAT: a->json = !strcmp(v, "json"); break;
    case V_JSON: a->json = true; break;
    case V_COUNTERS:
    case V_PMC: a->counters = true; break;
    case V_PMC_CHECK:
        a->pmc_check = true;
        if (a->n_pmc_names < 256) a->pmc_names[a->n_pmc_names++] = v;
        break;
    case V_CHIP: a->chip = v; break;
    case V_LIST_CHIPS: a->list_chips = true; break;
    case V_BASE: a->base = true; break;
    case V_DERIVED: a->derived = true; break;
    case V_CONSTANTS: a->constants = true; break;
    case V_GREP: a->grep = v; break;
    case V_REPLAY_MODE: a->replay_mode = v; break;
    case V_EXTRA_METRICS: a->extra_metrics = v; break;
    case V_COMPONENTS: a->components = true; break;
    case V_CPU_EVENTS: a->cpu_events = true; break;
    case V_PM_METRICS: a->pm_metrics = true; break;
    case V_PM_CHECK:
        a->pm_check = true;
        if (a->n_pm_names < 256) a->pm_names[a->n_pm_names++] = v;
        break;
    case V_PC_SAMPLING: a->pc_sampling = true; break;
    case V_HELP: a->help = true; break;
    }
    return 0;
}

static int not_built(const char *what, const char *module)
{
    fprintf(stderr, "omniprof avail %s: not built (the %s module is missing from this build)\n",
            what, module);
    return 1;
}

int op_cmd_avail(int argc, char **argv)
{
    avail_args a;
    memset(&a, 0, sizeof a);
    const char *pmc[256], *pm[256];
    a.pmc_names = pmc;
    a.pm_names = pm;
    char err[1024];
    int rest = argc;
    if (op_cli_parse(&avail_command, argc, argv, on_option, &a, &rest, err, sizeof err) != 0) {
        fprintf(stderr, "omniprof avail: %s\n", err);
        return 2;
    }
    if (a.help) {
        op_cli_print_help(stdout, &avail_command);
        return 0;
    }
    if (a.counters || a.pmc_check || a.list_chips)
        return op_avail_counters
                   ? op_avail_counters(&a)
                   : not_built(a.pmc_check ? "--pmc-check" : "--counters", "counters");
    if (a.pm_metrics || a.pm_check || a.pc_sampling) return op_avail_gpu(&a);
    if (a.components || a.cpu_events)
        return op_avail_components ? op_avail_components(&a) : not_built("--components", "CPU");
    return print_settings(a.json);
}
