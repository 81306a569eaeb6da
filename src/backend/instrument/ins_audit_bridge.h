/* ins_audit_bridge.h — what libomniprof-audit.so (the LD_AUDIT library, its own link-map
 * namespace) calls in the instrumentation backend (the program's namespace).
 *
 * The audit library finds the bridge with dlsym on the backend's link_map (a dlopen handle is
 * a link_map in glibc, whatever its namespace), and once `ready` is set calls these functions
 * from la_pltenter/la_pltexit on the calling thread. Plain C types only:
 * the two sides share no library. */
#ifndef OMNIPROF_INS_AUDIT_BRIDGE_H
#define OMNIPROF_INS_AUDIT_BRIDGE_H

#include <stdint.h>

#define OP_INS_AUDIT_BRIDGE_SYMBOL "omniprof_instrument_audit_bridge"
#define OP_INS_AUDIT_NO_FUNC 0xffffffffu

typedef struct op_ins_audit_bridge {
    uint64_t size;
    /* 0 until the backend is relocated and started: the loader may report calls while it is
     * still relocating the backend (its function pointers are not usable then). Read with
     * an acquire load. */
    int ready;
    /* Is collection on? (relaxed load of the backend's flag) */
    int (*active)(void);
    /* The function id of the code at `address` (a library function reached through the PLT),
     * or OP_INS_AUDIT_NO_FUNC when it is not instrumented; decided once per address. */
    uint32_t (*resolve)(uint64_t address);
    void (*enter)(uint32_t func);
    void (*exit)(uint32_t func);
    /* Is this function recorded now (not throttled)? */
    int (*recorded)(uint32_t func);
    /* 1 when the function at `address` is decided and not recorded (not instrumented, or
     * throttled): the audit library may bind its callers directly; 0 when it is recorded or
     * cannot be decided now (a call made by the backend itself). */
    int (*direct)(uint64_t address);
} op_ins_audit_bridge;

#endif /* OMNIPROF_INS_AUDIT_BRIDGE_H */
