/* settings.c — the registry table built from settings.def, the environment snapshot, and the
 * value parsers. */
#include "common/settings.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"

static const op_setting_info g_info[OP_SET__COUNT] = {
#define OP_SETTING(ID, TYPE, DEFAULT, CHOICES, DESC) \
    [OP_SET_##ID] = {"OMNIPROF_" #ID, OP_SETTING_TYPE_##TYPE, #TYPE, DEFAULT, CHOICES, DESC},
#include "common/settings.def"
#undef OP_SETTING
};

typedef struct setting_value {
    bool is_set;
    char *text; /* the user's text, or NULL for the default */
    union {
        bool b;
        int64_t i;
        uint64_t u;
        double d;
    } v;
} setting_value;

static setting_value g_values[OP_SET__COUNT];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_invalid;

const op_setting_info *op_setting_get_info(op_setting_id id)
{
    if ((int)id < 0 || id >= OP_SET__COUNT) return NULL;
    return &g_info[id];
}

int op_setting_find(const char *name)
{
    if (!name) return -1;
    const char *bare = strncmp(name, "OMNIPROF_", 9) == 0 ? name + 9 : name;
    for (int i = 0; i < OP_SET__COUNT; i++)
        if (strcmp(g_info[i].env_name + 9, bare) == 0) return i;
    return -1;
}

int op_parse_bool(const char *t, bool *out)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    if (!t) return -1;
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(t, yes[i]) == 0) { *out = true; return 0; }
        if (strcasecmp(t, no[i]) == 0) { *out = false; return 0; }
    }
    return -1;
}

int op_parse_int(const char *t, int64_t *out)
{
    if (!t || !*t) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(t, &end, 0);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

int op_parse_uint(const char *t, uint64_t *out)
{
    if (!t || !*t) return -1;
    while (isspace((unsigned char)*t)) t++;
    if (*t == '-') return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(t, &end, 0);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

int op_parse_double(const char *t, double *out)
{
    if (!t || !*t) return -1;
    char *end;
    errno = 0;
    double v = strtod(t, &end);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

/* Is `word` (length n) one of the '|'-separated choices? */
static bool in_choices(const char *choices, const char *word, size_t n)
{
    const char *p = choices;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncasecmp(p, word, n) == 0) return true;
        if (!bar) break;
        p = bar + 1;
    }
    return false;
}

static int parse_value(op_setting_id id, const char *text, setting_value *out, char *err, size_t errlen)
{
    const op_setting_info *info = &g_info[id];
    const char *valid = NULL;
    switch (info->type) {
    case OP_SETTING_TYPE_BOOL:
        if (op_parse_bool(text, &out->v.b) == 0) return 0;
        valid = "true or false (also 1/0, yes/no, on/off)";
        break;
    case OP_SETTING_TYPE_INT:
        if (op_parse_int(text, &out->v.i) == 0) return 0;
        valid = "an integer";
        break;
    case OP_SETTING_TYPE_UINT:
        if (op_parse_uint(text, &out->v.u) == 0) return 0;
        valid = "a non-negative integer";
        break;
    case OP_SETTING_TYPE_DOUBLE:
        if (op_parse_double(text, &out->v.d) == 0) return 0;
        valid = "a number";
        break;
    case OP_SETTING_TYPE_STRING:
        return 0;
    case OP_SETTING_TYPE_ENUM:
        if (in_choices(info->choices, text, strlen(text))) return 0;
        valid = info->choices;
        break;
    case OP_SETTING_TYPE_LIST: {
        const char *p = text;
        while (*p) {
            while (*p == ' ' || *p == ',') p++;
            size_t n = strcspn(p, " ,");
            if (n == 0) break;
            if (!in_choices(info->choices, p, n)) {
                if (err)
                    snprintf(err, errlen, "%s: '%.*s' in '%s' is not valid; valid values: %s", info->env_name,
                             (int)n, p, text, info->choices);
                return -1;
            }
            p += n;
        }
        return 0;
    }
    }
    if (err) snprintf(err, errlen, "%s='%s' is not valid; expected %s", info->env_name, text, valid);
    return -1;
}

int op_setting_validate(op_setting_id id, const char *value, char *err, size_t errlen)
{
    if ((int)id < 0 || id >= OP_SET__COUNT) {
        if (err) snprintf(err, errlen, "unknown setting");
        return -1;
    }
    setting_value tmp = {0};
    return parse_value(id, value ? value : "", &tmp, err, errlen);
}

static void load_once(void)
{
    int invalid = 0;
    for (int i = 0; i < OP_SET__COUNT; i++) {
        setting_value *sv = &g_values[i];
        memset(sv, 0, sizeof(*sv));
        char err[512];
        /* The default always parses (checked by the settings unit test). */
        parse_value((op_setting_id)i, g_info[i].default_value, sv, NULL, 0);
        const char *env = getenv(g_info[i].env_name);
        if (!env) continue;
        setting_value user = {0};
        if (parse_value((op_setting_id)i, env, &user, err, sizeof(err)) != 0) {
            op_error("%s; using the default '%s'", err, g_info[i].default_value);
            invalid++;
            continue;
        }
        user.is_set = true;
        user.text = strdup(env); /* process lifetime: never freed */
        *sv = user;
    }
    g_invalid = invalid;
}

int op_settings_load(void)
{
    pthread_once(&g_once, load_once);
    return g_invalid;
}

void op_settings_reset(void)
{
    static const pthread_once_t fresh = PTHREAD_ONCE_INIT;
    memcpy(&g_once, &fresh, sizeof(fresh));
}

bool op_setting_is_set(op_setting_id id)
{
    op_settings_load();
    return g_values[id].is_set;
}
bool op_setting_bool(op_setting_id id)
{
    op_settings_load();
    return g_values[id].v.b;
}
int64_t op_setting_int(op_setting_id id)
{
    op_settings_load();
    return g_values[id].v.i;
}
uint64_t op_setting_uint(op_setting_id id)
{
    op_settings_load();
    return g_values[id].v.u;
}
double op_setting_double(op_setting_id id)
{
    op_settings_load();
    return g_values[id].v.d;
}
const char *op_setting_str(op_setting_id id)
{
    op_settings_load();
    return g_values[id].text ? g_values[id].text : g_info[id].default_value;
}

bool op_setting_list_has(op_setting_id id, const char *item)
{
    const char *p = op_setting_str(id);
    size_t n = strlen(item);
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        size_t len = strcspn(p, " ,");
        if (len == n && strncasecmp(p, item, n) == 0) return true;
        p += len;
    }
    return false;
}
