/* fuzz_settings.c — libFuzzer harness of settings values: the one number parser
 * (src/common/number.c: numbers, ranges, id lists) and the settings registry (src/common/
 * settings.c: each setting's check, the environment snapshot and the report of bad and
 * unknown OMNIPROF_* names).
 *
 * Input: the first byte picks a setting, the rest is the text. Every input goes through
 * op_setting_validate for that setting, the three number parsers, the range and id-list
 * parsers; one input in eight is also put in the environment (as that setting's value, and
 * as the name of an unknown OMNIPROF_ variable) and the snapshot reloaded. Invariants: a
 * refusal has a message naming the variable; an accepted number is finite and, parsed as two
 * integer types, gives the same value; a parsed range holds its own bounds unless open; an id
 * list accepted by op_idlist_validate parses, and op_idlist_has agrees with the parsed items. */
#include <math.h>
#include <strings.h>

#include "fuzz.h"
#include "common/log.h"
#include "common/number.h"
#include "common/settings.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_init();
    return 0;
}

static void check_numbers(const char *text)
{
    double d;
    int64_t i;
    uint64_t u;
    int rd = op_num_double(text, &d), ri = op_num_i64(text, &i), ru = op_num_u64(text, &u);
    FUZZ_CHECK(op_num_reason(rd) && op_num_reason(ri) && op_num_reason(ru), "a result code without a reason");
    if (rd == OP_NUM_OK) FUZZ_CHECK(isfinite(d), "'%s' parsed to a value that is not finite", text);
    if (ri == OP_NUM_OK && ru == OP_NUM_OK) FUZZ_CHECK(i >= 0 && (uint64_t)i == u, "'%s': i64 %lld, u64 %llu", text,
                                                       (long long)i, (unsigned long long)u);
    op_num_range r;
    if (op_num_range_parse(text, &r) == 0) {
        FUZZ_CHECK(!isnan(r.lo) && !isnan(r.hi), "range '%s' with a NaN bound", text);
        if (!r.lo_open && r.lo <= r.hi) FUZZ_CHECK(op_num_range_has(&r, r.lo), "range '%s' lacks its low bound", text);
        if (!r.hi_open && r.lo <= r.hi) FUZZ_CHECK(op_num_range_has(&r, r.hi), "range '%s' lacks its high bound", text);
    }
    char why[256] = "";
    for (int t = OP_NUM_TYPE_INT; t <= OP_NUM_TYPE_DOUBLE; t++) {
        double out;
        int rc = op_num_parse_checked(text, (op_num_type)t, "[-5,1e6)", &out, &i, &u, why, sizeof why);
        if (rc == OP_NUM_OK) FUZZ_CHECK(out >= -5 && out < 1e6, "'%s' accepted outside [-5,1e6)", text);
        else FUZZ_CHECK(why[0], "'%s' refused without a reason", text);
    }
}

static void check_idlist(const char *text)
{
    char why[256] = "";
    int valid = op_idlist_validate(text, why, sizeof why);
    if (valid != 0) {
        FUZZ_CHECK(why[0], "id list '%s' refused without a reason", text);
        return;
    }
    if (!*text || strcasecmp(text, "all") == 0 || strcasecmp(text, "none") == 0) return;
    op_id_range r[16];
    size_t n = 0;
    if (op_idlist_parse(text, 0, r, 16, &n, why, sizeof why) != 0) {
        FUZZ_CHECK(strstr(why, "more than"), "id list '%s' validates but does not parse: %s", text, why);
        return;
    }
    for (size_t k = 0; k < n; k++) {
        FUZZ_CHECK(r[k].lo <= r[k].hi, "id list '%s': reversed item", text);
        FUZZ_CHECK(op_idlist_has(text, r[k].lo) && op_idlist_has(text, r[k].hi), "'%s' lacks its own item", text);
    }
    uint64_t probes[] = {0, 1, 2, 7, 100, 4096, UINT64_MAX};
    for (size_t p = 0; p < sizeof probes / sizeof *probes; p++) {
        int in = n == 0; /* no item (separators only): empty, holds everything as "" does */
        for (size_t k = 0; k < n; k++) in |= probes[p] >= r[k].lo && probes[p] <= r[k].hi;
        FUZZ_CHECK(in == op_idlist_has(text, probes[p]), "'%s': has(%llu) disagrees with its items", text,
                   (unsigned long long)probes[p]);
    }
}

/* Puts the value in the environment, reloads the snapshot and reads it back. */
static void check_environment(op_setting_id id, const char *text)
{
    const op_setting_info *info = op_setting_get_info(id);
    if (setenv(info->env_name, text, 1) != 0) return;
    char unknown[160];
    snprintf(unknown, sizeof unknown, "OMNIPROF_%.120s", text);
    /* a text that spells the setting's own name (OMNIPROF_CAUSAL='CAUSAL') is not an unknown name */
    int named = strchr(unknown, '=') == NULL && strcmp(unknown, info->env_name) != 0 && setenv(unknown, "1", 1) == 0;
    op_settings_reset();
    int invalid = op_settings_load();
    int valid = op_setting_validate(id, text, NULL, 0) == 0;
    FUZZ_CHECK(invalid >= (valid ? 0 : 1), "an invalid %s='%s' was not counted", info->env_name, text);
    FUZZ_CHECK(op_setting_is_set(id) == valid, "%s='%s' is_set %d, valid %d", info->env_name, text,
               op_setting_is_set(id), valid);
    FUZZ_CHECK(op_setting_str(id) != NULL, "a NULL string");
    (void)op_setting_bool(id), (void)op_setting_int(id), (void)op_setting_uint(id), (void)op_setting_double(id);
    (void)op_setting_list_has(id, "kernel");
    unsetenv(info->env_name);
    if (named) unsetenv(unknown);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4096) return 0;
    op_setting_id id = (op_setting_id)(data[0] % OP_SET__COUNT);
    char *text = fuzz_text(data + 1, size - 1);
    char err[1024] = "";
    const op_setting_info *info = op_setting_get_info(id);
    if (op_setting_validate(id, text, err, sizeof err) != 0)
        FUZZ_CHECK(strstr(err, info->env_name), "refusal of %s='%s' does not name it: %s", info->env_name, text, err);
    bool b;
    (void)op_parse_bool(text, &b);
    (void)op_setting_find(text);
    check_numbers(text);
    check_idlist(text);
    if ((data[0] & 0xe0) == 0xe0) check_environment(id, text);
    free(text);
    return 0;
}
