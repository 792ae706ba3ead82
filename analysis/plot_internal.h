/* Shared by the plot code in analysis/ (not installed): file names quoted for gnuplot without a
 * length limit, and gnuplot runs whose data file is committed together with the picture. Errors as
 * plot.h's: a negative errno, the message in err. */
#ifndef MTRACE_PLOT_INTERNAL_H
#define MTRACE_PLOT_INTERNAL_H

#include <stdio.h>

#include "mtrace/file_io.h"

/* Writes path to f as a gnuplot single-quoted string, whole (no length limit: a script is text of
 * any length, where a fixed buffer would cut the name into another file's). A relative path gets
 * "./" in front, since gnuplot gives a leading '<' or '|' (a command), '~' (the home directory),
 * '$' (a data block), '-', '+' or '++' (inline or generated data) and '' (the previous file) a
 * meaning of their own. A name with a control character (a line break would end the command) is
 * refused: 0, or -EINVAL with the message in err (which may be NULL where the name was accepted
 * before). */
int mt_gp_put_file(FILE *f, const char *path, mt_error_t *err);

/* mt_gnuplot, with the data file the script reads: written by the caller into data->f (its
 * temporary, data->tmp, is the name the script uses), committed only when the picture is, so that a
 * run that fails leaves neither. data may be NULL. On failure data is aborted. */
int mt_gnuplot_data(const char *script, const char *out, mt_out_t *data, mt_error_t *err);

/* Text for a data file's double-quoted column (a bar's name), as mt_gp_text quotes a script's
 * strings: one column whatever it holds (a quote becomes a space, a backslash is doubled, since
 * gnuplot reads escapes there), and what XML refuses made '?'. Returns buf. */
const char *mt_gp_data_text(char *buf, size_t cap, const char *s);

/* A command line as a plot's title, quoted as mt_gp_text does: the program by its file name and, when
 * the line is longer than `width` characters, its middle elided (" ... ") so the title fits the
 * picture and keeps both the program and the last arguments. */
const char *mt_gp_title(char *buf, size_t cap, const char *command, size_t width);

#endif
