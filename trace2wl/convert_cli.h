/* The command line of the converter, shared by trace2wl and mtrace convert. */
#ifndef MTRACE_CONVERT_CLI_H
#define MTRACE_CONVERT_CLI_H

int mt_convert_main(const char *prog, int argc, char **argv);

#endif
