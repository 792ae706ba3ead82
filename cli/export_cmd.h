#ifndef MTRACE_EXPORT_CMD_H
#define MTRACE_EXPORT_CMD_H
int mt_export_main(int argc, char **argv);
#endif
