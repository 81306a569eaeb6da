/* formats.c — the names of output formats, table formats and units, parsed in one place for
 * `omniprof run -f`, `omniprof convert|summary|query` and the Python package (output.h). */
#include <string.h>

#include "output/internal.h"

static const struct {
    const char *name;
    unsigned bit;
} g_formats[] = {
    {"rocpd", OP_OUT_FMT_ROCPD}, {"pftrace", OP_OUT_FMT_PFTRACE}, {"json", OP_OUT_FMT_JSON},
    {"csv", OP_OUT_FMT_CSV},     {"folded", OP_OUT_FMT_FOLDED},   {"stats", OP_OUT_FMT_STATS},
    {"wall_clock", OP_OUT_FMT_WALL_CLOCK}, {"otf2", OP_OUT_FMT_OTF2}, {"svg", OP_OUT_FMT_SVG},
};
#define N_FORMATS (sizeof g_formats / sizeof g_formats[0])

/* "pftrace, json, csv or folded": the names in `allowed`, for messages. */
static void list_names(unsigned allowed, char *buf, size_t n)
{
    size_t k = 0, count = 0, at = 0;
    for (size_t i = 0; i < N_FORMATS; i++) count += (allowed & g_formats[i].bit) != 0;
    buf[0] = 0;
    for (size_t i = 0; i < N_FORMATS && at < n; i++) {
        if (!(allowed & g_formats[i].bit)) continue;
        const char *sep = k == 0 ? "" : k + 1 == count ? " or " : ", ";
        at += (size_t)snprintf(buf + at, n - at, "%s%s", sep, g_formats[i].name);
        k++;
    }
}

int op_output_parse_formats(const char *text, unsigned allowed, unsigned *formats, char *err, size_t errlen)
{
    char valid[160];
    list_names(allowed, valid, sizeof valid);
    unsigned got = 0;
    for (const char *p = text ? text : ""; *p;) {
        p += strspn(p, " ,");
        size_t len = strcspn(p, " ,");
        if (!len) break;
        unsigned bit = 0;
        for (size_t i = 0; i < N_FORMATS && !bit; i++)
            if (strlen(g_formats[i].name) == len && !strncmp(p, g_formats[i].name, len)) bit = g_formats[i].bit;
        if (!(bit & allowed)) {
            op_seterr(err, errlen, "output format '%.*s': expected %s", (int)(len > 64 ? 64 : len), p, valid);
            return OP_OUT_EINPUT;
        }
        got |= bit;
        p += len;
    }
    if (!got) {
        op_seterr(err, errlen, "no output format given: expected %s", valid);
        return OP_OUT_EINPUT;
    }
    *formats |= got;
    return 0;
}

int op_output_parse_table_format(const char *t)
{
    static const char *const names[] = {"console", "csv", "json", "md"}; /* index = OP_OUT_SUMMARY_* */
    for (int i = 0; t && i < 4; i++)
        if (!strcmp(t, names[i])) return i;
    return -1;
}

int op_output_parse_units(const char *t)
{
    static const char *const names[][2] = {{"nsec", "ns"}, {"usec", "us"}, {"msec", "ms"}, {"sec", "s"}};
    for (int i = 0; t && i < 4; i++)
        if (!strcmp(t, names[i][0]) || !strcmp(t, names[i][1])) return i; /* == OP_OUT_NSEC.. */
    return -1;
}
