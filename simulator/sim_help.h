/* The help text of mtrace-sim (sim_help.c). */
#ifndef MTRACE_SIM_HELP_H
#define MTRACE_SIM_HELP_H

extern const char mt_sim_help[];

#endif
