/* Fuzz target: the JSON reader (mt_json_load) as mtrace compare and plot use it on replay results:
 * the document is parsed, walked whole, looked up by the keys the tools read, and printed as a
 * comparison table in every format. */
#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "mtrace/compare.h"
#include "mtrace/json_reader.h"

static double walk(const mt_jval_t *v, int depth)
{
    if (depth > 100)
        fz_fail("JSON nested %d deep", depth);
    double s = v->num;
    switch (v->type) {
    case MT_JSTR:
        if (!v->str)
            fz_fail("a string value without its string");
        s += (double)strlen(v->str);
        break;
    case MT_JARR:
    case MT_JOBJ:
        for (size_t i = 0; i < v->n; i++) {
            if (v->type == MT_JOBJ)
                s += (double)strlen(v->keys[i]);
            s += walk(&v->items[i], depth + 1);
        }
        break;
    default:
        break;
    }
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_memfile(0, data, size);
    mt_jval_t *v;
    mt_error_t err;
    if (mt_json_load(path, &v, &err) < 0)
        return 0;
    volatile double sink = walk(v, 0);
    static const char *const keys[] = {
        "kind",   "allocator",  "settings",       "glibc_tunables",        "rss_series", "wall_us",
        "cpu_us", "max_rss_kb", "ideal_pages_kb", "rss_growth_over_ideal", "avg_cycles", "p99_cycles",
        ""
    };
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        sink += mt_json_num(v, keys[k], 0);
        const char *s = mt_json_str_at(v, keys[k], NULL);
        if (s)
            sink += (double)strlen(s);
        const mt_jval_t *m = mt_json_get(v, keys[k]);
        if (m)
            sink += walk(m, 0);
    }
    (void)sink;
    mt_json_free(v);
    /* The comparison table (it loads the file again, twice: a base and one more). */
    FILE *null = fopen("/dev/null", "w");
    if (!null)
        fz_fail("cannot open /dev/null");
    const char *const paths[2] = { path, path };
    /* a file that is not a replay result is said in err, not printed */
    for (int fmt = MT_TABLE_TEXT; fmt <= MT_TABLE_JSON; fmt++)
        mt_compare_print(null, paths, 2, (mt_table_fmt_t)fmt, 0, &err);
    fclose(null);
    return 0;
}
