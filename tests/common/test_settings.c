/* test_settings.c — the settings registry: every default parses, env values are typed,
 * bad values are reported with the variable name and fall back to the default. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/log.h"
#include "common/settings.h"

static char g_last_log[1024];
static void capture(op_log_level level, const char *line, void *data)
{
    (void)level;
    (void)data;
    strncpy(g_last_log, line, sizeof(g_last_log) - 1);
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

    /* The environment is read once: a good value is typed, a bad one logged and defaulted. */
    op_log_set_callback(capture, NULL);
    setenv("OMNIPROF_FINALIZE_TIMEOUT_MS", "1234", 1);
    setenv("OMNIPROF_INIT_AT_LOAD", "perhaps", 1);
    setenv("OMNIPROF_TOOL_LIBRARIES", "/a.so:/b.so", 1);
    op_settings_reset();
    CHECK(op_settings_load() == 1);
    CHECK(strstr(g_last_log, "OMNIPROF_INIT_AT_LOAD") != NULL);
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
