/* The traces a command is given: files, and directories whose trace files join by name. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mtrace/trace_format.h"
#include "trace_list.h"

void mt_trace_list_free(mt_trace_list_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    *l = (mt_trace_list_t){ 0 };
}

/* Adds path unless the list holds that file already (a directory given beside one of its files). */
static int trace_list_add(mt_trace_list_t *l, const char *path)
{
    struct stat a, b;
    for (size_t i = 0; i < l->n; i++)
        if (stat(path, &a) == 0 && stat(l->v[i], &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            return 0;
    if (l->n == l->cap) {
        const size_t cap = l->cap ? 2 * l->cap : 16;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(path)))
        return -1;
    l->n++;
    return 0;
}

int mt_file_has_magic(const char *path, const char *magic, size_t len)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return 0;
    struct stat st;
    uint8_t m[16];
    const int ok = len <= sizeof m && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                   pread(fd, m, len, 0) == (ssize_t)len && !memcmp(m, magic, len);
    close(fd);
    return ok;
}

/* Whether the file at path starts with a trace's magic (raw or packed). */
static int is_trace_file(const char *path)
{
    return mt_file_has_magic(path, MT_TRACE_MAGIC, MT_TRACE_MAGIC_LEN);
}

static int name_order(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

int mt_collect_traces(const char *cmd, int argc, char **argv, int *optind_, mt_trace_list_t *more)
{
    for (; *optind_ < argc; ++*optind_) {
        const char *op = argv[*optind_];
        struct stat st;
        if (stat(op, &st) == 0 && S_ISDIR(st.st_mode)) {
            struct dirent **ents;
            const int n = scandir(op, &ents, NULL, name_order);
            if (n < 0) {
                fprintf(stderr, "%s: %s: cannot read the directory: %s\n", cmd, op, strerror(errno));
                return -1;
            }
            int rc = 0, found = 0;
            for (int i = 0; i < n; i++) {
                char full[PATH_MAX];
                if (rc == 0 && snprintf(full, sizeof full, "%s/%s", op, ents[i]->d_name) < (int)sizeof full &&
                    is_trace_file(full)) {
                    rc = trace_list_add(more, full);
                    found++;
                }
                free(ents[i]);
            }
            free(ents);
            if (rc < 0) {
                fprintf(stderr, "%s: out of memory\n", cmd);
                return -1;
            }
            if (!found) {
                fprintf(stderr, "%s: %s: no trace in the directory\n", cmd, op);
                return -1;
            }
        } else if (is_trace_file(op)) {
            if (trace_list_add(more, op) < 0) {
                fprintf(stderr, "%s: out of memory\n", cmd);
                return -1;
            }
        } else {
            break;
        }
    }
    return 0;
}
