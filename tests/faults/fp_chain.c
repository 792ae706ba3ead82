/* An exec chain: image N allocates malloc(500 + N), frees it, says "image N" and, while N > 0,
 * execs itself with N - 1 through one of a family of exec functions in turn: FAMILY v is execv,
 * execve, execvp, execvpe (N % 4); FAMILY l is execl, execle, execlp (N % 3). The info file gets
 * "image N PID".
 *   usage: fp_chain INFO N v|l */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fp_util.h"

extern char **environ;

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    fp_info_path = argv[1];
    const int n = atoi(argv[2]);
    char *p = malloc(500 + (size_t)n);
    if (!p)
        return 3;
    p[0] = 1;
    free(p);
    fp_info("image %d %d", n, (int)getpid());
    fp_say("image %d\n", n);
    if (n == 0)
        return 0;
    char next[16];
    snprintf(next, sizeof next, "%d", n - 1);
    char *args[] = { argv[0], argv[1], next, argv[3], NULL };
    if (!strcmp(argv[3], "v")) {
        switch (n % 4) {
        case 0:
            execv(argv[0], args);
            break;
        case 1:
            execve(argv[0], args, environ);
            break;
        case 2:
            execvp(argv[0], args);
            break; /* argv[0] has a slash: no search */
        case 3:
            execvpe(argv[0], args, environ);
            break;
        }
    } else {
        switch (n % 3) {
        case 0:
            execl(argv[0], argv[0], argv[1], next, argv[3], (char *)NULL);
            break;
        case 1:
            execle(argv[0], argv[0], argv[1], next, argv[3], (char *)NULL, environ);
            break;
        case 2:
            execlp(argv[0], argv[0], argv[1], next, argv[3], (char *)NULL);
            break;
        }
    }
    return 127;
}
