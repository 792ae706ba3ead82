/* The command line of the converter, shared by trace2wl and mtrace convert. */
#ifndef MTRACE_CONVERT_CLI_H
#define MTRACE_CONVERT_CLI_H

/* What --help prints (the man page mtrace-convert.1 is made from it too). */
extern const char mt_convert_help[];

int mt_convert_main(const char *prog, int argc, char **argv);

#endif
