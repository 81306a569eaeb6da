/* term.h — colours on a terminal, the one rule for every omniprof message, progress line and
 * table: colour only when the stream is a terminal, NO_COLOR is unset or empty
 * (https://no-color.org) and TERM is not "dumb"; otherwise every escape below is "". */
#ifndef OMNIPROF_COMMON_TERM_H
#define OMNIPROF_COMMON_TERM_H

#include <stdio.h>

enum op_term_style {
    OP_TERM_RESET,
    OP_TERM_BOLD,
    OP_TERM_DIM,
    OP_TERM_RED,
    OP_TERM_GREEN,
    OP_TERM_YELLOW,
    OP_TERM_CYAN,
    OP_TERM_STYLES
};

/* 1 when colours go to stream f (decided per call: cheap, follows redirections). */
int op_term_colors(FILE *f);
/* The escape sequence of `style` for stream f, "" when f gets no colours. */
const char *op_term_sgr(FILE *f, enum op_term_style style);

#endif /* OMNIPROF_COMMON_TERM_H */
