/* stacks.c — CPU call stacks of a table set as text, for the trace sinks (pftrace.c, json.c):
 * op_stack_describe (reader.h) walks omniprof_stack from a sample's innermost node outwards
 * and names each address from omniprof_symbol (inlined callees first, then the physical
 * frame), giving the innermost function and the frames innermost first, one per line.
 *
 * Invariants:
 *  (1) Lookups go by primary key / UNIQUE index (stack id; symbol address), one row at a time,
 *      with two statements prepared once per set (the caller keeps them): no scan per sample.
 *  (2) Bounded: at most 512 stack nodes are walked and the text stops growing past 64 KiB, so a
 *      corrupt (cyclic) parent chain cannot loop or grow without end.
 *  (3) Addresses without a symbol row show as 0xADDR; a symbol row without a function name as
 *      module+0xOFF; an empty stack (id 0) as "[no stack]" with empty text. */
#include <stdio.h>
#include <string.h>

#include "output/reader.h"

static void add_frame(op_buf *text, char *leaf, size_t leaflen, const char *frame) {
    if (!leaf[0]) snprintf(leaf, leaflen, "%s", frame);
    if (text->len) op_buf_putc(text, '\n');
    op_buf_puts(text, frame);
}

void op_stack_describe(op_src *src, op_src_set *set, sqlite3_stmt **stk_st, sqlite3_stmt **sym_st, int64_t stack,
                       op_buf *text, char *leaf, size_t leaflen) {
    char e[8], sql[400];
    if (!*stk_st && SRC_HAS(set, T_OP_STACK)) {
        snprintf(sql, sizeof sql, "SELECT parent_id, address FROM %s WHERE id = ?1", set->name[T_OP_STACK]);
        *stk_st = op_src_prepare(src, sql, e, sizeof e);
    }
    if (!*sym_st && SRC_HAS(set, T_OP_SYMBOL)) {
        snprintf(sql, sizeof sql,
                 "SELECT function, inline_depth, module, module_offset FROM %s WHERE address = ?1 "
                 "ORDER BY inline_depth DESC",
                 set->name[T_OP_SYMBOL]);
        *sym_st = op_src_prepare(src, sql, e, sizeof e);
    }
    text->len = 0;
    leaf[0] = 0;
    int64_t node = stack;
    for (int depth = 0; node > 0 && depth < 512 && *stk_st && text->len < 65536; depth++) {
        sqlite3_stmt *st = *stk_st;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, node);
        if (sqlite3_step(st) != SQLITE_ROW) break;
        int64_t parent = sqlite3_column_int64(st, 0), addr = sqlite3_column_int64(st, 1);
        int named = 0;
        if (*sym_st) {
            sqlite3_stmt *sy = *sym_st;
            sqlite3_reset(sy);
            sqlite3_bind_int64(sy, 1, addr);
            while (sqlite3_step(sy) == SQLITE_ROW) {
                const char *fn = (const char *)sqlite3_column_text(sy, 0);
                const char *mod = (const char *)sqlite3_column_text(sy, 2);
                char frame[4200];
                if (fn && *fn) {
                    snprintf(frame, sizeof frame, "%s%s", fn, sqlite3_column_int(sy, 1) > 0 ? " [inlined]" : "");
                } else if (mod && *mod) {
                    const char *b = strrchr(mod, '/');
                    snprintf(frame, sizeof frame, "%s+0x%llx", b ? b + 1 : mod,
                             (unsigned long long)sqlite3_column_int64(sy, 3));
                } else {
                    snprintf(frame, sizeof frame, "0x%llx", (unsigned long long)addr);
                }
                add_frame(text, leaf, leaflen, frame);
                named = 1;
            }
        }
        if (!named) {
            char frame[32];
            snprintf(frame, sizeof frame, "0x%llx", (unsigned long long)addr);
            add_frame(text, leaf, leaflen, frame);
        }
        node = parent;
    }
    if (!leaf[0]) snprintf(leaf, leaflen, "[no stack]");
}
