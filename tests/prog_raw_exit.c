/* A program that leaves by the exit_group system call, past libc's exit and so past the recorder's
 * own exit work, as every Go program does: its own mappings get no count at the end. It reserves
 * RESERVE_MIB with no access (as Go reserves its heap's address space), maps MAP_MIB and writes
 * WRITE_MIB of it, and holds that while malloc calls let the recorder sample its RSS. Prints its
 * VmHWM ("peak_rss_kb"). With the argument "return" it returns from main instead (the recorder's
 * exit work runs). */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "prog_util.h"

#define MIB (1u << 20)
#define RESERVE_MIB 512u
#define MAP_MIB 64u
#define WRITE_MIB 32u

int main(int argc, char **argv)
{
    const int ret = argc > 1 && !strcmp(argv[1], "return");
    void *reserved =
        mmap(NULL, (size_t)RESERVE_MIB * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    uint8_t *m = mmap(NULL, (size_t)MAP_MIB * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (reserved == MAP_FAILED || m == MAP_FAILED)
        return 1;
    write_pages(m, (size_t)WRITE_MIB * MIB);
    for (int i = 0; i < 5; i++) { /* calls 60 ms apart: RSS samples (the recorder reads its clock
                                   * every 8 calls while the process has one thread) */
        hold();
        for (int k = 0; k < 64; k++) {
            void *volatile b = malloc(100); /* volatile: the pair is not optimized away */
            free(b);
        }
    }
    put("peak_rss_kb", (uint64_t)status_kb("VmHWM:"));
    flush_out();
    if (ret)
        return 0;
    syscall(SYS_exit_group, 0);
    return 1; /* not reached */
}
