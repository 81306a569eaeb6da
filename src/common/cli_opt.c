/* cli_opt.c — the one command-line parser of omniprof and the printers generated from the
 * option tables: --help, man pages (roff), bash and zsh completion, a JSON listing
 * (cli_opt.h says what each accepts and prints). */
#include "common/cli_opt.h"

#include <ctype.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

#include "common/number.h"
#include "common/settings.h"
#include "common/suggest.h"

#define HELP_WIDTH 100
#define HELP_LEFT 32 /* where the help text of an option starts */

/* ---- lookup --------------------------------------------------------------------------- */

const op_cli_option *op_cli_find_long(const op_cli_command *cmd, const char *name, size_t n)
{
    for (int t = 0; t < cmd->n_tables; t++)
        for (int i = 0; i < cmd->tables[t].n; i++) {
            const op_cli_option *o = &cmd->tables[t].rows[i];
            if (strlen(o->long_name) == n && strncmp(o->long_name, name, n) == 0) return o;
        }
    return NULL;
}

const op_cli_option *op_cli_find_short(const op_cli_command *cmd, char c)
{
    for (int t = 0; c && t < cmd->n_tables; t++)
        for (int i = 0; i < cmd->tables[t].n; i++)
            if (cmd->tables[t].rows[i].short_name == c) return &cmd->tables[t].rows[i];
    return NULL;
}

/* The short name `o` answers to in `cmd` (0 when an earlier table took it). */
static char short_of(const op_cli_command *cmd, const op_cli_option *o)
{
    return o->short_name && op_cli_find_short(cmd, o->short_name) == o ? o->short_name : 0;
}

/* Is `o` the row `cmd` reads for its long name (not one an earlier table shadows, as attach's
 * --help shadows run's)? Only those are listed. */
static bool visible(const op_cli_command *cmd, const op_cli_option *o)
{
    return op_cli_find_long(cmd, o->long_name, strlen(o->long_name)) == o;
}

const char *op_cli_suggest(const op_cli_command *cmd, const char *spelled)
{
    static char best[80];
    const char *names[512];
    char dashed[512][64];
    size_t n = 0;
    for (int t = 0; t < cmd->n_tables; t++)
        for (int i = 0; i < cmd->tables[t].n && n < 512; i++) {
            snprintf(dashed[n], sizeof dashed[n], "--%s", cmd->tables[t].rows[i].long_name);
            names[n] = dashed[n];
            n++;
        }
    const char *c = op_suggest_closest(spelled, names, n);
    if (!c) return NULL;
    snprintf(best, sizeof best, "%s", c);
    return best;
}

/* ---- values --------------------------------------------------------------------------- */

/* Is `word` one of the '|'-separated `list`? "#" in the list accepts any number. */
static bool word_in(const char *list, const char *word)
{
    if (!list || !word) return false;
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, "|");
        if (len == 1 && *p == '#') {
            double d;
            int rc = op_num_double(word, &d);
            if (rc != OP_NUM_SYNTAX && rc != OP_NUM_EMPTY)
                return true; /* the setting names the range */
        } else if (len == n && strncmp(p, word, n) == 0) {
            return true;
        }
        p += len;
        if (*p == '|') p++;
    }
    return false;
}

/* "a, b or c" of a '|'-list ("#" reads "a number"), into out. */
static void values_text(const char *list, char *out, size_t n)
{
    size_t used = 0, count = 1;
    out[0] = '\0';
    for (const char *p = list; *p; p++) count += *p == '|';
    size_t k = 0;
    for (const char *p = list; *p && used < n;) {
        size_t len = strcspn(p, "|");
        const char *sep = k == 0 ? "" : k + 1 == count ? " or " : ", ";
        if (len == 1 && *p == '#')
            used += (size_t)snprintf(out + used, n - used, "%sa number", sep);
        else
            used += (size_t)snprintf(out + used, n - used, "%s%.*s", sep, (int)len, p);
        k++;
        p += len;
        if (*p == '|') p++;
    }
}

/* The closest word of a '|'-list to `word`, or NULL. */
static const char *closest_value(const char *list, const char *word)
{
    static char words[64][64];
    const char *ptr[64];
    size_t n = 0;
    for (const char *p = list; *p && n < 64;) {
        size_t len = strcspn(p, "|");
        snprintf(words[n], sizeof words[n], "%.*s", (int)len, p);
        ptr[n] = words[n];
        n++;
        p += len;
        if (*p == '|') p++;
    }
    return op_suggest_closest(word, ptr, n);
}

static void bad_value(const op_cli_option *o, const char *spelled, const char *v, char *err,
                      size_t errlen)
{
    char valid[512];
    values_text(o->values, valid, sizeof valid);
    const char *c = closest_value(o->values, v);
    snprintf(err, errlen, "%s '%s' is not valid; expected %s%s%s%s", spelled, v, valid,
             c ? " (did you mean " : "", c ? c : "", c ? "?)" : "");
}

/* A word that belongs to a LIST: not an option, or a negative number (so that `-P -1:2:3`
 * reports the negative delay rather than a missing value). */
static bool is_list_word(const char *w)
{
    return w[0] != '-' || isdigit((unsigned char)w[1]) || (w[1] == '.' && w[2]);
}

/* ---- the parser ----------------------------------------------------------------------- */

static int take(const op_cli_command *cmd, const op_cli_option *o, const char *inline_value,
                const char *spelled, int *i, int argc, char **argv, op_cli_cb cb, void *ctx,
                char *err, size_t errlen)
{
    switch (o->kind) {
    case OP_CLI_FLAG:
        if (inline_value) {
            snprintf(err, errlen, "option '%s' takes no value (given '%s')", spelled, inline_value);
            return -1;
        }
        return cb(ctx, o, NULL, 0, spelled);
    case OP_CLI_BOOL: {
        bool b = true;
        const char *t = inline_value;
        if (!t && *i < argc && op_parse_bool(argv[*i], &b) == 0) t = argv[(*i)++];
        if (t && op_parse_bool(t, &b) != 0) {
            snprintf(err, errlen,
                     "%s='%s' is not valid; expected true or false (also 1/0, yes/no, on/off)",
                     spelled, t);
            return -1;
        }
        return cb(ctx, o, b ? "true" : "false", 0, spelled);
    }
    case OP_CLI_VALUE:
    case OP_CLI_ENUM:
        if (!inline_value) {
            if (*i >= argc || strcmp(argv[*i], "--") == 0) {
                char valid[512] = "";
                if (o->kind == OP_CLI_ENUM) values_text(o->values, valid, sizeof valid);
                snprintf(err, errlen, "option '%s' needs a value: %s", spelled,
                         valid[0]     ? valid
                         : o->metavar ? o->metavar
                                      : "VALUE");
                return -1;
            }
            inline_value = argv[(*i)++];
        }
        if (o->kind == OP_CLI_ENUM && !word_in(o->values, inline_value)) {
            bad_value(o, spelled, inline_value, err, errlen);
            return -1;
        }
        return cb(ctx, o, inline_value, 0, spelled);
    case OP_CLI_LIST: {
        int n = 0, rc;
        if (inline_value && (rc = cb(ctx, o, inline_value, n++, spelled)) != 0) return rc;
        while (*i < argc && is_list_word(argv[*i]))
            if ((rc = cb(ctx, o, argv[(*i)++], n++, spelled)) != 0) return rc;
        if (n == 0) {
            snprintf(err, errlen, "option '%s' needs at least one value: %s", spelled,
                     o->metavar ? o->metavar : "VALUE...");
            return -1;
        }
        return 0;
    }
    case OP_CLI_OPTVAL:
        if (!inline_value && *i < argc && word_in(o->values, argv[*i])) inline_value = argv[(*i)++];
        if (inline_value && !word_in(o->values, inline_value)) {
            bad_value(o, spelled, inline_value, err, errlen);
            return -1;
        }
        return cb(ctx, o, inline_value ? inline_value : "", 0, spelled);
    }
    (void)cmd;
    return -1;
}

int op_cli_parse(const op_cli_command *cmd, int argc, char **argv, op_cli_cb cb, void *ctx,
                 int *rest, char *err, size_t errlen)
{
    const char *name = cmd->name[0] ? cmd->name : NULL;
    char see[96];
    snprintf(see, sizeof see, "see `omniprof%s%s --help` for the valid options", name ? " " : "",
             name ? name : "");
    int i = 1;
    while (i < argc) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == '\0') {
            if (cmd->flags & OP_CLI_PROGRAM) break;
            snprintf(err, errlen, "unexpected argument '%s' (it is not an option's value); %s", a,
                     see);
            return -1;
        }
        const op_cli_option *o;
        const char *inline_value = NULL;
        char spelled[128];
        if (a[1] == '-') {
            const char *nm = a + 2, *eq = strchr(nm, '=');
            size_t n = eq ? (size_t)(eq - nm) : strlen(nm);
            snprintf(spelled, sizeof spelled, "--%.*s", (int)(n < 100 ? n : 100), nm);
            if (!(o = op_cli_find_long(cmd, nm, n))) {
                const char *c = op_cli_suggest(cmd, spelled);
                snprintf(err, errlen, "unknown option '%s'%s%s%s; %s", spelled,
                         c ? " (did you mean " : "", c ? c : "", c ? "?)" : "", see);
                return -1;
            }
            if (eq) inline_value = eq + 1;
        } else {
            snprintf(spelled, sizeof spelled, "-%c", a[1]);
            if (!(o = op_cli_find_short(cmd, a[1]))) {
                snprintf(err, errlen, "unknown option '%s'; %s", spelled, see);
                return -1;
            }
            if (a[2] == '=') {
                inline_value = a + 3;
            } else if (a[2]) {
                if (o->kind == OP_CLI_FLAG || o->kind == OP_CLI_BOOL) {
                    snprintf(err, errlen,
                             "option '%s' takes no value (in '%s'); options are given one per word",
                             spelled, a);
                    return -1;
                }
                inline_value = a + 2;
            }
        }
        i++;
        int rc = take(cmd, o, inline_value, spelled, &i, argc, argv, cb, ctx, err, errlen);
        if (rc != 0) return rc;
    }
    *rest = i;
    return 0;
}

void op_cli_respell(const op_cli_option *o, const char *value, int nth, char *out, size_t outlen)
{
    if (o->kind == OP_CLI_LIST && nth > 0)
        snprintf(out, outlen, "%s", value);
    else if (o->kind == OP_CLI_FLAG || (o->kind == OP_CLI_OPTVAL && !*value))
        snprintf(out, outlen, "--%s", o->long_name);
    else
        snprintf(out, outlen, "--%s=%s", o->long_name, value);
}

/* ---- --help ---------------------------------------------------------------------------- */

/* Print `text` from column `col` wrapped at HELP_WIDTH, continuation lines indented by
 * `indent`; '\n' in the text breaks the line (and keeps the indent). Ends with a newline. */
static void wrap(FILE *out, const char *text, int col, int indent)
{
    const char *p = text;
    bool line_has_word = false;
    while (*p) {
        if (*p == '\n') {
            fputc('\n', out);
            p++;
            col = 0;
            line_has_word = false;
            if (*p && *p != '\n') col = fprintf(out, "%*s", indent, "");
            continue;
        }
        if (*p == ' ') {
            p++;
            continue;
        }
        size_t w = strcspn(p, " \n");
        if (line_has_word && col + 1 + (int)w > HELP_WIDTH) {
            col = fprintf(out, "\n%*s", indent, "") - 1;
            line_has_word = false;
        }
        if (line_has_word) col += fprintf(out, " ");
        col += fprintf(out, "%.*s", (int)w, p);
        line_has_word = true;
        p += w;
    }
    fputc('\n', out);
}

static const char *metavar_of(const op_cli_option *o, char *buf, size_t n)
{
    if (o->kind == OP_CLI_FLAG || o->kind == OP_CLI_BOOL) return NULL;
    if (o->metavar) return o->metavar;
    if (o->values && o->kind == OP_CLI_ENUM) return o->values;
    if (o->values && o->kind == OP_CLI_OPTVAL) {
        snprintf(buf, n, "[%s]", o->values);
        return buf;
    }
    return o->kind == OP_CLI_LIST ? "VALUE..." : "VALUE";
}

static bool has_bool(const op_cli_command *cmd)
{
    for (int t = 0; t < cmd->n_tables; t++)
        for (int i = 0; i < cmd->tables[t].n && !cmd->tables[t].hidden; i++)
            if (cmd->tables[t].rows[i].kind == OP_CLI_BOOL) return true;
    return false;
}

static void print_synopsis(FILE *out, const op_cli_command *cmd, const char *first,
                           const char *next)
{
    const char *p = cmd->synopsis ? cmd->synopsis : "";
    for (int k = 0; *p || k == 0; k++) {
        size_t len = strcspn(p, "\n");
        fprintf(out, "%s%.*s\n", k ? next : first, (int)len, p);
        p += len;
        if (*p) p++;
    }
}

void op_cli_print_help(FILE *out, const op_cli_command *cmd)
{
    print_synopsis(out, cmd, "usage: ", "       ");
    if (cmd->description && *cmd->description) {
        fputc('\n', out);
        wrap(out, cmd->description, 0, 0);
    }
    bool heading_done = false;
    for (int t = 0; t < cmd->n_tables; t++) {
        const op_cli_table *tb = &cmd->tables[t];
        if (tb->hidden) continue;
        if (tb->heading) fprintf(out, "\n%s:\n", tb->heading);
        for (int i = 0; i < tb->n; i++) {
            const op_cli_option *o = &tb->rows[i];
            if (!visible(cmd, o)) continue;
            if (o->group)
                fprintf(out, "\n%s:\n", o->group);
            else if (!heading_done && !tb->heading)
                fprintf(out, "\nOptions:\n");
            heading_done = true;
            char left[160], mv[160];
            const char *m = metavar_of(o, mv, sizeof mv);
            char s = short_of(cmd, o);
            if (s)
                snprintf(left, sizeof left, "  -%c, --%s%s%s", s, o->long_name, m ? " " : "",
                         m ? m : "");
            else
                snprintf(left, sizeof left, "      --%s%s%s", o->long_name, m ? " " : "",
                         m ? m : "");
            int col = fprintf(out, "%s", left);
            if (col + 1 > HELP_LEFT) {
                fputc('\n', out);
                col = 0;
            }
            col += fprintf(out, "%*s", HELP_LEFT - col, "");
            wrap(out, o->help, col, HELP_LEFT);
        }
    }
    if (has_bool(cmd))
        fputs("\nBoolean options: --opt means true; also --opt BOOL and --opt=BOOL, BOOL being "
              "true/false,\n"
              "1/0, yes/no or on/off.\n",
              out);
    if (cmd->more_help) {
        fputc('\n', out);
        cmd->more_help(out);
    }
    if (cmd->notes && *cmd->notes) {
        fputc('\n', out);
        wrap(out, cmd->notes, 0, 0);
    }
}

/* ---- man pages ------------------------------------------------------------------------- */

/* roff text: backslashes and dashes escaped, a line starting with '.' or '\'' protected. */
static void roff(FILE *out, const char *s, size_t n)
{
    bool bol = true;
    for (size_t i = 0; i < n && s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        if (bol && (c == '.' || c == '\'')) fputs("\\&", out);
        if (c == '\\') {
            fputs("\\e", out);
        } else if (c == '-') {
            fputs("\\-", out);
        } else if (c >= 0x80) { /* UTF-8: groff's input is not; name the code point */
            int len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
            unsigned cp = len == 1 ? 0xfffd : c & (0x7fu >> len);
            for (int k = 1; k < len && i + 1 < n && s[i + 1]; k++)
                cp = cp << 6 | ((unsigned char)s[++i] & 0x3f);
            fprintf(out, "\\[u%04X]", cp);
        } else {
            fputc(c, out);
        }
        bol = c == '\n';
    }
}

/* Paragraphs of text ("\n\n" separates them; a single '\n' is a line break). */
static void roff_text(FILE *out, const char *text)
{
    for (const char *p = text; *p;) {
        const char *para = strstr(p, "\n\n");
        size_t len = para ? (size_t)(para - p) : strlen(p);
        /* single newlines are kept as line breaks: they separate items in our texts */
        for (const char *q = p; q < p + len;) {
            size_t l = strcspn(q, "\n");
            if (q + l > p + len) l = (size_t)(p + len - q);
            roff(out, q, l);
            fputc('\n', out);
            q += l;
            if (q < p + len) {
                fputs(".br\n", out);
                q++;
            }
        }
        p += len;
        while (*p == '\n') p++;
        if (*p) fputs(".PP\n", out);
    }
}

static void upper(char *s)
{
    for (; *s; s++) *s = (char)toupper((unsigned char)*s);
}

void op_cli_print_man(FILE *out, const op_cli_command *cmd, const op_cli_command *const *all,
                      int n_all, const char *version)
{
    char title[64], page[64];
    snprintf(page, sizeof page, "omniprof%s%s", cmd->name[0] ? "-" : "", cmd->name);
    snprintf(title, sizeof title, "%s", page);
    upper(title);
    fprintf(out,
            ".\\\" Generated from omniprof's option tables (omniprof --print-man); do not edit.\n");
    fprintf(out, ".TH %s 1 \"\" \"omniprof %s\" \"omniprof manual\"\n", title, version);
    fputs(".nh\n.ad l\n", out); /* option names are not hyphenated, nor lines stretched */
    fputs(".SH NAME\n", out);
    roff(out, page, strlen(page));
    fputs(" \\- ", out);
    roff(out, cmd->summary, strlen(cmd->summary));
    fputs("\n.SH SYNOPSIS\n.nf\n", out);
    for (const char *p = cmd->synopsis ? cmd->synopsis : ""; *p;) {
        size_t len = strcspn(p, "\n");
        roff(out, p, len);
        fputc('\n', out);
        p += len;
        if (*p) p++;
    }
    fputs(".fi\n", out);
    if (cmd->description && *cmd->description) {
        fputs(".SH DESCRIPTION\n", out);
        roff_text(out, cmd->description);
    }
    if (!cmd->name[0]) {
        fputs(".SH COMMANDS\n", out);
        for (int k = 0; k < n_all; k++) {
            if (!all[k] || !all[k]->name[0] || (all[k]->flags & OP_CLI_HIDDEN)) continue;
            fputs(".TP\n.B omniprof ", out);
            roff(out, all[k]->name, strlen(all[k]->name));
            fputc('\n', out);
            roff(out, all[k]->summary, strlen(all[k]->summary));
            fprintf(out, "; see\n.BR omniprof\\-%s (1).\n", all[k]->name);
        }
    }
    fputs(".SH OPTIONS\n", out);
    for (int t = 0; t < cmd->n_tables; t++) {
        const op_cli_table *tb = &cmd->tables[t];
        if (tb->hidden) continue;
        if (tb->heading) {
            fputs(".SS ", out);
            roff(out, tb->heading, strlen(tb->heading));
            fputc('\n', out);
        }
        for (int i = 0; i < tb->n; i++) {
            const op_cli_option *o = &tb->rows[i];
            if (!visible(cmd, o)) continue;
            if (o->group) {
                fputs(".SS ", out);
                roff(out, o->group, strlen(o->group));
                fputc('\n', out);
            }
            char mv[160];
            const char *m = metavar_of(o, mv, sizeof mv);
            char s = short_of(cmd, o);
            fputs(".TP\n", out);
            if (s) fprintf(out, "\\fB\\-%c\\fR, ", s);
            fputs("\\fB\\-\\-", out);
            roff(out, o->long_name, strlen(o->long_name));
            fputs("\\fR", out);
            if (m) {
                fputs(" \\fI", out);
                roff(out, m, strlen(m));
                fputs("\\fR", out);
            } else if (o->kind == OP_CLI_BOOL) {
                fputs(" [\\fIBOOL\\fR]", out);
            }
            fputc('\n', out);
            roff_text(out, o->help);
        }
    }
    if (has_bool(cmd))
        fputs(".PP\nBoolean options: \\fB\\-\\-opt\\fR means true; also \\fB\\-\\-opt\\fR "
              "\\fIBOOL\\fR and "
              "\\fB\\-\\-opt=\\fR\\fIBOOL\\fR,\n\\fIBOOL\\fR being true/false, 1/0, yes/no or "
              "on/off.\n",
              out);
    if (cmd->more_help) {
        char *buf = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&buf, &len);
        if (mem) {
            cmd->more_help(mem);
            fclose(mem);
            fputs(".PP\n", out);
            roff_text(out, buf);
            free(buf);
        }
    }
    if (cmd->notes && *cmd->notes) {
        fputs(".SH NOTES\n", out);
        roff_text(out, cmd->notes);
    }
    fputs(".SH SEE ALSO\n", out);
    if (cmd->name[0]) {
        fputs(".BR omniprof (1)\n", out);
    } else {
        bool first = true;
        for (int k = 0; k < n_all; k++) {
            if (!all[k] || !all[k]->name[0] || (all[k]->flags & OP_CLI_HIDDEN)) continue;
            fprintf(out, "%s.BR omniprof\\-%s (1)", first ? "" : ",\n", all[k]->name);
            first = false;
        }
        fputc('\n', out);
    }
}

/* ---- completion ------------------------------------------------------------------------ */

/* Values the completion offers after option `o`: its words, directories, or files. */
typedef enum { COMP_NONE, COMP_WORDS, COMP_DIRS, COMP_FILES } comp_kind;

static comp_kind completes(const op_cli_option *o)
{
    if (o->kind == OP_CLI_FLAG || o->kind == OP_CLI_BOOL) return COMP_NONE;
    if (o->values && strcmp(o->values, "#") != 0) return COMP_WORDS;
    if (o->metavar && strstr(o->metavar, "DIR")) return COMP_DIRS;
    if (o->metavar &&
        (strstr(o->metavar, "FILE") || strstr(o->metavar, "DB") || strstr(o->metavar, "LIB")))
        return COMP_FILES;
    return COMP_NONE;
}

/* The words of a '|'-list separated by spaces (the OPTVAL number "#" left out). */
static void words_of(FILE *out, const char *list)
{
    bool first = true;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, "|");
        if (!(len == 1 && *p == '#')) {
            fprintf(out, "%s%.*s", first ? "" : " ", (int)len, p);
            first = false;
        }
        p += len;
        if (*p == '|') p++;
    }
}

void op_cli_print_bash(FILE *out, const op_cli_command *const *all, int n_all)
{
    fputs(
        "# bash completion for omniprof. Generated from the option tables of the omniprof binary\n"
        "# (omniprof --print-completion bash); do not edit. Works with or without the\n"
        "# bash-completion package: it reads COMP_WORDS and COMP_CWORD itself.\n"
        "_omniprof()\n{\n"
        "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"\" cmd=\"\" i dashdash=0\n"
        "    [ \"$COMP_CWORD\" -gt 0 ] && prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
        "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
        "        if [ -z \"$cmd\" ]; then\n"
        "            case \"${COMP_WORDS[i]}\" in -*) ;; *) cmd=\"${COMP_WORDS[i]}\" ;; esac\n"
        "        elif [ \"${COMP_WORDS[i]}\" = \"--\" ]; then\n"
        "            dashdash=1\n"
        "        fi\n"
        "    done\n"
        "    if [ -z \"$cmd\" ]; then\n"
        "        COMPREPLY=($(compgen -W \"",
        out);
    bool first = true;
    for (int k = 0; k < n_all; k++) {
        if (!all[k]) continue;
        if (all[k]->name[0] && !(all[k]->flags & OP_CLI_HIDDEN)) {
            fprintf(out, "%s%s", first ? "" : " ", all[k]->name);
            first = false;
        }
    }
    fputs(" help", out);
    for (int k = 0; k < n_all; k++)
        if (all[k] && !all[k]->name[0])
            for (int t = 0; t < all[k]->n_tables; t++)
                for (int i = 0; i < all[k]->tables[t].n && !all[k]->tables[t].hidden; i++)
                    fprintf(out, " --%s", all[k]->tables[t].rows[i].long_name);
    fputs("\" -- \"$cur\"))\n        return 0\n    fi\n"
          "    if [ \"$dashdash\" = 1 ]; then\n"
          "        COMPREPLY=($(compgen -f -- \"$cur\"))\n        return 0\n    fi\n"
          "    local opts=\"\"\n"
          "    case \"$cmd\" in\n"
          "    help)\n        COMPREPLY=($(compgen -W \"",
          out);
    first = true;
    for (int k = 0; k < n_all; k++)
        if (all[k] && all[k]->name[0] && !(all[k]->flags & OP_CLI_HIDDEN)) {
            fprintf(out, "%s%s", first ? "" : " ", all[k]->name);
            first = false;
        }
    fputs("\" -- \"$cur\"))\n        return 0\n        ;;\n", out);
    for (int k = 0; k < n_all; k++) {
        const op_cli_command *c = all[k];
        if (!c || !c->name[0]) continue;
        fprintf(out, "    %s)\n        case \"$prev\" in\n", c->name);
        for (int t = 0; t < c->n_tables; t++)
            for (int i = 0; i < c->tables[t].n && !c->tables[t].hidden; i++) {
                const op_cli_option *o = &c->tables[t].rows[i];
                comp_kind ck = completes(o);
                if (ck == COMP_NONE || !visible(c, o)) continue;
                char s = short_of(c, o);
                fprintf(out, "        --%s", o->long_name);
                if (s) fprintf(out, "|-%c", s);
                fputs(")\n            COMPREPLY=($(compgen ", out);
                if (ck == COMP_WORDS) {
                    fputs("-W \"", out);
                    words_of(out, o->values);
                    fputc('"', out);
                } else {
                    fputs(ck == COMP_DIRS ? "-d" : "-f", out);
                }
                fputs(" -- \"$cur\"))\n            return 0\n            ;;\n", out);
            }
        fputs("        esac\n        opts=\"", out);
        first = true;
        for (int t = 0; t < c->n_tables; t++)
            for (int i = 0; i < c->tables[t].n && !c->tables[t].hidden; i++) {
                const op_cli_option *o = &c->tables[t].rows[i];
                char s = short_of(c, o);
                if (!visible(c, o)) continue;
                fprintf(out, "%s--%s", first ? "" : " ", o->long_name);
                if (s) fprintf(out, " -%c", s);
                first = false;
            }
        fputs("\"\n        ;;\n", out);
    }
    fputs("    *)\n        return 0\n        ;;\n    esac\n"
          "    if [[ \"$cur\" == -* ]]; then\n"
          "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
          "    else\n"
          "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
          "    fi\n"
          "    return 0\n}\n"
          "complete -o default -F _omniprof omniprof\n",
          out);
}

/* zsh description text: the help's first clause, without the characters _arguments reads. */
static void zsh_desc(FILE *out, const char *help)
{
    char buf[80];
    size_t n = 0;
    for (const char *p = help; *p && n < 70; p++) {
        if (*p == ';' || *p == '\n' || (*p == '(' && n > 20)) break;
        if (*p == ':') buf[n++] = ','; /* "page: tables" reads "page, tables", not "page tables" */
        else if (!strchr("[]'\\`$\"", *p)) buf[n++] = *p;
    }
    while (n && buf[n - 1] == ' ') n--;
    fprintf(out, "%.*s", (int)n, buf);
}

void op_cli_print_zsh(FILE *out, const op_cli_command *const *all, int n_all)
{
    fputs("#compdef omniprof\n"
          "# zsh completion for omniprof. Generated from the option tables of the omniprof binary\n"
          "# (omniprof --print-completion zsh); do not edit.\n"
          "_omniprof() {\n"
          "  local -a cmds\n"
          "  cmds=(\n",
          out);
    for (int k = 0; k < n_all; k++) {
        if (!all[k] || !all[k]->name[0] || (all[k]->flags & OP_CLI_HIDDEN)) continue;
        fprintf(out, "    '%s:", all[k]->name);
        zsh_desc(out, all[k]->summary);
        fputs("'\n", out);
    }
    fputs("    'help:describe a command'\n  )\n"
          "  if (( CURRENT == 2 )); then\n"
          "    _describe 'command' cmds\n"
          "    return\n"
          "  fi\n"
          "  local cmd=$words[2]\n"
          "  shift words\n"
          "  (( CURRENT-- ))\n"
          "  case $cmd in\n"
          "  help)\n    _describe 'command' cmds\n    ;;\n",
          out);
    for (int k = 0; k < n_all; k++) {
        const op_cli_command *c = all[k];
        if (!c || !c->name[0]) continue;
        fprintf(out, "  %s)\n    _arguments -S \\\n", c->name);
        for (int t = 0; t < c->n_tables; t++)
            for (int i = 0; i < c->tables[t].n && !c->tables[t].hidden; i++) {
                const op_cli_option *o = &c->tables[t].rows[i];
                char s = short_of(c, o);
                if (!visible(c, o)) continue;
                for (int form = s ? 0 : 1; form < 2; form++) {
                    fputs("      '", out);
                    if (o->kind == OP_CLI_LIST) fputc('*', out);
                    if (form == 0)
                        fprintf(out, "-%c", s);
                    else
                        fprintf(out, "--%s", o->long_name);
                    if (o->kind == OP_CLI_VALUE || o->kind == OP_CLI_ENUM ||
                        o->kind == OP_CLI_LIST) {
                        if (form == 1) fputc('=', out);
                    }
                    fputc('[', out);
                    zsh_desc(out, o->help);
                    fputc(']', out);
                    comp_kind ck = completes(o);
                    if (o->kind == OP_CLI_BOOL) {
                        fputs("::bool:(true false)", out); /* the value is optional */
                    } else if (o->kind != OP_CLI_FLAG && o->kind != OP_CLI_OPTVAL) {
                        fputs(":value:", out);
                        if (ck == COMP_WORDS) {
                            fputc('(', out);
                            words_of(out, o->values);
                            fputc(')', out);
                        } else if (ck == COMP_DIRS) {
                            fputs("_files -/", out);
                        } else {
                            fputs("_files", out);
                        }
                    }
                    fputs("' \\\n", out);
                }
            }
        fputs(c->flags & OP_CLI_PROGRAM ? "      '*::program:_normal'\n"
                                        : "      '*::word:_files'\n",
              out);
        fputs("    ;;\n", out);
    }
    fputs("  esac\n}\n_omniprof \"$@\"\n", out);
}

/* ---- JSON ------------------------------------------------------------------------------ */

static void json_str(FILE *out, const char *s)
{
    if (!s) {
        fputs("null", out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

void op_cli_print_json(FILE *out, const op_cli_command *const *all, int n_all)
{
    static const char *const kinds[] = {"flag", "bool", "value", "enum", "list", "optval"};
    bool first = true;
    fputs("[\n", out);
    for (int k = 0; k < n_all; k++) {
        const op_cli_command *c = all[k];
        if (!c) continue;
        for (int t = 0; t < c->n_tables; t++)
            for (int i = 0; i < c->tables[t].n && !c->tables[t].hidden; i++) {
                const op_cli_option *o = &c->tables[t].rows[i];
                char s[2] = {short_of(c, o), 0};
                if (!visible(c, o)) continue;
                fputs(first ? "  {" : ",\n  {", out);
                first = false;
                fputs("\"command\": ", out);
                json_str(out, c->name);
                fputs(", \"long\": ", out);
                char l[80];
                snprintf(l, sizeof l, "--%s", o->long_name);
                json_str(out, l);
                fputs(", \"short\": ", out);
                char sh[4] = {'-', s[0], 0, 0};
                json_str(out, s[0] ? sh : NULL);
                fprintf(out, ", \"kind\": \"%s\", \"metavar\": ", kinds[o->kind]);
                json_str(out, o->metavar);
                fputs(", \"values\": ", out);
                json_str(out, o->values);
                fputs(", \"help\": ", out);
                json_str(out, o->help);
                fputs("}", out);
            }
    }
    fputs("\n]\n", out);
}
