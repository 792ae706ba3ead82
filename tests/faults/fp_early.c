/* Allocation before the shim has started: a library constructor (fp_early_lib.c) and, in the
 * "preinit" build (FP_PREINIT), a .preinit_array function, which runs before any library's
 * initializer, libc's included (environ is not set yet). main then frees the constructor's block and
 * allocates malloc(7171). Info: the pointers. stdout: a summary that does not depend on the run.
 *   usage: fp_early INFO */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>

#include "fp_util.h"

extern void *fp_early_block;
extern void *fp_early_freed;

#ifdef FP_PREINIT
static void *pre_block;

static void preinit(int argc, char **argv, char **envp)
{
    (void)argc;
    (void)argv;
    (void)envp;
    pre_block = malloc(6161); /* freed by main */
    free(malloc(6162));
}
__attribute__((section(".preinit_array"), used)) static void (*const preinit_fn)(int, char **, char **) = preinit;
#endif

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    fp_info_path = argv[1];
#ifdef FP_PREINIT
    fp_info("pre_block %llu", (unsigned long long)(uintptr_t)pre_block);
    free(pre_block);
#endif
    fp_info("early_block %llu", (unsigned long long)(uintptr_t)fp_early_block);
    fp_info("early_freed %llu", (unsigned long long)(uintptr_t)fp_early_freed);
    free(fp_early_block);
    char *p = malloc(7171);
    if (!p)
        return 3;
    fp_info("main_block %llu", (unsigned long long)(uintptr_t)p);
    p[0] = 1;
    free(p);
    fp_say("early: ok\n");
    return 0;
}
