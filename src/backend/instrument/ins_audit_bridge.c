/* ins_audit_bridge.c — the backend's side of the LD_AUDIT method (ins_audit_bridge.h).
 *
 * libomniprof-audit.so sees every call through the PLT of a selected caller into a selected
 * library (la_pltenter/la_pltexit, on the calling thread) and reports it here: the address is
 * decided once (ins_resolve.c, method AUDIT) and each entry/exit goes to the calling thread's
 * shadow stack. Nothing runs before op_ins_audit_start: until then `active` says no and the
 * audit library lets calls through untouched. */
#include "backend/instrument/ins_audit_bridge.h"

#include "backend/instrument/ins_internal.h"
#include "common/clock.h"
#include "common/log.h"

static _Atomic int g_audit_on;
/* Static TLS (initial-exec), as the thread stacks' (ins_calls.c): this library is dlopened,
 * and its dynamic TLS would be allocated by __tls_get_addr at a thread's first access, with
 * malloc — a call through the PLT that the auditor reports here again, and again, until the
 * stack overflows (python3 under --method audit crashed so at its first malloc). */
static __thread int t_in_audit __attribute__((tls_model("initial-exec")));

static int bridge_active(void)
{
    return atomic_load_explicit(&g_audit_on, memory_order_relaxed) &&
           atomic_load_explicit(&g_op_ins_active, memory_order_relaxed);
}

static uint32_t bridge_resolve(uint64_t address)
{
    if (t_in_audit) return OP_INS_AUDIT_NO_FUNC;
    t_in_audit = 1;
    uint32_t id = op_ins_resolve((uintptr_t)address, OMNIPROF_FUNCTION_CALL_AUDIT);
    t_in_audit = 0;
    return id == OP_INS_NO_FUNC ? OP_INS_AUDIT_NO_FUNC : id;
}

static int bridge_recorded(uint32_t func)
{
    op_ins_func *f = op_ins_func_get(func);
    return f && !atomic_load_explicit(&f->disabled, memory_order_relaxed);
}

static int bridge_direct(uint64_t address)
{
    if (t_in_audit) return 0;
    t_in_audit = 1;
    uint32_t id = op_ins_resolve((uintptr_t)address, OMNIPROF_FUNCTION_CALL_AUDIT);
    int direct = id == OP_INS_NO_FUNC || !bridge_recorded(id);
    t_in_audit = 0;
    return direct;
}

static void bridge_enter(uint32_t func)
{
    if (t_in_audit) return;
    t_in_audit = 1;
    uint64_t now = op_now_ns();
    op_ins_stack *s = bridge_recorded(func) ? op_ins_thread_stack() : NULL;
    if (s) op_ins_stack_enter(s, func, now);
    t_in_audit = 0;
}

static void bridge_exit(uint32_t func)
{
    if (t_in_audit) return;
    t_in_audit = 1;
    uint64_t now = op_now_ns();
    op_ins_stack *s = op_ins_thread_stack();
    if (s) op_ins_stack_exit(s, func, now);
    t_in_audit = 0;
}

__attribute__((visibility("default"))) op_ins_audit_bridge omniprof_instrument_audit_bridge = {
    .size = sizeof(op_ins_audit_bridge),
    .active = bridge_active,
    .resolve = bridge_resolve,
    .enter = bridge_enter,
    .exit = bridge_exit,
    .recorded = bridge_recorded,
    .direct = bridge_direct,
};

int op_ins_audit_start(void)
{
    if (op_ins_resolve_init() != 0) return -1;
    atomic_store(&g_audit_on, 1);
    __atomic_store_n(&omniprof_instrument_audit_bridge.ready, 1, __ATOMIC_RELEASE);
    op_info("instrument: serving the LD_AUDIT library (PLT calls into selected libraries)");
    return 0;
}

void op_ins_audit_stop(void) { atomic_store(&g_audit_on, 0); }
