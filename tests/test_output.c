/* Reading what a test's programs wrote (see test_output.h). */
#define _GNU_SOURCE
#include "test_output.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

char *read_text(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *nb = realloc(buf, cap);
            ck_assert_ptr_nonnull(nb);
            buf = nb;
        }
        const size_t r = fread(buf + n, 1, cap - n - 1, f);
        if (r == 0)
            break;
        n += r;
    }
    fclose(f);
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

char *read_text_ok(const char *path)
{
    char *text = read_text(path, NULL);
    ck_assert_msg(text != NULL, "%s: %s", path, strerror(errno));
    return text;
}

char *read_text_or_empty(const char *path)
{
    char *text = read_text(path, NULL);
    if (!text) {
        text = strdup("");
        ck_assert_ptr_nonnull(text);
    }
    return text;
}

void capture_open(capture_t *c, const char *dir)
{
    static unsigned seq;
    char name[32];
    snprintf(name, sizeof name, "stdout.%u", seq);
    c->out_path = path_in(dir, name);
    snprintf(name, sizeof name, "stderr.%u", seq++);
    c->err_path = path_in(dir, name);
    c->out_fd = open(c->out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    c->err_fd = open(c->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_msg(c->out_fd >= 0 && c->err_fd >= 0, "%s: %s", dir, strerror(errno));
}

void capture_started(capture_t *c)
{
    close(c->out_fd);
    close(c->err_fd);
    c->out_fd = c->err_fd = -1;
}

void capture_finish(capture_t *c, run_result_t *r)
{
    r->out = read_text_ok(c->out_path);
    r->err = read_text_ok(c->err_path);
    unlink(c->out_path);
    unlink(c->err_path);
    free(c->out_path);
    free(c->err_path);
    c->out_path = c->err_path = NULL;
}

void run_result_free(run_result_t *r)
{
    free(r->out);
    free(r->err);
}
