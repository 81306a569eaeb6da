/* settings.c — the registry table built from settings.def, the environment snapshot, the
 * value checks (numbers through common/number.c, with each setting's range), and the report of
 * bad or unknown OMNIPROF_* variables (each message once per process, common/once.c). */
#include "common/settings.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"
#include "common/number.h"
#include "common/once.h"
#include "common/perf_event_names.h"
#include "common/regex_bound.h"
#include "common/suggest.h"

extern char **environ;

static const op_setting_info g_info[OP_SET__COUNT] = {
#define OP_SETTING(ID, TYPE, DEFAULT, CHOICES, DESC) \
    [OP_SET_##ID] = {"OMNIPROF_" #ID, OP_SETTING_TYPE_##TYPE, #TYPE, DEFAULT, CHOICES, DESC},
#include "common/settings.def"
#undef OP_SETTING
};

typedef struct setting_value {
    bool is_set;
    char *text; /* the user's text, or NULL for the default */
    struct { /* not a union: a number is stored as double and as its integer type */
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

/* The typed parsers of settings.h are common/number.c's, without a range. */
int op_parse_int(const char *t, int64_t *out) { return op_num_i64(t, out) == OP_NUM_OK ? 0 : -1; }
int op_parse_uint(const char *t, uint64_t *out) { return op_num_u64(t, out) == OP_NUM_OK ? 0 : -1; }
int op_parse_double(const char *t, double *out) { return op_num_double(t, out) == OP_NUM_OK ? 0 : -1; }

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
    case OP_SETTING_TYPE_UINT:
    case OP_SETTING_TYPE_DOUBLE: {
        op_num_type nt = info->type == OP_SETTING_TYPE_INT    ? OP_NUM_TYPE_INT
                         : info->type == OP_SETTING_TYPE_UINT ? OP_NUM_TYPE_UINT
                                                              : OP_NUM_TYPE_DOUBLE;
        char why[160];
        if (op_num_parse_checked(text, nt, info->choices, &out->v.d, &out->v.i, &out->v.u, why, sizeof(why)) == 0)
            return 0;
        if (err) snprintf(err, errlen, "%s='%s' is not valid; %s", info->env_name, text, why);
        return -1;
    }
    case OP_SETTING_TYPE_IDLIST: {
        char why[200];
        if (op_idlist_validate(text, why, sizeof(why)) == 0) return 0;
        if (err)
            snprintf(err, errlen, "%s='%s' is not valid: %s; expected ids and ranges like '0,2,5-8', 'all' or 'none'",
                     info->env_name, text, why);
        return -1;
    }
    case OP_SETTING_TYPE_STRING:
        return 0;
    case OP_SETTING_TYPE_REGEX: {
        if (!*text) return 0;
        regex_t re;
        char why[256];
        if (op_regex_compile(&re, text, REG_NOSUB, why, sizeof(why)) == 0) {
            regfree(&re);
            return 0;
        }
        if (err) snprintf(err, errlen, "%s='%s' is not a usable POSIX extended regular expression: %s", info->env_name, text, why);
        return -1;
    }
    case OP_SETTING_TYPE_ENUM:
        if (in_choices(info->choices, text, strlen(text))) return 0;
        valid = info->choices;
        break;
    case OP_SETTING_TYPE_LIST: {
        /* perf's event names are more than a list of choices (raw r<hex>, cache events) */
        if (id == OP_SET_SAMPLING_PERF_EVENTS)
            return op_perf_event_list_check(info->env_name, text, err, errlen);
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

/* OMNIPROF_* variables that are not settings: set by omniprof for its children, or read by
 * omniprof's own scripts and test tools ("X*" = a prefix). Not reported as unknown. */
static const char *const g_not_settings[] = {
    "MPI_RANK", "MPI_SIZE", "MPI_LOCAL_RANK", "OUTPUT_LIB", "BENCH_*", "DEMO_*", "TEST_*", "JSON_TOOL_*",
    "GPU_TEST_*", "CPUTEST_*",
};

static bool is_known_other(const char *bare, size_t n)
{
    for (size_t k = 0; k < sizeof(g_not_settings) / sizeof(g_not_settings[0]); k++) {
        const char *w = g_not_settings[k];
        size_t wl = strlen(w);
        if (w[wl - 1] == '*' ? n >= wl - 1 && strncmp(bare, w, wl - 1) == 0 : n == wl && strncmp(bare, w, n) == 0)
            return true;
    }
    return false;
}

int op_settings_check_environment(op_settings_problem_cb cb, void *data)
{
    int invalid = 0;
    char msg[768];
    for (int i = 0; i < OP_SET__COUNT; i++) {
        const char *env = getenv(g_info[i].env_name);
        setting_value tmp = {0};
        if (env && parse_value((op_setting_id)i, env, &tmp, msg, sizeof(msg)) != 0) {
            invalid++;
            if (cb) cb(i, msg, data);
        }
    }
    const char *names[OP_SET__COUNT];
    for (int i = 0; i < OP_SET__COUNT; i++) names[i] = g_info[i].env_name;
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "OMNIPROF_", 9) != 0) continue;
        const char *eq = strchr(*e, '=');
        size_t n = eq ? (size_t)(eq - *e) : strlen(*e);
        char name[128];
        if (n >= sizeof(name)) n = sizeof(name) - 1;
        memcpy(name, *e, n);
        name[n] = '\0';
        if (op_setting_find(name) >= 0 || is_known_other(name + 9, n - 9)) continue;
        const char *close = op_suggest_closest(name, names, OP_SET__COUNT);
        snprintf(msg, sizeof(msg), "%s is not an omniprof setting%s%s%s; it is ignored (`omniprof avail --settings` "
                 "lists them)", name, close ? " (did you mean " : "", close ? close : "", close ? "?)" : "");
        if (cb) cb(-1, msg, data);
    }
    return invalid;
}

static void log_problem(int id, const char *message, void *data)
{
    (void)data;
    /* An unknown name under `omniprof run` (OMNIPROF_LAUNCH_TIME set, not an attach): the
     * launcher said it before the run, from the environment the program inherited; saying it
     * again in every process of the program is noise (issue 31). */
    if (id < 0 && g_values[OP_SET_LAUNCH_TIME].is_set && !g_values[OP_SET_ATTACH_MODE].v.b) return;
    /* Once per process: not when it cannot be written yet (a copy loaded before the preload
     * library's log fd leaves it to a later one), nor when it was said already. */
    if (!op_log_would_write(id < 0 ? OP_LOG_WARNING : OP_LOG_ERROR) || !op_once(message)) return;
    if (id < 0) op_warn("%s", message);
    else op_error("%s; using the default '%s'", message, g_info[id].default_value);
}

static void load_once(void)
{
    for (int i = 0; i < OP_SET__COUNT; i++) {
        setting_value *sv = &g_values[i];
        free(sv->text); /* a reload (op_settings_reset, tests): the previous snapshot's text */
        memset(sv, 0, sizeof(*sv));
        /* The default always parses (checked by the settings unit test). */
        parse_value((op_setting_id)i, g_info[i].default_value, sv, NULL, 0);
        const char *env = getenv(g_info[i].env_name);
        if (!env) continue;
        setting_value user = {0};
        if (parse_value((op_setting_id)i, env, &user, NULL, 0) != 0) continue; /* reported below */
        user.is_set = true;
        user.text = strdup(env); /* process lifetime: never freed */
        *sv = user;
    }
    /* Each message once per process, whichever copy of this module says it first (once.h). */
    g_invalid = op_settings_check_environment(log_problem, NULL);
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
