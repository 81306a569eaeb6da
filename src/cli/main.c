/* main.c — the `omniprof` binary: dispatches `omniprof <command> ...` to the command's entry
 * point (commands.h). A command whose module is not built has a NULL (weak) entry and is
 * reported as such.
 *
 * The binary's own options (--help, --version) and every command's are rows of option tables
 * (common/cli_opt.h) read by one parser. `omniprof help CMD` prints what `omniprof CMD --help`
 * prints. Hidden options print what is generated from the tables: --print-man [CMD],
 * --print-completion bash|zsh, --list-options (JSON, what the tests enumerate) and
 * --generate-docs DIR, which the build runs after linking to write DIR/man/man1/omniprof*.1,
 * DIR/bash-completion/completions/omniprof and DIR/zsh/site-functions/_omniprof.
 *
 * Exit codes (every command): 0 success; 1 omniprof itself failed (I/O, a missing library);
 * 2 bad usage or input (unknown option, bad value: nothing was run); `run` and `sample` return
 * the program's own status (128+N when signal N ended it). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "common/path_template.h"
#include "common/suggest.h"
#include "omniprof/defines.h"
#ifdef OMNIPROF_HAVE_OUTPUT
#include "output/output.h"
#endif

typedef struct command {
    const char *name;
    int (*fn)(int, char **);
    const op_cli_command *cli; /* NULL: not built */
} command;

#define MAX_COMMANDS 16
static command g_cmds[MAX_COMMANDS];
static int g_n;

static void add(const char *name, int (*fn)(int, char **), const op_cli_command *cli)
{
    if (g_n < MAX_COMMANDS) g_cmds[g_n++] = (command){name, fn, fn ? cli : NULL};
}

/* The commands, in the order `omniprof --help` lists them. */
static void register_commands(void)
{
    const op_cli_command *out[4] = {NULL, NULL, NULL, NULL};
#ifdef OMNIPROF_HAVE_OUTPUT
    out[0] = op_output_cli_command("convert");
    out[1] = op_output_cli_command("merge");
    out[2] = op_output_cli_command("summary");
    out[3] = op_output_cli_command("query");
#endif
    add("run", op_cmd_run, &run_command);
    add("sample", op_cmd_sample, &sample_command);
    add("avail", op_cmd_avail, &avail_command);
    add("convert", op_cmd_convert, out[0]);
    add("merge", op_cmd_merge, out[1]);
    add("summary", op_cmd_summary, out[2]);
    add("query", op_cmd_query, out[3]);
    add("report", op_cmd_report, &report_command);
    add("causal", op_cmd_causal, &causal_command);
    add("attach", op_cmd_attach, &attach_command);
    add("instrument", op_cmd_instrument, &instrument_command);
    add("analyze", op_cmd_analyze, &analyze_command);
    add("diff", op_cmd_diff, &diff_command);
}

static void list_commands(FILE *out)
{
    fputs("Commands:\n", out);
    for (int i = 0; i < g_n; i++) {
        char left[40];
        snprintf(left, sizeof left, "  %s", g_cmds[i].name);
        fprintf(out, "%-14s%s%s\n", left, g_cmds[i].cli ? g_cmds[i].cli->summary : "",
                g_cmds[i].cli ? "" : "(not built)");
    }
    fputs("\n`omniprof <command> --help` or `omniprof help <command>` describes a command.\n", out);
}

enum { M_HELP, M_VERSION, M_PRINT_MAN, M_PRINT_COMPLETION, M_LIST_OPTIONS, M_GENERATE_DOCS };

static const op_cli_option main_options[] = {
    {M_HELP, "help", 'h', OP_CLI_FLAG, NULL, NULL, NULL, "show this help", -1, 0, 0},
    {M_VERSION, "version", 'v', OP_CLI_FLAG, NULL, NULL, NULL, "print omniprof's version and exit",
     -1, 0, 0},
};

/* What the build and the tests read; generated, so they are not documented as user options. */
static const op_cli_option generator_options[] = {
    {M_PRINT_MAN, "print-man", 0, OP_CLI_VALUE, "CMD", NULL, NULL,
     "the man page of CMD (omniprof: omniprof(1))", -1, 0, 0},
    {M_PRINT_COMPLETION, "print-completion", 0, OP_CLI_ENUM, NULL, "bash|zsh", NULL,
     "a completion script", -1, 0, 0},
    {M_LIST_OPTIONS, "list-options", 0, OP_CLI_FLAG, NULL, NULL, NULL,
     "every option of every command, as JSON", -1, 0, 0},
    {M_GENERATE_DOCS, "generate-docs", 0, OP_CLI_VALUE, "DIR", NULL, NULL,
     "write the man pages and the completion scripts under DIR", -1, 0, 0},
};

static const op_cli_table main_tables[] = {
    {main_options, (int)(sizeof main_options / sizeof main_options[0]), NULL, 0},
    {generator_options, (int)(sizeof generator_options / sizeof generator_options[0]), NULL, 1},
};

static const op_cli_command main_command = {
    "",
    "profile GPU and CPU programs (rocprofv3 options, rocpd databases)",
    "omniprof <command> [options]\nomniprof help <command>\nomniprof --help | --version",
    "omniprof traces, counts and samples GPU and CPU programs and writes one rocpd database per "
    "process; its commands convert, merge, summarize, query and report over those databases.",
    "Exit status: 0 ok; 1 omniprof failed; 2 bad usage or input (nothing was run); run, sample, "
    "causal, instrument: the program's status (128+N if signal N ended it).",
    main_tables,
    2,
    OP_CLI_PROGRAM,
    list_commands,
};

typedef struct main_args {
    bool help, version, list;
    const char *man, *completion, *docs;
} main_args;

static int on_option(void *ctx, const op_cli_option *o, const char *value, int nth,
                     const char *spelled)
{
    main_args *a = ctx;
    (void)nth, (void)spelled;
    switch (o->id) {
    case M_HELP: a->help = true; break;
    case M_VERSION: a->version = true; break;
    case M_PRINT_MAN: a->man = value; break;
    case M_PRINT_COMPLETION: a->completion = value; break;
    case M_LIST_OPTIONS: a->list = true; break;
    case M_GENERATE_DOCS: a->docs = value; break;
    }
    return 0;
}

/* The binary's own table first, then every built command's. */
static int all_commands(const op_cli_command **all)
{
    int n = 0;
    all[n++] = &main_command;
    for (int i = 0; i < g_n; i++)
        if (g_cmds[i].cli) all[n++] = g_cmds[i].cli;
    return n;
}

static const command *find(const char *name)
{
    for (int i = 0; i < g_n; i++)
        if (strcmp(name, g_cmds[i].name) == 0) return &g_cmds[i];
    return NULL;
}

/* "unknown command 'X' (did you mean Y?); valid commands: ..." */
static int unknown_command(const char *word)
{
    const char *names[MAX_COMMANDS + 1];
    for (int i = 0; i < g_n; i++) names[i] = g_cmds[i].name;
    names[g_n] = "help";
    const char *close = op_suggest_closest(word, names, (size_t)g_n + 1);
    fprintf(stderr, "omniprof: unknown command '%s'%s%s%s; valid commands:", word,
            close ? " (did you mean " : "", close ? close : "", close ? "?)" : "");
    for (int i = 0; i < g_n; i++) fprintf(stderr, " %s", g_cmds[i].name);
    fprintf(stderr, " (see `omniprof --help`)\n");
    return 2;
}

static int print_man(FILE *out, const char *name)
{
    const op_cli_command *all[MAX_COMMANDS + 1];
    int n = all_commands(all);
    if (!strcmp(name, "omniprof") || !*name) {
        op_cli_print_man(out, &main_command, all, n, OMNIPROF_VERSION_STRING);
        return 0;
    }
    const command *c = find(name);
    if (!c) return unknown_command(name);
    if (!c->cli) {
        fprintf(stderr, "omniprof %s: not built\n", name);
        return 1;
    }
    op_cli_print_man(out, c->cli, all, n, OMNIPROF_VERSION_STRING);
    return 0;
}

/* DIR/rel (its directory created), written by `fn`. 0, or 1 (said). */
static int write_doc(const char *dir, const char *rel, const char *what,
                     int (*fn)(FILE *, const char *))
{
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    if (op_path_mkdirs(path, err, sizeof err) != 0) {
        fprintf(stderr, "omniprof: --generate-docs: %s\n", err);
        return 1;
    }
    *slash = '/';
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "omniprof: --generate-docs: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    int rc = fn(f, what);
    if (fclose(f) != 0) rc = 1;
    return rc;
}

static int completion(FILE *out, const char *shell)
{
    const op_cli_command *all[MAX_COMMANDS + 1];
    int n = all_commands(all);
    if (!strcmp(shell, "zsh"))
        op_cli_print_zsh(out, all, n);
    else
        op_cli_print_bash(out, all, n);
    return 0;
}

static int generate_docs(const char *dir)
{
    int rc = write_doc(dir, "man/man1/omniprof.1", "omniprof", print_man);
    for (int i = 0; i < g_n; i++) {
        if (!g_cmds[i].cli) continue;
        char rel[128];
        snprintf(rel, sizeof rel, "man/man1/omniprof-%s.1", g_cmds[i].name);
        rc |= write_doc(dir, rel, g_cmds[i].name, print_man);
    }
    rc |= write_doc(dir, "bash-completion/completions/omniprof", "bash", completion);
    rc |= write_doc(dir, "zsh/site-functions/_omniprof", "zsh", completion);
    return rc;
}

int main(int argc, char **argv)
{
    register_commands();
    main_args a;
    memset(&a, 0, sizeof a);
    char err[1024];
    int rest = argc;
    if (argc < 2) {
        op_cli_print_help(stderr, &main_command);
        return 2;
    }
    if (op_cli_parse(&main_command, argc, argv, on_option, &a, &rest, err, sizeof err) != 0) {
        fprintf(stderr, "omniprof: %s\n", err);
        return 2;
    }
    if (a.help) {
        op_cli_print_help(stdout, &main_command);
        return 0;
    }
    if (a.version) {
        printf("omniprof %s\n", OMNIPROF_VERSION_STRING);
        return 0;
    }
    if (a.man) return print_man(stdout, a.man);
    if (a.completion) return completion(stdout, a.completion);
    if (a.list) {
        const op_cli_command *all[MAX_COMMANDS + 1];
        op_cli_print_json(stdout, all, all_commands(all));
        return 0;
    }
    if (a.docs) return generate_docs(a.docs);
    if (rest >= argc) {
        op_cli_print_help(stderr, &main_command);
        return 2;
    }
    const char *cmd = argv[rest];
    if (!strcmp(cmd, "help")) {
        if (rest + 1 >= argc) {
            op_cli_print_help(stdout, &main_command);
            return 0;
        }
        const command *c = find(argv[rest + 1]);
        if (!c) return unknown_command(argv[rest + 1]);
        if (!c->cli) {
            fprintf(stderr, "omniprof %s: not built\n", c->name);
            return 1;
        }
        op_cli_print_help(stdout, c->cli);
        return 0;
    }
    if (!strcmp(cmd, "version")) {
        printf("omniprof %s\n", OMNIPROF_VERSION_STRING);
        return 0;
    }
    const command *c = find(cmd);
    if (!c) return unknown_command(cmd);
    if (!c->fn) {
        fprintf(stderr, "omniprof %s: not built\n", cmd);
        return 1;
    }
    return c->fn(argc - rest, argv + rest);
}
