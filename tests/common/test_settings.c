/* test_settings.c — the settings registry: every default parses and lies in its range, every
 * numeric setting has a range, env values are typed, bad values (NaN, inf, overflow, out of
 * range, reversed id ranges) are reported with the variable name, the value and the valid range
 * and fall back to the default; unknown OMNIPROF_* names are reported with the closest one. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/log.h"
#include "common/number.h"
#include "common/settings.h"

static char g_logs[4096];
static int g_n_logs;
static void capture(op_log_level level, const char *line, void *data)
{
    (void)level;
    (void)data;
    strncat(g_logs, line, sizeof(g_logs) - strlen(g_logs) - 1);
    g_n_logs++;
}

int main(void)
{
    /* Every default value is valid for its own type. */
    for (int i = 0; i < OP_SET__COUNT; i++) {
        const op_setting_info *info = op_setting_get_info((op_setting_id)i);
        char err[512];
        CHECK(info != NULL);
        CHECK(strncmp(info->env_name, "OMNIPROF_", 9) == 0);
        CHECK(info->description[0] != '\0');
        if (info->default_value[0] != '\0' || info->type == OP_SETTING_TYPE_STRING) {
            int rc = op_setting_validate((op_setting_id)i, info->default_value, err, sizeof(err));
            if (rc != 0) fprintf(stderr, "default of %s invalid: %s\n", info->env_name, err);
            CHECK(rc == 0);
        }
        /* Every numeric setting has a valid range, and its default lies in it. */
        if (info->type == OP_SETTING_TYPE_INT || info->type == OP_SETTING_TYPE_UINT ||
            info->type == OP_SETTING_TYPE_DOUBLE) {
            op_num_range r;
            int rc = op_num_range_parse(info->choices, &r);
            if (rc != 0) fprintf(stderr, "%s has no valid range: '%s'\n", info->env_name, info->choices);
            CHECK(rc == 0);
        }
        /* Names are unique. */
        CHECK(op_setting_find(info->env_name) == i);
    }
    CHECK(op_setting_get_info(OP_SET__COUNT) == NULL);
    CHECK(op_setting_find("OMNIPROF_NO_SUCH_SETTING") == -1);
    CHECK(op_setting_find("LOG_LEVEL") == OP_SET_LOG_LEVEL);

    /* Validation messages name the variable, the value and what is valid. */
    char err[512];
    CHECK(op_setting_validate(OP_SET_LOG_LEVEL, "loud", err, sizeof(err)) == -1);
    CHECK(strstr(err, "OMNIPROF_LOG_LEVEL") && strstr(err, "loud") && strstr(err, "warning"));
    CHECK(op_setting_validate(OP_SET_INIT_AT_LOAD, "maybe", err, sizeof(err)) == -1);
    CHECK(strstr(err, "true or false") != NULL);
    CHECK(op_setting_validate(OP_SET_FINALIZE_TIMEOUT_MS, "-5", err, sizeof(err)) == -1);
    CHECK(op_setting_validate(OP_SET_FINALIZE_TIMEOUT_MS, "250", err, sizeof(err)) == 0);
    /* Issue 11, "bad numbers accepted or misread": each is refused naming setting, value, range. */
    static const struct { op_setting_id id; const char *value, *want; } bad[] = {
        {OP_SET_SAMPLING_FREQ, "nan", "NaN"},
        {OP_SET_SAMPLING_FREQ, "0", "(0,100000]"},
        {OP_SET_SAMPLING_DELAY, "1e300", "[0,31536000]"},
        {OP_SET_SAMPLING_DELAY, "inf", "NaN and infinity"},
        {OP_SET_SAMPLING_DELAY, "-inf", "NaN and infinity"},
        {OP_SET_PROCESS_SAMPLING_INTERVAL, "0", "[0.001,86400]"},
        {OP_SET_PROCESS_SAMPLING_INTERVAL, "-1", "[0.001,86400]"},
        {OP_SET_DB_FLUSH_INTERVAL_MS, "0", "[1,60000]"},
        {OP_SET_DB_FLUSH_INTERVAL_MS, "60001", "[1,60000]"},
        {OP_SET_DB_SPOOL_CHUNK_KB, "1", "[64,65536]"},
        {OP_SET_DB_SPOOL_CHUNK_KB, "99999999999999999999", "too large"},
        {OP_SET_FLUSH_INTERVAL, "010x", "non-negative integer"},
        {OP_SET_SAMPLING_TIDS, "5-1", "reversed range"},
        {OP_SET_SAMPLING_TIDS, "1,-3", "not an id"},
        {OP_SET_SAMPLING_CPUS, "0,x", "not an id"},
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        err[0] = '\0';
        int rc = op_setting_validate(bad[k].id, bad[k].value, err, sizeof(err));
        const op_setting_info *info = op_setting_get_info(bad[k].id);
        bool named = strstr(err, info->env_name) && strstr(err, bad[k].value) && strstr(err, bad[k].want);
        if (rc == 0 || !named) fprintf(stderr, "%s=%s: rc %d, message '%s'\n", info->env_name, bad[k].value, rc, err);
        CHECK(rc == -1 && named);
    }
    CHECK(op_setting_validate(OP_SET_FLUSH_INTERVAL, "010", err, sizeof(err)) == 0);
    CHECK(op_setting_validate(OP_SET_SAMPLING_TIDS, "0, 2,5-8", err, sizeof(err)) == 0);
    CHECK(op_setting_validate(OP_SET_SAMPLING_CPUS, "none", err, sizeof(err)) == 0);
    CHECK(op_setting_validate(OP_SET_SAMPLING_CPUTIME_DELAY, "-1", err, sizeof(err)) == 0);

    /* Parsers. */
    bool b;
    int64_t i64;
    uint64_t u64;
    double d;
    CHECK(op_parse_bool("On", &b) == 0 && b);
    CHECK(op_parse_bool("0", &b) == 0 && !b);
    CHECK(op_parse_bool("", &b) == -1);
    CHECK(op_parse_int("-42", &i64) == 0 && i64 == -42);
    CHECK(op_parse_int("0x10", &i64) == 0 && i64 == 16);
    CHECK(op_parse_int("12abc", &i64) == -1);
    CHECK(op_parse_uint("7", &u64) == 0 && u64 == 7);
    CHECK(op_parse_uint("-7", &u64) == -1);
    CHECK(op_parse_double("2.5", &d) == 0 && d == 2.5);
    CHECK(op_parse_double("x", &d) == -1);
    CHECK(op_parse_double("nan", &d) == -1 && op_parse_double("inf", &d) == -1);
    CHECK(op_parse_uint("010", &u64) == 0 && u64 == 10); /* decimal, never octal */

    /* The environment is read once: a good value is typed, a bad one logged and defaulted. */
    op_log_set_callback(capture, NULL);
    setenv("OMNIPROF_FINALIZE_TIMEOUT_MS", "1234", 1);
    setenv("OMNIPROF_INIT_AT_LOAD", "perhaps", 1);
    setenv("OMNIPROF_TOOL_LIBRARIES", "/a.so:/b.so", 1);
    setenv("OMNIPROF_FLUSH_INTERVL", "5", 1);
    g_n_logs = 0;
    op_settings_reset();
    CHECK(op_settings_load() == 1);
    CHECK(strstr(g_logs, "OMNIPROF_INIT_AT_LOAD='perhaps' is not valid") != NULL);
    CHECK(strstr(g_logs, "OMNIPROF_FLUSH_INTERVL is not an omniprof setting (did you mean OMNIPROF_FLUSH_INTERVAL?)"));
    CHECK(g_n_logs == 2);
    /* Loading again (another copy of this module in the process would) says nothing new. */
    op_settings_reset();
    CHECK(op_settings_load() == 1);
    CHECK(g_n_logs == 2);
    unsetenv("OMNIPROF_FLUSH_INTERVL");
    CHECK(op_setting_uint(OP_SET_FINALIZE_TIMEOUT_MS) == 1234);
    CHECK(op_setting_is_set(OP_SET_FINALIZE_TIMEOUT_MS));
    CHECK(op_setting_bool(OP_SET_INIT_AT_LOAD) == true); /* default */
    CHECK(!op_setting_is_set(OP_SET_INIT_AT_LOAD));
    CHECK(strcmp(op_setting_str(OP_SET_TOOL_LIBRARIES), "/a.so:/b.so") == 0);
    /* A later setenv does not change the snapshot. */
    setenv("OMNIPROF_FINALIZE_TIMEOUT_MS", "99", 1);
    CHECK(op_setting_uint(OP_SET_FINALIZE_TIMEOUT_MS) == 1234);
    op_log_set_callback(NULL, NULL);
    return CHECK_DONE();
}
