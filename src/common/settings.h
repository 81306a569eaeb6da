/* settings.h — typed access to the settings registry (settings.def).
 *
 * The environment is read once, at the first access (or op_settings_load), into a private
 * snapshot: later setenv calls by the application do not race with us. A value that does not
 * parse or lies outside the setting's range is reported once per process with the variable's
 * name, the value and what would be valid, and the default is used instead (the launcher
 * validates beforehand and refuses to run with a bad value). */
#ifndef OMNIPROF_COMMON_SETTINGS_H
#define OMNIPROF_COMMON_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum op_setting_type {
    OP_SETTING_TYPE_BOOL,
    OP_SETTING_TYPE_INT,
    OP_SETTING_TYPE_UINT,
    OP_SETTING_TYPE_DOUBLE,
    OP_SETTING_TYPE_STRING,
    OP_SETTING_TYPE_ENUM,
    OP_SETTING_TYPE_LIST,
    OP_SETTING_TYPE_IDLIST, /* ids and ranges "0,2,5-8", "all", "none" (common/number.h) */
    OP_SETTING_TYPE_REGEX,  /* a POSIX extended regex, size-bounded (common/regex_bound.h); "" = none */
} op_setting_type;

typedef enum op_setting_id {
#define OP_SETTING(ID, TYPE, DEFAULT, CHOICES, DESC) OP_SET_##ID,
#include "common/settings.def"
#undef OP_SETTING
    OP_SET__COUNT
} op_setting_id;

typedef struct op_setting_info {
    const char *env_name;    /* "OMNIPROF_LOG_LEVEL" */
    op_setting_type type;
    const char *type_name;   /* "BOOL", ... */
    const char *default_value;
    const char *choices;     /* ENUM/LIST: "a|b|c"; INT/UINT/DOUBLE: the valid range "[0,60000]"; else "" */
    const char *description;
} op_setting_info;

const op_setting_info *op_setting_get_info(op_setting_id id);
/* Index by variable name ("OMNIPROF_X" or "X"); -1 if unknown. */
int op_setting_find(const char *name);

/* Check `value` for setting `id`. Returns 0, or -1 with a message in err naming the variable,
 * the value and what would be valid. */
int op_setting_validate(op_setting_id id, const char *value, char *err, size_t errlen);

/* Checks every OMNIPROF_* variable of the environment: cb(id, message) for each value that is
 * not valid (the message names the variable, the value and what is valid), cb(-1, message) for
 * each name that is no setting (with the closest setting). Returns the invalid count. */
typedef void (*op_settings_problem_cb)(int setting_id, const char *message, void *data);
int op_settings_check_environment(op_settings_problem_cb cb, void *data);

/* Reads the environment (once). Returns the number of invalid values: each is reported once
 * per process (common/once.h) and its default used; unknown OMNIPROF_* names are warned. */
int op_settings_load(void);
/* Forget the snapshot (tests; a forked child keeps its parent's snapshot). */
void op_settings_reset(void);

/* Typed getters (load on first use). true if the variable was set by the user. */
bool op_setting_is_set(op_setting_id id);
bool op_setting_bool(op_setting_id id);
int64_t op_setting_int(op_setting_id id);
uint64_t op_setting_uint(op_setting_id id);
double op_setting_double(op_setting_id id);
/* The text value (STRING, ENUM, LIST); never NULL (may be ""). Valid for the process. */
const char *op_setting_str(op_setting_id id);
/* For LIST (or a STRING of comma- or space-separated names): true if `item` is among the
 * listed values (case-insensitive). */
bool op_setting_list_has(op_setting_id id, const char *item);

/* Parsers shared with the CLI (common/number.h without a range: no NaN/inf, no overflow, no
 * octal). Return 0 on success, -1 on bad text. */
int op_parse_bool(const char *text, bool *out);
int op_parse_int(const char *text, int64_t *out);
int op_parse_uint(const char *text, uint64_t *out);
int op_parse_double(const char *text, double *out);

#endif /* OMNIPROF_COMMON_SETTINGS_H */
