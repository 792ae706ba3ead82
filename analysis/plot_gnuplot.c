/* gnuplot runner and the plots drawn from mtrace's own data files. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "file_io.h"
#include "mtrace/plot.h"

/* gnuplot writes the picture itself: it gets a fresh temporary beside the target (made with O_EXCL,
 * so never a planted name), renamed over the target once gnuplot succeeded, as every other output. */
int mt_gnuplot(const char *script, const char *out)
{
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        fprintf(stderr, "mtrace: gnuplot is not installed: apt-get install gnuplot-nox\n");
        return -1;
    }
    mt_out_t pic;
    mt_error_t err;
    if (mt_out_open(&pic, out, &err) < 0) {
        fprintf(stderr, "mtrace: %s\n", err.msg);
        return -1;
    }
    /* gnuplot's stderr goes aside (it warns about empty ranges on good data) and is shown only when
     * the plot fails, which then leaves no output file behind. */
    char log[] = "/tmp/mtrace-gnuplot.XXXXXX";
    const int lfd = mkstemp(log);
    if (lfd < 0) {
        fprintf(stderr, "mtrace: cannot create a temporary file: %s\n", strerror(errno));
        mt_out_abort(&pic);
        return -1;
    }
    close(lfd);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "gnuplot 2>%s", log);
    FILE *p = popen(cmd, "w");
    int rc = -1;
    if (p) {
        char o[4096];
        fprintf(p, "%s\nset output '%s'\n", mt_gnuplot_terminal(out), mt_gp_file(o, sizeof o, pic.tmp));
        fputs(script, p);
        const int st = pclose(p);
        rc = st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
    }
    if (rc < 0) {
        fprintf(stderr, "mtrace: gnuplot failed to draw %s:", out);
        FILE *l = fopen(log, "r");
        char line[512];
        while (l && fgets(line, sizeof line, l))
            if (strstr(line, "rror") || strstr(line, "annot"))
                fprintf(stderr, " %s", line);
        if (l)
            fclose(l);
        fputc('\n', stderr);
        mt_out_abort(&pic);
    } else if (mt_out_commit(&pic, &err) < 0) {
        fprintf(stderr, "mtrace: %s\n", err.msg);
        rc = -1;
    }
    unlink(log);
    return rc;
}

/* Text from files (a trace's command line, a result's allocator name or series path) goes into a
 * gnuplot script between single quotes: a quote or a newline there would end the string or the
 * command and let the file run gnuplot commands (system, or a '<' pipe as a file name). */
const char *mt_gp_text(char *buf, size_t cap, const char *s)
{
    size_t n = 0;
    for (; s && *s && n + 3 < cap; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '\'')
            buf[n++] = '\'', buf[n++] = '\''; /* '' is a quote inside a single-quoted string */
        else
            buf[n++] = c < ' ' || c == 0x7f ? ' ' : (char)c;
    }
    buf[n] = 0;
    return buf;
}

const char *mt_gp_file(char *buf, size_t cap, const char *path)
{
    /* gnuplot reads "<cmd" and "|cmd" as commands to run, not files */
    if (path[0] == '<' || path[0] == '|') {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "./%s", path);
        return mt_gp_text(buf, cap, tmp);
    }
    return mt_gp_text(buf, cap, path);
}

const char *mt_gnuplot_terminal(const char *out)
{
    const size_t n = strlen(out);
    if (n > 4 && !strcmp(out + n - 4, ".svg"))
        return "set terminal svg size 900,500 dynamic enhanced font 'sans,11' background rgb 'white'";
    return "set terminal pngcairo size 900,500 enhanced font 'sans,10'";
}

int mt_plot_sweep(const char *dat, int ngroups, const char *const *names, const char *xlabel, int logx,
                  const char *out)
{
    char titles[4096] = "", t[512], d[4096], x[256];
    size_t n = 0;
    for (int g = 0; g < ngroups && n < sizeof titles; g++)
        n += (size_t)snprintf(titles + n, sizeof titles - n, "%s'%s'", g ? "," : "", mt_gp_text(t, sizeof t, names[g]));
    char script[16384];
    snprintf(script, sizeof script,
             "set key outside right\n"
             "set grid\n"
             "%s\n"
             "set xlabel '%s' noenhanced\n"
             "set format x '%%.0b%%B'\n"
             "set xtics rotate by -30\n"
             "set multiplot layout 1,2 title 'mtrace sweep'\n"
             "array T[%d] = [%s]\n"
             "set ylabel 'peak RSS (MiB)'\n"
             "set key top left inside\n"
             "plot for [i=0:%d] '%s' index i using 1:3 with linespoints lw 2 title T[i+1] noenhanced\n"
             "set ylabel 'wall time (ms)'\n"
             "plot for [i=0:%d] '%s' index i using 1:2 with linespoints lw 2 title T[i+1] noenhanced\n"
             "unset multiplot\n",
             logx ? "set logscale x 2" : "",
             mt_gp_text(x, sizeof x, xlabel), ngroups, titles, ngroups - 1, mt_gp_file(d, sizeof d, dat), ngroups - 1,
             d);
    return mt_gnuplot(script, out);
}
