/* tests/sim/file_checks.h */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_checks.h"
#include "sim_util.h"

void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

void assert_only_files(const char *dir, const char *what, const char *const *expected)
{
    char extra[4096] = "";
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d));) {
        int known = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
        for (size_t i = 0; expected[i]; i++)
            known |= !strcmp(e->d_name, expected[i]);
        if (!known)
            snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " %s", e->d_name);
    }
    closedir(d);
    ck_assert_msg(extra[0] == 0, "%s: left behind:%s", what, extra);
}

char *read_printable(const char *path, size_t *len)
{
    char *text = read_text(path, len);
    ck_assert_msg(text != NULL, "cannot read %s", path);
    for (size_t i = 0; i < *len; i++)
        ck_assert_msg(text[i] == '\n' || ((unsigned char)text[i] >= ' ' && text[i] != 0x7f),
                      "byte 0x%02x at %zu reached the output:\n%s", (unsigned char)text[i], i, text);
    return text;
}
