/* mtrace-man PAGE VERSION: the man page of mtrace (PAGE "mtrace"), of one of its commands, or of
 * the programs trace2wl and mtrace-sim, in roff on stdout, made from the text that PAGE's --help prints (help_text.c),
 * so that the two never disagree. Run by meson at build time; not installed.
 *
 * Why a generator over the help text rather than help2man or a second source: help2man needs the
 * program to run and guesses the structure from free text; a roff source beside the C strings would
 * be a second copy to keep in step. The help texts have a fixed shape (help_text.c says which), and
 * this program maps it: the usage lines to SYNOPSIS, prose to DESCRIPTION, each heading to a
 * section, each entry ("  TERM  description") to a tagged paragraph, the example as it stands. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert_cli.h"
#include "help_text.h"
#include "sim_help.h"

/* The programs beside mtrace, whose help texts live with them. */
static const mt_help_t programs[] = {
    { "trace2wl", "turn a trace into a workload for replay (= mtrace convert)", mt_convert_help },
    { "mtrace-sim", "replay a workload against the allocator of this process", mt_sim_help },
};

/* Text for roff: backslashes and hyphens escaped (a plain '-' may render as a hyphen, which a user
 * cannot type back), a leading '.' or '\'' kept from reading as a request. */
static void put_roff(FILE *f, const char *s, size_t n)
{
    if (n && (s[0] == '.' || s[0] == '\''))
        fputs("\\&", f);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\')
            fputs("\\e", f);
        else if (s[i] == '-')
            fputs("\\-", f);
        else
            fputc(s[i], f);
    }
    fputc('\n', f);
}

static size_t indent_of(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && s[i] == ' ')
        i++;
    return i;
}

/* A section heading: no indent, one of the names help_text.c uses, then ':' and nothing else. */
static int is_heading(const char *s, size_t n)
{
    static const char *const names[] = { "Options", "Output",   "Definitions", "Environment", "Exit status",
                                         "Example", "Commands", "Verdicts",    "Files" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const size_t k = strlen(names[i]);
        if (n == k + 1 && !strncmp(s, names[i], k) && s[k] == ':')
            return 1;
    }
    return 0;
}

/* The page of h, a command of mtrace when command is set (title mtrace-NAME), else a program. */
static void put_page(FILE *f, const mt_help_t *h, int command, const char *text, const char *version)
{
    char title[64];
    const int top = !strcmp(h->name, "mtrace");
    snprintf(title, sizeof title, "%s%s", command && !top ? "mtrace-" : "", h->name);
    fputs(".TH ", f);
    for (const char *p = title; *p; p++)
        fputs(*p == '-' ? "\\-" : (char[]){ (char)toupper((unsigned char)*p), 0 }, f);
    /* no hyphenation, ragged right: option names stay whole */
    fprintf(f, " 1 \"\" \"mtrace %s\" \"User Commands\"\n.nh\n.ad l\n.SH NAME\n", version);
    fprintf(f, "%s \\- ", title);
    put_roff(f, h->summary, strlen(h->summary));
    fputs(".SH SYNOPSIS\n.nf\n", f);
    const char *line = text;
    int synopsis = 1, verbatim = 0, para = 0, entry = 0;
    while (*line) {
        const char *nl = strchr(line, '\n');
        const size_t n = nl ? (size_t)(nl - line) : strlen(line);
        const size_t ind = indent_of(line, n);
        if (synopsis) {
            if (!n) {
                fputs(".fi\n.SH DESCRIPTION\n", f);
                synopsis = 0;
            } else if (!strncmp(line, "usage: ", 7)) {
                put_roff(f, line + 7, n - 7);
            } else {
                put_roff(f, line + ind, n - ind);
            }
        } else if (!n) {
            para = 1;
        } else if (is_heading(line, n)) {
            if (verbatim)
                fputs(".fi\n", f);
            fputs(".SH ", f);
            for (size_t i = 0; i + 1 < n; i++)
                fputc(toupper((unsigned char)line[i]), f);
            fputc('\n', f);
            verbatim = !strncmp(line, "Example:", 8);
            if (verbatim)
                fputs(".nf\n", f);
            para = entry = 0;
        } else if (verbatim) {
            put_roff(f, line, n);
        } else if (ind == 2) {
            /* an entry: its term up to two spaces, the description after them */
            const char *gap = memmem(line + 2, n - 2, "  ", 2);
            const size_t tlen = gap ? (size_t)(gap - line) - 2 : n - 2;
            fputs(".TP\n", f);
            put_roff(f, line + 2, tlen);
            if (gap) {
                const size_t d = indent_of(gap, n - (size_t)(gap - line));
                put_roff(f, gap + d, n - (size_t)(gap - line) - d);
            }
            para = 0;
            entry = 1;
        } else if (ind > 2) {
            put_roff(f, line + ind, n - ind); /* an entry carried on */
        } else {
            if (para || entry)
                fputs(".PP\n", f); /* prose after the entries goes back to the margin */
            put_roff(f, line, n);
            para = entry = 0;
        }
        line = nl ? nl + 1 : line + n;
    }
    if (synopsis)
        fputs(".fi\n", f);
    if (verbatim)
        fputs(".fi\n", f);
    fputs(".SH SEE ALSO\n", f);
    if (!top) {
        fputs("mtrace(1)\n", f);
        return;
    }
    for (size_t i = 1; i < mt_help_count; i++)
        fprintf(f, "mtrace\\-%s(1)%s\n", mt_help_pages[i].name, i + 1 < mt_help_count ? "," : "");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: mtrace-man PAGE VERSION\n");
        return 2;
    }
    const mt_help_t *h = mt_help_find(argv[1]);
    const int command = h != NULL;
    for (size_t i = 0; !h && i < sizeof programs / sizeof programs[0]; i++)
        if (!strcmp(argv[1], programs[i].name))
            h = &programs[i];
    if (!h) {
        fprintf(stderr, "mtrace-man: no help page '%s'\n", argv[1]);
        return 2;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) {
        perror("mtrace-man");
        return 1;
    }
    if (command)
        mt_help_write(mem, h->name);
    else
        fputs(h->text, mem);
    if (fclose(mem) != 0) {
        perror("mtrace-man");
        return 1;
    }
    put_page(stdout, h, command, text, argv[2]);
    free(text);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror("mtrace-man");
        return 1;
    }
    return 0;
}
