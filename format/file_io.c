/* The functions of include/mtrace/file_io.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mtrace/file_io.h"
#include "mtrace/tmp_cleanup.h"

int mt_errorf(mt_error_t *err, int code, const char *path, uint64_t offset, const char *fmt, ...)
{
    if (err) {
        int n = snprintf(err->msg, sizeof err->msg, "%s: offset %llu: ", path, (unsigned long long)offset);
        if (n < 0 || (size_t)n >= sizeof err->msg)
            n = 0;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg + n, sizeof err->msg - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return code;
}

int mt_error_setf(mt_error_t *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

int mt_open_input(const char *path, struct stat *st, mt_error_t *err)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 || fstat(fd, st) < 0) {
        const int e = errno;
        if (fd >= 0)
            close(fd);
        return mt_errorf(err, -e, path, 0, "cannot open: %s", strerror(e));
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        return mt_errorf(err, -EINVAL, path, 0, "expected a regular file, found a %s",
                         S_ISDIR(st->st_mode)    ? "directory"
                         : S_ISFIFO(st->st_mode) ? "pipe"
                         : S_ISSOCK(st->st_mode) ? "socket"
                                                 : "device");
    }
    return fd;
}

const char *mt_tmp_dir(void)
{
    const char *dir = getenv("TMPDIR");
    return dir && dir[0] == '/' ? dir : "/tmp";
}

int mt_tmp_template(char *buf, size_t cap, const char *stem, const char *suffix)
{
    int n = snprintf(buf, cap, "%s/mtrace-%s.XXXXXX%s", mt_tmp_dir(), stem, suffix);
    if (n >= 0 && (size_t)n < cap)
        return 0;
    snprintf(buf, cap, "/tmp/mtrace-%s.XXXXXX%s", stem, suffix);
    return -1;
}

int mt_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int mt_pread_some(int fd, void *buf, size_t len, uint64_t off, size_t *got)
{
    size_t n = 0;
    while (n < len) {
        const ssize_t r = pread(fd, (uint8_t *)buf + n, len - n, (off_t)(off + n));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            *got = n;
            return -errno;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    *got = n;
    return 0;
}

int mt_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
    size_t got;
    const int rc = mt_pread_some(fd, buf, len, off, &got);
    return rc < 0 ? rc : got == len ? 0 : -EIO;
}

int mt_write_full(int fd, const void *buf, size_t len, uint64_t off)
{
    const uint8_t *p = buf;
    while (len) {
        const ssize_t w = off == UINT64_MAX ? write(fd, p, len) : pwrite(fd, p, len, (off_t)off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (w == 0)
            return -EIO;
        p += w;
        len -= (size_t)w;
        if (off != UINT64_MAX)
            off += (uint64_t)w;
    }
    return 0;
}

/* ---- outputs: complete or absent ------------------------------------------------------------- */

static int out_fail(mt_out_t *o, mt_error_t *err, int e, const char *what)
{
    mt_out_abort(o);
    if (err)
        snprintf(err->msg, sizeof err->msg, "%s: cannot write%s: %s", o->path, what, strerror(e));
    return -e;
}

int mt_out_special(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

int mt_out_open(mt_out_t *o, const char *path, mt_error_t *err)
{
    *o = (mt_out_t){ .path = path };
    if (mt_out_special(path)) {
        const int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
            const int e = errno;
            if (fd >= 0)
                close(fd);
            return out_fail(o, err, e, "");
        }
        o->in_place = 1;
        return 0;
    }
    /* A folder of that name would refuse the rename at the end, after the work: refused now. */
    struct stat target;
    if (stat(path, &target) == 0 && S_ISDIR(target.st_mode))
        return out_fail(o, err, EISDIR, "");
    if (snprintf(o->tmp, sizeof o->tmp, "%s.partial.XXXXXX", path) >= (int)sizeof o->tmp) {
        o->tmp[0] = 0;
        return out_fail(o, err, ENAMETOOLONG, "");
    }
    /* mkostemp opens with O_CREAT|O_EXCL, which refuses any existing name, a symlink included. */
    const int fd = mkostemp(o->tmp, O_CLOEXEC);
    if (fd < 0) {
        const int e = errno;
        o->tmp[0] = 0;
        return out_fail(o, err, e, "");
    }
    mt_cleanup_add(o->tmp, 0); /* a stop signal removes it (tmp_cleanup.h) */
    /* mkostemp makes 0600; an output gets what fopen "w" would give it. The umask can only be read
     * by setting it: the tools create no file on another thread meanwhile. */
    struct stat st;
    mode_t mode;
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        mode = st.st_mode & 07777 & ~(mode_t)(S_ISUID | S_ISGID);
    } else {
        const mode_t mask = umask(077);
        umask(mask);
        mode = 0666 & ~mask;
    }
    if (fchmod(fd, mode) < 0 || !(o->f = fdopen(fd, "w"))) {
        const int e = errno;
        close(fd);
        return out_fail(o, err, e, "");
    }
    return 0;
}

int mt_out_commit(mt_out_t *o, mt_error_t *err)
{
    if (!o->f)
        return out_fail(o, err, EBADF, "");
    int e = 0;
    errno = 0;
    if (fflush(o->f) != 0 || ferror(o->f)) /* ferror: a write that failed before, without a reason now */
        e = errno ? errno : EIO;
    else if (fsync(fileno(o->f)) < 0 && errno != EINVAL && errno != EROFS)
        e = errno;
    FILE *f = o->f;
    o->f = NULL;
    if (fclose(f) != 0 && !e)
        e = errno;
    if (e)
        return out_fail(o, err, e, "");
    if (o->in_place)
        return 0;
    if (rename(o->tmp, o->path) < 0)
        return out_fail(o, err, errno, " (renaming into place)");
    mt_cleanup_del(o->tmp);
    o->tmp[0] = 0;
    return 0;
}

void mt_out_abort(mt_out_t *o)
{
    if (o->f) {
        fclose(o->f);
        o->f = NULL;
    }
    if (o->tmp[0]) {
        unlink(o->tmp);
        mt_cleanup_del(o->tmp);
        o->tmp[0] = 0;
    }
}

int mt_out_try(const char *path, mt_error_t *err)
{
    if (mt_out_special(path))
        return 0;
    mt_out_t o;
    const int rc = mt_out_open(&o, path, err);
    mt_out_abort(&o);
    return rc;
}

/* ---- text from files, for a terminal ---------------------------------------------------------- */

size_t mt_utf8_len(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    if (len == 0)
        return 0;
    const unsigned char c = s[0];
    size_t k;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        k = 2, cp = c & 0x1fu;
    else if (c >= 0xe0 && c <= 0xef)
        k = 3, cp = c & 0x0fu;
    else if (c >= 0xf0 && c <= 0xf4)
        k = 4, cp = c & 0x07u;
    else
        return 0; /* a continuation byte, C0/C1 (always overlong), F5-FF (past U+10FFFF) */
    if (k > len)
        return 0;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3fu);
    }
    static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (cp < min_cp[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return k;
}

size_t mt_escape_text(char *buf, size_t cap, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, n = 0;
    while (i < len) {
        const unsigned char c = u[i];
        /* printable ASCII and well-formed UTF-8 pass; C0 and C1 controls (U+0080-U+009F, which some
         * terminals obey), DEL, the backslash and bytes that are not UTF-8 are shown as \xNN */
        const int c1 = c == 0xc2 && i + 1 < len && u[i + 1] >= 0x80 && u[i + 1] < 0xa0;
        const size_t k = c1 ? 0 : c < 0x80 ? (c >= ' ' && c != 0x7f && c != '\\') : mt_utf8_len(s + i, len - i);
        const size_t esc = k ? 0 : c1 ? 2 : 1; /* bytes shown as \xNN */
        if (n + (k ? k : 4 * esc) >= cap)
            break;
        if (k) {
            memcpy(buf + n, u + i, k);
            n += k;
            i += k;
        } else {
            for (size_t e = 0; e < esc; e++)
                n += (size_t)snprintf(buf + n, cap - n, "\\x%02x", u[i + e]);
            i += esc;
        }
    }
    if (cap)
        buf[n] = 0;
    return i;
}

void mt_put_safe(FILE *f, const char *s, size_t len)
{
    char buf[1024];
    for (size_t i = 0; i < len;) {
        i += mt_escape_text(buf, sizeof buf, s + i, len - i);
        fputs(buf, f);
    }
}

const char *mt_safe_str(char *buf, size_t cap, const char *s)
{
    mt_escape_text(buf, cap, s ? s : "", s ? strlen(s) : 0);
    return buf;
}

void mt_put_csv_field(FILE *f, const char *s)
{
    fputc('"', f);
    while (s && *s) {
        const size_t run = strcspn(s, "\""); /* escaped as one text: UTF-8 sequences stay whole */
        mt_put_safe(f, s, run);
        s += run;
        if (*s == '"') {
            fputs("\"\"", f);
            s++;
        }
    }
    fputc('"', f);
}

int mt_stdout_finish(const char *prog, int status)
{
    errno = 0;
    /* fflush sets errno when it fails now; an earlier failed write left only the error flag */
    if (fflush(stdout) == 0 && !ferror(stdout))
        return status;
    const int e = errno;
    if (e == EPIPE) /* the reader closed the pipe on purpose (`| head`, SIGPIPE ignored) */
        return status;
    fprintf(stderr, "%s: cannot write the standard output%s%s\n", prog, e ? ": " : "", e ? strerror(e) : "");
    return status ? status : 1;
}
