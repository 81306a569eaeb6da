/* once.h — "say it once per process": a message that several parts of omniprof would print
 * (each shared object — the SDK, the tool, the CPU backend — has its own copy of src/common and
 * reads the same environment) is printed by the first one only.
 *
 * The record of what was said is one table per process, shared by every copy: the function
 * that claims an entry, op_common_once_claim, is exported with default visibility (and listed
 * in the SDK's version script), so every copy's call binds to the first definition loaded and
 * uses its table. Entries are 64-bit hashes of the message text, inserted with compare-and-
 * swap (lock-free, async-signal-safe). When the table is full, messages are printed again
 * rather than lost. */
#ifndef OMNIPROF_COMMON_ONCE_H
#define OMNIPROF_COMMON_ONCE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/log.h"

/* True the first time this process asks about `text` (any copy of src/common). */
bool op_once(const char *text);
/* The process-wide claim behind op_once (hash of the text); exported, see above. */
bool op_common_once_claim(uint64_t hash);

/* op_log, but a message already printed by this process is not printed again (one that could
 * not be written — no log fd yet — is not counted as said). */
void op_log_once(op_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* OMNIPROF_COMMON_ONCE_H */
