/* Caller trees: stacks folded into bottom-up and top-down trees past allocation wrappers (the rule
 * is in mtrace/callers.h). */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/callers.h"
#include "mtrace/ptr_map.h"
#include "mtrace/file_io.h"

/* ---- trees ------------------------------------------------------------------------------------- */

static uint64_t slot_hash(uint32_t parent, const char *function)
{
    return mt_ptr_hash((uint64_t)(uintptr_t)function ^ ((uint64_t)parent * 0x9e3779b97f4a7c15ull));
}

static int tree_init(mt_caller_tree_t *t)
{
    memset(t, 0, sizeof *t);
    t->cap = 256;
    t->cap_slot = 512;
    t->node = calloc(t->cap, sizeof *t->node);
    t->slot = calloc(t->cap_slot, sizeof *t->slot);
    if (!t->node || !t->slot)
        return -ENOMEM;
    t->n = 1; /* the root */
    return 0;
}

static void tree_fini(mt_caller_tree_t *t)
{
    free(t->node);
    free(t->slot);
    memset(t, 0, sizeof *t);
}

static int tree_rehash(mt_caller_tree_t *t)
{
    const uint32_t cap = t->cap_slot * 2;
    uint32_t *s = calloc(cap, sizeof *s);
    if (!s)
        return -ENOMEM;
    for (uint32_t i = 1; i < t->n; i++) {
        uint64_t j = slot_hash(t->node[i].parent, t->node[i].sym->function) & (cap - 1);
        while (s[j])
            j = (j + 1) & (cap - 1);
        s[j] = i;
    }
    free(t->slot);
    t->slot = s;
    t->cap_slot = cap;
    return 0;
}

/* The child of `parent` for the frame's function, made when missing: its index, 0 when out of memory. */
static uint32_t tree_child(mt_caller_tree_t *t, uint32_t parent, const mt_symbol_t *sym)
{
    uint64_t j = slot_hash(parent, sym->function) & (t->cap_slot - 1);
    for (; t->slot[j]; j = (j + 1) & (t->cap_slot - 1)) {
        const mt_caller_node_t *x = &t->node[t->slot[j]];
        if (x->parent == parent && x->sym->function == sym->function)
            return t->slot[j];
    }
    if (t->n == UINT32_MAX)
        return 0;
    if (t->n == t->cap) {
        mt_caller_node_t *n = realloc(t->node, (size_t)t->cap * 2 * sizeof *n);
        if (!n)
            return 0;
        t->node = n;
        t->cap *= 2;
    }
    const uint32_t i = t->n++;
    t->node[i] = (mt_caller_node_t){ .sym = sym, .parent = parent, .next_sibling = t->node[parent].first_child };
    t->node[parent].first_child = i;
    t->slot[j] = i;
    if ((uint64_t)t->n * 2 > t->cap_slot && tree_rehash(t) < 0)
        return 0;
    return i;
}

static void add_figures(mt_figures_t *to, const mt_figures_t *f)
{
    to->calls += f->calls;
    to->bytes += f->bytes;
    to->peak_bytes += f->peak_bytes;
    to->leaked_blocks += f->leaked_blocks;
    to->leaked_bytes += f->leaked_bytes;
}

/* Adds the path frame[from..to] (step +1 or -1, both ends included) under the root. */
static int tree_add(mt_caller_tree_t *t, const mt_frame_in_t *frames, const mt_stack_in_t *s, int64_t from, int64_t to,
                    int step)
{
    uint32_t at = 0;
    add_figures(&t->node[0].fig, &s->fig);
    for (int64_t k = from;; k += step) {
        at = tree_child(t, at, &frames[s->frame[k]].sym);
        if (!at)
            return -ENOMEM;
        add_figures(&t->node[at].fig, &s->fig);
        if (k == to)
            break;
    }
    return 0;
}

/* ---- wrappers ---------------------------------------------------------------------------------- */

/* Distinct calling functions, counted exactly up to MT_WRAPPER_MIN_CALLERS (what the rule asks). */
typedef struct caller_count {
    const char *seen[MT_WRAPPER_MIN_CALLERS - 1];
    uint32_t n;
} caller_count_t;

static void note_caller(caller_count_t *c, const char *caller)
{
    if (c->n >= MT_WRAPPER_MIN_CALLERS)
        return;
    for (uint32_t i = 0; i < c->n; i++)
        if (c->seen[i] == caller)
            return;
    if (c->n < MT_WRAPPER_MIN_CALLERS - 1)
        c->seen[c->n] = caller;
    c->n++;
}

typedef struct fn_stat {
    caller_count_t callers;
    int not_leaf, others;
    uint64_t calls;
} fn_stat_t;

static const char *matching_pattern(const mt_callers_opts_t *o, const char *function)
{
    for (size_t i = 0; o && i < o->nskip; i++)
        if (fnmatch(o->skip[i], function, 0) == 0)
            return o->skip[i];
    return NULL;
}

static uint32_t leaf_of(const mt_frame_in_t *frames, const mt_stack_in_t *s, const mt_ptr_map_t *skipped)
{
    uint32_t k = 0, wrapper = UINT32_MAX;
    while (k < s->nframes) {
        const mt_frame_in_t *f = &frames[s->frame[k]];
        if (f->allocator) {
            k++;
            continue;
        }
        if (!mt_ptr_map_find(skipped, (uint64_t)(uintptr_t)f->sym.function))
            break;
        wrapper = k++;
    }
    /* A stack cut short inside a wrapper keeps the wrapper: some frame is better than none. */
    if (k == s->nframes && wrapper != UINT32_MAX)
        return wrapper;
    /* Out-of-line code of a system header (std::vector's _M_realloc_insert) is no place a user can
     * change: the first frame of the user's code after it, if there is one. */
    for (uint32_t j = k; j < s->nframes && mt_source_is_system(frames[s->frame[j]].sym.file); j++) {
        if (j + 1 < s->nframes && !mt_source_is_system(frames[s->frame[j + 1]].sym.file) &&
            !frames[s->frame[j + 1]].allocator) {
            k = j + 1;
            break;
        }
    }
    return k;
}

static int add_skipped(mt_callers_t *c, mt_ptr_map_t *skipped, const char *function, const char *pattern,
                       const fn_stat_t *st)
{
    mt_skipped_frame_t *n = realloc(c->skipped, (c->nskipped + 1) * sizeof *n);
    if (!n)
        return -ENOMEM;
    c->skipped = n;
    c->skipped[c->nskipped++] = (mt_skipped_frame_t){ function, pattern, st ? st->calls : 0, st ? st->callers.n : 0 };
    return mt_ptr_map_put(skipped, (uint64_t)(uintptr_t)function, c->nskipped);
}

/* One round: the statistics of every function met as an allocating function or above one. */
static int wrapper_round(mt_callers_t *c, const mt_frame_in_t *frames, const mt_stack_in_t *stacks, size_t nstacks,
                         mt_ptr_map_t *skipped, const mt_callers_opts_t *o, int *found)
{
    mt_ptr_map_t idx;
    fn_stat_t *st = NULL;
    size_t nst = 0, cap = 0;
    int rc = mt_ptr_map_init(&idx);
    *found = 0;
    for (size_t i = 0; rc == 0 && i < nstacks; i++) {
        const mt_stack_in_t *s = &stacks[i];
        const uint32_t leaf = leaf_of(frames, s, skipped);
        for (uint32_t k = leaf; rc == 0 && k < s->nframes; k++) {
            const char *fn = frames[s->frame[k]].sym.function;
            mt_ptr_entry_t *e = mt_ptr_map_find(&idx, (uint64_t)(uintptr_t)fn);
            if (!e) {
                if (nst == cap) {
                    cap = cap ? cap * 2 : 256;
                    fn_stat_t *n = realloc(st, cap * sizeof *n);
                    if (!n) {
                        rc = -ENOMEM;
                        break;
                    }
                    st = n;
                }
                st[nst] = (fn_stat_t){ 0 };
                if ((rc = mt_ptr_map_put(&idx, (uint64_t)(uintptr_t)fn, nst)) < 0)
                    break;
                e = mt_ptr_map_find(&idx, (uint64_t)(uintptr_t)fn);
                nst++;
            }
            fn_stat_t *x = &st[e->value];
            /* A frame without a symbol is named by its address, not by its function: no wrapper. */
            if (k > leaf || frames[s->frame[k]].unnamed) {
                x->not_leaf = 1;
                continue;
            }
            x->others += s->others != 0;
            x->calls += s->fig.calls;
            if (k + 1 == s->nframes)
                continue; /* the stack ends here (cut at its depth): no caller to count */
            note_caller(&x->callers, frames[s->frame[k + 1]].sym.function);
        }
    }
    for (uint64_t i = 0; rc == 0 && i < idx.cap; i++) {
        if (!idx.v[i].key)
            continue;
        assert(idx.v[i].value < nst); /* every function in idx has its statistics in st */
        const fn_stat_t *x = &st[idx.v[i].value];
        const char *fn = (const char *)(uintptr_t)idx.v[i].key;
        if (x->not_leaf || x->others || x->callers.n < MT_WRAPPER_MIN_CALLERS || !x->calls || matching_pattern(o, fn))
            continue;
        if ((rc = add_skipped(c, skipped, fn, NULL, x)) == 0)
            *found = 1;
    }
    mt_ptr_map_fini(&idx);
    free(st);
    return rc;
}

/* The functions that --skip-frames patterns match, with their calls, in the order met. */
static int pattern_skips(mt_callers_t *c, const mt_frame_in_t *frames, const mt_stack_in_t *stacks, size_t nstacks,
                         mt_ptr_map_t *skipped, const mt_callers_opts_t *o)
{
    for (size_t i = 0; i < nstacks; i++) {
        const mt_stack_in_t *s = &stacks[i];
        for (uint32_t k = 0; k < s->nframes; k++) {
            const mt_frame_in_t *f = &frames[s->frame[k]];
            if (f->allocator)
                continue;
            const char *fn = f->sym.function;
            mt_ptr_entry_t *e = mt_ptr_map_find(skipped, (uint64_t)(uintptr_t)fn);
            const char *pattern = e ? NULL : matching_pattern(o, fn);
            if (!e && !pattern)
                break; /* only leading frames are skipped */
            if (!e) {
                if (add_skipped(c, skipped, fn, pattern, NULL) < 0)
                    return -ENOMEM;
                e = mt_ptr_map_find(skipped, (uint64_t)(uintptr_t)fn);
            }
            c->skipped[e->value - 1].calls += s->fig.calls;
        }
    }
    return 0;
}

/* ---- where the top-down tree starts ------------------------------------------------------------ */

/* What the whole stacks (those not cut at the frame limit) show of the entry: the frames above their
 * top (the C runtime's and the thread library's, a libc without symbols' included), and the tops
 * under the C runtime's process entry (main, with or without a symbol). */
enum { ENTRY_ABOVE_TOP = 1, ENTRY_MAIN = 2 };

static int is_entry(const mt_frame_in_t *f)
{
    return mt_symbol_is_entry_frame(&f->sym) || f->allocator;
}

/* The outermost frame the top-down tree shows, walking from frame `end` out: the one inside the run
 * of entry frames a stack begins with, outermost first (the C runtime's _start and
 * __libc_start_main, glibc's clone3 and start_thread, the loader calling constructors): main, a
 * thread's start routine, a constructor. An entry frame is one by name (mt_symbol_is_entry_frame) or
 * any frame of the C library or the loader (allocator frames by module: a C library without symbols
 * names none of its own); the outermost frame may also have no symbol (a stripped program's _start).
 * A stack without such a run starts at its last frame. */
static uint32_t top_from(const mt_frame_in_t *frames, const mt_stack_in_t *s, uint32_t leaf, uint32_t end, int entry)
{
    uint32_t k = end;
    for (; k > leaf; k--) {
        const mt_frame_in_t *f = &frames[s->frame[k]];
        if (is_entry(f))
            entry = 1;
        else if (!(f->unnamed && k == s->nframes - 1))
            break;
    }
    return entry ? k : s->nframes - 1;
}

/* The same for any stack. One cut at the frame limit ends with a marker ([truncated]); where the cut
 * fell inside the entry (the frame under the marker is an entry frame, by name or as whole stacks
 * have it above their top, or main), the stack lost only frames the tree leaves out, and starts at
 * main or the start routine as the whole stacks do: without this, every stack within a few frames
 * of the limit made a second root beside main, and main's figures were short of them (gdb under
 * --stacks 16: 1470 calls under "[truncated] -> __libc_start_main", 8778 under main). A stack cut in
 * the program's own frames (or in a C library function that called back into them, qsort's) keeps
 * the marker as its root. */
static uint32_t top_of(const mt_frame_in_t *frames, const mt_stack_in_t *s, uint32_t leaf, const mt_ptr_map_t *seen)
{
    const uint32_t last = s->nframes - 1;
    if (!frames[s->frame[last]].cut || last == 0 || last - 1 < leaf)
        return top_from(frames, s, leaf, last, 0);
    const mt_frame_in_t *under = &frames[s->frame[last - 1]];
    const mt_ptr_entry_t *e = mt_ptr_map_find(seen, (uint64_t)(uintptr_t)under->sym.function);
    if ((e && (e->value & ENTRY_MAIN)) || !strcmp(under->sym.function, "main"))
        return last - 1;
    if (mt_symbol_is_entry_frame(&under->sym) || (e && (e->value & ENTRY_ABOVE_TOP)))
        return top_from(frames, s, leaf, last - 1, 1);
    return last;
}

static int note_seen(mt_ptr_map_t *seen, const char *function, uint64_t what)
{
    mt_ptr_entry_t *e = mt_ptr_map_find(seen, (uint64_t)(uintptr_t)function);
    if (e) {
        e->value |= what;
        return 0;
    }
    return mt_ptr_map_put(seen, (uint64_t)(uintptr_t)function, what);
}

/* The entry as the whole stacks show it (ENTRY_*), by function. */
static int note_whole_stacks_entry(mt_ptr_map_t *seen, const mt_frame_in_t *frames, const mt_stack_in_t *stacks,
                                   size_t nstacks, const uint32_t *leaf)
{
    for (size_t i = 0; i < nstacks; i++) {
        const mt_stack_in_t *s = &stacks[i];
        if (leaf[i] >= s->nframes || frames[s->frame[s->nframes - 1]].cut)
            continue;
        const uint32_t top = top_from(frames, s, leaf[i], s->nframes - 1, 0);
        int process = 0;
        for (uint32_t k = top + 1; k < s->nframes; k++) {
            process |= mt_symbol_is_process_entry_frame(&frames[s->frame[k]].sym);
            if (note_seen(seen, frames[s->frame[k]].sym.function, ENTRY_ABOVE_TOP) < 0)
                return -ENOMEM;
        }
        if (process && note_seen(seen, frames[s->frame[top]].sym.function, ENTRY_MAIN) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* Notes the named functions of the frames above `top`, outermost first. */
static void note_entry_cut(mt_callers_t *c, const mt_frame_in_t *frames, const mt_stack_in_t *s, uint32_t top)
{
    if (top + 1 >= s->nframes)
        return;
    c->entry_cut_stacks++;
    for (uint32_t k = s->nframes; k-- > top + 1;) {
        const mt_frame_in_t *f = &frames[s->frame[k]];
        size_t i = 0;
        while (i < c->nentry_cut && c->entry_cut[i] != f->sym.function)
            i++;
        if (!f->unnamed && !f->cut && i == c->nentry_cut && i < MT_ENTRY_CUT_MAX)
            c->entry_cut[c->nentry_cut++] = f->sym.function;
    }
}

/* ---- building ---------------------------------------------------------------------------------- */

static int cmp_skipped(const void *a, const void *b)
{
    const mt_skipped_frame_t *x = a, *y = b;
    if (x->calls != y->calls)
        return x->calls > y->calls ? -1 : 1;
    return strcmp(x->function, y->function);
}

int mt_callers_build(mt_callers_t *c, const mt_frame_in_t *frames, const mt_stack_in_t *stacks, size_t nstacks,
                     const mt_callers_opts_t *o)
{
    memset(c, 0, sizeof *c);
    mt_ptr_map_t skipped;
    int rc = mt_ptr_map_init(&skipped);
    if (rc == 0)
        rc = tree_init(&c->bottom_up);
    if (rc == 0)
        rc = tree_init(&c->top_down);
    if (rc == 0)
        rc = pattern_skips(c, frames, stacks, nstacks, &skipped, o);
    for (int round = 0, found = 1; rc == 0 && found && !(o && o->no_auto) && round < MT_WRAPPER_ROUNDS; round++)
        rc = wrapper_round(c, frames, stacks, nstacks, &skipped, o, &found);
    if (rc == 0 &&
        (!(c->leaf = calloc(nstacks + 1, sizeof *c->leaf)) || !(c->top = calloc(nstacks + 1, sizeof *c->top))))
        rc = -ENOMEM;
    for (size_t i = 0; rc == 0 && i < nstacks; i++)
        c->leaf[i] = leaf_of(frames, &stacks[i], &skipped);
    mt_ptr_map_t seen;
    const int have_seen = rc == 0 && mt_ptr_map_init(&seen) == 0;
    if (rc == 0)
        rc = have_seen ? note_whole_stacks_entry(&seen, frames, stacks, nstacks, c->leaf) : -ENOMEM;
    for (size_t i = 0; rc == 0 && i < nstacks; i++) {
        const mt_stack_in_t *s = &stacks[i];
        const uint32_t leaf = c->leaf[i];
        c->top[i] = s->nframes ? s->nframes - 1 : 0;
        if (leaf >= s->nframes || (!s->fig.calls && !s->fig.leaked_blocks))
            continue;
        rc = tree_add(&c->bottom_up, frames, s, leaf, s->nframes - 1, 1);
        const uint32_t top = c->top[i] = top_of(frames, s, leaf, &seen);
        note_entry_cut(c, frames, s, top);
        if (rc == 0)
            rc = tree_add(&c->top_down, frames, s, top, leaf, -1);
    }
    /* The callers of each skipped wrapper: count them now that they are known. */
    for (size_t k = 0; rc == 0 && k < c->nskipped; k++) {
        if (c->skipped[k].callers)
            continue;
        caller_count_t n = { { 0 }, 0 };
        for (size_t i = 0; i < nstacks && n.n < MT_WRAPPER_MIN_CALLERS; i++) {
            const mt_stack_in_t *s = &stacks[i];
            for (uint32_t j = 0; j + 1 < s->nframes && j < c->leaf[i]; j++)
                if (frames[s->frame[j]].sym.function == c->skipped[k].function)
                    note_caller(&n, frames[s->frame[j + 1]].sym.function);
        }
        c->skipped[k].callers = n.n;
    }
    if (rc == 0 && c->nskipped)
        qsort(c->skipped, c->nskipped, sizeof *c->skipped, cmp_skipped);
    if (have_seen)
        mt_ptr_map_fini(&seen);
    mt_ptr_map_fini(&skipped);
    if (rc < 0)
        mt_callers_free(c);
    return rc;
}

void mt_callers_free(mt_callers_t *c)
{
    tree_fini(&c->bottom_up);
    tree_fini(&c->top_down);
    free(c->skipped);
    free(c->leaf);
    free(c->top);
    memset(c, 0, sizeof *c);
}

/* ---- output ------------------------------------------------------------------------------------ */

static int cmp_node(const void *a, const void *b, void *tree)
{
    const mt_caller_tree_t *t = tree;
    const mt_figures_t *x = &t->node[*(const uint32_t *)a].fig, *y = &t->node[*(const uint32_t *)b].fig;
    if (x->calls != y->calls)
        return x->calls > y->calls ? -1 : 1;
    return x->bytes > y->bytes ? -1 : x->bytes < y->bytes;
}

uint32_t *mt_caller_children(const mt_caller_tree_t *t, uint32_t node, uint32_t *n)
{
    *n = 0;
    uint32_t count = 0;
    for (uint32_t i = t->node[node].first_child; i; i = t->node[i].next_sibling)
        count++;
    uint32_t *v = count ? malloc(count * sizeof *v) : NULL;
    if (!v)
        return NULL;
    for (uint32_t i = t->node[node].first_child, k = 0; i; i = t->node[i].next_sibling)
        v[k++] = i;
    qsort_r(v, count, sizeof *v, cmp_node, (void *)t);
    *n = count;
    return v;
}

void mt_frame_where(const mt_symbol_t *sym, char *buf, size_t cap)
{
    if (sym->file)
        snprintf(buf, cap, "%s:%u", sym->file, sym->line);
    else
        snprintf(buf, cap, "%s", sym->module ? sym->module : "??");
}

const char *mt_human_bytes(char *buf, size_t cap, double v)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    unsigned u = 0;
    while (v >= 1024 && u + 1 < sizeof units / sizeof units[0])
        v /= 1024, u++;
    snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

static void print_node(const mt_caller_tree_t *t, FILE *f, const char *arrow, uint32_t node, unsigned level,
                       unsigned width, unsigned depth)
{
    const mt_caller_node_t *x = &t->node[node];
    char b[32], p[32], l[32], where[600];
    fprintf(f, "  %12" PRIu64 " %11s %11s %11s  %*s%s%s", x->fig.calls,
            mt_human_bytes(b, sizeof b, (double)x->fig.bytes), mt_human_bytes(p, sizeof p, (double)x->fig.peak_bytes),
            mt_human_bytes(l, sizeof l, (double)x->fig.leaked_bytes), (int)(2 * level), "", level ? arrow : "",
            level ? " " : "");
    mt_put_safe(f, x->sym->function, strlen(x->sym->function));
    mt_frame_where(x->sym, where, sizeof where);
    fputs("  ", f);
    mt_put_safe(f, where, strlen(where));
    fputc('\n', f);
    if (level + 1 >= depth)
        return;
    uint32_t n;
    uint32_t *kids = mt_caller_children(t, node, &n);
    for (uint32_t i = 0; i < n && i < width; i++)
        print_node(t, f, arrow, kids[i], level + 1, width, depth);
    if (n > width)
        fprintf(f, "  %12s %11s %11s %11s  %*s(%u more)\n", "", "", "", "", (int)(2 * level + 2), "", n - width);
    free(kids);
}

void mt_caller_tree_print(const mt_caller_tree_t *t, FILE *f, const char *arrow, unsigned roots, unsigned width,
                          unsigned depth)
{
    fprintf(f, "  %12s %11s %11s %11s  %s\n", "calls", "bytes", "at peak", "leaked", "function  where");
    uint32_t n;
    uint32_t *top = mt_caller_children(t, 0, &n);
    for (uint32_t i = 0; i < n && i < roots; i++)
        print_node(t, f, arrow, top[i], 0, width, depth);
    free(top);
}

void mt_symbol_json(mt_json_t *j, const mt_symbol_t *sym)
{
    mt_json_kv_cstr(j, "function", sym->function);
    if (sym->file)
        mt_json_kv_cstr(j, "file", sym->file);
    else {
        mt_json_key(j, "file");
        mt_json_null(j);
    }
    mt_json_kv_u64(j, "line", sym->line);
    mt_json_kv_cstr(j, "module", sym->module ? sym->module : "??");
}

static void json_node(const mt_caller_tree_t *t, mt_json_t *j, uint32_t node, const char *child_key, unsigned width,
                      unsigned level, unsigned depth)
{
    const mt_caller_node_t *x = &t->node[node];
    mt_json_begin_object(j);
    mt_symbol_json(j, x->sym);
    mt_json_kv_u64(j, "calls", x->fig.calls);
    mt_json_kv_u64(j, "bytes", x->fig.bytes);
    mt_json_kv_u64(j, "peak_bytes", x->fig.peak_bytes);
    mt_json_kv_u64(j, "leaked_blocks", x->fig.leaked_blocks);
    mt_json_kv_u64(j, "leaked_bytes", x->fig.leaked_bytes);
    if (level + 1 < depth) {
        uint32_t n;
        uint32_t *kids = mt_caller_children(t, node, &n);
        mt_json_key(j, child_key);
        mt_json_begin_array(j);
        for (uint32_t i = 0; i < n && (!width || i < width); i++)
            json_node(t, j, kids[i], child_key, width, level + 1, depth);
        mt_json_end_array(j);
        free(kids);
    }
    mt_json_end_object(j);
}

void mt_caller_tree_json(const mt_caller_tree_t *t, mt_json_t *j, const char *key, const char *child_key,
                         unsigned width, unsigned depth)
{
    mt_json_key(j, key);
    mt_json_begin_array(j);
    uint32_t n;
    uint32_t *top = mt_caller_children(t, 0, &n);
    for (uint32_t i = 0; i < n && (!width || i < width); i++)
        json_node(t, j, top[i], child_key, width, 0, depth);
    free(top);
    mt_json_end_array(j);
}

void mt_callers_print_skipped(const mt_callers_t *c, FILE *f)
{
    if (!c->nskipped) {
        fprintf(f, "wrappers skipped: none\n");
        return;
    }
    enum { SHOWN = 10 };
    fprintf(f, "wrappers skipped (their callers are shown in their place), most calls first:\n");
    for (size_t i = 0; i < c->nskipped && i < SHOWN; i++) {
        const mt_skipped_frame_t *s = &c->skipped[i];
        fputs("  ", f);
        mt_put_safe(f, s->function, strlen(s->function));
        fprintf(f, "  %" PRIu64 " calls from %u%s function%s: ", s->calls, s->callers,
                s->callers >= MT_WRAPPER_MIN_CALLERS ? " or more" : "", s->callers == 1 ? "" : "s");
        if (s->pattern) {
            fputs("matches --skip-frames '", f);
            mt_put_safe(f, s->pattern, strlen(s->pattern));
            fputs("'\n", f);
        } else {
            fputs("detected (every record through it is an allocation made in it)\n", f);
        }
    }
    if (c->nskipped > SHOWN)
        fprintf(f, "  and %zu more (all of them in the JSON's skipped_frames)\n", c->nskipped - SHOWN);
}

void mt_callers_print_entry_cut(const mt_callers_t *c, FILE *f)
{
    if (!c->entry_cut_stacks)
        return;
    fprintf(f, "  (from main, the threads' start routines and constructors: left out above them in %" PRIu64 " stacks:",
            c->entry_cut_stacks);
    for (size_t i = 0; i < c->nentry_cut; i++) {
        fputs(i ? ", " : " ", f);
        mt_put_safe(f, c->entry_cut[i], strlen(c->entry_cut[i]));
    }
    fputs(")\n", f);
}

void mt_callers_json_entry_cut(const mt_callers_t *c, mt_json_t *j)
{
    mt_json_key(j, "top_down_left_out");
    mt_json_begin_object(j);
    mt_json_kv_u64(j, "stacks", c->entry_cut_stacks);
    mt_json_key(j, "functions");
    mt_json_begin_array(j);
    for (size_t i = 0; i < c->nentry_cut; i++)
        mt_json_str(j, c->entry_cut[i], strlen(c->entry_cut[i]));
    mt_json_end_array(j);
    mt_json_end_object(j);
}

void mt_callers_json_skipped(const mt_callers_t *c, mt_json_t *j)
{
    mt_json_key(j, "skipped_frames");
    mt_json_begin_array(j);
    for (size_t i = 0; i < c->nskipped; i++) {
        const mt_skipped_frame_t *s = &c->skipped[i];
        mt_json_begin_object(j);
        mt_json_kv_cstr(j, "function", s->function);
        mt_json_kv_cstr(j, "reason", s->pattern ? "pattern" : "detected");
        if (s->pattern)
            mt_json_kv_cstr(j, "pattern", s->pattern);
        mt_json_kv_u64(j, "calls", s->calls);
        mt_json_end_object(j);
    }
    mt_json_end_array(j);
}
