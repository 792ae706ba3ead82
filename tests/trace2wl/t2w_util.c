/* Helpers of the trace2wl tests (see t2w_util.h). */
#define _GNU_SOURCE
#include "t2w_util.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

/* Passing ck_asserts write to Check's pipe: code that runs per op checks with plain ifs. */
static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        ck_abort_msg("out of memory");
    return p;
}

/* ---- trace builder ------------------------------------------------------------------------------ */

void (*t2w_fatal)(const char *msg);

/* The builder fails through here, never through a passing ck_assert: make_golden uses it outside
 * Check. */
static void tb_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void tb_fail(const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (t2w_fatal)
        t2w_fatal(msg);
    ck_abort_msg("%s", msg);
    abort();
}

void tb_open_header(tb_t *b, const char *path, const mt_file_header_t *h)
{
    memset(b, 0, sizeof *b);
    for (uint32_t i = 0; i <= TB_MAX_THREADS; i++)
        b->tid[i] = 1000 + i;
    mt_error_t err;
    if (mt_writer_open(&b->w, path, h, &err) < 0)
        tb_fail("mt_writer_open %s: %s", path, err.msg);
}

void tb_open(tb_t *b, const char *path)
{
    tb_open_header(b, path, NULL);
}

void tb_close(tb_t *b)
{
    mt_error_t err;
    const int rc = mt_writer_close(b->w, 1, &err);
    b->w = NULL;
    if (rc < 0)
        tb_fail("mt_writer_close: %s", err.msg);
}

void tb_tid(tb_t *b, uint32_t thread, uint32_t tid)
{
    if (thread > TB_MAX_THREADS)
        tb_fail("thread %u out of range", thread);
    b->tid[thread] = tid;
}

static void tb_call(tb_t *b, uint32_t th, const mt_record_t *r)
{
    if (th == 0 || th > TB_MAX_THREADS)
        tb_fail("thread %u out of range", th);
    const int rc = mt_writer_call(b->w, th, b->tid[th], r);
    if (rc < 0)
        tb_fail("mt_writer_call: %s", mt_writer_error(b->w));
    b->calls++;
}

static void tb_event_u64(tb_t *b, uint32_t th, uint64_t t, unsigned op, uint64_t v)
{
    uint8_t payload[16];
    uint8_t *q = mt_put_uvarint(payload, v);
    const int rc = mt_writer_event(b->w, th, b->tid[th], op, t, payload, (size_t)(q - payload));
    if (rc < 0)
        tb_fail("mt_writer_event: %s", mt_writer_error(b->w));
}

void tb_start(tb_t *b, uint32_t th, uint64_t t, uint32_t creator)
{
    tb_event_u64(b, th, t, MT_EV_THREAD_START, creator);
}

void tb_create(tb_t *b, uint32_t th, uint64_t t, uint32_t child)
{
    tb_event_u64(b, th, t, MT_EV_THREAD_CREATE, child);
}

void tb_exit(tb_t *b, uint32_t th, uint64_t t)
{
    tb_event_u64(b, th, t, MT_EV_THREAD_EXIT, 0);
}

void tb_mark(tb_t *b, uint32_t th, uint64_t t, const char *label)
{
    const int rc = mt_writer_event(b->w, th, b->tid[th], MT_EV_MARK, t, label, strlen(label));
    if (rc < 0)
        tb_fail("mt_writer_event: %s", mt_writer_error(b->w));
}

/* An event whose payload is n uvarints, as libmtrace writes PAGES (4) and VM (4 or 5). */
static void event_n(tb_t *b, uint32_t th, uint64_t t, unsigned op, const uint64_t *v, int n)
{
    uint8_t payload[80], *q = payload;
    for (int k = 0; k < n; k++)
        q = mt_put_uvarint(q, v[k]);
    const int rc = mt_writer_event(b->w, th, b->tid[th], op, t, payload, (size_t)(q - payload));
    if (rc < 0)
        tb_fail("mt_writer_event: %s", mt_writer_error(b->w));
}

void tb_pages(tb_t *b, uint32_t th, uint64_t t, uint64_t ptr, uint64_t pages, uint64_t resident, unsigned when)
{
    event_n(b, th, t, MT_EV_PAGES, (const uint64_t[4]){ ptr, pages, resident, when }, 4);
}

void tb_pages_printed(tb_t *b, uint32_t th, uint64_t t, uint64_t ptr, uint64_t pages, unsigned when, uint64_t sampled,
                      uint64_t changed, uint64_t zero)
{
    event_n(b, th, t, MT_EV_PAGES, (const uint64_t[7]){ ptr, pages, pages, when, sampled, changed, zero }, 7);
}

void tb_vm(tb_t *b, uint32_t th, uint64_t t, unsigned kind, uint64_t addr, uint64_t len, uint64_t resident)
{
    event_n(b, th, t, MT_EV_VM, (const uint64_t[4]){ kind, addr, len, resident }, 4);
}

void tb_vm5(tb_t *b, uint32_t th, uint64_t t, unsigned kind, uint64_t addr, uint64_t len, uint64_t resident,
            uint64_t fifth)
{
    event_n(b, th, t, MT_EV_VM, (const uint64_t[5]){ kind, addr, len, resident, fifth }, 5);
}

static uint64_t usable_of(uint64_t requested)
{
    return (requested + 15) & ~(uint64_t)15;
}

static mt_record_t call(unsigned op, uint64_t t)
{
    mt_record_t r;
    memset(&r, 0, sizeof r);
    r.op = (uint8_t)op;
    r.time = t;
    return r;
}

static void set_result(mt_record_t *r, uint64_t result, uint64_t requested)
{
    if (result) {
        r->result = result;
        r->usable = usable_of(requested);
    } else {
        r->flags |= MT_FLAG_NULL;
    }
}

void tb_malloc(tb_t *b, uint32_t th, uint64_t t, uint64_t size, uint64_t result)
{
    mt_record_t r = call(MT_OP_MALLOC, t);
    r.size = size;
    set_result(&r, result, size);
    tb_call(b, th, &r);
}

void tb_calloc(tb_t *b, uint32_t th, uint64_t t, uint64_t count, uint64_t size, uint64_t result)
{
    mt_record_t r = call(MT_OP_CALLOC, t);
    r.count = count;
    r.size = size;
    set_result(&r, result, count * size);
    tb_call(b, th, &r);
}

void tb_realloc(tb_t *b, uint32_t th, uint64_t t, uint64_t ptr, uint64_t size, uint64_t result)
{
    mt_record_t r = call(MT_OP_REALLOC, t);
    r.ptr = ptr;
    r.size = size;
    set_result(&r, result, size);
    tb_call(b, th, &r);
}

void tb_reallocarray(tb_t *b, uint32_t th, uint64_t t, uint64_t ptr, uint64_t count, uint64_t size, uint64_t result)
{
    mt_record_t r = call(MT_OP_REALLOCARRAY, t);
    r.ptr = ptr;
    r.count = count;
    r.size = size;
    set_result(&r, result, count * size);
    tb_call(b, th, &r);
}

void tb_aligned(tb_t *b, unsigned op, uint32_t th, uint64_t t, uint64_t align, uint64_t size, uint64_t result)
{
    mt_record_t r = call(op, t);
    r.align = align;
    r.size = size;
    set_result(&r, result, size);
    if (!result && op == MT_OP_POSIX_MEMALIGN)
        r.arg[0] = ENOMEM;
    tb_call(b, th, &r);
}

void tb_valloc(tb_t *b, unsigned op, uint32_t th, uint64_t t, uint64_t size, uint64_t result)
{
    mt_record_t r = call(op, t);
    r.size = size;
    set_result(&r, result, size);
    tb_call(b, th, &r);
}

void tb_free(tb_t *b, uint32_t th, uint64_t t, uint64_t ptr)
{
    mt_record_t r = call(MT_OP_FREE, t);
    r.ptr = ptr;
    tb_call(b, th, &r);
}

void tb_usable(tb_t *b, uint32_t th, uint64_t t, uint64_t ptr, uint64_t ret)
{
    mt_record_t r = call(MT_OP_USABLE_SIZE, t);
    r.ptr = ptr;
    r.size = ret;
    tb_call(b, th, &r);
}

void tb_mallopt(tb_t *b, uint32_t th, uint64_t t, int64_t param, int64_t value, int64_t ret)
{
    mt_record_t r = call(MT_OP_MALLOPT, t);
    r.arg[0] = param;
    r.arg[1] = value;
    r.arg[2] = ret;
    tb_call(b, th, &r);
}

void convert_ok(const char *trace, const char *wl, mt_convert_stats_t *st)
{
    mt_convert_opts_t opts = { .force = 1 };
    mt_convert_stats_t dummy;
    mt_error_t err;
    memset(&err, 0, sizeof err);
    const int rc = mt_convert(trace, wl, &opts, st ? st : &dummy, &err);
    ck_assert_msg(rc == 0, "mt_convert %s: %d: %s", trace, rc, err.msg);
}

/* ---- workload in memory ------------------------------------------------------------------------ */

void wl_load(wl_mem_t *m, const char *path)
{
    memset(m, 0, sizeof *m);
    mt_error_t err;
    mt_wl_t *w;
    int rc = mt_wl_open(&w, path, &err);
    ck_assert_msg(rc == 0, "mt_wl_open %s: %s", path, err.msg);
    m->h = *mt_wl_header(w);
    m->nthreads = (uint32_t)mt_wl_thread_count(w);
    m->s = xcalloc(m->nthreads, sizeof *m->s);
    for (uint32_t i = 0; i < m->nthreads; i++) {
        wl_stream_t *s = &m->s[i];
        s->entry = *mt_wl_thread(w, i);
        size_t cap = 64;
        s->ops = xcalloc(cap, sizeof *s->ops);
        mt_wl_cursor_t *c;
        ck_assert_int_eq(mt_wl_cursor_open(&c, w, i), 0);
        mt_wl_rec_t r;
        while ((rc = mt_wl_cursor_next(c, &r, &err)) > 0) {
            if (s->n == cap) {
                cap *= 2;
                s->ops = realloc(s->ops, cap * sizeof *s->ops);
                if (!s->ops)
                    ck_abort_msg("out of memory");
            }
            if (r.len) {
                uint8_t *d = xcalloc(1, r.len);
                memcpy(d, r.data, r.len);
                r.data = d;
            } else {
                r.data = NULL;
            }
            s->ops[s->n++] = r;
        }
        mt_wl_cursor_close(c);
        ck_assert_msg(rc == 0, "reading thread %u of %s: %s", i, path, err.msg);
        ck_assert_msg(s->n == s->entry.ops, "thread %u: %zu ops decoded, the index says %" PRIu64, i, s->n,
                      s->entry.ops);
    }
    mt_wl_close(w);
}

void wl_free(wl_mem_t *m)
{
    for (uint32_t i = 0; i < m->nthreads; i++) {
        for (size_t k = 0; k < m->s[i].n; k++)
            free((void *)m->s[i].ops[k].data);
        free(m->s[i].ops);
    }
    free(m->s);
    memset(m, 0, sizeof *m);
}

uint64_t wl_count_op(const wl_mem_t *m, unsigned op)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < m->nthreads; i++)
        for (size_t k = 0; k < m->s[i].n; k++)
            n += m->s[i].ops[k].op == op;
    return n;
}

char *op_str(const mt_wl_rec_t *r, char *buf, size_t cap)
{
    const char *name = mt_wl_op_name(r->op);
    int n = snprintf(buf, cap, "%s", name ? name : "?");
    const size_t at = n > 0 && (size_t)n < cap ? (size_t)n : 0;
    char *p = buf + at;
    const size_t left = cap - at;
    switch (r->op) {
    case MT_WL_MALLOC:
    case MT_WL_VALLOC:
    case MT_WL_PVALLOC:
        snprintf(p, left, " #%" PRIu64 " %" PRIu64, r->slot, r->size);
        break;
    case MT_WL_CALLOC:
        snprintf(p, left, " #%" PRIu64 " %" PRIu64 "x%" PRIu64, r->slot, r->count, r->size);
        break;
    case MT_WL_REALLOC:
    case MT_WL_REALLOCARRAY: {
        char old[32] = "";
        if (r->slot)
            snprintf(old, sizeof old, " (%" PRIu64 ")", r->old_size);
        if (r->op == MT_WL_REALLOC)
            snprintf(p, left, " #%" PRIu64 "%s -> #%" PRIu64 " %" PRIu64, r->slot, old, r->slot2, r->size);
        else
            snprintf(p, left, " #%" PRIu64 "%s -> #%" PRIu64 " %" PRIu64 "x%" PRIu64, r->slot, old, r->slot2, r->count,
                     r->size);
        break;
    }
    case MT_WL_MEMALIGN:
    case MT_WL_POSIX_MEMALIGN:
    case MT_WL_ALIGNED_ALLOC:
        snprintf(p, left, " #%" PRIu64 " align=%" PRIu64 " %" PRIu64, r->slot, r->align, r->size);
        break;
    case MT_WL_FREE:
        if (r->slot)
            snprintf(p, left, " #%" PRIu64 " (%" PRIu64 ")", r->slot, r->old_size);
        else
            snprintf(p, left, " #0");
        break;
    case MT_WL_USABLE_SIZE:
        snprintf(p, left, " #%" PRIu64, r->slot);
        break;
    case MT_WL_MMAP:
        snprintf(p, left, " #%" PRIu64 " %" PRIu64, r->slot, r->size);
        break;
    case MT_WL_MUNMAP:
        snprintf(p, left, " #%" PRIu64 " +%" PRIu64 " %" PRIu64 "%s", r->slot, r->n, r->size, r->a ? " last" : "");
        break;
    case MT_WL_MADVISE:
        snprintf(p, left, " #%" PRIu64 " +%" PRIu64 " %" PRIu64 " advice=%" PRId64 " write=%" PRIu64, r->slot, r->n,
                 r->size, r->a, r->count);
        break;
    case MT_WL_MALLOPT:
        snprintf(p, left, " param=%" PRId64 " value=%" PRId64, r->a, r->b);
        break;
    case MT_WL_WAIT:
        snprintf(p, left, " thread=%u count=%" PRIu64, r->thread, r->n);
        break;
    case MT_WL_RSS:
        snprintf(p, left, " rss_kb=%" PRIu64 " vm_kb=%" PRIu64, r->rss_kb, r->vm_kb);
        break;
    case MT_WL_MARK:
        snprintf(p, left, " \"%.*s\"", (int)r->len, (const char *)r->data);
        break;
    default:
        break;
    }
    return buf;
}

char *stream_text(const wl_mem_t *m, uint32_t thread)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    ck_assert_ptr_nonnull(f);
    for (size_t k = 0; thread < m->nthreads && k < m->s[thread].n; k++) {
        char b[256];
        fprintf(f, "    %s\n", op_str(&m->s[thread].ops[k], b, sizeof b));
    }
    fclose(f);
    return out;
}

/* Compares a rendered op with an expected line: blanks collapsed, "#?" matches "#" and digits. */
static int line_matches(const char *got, const char *want)
{
    while (*want == ' ' || *want == '\t')
        want++;
    for (;;) {
        if (*want == ' ' || *want == '\t') {
            while (*want == ' ' || *want == '\t')
                want++;
            if (!*want)
                return !*got;
            if (*got != ' ')
                return 0;
            got++;
            continue;
        }
        if (want[0] == '#' && want[1] == '?') {
            if (*got != '#' || got[1] < '0' || got[1] > '9')
                return 0;
            got++;
            while (*got >= '0' && *got <= '9')
                got++;
            want += 2;
            continue;
        }
        if (*want != *got)
            return 0;
        if (!*want)
            return 1;
        want++;
        got++;
    }
}

void expect_stream(const wl_mem_t *m, uint32_t thread, const char *const *want)
{
    ck_assert_msg(thread < m->nthreads, "no thread %u in the workload (%u threads)", thread, m->nthreads);
    const wl_stream_t *s = &m->s[thread];
    size_t nwant = 0;
    while (want[nwant])
        nwant++;
    size_t bad = SIZE_MAX;
    for (size_t k = 0; k < nwant && k < s->n && bad == SIZE_MAX; k++) {
        char b[256];
        if (!line_matches(op_str(&s->ops[k], b, sizeof b), want[k]))
            bad = k;
    }
    if (bad == SIZE_MAX && nwant != s->n)
        bad = nwant < s->n ? nwant : s->n;
    if (bad == SIZE_MAX)
        return;
    char *got = stream_text(m, thread);
    char *exp = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&exp, &len);
    for (size_t k = 0; k < nwant; k++)
        fprintf(f, "    %s\n", want[k]);
    fclose(f);
    ck_abort_msg("thread %u: op %zu differs (%zu ops, expected %zu)\n  got:\n%s  expected:\n%s", thread, bad, s->n,
                 nwant, got, exp);
}

/* ---- replay checker ----------------------------------------------------------------------------- */

int replay_allow_after_exit;

typedef struct rthread {
    size_t pos;     /* ops completed */
    uint64_t *vc;   /* vector clock: per thread, the ops of it that happened before our next op */
    uint64_t *snap; /* (n + 1) clocks: snap[k] = vc after k ops */
} rthread_t;

typedef struct access {
    uint32_t thread; /* +1; 0: never accessed */
    uint64_t op;     /* the op's index in its stream */
} access_t;

typedef struct rstate {
    const wl_mem_t *m;
    rthread_t *t;
    uint8_t *live;
    uint64_t *bytes; /* requested bytes of each live slot's block */
    access_t *last;
    uint64_t nslots; /* table size */
    uint64_t live_n;
    replay_result_t *res;
    int check_races;
} rstate_t;

static int violation(rstate_t *s, uint32_t i, size_t k, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int violation(rstate_t *s, uint32_t i, size_t k, const char *fmt, ...)
{
    char op[256], msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(s->res->why, sizeof s->res->why, "thread %u op %zu (%s): %s", i, k,
             op_str(&s->m->s[i].ops[k], op, sizeof op), msg);
    s->res->ok = 0;
    return -1;
}

/* An access to slot `slot` by op k of thread i: ordered after the slot's previous access? */
static int touch(rstate_t *s, uint32_t i, size_t k, uint64_t slot)
{
    access_t *a = &s->last[slot];
    if (s->check_races && a->thread && a->thread - 1 != i && s->t[i].vc[a->thread - 1] < a->op + 1) {
        s->res->race = 1;
        return violation(s, i, k,
                         "slot %" PRIu64 " was last used by op %" PRIu64 " of thread %u, which need not have "
                         "happened yet (no WAIT orders them)",
                         slot, a->op, a->thread - 1);
    }
    a->thread = i + 1;
    a->op = k;
    return 0;
}

static int slot_ok(rstate_t *s, uint32_t i, size_t k, uint64_t slot)
{
    if (slot > s->m->h.slots)
        return violation(s, i, k, "slot %" PRIu64 " beyond header.slots %" PRIu64, slot, s->m->h.slots);
    if (slot > s->res->max_slot)
        s->res->max_slot = slot;
    return 0;
}

static int make(rstate_t *s, uint32_t i, size_t k, uint64_t slot, uint64_t bytes)
{
    if (slot_ok(s, i, k, slot) < 0)
        return -1;
    if (s->live[slot])
        return violation(s, i, k, "allocates into slot %" PRIu64 ", which is live", slot);
    if (touch(s, i, k, slot) < 0)
        return -1;
    s->live[slot] = 1;
    s->bytes[slot] = bytes;
    s->res->allocs++;
    if (++s->live_n > s->res->max_live)
        s->res->max_live = s->live_n;
    return 0;
}

static int use(rstate_t *s, uint32_t i, size_t k, uint64_t slot)
{
    if (slot_ok(s, i, k, slot) < 0)
        return -1;
    if (!s->live[slot])
        return violation(s, i, k, "names slot %" PRIu64 ", which is not live", slot);
    return touch(s, i, k, slot);
}

/* The size an op that ends or moves the block in `slot` gives for it must be the one it was made
 * with: the replayer counts live bytes by it. */
static int check_old_size(rstate_t *s, uint32_t i, size_t k, uint64_t slot)
{
    const mt_wl_rec_t *r = &s->m->s[i].ops[k];
    if (r->old_size != s->bytes[slot])
        return violation(s, i, k, "gives slot %" PRIu64 "'s block %" PRIu64 " bytes; it was made with %" PRIu64, slot,
                         r->old_size, s->bytes[slot]);
    return 0;
}

static void kill_slot(rstate_t *s, uint64_t slot)
{
    s->live[slot] = 0;
    s->live_n--;
}

/* Runs op k of thread i (its WAIT, if any, is satisfied). */
static int run_op(rstate_t *s, uint32_t i, size_t k)
{
    const mt_wl_rec_t *r = &s->m->s[i].ops[k];
    rthread_t *t = &s->t[i];
    const uint32_t n = s->m->nthreads;
    if (k == 0 && r->op != MT_WL_THREAD_START)
        return violation(s, i, k, "a stream must begin with thread_start");
    switch (r->op) {
    case MT_WL_THREAD_START:
        if (k != 0)
            return violation(s, i, k, "thread_start after the start of the stream");
        break;
    case MT_WL_THREAD_EXIT:
        if (k + 1 != s->m->s[i].n && !replay_allow_after_exit)
            return violation(s, i, k, "ops follow thread_exit");
        break;
    case MT_WL_WAIT: {
        const uint64_t *snap = &s->t[r->thread].snap[r->n * n];
        for (uint32_t j = 0; j < n; j++)
            if (snap[j] > t->vc[j])
                t->vc[j] = snap[j];
        break;
    }
    case MT_WL_MALLOC:
    case MT_WL_CALLOC:
    case MT_WL_MEMALIGN:
    case MT_WL_POSIX_MEMALIGN:
    case MT_WL_ALIGNED_ALLOC:
    case MT_WL_VALLOC:
    case MT_WL_PVALLOC:
        if (r->slot && make(s, i, k, r->slot, r->op == MT_WL_CALLOC ? r->count * r->size : r->size) < 0)
            return -1;
        break;
    case MT_WL_FREE:
        if (r->slot) {
            if (use(s, i, k, r->slot) < 0 || check_old_size(s, i, k, r->slot) < 0)
                return -1;
            kill_slot(s, r->slot);
        }
        break;
    case MT_WL_USABLE_SIZE:
        if (!r->slot)
            return violation(s, i, k, "malloc_usable_size names no slot");
        if (use(s, i, k, r->slot) < 0)
            return -1;
        break;
    case MT_WL_REALLOC:
    case MT_WL_REALLOCARRAY: {
        const uint64_t req = r->op == MT_WL_REALLOCARRAY ? r->count * r->size : r->size;
        if (r->slot && (use(s, i, k, r->slot) < 0 || check_old_size(s, i, k, r->slot) < 0))
            return -1;
        if (!r->slot2) {
            if (r->slot && req == 0)
                kill_slot(s, r->slot); /* realloc(p, 0) freed p */
            break;
        }
        if (r->slot2 == r->slot) {
            s->bytes[r->slot] = req; /* the block lives on in its slot */
            break;
        }
        if (r->slot)
            kill_slot(s, r->slot);
        if (make(s, i, k, r->slot2, req) < 0)
            return -1;
        if (r->slot)
            s->res->allocs--; /* a move, not a new block */
        break;
    }
    default:
        break;
    }
    t->pos = k + 1;
    t->vc[i] = k + 1;
    memcpy(&t->snap[(k + 1) * n], t->vc, n * sizeof *t->vc);
    s->res->ops++;
    return 0;
}

/* Can thread i run its next op? -1: its WAIT can never be met (a bad op). */
static int runnable(rstate_t *s, uint32_t i)
{
    const wl_stream_t *st = &s->m->s[i];
    const rthread_t *t = &s->t[i];
    if (t->pos >= st->n)
        return 0;
    const mt_wl_rec_t *r = &st->ops[t->pos];
    if (r->op != MT_WL_WAIT)
        return 1;
    if (r->thread >= s->m->nthreads)
        return violation(s, i, t->pos, "waits for thread %u of %u", r->thread, s->m->nthreads);
    if (r->n > s->m->s[r->thread].n)
        return violation(s, i, t->pos, "waits for op count %" PRIu64 ", thread %u has only %zu", r->n, r->thread,
                         s->m->s[r->thread].n);
    return s->t[r->thread].pos >= r->n;
}

/* Would op k of thread i find its slots as it needs them? (SCHED_CAREFUL) */
static int slots_ready(const rstate_t *s, uint32_t i, size_t k)
{
    const mt_wl_rec_t *r = &s->m->s[i].ops[k];
    const uint64_t top = s->nslots;
#define LIVE(x) ((x) < top && s->live[(x)])
    switch (r->op) {
    case MT_WL_MALLOC:
    case MT_WL_CALLOC:
    case MT_WL_MEMALIGN:
    case MT_WL_POSIX_MEMALIGN:
    case MT_WL_ALIGNED_ALLOC:
    case MT_WL_VALLOC:
    case MT_WL_PVALLOC:
        return !r->slot || !LIVE(r->slot);
    case MT_WL_FREE:
        return !r->slot || LIVE(r->slot);
    case MT_WL_USABLE_SIZE:
        return LIVE(r->slot);
    case MT_WL_REALLOC:
    case MT_WL_REALLOCARRAY:
        if (r->slot && !LIVE(r->slot))
            return 0;
        return !r->slot2 || r->slot2 == r->slot || !LIVE(r->slot2);
    default:
        return 1;
    }
#undef LIVE
}

static void state_init(rstate_t *s, const wl_mem_t *m, int check_races, replay_result_t *res)
{
    memset(res, 0, sizeof *res);
    res->ok = 1;
    memset(s, 0, sizeof *s);
    s->m = m;
    s->res = res;
    s->check_races = check_races;
    const uint32_t n = m->nthreads;
    s->t = xcalloc(n, sizeof *s->t);
    for (uint32_t i = 0; i < n; i++) {
        s->t[i].vc = xcalloc(n, sizeof(uint64_t));
        s->t[i].snap = xcalloc((m->s[i].n + 1) * (size_t)n, sizeof(uint64_t));
    }
    s->nslots = m->h.slots + 1;
    s->live = xcalloc(s->nslots, 1);
    s->bytes = xcalloc(s->nslots, sizeof *s->bytes);
    s->last = xcalloc(s->nslots, sizeof *s->last);
}

static void state_fini(rstate_t *s)
{
    s->res->live_end = s->live_n;
    for (uint32_t i = 0; i < s->m->nthreads; i++) {
        free(s->t[i].vc);
        free(s->t[i].snap);
    }
    free(s->t);
    free(s->live);
    free(s->bytes);
    free(s->last);
}

void replay(const wl_mem_t *m, sched_t sched, uint64_t seed, int check_races, replay_result_t *res)
{
    rstate_t s;
    state_init(&s, m, check_races, res);
    const uint32_t n = m->nthreads;
    rng_t rng = { seed };
    uint32_t *cand = xcalloc(n, sizeof *cand);
    for (;;) {
        uint32_t nc = 0, pending = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (s.t[i].pos < m->s[i].n)
                pending++;
            const int rr = runnable(&s, i);
            if (rr < 0)
                goto out;
            if (rr)
                cand[nc++] = i;
        }
        if (!pending)
            break;
        if (sched == SCHED_CAREFUL) {
            /* Only the threads whose next op finds its slots ready; if none, run the earliest (its
             * violation is the report). */
            uint32_t ready = 0;
            for (uint32_t c = 0; c < nc; c++)
                if (slots_ready(&s, cand[c], s.t[cand[c]].pos))
                    cand[ready++] = cand[c];
            if (ready)
                nc = ready;
        }
        if (!nc) {
            res->deadlock = 1;
            res->ok = 0;
            int at = snprintf(res->why, sizeof res->why, "deadlock:");
            for (uint32_t i = 0; i < n && at > 0 && (size_t)at < sizeof res->why; i++)
                if (s.t[i].pos < m->s[i].n) {
                    char b[256];
                    at += snprintf(res->why + at, sizeof res->why - (size_t)at, " thread %u at op %zu (%s);", i,
                                   s.t[i].pos, op_str(&m->s[i].ops[s.t[i].pos], b, sizeof b));
                }
            goto out;
        }
        uint32_t pick = cand[0];
        if (sched == SCHED_RANDOM) {
            pick = cand[rng_below(&rng, nc)];
        } else {
            for (uint32_t c = 1; c < nc; c++)
                if (m->s[cand[c]].ops[s.t[cand[c]].pos].time_ns < m->s[pick].ops[s.t[pick].pos].time_ns)
                    pick = cand[c];
        }
        /* Run the picked thread until it blocks or a random switch (keeps runs of ops together). */
        do {
            if (run_op(&s, pick, s.t[pick].pos) < 0)
                goto out;
        } while (sched == SCHED_RANDOM && rng_below(&rng, 4) && runnable(&s, pick) > 0);
    }
out:
    state_fini(&s);
    free(cand);
}

void replay_order(const wl_mem_t *m, const uint32_t *order, size_t norder, uint64_t *live_after, int strictness,
                  replay_result_t *res)
{
    rstate_t s;
    state_init(&s, m, strictness >= 2, res);
    for (size_t k = 0; k < norder; k++) {
        const uint32_t i = order[k] & ~ORDER_WAITS_ONLY;
        if (i >= m->nthreads) {
            snprintf(res->why, sizeof res->why, "step %zu names thread %u of %u", k, i, m->nthreads);
            res->ok = 0;
            goto out;
        }
        const wl_stream_t *st = &m->s[i];
        while (s.t[i].pos < st->n && st->ops[s.t[i].pos].op == MT_WL_WAIT) {
            if (strictness == 0) { /* WAITs not looked at */
                s.t[i].pos++;
                continue;
            }
            const int rr = runnable(&s, i);
            if (rr < 0)
                goto out;
            if (!rr && (order[k] & ORDER_WAITS_ONLY))
                break; /* the WAITs of a later record */
            if (!rr) {
                violation(&s, i, s.t[i].pos, "not met at step %zu of the given order", k);
                goto out;
            }
            if (run_op(&s, i, s.t[i].pos) < 0)
                goto out;
        }
        if (order[k] & ORDER_WAITS_ONLY) {
            if (live_after)
                live_after[k] = s.live_n;
            continue;
        }
        if (s.t[i].pos >= st->n) {
            snprintf(res->why, sizeof res->why, "step %zu: thread %u has no op left (%zu ops)", k, i, st->n);
            res->ok = 0;
            goto out;
        }
        if (run_op(&s, i, s.t[i].pos) < 0)
            goto out;
        if (live_after)
            live_after[k] = s.live_n;
    }
    for (uint32_t i = 0; i < m->nthreads; i++)
        if (s.t[i].pos < m->s[i].n) {
            violation(&s, i, s.t[i].pos, "left over after the %zu steps of the given order", norder);
            goto out;
        }
out:
    state_fini(&s);
}

static void fail_replay(const wl_mem_t *m, const char *how, const replay_result_t *res)
{
    /* Name the violation and show the streams when they are short. */
    static char text[16384];
    size_t at = 0;
    text[0] = 0;
    for (uint32_t i = 0; i < m->nthreads && at < sizeof text; i++) {
        if (m->s[i].n > 60)
            continue;
        char *st = stream_text(m, i);
        const int w = snprintf(text + at, sizeof text - at, "  thread %u:\n%s", i, st);
        free(st);
        if (w > 0)
            at += (size_t)w;
    }
    ck_abort_msg("replay (%s): %s\n%s", how, res->why, text);
}

void replay_ok(const wl_mem_t *m, sched_t sched, uint64_t seed, int check_races, replay_result_t *res)
{
    replay_result_t dummy;
    if (!res)
        res = &dummy;
    replay(m, sched, seed, check_races, res);
    if (res->ok)
        return;
    char how[128];
    snprintf(how, sizeof how, "%s%s",
             sched == SCHED_TIME     ? "time order"
             : sched == SCHED_RANDOM ? "random order"
                                     : "careful order",
             check_races ? ", all interleavings" : "");
    fail_replay(m, how, res);
}

void replay_order_ok(const wl_mem_t *m, const uint32_t *order, size_t norder, uint64_t *live_after, int strictness,
                     replay_result_t *res)
{
    replay_result_t dummy;
    if (!res)
        res = &dummy;
    replay_order(m, order, norder, live_after, strictness, res);
    if (!res->ok)
        fail_replay(m,
                    strictness >= 2   ? "given order, all interleavings"
                    : strictness == 1 ? "given order"
                                      : "given order, WAITs not looked at",
                    res);
}

/* ---- processes and files ------------------------------------------------------------------------ */

int run_cmd(const char *out, const char *err, char *const argv[])
{
    fflush(NULL);
    const pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (out) {
            const int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (fd < 0 || dup2(fd, 1) < 0)
                _exit(126);
        }
        if (err) {
            const int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (fd < 0 || dup2(fd, 2) < 0)
                _exit(126);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
