/* Helpers of the simulator tests (see sim_util.h). */
#define _GNU_SOURCE
#include "sim_util.h"
#include "test_util.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- workload builder ---- */

void wlb_open_traced(wlb_t *b, const char *path, const char *allocator)
{
    memset(b, 0, sizeof *b);
    b->path = strdup(path);
    b->now_ns = 1000000;
    mt_wl_header_t tmpl;
    memset(&tmpl, 0, sizeof tmpl);
    uint8_t strings[512], *end = strings;
    if (allocator) {
        end = mt_str_put(strings, strings + sizeof strings, MT_STR_ALLOCATOR, allocator, strlen(allocator));
        ck_assert_msg(end != NULL, "allocator name too long: %s", allocator);
        end = mt_str_close(end);
    }
    mt_error_t err;
    ck_assert_msg(mt_wl_writer_open(&b->w, path, &tmpl, allocator ? strings : NULL, (size_t)(end - strings), &err) == 0,
                  "writer: %s", err.msg);
}

void wlb_open(wlb_t *b, const char *path)
{
    wlb_open_traced(b, path, NULL);
}

static void put(wlb_t *b, uint32_t th, mt_wl_rec_t *r)
{
    ck_assert_uint_lt(th, b->nthreads);
    b->now_ns += 1000;
    r->time_ns = b->now_ns;
    mt_error_t err;
    ck_assert_msg(mt_wl_writer_put(b->w, th, r, &err) == 0, "writer: %s", err.msg);
}

void wlb_put(wlb_t *b, uint32_t th, mt_wl_rec_t *r)
{
    put(b, th, r);
}

uint32_t wlb_thread(wlb_t *b, uint32_t creator_plus1)
{
    const int t = mt_wl_writer_add_thread(b->w, b->nthreads + 1, 1000 + b->nthreads, creator_plus1);
    ck_assert_int_eq(t, (int)b->nthreads);
    b->nthreads++;
    mt_wl_rec_t r = { .op = MT_WL_THREAD_START };
    put(b, (uint32_t)t, &r);
    return (uint32_t)t;
}

void wlb_gap(wlb_t *b, uint64_t ns)
{
    b->now_ns += ns;
}

static void slot_grow(wlb_t *b, uint64_t slot)
{
    ck_assert_uint_gt(slot, 0);
    if (slot >= b->slot_cap) {
        size_t cap = b->slot_cap ? b->slot_cap : 64;
        while (cap <= slot)
            cap *= 2;
        b->slot_size = realloc(b->slot_size, cap * sizeof *b->slot_size);
        ck_assert_ptr_nonnull(b->slot_size);
        for (size_t i = b->slot_cap; i < cap; i++)
            b->slot_size[i] = UINT64_MAX;
        b->slot_cap = cap;
    }
    if (slot > b->max_slot)
        b->max_slot = slot;
}

static void take(wlb_t *b, uint64_t slot, uint64_t size)
{
    slot_grow(b, slot);
    ck_assert_msg(b->slot_size[slot] == UINT64_MAX, "builder: slot %llu is live", (unsigned long long)slot);
    b->slot_size[slot] = size;
    b->live += size;
    if (b->live > b->peak) {
        b->peak = b->live;
        b->peak_ns = b->now_ns;
    }
}

static void drop(wlb_t *b, uint64_t slot)
{
    slot_grow(b, slot);
    ck_assert_msg(b->slot_size[slot] != UINT64_MAX, "builder: slot %llu is free", (unsigned long long)slot);
    b->live -= b->slot_size[slot];
    b->slot_size[slot] = UINT64_MAX;
}

void wlb_mmap(wlb_t *b, uint32_t th, uint64_t slot, uint64_t len)
{
    slot_grow(b, slot);
    b->maps++;
    mt_wl_rec_t r = { .op = MT_WL_MMAP, .slot = slot, .size = len };
    put(b, th, &r);
}

void wlb_munmap(wlb_t *b, uint32_t th, uint64_t slot, uint64_t off, uint64_t len, int last)
{
    mt_wl_rec_t r = { .op = MT_WL_MUNMAP, .slot = slot, .n = off, .size = len, .a = last };
    put(b, th, &r);
}

void wlb_madvise(wlb_t *b, uint32_t th, uint64_t slot, uint64_t off, uint64_t len, int advice, uint64_t pages)
{
    b->advises++;
    mt_wl_rec_t r = { .op = MT_WL_MADVISE, .slot = slot, .n = off, .size = len, .a = advice, .count = pages };
    put(b, th, &r);
}

void wlb_malloc(wlb_t *b, uint32_t th, uint64_t slot, uint64_t size)
{
    mt_wl_rec_t r = { .op = MT_WL_MALLOC, .slot = slot, .size = size };
    put(b, th, &r);
    take(b, slot, size);
}

void wlb_calloc(wlb_t *b, uint32_t th, uint64_t slot, uint64_t count, uint64_t size)
{
    mt_wl_rec_t r = { .op = MT_WL_CALLOC, .slot = slot, .count = count, .size = size };
    put(b, th, &r);
    take(b, slot, count * size);
}

/* A realloc or reallocarray op r (old slot r->slot, new r->slot2) whose new block has `bytes`. */
static void put_realloc(wlb_t *b, uint32_t th, mt_wl_rec_t *r, uint64_t bytes)
{
    if (r->slot) {
        slot_grow(b, r->slot);
        r->old_size = b->slot_size[r->slot];
    }
    put(b, th, r);
    if (r->slot)
        drop(b, r->slot);
    if (r->slot2)
        take(b, r->slot2, bytes);
}

void wlb_realloc(wlb_t *b, uint32_t th, uint64_t old_slot, uint64_t new_slot, uint64_t size)
{
    mt_wl_rec_t r = { .op = MT_WL_REALLOC, .slot = old_slot, .slot2 = new_slot, .size = size };
    put_realloc(b, th, &r, size);
}

void wlb_aligned(wlb_t *b, uint32_t th, unsigned op, uint64_t slot, uint64_t align, uint64_t size)
{
    ck_assert(op == MT_WL_MEMALIGN || op == MT_WL_POSIX_MEMALIGN || op == MT_WL_ALIGNED_ALLOC || op == MT_WL_VALLOC ||
              op == MT_WL_PVALLOC);
    mt_wl_rec_t r = { .op = (uint8_t)op, .slot = slot, .size = size };
    if (op != MT_WL_VALLOC && op != MT_WL_PVALLOC)
        r.align = align;
    put(b, th, &r);
    take(b, slot, size);
}

void wlb_reallocarray(wlb_t *b, uint32_t th, uint64_t old_slot, uint64_t new_slot, uint64_t count, uint64_t size)
{
    mt_wl_rec_t r = { .op = MT_WL_REALLOCARRAY, .slot = old_slot, .slot2 = new_slot, .count = count, .size = size };
    put_realloc(b, th, &r, count * size);
}

void wlb_free(wlb_t *b, uint32_t th, uint64_t slot)
{
    mt_wl_rec_t r = { .op = MT_WL_FREE, .slot = slot };
    if (slot) {
        slot_grow(b, slot);
        r.old_size = b->slot_size[slot];
    }
    put(b, th, &r);
    if (slot)
        drop(b, slot);
}

void wlb_usable(wlb_t *b, uint32_t th, uint64_t slot)
{
    mt_wl_rec_t r = { .op = MT_WL_USABLE_SIZE, .slot = slot };
    put(b, th, &r);
}

void wlb_wait(wlb_t *b, uint32_t th, uint32_t other, uint64_t count)
{
    mt_wl_rec_t r = { .op = MT_WL_WAIT, .thread = other, .n = count };
    put(b, th, &r);
}

void wlb_exit(wlb_t *b, uint32_t th)
{
    mt_wl_rec_t r = { .op = MT_WL_THREAD_EXIT };
    put(b, th, &r);
}

uint64_t wlb_ops(const wlb_t *b, uint32_t th)
{
    return mt_wl_writer_thread_ops(b->w, th);
}

void wlb_set_touch(wlb_t *b, const mt_wl_touch_entry_t *entries, uint64_t n)
{
    mt_wl_writer_set_touch(b->w, entries, n);
    b->pages_evidence = 1;
}

void wlb_close(wlb_t *b)
{
    mt_wl_header_t h;
    memset(&h, 0, sizeof h);
    if (b->pages_evidence)
        h.flags |= MT_WLH_PAGES;
    h.program_maps = b->maps;
    h.program_advises = b->advises;
    h.slots = b->max_slot;
    h.peak_live_bytes = b->peak;
    h.peak_live_time_ns = b->peak_ns;
    h.duration_ns = b->now_ns - 1000000;
    h.source_peak_rss_kb = b->source_peak_rss_kb;
    h.source_peak_anon_kb = b->source_peak_anon_kb;
    mt_error_t err;
    ck_assert_msg(mt_wl_writer_close(b->w, &h, &err) == 0, "writer: %s", err.msg);
    b->w = NULL;
    free(b->slot_size);
    free(b->path);
    memset(b, 0, sizeof *b);
}

/* ---- running programs ---- */

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int run(const char *const *argv, const char *out, const char *err, const char *const *env, double timeout_s)
{
    fflush(NULL);
    const pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        setpgid(0, 0);
        const char *o = out ? out : "/dev/null", *e = err ? err : "/dev/null";
        const int fo = open(o, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        const int fe = open(e, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
            _exit(126);
        /* meson sets MALLOC_PERTURB_ for tests: glibc would then fill every block it hands out,
         * touching pages the replay means to leave alone. A test that wants it passes it in env. */
        unsetenv("MALLOC_PERTURB_");
        /* Sanitized build: the replay leaves the blocks a workload never frees, by design, and
         * LeakSanitizer would turn every such replay into a failure; and a call the allocator cannot
         * satisfy must return NULL, as glibc's does, not abort. */
        if (SIM_SANITIZER_ALLOCATOR) {
            const char *old = getenv("ASAN_OPTIONS");
            char opts[1024];
            snprintf(opts, sizeof opts, "%s%sdetect_leaks=0:allocator_may_return_null=1", old ? old : "",
                     old && *old ? ":" : "");
            setenv("ASAN_OPTIONS", opts, 1);
        }
        for (size_t i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    setpgid(pid, pid); /* either side may get there first */
    const double deadline = mono_s() + timeout_s;
    int status;
    for (;;) {
        const pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            ck_abort_msg("waitpid: %s", strerror(errno));
        if (mono_s() > deadline) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            return RUN_TIMEOUT;
        }
        const struct timespec ts = { 0, 5000000 };
        nanosleep(&ts, NULL);
    }
    /* Children it left behind (a replay driver's simulator) must not outlive the test. */
    kill(-pid, SIGKILL);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

size_t count_lines(const char *text)
{
    size_t n = 0;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        n++;
        if (!nl)
            break;
        p = nl + 1;
    }
    return n;
}

void assert_one_line(const char *err_path, const char *what, const char *const *needles)
{
    char *t = read_text(err_path, NULL);
    ck_assert_msg(t != NULL, "%s: cannot read %s", what, err_path);
    ck_assert_msg(count_lines(t) == 1, "%s: expected one line on stderr, got %zu:\n%s", what, count_lines(t), t);
    for (size_t i = 0; needles && needles[i]; i++) {
        char alt[256];
        snprintf(alt, sizeof alt, "%s", needles[i]);
        int found = 0;
        for (char *save = NULL, *tok = strtok_r(alt, "|", &save); tok; tok = strtok_r(NULL, "|", &save))
            if (strstr(t, tok))
                found = 1;
        ck_assert_msg(found, "%s: expected '%s' in the message: %s", what, needles[i], t);
    }
    free(t);
}

mt_jval_t *load_json(const char *path)
{
    mt_jval_t *j = NULL;
    mt_error_t err;
    ck_assert_msg(mt_json_load(path, &j, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(j->type, MT_JOBJ);
    return j;
}

double jnum(const mt_jval_t *obj, const char *key)
{
    const mt_jval_t *v = mt_json_get(obj, key);
    ck_assert_msg(v && v->type == MT_JNUM, "result has no number '%s'", key);
    return v->num;
}

double jnum2(const mt_jval_t *obj, const char *key, const char *sub)
{
    const mt_jval_t *o = mt_json_get(obj, key);
    ck_assert_msg(o && o->type == MT_JOBJ, "result has no object '%s'", key);
    const mt_jval_t *v = mt_json_get(o, sub);
    ck_assert_msg(v && v->type == MT_JNUM, "result has no number '%s.%s'", key, sub);
    return v->num;
}

int allocator_installed(const char *name, char *why, size_t why_cap)
{
    static const struct {
        const char *name, *file, *package;
    } libs[] = {
        { "jemalloc", "libjemalloc.so.2", "libjemalloc2" },
        { "tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4" },
        { "mimalloc", "libmimalloc.so.2", "libmimalloc2.0" },
    };
    static const char *const dirs[] = { "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
                                        "/usr/lib", "/usr/local/lib" };
    if (!strcmp(name, "glibc"))
        return 1;
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        if (strcmp(libs[i].name, name))
            continue;
        for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++) {
            char p[512];
            snprintf(p, sizeof p, "%s/%s", dirs[d], libs[i].file);
            if (access(p, R_OK) == 0)
                return 1;
        }
        snprintf(why, why_cap, "%s is not installed (Debian package %s)", libs[i].file, libs[i].package);
        return 0;
    }
    snprintf(why, why_cap, "unknown allocator %s", name);
    return 0;
}

int sanitizer_skip(const char *what)
{
    if (!SIM_SANITIZER_ALLOCATOR)
        return 0;
    fprintf(stderr, "%s: not checked in a sanitized build (the sanitizer's allocator answers malloc)\n", what);
    return 1;
}
