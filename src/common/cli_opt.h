/* cli_opt.h — the command-line options of every omniprof command, declared once, and the one
 * parser that reads them.
 *
 * Each command is an op_cli_command: its name, one-line summary, synopsis, description and
 * closing notes, and its option tables (arrays of op_cli_option, one row per option). The
 * tables are the single truth: the parser (op_cli_parse), `--help` (op_cli_print_help), the man
 * pages (op_cli_print_man), the bash and zsh completion scripts (op_cli_print_bash/zsh) and the
 * JSON listing the tests enumerate (op_cli_print_json) are all generated from them, so an
 * option added to a table is parsed, documented and completed everywhere at once.
 *
 * Syntax the parser accepts, the same for every command:
 *   --name, --name=V, --name V, -x V, -xV, -x=V; `--` ends the options;
 *   FLAG    no value (--help, --list);
 *   BOOL    `--name` is true; `--name BOOL` and `--name=BOOL` (true/false, 1/0, yes/no, on/off,
 *           any case) — rocprofv3's form; the next word is taken only when it is one of those;
 *   VALUE   one value (any text; the command checks it); `values` lists words the completion
 *           offers;
 *   ENUM    one value among `values` ('|'-separated), checked here ("did you mean");
 *   LIST    every following word up to the next option (a negative number such as -1:2:3 is a
 *           word); may repeat; at least one word;
 *   OPTVAL  an optional value, taken only when it is one of `values` ("#" = any number).
 * A word that is not an option ends the options of a command that runs a program
 * (OP_CLI_PROGRAM); for the others it is an error. A short name belongs to the first table of
 * the command that has it (instrument's -i is --include; run's --input is then long-only).
 *
 * Errors are one line naming the option and the valid values, with the closest option or value
 * ("did you mean --kernel-trace?"); the caller prints it with its "omniprof CMD: " prefix. */
#ifndef OMNIPROF_COMMON_CLI_OPT_H
#define OMNIPROF_COMMON_CLI_OPT_H

#include <stddef.h>
#include <stdio.h>

typedef enum op_cli_kind {
    OP_CLI_FLAG,
    OP_CLI_BOOL,
    OP_CLI_VALUE,
    OP_CLI_ENUM,
    OP_CLI_LIST,
    OP_CLI_OPTVAL,
} op_cli_kind;

/* One option. `id` is the command's own number for it (its enum); `setting`, `map` and
 * `implied_by` are for commands that turn options into OMNIPROF_* settings (run: the OP_SET_*
 * id or -1, how the value maps, which aggregate options imply it); 0/-1 elsewhere. */
typedef struct op_cli_option {
    int id;
    const char *long_name; /* without the dashes */
    char short_name;       /* 0: none */
    op_cli_kind kind;
    const char *metavar; /* what the value is called in help (NULL: the values, or VALUE) */
    const char *values;  /* ENUM/OPTVAL: the valid words; VALUE/LIST: words to complete */
    const char *group;   /* help section that starts at this row (NULL: the same as before) */
    const char *help;    /* one paragraph; wrapped by the printers */
    int setting;
    int map;
    int implied_by;
} op_cli_option;

typedef struct op_cli_table {
    const op_cli_option *rows;
    int n;
    const char *heading; /* a section over the whole table (e.g. "Options of omniprof run") */
    int hidden;          /* parsed, but left out of help, man pages, completion and the JSON */
} op_cli_table;

#define OP_CLI_PROGRAM 1u /* the first word that is not an option starts the program */
#define OP_CLI_HIDDEN 2u  /* not listed among the commands (aliases) */

typedef struct op_cli_command {
    const char *name;        /* "run"; "" for the omniprof binary itself */
    const char *summary;     /* one line, no final period */
    const char *synopsis;    /* lines after "usage: omniprof NAME " ('\n'-separated) */
    const char *description; /* paragraphs ('\n' ends a line; "\n\n" a paragraph) */
    const char *notes;       /* after the options: placeholders, files, exit status */
    const op_cli_table *tables;
    int n_tables;
    unsigned flags;               /* OP_CLI_* */
    void (*more_help)(FILE *out); /* text computed from other tables (attach's refused options) */
} op_cli_command;

/* Called once per value given: FLAG with value NULL; BOOL with "true"/"false"; VALUE/ENUM with
 * the text; LIST once per word, `nth` counting the words of this occurrence from 0; OPTVAL with
 * the word or "" when none was given. `spelled` is the option as written ("--kernel-trace",
 * "-d"). Return 0 to go on, anything else to stop the parse (the callback printed why). */
typedef int (*op_cli_cb)(void *ctx, const op_cli_option *o, const char *value, int nth,
                         const char *spelled);

/* Parse argv[1..argc) (argv[0] is the command's name) against `cmd`'s tables. Returns 0 with
 * *rest the index of the first word after the options (the program, or argc); -1 with a
 * one-line message in err (no prefix); or the callback's non-zero value. */
int op_cli_parse(const op_cli_command *cmd, int argc, char **argv, op_cli_cb cb, void *ctx,
                 int *rest, char *err, size_t errlen);

/* The row of `cmd` with this long name (n bytes), or NULL; the row with this short name (the
 * first table that has it). */
const op_cli_option *op_cli_find_long(const op_cli_command *cmd, const char *name, size_t n);
const op_cli_option *op_cli_find_short(const op_cli_command *cmd, char c);

/* The closest long option of `cmd` to `spelled` ("--kernel-tarce" → "--kernel-trace"), or NULL;
 * kept in a static buffer. */
const char *op_cli_suggest(const op_cli_command *cmd, const char *spelled);

/* "usage: ...", description, options by group, notes; every line at most 100 columns. */
void op_cli_print_help(FILE *out, const op_cli_command *cmd);

/* A man page in roff: omniprof(1) for the binary (cmd->name ""), with the command list of
 * `all`, or omniprof-NAME(1). `version` goes into the footer. */
void op_cli_print_man(FILE *out, const op_cli_command *cmd, const op_cli_command *const *all,
                      int n_all, const char *version);

/* Completion scripts for every command of `all` (the binary's own options in all[0]). */
void op_cli_print_bash(FILE *out, const op_cli_command *const *all, int n_all);
void op_cli_print_zsh(FILE *out, const op_cli_command *const *all, int n_all);

/* Every option of every command as JSON: [{"command", "long", "short", "kind", "metavar",
 * "values", "group", "help"}, ...] (what the tests enumerate). */
void op_cli_print_json(FILE *out, const op_cli_command *const *all, int n_all);

/* The text an option occurrence is given back as one word ("--name=V", "--name" for a FLAG),
 * for commands that hand options on to another command (instrument → run). */
void op_cli_respell(const op_cli_option *o, const char *value, int nth, char *out, size_t outlen);

#endif /* OMNIPROF_COMMON_CLI_OPT_H */
