/* test_cli_opt.c — the one command-line parser (common/cli_opt.h) on a table of every kind:
 * the value forms of each kind, rocprofv3's `--opt BOOL`, lists that stop at the next option
 * but keep negative numbers, the short name of the first table, and the messages of bad input
 * (the option named, the valid values, the closest option or value). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/cli_opt.h"

enum { T_FLAG, T_BOOL, T_VALUE, T_ENUM, T_LIST, T_OPTVAL, T_SHADOWED, T_INCLUDE };

static const op_cli_option first[] = {
    {T_INCLUDE, "include", 'i', OP_CLI_VALUE, "REGEX", NULL, NULL, "first table's -i", -1, 0, 0},
};
static const op_cli_option rows[] = {
    {T_FLAG, "list", 'l', OP_CLI_FLAG, NULL, NULL, "Group", "a flag", -1, 0, 0},
    {T_BOOL, "kernel-trace", 'k', OP_CLI_BOOL, NULL, NULL, NULL, "a boolean", -1, 0, 0},
    {T_VALUE, "output", 'o', OP_CLI_VALUE, "FILE", NULL, NULL, "a value", -1, 0, 0},
    {T_ENUM, "format", 'f', OP_CLI_ENUM, NULL, "console|csv|json", NULL, "an enum", -1, 0, 0},
    {T_LIST, "pmc", 'P', OP_CLI_LIST, "COUNTER...", NULL, NULL, "a list", -1, 0, 0},
    {T_OPTVAL, "sample", 0, OP_CLI_OPTVAL, NULL, "cputime|realtime", NULL, "optional", -1, 0, 0},
    {T_SHADOWED, "input", 'i', OP_CLI_VALUE, "FILE", NULL, NULL, "-i of table 2", -1, 0, 0},
};
static const op_cli_table tables[] = {{first, 1, NULL, 0}, {rows, 7, NULL, 0}};
static const op_cli_command cmd = {"test", "a test", "omniprof test [options] -- program",
                                   "", "", tables, 2, OP_CLI_PROGRAM, NULL};

typedef struct seen {
    char text[1024]; /* "id=value(nth) ..." */
} seen;

static int record(void *ctx, const op_cli_option *o, const char *v, int nth, const char *spelled)
{
    seen *s = ctx;
    size_t n = strlen(s->text);
    (void)spelled;
    snprintf(s->text + n, sizeof s->text - n, "%s%d=%s(%d)", n ? " " : "", o->id, v ? v : "-", nth);
    return 0;
}

/* Parse the words of `line` (space-separated, "test" first). Returns the parser's status;
 * what was seen in out, the error in err, the index of the program in *rest. */
static int parse(const char *line, seen *out, char *err, size_t errlen, int *rest)
{
    static char buf[512];
    char *argv[64];
    int argc = 0;
    snprintf(buf, sizeof buf, "test %s", line);
    for (char *t = strtok(buf, " "); t && argc < 63; t = strtok(NULL, " ")) argv[argc++] = t;
    argv[argc] = NULL;
    memset(out, 0, sizeof *out);
    err[0] = '\0';
    *rest = -1;
    return op_cli_parse(&cmd, argc, argv, record, out, rest, err, errlen);
}

#define OK(line, want, want_rest)                                                                  \
    do {                                                                                           \
        seen s_;                                                                                   \
        char e_[512];                                                                              \
        int r_;                                                                                    \
        CHECK(parse(line, &s_, e_, sizeof e_, &r_) == 0);                                          \
        if (strcmp(s_.text, want) != 0)                                                            \
            fprintf(stderr, "'%s': saw '%s' want '%s' (%s)\n", line, s_.text, want, e_);          \
        CHECK(strcmp(s_.text, want) == 0);                                                         \
        CHECK(r_ == (want_rest));                                                                  \
    } while (0)

#define BAD(line, msg)                                                                             \
    do {                                                                                           \
        seen s_;                                                                                   \
        char e_[512];                                                                              \
        int r_;                                                                                    \
        CHECK(parse(line, &s_, e_, sizeof e_, &r_) == -1);                                         \
        if (!strstr(e_, msg)) fprintf(stderr, "'%s': error '%s' lacks '%s'\n", line, e_, msg);     \
        CHECK(strstr(e_, msg) != NULL);                                                            \
    } while (0)

int main(void)
{
    /* booleans: bare, --opt BOOL, --opt=BOOL; the next word only when it is a boolean */
    OK("--kernel-trace", "1=true(0)", 2);
    OK("--kernel-trace yes prog", "1=true(0)", 3);
    OK("--kernel-trace OFF prog", "1=false(0)", 3);
    OK("--kernel-trace 0 --kernel-trace=on", "1=false(0) 1=true(0)", 4);
    OK("--kernel-trace prog yes", "1=true(0)", 2);
    OK("-k -- -k", "1=true(0)", 3);
    BAD("--kernel-trace=maybe", "--kernel-trace='maybe' is not valid; expected true or false");
    BAD("-kfoo", "option '-k' takes no value");
    /* values */
    OK("-o a --output=b -oc --output d", "2=a(0) 2=b(0) 2=c(0) 2=d(0)", 7);
    OK("--output -5 prog", "2=-5(0)", 3);
    BAD("--output", "option '--output' needs a value: FILE");
    BAD("--output --", "option '--output' needs a value: FILE");
    /* enums: checked, the valid values and the closest one */
    OK("--format csv", "3=csv(0)", 3);
    BAD("--format cvs",
        "--format 'cvs' is not valid; expected console, csv or json (did you mean csv?)");
    BAD("--format", "option '--format' needs a value: console, csv or json");
    /* lists: up to the next option; negative numbers are words; each occurrence counts from 0 */
    OK("--pmc a b -1:2 --list --pmc=c d", "4=a(0) 4=b(1) 4=-1:2(2) 0=-(0) 4=c(0) 4=d(1)", 8);
    BAD("--pmc --list", "option '--pmc' needs at least one value: COUNTER...");
    /* optional values: taken only when valid */
    OK("--sample prog", "5=(0)", 2);
    OK("--sample realtime prog", "5=realtime(0)", 3);
    BAD("--sample=often", "--sample 'often' is not valid; expected cputime or realtime");
    /* flags take no value */
    BAD("--list=yes", "option '--list' takes no value");
    /* the short name belongs to the first table that has it; the long name still works */
    OK("-i re --input f", "7=re(0) 6=f(0)", 5);
    /* unknown options: the closest one */
    BAD("--kernel-tarce", "unknown option '--kernel-tarce' (did you mean --kernel-trace?)");
    BAD("--zzzzzzzz", "unknown option '--zzzzzzzz'; see `omniprof test --help`");
    BAD("-z", "unknown option '-z'");
    /* help: lines within 100 columns, the shadowed short name left out of --input */
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    op_cli_print_help(m, &cmd);
    fclose(m);
    CHECK(strstr(text, "  -i, --include REGEX") != NULL);
    CHECK(strstr(text, "      --input FILE") != NULL);
    CHECK(strstr(text, "--format console|csv|json") != NULL);
    for (char *p = text, *nl; (nl = strchr(p, '\n')); p = nl + 1) CHECK(nl - p <= 100);
    free(text);
    /* the JSON listing and the respelling for another command */
    char w[64];
    op_cli_respell(&rows[4], "b", 1, w, sizeof w);
    CHECK(strcmp(w, "b") == 0);
    op_cli_respell(&rows[4], "a", 0, w, sizeof w);
    CHECK(strcmp(w, "--pmc=a") == 0);
    op_cli_respell(&rows[5], "", 0, w, sizeof w);
    CHECK(strcmp(w, "--sample") == 0);
    return CHECK_DONE();
}
