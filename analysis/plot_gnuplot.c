/* gnuplot runner and the plots drawn from mtrace's own data files. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mtrace/file_io.h"
#include "mtrace/tmp_cleanup.h"
#include "mtrace/plot.h"
#include "plot_internal.h"
#include "xml_escape.h"

/* The picture formats gnuplot is set up for (mt_gnuplot_terminal): 's' SVG, 'p' PNG, 0 neither. */
static int out_format(const char *out)
{
    const char *dot = strrchr(out, '.'), *slash = strrchr(out, '/');
    if (!dot || (slash && dot < slash))
        return 0;
    return !strcasecmp(dot, ".svg") ? 's' : !strcasecmp(dot, ".png") ? 'p' : 0;
}

int mt_gp_check_output(const char *out, mt_error_t *err)
{
    if (out_format(out))
        return 0;
    const char *dot = strrchr(out, '.'), *slash = strrchr(out, '/');
    const int has_ext = dot && (!slash || dot > slash);
    char shown[1024], shown_ext[1024];
    return mt_error_setf(err, -EINVAL, "%s: %s%s%sthe output name must end in .png or .svg",
                         mt_safe_str(shown, sizeof shown, out), has_ext ? "cannot draw a " : "",
                         has_ext ? mt_safe_str(shown_ext, sizeof shown_ext, dot) : "", has_ext ? " picture: " : "");
}

int mt_gp_put_file(FILE *f, const char *path, mt_error_t *err)
{
    for (const char *s = path; *s; s++) {
        if ((unsigned char)*s < ' ' || *s == 0x7f) {
            char shown[1024];
            return mt_error_setf(err, -EINVAL,
                                 "%s: a file name with a control character (a line break, a tab) "
                                 "cannot be given to gnuplot",
                                 mt_safe_str(shown, sizeof shown, path));
        }
    }
    fputs(path[0] == '/' ? "'" : "'./", f);
    for (const char *s = path; *s; s++) {
        if (*s == '\'')
            fputc('\'', f); /* '' is a quote inside a single-quoted string */
        fputc(*s, f);
    }
    fputc('\'', f);
    return 0;
}

/* Starts gnuplot reading its script from the returned stream, its stderr into log_fd. It dies with
 * this process (PR_SET_PDEATHSIG: checked against a parent gone before prctl), and a stop signal
 * ends it before the temporaries it writes are removed (tmp_cleanup.h): killed midway, it must not
 * create its output afterwards. NULL (the reason in err) when it cannot be started. */
static FILE *start_gnuplot(int log_fd, pid_t *pid, mt_error_t *err)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        const int e = errno;
        mt_error_setf(err, -e, "cannot start gnuplot: %s", strerror(e));
        return NULL;
    }
    const pid_t parent = getpid();
    *pid = fork();
    if (*pid == 0) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(127);
        if (dup2(fds[0], 0) < 0 || dup2(log_fd, 2) < 0)
            _exit(127);
        execlp("gnuplot", "gnuplot", (char *)NULL);
        _exit(127);
    }
    const int e = errno;
    close(fds[0]);
    if (*pid < 0) {
        close(fds[1]);
        mt_error_setf(err, -e, "cannot start gnuplot: %s", strerror(e));
        return NULL;
    }
    mt_cleanup_child(*pid);
    FILE *f = fdopen(fds[1], "w");
    if (!f) {
        close(fds[1]);
        kill(*pid, SIGKILL);
        waitpid(*pid, NULL, 0);
        mt_cleanup_child(0);
        mt_error_setf(err, -ENOMEM, "out of memory");
    }
    return f;
}

int mt_gnuplot(const char *script, const char *out, mt_error_t *err)
{
    return mt_gnuplot_data(script, out, NULL, err);
}

/* The failure of a gnuplot that ran: "gnuplot failed to draw OUT:" and the lines of its log that
 * say why (its errors, the files it cannot open), escaped and on one line, since gnuplot repeats
 * file names and titles taken from input files; cut where err is full. -EIO. */
static int gnuplot_failed(const char *out, const char *log, mt_error_t *err)
{
    const int rc = mt_error_setf(err, -EIO, "gnuplot failed to draw %s:", out);
    FILE *l = err ? fopen(log, "r") : NULL;
    size_t n = err ? strlen(err->msg) : 0;
    char line[512];
    while (l && fgets(line, sizeof line, l)) {
        if (!strstr(line, "rror") && !strstr(line, "annot"))
            continue;
        size_t len = strlen(line);
        while (len && (line[len - 1] == '\n' || line[len - 1] == ' '))
            len--;
        if (n + 2 >= sizeof err->msg)
            break;
        err->msg[n++] = ' ';
        mt_escape_text(err->msg + n, sizeof err->msg - n, line, len);
        n += strlen(err->msg + n);
    }
    if (l)
        fclose(l);
    return rc;
}

/* gnuplot writes the picture itself: it gets a fresh temporary beside the target (made with O_EXCL,
 * so never a planted name), renamed over the target once gnuplot succeeded, as every other output.
 * The data file goes first: if the picture then cannot be renamed, the data is removed again. */
int mt_gnuplot_data(const char *script, const char *out, mt_out_t *data, mt_error_t *err)
{
    int rc = mt_gp_check_output(out, err);
    if (rc < 0)
        goto fail_data;
    if (data && (fflush(data->f) != 0 || ferror(data->f))) {
        const int e = errno ? errno : EIO;
        rc = mt_error_setf(err, -e, "%s: cannot write: %s", data->path, strerror(errno));
        goto fail_data;
    }
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        rc = mt_error_setf(err, -ENOENT, "gnuplot is not installed: apt-get install gnuplot-nox");
        goto fail_data;
    }
    mt_out_t pic;
    if ((rc = mt_out_open(&pic, out, err)) < 0)
        goto fail_data;
    /* The temporary's name is the output's with a suffix: checked here, before gnuplot runs. */
    char *setup = NULL;
    size_t setup_len = 0;
    FILE *sf = open_memstream(&setup, &setup_len);
    if (!sf) {
        rc = mt_error_setf(err, -ENOMEM, "out of memory");
        mt_out_abort(&pic);
        goto fail_data;
    }
    fprintf(sf, "%s\nset output ", mt_gnuplot_terminal(out));
    rc = mt_gp_put_file(sf, pic.tmp, err);
    fputc('\n', sf);
    if (fclose(sf) != 0 && rc == 0)
        rc = mt_error_setf(err, -ENOMEM, "out of memory");
    if (rc < 0) {
        free(setup);
        mt_out_abort(&pic);
        goto fail_data;
    }
    /* gnuplot's stderr goes aside (it warns about empty ranges on good data) and is shown only when
     * the plot fails, which then leaves no output file behind. */
    char log[PATH_MAX];
    mt_tmp_template(log, sizeof log, "gnuplot", "");
    const int lfd = mkostemp(log, O_CLOEXEC);
    if (lfd < 0) {
        const int e = errno;
        rc = mt_error_setf(err, -e, "cannot create a temporary file: %s", strerror(e));
        free(setup);
        mt_out_abort(&pic);
        goto fail_data;
    }
    mt_cleanup_add(log, 0);
    pid_t gp;
    FILE *p = start_gnuplot(lfd, &gp, err);
    close(lfd);
    /* A gnuplot that stops reading (it exited on an error) must fail the plot, not kill mtrace with
     * SIGPIPE midway through a long script, which would leave the temporaries behind. (Set after
     * the fork: gnuplot itself keeps the default.) */
    struct sigaction ign = { .sa_handler = SIG_IGN }, old_pipe;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &old_pipe);
    rc = -1;
    if (p) {
        fputs(setup, p);
        fputs(script, p);
        fclose(p);
        int st = -1; /* stays -1 (not an exit) if waitpid fails */
        while (waitpid(gp, &st, 0) < 0 && errno == EINTR) {
        }
        mt_cleanup_child(0);
        rc = WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : gnuplot_failed(out, log, err);
    }
    sigaction(SIGPIPE, &old_pipe, NULL);
    free(setup);
    if (rc < 0) { /* gnuplot did not start, or failed: the reason is in err either way */
        mt_out_abort(&pic);
        if (data)
            mt_out_abort(data);
    } else if (data && (rc = mt_out_commit(data, err)) < 0) {
        mt_out_abort(&pic);
    } else if ((rc = mt_out_commit(&pic, err)) < 0) {
        if (data)
            unlink(data->path); /* renamed into place just above: the run failed, so it goes */
    }
    unlink(log);
    mt_cleanup_del(log);
    return rc;
fail_data:
    if (data)
        mt_out_abort(data);
    return rc;
}

/* Text from files (a trace's command line, a result's allocator name or series path) goes into a
 * gnuplot script between single quotes, where '' is a quote and nothing else is special, or into a
 * data file between double quotes, where gnuplot reads backslash escapes (\\ a backslash, \377 a
 * byte) and a quote cannot be escaped: a quote or a newline would end the string or the command
 * and let the file run gnuplot commands (system, or a '<' pipe as a file name). Controls become
 * spaces. gnuplot copies the text into its SVG, which is XML: a byte that starts no character XML
 * allows (malformed UTF-8, U+FFFE, U+FFFF: mt_xml_char_len, the one rule of the SVG and HTML that
 * mtrace writes) becomes '?', else no XML reader opens the picture. A cut at cap splits no
 * character. */
static const char *gp_quote(char *buf, size_t cap, const char *s, char quote)
{
    const size_t len = s ? strlen(s) : 0;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        const size_t k = mt_xml_char_len(s + i, len - i);
        const unsigned char c = (unsigned char)s[i];
        /* '' in single quotes, \\ in double quotes */
        const int twice = k == 1 && c == (quote == '\'' ? '\'' : '\\');
        const size_t out = k > 1 ? k : twice ? 2 : 1;
        if (n + out >= cap)
            break;
        if (k > 1)
            memcpy(buf + n, s + i, k);
        else if (twice)
            buf[n] = buf[n + 1] = (char)c;
        else if (k == 0)
            buf[n] = '?';
        else
            buf[n] = c < ' ' || c == 0x7f || c == (unsigned char)quote ? ' ' : (char)c;
        n += out;
        i += k ? k : 1;
    }
    if (cap)
        buf[n] = 0;
    return buf;
}

const char *mt_gp_text(char *buf, size_t cap, const char *s)
{
    return gp_quote(buf, cap, s, '\'');
}

const char *mt_gp_data_text(char *buf, size_t cap, const char *s)
{
    return gp_quote(buf, cap, s, '"');
}

const char *mt_gp_title(char *buf, size_t cap, const char *command, size_t width)
{
    /* The program by its file name, not its path; then, if still too long, the middle elided. */
    const char *const end_of_prog = command ? command + strcspn(command, " ") : NULL;
    const char *p = command;
    for (const char *c = command; c && c < end_of_prog; c++)
        if (*c == '/' && c + 1 < end_of_prog)
            p = c + 1;
    char shortened[1024];
    const size_t len = p ? strlen(p) : 0;
    if (len <= width || width < 16 || width >= sizeof shortened) {
        snprintf(shortened, sizeof shortened, "%s", p ? p : "");
    } else {
        size_t head = width - width / 3 - 5;
        const char *tail = p + len - width / 3;
        /* no UTF-8 character cut in two: the head ends before one, the tail starts after it */
        for (int i = 0; i < 3 && head && ((unsigned char)p[head] & 0xc0) == 0x80; i++)
            head--;
        for (int i = 0; i < 3 && ((unsigned char)*tail & 0xc0) == 0x80; i++)
            tail++;
        snprintf(shortened, sizeof shortened, "%.*s ... %s", (int)head, p, tail);
    }
    return mt_gp_text(buf, cap, shortened);
}

const char *mt_gnuplot_terminal(const char *out)
{
    if (out_format(out) == 's')
        return "set terminal svg size 900,500 dynamic enhanced font 'sans,11' background rgb 'white'";
    return "set terminal pngcairo size 900,500 enhanced font 'sans,10'";
}

int mt_plot_sweep(const char *dat, int ngroups, const char *const *names, const char *xlabel, int logx, const char *out,
                  mt_error_t *err)
{
    /* The script grows as it is written: every group's title is in it, however many or long. */
    char *script = NULL, t[512], x[256];
    size_t len = 0;
    FILE *f = open_memstream(&script, &len);
    if (!f)
        return mt_error_setf(err, -ENOMEM, "out of memory");
    fprintf(f,
            "set key outside right\n"
            "set grid\n"
            "%s\n"
            "set xlabel '%s' noenhanced\n"
            "set format x '%%.0b%%B'\n"
            "set xtics rotate by -30\n"
            "set multiplot layout 1,2 title 'mtrace sweep'\n"
            "array T[%d] = [",
            logx ? "set logscale x 2" : "", mt_gp_text(x, sizeof x, xlabel), ngroups);
    for (int g = 0; g < ngroups; g++)
        fprintf(f, "%s'%s'", g ? "," : "", mt_gp_text(t, sizeof t, names[g]));
    fprintf(f, "]\nset key top left inside\nset yrange [0:*]\n");
    /* Columns (cli/sweep.c): value; RSS median, low, high, default; CPU median, low, high, default.
     * Bars: the noise interval of the runs; dashed: the group's default (no setting). */
    static const char *const ylabel[2] = { "peak RSS (MiB)", "CPU time (ms)" };
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++) {
        const int c = 2 + 4 * k;
        fprintf(f, "set ylabel '%s'\nplot for [i=0:%d] ", ylabel[k], ngroups - 1);
        rc = mt_gp_put_file(f, dat, err);
        fprintf(f, " index i using 1:%d:%d:%d with yerrorlines lw 2 lc i+1 title T[i+1] noenhanced, for [i=0:%d] ", c,
                c + 1, c + 2, ngroups - 1);
        if (rc == 0)
            rc = mt_gp_put_file(f, dat, err);
        fprintf(f, " index i using 1:%d with lines dt 2 lc i+1 title T[i+1].' default' noenhanced\n", c + 3);
    }
    fprintf(f, "unset multiplot\n");
    if (fclose(f) != 0 && rc == 0)
        rc = mt_error_setf(err, -ENOMEM, "out of memory");
    if (rc == 0)
        rc = mt_gnuplot(script, out, err);
    free(script);
    return rc;
}
