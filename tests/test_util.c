/* Helpers shared by the Check tests (see test_util.h). */
#define _GNU_SOURCE
#include "test_util.h"

#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every passing ck_assert writes to Check's pipe: helpers that run per record use this instead. */
static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        ck_abort_msg("out of memory");
    return p;
}

void rec_list_push(rec_list_t *l, const mt_record_t *r)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        if (!l->v)
            ck_abort_msg("out of memory");
    }
    mt_record_t *c = &l->v[l->n++];
    *c = *r;
    if (r->data && r->len) {
        uint8_t *d = xmalloc(r->len);
        memcpy(d, r->data, r->len);
        c->data = d;
    } else {
        c->data = NULL;
    }
}

void rec_list_free(rec_list_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free((void *)l->v[i].data);
    free(l->v);
    memset(l, 0, sizeof *l);
}

int read_file_order(const char *path, rec_list_t *out, mt_error_t *err)
{
    mt_trace_t *t;
    int rc = mt_trace_open(&t, path, err);
    if (rc < 0)
        return rc;
    mt_cursor_t c;
    if (mt_cursor_init(&c, t) < 0)
        ck_abort_msg("out of memory");
    for (size_t i = 0; i < mt_trace_chunk_count(t) && rc >= 0; i++) {
        rc = mt_cursor_load(&c, i, err);
        mt_record_t r;
        while (rc >= 0 && (rc = mt_cursor_next(&c, &r, err)) > 0)
            rec_list_push(out, &r);
    }
    mt_cursor_fini(&c);
    mt_trace_close(t);
    return rc < 0 ? rc : 0;
}

int read_thread(const mt_trace_t *t, size_t thread_index, rec_list_t *out, mt_error_t *err)
{
    mt_thread_cursor_t tc;
    if (mt_thread_cursor_init(&tc, t, thread_index) < 0)
        ck_abort_msg("no thread %zu", thread_index);
    mt_record_t r;
    int rc;
    while ((rc = mt_thread_cursor_next(&tc, &r, err)) > 0)
        rec_list_push(out, &r);
    mt_thread_cursor_fini(&tc);
    return rc;
}

int record_eq(const mt_record_t *a, const mt_record_t *b)
{
    if (a->op != b->op || a->flags != b->flags || a->time != b->time || a->ptr != b->ptr || a->result != b->result ||
        a->size != b->size || a->count != b->count || a->align != b->align || a->usable != b->usable ||
        a->stack != b->stack || a->nargs != b->nargs || a->len != b->len)
        return 0;
    for (unsigned i = 0; i < 4; i++)
        if (a->arg[i] != b->arg[i])
            return 0;
    if (a->len && memcmp(a->data, b->data, a->len) != 0)
        return 0;
    return 1;
}

char *record_str(const mt_record_t *r, char *buf, size_t cap)
{
    const char *name = mt_op_name(r->op);
    snprintf(buf, cap,
             "%s(op %u) flags=%#x time=%" PRIu64 " ptr=%#" PRIx64 " result=%#" PRIx64 " size=%" PRIu64 " count=%" PRIu64
             " align=%" PRIu64 " usable=%" PRIu64 " stack=%u nargs=%u arg={%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
             "} len=%u",
             name ? name : "?", r->op, r->flags, r->time, r->ptr, r->result, r->size, r->count, r->align, r->usable,
             r->stack, r->nargs, r->arg[0], r->arg[1], r->arg[2], r->arg[3], r->len);
    return buf;
}

void assert_record_eq(const mt_record_t *got, const mt_record_t *want, const char *what, size_t i)
{
    if (record_eq(got, want))
        return;
    char g[512], w[512];
    ck_abort_msg("%s: record %zu differs\n  got  %s\n  want %s", what, i, record_str(got, g, sizeof g),
                 record_str(want, w, sizeof w));
}

void assert_lists_eq(const rec_list_t *got, const rec_list_t *want, const char *what)
{
    const size_t n = got->n < want->n ? got->n : want->n;
    for (size_t i = 0; i < n; i++)
        assert_record_eq(&got->v[i], &want->v[i], what, i);
    ck_assert_msg(got->n == want->n, "%s: %zu records, expected %zu", what, got->n, want->n);
}

mt_record_t exp_call(unsigned op, uint64_t time)
{
    mt_record_t r;
    memset(&r, 0, sizeof r);
    r.op = (uint8_t)op;
    r.time = time;
    return r;
}

mt_record_t exp_event_varints(unsigned op, uint64_t time, unsigned n, const uint64_t *values)
{
    /* one buffer, reused: the caller pushes the record (which copies the payload) before the next */
    static uint8_t buf[40];
    ck_assert_uint_le(n, 4);
    uint8_t *q = buf;
    mt_record_t r = exp_call(op, time);
    for (unsigned i = 0; i < n; i++) {
        q = mt_put_uvarint(q, values[i]);
        r.arg[i] = (int64_t)values[i];
    }
    r.nargs = n;
    r.len = (uint32_t)(q - buf);
    r.data = r.len ? buf : NULL;
    return r;
}

mt_record_t exp_event_bytes(unsigned op, uint64_t time, const void *data, size_t len)
{
    mt_record_t r = exp_call(op, time);
    r.len = (uint32_t)len;
    r.data = len ? data : NULL;
    return r;
}

int write_record(mt_writer_t *w, uint32_t thread, uint32_t tid, const mt_record_t *r)
{
    if (r->op >= MT_FIRST_EVENT)
        return mt_writer_event(w, thread, tid, r->op, r->time, r->data, r->len);
    return mt_writer_call(w, thread, tid, r);
}

char *make_temp_dir(const char *tag)
{
    const char *base = getenv("TMPDIR");
    char *path;
    ck_assert_int_ge(asprintf(&path, "%s/mtrace-%s-XXXXXX", base && *base ? base : "/tmp", tag), 0);
    ck_assert_msg(mkdtemp(path) != NULL, "mkdtemp %s: %s", path, strerror(errno));
    return path;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void remove_tree(const char *dir)
{
    if (dir)
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void temp_dir_discard(char **dir, const char *keep_env)
{
    if (!*dir)
        return;
    if (keep_env && getenv(keep_env))
        fprintf(stderr, "kept %s\n", *dir);
    else
        remove_tree(*dir);
    free(*dir);
    *dir = NULL;
}

char *path_in(const char *dir, const char *name)
{
    char *p;
    ck_assert_int_ge(asprintf(&p, "%s/%s", dir, name), 0);
    return p;
}

int files_same(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    ck_assert_msg(fa && fb, "cannot open %s or %s", a, b);
    int same = 1;
    for (;;) {
        char x[65536], y[sizeof x];
        const size_t n = fread(x, 1, sizeof x, fa), m = fread(y, 1, sizeof y, fb);
        if (n != m || memcmp(x, y, n)) {
            same = 0;
            break;
        }
        if (n < sizeof x)
            break;
    }
    ck_assert_msg(!ferror(fa) && !ferror(fb), "cannot read %s or %s", a, b);
    fclose(fa);
    fclose(fb);
    return same;
}

uint64_t rng_next(rng_t *r)
{
    uint64_t x = r->s ? r->s : 0x9e3779b97f4a7c15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return x * 0x2545f4914f6cdd1dull;
}

uint64_t rng_below(rng_t *r, uint64_t n)
{
    return n ? rng_next(r) % n : 0;
}

unsigned sweep_stride(void)
{
    const char *v = getenv("MTRACE_SWEEP_STRIDE");
    if (!v || !*v)
        return 1;
    char *end;
    errno = 0;
    const unsigned long k = strtoul(v, &end, 10);
    if (errno || *end || k < 1 || k > 65536)
        ck_abort_msg("MTRACE_SWEEP_STRIDE=%s: expected a whole number from 1 to 65536", v);
    return (unsigned)k;
}

int run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
