#ifndef MTRACE_SWEEP_H
#define MTRACE_SWEEP_H
int mt_sweep_main(int argc, char **argv);
#endif
