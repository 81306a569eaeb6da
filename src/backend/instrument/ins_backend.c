/* ins_backend.c — libomniprof-backend-instrument.so: registration with the SDK, settings and
 * life cycle of function instrumentation (docs/instrument.md).
 *
 * The backend serves one buffer kind, FUNCTION_CALL. The SDK loads it when a context
 * configures that kind (the tool does when OMNIPROF_INSTRUMENT is set) and calls start() once
 * configuration is locked:
 *
 *   loaded ──start()──▶ running ──finalize() / omniprof_instrument_stop()──▶ stopped
 *                        │ uprobe: probes placed, reader thread
 *                        │ compiler: hooks handed to libomniprof-user.so
 *                        │ audit: bridge open for libomniprof-audit.so (LD_AUDIT)
 *                        └ on_context_change: records flow only while a context is active
 *
 * Settings (settings.def, block "instrument"): INSTRUMENT (the methods), INSTRUMENT_INCLUDE,
 * _EXCLUDE, _MODULES (regexes), _MIN_INSTRUCTIONS, _MAX_FUNCTIONS, _THROTTLE, and ATTACH (set by
 * `omniprof attach`: follow every thread that exists). A method that cannot start logs one
 * line and the others go on. */
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backend/instrument/ins_internal.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/once.h"
#include "common/settings.h"
#include "sdk/backend.h"

op_ins_config g_op_ins_cfg;
_Atomic int g_op_ins_active;
op_ins_filter g_op_ins_filter;

static bool g_started, g_stopped, g_methods[OMNIPROF_FUNCTION_CALL_LAST];

static const char *const g_op_names[OMNIPROF_FUNCTION_CALL_LAST] = {
    [OMNIPROF_FUNCTION_CALL_UPROBE] = "UPROBE",
    [OMNIPROF_FUNCTION_CALL_AUDIT] = "AUDIT",
    [OMNIPROF_FUNCTION_CALL_COMPILER] = "COMPILER",
};

/* Per-call cost of each method on the machine of docs/PERFORMANCE.md (entry + return, ns):
 * the automatic throttle disables a function whose calls are shorter than 20x this (the
 * method would then add more than 5 %). */
static const uint64_t g_cost_ns[OMNIPROF_FUNCTION_CALL_LAST] = {
    [OMNIPROF_FUNCTION_CALL_UPROBE] = 20000,
    [OMNIPROF_FUNCTION_CALL_AUDIT] = 1500,
    [OMNIPROF_FUNCTION_CALL_COMPILER] = 150,
};

/* ---------------------------------------------------------------------------------------- */

typedef struct iter_ctx {
    op_ins_module_cb cb;
    void *data;
    int index;
} iter_ctx;

static int iter_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    iter_ctx *ic = data;
    bool is_main = ic->index++ == 0;
    char path[4096];
    if (is_main || !info->dlpi_name || !*info->dlpi_name) {
        if (!is_main) return 0;
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        path[n > 0 ? n : 0] = '\0';
    } else {
        snprintf(path, sizeof path, "%s", info->dlpi_name);
    }
    ic->cb(path, info->dlpi_addr, is_main, ic->data);
    return 0;
}

void op_ins_foreach_module(op_ins_module_cb cb, void *data)
{
    iter_ctx ic = {cb, data, 0};
    dl_iterate_phdr(iter_cb, &ic);
}

/* ---------------------------------------------------------------------------------------- */

static void copy_setting(char *dst, size_t n, op_setting_id id) { snprintf(dst, n, "%s", op_setting_str(id)); }

static void read_config(void)
{
    op_ins_config *c = &g_op_ins_cfg;
    memset(c, 0, sizeof *c);
    copy_setting(c->include, sizeof c->include, OP_SET_INSTRUMENT_INCLUDE);
    copy_setting(c->exclude, sizeof c->exclude, OP_SET_INSTRUMENT_EXCLUDE);
    copy_setting(c->modules, sizeof c->modules, OP_SET_INSTRUMENT_MODULES);
    c->min_insns = op_setting_uint(OP_SET_INSTRUMENT_MIN_INSTRUCTIONS);
    c->max_functions = op_setting_uint(OP_SET_INSTRUMENT_MAX_FUNCTIONS);
    c->attach = op_setting_bool(OP_SET_ATTACH_MODE);
    g_methods[OMNIPROF_FUNCTION_CALL_UPROBE] = op_setting_list_has(OP_SET_INSTRUMENT, "uprobe");
    g_methods[OMNIPROF_FUNCTION_CALL_AUDIT] = op_setting_list_has(OP_SET_INSTRUMENT, "audit");
    g_methods[OMNIPROF_FUNCTION_CALL_COMPILER] = op_setting_list_has(OP_SET_INSTRUMENT, "compiler");
    /* throttle: "auto" (20x the costliest method in use, after 100 calls), "off", "CALLS:NS" */
    const char *t = op_setting_str(OP_SET_INSTRUMENT_THROTTLE);
    uint64_t calls = 0, ns = 0;
    char why[160];
    int rc = op_ins_throttle_parse(strcasecmp(t, "off") ? t : "off", &calls, &ns, why, sizeof why);
    if (rc < 0) op_log_once(OP_LOG_WARNING, "OMNIPROF_INSTRUMENT_THROTTLE='%s' is not valid (%s); using auto", t, why);
    if (rc == 0) {
        c->throttle_calls = calls;
        c->throttle_ns = ns;
    } else {
        c->throttle_calls = 100;
        for (int m = 1; m < OMNIPROF_FUNCTION_CALL_LAST; m++)
            if (g_methods[m] && 20 * g_cost_ns[m] > c->throttle_ns) c->throttle_ns = 20 * g_cost_ns[m];
    }
}

static bool g_configured;

static int start_methods(void)
{
    int ok = 0;
    g_stopped = false;
    atomic_store(&g_op_ins_active, 1);
    if (g_methods[OMNIPROF_FUNCTION_CALL_COMPILER] && op_ins_compiler_start() == 0) ok++;
    if (g_methods[OMNIPROF_FUNCTION_CALL_AUDIT] && op_ins_audit_start() == 0) ok++;
    if (g_methods[OMNIPROF_FUNCTION_CALL_UPROBE] && op_ins_uprobe_start() == 0) ok++;
    if (!ok) atomic_store(&g_op_ins_active, 0);
    return ok;
}

static omniprof_status_t ins_start(void)
{
    read_config();
    char err[512];
    op_ins_method fm = g_methods[OMNIPROF_FUNCTION_CALL_AUDIT] && !g_methods[OMNIPROF_FUNCTION_CALL_UPROBE]
                           ? OP_INS_METHOD_AUDIT
                           : OP_INS_METHOD_UPROBE;
    if (op_ins_filter_init(&g_op_ins_filter, g_op_ins_cfg.include, g_op_ins_cfg.exclude, g_op_ins_cfg.modules,
                           g_op_ins_cfg.min_insns, fm, err, sizeof err) != 0) {
        op_warn("instrument: %s", err);
        return OMNIPROF_STATUS_ERROR_PARSE;
    }
    g_started = g_configured = true;
    return start_methods() ? OMNIPROF_STATUS_SUCCESS : OMNIPROF_STATUS_ERROR_NOT_AVAILABLE;
}

static void ins_stop(void);

/* The SDK's last flush comes before it closes the buffers (and long before finalize()): the
 * methods stop there, so that the calls still open reach the buffers as UNFINISHED. */
static void ins_flush(void)
{
    if (op_sdk_is_finalizing()) ins_stop();
    else op_ins_uprobe_flush();
}

/* Stop every method and emit the calls still open (UNFINISHED). Idempotent. */
static void ins_stop(void)
{
    if (!g_started || g_stopped) return;
    g_stopped = true;
    if (g_methods[OMNIPROF_FUNCTION_CALL_COMPILER]) op_ins_compiler_stop();
    if (g_methods[OMNIPROF_FUNCTION_CALL_AUDIT]) op_ins_audit_stop();
    if (g_methods[OMNIPROF_FUNCTION_CALL_UPROBE]) op_ins_uprobe_stop();
    op_ins_stacks_close_all(op_now_ns());
    atomic_store(&g_op_ins_active, 0);
    if (op_ins_dropped_depth())
        op_warn("instrument: %llu calls nested deeper than %d instrumented frames were not recorded",
                (unsigned long long)op_ins_dropped_depth(), OP_INS_MAX_DEPTH);
}

/* omniprof attach: a detach stops the context — the probes and hooks go (the process is left
 * as it was); a re-attach starts the context again — they come back. A pause leaves them in
 * place (removing uprobes waits for the kernel, milliseconds to seconds; the SDK drops the
 * records while paused). */
static void ins_on_context_change(void)
{
    if (!g_configured || op_sdk_is_finalizing()) return;
    bool on = false;
    if (op_sdk_is_paused()) on = op_sdk_kind_active(OMNIPROF_BUFFER_TRACING_FUNCTION_CALL);
    for (int m = 1; m < OMNIPROF_FUNCTION_CALL_LAST && !on; m++)
        on = g_methods[m] && op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_FUNCTION_CALL, m);
    if (!on && !g_stopped) ins_stop();
    else if (on && g_stopped) start_methods();
}

static void ins_at_fork_child(void)
{
    op_ins_uprobe_at_fork_child();
    /* the child follows its own threads: its probes are placed anew */
    if (g_started && !g_stopped && g_methods[OMNIPROF_FUNCTION_CALL_UPROBE]) op_ins_uprobe_start();
}

static const char *ins_operation_name(uint32_t kind, int32_t op)
{
    if (kind != OMNIPROF_BUFFER_TRACING_FUNCTION_CALL) return NULL;
    return op > 0 && op < OMNIPROF_FUNCTION_CALL_LAST ? g_op_names[op] : NULL;
}

static int ins_iterate_operations(uint32_t kind, int (*cb)(int32_t, void *), void *data)
{
    if (kind != OMNIPROF_BUFFER_TRACING_FUNCTION_CALL) return -1;
    for (int32_t op = 1; op < OMNIPROF_FUNCTION_CALL_LAST; op++)
        if (cb(op, data)) break;
    return 0;
}

/* What this backend serves (backend.h); the SDK reads it from the library file. */
OP_BACKEND_MANIFEST(g_ins_manifest) = {
    .magic = OP_BACKEND_MANIFEST_MAGIC,
    .size = sizeof(op_backend_manifest),
    .name = "instrument",
    .buffer_kinds = {OMNIPROF_BUFFER_TRACING_FUNCTION_CALL},
};

static const op_backend g_backend = {
    .size = sizeof(op_backend),
    .name = "instrument",
    .manifest = &g_ins_manifest,
    .start = ins_start,
    .on_context_change = ins_on_context_change,
    .flush = ins_flush,
    .finalize = ins_stop,
    .at_fork_child = ins_at_fork_child,
    .operation_name = ins_operation_name,
    .iterate_operations = ins_iterate_operations,
};

/* For omniprof attach: stop instrumenting before the tool detaches (the probes and hooks go,
 * the process keeps running). Exported for the tool (dlsym). */
__attribute__((visibility("default"))) void omniprof_instrument_stop(void) { ins_stop(); }

__attribute__((constructor)) static void ins_register(void) { op_sdk_register_backend(&g_backend); }
