/* term.c — colours on a terminal (term.h): isatty on the stream, NO_COLOR, TERM=dumb. */
#include "common/term.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int op_term_colors(FILE *f)
{
    if (!f) return 0;
    const char *no = getenv("NO_COLOR");
    if (no && no[0]) return 0;
    const char *term = getenv("TERM");
    if (term && !strcmp(term, "dumb")) return 0;
    int fd = fileno(f);
    return fd >= 0 && isatty(fd);
}

const char *op_term_sgr(FILE *f, enum op_term_style style)
{
    static const char *const sgr[OP_TERM_STYLES] = {"\033[0m",  "\033[1m",  "\033[2m", "\033[31m",
                                                    "\033[32m", "\033[33m", "\033[36m"};
    if ((unsigned)style >= OP_TERM_STYLES || !op_term_colors(f)) return "";
    return sgr[style];
}
