/* Leaks by full stack: collected from the report's symbolized stacks, classified by when their blocks
 * were made, filtered by the suppressions, and written as text and JSON. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/leaks.h"
#include "mtrace/file_io.h"

static const char *const kind_names[MT_LEAK_KINDS] = { "at exit", "growing", "at stop" };

const char *mt_leak_kind_name(mt_leak_kind_t k)
{
    return k < MT_LEAK_KINDS ? kind_names[k] : "?";
}

mt_leak_kind_t mt_leak_kind(unsigned mask, int complete)
{
    if (!complete)
        return MT_LEAK_AT_STOP;
    return (mask & 8) && __builtin_popcount(mask & 15) >= MT_LEAK_GROWING_QUARTERS ? MT_LEAK_GROWING : MT_LEAK_AT_EXIT;
}

unsigned mt_leak_quarter(uint64_t t, uint64_t first, uint64_t last)
{
    if (last <= first || t <= first)
        return 0;
    if (t >= last)
        return 3;
    return (unsigned)((unsigned __int128)(t - first) * 4 / (last - first + 1));
}

static int cmp_leak(const void *pa, const void *pb)
{
    const mt_leak_t *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    if (a->blocks != b->blocks)
        return a->blocks > b->blocks ? -1 : 1;
    return 0;
}

static int cmp_ptr(const void *a, const void *b)
{
    return (uintptr_t)a < (uintptr_t)b ? -1 : (uintptr_t)a > (uintptr_t)b;
}

/* Orders stacks by what they read as: function, file and line of each frame (strings are interned:
 * equal strings are one pointer). Stacks through different return addresses of the same lines read
 * alike and are one entry. */
static int cmp_leak_frames(const void *pa, const void *pb, void *arg)
{
    const mt_leak_t *a = pa, *b = pb;
    const mt_frame_in_t *frames = arg;
    if (a->nframes != b->nframes)
        return a->nframes < b->nframes ? -1 : 1;
    for (uint32_t k = 0; k < a->nframes; k++) {
        const mt_symbol_t *x = &frames[a->frame[k]].sym, *y = &frames[b->frame[k]].sym;
        int c = cmp_ptr(x->function, y->function);
        if (!c)
            c = cmp_ptr(x->file, y->file);
        if (!c && x->line != y->line)
            c = x->line < y->line ? -1 : 1;
        if (c)
            return c;
    }
    return 0;
}

/* Merges the entries that read alike into one (their blocks, bytes and quarters added up), then
 * gives each its kind. */
static void merge_alike(mt_leaks_t *l, int complete)
{
    if (!l->n)
        return;
    qsort_r(l->v, l->n, sizeof *l->v, cmp_leak_frames, (void *)l->frames);
    size_t out = 0;
    for (size_t i = 1; i < l->n; i++) {
        mt_leak_t *m = &l->v[out];
        if (cmp_leak_frames(m, &l->v[i], (void *)l->frames) == 0) {
            m->blocks += l->v[i].blocks;
            m->bytes += l->v[i].bytes;
            m->quarters |= l->v[i].quarters;
        } else {
            l->v[++out] = l->v[i];
        }
    }
    l->n = out + 1;
    memset(l->kind_blocks, 0, sizeof l->kind_blocks);
    memset(l->kind_bytes, 0, sizeof l->kind_bytes);
    for (size_t i = 0; i < l->n; i++) {
        mt_leak_t *m = &l->v[i];
        m->kind = mt_leak_kind(m->quarters, complete);
        l->kind_blocks[m->kind] += m->blocks;
        l->kind_bytes[m->kind] += m->bytes;
    }
}

/* The suppression pattern that matches a frame of the stack, or NULL. */
static const char *suppressed_by(const mt_frame_in_t *frames, const mt_stack_in_t *s, const mt_suppressions_t *supp)
{
    for (uint32_t k = 0; supp && k < s->nframes; k++) {
        const char *p = mt_suppressions_match(supp, frames[s->frame[k]].sym.function);
        if (p)
            return p;
    }
    return NULL;
}

int mt_leaks_collect(mt_leaks_t *l, const mt_frame_in_t *frames, const mt_stack_in_t *in, const uint8_t *quarters,
                     size_t n, const mt_suppressions_t *s, int complete)
{
    mt_leaks_t keep = { .suppress_file = l->suppress_file, .npatterns = s ? s->n : 0, .frames = frames };
    *l = keep;
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += in[i].fig.leaked_blocks != 0;
    l->v = malloc((count + 1) * sizeof *l->v);
    if (!l->v)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const mt_stack_in_t *st = &in[i];
        if (!st->fig.leaked_blocks)
            continue;
        if (suppressed_by(frames, st, s)) {
            l->suppressed_blocks += st->fig.leaked_blocks;
            l->suppressed_bytes += st->fig.leaked_bytes;
            l->suppressed_stacks++;
            continue;
        }
        uint32_t skip = 0; /* the allocator's own frames (malloc, operator new ...) tell nothing */
        while (skip + 1 < st->nframes && frames[st->frame[skip]].allocator)
            skip++;
        l->v[l->n++] = (mt_leak_t){ .frame = st->frame + skip,
                                    .nframes = st->nframes - skip,
                                    .blocks = st->fig.leaked_blocks,
                                    .bytes = st->fig.leaked_bytes,
                                    .quarters = quarters[i] };
    }
    merge_alike(l, complete);
    if (l->n)
        qsort(l->v, l->n, sizeof *l->v, cmp_leak);
    return 0;
}

void mt_leaks_free(mt_leaks_t *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

const char *mt_leak_kind_why(mt_leak_kind_t k)
{
    static const char *const why[MT_LEAK_KINDS] = {
        "made once and held to the end (the program exited normally, or exec'd)",
        "still made in the last quarter of the run and in at least 3 of its 4 quarters",
        "live when the trace stopped (it did not end: killed or crashed)",
    };
    return k < MT_LEAK_KINDS ? why[k] : "?";
}

void mt_leaks_print_kinds(const mt_leaks_t *l, FILE *f)
{
    char a[32];
    for (int k = 0; k < MT_LEAK_KINDS; k++)
        if (l->kind_blocks[k])
            fprintf(f, "  %-12s %s in %" PRIu64 " blocks: %s\n", kind_names[k],
                    mt_human_bytes(a, sizeof a, (double)l->kind_bytes[k]), l->kind_blocks[k],
                    mt_leak_kind_why((mt_leak_kind_t)k));
    if (l->suppress_file) {
        fprintf(f, "  %-12s %s in %" PRIu64 " blocks from %" PRIu64 " stacks, by %zu patterns of ", "suppressed",
                mt_human_bytes(a, sizeof a, (double)l->suppressed_bytes), l->suppressed_blocks, l->suppressed_stacks,
                l->npatterns);
        mt_put_safe(f, l->suppress_file, strlen(l->suppress_file));
        fputc('\n', f);
    }
}

void mt_leaks_print_stacks(const mt_leaks_t *l, FILE *f, unsigned top)
{
    char a[32];
    if (!l->n)
        return;
    fprintf(f, "\nleaks by stack (largest first)\n");
    for (size_t i = 0; i < l->n && i < top; i++) {
        const mt_leak_t *x = &l->v[i];
        fprintf(f, "  %s in %" PRIu64 " blocks, %s\n", mt_human_bytes(a, sizeof a, (double)x->bytes), x->blocks,
                kind_names[x->kind]);
        for (uint32_t k = 0; k < x->nframes; k++) {
            const mt_symbol_t *y = &l->frames[x->frame[k]].sym;
            char where[600];
            mt_frame_where(y, where, sizeof where);
            fputs("      ", f);
            mt_put_safe(f, y->function, strlen(y->function));
            fputs("  ", f);
            mt_put_safe(f, where, strlen(where));
            fputc('\n', f);
        }
    }
    if (l->n > top)
        fprintf(f, "  (%zu more stacks)\n", l->n - top);
}

static void json_figure(mt_json_t *j, const char *key, uint64_t blocks, uint64_t bytes)
{
    mt_json_key(j, key);
    mt_json_begin_object(j);
    mt_json_kv_u64(j, "blocks", blocks);
    mt_json_kv_u64(j, "bytes", bytes);
    mt_json_end_object(j);
}

void mt_leaks_json(const mt_leaks_t *l, mt_json_t *j, unsigned top)
{
    static const char *const keys[MT_LEAK_KINDS] = { "at_exit", "growing", "at_stop" };
    mt_json_key(j, "leak_kinds");
    mt_json_begin_object(j);
    for (int k = 0; k < MT_LEAK_KINDS; k++)
        json_figure(j, keys[k], l->kind_blocks[k], l->kind_bytes[k]);
    mt_json_end_object(j);
    mt_json_key(j, "suppressed_leaks");
    mt_json_begin_object(j);
    if (l->suppress_file)
        mt_json_kv_cstr(j, "file", l->suppress_file);
    mt_json_kv_u64(j, "patterns", l->npatterns);
    mt_json_kv_u64(j, "blocks", l->suppressed_blocks);
    mt_json_kv_u64(j, "bytes", l->suppressed_bytes);
    mt_json_kv_u64(j, "stacks", l->suppressed_stacks);
    mt_json_end_object(j);
    mt_json_key(j, "leaks");
    mt_json_begin_array(j);
    for (size_t i = 0; i < l->n && (!top || i < top); i++) {
        const mt_leak_t *x = &l->v[i];
        mt_json_begin_object(j);
        mt_json_kv_u64(j, "blocks", x->blocks);
        mt_json_kv_u64(j, "bytes", x->bytes);
        mt_json_kv_cstr(j, "kind", keys[x->kind]);
        mt_json_key(j, "quarters");
        mt_json_begin_array(j);
        for (unsigned q = 0; q < 4; q++)
            mt_json_bool(j, (x->quarters >> q) & 1);
        mt_json_end_array(j);
        mt_json_key(j, "frames");
        mt_json_begin_array(j);
        for (uint32_t k = 0; k < x->nframes; k++) {
            mt_json_begin_object(j);
            mt_symbol_json(j, &l->frames[x->frame[k]].sym);
            mt_json_end_object(j);
        }
        mt_json_end_array(j);
        mt_json_end_object(j);
    }
    mt_json_end_array(j);
}
