/* Call stacks (MTRACE_STACKS=N): walked from the unwind tables (the frame walker below, libunwind
 * where it cannot), deduplicated in a process-wide lock-free table so that a record carries only a
 * stack id. A stack's definition (MT_EV_STACK) is written once, by the thread that saw it first,
 * before that thread's first record using it. The loaded objects, with their build-ids, are written
 * as MT_EV_MODULE events before the first stack and again when the set of loaded objects changes, so
 * that traces symbolize later on another machine. */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <elf.h>
#include <libunwind.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>

#include "mtrace/module_event.h"
#include "shim.h"

#define STACK_FRAMES_MAX 64 /* frames of a STACK event, the cut marker included */
static _Atomic uint32_t next_id;
static uintptr_t self_lo, self_hi;                      /* our own code: its frames are not the caller's */
static _Atomic unsigned long long modules_seen = ~0ull; /* dlpi_adds + dlpi_subs at the last MODULE */
static _Atomic int modules_lock;

/* A library loaded where an unloaded one was has frames at the same addresses: the stack table must
 * not answer with the old library's stack ids. Every dlclose made through the dynamic symbol (the
 * program's and its libraries') starts a new unload generation, mixed into the stack hash; while a
 * dlclose is under way every stack gets a fresh id, since the old and the new code can both be met. */
static _Atomic unsigned dlclose_in_flight;
static _Atomic uint64_t unload_generation;

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const uintptr_t here = (uintptr_t)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        const uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (here >= lo && here < hi) {
            self_lo = lo;
            self_hi = hi;
            return 1;
        }
    }
    return 0;
}

typedef struct module_walk {
    mt_thread_t *t;
    unsigned long long generation;
} module_walk_t;

static int emit_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    module_walk_t *w = arg;
    uint8_t payload[4096];
    /* The main program has an empty name here; the header's exe string names it. */
    const size_t len =
        mt_module_payload(info, w->generation, info->dlpi_name ? info->dlpi_name : "", payload, sizeof payload);
    mt_emit_event(w->t, MT_EV_MODULE, payload, len);
    return 0;
}

static int count_modules(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(unsigned long long *)arg = info->dlpi_adds + info->dlpi_subs;
    return 1;
}

/* Writes the module list when objects were loaded or unloaded since the last one. */
static void note_modules(mt_thread_t *t)
{
    unsigned long long now = 0;
    dl_iterate_phdr(count_modules, &now);
    if (now == atomic_load(&modules_seen))
        return;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&modules_lock, &expected, 1))
        return; /* another thread is writing it; our stacks resolve against that list */
    if (now != atomic_load(&modules_seen)) {
        module_walk_t w = { t, now };
        dl_iterate_phdr(emit_module, &w);
        atomic_store(&modules_seen, now);
    }
    atomic_store(&modules_lock, 0);
}

MT_EXPORT int dlclose(void *handle)
{
    mt_init();
    int (*real_dlclose)(void *) = mt_g.real.dlclose;
    if (!real_dlclose) /* called from inside dlsym, while the table is being filled */
        real_dlclose = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
    const int counted = mt_loaded_before_dlclose(); /* the pages of what it may unload, while there */
    atomic_fetch_add(&dlclose_in_flight, 1);
    const int rc = real_dlclose(handle);
    /* generation first: a thread that sees no dlclose in flight sees the new generation */
    atomic_fetch_add(&unload_generation, 1);
    atomic_fetch_sub(&dlclose_in_flight, 1);
    mt_loaded_after_dlclose(counted);
    return rc;
}

/* ==== The frame walker ====
 *
 * unw_backtrace (libunwind 1.6) walks a stack in about 80 instructions a frame, on top of 200 a call
 * (bench/RESULTS.md, "16-frame stacks"). Its fast path (tdep_trace) takes, for each return address,
 * a rule found once from the unwind tables and kept: the caller's frame (its CFA) is RSP or RBP plus
 * an offset, the return address is at CFA - 8, RBP is unchanged or saved at CFA plus an offset.
 * stack_walk does the same with rules of its own, made from the same .eh_frame the same way (see
 * frame_rule) and kept in a table that every thread shares. Whatever it does not know to be such a
 * frame (a signal frame, a frame with no unwind entry or one that needs a DWARF expression, a return
 * address after a dlclose began, libunwind's dynamic unwind info in use) gives the whole stack to
 * unw_backtrace: the frames recorded are the ones unw_backtrace gives, either way
 * (tests/faults/fp_stackwalk.c compares them). It reads the words that libunwind's fast path reads,
 * under the same rules, and no others. */

/* A rule in 64 bits: the CFA's offset from RSP (or RBP) in the low 32, flags, RBP's offset from the
 * CFA in the top 16. RULE_LAST: the stack ends here; RULE_OTHER: not a frame this walk takes. */
#define RULE_CFA_OFF(r) ((int64_t)(int32_t)(r)) /* |offset| < 2^28; 8 or more from RSP */
#define RULE_CFA_RBP ((uint64_t)1 << 32)        /* the CFA is RBP plus the offset, else RSP plus it */
#define RULE_RBP_SAVED ((uint64_t)1 << 33)      /* RBP is saved at CFA + RULE_RBP_OFF, else unchanged */
#define RULE_LAST ((uint64_t)1 << 34)
#define RULE_OTHER ((uint64_t)1 << 35)
#define RULE_RBP_OFF(r) ((int64_t)(int16_t)((r) >> 48)) /* |offset| < 2^14 */

/* The rules table: sets of two entries, a cache line, picked by the return address's hash. An
 * entry is the rule of one return address under one unload generation (the key: the address, below
 * 2^47, and the generation, below 2^16, above it), written under a sequence count of its own (odd
 * while written), so that a reader never takes one address's rule for another's whatever the
 * writers do; a set full of live entries drops one. 2^RULE_SET_BITS sets of 64 bytes: 256 KiB
 * reserved, touched as return addresses are met. */
#define RULE_SET_BITS 12
#define RULE_KEY(ra, generation) ((uint64_t)(ra) | (uint64_t)(generation) << 48)
#define RA_LIMIT ((uintptr_t)1 << 47)
#define GENERATION_LIMIT ((uint64_t)1 << 16)
typedef struct rule_entry {
    _Atomic uint64_t seq, key, rule, unused;
} rule_entry_t;
static rule_entry_t *rules;
static const unw_dyn_info_list_t *unw_dyn_list; /* libunwind's: its entries come before the tables */
/* Where libunwind keeps the unwind info registered with _U_dyn_register: exported for debuggers to
 * find, not declared in its headers. */
extern unw_word_t _U_dyn_info_list_addr(void);

static int rules_init(void)
{
    void *m = mmap(NULL, sizeof(rule_entry_t) * 2u << RULE_SET_BITS, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    unw_dyn_list = (const unw_dyn_info_list_t *)(uintptr_t)_U_dyn_info_list_addr();
    rules = m;
    return 0;
}

/* Pointer encodings of .eh_frame (the LSB's DW_EH_PE_*) */
#define DW_EH_PE_absptr 0x00
#define DW_EH_PE_udata2 0x02
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_udata8 0x04
#define DW_EH_PE_sdata2 0x0a
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_sdata8 0x0c
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30
#define DW_EH_PE_indirect 0x80
#define DW_EH_PE_omit 0xff

/* Reading the unwind tables of a loaded object, only inside its readable PT_LOAD segments. */
#define OBJ_SEGMENTS_MAX 16
typedef struct obj_tables {
    uintptr_t ip;     /* what is looked for */
    uintptr_t eh_hdr; /* PT_GNU_EH_FRAME: .eh_frame_hdr; 0 when none */
    int nseg;
    uintptr_t lo[OBJ_SEGMENTS_MAX], hi[OBJ_SEGMENTS_MAX];
} obj_tables_t;

static int find_tables(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    obj_tables_t *o = arg;
    int hit = 0;
    for (int i = 0; i < info->dlpi_phnum && !hit; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        const uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        hit = ph->p_type == PT_LOAD && o->ip >= lo && o->ip - lo < ph->p_memsz;
    }
    if (!hit)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_GNU_EH_FRAME)
            o->eh_hdr = info->dlpi_addr + ph->p_vaddr;
        else if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R) && o->nseg < OBJ_SEGMENTS_MAX) {
            o->lo[o->nseg] = info->dlpi_addr + ph->p_vaddr;
            o->hi[o->nseg] = o->lo[o->nseg] + ph->p_memsz;
            o->nseg++;
        }
    }
    return 1;
}

/* Whether [p, p + len) lies in one readable segment of the object. */
static int obj_readable(const obj_tables_t *o, uintptr_t p, uintptr_t len)
{
    for (int i = 0; i < o->nseg; i++)
        if (p >= o->lo[i] && p <= o->hi[i] && len <= o->hi[i] - p)
            return 1;
    return 0;
}

/* A reader of [p, end), which the caller found readable; `bad` once a read would pass end. */
typedef struct cfi_reader {
    uintptr_t p, end;
    int bad;
} cfi_reader_t;

static uint64_t rd_bytes(cfi_reader_t *r, unsigned n)
{
    if (r->bad || r->end - r->p < n) {
        r->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, (const void *)r->p, n); /* little-endian */
    r->p += n;
    return v;
}

static uint64_t rd_uleb(cfi_reader_t *r)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        const uint64_t b = rd_bytes(r, 1);
        if (shift < 64)
            v |= (b & 0x7f) << shift;
        if (r->bad || !(b & 0x80))
            return v;
    }
}

static int64_t rd_sleb(cfi_reader_t *r)
{
    uint64_t v = 0, b;
    unsigned shift = 0;
    do {
        b = rd_bytes(r, 1);
        if (shift < 64)
            v |= (b & 0x7f) << shift;
        shift += 7;
    } while (!r->bad && (b & 0x80));
    if (shift < 64 && (b & 0x40))
        v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

/* A pointer in a DW_EH_PE encoding: absolute or pc-relative, of 2, 4 or 8 bytes (what libunwind
 * reads alike); anything else is refused (bad). Indirect only when `indirect_ok`, and never
 * followed (the personality routine's address, which is only skipped). */
static uint64_t rd_encoded(cfi_reader_t *r, unsigned enc, int indirect_ok)
{
    if (enc == DW_EH_PE_omit)
        return 0;
    const uintptr_t at = r->p;
    static const uint8_t bytes[16] = {
        [DW_EH_PE_absptr] = 8, [DW_EH_PE_udata2] = 2, [DW_EH_PE_udata4] = 4, [DW_EH_PE_udata8] = 8,
        [DW_EH_PE_sdata2] = 2, [DW_EH_PE_sdata4] = 4, [DW_EH_PE_sdata8] = 8
    };
    const unsigned n = bytes[enc & 0x0f], unused = 64 - 8 * n;
    if (!n) {
        r->bad = 1;
        return 0;
    }
    uint64_t v = rd_bytes(r, n);
    if ((enc & 0x08) && unused) /* sdata2, sdata4: sign-extended */
        v = (uint64_t)((int64_t)(v << unused) >> unused);
    if ((enc & 0x70) == DW_EH_PE_pcrel)
        v += at;
    else if ((enc & 0x70) != DW_EH_PE_absptr)
        r->bad = 1;
    if ((enc & DW_EH_PE_indirect) && !indirect_ok)
        r->bad = 1;
    return v;
}

/* The register rules of a CFI row, as libunwind's parser keeps them (DWARF registers 0 to 16 of
 * x86-64, 16 the return address), and the CFA's. */
#define CFI_REGS 17
#define CFI_RBP 6
#define CFI_RSP 7
#define CFI_RA 16
enum { WHERE_SAME, WHERE_UNDEF, WHERE_CFAREL, WHERE_REG };
typedef struct cfi_row {
    uint8_t cfa_is_reg; /* CFA = register cfa_reg + cfa_off; else not defined so */
    uint64_t cfa_reg, cfa_off;
    uint8_t where[CFI_REGS];
    int64_t val[CFI_REGS];
} cfi_row_t;

#define CFI_STATES_MAX 8 /* DW_CFA_remember_state depth; deeper, the frame goes to libunwind */

/* Runs CFI instructions from r while the location is at most `target`, as libunwind's
 * run_cfi_program does; 0, or -1 for an instruction it does not take (libunwind then decides). */
static int run_cfi(cfi_reader_t *r, cfi_row_t *row, const cfi_row_t *initial, uint64_t loc, uint64_t target,
                   uint64_t code_align, int64_t data_align)
{
    cfi_row_t saved[CFI_STATES_MAX];
    int depth = 0;
    while (loc <= target && r->p < r->end) {
        const unsigned byte = (unsigned)rd_bytes(r, 1), low = byte & 0x3f;
        const unsigned op = byte & 0xc0 ? byte & 0xc0 : byte; /* the low bits of those three: an operand */
        uint64_t reg = low, v;
        switch (op) {
        case 0x00: /* DW_CFA_nop */
            break;
        case 0x40: /* DW_CFA_advance_loc */
            loc += low * code_align;
            break;
        case 0x02: /* DW_CFA_advance_loc1 */
            loc += rd_bytes(r, 1) * code_align;
            break;
        case 0x03: /* DW_CFA_advance_loc2 */
            loc += rd_bytes(r, 2) * code_align;
            break;
        case 0x04: /* DW_CFA_advance_loc4 */
            loc += rd_bytes(r, 4) * code_align;
            break;
        case 0x05: /* DW_CFA_offset_extended */
        case 0x11: /* DW_CFA_offset_extended_sf */
            reg = rd_uleb(r);
            __attribute__((fallthrough));
        case 0x80: /* DW_CFA_offset */
            v = op == 0x11 ? (uint64_t)rd_sleb(r) : rd_uleb(r);
            if (reg >= CFI_REGS)
                return -1;
            row->where[reg] = WHERE_CFAREL;
            row->val[reg] = (int64_t)(v * (uint64_t)data_align);
            break;
        case 0x06: /* DW_CFA_restore_extended */
            reg = rd_uleb(r);
            __attribute__((fallthrough));
        case 0xc0: /* DW_CFA_restore */
            if (reg >= CFI_REGS || !initial)
                return -1;
            row->where[reg] = initial->where[reg];
            row->val[reg] = initial->val[reg];
            break;
        case 0x07: /* DW_CFA_undefined */
        case 0x08: /* DW_CFA_same_value */
            reg = rd_uleb(r);
            if (reg >= CFI_REGS)
                return -1;
            row->where[reg] = op == 0x07 ? WHERE_UNDEF : WHERE_SAME;
            row->val[reg] = 0;
            break;
        case 0x09: /* DW_CFA_register */
            reg = rd_uleb(r);
            v = rd_uleb(r);
            if (reg >= CFI_REGS || v >= CFI_REGS)
                return -1;
            row->where[reg] = WHERE_REG;
            row->val[reg] = (int64_t)v;
            break;
        case 0x0a: /* DW_CFA_remember_state */
            if (depth == CFI_STATES_MAX)
                return -1;
            saved[depth++] = *row;
            break;
        case 0x0b: /* DW_CFA_restore_state */
            if (!depth)
                return -1;
            *row = saved[--depth];
            break;
        case 0x0c: /* DW_CFA_def_cfa */
        case 0x12: /* DW_CFA_def_cfa_sf */
            reg = rd_uleb(r);
            v = op == 0x0c ? rd_uleb(r) : (uint64_t)rd_sleb(r) * (uint64_t)data_align;
            if (reg >= CFI_REGS)
                return -1;
            row->cfa_is_reg = 1;
            row->cfa_reg = reg;
            row->cfa_off = v;
            break;
        case 0x0d: /* DW_CFA_def_cfa_register */
            reg = rd_uleb(r);
            if (reg >= CFI_REGS)
                return -1;
            row->cfa_is_reg = 1;
            row->cfa_reg = reg;
            break;
        case 0x0e: /* DW_CFA_def_cfa_offset */
            row->cfa_off = rd_uleb(r);
            break;
        case 0x13: /* DW_CFA_def_cfa_offset_sf */
            row->cfa_off = (uint64_t)rd_sleb(r) * (uint64_t)data_align;
            break;
        case 0x2e: /* DW_CFA_GNU_args_size */
            rd_uleb(r);
            break;
        default: /* set_loc, expressions, val_offset and the rest: libunwind's to judge */
            return -1;
        }
        if (r->bad)
            return -1;
    }
    return r->bad ? -1 : 0;
}

static int small(int64_t v, unsigned bits)
{
    return v > -((int64_t)1 << bits) && v < (int64_t)1 << bits;
}

/* What libunwind's unw_step and tdep_stash_frame make of a CFI row: a rule, RULE_LAST or RULE_OTHER. */
static uint64_t row_rule(const cfi_row_t *row)
{
    if (!row->cfa_is_reg || (row->cfa_reg != CFI_RSP && row->cfa_reg != CFI_RBP))
        return RULE_OTHER;
    if (row->where[CFI_RA] == WHERE_UNDEF)
        return RULE_LAST; /* the end of the stack */
    const int64_t cfa_off = (int64_t)row->cfa_off;
    if (row->where[CFI_RA] != WHERE_CFAREL || row->val[CFI_RA] != -8 || !small(cfa_off, 28))
        return RULE_OTHER;
    if (row->cfa_reg == CFI_RSP && cfa_off < 8)
        return RULE_OTHER; /* left to libunwind: the walk takes an RSP-based frame to move up */
    if (row->where[CFI_RBP] == WHERE_UNDEF)
        return RULE_LAST; /* unw_step: the x86-64 ABI's other end of the stack */
    uint64_t rule = (row->cfa_reg == CFI_RBP ? RULE_CFA_RBP : 0) | (uint32_t)(int32_t)cfa_off;
    if (row->where[CFI_RBP] == WHERE_CFAREL) {
        if (!small(row->val[CFI_RBP], 14) || row->val[CFI_RBP] == -1)
            return RULE_OTHER;
        rule |= RULE_RBP_SAVED | (uint64_t)(uint16_t)(int16_t)row->val[CFI_RBP] << 48;
    } else if (row->where[CFI_RBP] != WHERE_SAME)
        return RULE_OTHER;
    if (row->where[CFI_RSP] == WHERE_REG ||
        (row->where[CFI_RSP] == WHERE_CFAREL && (!small(row->val[CFI_RSP], 14) || row->val[CFI_RSP] == -1)))
        return RULE_OTHER;
    return rule;
}

/* The rule of return address ra (the CFI row of ra - 1, as libunwind looks it up): RULE_OTHER for
 * anything libunwind's fast path would not take as a standard frame or its last, and for anything
 * this parser does not take (a CIE augmentation other than z, P, L, R; a table not sorted by
 * datarel sdata4 offsets; 64-bit DWARF; ...), where libunwind then decides. */
static uint64_t frame_rule(uintptr_t ra)
{
    const uintptr_t ip = ra - 1;
    obj_tables_t o = { .ip = ip };
    if (!dl_iterate_phdr(find_tables, &o) || !o.eh_hdr || !obj_readable(&o, o.eh_hdr, 12))
        return RULE_OTHER;
    /* .eh_frame_hdr: version 1, its encodings, then the sorted table of (start, FDE) pairs */
    const uint8_t *h = (const uint8_t *)o.eh_hdr;
    if (h[0] != 1 || h[2] != DW_EH_PE_udata4 || h[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
        return RULE_OTHER;
    cfi_reader_t hr = { o.eh_hdr + 4, o.eh_hdr + 4 + 16, 0 };
    rd_encoded(&hr, h[1], 0); /* the .eh_frame pointer: not needed */
    const uint64_t count = rd_bytes(&hr, 4);
    if (hr.bad || count == 0 || !obj_readable(&o, hr.p, count * 8))
        return RULE_OTHER;
    const int64_t rel = (int64_t)(ip - o.eh_hdr);
    if (rel != (int32_t)rel)
        return RULE_OTHER;
    const int32_t *table = (const int32_t *)hr.p;
    uint64_t lo = 0, hi = count;
    while (lo < hi) { /* libunwind's lookup(): the last entry that starts at or below ip */
        const uint64_t mid = (lo + hi) / 2;
        if ((int32_t)rel < table[2 * mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    if (hi == 0)
        return RULE_OTHER;
    /* the FDE, then its CIE */
    const uintptr_t fde = o.eh_hdr + (uintptr_t)(intptr_t)table[2 * (hi - 1) + 1];
    if (!obj_readable(&o, fde, 8))
        return RULE_OTHER;
    cfi_reader_t fr = { fde, fde + 8, 0 };
    const uint32_t fde_len = (uint32_t)rd_bytes(&fr, 4);
    const int32_t cie_off = (int32_t)rd_bytes(&fr, 4); /* back from here; 0 for a CIE */
    if (fde_len < 4 || fde_len == 0xffffffffu || !obj_readable(&o, fde, 4 + (uintptr_t)fde_len) || cie_off == 0)
        return RULE_OTHER;
    fr.end = fde + 4 + fde_len;
    const uintptr_t cie = fde + 4 - (uintptr_t)(intptr_t)cie_off;
    if (!obj_readable(&o, cie, 8))
        return RULE_OTHER;
    cfi_reader_t cr = { cie, cie + 8, 0 };
    const uint32_t cie_len = (uint32_t)rd_bytes(&cr, 4);
    if (cie_len < 5 || cie_len == 0xffffffffu || !obj_readable(&o, cie, 4 + (uintptr_t)cie_len) || rd_bytes(&cr, 4))
        return RULE_OTHER;
    cr.end = cie + 4 + cie_len;
    const unsigned version = (unsigned)rd_bytes(&cr, 1);
    char aug[5] = { 0 };
    for (unsigned i = 0;; i++) {
        const char c = (char)rd_bytes(&cr, 1);
        if (cr.bad || !c)
            break;
        if (i == sizeof aug - 1)
            return RULE_OTHER; /* libunwind keeps 4 characters */
        aug[i] = c;
    }
    const uint64_t code_align = rd_uleb(&cr);
    const int64_t data_align = rd_sleb(&cr);
    const uint64_t ra_column = version == 1 ? rd_bytes(&cr, 1) : rd_uleb(&cr);
    if (cr.bad || (version != 1 && version != 3) || ra_column != CFI_RA || (aug[0] && aug[0] != 'z'))
        return RULE_OTHER;
    unsigned fde_enc = DW_EH_PE_udata8;
    if (aug[0] == 'z') {
        const uint64_t aug_len = rd_uleb(&cr);
        const uintptr_t aug_end = cr.p + aug_len;
        for (const char *a = aug + 1; *a && !cr.bad; a++) {
            if (*a == 'R')
                fde_enc = (unsigned)rd_bytes(&cr, 1);
            else if (*a == 'L')
                rd_bytes(&cr, 1);
            else if (*a == 'P')
                rd_encoded(&cr, (unsigned)rd_bytes(&cr, 1), 1);
            else
                return RULE_OTHER; /* 'S', a signal frame, among others */
        }
        if (cr.bad || cr.p != aug_end)
            return RULE_OTHER;
    }
    const uint64_t start = rd_encoded(&fr, fde_enc, 0);
    const uint64_t range = rd_encoded(&fr, fde_enc & 0x0f, 0);
    if (aug[0] == 'z') {
        const uint64_t len = rd_uleb(&fr);
        if (len > fr.end - fr.p)
            return RULE_OTHER;
        fr.p += len;
    }
    if (fr.bad || ip < start || ip - start >= range)
        return RULE_OTHER;
    /* The CIE's initial instructions, then the FDE's up to ip. */
    cfi_row_t row;
    memset(&row, 0, sizeof row); /* WHERE_SAME everywhere; the CFA not defined */
    if (run_cfi(&cr, &row, NULL, 0, ~(uint64_t)0, code_align, data_align) < 0)
        return RULE_OTHER;
    const cfi_row_t initial = row;
    if (run_cfi(&fr, &row, &initial, start, ip, code_align, data_align) < 0)
        return RULE_OTHER;
    return row_rule(&row);
}

static rule_entry_t *rule_set(rule_entry_t *table, uintptr_t ra)
{
    return table + 2 * (size_t)(((uint64_t)ra * 0x9e3779b97f4a7c15ull) >> (64 - RULE_SET_BITS));
}

/* The rule under `key` from the entry e, if e holds it. */
static inline int rule_read(rule_entry_t *e, uint64_t key, uint64_t *rule)
{
    const uint64_t seq = atomic_load_explicit(&e->seq, memory_order_acquire);
    const uint64_t k = atomic_load_explicit(&e->key, memory_order_relaxed);
    const uint64_t r = atomic_load_explicit(&e->rule, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (k != key || (seq & 1) || atomic_load_explicit(&e->seq, memory_order_relaxed) != seq)
        return 0;
    *rule = r;
    return 1;
}

/* A return address met for the first time in this generation (or dropped since): its rule, made
 * and kept. An entry being written by another thread is left to it. */
static __attribute__((noinline)) uint64_t rule_miss(rule_entry_t *table, uintptr_t ra, uint64_t generation)
{
    const uint64_t rule = frame_rule(ra), key = RULE_KEY(ra, generation);
    rule_entry_t *set = rule_set(table, ra), *e = &set[(ra >> 4) & 1];
    for (int i = 0; i < 2; i++) {
        const uint64_t k = atomic_load_explicit(&set[i].key, memory_order_relaxed);
        if (!k || k >> 48 != generation)
            e = &set[i]; /* empty, or of an earlier generation */
    }
    uint64_t seq = atomic_load_explicit(&e->seq, memory_order_relaxed);
    if ((seq & 1) ||
        !atomic_compare_exchange_strong_explicit(&e->seq, &seq, seq + 1, memory_order_relaxed, memory_order_relaxed))
        return rule;
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&e->key, key, memory_order_relaxed);
    atomic_store_explicit(&e->rule, rule, memory_order_relaxed);
    atomic_store_explicit(&e->seq, seq + 2, memory_order_release);
    return rule;
}

/* The last rules this thread used: 16 sets of two by the return address's low bits, the newer
 * first. A hit costs a compare or two, with no sequence count to check (only this thread writes
 * them, and a signal handler's calls that meet the shim busy pass through). 512 bytes of each
 * thread's static TLS. */
#define NEAR_SET_BITS 4
typedef struct near_rule {
    uint64_t key, rule;
} near_rule_t;
static MT_TLS near_rule_t near_rules[2u << NEAR_SET_BITS];

static inline __attribute__((always_inline)) uint64_t rule_of(rule_entry_t *table, uintptr_t ra, uint64_t generation)
{
    const uint64_t key = RULE_KEY(ra, generation);
    near_rule_t *nr = &near_rules[2 * ((ra ^ ra >> NEAR_SET_BITS) & ((1u << NEAR_SET_BITS) - 1))];
    if (MT_LIKELY(nr[0].key == key))
        return nr[0].rule;
    if (MT_LIKELY(nr[1].key == key))
        return nr[1].rule;
    rule_entry_t *set = rule_set(table, ra);
    uint64_t rule;
    if (!rule_read(&set[0], key, &rule) && !rule_read(&set[1], key, &rule))
        rule = rule_miss(table, ra, generation);
    nr[1] = nr[0];
    nr[0] = (near_rule_t){ key, rule };
    return rule;
}

/* One frame up from return address *ra, with its caller's RSP *sp and RBP *bp: 1, or 0 at the end
 * of the stack (where libunwind's fast path stops), -1 where the walk is left to libunwind. */
static inline __attribute__((always_inline)) int step_up(rule_entry_t *table, uint64_t generation, uintptr_t *ra,
                                                         uintptr_t *sp, uintptr_t *bp)
{
    const uint64_t rule = rule_of(table, *ra, generation);
    if (MT_UNLIKELY(rule & (RULE_LAST | RULE_OTHER)))
        return rule & RULE_LAST ? 0 : -1;
    uintptr_t cfa = *sp + (uintptr_t)RULE_CFA_OFF(rule); /* 8 or more above: a move up */
    if (rule & RULE_CFA_RBP) {
        cfa = *bp + (uintptr_t)RULE_CFA_OFF(rule);
        if (cfa == *sp && *(const uintptr_t *)(cfa - 8) == *ra)
            return -1; /* no progress: libunwind's to judge */
    }
    const uintptr_t next = *(const uintptr_t *)(cfa - 8);
    if (rule & RULE_RBP_SAVED)
        *bp = *(const uintptr_t *)(cfa + (uintptr_t)RULE_RBP_OFF(rule));
    *sp = cfa;
    *ra = next;
    if (MT_UNLIKELY(next - 0x4000 >= RA_LIMIT - 0x4000))
        return next < 0x4000 ? 0 : -1; /* below 0x4000 libunwind's fast path stops too */
    return 1;
}

/* The frames' hash, a frame at a time from HASH_SEED, then their number and the unload generation. */
#define HASH_SEED 0x9e3779b97f4a7c15ull
static inline uint64_t hash_mix(uint64_t h, uint64_t v)
{
    h ^= v;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

static uint64_t hash_end(uint64_t h, int n, uint64_t generation)
{
    h = hash_mix(h, (uint64_t)n ^ generation << 8);
    return h ? h : 1;
}

/* The walk from the frame of mt_stack_id's caller, whose return address is ra, whose caller's RSP
 * (the CFA) is sp and RBP bp, as unw_backtrace(frames, N + 8) called in mt_stack_id and then
 * mt_stack_id would see it, N = MTRACE_STACKS: the frames after the leading ones in the shim, at
 * most N, and a frame 0 (the cut marker) when they go on, to out; their count, with *hash the
 * frames' hash (hash_mix over them); -1 where the walk is left to unw_backtrace. */
static int stack_walk(void **out, uint64_t *hash, uintptr_t ra, uintptr_t sp, uintptr_t bp)
{
    rule_entry_t *const table = rules;
    /* A dlclose under way may put another library's code at known return addresses. */
    if (!table || atomic_load(&dlclose_in_flight) || unw_dyn_list->first)
        return -1;
    const uint64_t generation = atomic_load(&unload_generation);
    if (generation >= GENERATION_LIMIT || ra < self_lo || ra >= self_hi) /* the second never */
        return -1;
    /* MTRACE_STACKS is at most 64 (STACK_FRAMES_MAX): the bound only says so */
    const int limit = mt_g.opt.stacks < STACK_FRAMES_MAX ? (int)mt_g.opt.stacks : STACK_FRAMES_MAX,
              kept = limit < STACK_FRAMES_MAX ? limit : STACK_FRAMES_MAX - 1;
    /* The shim's own frames, from ra on: unw_backtrace would give at most limit + 8 frames in all,
     * the first of them in mt_stack_id. */
    int walked = 2, up;
    do {
        if (walked == limit + 8 || (up = step_up(table, generation, &ra, &sp, &bp)) == 0) {
            *hash = HASH_SEED;
            return 0;
        }
        if (up < 0)
            return -1;
        walked++;
    } while (ra >= self_lo && ra < self_hi);
    /* The caller's frames: at most limit + 1 (one more says that the stack goes on). */
    int room = limit + 8 - walked < limit ? limit + 8 - walked : limit, n = 0;
    uint64_t h = HASH_SEED;
    for (;;) {
        if (n < kept)
            h = hash_mix(h, ra);
        out[n++] = (void *)ra;
        if (room-- == 0 || (up = step_up(table, generation, &ra, &sp, &bp)) == 0)
            break;
        if (up < 0)
            return -1;
    }
    if (n > limit) { /* cut: the first `kept` frames and a frame 0 */
        n = kept;
        out[n++] = NULL;
        h = hash_mix(h, 0);
    } else if (n > kept) /* 64 frames, no more */
        h = hash_mix(h, (uintptr_t)out[kept]);
    *hash = h;
    return n;
}

int mt_stacks_init(void)
{
    if (mt_stack_table_init() < 0 || rules_init() < 0)
        return -1;
    dl_iterate_phdr(find_self, (void *)(uintptr_t)mt_stacks_init);
    return 0;
}

void mt_stacks_after_fork_child(void)
{
    /* Ids are per trace file: the child's file starts its own table. */
    mt_stack_table_clear();
    atomic_store(&modules_lock, 0); /* a holder at the fork is gone: the module list is written again */
    /* The rules hold, but an entry another thread was writing at the fork would stay taken. */
    if (rules)
        madvise(rules, sizeof(rule_entry_t) * 2u << RULE_SET_BITS, MADV_DONTNEED);
    atomic_store(&next_id, 0);
    atomic_store(&modules_seen, ~0ull);
    atomic_store(&modules_lock, 0);
}

static void define_stack(mt_thread_t *t, uint32_t id, void *const *f, int n)
{
    uint8_t payload[16 + 64 * 10], *q = payload;
    q = mt_put_uvarint(q, id);
    q = mt_put_uvarint(q, (uint64_t)n);
    uint64_t prev = 0;
    for (int i = 0; i < n; i++) {
        const uint64_t a = (uint64_t)(uintptr_t)f[i];
        q = mt_put_svarint(q, (int64_t)(a - prev));
        prev = a;
    }
    mt_emit_event(t, MT_EV_STACK, payload, (size_t)(q - payload));
}

/* Numbers a stack and writes its definition, after the module list it resolves against; 0 once the
 * ids readers accept are spent (MT_STACK_ID_MAX). */
static uint32_t new_stack(mt_thread_t *t, void *const *f, int n)
{
    if (atomic_load_explicit(&next_id, memory_order_relaxed) >= MT_STACK_ID_MAX)
        return 0;
    const uint32_t id = atomic_fetch_add(&next_id, 1) + 1;
    if (id > MT_STACK_ID_MAX)
        return 0;
    note_modules(t);
    define_stack(t, id, f, n);
    return id;
}

typedef struct stack_seen {
    mt_thread_t *t;
    void *const *f;
    int n;
} stack_seen_t;

static uint32_t number_seen(void *arg)
{
    const stack_seen_t *s = arg;
    return new_stack(s->t, s->f, s->n);
}

/* The frames and their hash from unw_backtrace, where the walk declines: as stack_walk returns
 * them, the first at *first. */
static __attribute__((noinline)) int stack_unwound(void **frames, void ***first, uint64_t *hash)
{
    int n = unw_backtrace(frames, (int)mt_g.opt.stacks + 8);
    int skip = 0;
    while (skip < n && (uintptr_t)frames[skip] >= self_lo && (uintptr_t)frames[skip] < self_hi)
        skip++;
    n -= skip;
    void **f = frames + skip;
    if (n > (int)mt_g.opt.stacks) {
        /* Cut at the limit: the stack ends with a frame 0, so that readers know it went on
         * (doc/trace-format.md, "Callsites"); the unwind asked for 8 frames more, so f[n] exists. */
        n = (int)mt_g.opt.stacks < STACK_FRAMES_MAX ? (int)mt_g.opt.stacks : STACK_FRAMES_MAX - 1;
        f[n++] = NULL;
    }
    uint64_t h = HASH_SEED;
    for (int i = 0; i < n; i++)
        h = hash_mix(h, (uintptr_t)f[i]);
    *first = f;
    *hash = h;
    return n;
}

#ifdef MT_STACK_VERIFY
/* A build with -DMT_STACK_VERIFY checks every walk against unw_backtrace, and says at exit how many
 * stacks each gave and how many differed (never once so far: bench/RESULTS.md). */
#include <stdio.h>
#include <unistd.h>
static _Atomic uint64_t verify_walked, verify_declined, verify_differed;

static void verify_walk(void *const *f, int n, uint64_t h)
{
    void *frames[64 + 8], **vf;
    uint64_t vh;
    const int vn = stack_unwound(frames, &vf, &vh);
    if (n < 0) {
        atomic_fetch_add(&verify_declined, 1);
        return;
    }
    atomic_fetch_add(&verify_walked, 1);
    if (vn == n && vh == h && !memcmp(vf, f, sizeof *f * (size_t)n))
        return;
    if (atomic_fetch_add(&verify_differed, 1) < 20) {
        char line[64 * 20 * 2];
        int len = snprintf(line, sizeof line, "mtrace stack verify: walk %d frames, unw_backtrace %d:\n", n, vn);
        for (int i = 0; i < (n > vn ? n : vn) && len < (int)sizeof line - 48; i++)
            len += snprintf(line + len, sizeof line - (size_t)len, "  %p %p\n", i < n ? f[i] : NULL,
                            i < vn ? vf[i] : NULL);
        if (write(2, line, (size_t)len) < 0)
            return;
    }
}

__attribute__((destructor)) static void verify_report(void)
{
    char line[160];
    const int len = snprintf(line, sizeof line, "mtrace stack verify: %llu walked, %llu declined, %llu differed\n",
                             (unsigned long long)verify_walked, (unsigned long long)verify_declined,
                             (unsigned long long)verify_differed);
    if (write(2, line, (size_t)len) < 0)
        return;
}
#endif

/* mt_stack_id from its caller's frame: ra its return address, sp and bp that frame's RSP (once
 * mt_stack_id returns) and RBP. */
__attribute__((used)) uint32_t mt_stack_id_from(mt_thread_t *t, uintptr_t ra, uintptr_t sp, uintptr_t bp);
__attribute__((used)) uint32_t mt_stack_id_from(mt_thread_t *t, uintptr_t ra, uintptr_t sp, uintptr_t bp)
{
    void *frames[64 + 8], **f = frames;
    uint64_t h;
    int n = stack_walk(frames, &h, ra, sp, bp);
#ifdef MT_STACK_VERIFY
    verify_walk(frames, n, h);
#endif
    if (n < 0)
        n = stack_unwound(frames, &f, &h);
    if (n <= 0)
        return 0;
    /* Read after the unwind: frames in a library that replaced an unloaded one were captured after
     * that dlclose began, so either it is still in flight or its new generation is visible. */
    if (atomic_load(&dlclose_in_flight))
        return new_stack(t, f, n);
    stack_seen_t seen = { t, f, n };
    return mt_stack_table_id(hash_end(h, n, atomic_load(&unload_generation)), number_seen, &seen);
}

/* uint32_t mt_stack_id(mt_thread_t *t): mt_stack_id_from with its caller's frame. At its entry the
 * stack pointer points at the return address, and RBP is the caller's. */
#if defined(__x86_64__)
__asm__(".pushsection .text\n"
        ".globl mt_stack_id\n"
        ".hidden mt_stack_id\n"
        ".type mt_stack_id, @function\n"
        ".p2align 4\n"
        "mt_stack_id:\n"
        "\t.cfi_startproc\n"
        "\tmovq (%rsp), %rsi\n"  /* ra */
        "\tleaq 8(%rsp), %rdx\n" /* sp: the caller's, once this returns */
        "\tmovq %rbp, %rcx\n"    /* bp */
        "\tjmp mt_stack_id_from\n"
        "\t.cfi_endproc\n"
        ".size mt_stack_id, .-mt_stack_id\n"
        ".popsection\n");
#else
uint32_t mt_stack_id(mt_thread_t *t)
{
    return mt_stack_id_from(t, 0, 0, 0); /* the walk declines: unw_backtrace */
}
#endif
