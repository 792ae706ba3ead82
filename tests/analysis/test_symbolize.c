/* The symbolizer against what a trace may hold: addresses in no module, modules whose file is
 * missing, not an ELF file or of another build, stripped objects, the vdso, garbage segments, and
 * modules of several generations at the same addresses. None of it may crash; what cannot be
 * resolved comes back as "??" or module+offset. Also the rule for allocator frames. */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "libcallee.h"
#include "mtrace/symbolize.h"
#include "mtrace/module_event.h"
#include "test_util.h"

static mt_symbolizer_t *open_sym(const char *exe)
{
    mt_symbolizer_t *s = NULL;
    mt_error_t err;
    ck_assert_msg(mt_symbolizer_open(&s, exe, &err) == 0, "%s", err.msg);
    ck_assert_ptr_nonnull(s);
    return s;
}

/* A module definition with one segment [vaddr, vaddr + memsz) at `base`. */
static mt_module_def_t module(uint64_t generation, uint64_t base, uint64_t vaddr, uint64_t memsz, const char *name)
{
    mt_module_def_t m;
    memset(&m, 0, sizeof m);
    m.generation = generation;
    m.base = base;
    m.nseg = 1;
    m.seg[0].vaddr = vaddr;
    m.seg[0].memsz = memsz;
    m.seg[0].offset = vaddr;
    m.name = name;
    m.name_len = (uint32_t)strlen(name);
    return m;
}

static void assert_unresolved(mt_symbolizer_t *s, uint64_t ra, const char *module, uint64_t offset)
{
    mt_symbol_t sym;
    memset(&sym, 0x5a, sizeof sym);
    ck_assert_int_eq(mt_symbolize(s, ra, &sym), 0);
    ck_assert_msg(sym.function && !strcmp(sym.function, "??"), "0x%llx: function %s", (unsigned long long)ra,
                  sym.function ? sym.function : "(null)");
    ck_assert_ptr_null(sym.file);
    ck_assert_uint_eq(sym.line, 0);
    ck_assert_msg(sym.module && !strcmp(sym.module, module), "0x%llx: module %s, expected %s", (unsigned long long)ra,
                  sym.module ? sym.module : "(null)", module);
    ck_assert_msg(sym.offset == offset, "0x%llx: offset 0x%llx, expected 0x%llx", (unsigned long long)ra,
                  (unsigned long long)sym.offset, (unsigned long long)offset);
}

static const char *module_of(mt_symbolizer_t *s, uint64_t ra)
{
    mt_symbol_t sym;
    ck_assert_int_eq(mt_symbolize(s, ra, &sym), 0);
    return sym.module;
}

/* ---- this process's modules -------------------------------------------------------------------- */

typedef struct self_modules {
    mt_module_def_t m[256];
    char names[256][512];
    size_t n;
} self_modules_t;

static size_t note_build_id(const struct dl_phdr_info *info, uint8_t *out)
{
    const uint8_t *id = NULL;
    const size_t n = mt_build_id(info, &id);
    if (n > MT_MODULE_MAX_ID)
        return 0;
    if (n)
        memcpy(out, id, n);
    return n;
}

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    self_modules_t *sm = arg;
    if (sm->n == 256)
        return 1;
    mt_module_def_t *m = &sm->m[sm->n];
    memset(m, 0, sizeof *m);
    m->generation = 1;
    m->base = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum && m->nseg < MT_MAX_SEGMENTS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        m->seg[m->nseg].vaddr = ph->p_vaddr;
        m->seg[m->nseg].memsz = ph->p_memsz;
        m->seg[m->nseg].offset = ph->p_offset;
        m->nseg++;
    }
    m->build_id_len = (uint32_t)note_build_id(info, m->build_id);
    snprintf(sm->names[sm->n], sizeof sm->names[sm->n], "%s", info->dlpi_name ? info->dlpi_name : "");
    m->name = sm->names[sm->n];
    m->name_len = (uint32_t)strlen(m->name);
    sm->n++;
    return 0;
}

static self_modules_t *self_modules(void)
{
    self_modules_t *sm = calloc(1, sizeof *sm);
    ck_assert_ptr_nonnull(sm);
    dl_iterate_phdr(collect, sm);
    ck_assert_uint_gt(sm->n, 2);
    return sm;
}

static char *self_exe(void)
{
    static char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ck_assert_int_gt(n, 0);
    exe[n] = 0;
    return exe;
}

static const mt_module_def_t *find_self(const self_modules_t *sm, const char *suffix)
{
    const size_t k = strlen(suffix);
    for (size_t i = 0; i < sm->n; i++)
        if (sm->m[i].name_len >= k && !strcmp(sm->m[i].name + sm->m[i].name_len - k, suffix))
            return &sm->m[i];
    return NULL;
}

/* ---- tests ------------------------------------------------------------------------------------- */

START_TEST(unknown_addresses)
{
    mt_symbolizer_t *s = open_sym("/nonexistent/prog");
    const uint64_t addrs[] = { 0, 1, 2, 0xdeadbeef, 0x7fffffffffffull, UINT64_MAX - 1, UINT64_MAX };
    for (size_t i = 0; i < sizeof addrs / sizeof addrs[0]; i++) {
        assert_unresolved(s, addrs[i], "??", addrs[i]);
        assert_unresolved(s, addrs[i], "??", addrs[i]); /* cached */
    }
    /* with modules, still nothing outside them */
    mt_module_def_t m = module(1, 0x10000000, 0, 0x1000, "/nonexistent/libx.so");
    ck_assert_int_eq(mt_symbolizer_add_module(s, &m), 0);
    for (size_t i = 0; i < sizeof addrs / sizeof addrs[0]; i++)
        assert_unresolved(s, addrs[i], "??", addrs[i]);
    /* the lookup is address - 1: a return address at a module's start is the end of what precedes */
    assert_unresolved(s, 0x10000000, "??", 0x10000000);
    assert_unresolved(s, 0x10000001, "libx.so", 1);
    assert_unresolved(s, 0x10001000, "libx.so", 0x1000);
    assert_unresolved(s, 0x10001001, "??", 0x10001001);
    ck_assert_int_eq(mt_symbolizer_add_module(s, NULL), -EINVAL);
    mt_symbolizer_close(s);
    mt_symbolizer_close(NULL);
}
END_TEST

START_TEST(missing_files)
{
    mt_symbolizer_t *s = open_sym("/nonexistent/dir/prog");
    mt_module_def_t m = module(1, 0x7f1234560000ull, 0, 0x2000, "/nonexistent/dir/libgone.so.1");
    m.nseg = 2;
    m.seg[1].vaddr = 0x3000;
    m.seg[1].memsz = 0x1000;
    m.seg[1].offset = 0x3000;
    m.build_id_len = 20;
    memset(m.build_id, 0x5a, 20);
    ck_assert_int_eq(mt_symbolizer_add_module(s, &m), 0);
    /* the main program, by the name given to open */
    mt_module_def_t exe = module(1, 0x555555554000ull, 0, 0x4000, "");
    ck_assert_int_eq(mt_symbolizer_add_module(s, &exe), 0);

    assert_unresolved(s, 0x7f1234560100ull, "libgone.so.1", 0x100);
    assert_unresolved(s, 0x7f1234562800ull, "??", 0x7f1234562800ull); /* between the segments */
    assert_unresolved(s, 0x7f1234563010ull, "libgone.so.1", 0x3010);
    assert_unresolved(s, 0x555555554010ull, "prog", 0x10);
    assert_unresolved(s, 0x555555554010ull, "prog", 0x10);
    mt_symbolizer_close(s);
}
END_TEST

START_TEST(not_elf_files)
{
    char *dir = make_temp_dir("symbolize");
    char *text = path_in(dir, "libtext.so");
    FILE *f = fopen(text, "w");
    ck_assert_ptr_nonnull(f);
    fputs("not an ELF file\n", f);
    fclose(f);
    char *empty = path_in(dir, "libempty.so");
    f = fopen(empty, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);

    mt_symbolizer_t *s = open_sym("");
    mt_module_def_t m[] = {
        module(1, 0x100000, 0, 0x1000, text),
        module(1, 0x200000, 0, 0x1000, empty),
        module(1, 0x300000, 0, 0x1000, dir), /* a directory */
        module(1, 0x400000, 0, 0x1000, "/"),
        module(1, 0x500000, 0, 0x1000, "linux-gate.so.1"), /* no path: not looked up in the cwd */
        module(1, 0x600000, 0, 0x1000, ""),                /* the main program, with no path given */
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        m[i].build_id_len = 8;
        memset(m[i].build_id, (int)(0x11 * (i + 1)), 8);
        ck_assert_int_eq(mt_symbolizer_add_module(s, &m[i]), 0);
    }
    assert_unresolved(s, 0x100010, "libtext.so", 0x10);
    assert_unresolved(s, 0x200010, "libempty.so", 0x10);
    mt_symbol_t sym;
    ck_assert_int_eq(mt_symbolize(s, 0x300010, &sym), 0);
    ck_assert_str_eq(sym.function, "??");
    ck_assert_int_eq(mt_symbolize(s, 0x400010, &sym), 0);
    ck_assert_str_eq(sym.function, "??");
    assert_unresolved(s, 0x500010, "linux-gate.so.1", 0x10);
    assert_unresolved(s, 0x600010, "??", 0x10);
    mt_symbolizer_close(s);
    remove_tree(dir);
    free(text);
    free(empty);
    free(dir);
}
END_TEST

START_TEST(garbage_segments)
{
    mt_symbolizer_t *s = open_sym("/nonexistent/prog");
    mt_module_def_t none = module(1, 0x100000, 0, 0x1000, "/nonexistent/libnone.so");
    none.nseg = 0;
    mt_module_def_t zero = module(1, 0x200000, 0, 0, "/nonexistent/libzero.so");
    mt_module_def_t wrap = module(1, UINT64_MAX - 0x100, 0x80, 0x1000, "/nonexistent/libwrap.so");
    mt_module_def_t huge = module(1, 0, 0, UINT64_MAX, "/nonexistent/libhuge.so");
    ck_assert_int_eq(mt_symbolizer_add_module(s, &none), 0);
    ck_assert_int_eq(mt_symbolizer_add_module(s, &zero), 0);
    ck_assert_int_eq(mt_symbolizer_add_module(s, &wrap), 0);
    assert_unresolved(s, 0x100010, "??", 0x100010);
    assert_unresolved(s, 0x200001, "??", 0x200001);
    assert_unresolved(s, UINT64_MAX, "??", UINT64_MAX);
    assert_unresolved(s, 5, "??", 5);
    /* a module over the whole address space, of a later generation: it owns everything */
    huge.generation = 2;
    ck_assert_int_eq(mt_symbolizer_add_module(s, &huge), 0);
    assert_unresolved(s, 0x100010, "libhuge.so", 0x100010);
    assert_unresolved(s, 0, "??", 0);
    mt_symbolizer_close(s);
}
END_TEST

START_TEST(generations)
{
    const uint64_t b = 0x7f0000000000ull;
    mt_module_def_t old_m = module(1, b, 0, 0x3000, "/nonexistent/old.so");
    mt_module_def_t new_m = module(2, b, 0x1000, 0x1000, "/nonexistent/new.so");

    /* in order; a lookup before the later generation arrives sees the earlier one */
    mt_symbolizer_t *s = open_sym("/nonexistent/prog");
    ck_assert_int_eq(mt_symbolizer_add_module(s, &old_m), 0);
    ck_assert_str_eq(module_of(s, b + 0x1500), "old.so");
    ck_assert_int_eq(mt_symbolizer_add_module(s, &new_m), 0);
    ck_assert_str_eq(module_of(s, b + 0x500), "old.so");
    ck_assert_str_eq(module_of(s, b + 0x1500), "new.so");
    ck_assert_str_eq(module_of(s, b + 0x2500), "old.so");
    assert_unresolved(s, b + 0x1500, "new.so", 0x1500);
    /* the same snapshot again changes nothing */
    old_m.generation = 1;
    ck_assert_int_eq(mt_symbolizer_add_module(s, &old_m), 0);
    ck_assert_int_eq(mt_symbolizer_add_module(s, &new_m), 0);
    ck_assert_str_eq(module_of(s, b + 0x1500), "new.so");
    /* old.so seen again in generation 3: now it is the latest everywhere */
    old_m.generation = 3;
    ck_assert_int_eq(mt_symbolizer_add_module(s, &old_m), 0);
    ck_assert_str_eq(module_of(s, b + 0x1500), "old.so");
    mt_symbolizer_close(s);

    /* out of order: the later generation wins whatever the order of addition */
    old_m.generation = 1;
    s = open_sym("/nonexistent/prog");
    ck_assert_int_eq(mt_symbolizer_add_module(s, &new_m), 0);
    ck_assert_int_eq(mt_symbolizer_add_module(s, &old_m), 0);
    ck_assert_str_eq(module_of(s, b + 0x500), "old.so");
    ck_assert_str_eq(module_of(s, b + 0x1500), "new.so");
    ck_assert_str_eq(module_of(s, b + 0x2500), "old.so");
    ck_assert_str_eq(module_of(s, b + 0x3500), "??");
    mt_symbolizer_close(s);
}
END_TEST

START_TEST(wrong_build_id)
{
    self_modules_t *sm = self_modules();
    const mt_module_def_t *callee = find_self(sm, "/libcallee.so");
    ck_assert_msg(callee != NULL, "libcallee.so is not loaded");
    ck_assert_uint_gt(callee->build_id_len, 0);
    const uint64_t ra = (uint64_t)(uintptr_t)&callee_alloc + 1;

    /* the right build-id: resolved */
    mt_symbolizer_t *s = open_sym(self_exe());
    ck_assert_int_eq(mt_symbolizer_add_module(s, callee), 0);
    mt_symbol_t sym;
    ck_assert_int_eq(mt_symbolize(s, ra, &sym), 0);
    ck_assert_str_eq(sym.function, "callee_alloc");
    ck_assert_str_eq(sym.module, "libcallee.so");
    ck_assert_ptr_nonnull(sym.file);
    ck_assert_ptr_nonnull(strstr(sym.file, "libcallee.c"));
    ck_assert_uint_gt(sym.line, 0);
    ck_assert_uint_eq(sym.offset, ra - callee->base);
    mt_symbolizer_close(s);

    /* no build-id recorded: nothing to check against, the file is taken */
    mt_module_def_t m = *callee;
    m.build_id_len = 0;
    s = open_sym(self_exe());
    ck_assert_int_eq(mt_symbolizer_add_module(s, &m), 0);
    ck_assert_int_eq(mt_symbolize(s, ra, &sym), 0);
    ck_assert_str_eq(sym.function, "callee_alloc");
    mt_symbolizer_close(s);

    /* another build's id (and no such file under /usr/lib/debug/.build-id): by name only */
    const uint32_t lens[] = { callee->build_id_len, 20, 1, 64 };
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        m = *callee;
        m.build_id_len = lens[i];
        memset(m.build_id, 0xab, sizeof m.build_id);
        s = open_sym(self_exe());
        ck_assert_int_eq(mt_symbolizer_add_module(s, &m), 0);
        assert_unresolved(s, ra, "libcallee.so", ra - callee->base);
        mt_symbolizer_close(s);
    }
    free(sm);
}
END_TEST

/* A symbolizer that knows every module of this process (listed in *sm, to free). */
static mt_symbolizer_t *open_self(self_modules_t **sm)
{
    *sm = self_modules();
    mt_symbolizer_t *s = open_sym(self_exe());
    for (size_t i = 0; i < (*sm)->n; i++)
        ck_assert_int_eq(mt_symbolizer_add_module(s, &(*sm)->m[i]), 0);
    return s;
}

/* The symbol table read once and bisected: every address inside a function, its first byte, its
 * middle and its last, gives that function (or an alias at its address), in libc (.dynsym only) and
 * in libcallee.so (.symtab); the main program's own symbols too. */
START_TEST(symbol_table_covers_whole_functions)
{
    self_modules_t *sm;
    mt_symbolizer_t *s = open_self(&sm);
    void *self = dlopen(NULL, RTLD_LAZY);
    ck_assert_ptr_nonnull(self);
    static const char *const names[] = { "getpid", "qsort", "strtol", "fopen", "callee_alloc", "callee_call" };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        void *fn = dlsym(self, names[k]);
        ck_assert_msg(fn != NULL, "%s: %s", names[k], dlerror());
        Dl_info info;
        const ElfW(Sym) *es = NULL;
        ck_assert(dladdr1(fn, &info, (void **)&es, RTLD_DL_SYMENT) != 0 && es != NULL);
        ck_assert_uint_gt(es->st_size, 2);
        const uint64_t at[] = { 0, es->st_size / 2, es->st_size - 1 };
        for (size_t j = 0; j < 3; j++) {
            mt_symbol_t sym;
            /* mt_symbolize takes a return address and looks up the byte before it */
            ck_assert_int_eq(mt_symbolize(s, (uint64_t)(uintptr_t)fn + at[j] + 1, &sym), 0);
            void *named = dlsym(self, sym.function);
            ck_assert_msg(!strcmp(sym.function, names[k]) || named == fn, "%s+%llu symbolized as %s", names[k],
                          (unsigned long long)at[j], sym.function);
        }
    }
    dlclose(self);
    mt_symbolizer_close(s);
    free(sm);
}
END_TEST

/* A copy of libcallee.so stripped of .symtab: its static function hidden_alloc has no symbol, so
 * its frames read module+0xSTART, the function's start from .eh_frame_hdr: one name for every
 * address of the function (the offset where the unstripped library has hidden_alloc's symbol). */
START_TEST(stripped_function_named_by_its_start)
{
    self_modules_t *sm = self_modules();
    const mt_module_def_t *callee = find_self(sm, "/libcallee.so");
    ck_assert_ptr_nonnull(callee);
    char *dir = make_temp_dir("symbolize");
    char *copy = path_in(dir, "libstripped.so"), *cmd = NULL;
    ck_assert_int_ge(asprintf(&cmd, "strip --strip-all -o '%s' '%s'", copy, callee->name), 0);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
    mt_module_def_t m = *callee;
    m.name = copy;
    m.name_len = (uint32_t)strlen(copy);
    mt_symbolizer_t *whole = open_sym(""), *stripped = open_sym("");
    ck_assert_int_eq(mt_symbolizer_add_module(whole, callee), 0);
    ck_assert_int_eq(mt_symbolizer_add_module(stripped, &m), 0);
    const uint64_t fn = (uint64_t)(uintptr_t)callee_hidden();
    mt_symbol_t sym;
    ck_assert_int_eq(mt_symbolize(whole, fn + 1, &sym), 0);
    ck_assert_str_eq(sym.function, "hidden_alloc");
    for (uint64_t at = 1; at <= 8; at += 7) {
        ck_assert_int_eq(mt_symbolize(stripped, fn + at, &sym), 0);
        ck_assert_str_eq(sym.function, "??");
        ck_assert_str_eq(sym.module, "libstripped.so");
        ck_assert_uint_eq(sym.offset, fn + at - callee->base);
        ck_assert_uint_eq(sym.start, fn - callee->base);
        char label[256], want[256];
        mt_symbol_label(&sym, label, sizeof label);
        snprintf(want, sizeof want, "libstripped.so+0x%llx", (unsigned long long)(fn - callee->base));
        ck_assert_str_eq(label, want);
    }
    /* an exported function keeps its name (.dynsym) */
    ck_assert_int_eq(mt_symbolize(stripped, (uint64_t)(uintptr_t)&callee_alloc + 1, &sym), 0);
    ck_assert_str_eq(sym.function, "callee_alloc");
    mt_symbolizer_close(whole);
    mt_symbolizer_close(stripped);
    remove_tree(dir);
    free(cmd);
    free(copy);
    free(dir);
    free(sm);
}
END_TEST

/* Rust names, both manglings, demangled (functions of libcallee.so named with __asm__). */
START_TEST(rust_names_demangled)
{
    self_modules_t *sm;
    mt_symbolizer_t *s = open_self(&sm);
    void *self = dlopen(NULL, RTLD_LAZY);
    ck_assert_ptr_nonnull(self);
    static const char *const cases[][2] = {
        { "_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write" },
        { "_RNvNtCs1234_7mycrate3bar3baz", "mycrate::bar::baz" },
    };
    for (size_t k = 0; k < 2; k++) {
        void *fn = dlsym(self, cases[k][0]);
        ck_assert_msg(fn != NULL, "%s: %s", cases[k][0], dlerror());
        mt_symbol_t sym;
        ck_assert_int_eq(mt_symbolize(s, (uint64_t)(uintptr_t)fn + 1, &sym), 0);
        ck_assert_str_eq(sym.function, cases[k][1]);
    }
    dlclose(self);
    mt_symbolizer_close(s);
    free(sm);
}
END_TEST

START_TEST(stripped_libc_and_vdso)
{
    self_modules_t *sm = self_modules();
    mt_symbolizer_t *s = open_sym(self_exe());
    for (size_t i = 0; i < sm->n; i++)
        ck_assert_int_eq(mt_symbolizer_add_module(s, &sm->m[i]), 0);

    /* libc.so.6 is stripped in Debian (no .symtab; .dynsym only, unless debug info is installed) */
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(libc);
    void *fn = dlsym(libc, "getpid");
    ck_assert_ptr_nonnull(fn);
    mt_symbol_t sym;
    ck_assert_int_eq(mt_symbolize(s, (uint64_t)(uintptr_t)fn + 1, &sym), 0);
    ck_assert_str_eq(sym.module, "libc.so.6");
    ck_assert_msg(strstr(sym.function, "getpid") != NULL, "getpid symbolized as %s", sym.function);
    ck_assert(mt_symbol_is_allocator_frame(&sym));
    dlclose(libc);

    /* the vdso: no file of that name; no crash, module+offset at least */
    const uint64_t vdso = getauxval(AT_SYSINFO_EHDR);
    if (vdso) {
        ck_assert_int_eq(mt_symbolize(s, vdso + 0x10, &sym), 0);
        const mt_module_def_t *v = find_self(sm, "linux-vdso.so.1");
        if (v) {
            ck_assert_str_eq(sym.module, "linux-vdso.so.1");
            ck_assert_uint_eq(sym.offset, vdso + 0x10 - v->base);
        }
    }

    /* every loaded object resolves its own first bytes to itself, or "??" for unnamed ones */
    for (size_t i = 0; i < sm->n; i++) {
        if (sm->m[i].nseg == 0 || sm->m[i].seg[0].memsz < 2)
            continue;
        ck_assert_int_eq(mt_symbolize(s, sm->m[i].base + sm->m[i].seg[0].vaddr + 1, &sym), 0);
        ck_assert_ptr_nonnull(sym.function);
        ck_assert_ptr_nonnull(sym.module);
    }
    mt_symbolizer_close(s);
    free(sm);
}
END_TEST

START_TEST(allocator_frames)
{
    static const struct {
        const char *function, *module;
        int allocator;
    } cases[] = {
        { "malloc", "libc.so.6", 1 },
        { "__libc_malloc", "libc.so.6", 1 },
        { "fopen", "libc.so.6", 1 },
        { "??", "libc.so.6", 1 },
        { "_dl_allocate_tls", "ld-linux-x86-64.so.2", 1 },
        { "??", "ld-linux-aarch64.so.1", 1 },
        { "malloc", "libmtrace.so", 1 },
        { "_Znwm", "libstdc++.so.6", 1 },
        { "_Znam", "libstdc++.so.6", 1 },
        { "_ZnwmRKSt9nothrow_t", "libstdc++.so.6", 1 },
        { "_ZnamRKSt9nothrow_t", "libstdc++.so.6", 1 },
        { "_ZnwmSt11align_val_t", "libstdc++.so.6", 1 },
        { "_ZnamSt11align_val_tRKSt9nothrow_t", "libstdc++.so.6", 1 },
        { "_Znwj", "libstdc++.so.6", 1 },
        { "_ZdlPvm", "libstdc++.so.6", 1 },
        { "operator new(unsigned long)", "libstdc++.so.6", 1 },
        { "_Znwm", "prog", 1 }, /* a replacement operator new */
        { "_ZNSt15__new_allocatorIiE8allocateEmPKv", "prog", 1 },
        { "_ZN9__gnu_cxx13new_allocatorIiE8allocateEmPKv", "prog", 1 },
        { "_ZNSt16allocator_traitsISaIiEE8allocateERS0_m", "prog", 1 },
        { "strdup", "libfoo.so", 1 },
        { "__strdup", "libc.musl-x86_64.so.1", 1 },
        { "strndup", "prog", 1 },
        { "asprintf", "prog", 1 },
        { "__vasprintf_internal", "prog", 1 },
        { "reallocarray", "prog", 1 },
        /* not allocator frames */
        { "main", "prog", 0 },
        { "callee_alloc", "libcallee.so", 0 },
        { "_ZNSt6vectorIiSaIiEE9push_backERKi", "prog", 0 },
        { "_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE9_M_createERmm", "libstdc++.so.6", 0 },
        { "_ZNSt15__new_allocatorIiEC2Ev", "prog", 0 },
        { "strdup_like", "prog", 0 },
        { "foo", "libcrypto.so.3", 0 },
        { "foo", "libcurl.so.4", 0 },
        { "??", "??", 0 },
        { "??", "prog", 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const mt_symbol_t sym = { cases[i].function, NULL, 0, cases[i].module, 0, 0 };
        ck_assert_msg(mt_symbol_is_allocator_frame(&sym) == cases[i].allocator, "%s in %s: expected %s",
                      cases[i].function, cases[i].module, cases[i].allocator ? "allocator" : "callsite");
    }
    ck_assert(!mt_symbol_is_allocator_frame(NULL));
}
END_TEST

static Suite *symbolize_suite(void)
{
    Suite *s = suite_create("symbolize");
    TCase *tc = tcase_create("robustness");
    tcase_add_test(tc, unknown_addresses);
    tcase_add_test(tc, missing_files);
    tcase_add_test(tc, not_elf_files);
    tcase_add_test(tc, garbage_segments);
    tcase_add_test(tc, generations);
    tcase_add_test(tc, wrong_build_id);
    tcase_add_test(tc, stripped_libc_and_vdso);
    tcase_add_test(tc, symbol_table_covers_whole_functions);
    tcase_add_test(tc, stripped_function_named_by_its_start);
    tcase_add_test(tc, rust_names_demangled);
    suite_add_tcase(s, tc);
    tc = tcase_create("allocator");
    tcase_add_test(tc, allocator_frames);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(symbolize_suite());
}
