/* trace2wl TRACE -o WORKLOAD: the converter as a program of its own (mtrace convert runs the same). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "convert_cli.h"
#include "mtrace/file_io.h"

int main(int argc, char **argv)
{
    return mt_stdout_finish("trace2wl", mt_convert_main("trace2wl", argc, argv));
}
