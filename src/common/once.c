/* once.c — the process-wide table of messages already printed (once.h). */
#include "common/once.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#define OP_ONCE_SLOTS 1024 /* a power of two */

static _Atomic uint64_t g_table[OP_ONCE_SLOTS];

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ? h : 1; /* 0 marks a free slot */
}

/* Default visibility on purpose: every shared object's copy of this module calls the first
 * definition the dynamic linker finds (calls to it go through the PLT), so one table serves
 * the process (once.h). A function, not a shared variable: a variable defined in several
 * objects is an ODR violation to AddressSanitizer. Returns true when `h` was not there yet. */
__attribute__((visibility("default"))) bool op_common_once_claim(uint64_t h)
{
    for (unsigned k = 0; k < OP_ONCE_SLOTS; k++) {
        _Atomic uint64_t *slot = &g_table[(h + k) & (OP_ONCE_SLOTS - 1)];
        uint64_t cur = atomic_load_explicit(slot, memory_order_acquire);
        if (cur == h) return false;
        if (cur == 0) {
            uint64_t expected = 0;
            if (atomic_compare_exchange_strong(slot, &expected, h)) return true;
            if (expected == h) return false;
        }
    }
    return true; /* full: say it again rather than never */
}

bool op_once(const char *text) { return op_common_once_claim(fnv1a(text ? text : "")); }

void op_log_once(op_log_level level, const char *fmt, ...)
{
    if (!op_log_would_write(level)) return; /* not said: a later copy may say it */
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (op_once(line)) op_log(level, "%s", line);
}
