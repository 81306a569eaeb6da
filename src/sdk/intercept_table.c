/* intercept_table.c — dispatch-table chaining (seed 004).
 *
 * A runtime hands its table to the SDK with omniprof_set_api_table(name, ...). For the user
 * API ("user") the SDK first fills the entries with its own implementations (marker.c), then
 * every tool that registered for the table's type receives it, in registration order, and may
 * replace entries with wrappers that call the previous value. A tool that registers after the
 * table arrived receives it at once, on the registering thread. Tables are kept (pointers
 * into the runtime, which stays loaded) so later registrations can be served. */
#include "sdk/sdk_internal.h"

#include <stdio.h>
#include <string.h>

#include "common/kinds.h"
#include "common/log.h"

#define MAX_REGS 32
#define MAX_TABLES 16

typedef struct table_reg {
    omniprof_intercept_library_cb_t cb;
    int types;
    void *data;
} table_reg;

typedef struct table_entry {
    omniprof_intercept_table_t type;
    uint64_t version, instance;
    void **tables;
    uint64_t n;
} table_entry;

static table_reg g_regs[MAX_REGS];
static _Atomic int g_nregs;
static _Atomic int g_requested;
static table_entry g_tables[MAX_TABLES];
static _Atomic int g_ntables;

int op_sdk_intercept_requested(omniprof_intercept_table_t type)
{
    return (atomic_load_explicit(&g_requested, memory_order_acquire) & (int)type) != 0;
}
bool op_intercept_any_requested(void) { return atomic_load(&g_requested) != 0; }

OMNIPROF_API omniprof_status_t omniprof_query_intercept_table_name(omniprof_intercept_table_t type,
                                                                   const char **name, uint64_t *name_len)
{
    const char *s = op_intercept_table_name((uint32_t)type); /* kinds.def */
    if (!s) return OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND;
    if (!name) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    *name = s;
    if (name_len) *name_len = strlen(s);
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_at_intercept_table_registration(omniprof_intercept_library_cb_t callback,
                                                                        int types, void *data)
{
    if (!callback || types <= 0 || (types & ~(OMNIPROF_INTERCEPT_TABLE_LAST - 1)))
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    op_sdk_ensure_init();
    omniprof_status_t st = op_sdk_config_open();
    if (st != OMNIPROF_STATUS_SUCCESS) return st;
    /* Tables a backend provides: load it (its manifest says which) before registering. */
    for (uint32_t bit = 1; bit < OMNIPROF_INTERCEPT_TABLE_LAST; bit <<= 1) {
        if (!(types & (int)bit) || (op_core_manifest()->intercept_tables & bit)) continue;
        op_backend_load_for_table(bit);
        if (!op_backend_for_table(bit)) return OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
    }
    op_sdk_lock();
    int n = atomic_load(&g_nregs);
    if (n >= MAX_REGS) {
        op_sdk_unlock();
        return OMNIPROF_STATUS_ERROR_OUT_OF_RESOURCES;
    }
    g_regs[n] = (table_reg){callback, types, data};
    atomic_store_explicit(&g_nregs, n + 1, memory_order_release);
    atomic_fetch_or(&g_requested, types);
    int nt = atomic_load(&g_ntables);
    table_entry tabs[MAX_TABLES];
    memcpy(tabs, g_tables, sizeof(table_entry) * (size_t)nt);
    op_sdk_unlock();
    for (int i = 0; i < nt; i++)
        if (tabs[i].type & types) callback(tabs[i].type, tabs[i].version, tabs[i].instance, tabs[i].tables, tabs[i].n, data);
    return OMNIPROF_STATUS_SUCCESS;
}

OMNIPROF_API omniprof_status_t omniprof_set_api_table(const char *name, uint64_t lib_version, uint64_t lib_instance,
                                                      void **tables, uint64_t num_tables)
{
    if (!name || !tables || num_tables == 0 || !tables[0]) return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    omniprof_intercept_table_t type = (omniprof_intercept_table_t)op_intercept_table_from_registration_name(name);
    if (type == OMNIPROF_INTERCEPT_TABLE_NONE) {
        char valid[128] = "";
        for (uint32_t bit = 1; bit < OMNIPROF_INTERCEPT_TABLE_LAST; bit <<= 1) {
            size_t at = strlen(valid);
            snprintf(valid + at, sizeof valid - at, "%s%s", at ? ", " : "", op_intercept_table_registration_name(bit));
        }
        op_warn("omniprof_set_api_table: unknown table name '%s' (valid: %s)", name, valid);
        return OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT;
    }
    op_sdk_ensure_init();
    if (op_sdk_state() >= OP_STATE_FINALIZING) return OMNIPROF_STATUS_ERROR_FINALIZED;
    if (type == OMNIPROF_INTERCEPT_TABLE_USER_API) op_marker_fill_table((omniprof_user_api_table_t *)tables[0]);
    op_sdk_lock();
    int nt = atomic_load(&g_ntables);
    if (nt < MAX_TABLES) {
        g_tables[nt] = (table_entry){type, lib_version, lib_instance, tables, num_tables};
        atomic_store_explicit(&g_ntables, nt + 1, memory_order_release);
    }
    int n = atomic_load(&g_nregs);
    table_reg regs[MAX_REGS];
    memcpy(regs, g_regs, sizeof(table_reg) * (size_t)n);
    op_sdk_unlock();
    for (int i = 0; i < n; i++)
        if (regs[i].types & (int)type) regs[i].cb(type, lib_version, lib_instance, tables, num_tables, regs[i].data);
    return OMNIPROF_STATUS_SUCCESS;
}
