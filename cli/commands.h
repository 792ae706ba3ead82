/* The mtrace commands that live in files of their own; main() in mtrace.c dispatches to them. Each
 * takes the command's arguments (argv[0] the command's name) and returns the process's exit status. */
#ifndef MTRACE_CLI_COMMANDS_H
#define MTRACE_CLI_COMMANDS_H

int cmd_record(int argc, char **argv); /* record_cmd.c */
int cmd_info(int argc, char **argv);   /* info_cmd.c */
int cmd_dump(int argc, char **argv);   /* dump_cmd.c */

#endif
