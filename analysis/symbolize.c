/* Offline symbolization with elfutils' libdwfl.
 *
 * Every recorded module becomes an entry with its load bias, its PT_LOAD segments and its build-id.
 * Modules that the trace repeats in later snapshots (same path, bias, build-id and segments) are one
 * entry whose generation is the latest seen. Addresses are looked up in a sorted list of disjoint
 * ranges painted from the segments in order of generation, so that a later generation owns the
 * addresses it shares with an earlier one.
 *
 * Each module's object file is opened lazily, the first time one of its addresses is symbolized, in
 * a Dwfl of its own (one module per Dwfl: modules of different generations may overlap, which one
 * address space cannot hold). The file is the recorded path (the `exe` argument for the main
 * program); when it is missing or its build-id is not the recorded one, the build-id's file under
 * /usr/lib/debug/.build-id is tried; failing both, the module is kept by name only and its addresses
 * symbolize to module+offset. Separate debug info for a matching file is found by libdwfl's standard
 * search (build-id, .gnu_debuglink, the default debuginfo path).
 *
 * Names come from the symbol table and are demangled with libiberty's cplus_demangle (C++ and both
 * Rust manglings, legacy and v0; libstdc++'s __cxa_demangle knows C++ only and would pull the C++
 * runtime into every C tool). A name the demangler does not take (a C name) stays as it is.
 *
 * File and line: the line table's entry for the address, except where that entry is in a system
 * header (code of /usr/include/c++ and the like inlined into the program): then the call site of the
 * innermost inlined call whose caller is outside the system headers, read from the DWARF scopes at
 * the address, so that a template's frame names the user's line that instantiated it.
 */
#define _GNU_SOURCE
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <errno.h>
#include <inttypes.h>
#include <libiberty/demangle.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtrace/symbolize.h"

#define UNKNOWN "??"
#define DEBUG_BUILD_ID_DIR "/usr/lib/debug/.build-id"

enum { MOD_UNOPENED, MOD_OPEN, MOD_NAME_ONLY };

typedef struct sym_module {
    char *path;       /* file to open; "" when there is none */
    const char *name; /* interned base name */
    uint64_t bias;
    uint64_t generation;
    uint64_t seq; /* order of addition: breaks ties between equal generations */
    uint32_t nseg;
    struct {
        uint64_t vaddr, memsz, offset;
    } seg[MT_MAX_SEGMENTS];
    uint32_t build_id_len;
    uint8_t build_id[64];
    int state;
    Dwfl *dwfl;
    Dwfl_Module *mod;
    struct msym *syms; /* the module's code symbols by address, read once (NULL: not read yet) */
    size_t nsyms;
    int syms_failed;  /* no table: dwfl_module_addrinfo does the lookups */
    uint64_t *starts; /* the functions' starts at run time from .eh_frame_hdr, sorted */
    size_t nstarts;
    int starts_read;
    struct cu_range *cus; /* the compilation units' address ranges, sorted (cu_at) */
    size_t ncus;
    int cus_read;
} sym_module_t;

/* A compilation unit's address range at run time. */
struct cu_range {
    uint64_t lo, hi;
    Dwarf_Die cu;
    Dwarf_Addr bias;
};

/* One code symbol of a module: [lo, hi) at run time; hi == lo for a symbol without a size, which
 * then reaches up to the next symbol. */
struct msym {
    uint64_t lo, hi;
    const char *name; /* in libdw's copy of the string table: lives as long as the module's Dwfl */
    int rank;         /* between symbols at one address: global 2, weak 1, local 0 (+4 with a size) */
};

typedef struct range {
    uint64_t lo, hi; /* [lo, hi) */
    uint32_t module;
} range_t;

typedef struct cache_slot {
    uint64_t key;   /* return address */
    uint32_t index; /* 1 + index into syms; 0: empty */
} cache_slot_t;

struct mt_symbolizer {
    char *exe;
    char *debuginfo_path; /* NULL: libdwfl's default */
    Dwfl_Callbacks callbacks;

    sym_module_t *mods;
    size_t nmods, capmods;
    uint64_t seq;

    range_t *ranges; /* disjoint, sorted by lo; rebuilt when modules were added */
    size_t nranges;
    int ranges_dirty;

    char **strs; /* interned strings: open addressing, power-of-two capacity */
    size_t nstrs, capstrs;

    cache_slot_t *cache;
    size_t ncache, capcache;
    mt_symbol_t *syms;
    size_t nsyms, capsyms;
};

/* ---- small helpers ----------------------------------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 8;
    while (n < need)
        n *= 2;
    void *p = realloc(*v, n * elem);
    if (!p)
        return -ENOMEM;
    *v = p;
    *cap = n;
    return 0;
}

/* The interned copy of s[0..n) (owned by the symbolizer), or NULL when out of memory. */
static const char *intern_n(mt_symbolizer_t *s, const char *str, size_t n)
{
    if (s->nstrs * 2 >= s->capstrs) {
        const size_t cap = s->capstrs ? s->capstrs * 2 : 256;
        char **t = calloc(cap, sizeof *t);
        if (!t)
            return NULL;
        for (size_t i = 0; i < s->capstrs; i++) {
            if (!s->strs[i])
                continue;
            size_t j = hash_bytes(s->strs[i], strlen(s->strs[i])) & (cap - 1);
            while (t[j])
                j = (j + 1) & (cap - 1);
            t[j] = s->strs[i];
        }
        free(s->strs);
        s->strs = t;
        s->capstrs = cap;
    }
    size_t j = hash_bytes(str, n) & (s->capstrs - 1);
    for (; s->strs[j]; j = (j + 1) & (s->capstrs - 1))
        if (!strncmp(s->strs[j], str, n) && s->strs[j][n] == 0)
            return s->strs[j];
    char *copy = malloc(n + 1);
    if (!copy)
        return NULL;
    memcpy(copy, str, n);
    copy[n] = 0;
    s->strs[j] = copy;
    s->nstrs++;
    return copy;
}

static const char *intern(mt_symbolizer_t *s, const char *str)
{
    return intern_n(s, str, strlen(str));
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

/* ---- open and close ---------------------------------------------------------------------------- */

int mt_symbolizer_open(mt_symbolizer_t **out, const char *exe, mt_error_t *err)
{
    *out = NULL;
    mt_symbolizer_t *s = calloc(1, sizeof *s);
    if (!s || !(s->exe = strdup(exe ? exe : ""))) {
        free(s);
        if (err)
            snprintf(err->msg, sizeof err->msg, "symbolizer: out of memory");
        return -ENOMEM;
    }
    s->callbacks.find_elf = dwfl_build_id_find_elf;
    s->callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
    s->callbacks.section_address = dwfl_offline_section_address;
    s->callbacks.debuginfo_path = &s->debuginfo_path;
    if (!intern(s, UNKNOWN)) {
        mt_symbolizer_close(s);
        if (err)
            snprintf(err->msg, sizeof err->msg, "symbolizer: out of memory");
        return -ENOMEM;
    }
    *out = s;
    return 0;
}

void mt_symbolizer_close(mt_symbolizer_t *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nmods; i++) {
        if (s->mods[i].dwfl)
            dwfl_end(s->mods[i].dwfl);
        free(s->mods[i].syms);
        free(s->mods[i].starts);
        free(s->mods[i].cus);
        free(s->mods[i].path);
    }
    free(s->mods);
    free(s->ranges);
    for (size_t i = 0; i < s->capstrs; i++)
        free(s->strs[i]);
    free(s->strs);
    free(s->cache);
    free(s->syms);
    free(s->exe);
    free(s);
}

/* ---- modules ----------------------------------------------------------------------------------- */

static int same_module(const sym_module_t *a, const mt_module_def_t *m, const char *path)
{
    if (a->bias != m->base || a->nseg != m->nseg || a->build_id_len != m->build_id_len || strcmp(a->path, path) != 0 ||
        memcmp(a->build_id, m->build_id, m->build_id_len) != 0)
        return 0;
    for (uint32_t i = 0; i < m->nseg; i++)
        if (a->seg[i].vaddr != m->seg[i].vaddr || a->seg[i].memsz != m->seg[i].memsz ||
            a->seg[i].offset != m->seg[i].offset)
            return 0;
    return 1;
}

int mt_symbolizer_add_module(mt_symbolizer_t *s, const mt_module_def_t *m)
{
    if (!s || !m || m->nseg > MT_MAX_SEGMENTS || m->build_id_len > sizeof m->build_id)
        return -EINVAL;
    char *path;
    if (m->name_len == 0)
        path = strdup(s->exe);
    else
        path = strndup(m->name, m->name_len);
    if (!path)
        return -ENOMEM;
    /* A name with a NUL inside is cut there; strndup already did. */
    for (size_t i = 0; i < s->nmods; i++) {
        if (same_module(&s->mods[i], m, path)) {
            if (m->generation >= s->mods[i].generation) {
                s->mods[i].generation = m->generation;
                s->mods[i].seq = ++s->seq;
                s->ranges_dirty = 1;
            }
            free(path);
            return 0;
        }
    }
    if (grow((void **)&s->mods, &s->capmods, s->nmods + 1, sizeof *s->mods) < 0) {
        free(path);
        return -ENOMEM;
    }
    sym_module_t *e = &s->mods[s->nmods];
    memset(e, 0, sizeof *e);
    const char *name = intern(s, path[0] ? base_name(path) : UNKNOWN);
    if (!name) {
        free(path);
        return -ENOMEM;
    }
    e->path = path;
    e->name = name;
    e->bias = m->base;
    e->generation = m->generation;
    e->seq = ++s->seq;
    e->nseg = m->nseg;
    for (uint32_t i = 0; i < m->nseg; i++) {
        e->seg[i].vaddr = m->seg[i].vaddr;
        e->seg[i].memsz = m->seg[i].memsz;
        e->seg[i].offset = m->seg[i].offset;
    }
    e->build_id_len = m->build_id_len;
    memcpy(e->build_id, m->build_id, m->build_id_len);
    e->state = MOD_UNOPENED;
    s->nmods++;
    s->ranges_dirty = 1;
    return 0;
}

typedef struct paint {
    uint64_t lo, hi, generation, seq;
    uint32_t module;
} paint_t;

static int cmp_paint(const void *a, const void *b)
{
    const paint_t *x = a, *y = b;
    if (x->generation != y->generation)
        return x->generation < y->generation ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Paints [p->lo, p->hi) over the disjoint sorted ranges in `out` (capacity checked by the caller:
 * one paint adds at most two ranges). */
static void paint_range(range_t *out, size_t *n, const paint_t *p)
{
    size_t i = 0, w;
    /* ranges entirely before */
    while (i < *n && out[i].hi <= p->lo)
        i++;
    const size_t first = i;
    range_t left = { 0, 0, 0 }, right = { 0, 0, 0 };
    int has_left = 0, has_right = 0;
    size_t j = i;
    while (j < *n && out[j].lo < p->hi) {
        if (out[j].lo < p->lo) {
            left = out[j];
            left.hi = p->lo;
            has_left = 1;
        }
        if (out[j].hi > p->hi) {
            right = out[j];
            right.lo = p->hi;
            has_right = 1;
        }
        j++;
    }
    /* out[first..j) are replaced by left?, new, right? */
    const size_t add = (size_t)has_left + 1 + (size_t)has_right, removed = j - first;
    memmove(out + first + add, out + j, (*n - j) * sizeof *out);
    w = first;
    if (has_left)
        out[w++] = left;
    out[w++] = (range_t){ p->lo, p->hi, p->module };
    if (has_right)
        out[w++] = right;
    *n = *n - removed + add;
}

static int rebuild_ranges(mt_symbolizer_t *s)
{
    size_t total = 0;
    for (size_t i = 0; i < s->nmods; i++)
        total += s->mods[i].nseg;
    paint_t *p = malloc((total ? total : 1) * sizeof *p);
    range_t *r = malloc((2 * total + 1) * sizeof *r);
    if (!p || !r) {
        free(p);
        free(r);
        return -ENOMEM;
    }
    size_t np = 0;
    for (size_t i = 0; i < s->nmods; i++) {
        const sym_module_t *m = &s->mods[i];
        for (uint32_t k = 0; k < m->nseg; k++) {
            const uint64_t lo = m->bias + m->seg[k].vaddr, hi = lo + m->seg[k].memsz;
            if (m->seg[k].memsz == 0 || hi <= lo)
                continue; /* empty or wrapping: garbage, ignore */
            p[np++] = (paint_t){ lo, hi, m->generation, m->seq, (uint32_t)i };
        }
    }
    qsort(p, np, sizeof *p, cmp_paint);
    size_t nr = 0;
    for (size_t i = 0; i < np; i++)
        paint_range(r, &nr, &p[i]);
    free(p);
    free(s->ranges);
    s->ranges = r;
    s->nranges = nr;
    s->ranges_dirty = 0;
    /* Addresses may now belong elsewhere: forget the cached results (their strings stay). */
    if (s->cache)
        memset(s->cache, 0, s->capcache * sizeof *s->cache);
    s->ncache = 0;
    s->nsyms = 0;
    return 0;
}

static sym_module_t *find_module(mt_symbolizer_t *s, uint64_t pc)
{
    size_t lo = 0, hi = s->nranges;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (s->ranges[mid].hi <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < s->nranges && s->ranges[lo].lo <= pc && pc < s->ranges[lo].hi)
        return &s->mods[s->ranges[lo].module];
    return NULL;
}

/* Reports `file` as the module's object in a Dwfl of its own; keeps it when its build-id is the
 * recorded one (or none was recorded). 0 or -1. */
static int try_file(mt_symbolizer_t *s, sym_module_t *m, const char *file)
{
    Dwfl *d = dwfl_begin(&s->callbacks);
    if (!d)
        return -1;
    dwfl_report_begin(d);
    /* add_p_vaddr: the recorded base is the load bias (runtime = base + p_vaddr) whatever the first
     * segment's p_vaddr; libdwfl ignores the base of an ET_EXEC file. */
    Dwfl_Module *mod = dwfl_report_elf(d, m->name, file, -1, m->bias, true);
    dwfl_report_end(d, NULL, NULL);
    if (!mod) {
        dwfl_end(d);
        return -1;
    }
    if (m->build_id_len > 0) {
        const unsigned char *bits = NULL;
        GElf_Addr vaddr = 0;
        const int n = dwfl_module_build_id(mod, &bits, &vaddr);
        if (n != (int)m->build_id_len || !bits || memcmp(bits, m->build_id, m->build_id_len) != 0) {
            dwfl_end(d);
            return -1;
        }
    }
    m->dwfl = d;
    m->mod = mod;
    return 0;
}

static void open_module(mt_symbolizer_t *s, sym_module_t *m)
{
    m->state = MOD_NAME_ONLY;
    /* Only absolute paths, the main program's included: a name like linux-vdso.so.1 is no file, and
     * a relative name (which a forged trace could give the program too) must not be looked up in
     * the analyst's current directory. */
    if (m->path[0] == '/' && try_file(s, m, m->path) == 0) {
        m->state = MOD_OPEN;
        return;
    }
    if (m->build_id_len >= 2) {
        char debug[sizeof DEBUG_BUILD_ID_DIR + 4 + 2 * 64 + 8], *q = debug;
        q += sprintf(q, "%s/%02x/", DEBUG_BUILD_ID_DIR, m->build_id[0]);
        for (uint32_t i = 1; i < m->build_id_len; i++)
            q += sprintf(q, "%02x", m->build_id[i]);
        strcpy(q, ".debug");
        if (try_file(s, m, debug) == 0)
            m->state = MOD_OPEN;
    }
}

/* ---- lookups ----------------------------------------------------------------------------------- */

/* The interned source path: a relative name from the line table joined to the CU's compilation
 * directory ("./" dropped), an absolute one as it is. */
static const char *source_path(mt_symbolizer_t *s, const char *file, const char *comp_dir)
{
    if (file[0] == '/' || !comp_dir || comp_dir[0] != '/')
        return intern(s, file);
    while (file[0] == '.' && file[1] == '/')
        file += 2;
    char *joined = NULL;
    if (asprintf(&joined, "%s%s%s", comp_dir, comp_dir[strlen(comp_dir) - 1] == '/' ? "" : "/", file) < 0)
        return intern(s, file);
    const char *r = intern(s, joined);
    free(joined);
    return r;
}

int mt_source_is_system(const char *file)
{
    static const char *const dirs[] = { "/usr/include/", "/usr/local/include/", "/usr/lib/gcc/", "/usr/lib/llvm-",
                                        NULL };
    if (!file)
        return 0;
    for (const char *const *d = dirs; *d; d++)
        if (!strncmp(file, *d, strlen(*d)))
            return 1;
    return 0;
}

/* The interned demangled form of a symbol name, or NULL when it is no C++ or Rust name. DMGL_AUTO:
 * Rust first (its legacy names are also valid C++ names), then C++; DMGL_RUST alone would refuse C++. */
static const char *demangled(mt_symbolizer_t *s, const char *name, size_t n)
{
    if (n < 3 || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
        return NULL;
    char *raw = strndup(name, n);
    if (!raw)
        return NULL;
    char *d = cplus_demangle(raw, DMGL_AUTO | DMGL_PARAMS | DMGL_ANSI);
    free(raw);
    if (!d)
        return NULL;
    const char *r = intern(s, d);
    free(d);
    return r;
}

/* The inlined calls whose code holds pc, outermost first, found by descending from `parent` through
 * the DIEs whose ranges hold it (namespaces and classes, which have none, are searched whole: C++
 * puts functions there). dwarf_getscopes would not do: past the first inlined call it follows the
 * abstract definition, not the caller. Returns the new count. */
enum { MAX_INLINE_DEPTH = 64 };

static int inline_chain(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *chain, int n, int depth)
{
    Dwarf_Die child;
    if (depth > MAX_INLINE_DEPTH || dwarf_child(parent, &child) != 0)
        return n;
    do {
        const int tag = dwarf_tag(&child);
        if (tag == DW_TAG_namespace || tag == DW_TAG_class_type || tag == DW_TAG_structure_type) {
            const int m = inline_chain(&child, pc, chain, n, depth + 1);
            if (m != n)
                return m;
            continue;
        }
        if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine && tag != DW_TAG_lexical_block)
            continue;
        if (dwarf_haspc(&child, pc) <= 0)
            continue;
        if (tag == DW_TAG_inlined_subroutine && n < MAX_INLINE_DEPTH)
            chain[n++] = child;
        return inline_chain(&child, pc, chain, n, depth + 1);
    } while (dwarf_siblingof(&child, &child) == 0);
    return n;
}

/* ---- compilation units by address ----------------------------------------------------------------
 * elfutils finds the compilation unit of an address (dwfl_module_addrdie, and with it
 * dwfl_module_getsrc) through .debug_aranges, which clang does not emit unless asked
 * (-gdwarf-aranges): in elfutils 0.188 the lookup then finds none, and every frame of a program
 * built with clang had no file and no line. Where it finds none, the units' own ranges (DW_AT_low_pc
 * and high_pc, or DW_AT_ranges) are read once per module, sorted, and searched by bisection. */

static int cmp_cu_range(const void *a, const void *b)
{
    const struct cu_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void read_cu_ranges(sym_module_t *m)
{
    m->cus_read = 1;
    size_t cap = 0;
    Dwarf_Die *cu = NULL;
    Dwarf_Addr bias = 0;
    while ((cu = dwfl_module_nextcu(m->mod, cu, &bias)) != NULL) {
        Dwarf_Addr base, lo, hi;
        for (ptrdiff_t off = 0; (off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0;) {
            if (hi <= lo)
                continue;
            if (m->ncus == cap) {
                const size_t n = cap ? 2 * cap : 64;
                struct cu_range *v = realloc(m->cus, n * sizeof *v);
                if (!v) { /* out of memory: no table, as for a module without units */
                    free(m->cus);
                    m->cus = NULL;
                    m->ncus = 0;
                    return;
                }
                m->cus = v;
                cap = n;
            }
            m->cus[m->ncus++] = (struct cu_range){ lo + bias, hi + bias, *cu, bias };
        }
    }
    if (m->ncus)
        qsort(m->cus, m->ncus, sizeof *m->cus, cmp_cu_range);
}

/* The compilation unit that holds pc (a run-time address), with its bias; NULL if none does. */
static Dwarf_Die *cu_at(sym_module_t *m, uint64_t pc, Dwarf_Addr *bias)
{
    Dwarf_Die *cu = dwfl_module_addrdie(m->mod, pc, bias);
    if (cu)
        return cu;
    if (!m->cus_read)
        read_cu_ranges(m);
    size_t lo = 0, hi = m->ncus; /* the last range that starts at or before pc */
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (m->cus[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo || pc >= m->cus[lo - 1].hi)
        return NULL;
    *bias = m->cus[lo - 1].bias;
    return &m->cus[lo - 1].cu;
}

/* The source line of pc: 1 with *file (as the line table has it), *line and *comp_dir set. */
static int line_at(sym_module_t *m, uint64_t pc, const char **file, int *line, const char **comp_dir)
{
    Dwfl_Line *l = dwfl_module_getsrc(m->mod, pc);
    if (l) {
        *file = dwfl_lineinfo(l, NULL, line, NULL, NULL, NULL);
        *comp_dir = dwfl_line_comp_dir(l);
        return *file != NULL;
    }
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = cu_at(m, pc, &bias);
    Dwarf_Line *dl = cu ? dwarf_getsrc_die(cu, pc - bias) : NULL;
    if (!dl || !(*file = dwarf_linesrc(dl, NULL, NULL)) || dwarf_lineno(dl, line) != 0)
        return 0;
    Dwarf_Attribute a;
    *comp_dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a));
    return 1;
}

/* Where code of a system header inlined at pc was called from the user's code: the call site of the
 * innermost inlined call made from outside the system headers. 1 with *file, *line set; 0 if none. */
static int user_call_site(mt_symbolizer_t *s, sym_module_t *m, uint64_t pc, const char **file, unsigned *line)
{
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = cu_at(m, pc, &bias);
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    if (!cu || dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
        return 0;
    Dwarf_Die chain[MAX_INLINE_DEPTH];
    const int n = inline_chain(cu, pc - bias, chain, 0, 0);
    Dwarf_Attribute a;
    const char *comp_dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a));
    for (int i = n - 1; i >= 0; i--) {
        Dwarf_Word fidx = 0, lno = 0;
        if (dwarf_formudata(dwarf_attr(&chain[i], DW_AT_call_file, &a), &fidx) != 0 ||
            dwarf_formudata(dwarf_attr(&chain[i], DW_AT_call_line, &a), &lno) != 0 || fidx >= nfiles)
            continue;
        const char *f = dwarf_filesrc(files, fidx, NULL, NULL);
        const char *path = f && *f ? source_path(s, f, comp_dir) : NULL;
        if (!path || mt_source_is_system(path))
            continue;
        *file = path;
        *line = (unsigned)lno;
        return 1;
    }
    return 0;
}

/* ---- the symbol table -------------------------------------------------------------------------- */

/* dwfl_module_addrinfo searches the whole symbol table on every call where no symbol has the address
 * (a stripped static function): on cc1 that was 60 % of mtrace report's time. The table is read once
 * per module instead, sorted, and searched by bisection. */
static int cmp_msym(const void *a, const void *b)
{
    const struct msym *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return y->rank - x->rank; /* the best first */
}

static void read_symtab(sym_module_t *m)
{
    const int n = dwfl_module_getsymtab(m->mod);
    m->syms_failed = 1;
    if (n <= 0)
        return;
    struct msym *v = malloc((size_t)n * sizeof *v);
    if (!v)
        return;
    size_t k = 0;
    for (int i = 1; i < n; i++) { /* entry 0 is the null symbol */
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        const char *name = dwfl_module_getsym_info(m->mod, i, &sym, &addr, &shndx, NULL, NULL);
        const int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
        if (!name || !*name || sym.st_shndx == SHN_UNDEF || shndx == (GElf_Word)-1 ||
            (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
            continue;
        const int rank = (bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0) + (sym.st_size ? 4 : 0);
        v[k++] = (struct msym){ addr, addr + sym.st_size, name, rank };
    }
    qsort(v, k, sizeof *v, cmp_msym);
    size_t w = 0; /* one symbol per address: the best */
    for (size_t i = 0; i < k; i++)
        if (!w || v[i].lo != v[w - 1].lo)
            v[w++] = v[i];
    m->syms = v;
    m->nsyms = w;
    m->syms_failed = 0;
}

/* The name of the function at pc, or NULL. */
static const char *symbol_at(sym_module_t *m, uint64_t pc)
{
    if (!m->syms && !m->syms_failed)
        read_symtab(m);
    if (m->syms_failed) {
        GElf_Off off = 0;
        GElf_Sym sym;
        return dwfl_module_addrinfo(m->mod, pc, &off, &sym, NULL, NULL, NULL);
    }
    size_t lo = 0, hi = m->nsyms; /* the last symbol that starts at or before pc */
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (m->syms[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return NULL;
    const struct msym *y = &m->syms[lo - 1];
    if (y->hi > y->lo)
        return pc < y->hi ? y->name : NULL;
    return lo < m->nsyms ? y->name : NULL; /* sizeless: up to the next symbol, not past the last */
}

/* ---- functions without a symbol ---------------------------------------------------------------- */

/* .eh_frame_hdr's search table lists the start of every function that has unwind information
 * (every function of a C or C++ program built by GCC or Clang), sorted. Read when the table is in
 * the usual form: version 1, a 4-byte count (DW_EH_PE_udata4) and entries of two 4-byte offsets
 * from the section's start (DW_EH_PE_datarel | DW_EH_PE_sdata4); anything else leaves no starts. */
enum { EH_HDR_VERSION = 1, EH_PE_UDATA4 = 0x03, EH_PE_SDATA4 = 0x0b, EH_PE_DATAREL_SDATA4 = 0x3b };

static void read_function_starts(sym_module_t *m)
{
    m->starts_read = 1;
    GElf_Addr bias = 0;
    Elf *elf = dwfl_module_getelf(m->mod, &bias);
    size_t shstrndx;
    if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
        return;
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
        if (!name || strcmp(name, ".eh_frame_hdr") != 0)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        const uint8_t *p = d ? d->d_buf : NULL;
        /* header: version, eh_frame_ptr's encoding, the count's, the table's; eh_frame_ptr (4 bytes
         * in the encodings compilers use), the count */
        if (!p || d->d_size < 12 || p[0] != EH_HDR_VERSION ||
            ((p[1] & 0x0f) != EH_PE_SDATA4 && (p[1] & 0x0f) != EH_PE_UDATA4) || p[2] != EH_PE_UDATA4 ||
            p[3] != EH_PE_DATAREL_SDATA4)
            return;
        uint32_t count;
        memcpy(&count, p + 8, sizeof count);
        if (count > (d->d_size - 12) / 8 || !(m->starts = malloc(((size_t)count + 1) * sizeof *m->starts)))
            return;
        for (uint32_t i = 0; i < count; i++) {
            int32_t loc;
            memcpy(&loc, p + 12 + 8 * (size_t)i, sizeof loc);
            m->starts[i] = sh.sh_addr + (uint64_t)(int64_t)loc + bias;
        }
        m->nstarts = count;
        return;
    }
}

/* The start of the function holding pc (at run time), or 0. */
static uint64_t function_start(sym_module_t *m, uint64_t pc)
{
    if (!m->starts_read)
        read_function_starts(m);
    size_t lo = 0, hi = m->nstarts;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (m->starts[mid] <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? m->starts[lo - 1] : 0;
}

static void lookup(mt_symbolizer_t *s, uint64_t ra, mt_symbol_t *out)
{
    const char *unknown = intern(s, UNKNOWN);
    *out = (mt_symbol_t){ unknown ? unknown : UNKNOWN, NULL, 0, unknown ? unknown : UNKNOWN, ra, 0 };
    if (ra == 0)
        return;
    const uint64_t pc = ra - 1; /* the call instruction, not the one after it */
    sym_module_t *m = find_module(s, pc);
    if (!m)
        return;
    out->module = m->name;
    out->offset = ra - m->bias;
    if (m->state == MOD_UNOPENED)
        open_module(s, m);
    if (m->state != MOD_OPEN)
        return;
    const char *fn = symbol_at(m, pc);
    const uint64_t start = fn && *fn ? 0 : function_start(m, pc);
    if (start > m->bias)
        out->start = start - m->bias;
    if (fn && *fn) {
        /* without a symbol version ("__libc_start_main@@GLIBC_2.34" is __libc_start_main) */
        const char *at = strchr(fn + 1, '@');
        const size_t n = at ? (size_t)(at - fn) : strlen(fn);
        const char *f = demangled(s, fn, n);
        if (!f)
            f = intern_n(s, fn, n);
        if (f)
            out->function = f;
    }
    const char *file = NULL, *comp_dir = NULL;
    int lineno = 0;
    if (line_at(m, pc, &file, &lineno, &comp_dir) && *file) {
        out->file = source_path(s, file, comp_dir);
        out->line = out->file && lineno > 0 ? (unsigned)lineno : 0;
    }
    if (mt_source_is_system(out->file))
        user_call_site(s, m, pc, &out->file, &out->line);
}

const char *mt_symbol_label(const mt_symbol_t *sym, char *buf, size_t cap)
{
    if (sym->function && strcmp(sym->function, UNKNOWN) != 0)
        return sym->function;
    if (sym->module && strcmp(sym->module, UNKNOWN) != 0)
        snprintf(buf, cap, "%s+0x%" PRIx64, sym->module, sym->start ? sym->start : sym->offset);
    else
        snprintf(buf, cap, "?? 0x%" PRIx64, sym->offset);
    return buf;
}

int mt_symbolize(mt_symbolizer_t *s, uint64_t return_address, mt_symbol_t *out)
{
    if (s->ranges_dirty && rebuild_ranges(s) < 0) {
        *out = (mt_symbol_t){ UNKNOWN, NULL, 0, UNKNOWN, return_address, 0 };
        return -ENOMEM;
    }
    if (s->capcache) {
        for (size_t j = hash_u64(return_address) & (s->capcache - 1); s->cache[j].index;
             j = (j + 1) & (s->capcache - 1)) {
            if (s->cache[j].key == return_address) {
                *out = s->syms[s->cache[j].index - 1];
                return 0;
            }
        }
    }
    lookup(s, return_address, out);

    /* remember it */
    if (grow((void **)&s->syms, &s->capsyms, s->nsyms + 1, sizeof *s->syms) < 0)
        return 0; /* a result, just not cached */
    if ((s->ncache + 1) * 2 > s->capcache) {
        const size_t cap = s->capcache ? s->capcache * 2 : 1024;
        cache_slot_t *t = calloc(cap, sizeof *t);
        if (!t)
            return 0;
        for (size_t i = 0; i < s->capcache; i++) {
            if (!s->cache[i].index)
                continue;
            size_t j = hash_u64(s->cache[i].key) & (cap - 1);
            while (t[j].index)
                j = (j + 1) & (cap - 1);
            t[j] = s->cache[i];
        }
        free(s->cache);
        s->cache = t;
        s->capcache = cap;
    }
    size_t j = hash_u64(return_address) & (s->capcache - 1);
    while (s->cache[j].index)
        j = (j + 1) & (s->capcache - 1);
    s->syms[s->nsyms++] = *out;
    s->cache[j] = (cache_slot_t){ return_address, (uint32_t)s->nsyms };
    s->ncache++;
    return 0;
}

/* ---- allocator frames -------------------------------------------------------------------------- */

/* The rule: a frame belongs to the allocation machinery, and so is no callsite, when
 *   1. its module is the C library or the dynamic loader (libc.so*, libc-2.*, ld-linux*, ld64.so*,
 *      ld.so*, ld-2.*) or the recorder (libmtrace.so*): what they allocate they allocate for a call
 *      made elsewhere (strdup, fopen, dlopen ...), and the callsite is the caller of that call (a
 *      callback that libc calls, such as qsort's, is a frame of the program and ends the walk first);
 *   2. or, in any module, its function is
 *      - operator new / new[] in any form (mangled _Znw* / _Zna*: _Znwm, _Znam, _ZnwmRKSt9nothrow_t,
 *        _ZnwmSt11align_val_t, _ZnamSt11align_val_tRKSt9nothrow_t ...; or a demangled "operator new"),
 *        so libstdc++'s and any replacement operator new; likewise operator delete / delete[]
 *        (_Zdl*, _Zda*) for the callsites of frees;
 *      - libstdc++'s allocator templates' allocate and deallocate (std::allocator, mangled _ZNSa...,
 *        __gnu_cxx::new_allocator, std::__new_allocator, std::allocator_traits), which only forward
 *        to operator new / delete and are real frames in unoptimized code;
 *      - an allocation entry point or a libc wrapper that allocates for its caller, by name:
 *        malloc, calloc, realloc, reallocarray, free, memalign, posix_memalign, aligned_alloc,
 *        valloc, pvalloc (a replacement allocator), strdup, strndup, wcsdup, the asprintf family
 *        (for a C library whose file name is not recognised, or a static program).
 * Unknown frames ("??" module) are not allocator frames. */
static int name_in(const char *name, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(name, *list))
            return 1;
    return 0;
}

static int has_prefix(const char *s, const char *prefix)
{
    return !strncmp(s, prefix, strlen(prefix));
}

int mt_symbol_is_allocator_frame(const mt_symbol_t *sym)
{
    static const char *const module_prefixes[] = {
        "libc.so", "libc-2.", "ld-linux", "ld64.so", "ld.so", "ld-2.", "libmtrace.so", NULL,
    };
    static const char *const functions[] = {
        "malloc",
        "calloc",
        "realloc",
        "reallocarray",
        "free",
        "memalign",
        "posix_memalign",
        "aligned_alloc",
        "valloc",
        "pvalloc",
        "__libc_malloc",
        "__libc_calloc",
        "__libc_realloc",
        "__libc_reallocarray",
        "__libc_free",
        "__libc_memalign",
        "__libc_valloc",
        "__libc_pvalloc",
        "strdup",
        "__strdup",
        "strndup",
        "__strndup",
        "wcsdup",
        "__wcsdup",
        "asprintf",
        "__asprintf",
        "___asprintf",
        "vasprintf",
        "__vasprintf",
        "__vasprintf_internal",
        "__asprintf_chk",
        "__vasprintf_chk",
        "__vasprintf_chk_internal",
        NULL,
    };
    /* The first NEW_DELETE entries match on their own; the others are the allocator templates,
     * whose names must also contain "allocate" (allocate, deallocate: not construct and the like). */
    enum { NEW_DELETE = 6 };
    static const char *const function_prefixes[] = {
        "_Znw",
        "_Zna",
        "_Zdl",
        "_Zda",
        "operator new",
        "operator delete",
        "_ZN9__gnu_cxx13new_allocator",
        "_ZNSt15__new_allocator",
        "_ZNSa",
        "_ZNSt16allocator_traits",
        "__gnu_cxx::new_allocator",
        "std::__new_allocator",
        "std::allocator<",
        "std::allocator_traits",
        NULL,
    };
    if (!sym)
        return 0;
    if (sym->module && strcmp(sym->module, UNKNOWN) != 0) {
        for (const char *const *p = module_prefixes; *p; p++)
            if (has_prefix(sym->module, *p))
                return 1;
    }
    const char *fn = sym->function;
    if (!fn || !strcmp(fn, UNKNOWN))
        return 0;
    if (name_in(fn, functions))
        return 1;
    for (const char *const *p = function_prefixes; *p; p++)
        if (has_prefix(fn, *p) && (p - function_prefixes < NEW_DELETE || strstr(fn, "allocate")))
            return 1;
    return 0;
}

int mt_symbol_is_process_entry_frame(const mt_symbol_t *sym)
{
    static const char *const functions[] = {
        "_start", "__libc_start_main", "__libc_start_main_impl", "__libc_start_call_main", NULL,
    };
    return sym && sym->function && name_in(sym->function, functions);
}

int mt_symbol_is_entry_frame(const mt_symbol_t *sym)
{
    static const char *const functions[] = {
        "start_thread", "clone", "clone3", "__clone", "__clone3", "__clone_internal", NULL,
    };
    return mt_symbol_is_process_entry_frame(sym) || (sym && sym->function && name_in(sym->function, functions));
}
