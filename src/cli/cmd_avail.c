/* cmd_avail.c — `omniprof avail`: what this build can collect and how it is configured.
 *
 *   --settings [--format text|json]   every OMNIPROF_* setting: name, variable, type, default,
 *                                     choices or valid range, description (settings.def), and
 *                                     the record kinds it turns on (kinds.def's SWITCH column)
 *   --counters, --pmc-check ...       hardware counters (the counters module, when built)
 *   --components, --cpu-events        CPU components and events (the CPU module, when built)
 *   --pm-metrics, --pm-check, --pc-sampling   the GPU samplers (cmd_avail_gpu.c)
 * With no section, --settings is printed. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
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

static void avail_usage(FILE *out)
{
    fprintf(out,
            "usage: omniprof avail [--settings [--format text|json]] [--counters ...] [--pmc-check COUNTER...]\n"
            "                      [--components] [--cpu-events] [--pm-metrics [--chip C]] [--pm-check METRIC...]\n"
            "                      [--pc-sampling]\n"
            "  --settings     every OMNIPROF_* setting (name, variable, type, default, description)\n"
            "  --counters     hardware counters and derived metrics%s\n"
            "  --pmc-check    how many passes a set of counters needs%s\n"
            "  --components   CPU measurement components%s\n"
            "  --cpu-events   CPU perf events%s\n"
            "  --pm-metrics   metrics GPU PM sampling can collect on a chip (offline; --chip, default GH100; --grep)\n"
            "  --pm-check     whether metrics can be PM-sampled together (one pass, offline)\n"
            "  --pc-sampling  PC sampling configurations of the GPU agents\n"
            "  --format text|json, --json   the listing as JSON (--settings, --components, --cpu-events)\n"
            "with --counters or --pmc-check:\n"
            "  --chip NAME            the GPU chip (GH100, ...; default: the GPU present, else GH100)\n"
            "  --list-chips           the chips the metrics files describe\n"
            "  --base, --derived, --constants   list only base metrics, derived metrics or constants\n"
            "  --grep TEXT            only names containing TEXT\n"
            "  --replay-mode kernel|none   pass planning with or without kernel replay (--pmc-check)\n"
            "  --extra-metrics FILE.xml    load more metric definitions first\n"
            "  -h, --help             this text\n",
            op_avail_counters ? "" : " (not built)", op_avail_counters ? "" : " (not built)",
            op_avail_components ? "" : " (not built)", op_avail_components ? "" : " (not built)");
}

int op_cmd_avail(int argc, char **argv)
{
    int json = 0, settings = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            avail_usage(stdout);
            return 0;
        }
        if (strcmp(a, "--counters") == 0 || strcmp(a, "--pmc-check") == 0 || strncmp(a, "--counters=", 11) == 0 ||
            strcmp(a, "--pmc") == 0) {
            if (!op_avail_counters) {
                fprintf(stderr, "omniprof avail %s: not built (the counters module is missing from this build)\n", a);
                return 1;
            }
            return op_avail_counters(argc, argv);
        }
        if (!strcmp(a, "--pm-metrics") || !strcmp(a, "--pm-check") || !strcmp(a, "--pc-sampling"))
            return op_avail_gpu(argc, argv);
        if (strcmp(a, "--components") == 0 || strcmp(a, "--cpu-events") == 0) {
            if (!op_avail_components) {
                fprintf(stderr, "omniprof avail %s: not built (the CPU module is missing from this build)\n", a);
                return 1;
            }
            return op_avail_components(argc, argv);
        }
        if (strcmp(a, "--settings") == 0 || strcmp(a, "-s") == 0) {
            settings = 1;
        } else if (strcmp(a, "--format") == 0 || strncmp(a, "--format=", 9) == 0) {
            const char *v = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v || (strcmp(v, "json") != 0 && strcmp(v, "text") != 0)) {
                fprintf(stderr, "omniprof avail: --format '%s' is not valid; expected text or json\n", v ? v : "");
                return 2;
            }
            json = strcmp(v, "json") == 0;
        } else {
            fprintf(stderr,
                    "omniprof avail: unknown option '%s'; valid: --settings [--format text|json], --counters, "
                    "--pmc-check, --components, --cpu-events, --pm-metrics, --pm-check, --pc-sampling\n",
                    a);
            return 2;
        }
    }
    (void)settings;
    return print_settings(json);
}
