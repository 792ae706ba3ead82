/* mtrace report: what a trace says about a program's allocations, streamed over the trace with
 * memory proportional to the live blocks. */
#ifndef MTRACE_REPORT_H
#define MTRACE_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "mtrace/callers.h"
#include "mtrace/compare.h"
#include "mtrace/flamegraph.h"
#include "mtrace/leaks.h"
#include "mtrace/trace_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MT_HIST_BUCKETS 64

typedef struct mt_callsite {
    const char *function, *file, *module;
    unsigned line;
    uint64_t offset; /* function "??": the return address in its module (module "??": the address) */
    uint64_t calls, bytes, leaked_blocks, leaked_bytes, peak_bytes;
    uint64_t added, shrunk; /* bytes added: allocations' sizes and realloc growth; shrunk: realloc shrink */
} mt_callsite_t;

/* Where a callsite is, as people read it: file:line, else the module (module+0xOFFSET without a
 * symbol, "?? 0xADDRESS" outside every module). */
void mt_callsite_where(const mt_callsite_t *c, char *buf, size_t cap);
/* A callsite's fields function, file, line, module, offset, calls, bytes, leaked_blocks, leaked_bytes,
 * peak_bytes as CSV (--callsites-csv), with no line end; the header line names them. offset is
 * empty for a callsite with a symbol, and for one without (function "??") what tells it apart, as
 * the JSON's "offset": the return address in its module (module "??": the address), in hex. */
#define MT_CALLSITE_CSV_HEADER "function,file,line,module,offset,calls,bytes,leaked_blocks,leaked_bytes,peak_bytes"
void mt_callsite_csv_fields(FILE *f, const mt_callsite_t *c);

typedef struct mt_report {
    const char *path;
    char command[512];
    uint32_t pid; /* the traced process's, from the trace's header */
    uint32_t threads;
    double duration_s;
    uint64_t calls[MT_OP_LAST_CALL + 1];
    uint64_t bytes[MT_OP_LAST_CALL + 1]; /* bytes requested by the calls that returned a block */
    uint64_t failures[MT_OP_LAST_CALL + 1];
    uint64_t allocations; /* calls that made a block */
    uint64_t peak_live_bytes, peak_live_blocks;
    double peak_time_s;
    uint64_t leaked_blocks, leaked_bytes;
    uint64_t temporary, temporary_bytes; /* by temporary_rule */
    int temporary_rule;                  /* MT_TEMP_* */
    /* What successful realloc/reallocarray calls did to their block: growth sums new - old where the
     * block grew (old = 0 for realloc(NULL, n) and for a block allocated before tracing began), shrink
     * old - new where it shrank. bytes[] still counts each call's whole new size. */
    uint64_t realloc_growth, realloc_shrink;
    uint64_t unknown_frees;
    uint64_t size_hist[MT_HIST_BUCKETS]; /* bucket k: sizes in [2^(k-1), 2^k), bucket 0: size 0 */
    uint64_t life_hist[MT_HIST_BUCKETS]; /* bucket k: lifetimes in [2^(k-1), 2^k) ns */
    struct mt_report_thread {
        uint32_t thread, tid;
        uint64_t calls, allocations, bytes, frees, temporary;
        double start_s, end_s;
    } * thread;
    struct mt_report_point {
        double t;
        uint64_t live_bytes, rss_kb, vm_kb; /* rss_kb, vm_kb: the program's, 0 where not sampled */
    } * series;                             /* at every RSS sample, else every 65536 calls */
    size_t nseries;
    mt_callsite_t *callsites; /* sorted by calls, descending */
    size_t ncallsites;
    mt_callers_t callers; /* the caller trees and the wrappers skipped */
    unsigned tree_depth;  /* levels of the trees printed */
    mt_leaks_t leaks;     /* with stacks: the leaks by stack (mtrace/leaks.h) */
    int has_stacks;
    int truncated, complete;
    int ended_at_exec;  /* not complete: the process went on in another image (mt_trace_ended_at_exec) */
    char *continued_in; /* ended at an exec: the trace of what followed, if found beside this one */
    /* With keep_folded: the folded stacks --folded would write (their strings the report's). */
    mt_folded_t *folded;
    size_t nfolded;
    /* The program's own memory outside malloc (trace format 3's VM events), beside the heap's. */
    struct mt_report_own {
        uint64_t maps, brk_maps;        /* mappings made; of them, pages added to the break */
        uint64_t advises;               /* madvise calls that dropped pages of them */
        uint64_t peak_mapped, peak_brk; /* bytes mapped at once, at most; of the break */
        uint64_t anon_peak_kb;          /* the program's RSS less file-backed pages, at most (sampled) */
        uint64_t anon_start_kb;         /* the same at the first sample, before the program's main */
        uint64_t mapped_at_anon_peak, live_at_anon_peak; /* its own mappings' bytes, malloc's live bytes then */
    } own;
    /* private */
    void *priv;
} mt_report_t;

typedef struct mt_report_opts {
    const char *folded;       /* write folded stacks here (weight: see flame_weight) */
    const char *flamegraph;   /* write an SVG flame graph here */
    const char *flame_weight; /* bytes (default), calls, leaked, peak */
    const char *callsites_csv;
    const char *const *skip; /* --skip-frames: fnmatch patterns of allocation wrappers */
    size_t nskip;
    int no_auto_skip;     /* no detection of wrappers */
    unsigned tree_depth;  /* levels of the caller trees printed (0: MT_TREE_DEPTH) */
    const char *suppress; /* --suppress: a file of leak suppressions (mtrace/suppress.h) */
    int temporary_rule;   /* --temporary: MT_TEMP_THREAD (default) or MT_TEMP_HEAPTRACK */
    unsigned jobs;        /* -j: threads reading the trace (0 or 1: the calling thread alone) */
    int keep_folded;      /* keep the folded stacks in r->folded (several traces' one --folded) */
} mt_report_opts_t;

/* Which allocations are temporary (doc/report.md, "Temporary allocations"):
 *   MT_TEMP_THREAD: a block freed by the thread that made it before that thread's next allocation
 *     (frees of other blocks in between allowed; realloc's release of its old block is no free);
 *   MT_TEMP_HEAPTRACK: heaptrack's rule, over all threads in time order: a free (realloc's release of
 *     its old block included, as heaptrack records realloc as a free and an allocation) of the most
 *     recent allocation, with no other free in between. */
enum { MT_TEMP_THREAD, MT_TEMP_HEAPTRACK };

#define MT_TREE_DEPTH 5

/* The outermost frame of a stack cut at the recorder's frame limit (a STACK event's last frame 0,
 * doc/trace-format.md): in the callsites, trees, flame graphs and leaks. */
#define MT_TRUNCATED_FRAME "[truncated]"

/* Reads the trace and fills the report. 0, or negative with the message in err. */
int mt_report_build(mt_report_t *r, const char *path, const mt_report_opts_t *o, mt_error_t *err);
void mt_report_print(const mt_report_t *r, FILE *f, mt_table_fmt_t fmt, unsigned top);
void mt_report_free(mt_report_t *r);

/* The text report's table of calls: per function its share of the calls, calls, bytes requested
 * and failures, then the total (arrays indexed by op, MT_OP_LAST_CALL + 1 long). */
void mt_report_calls_table(FILE *f, const uint64_t *calls, const uint64_t *bytes, const uint64_t *failures);
/* The same three tables as JSON members "calls", "bytes", "failures", each an object by function. */
void mt_report_json_calls(struct mt_json *j, const uint64_t *calls, const uint64_t *bytes, const uint64_t *failures);
/* One callsite as a JSON object: function, file, line, module (offset without a symbol), calls,
 * bytes, leaked_blocks, leaked_bytes, peak_bytes, bytes_added, bytes_shrunk; left open for more
 * members (the caller ends it). */
void mt_report_json_callsite(struct mt_json *j, const mt_callsite_t *c);

/* What the "top callsites by ..." tables rank by. */
typedef enum { MT_SITE_CALLS, MT_SITE_BYTES, MT_SITE_ADDED, MT_SITE_PEAK, MT_SITE_LEAKED } mt_site_key_t;
uint64_t mt_callsite_key(const mt_callsite_t *c, mt_site_key_t k);
/* The positions of the n callsites into order[n], by key k, highest first, equal keys in their
 * order in c. 0, or -ENOMEM. */
int mt_callsites_rank(const mt_callsite_t *c, size_t n, mt_site_key_t k, size_t *order);
/* A table row's start: the callsite's value by key k (bytes, or a count for MT_SITE_CALLS), its
 * function and where it is, with no line end. */
void mt_callsite_row(FILE *f, const mt_callsite_t *c, mt_site_key_t k);

/* Several traces as one (analysis/report_many.c): what adds up across processes. */
typedef struct mt_report_total {
    uint64_t traces, threads; /* traces read (added), and their threads summed */
    uint64_t failed;          /* traces that could not be read (mt_report_total_fail): in no figure */
    /* Traces read that go on from another trace read, the same process after its exec (one file per
     * program image): traces - continuing is the processes, threads - continuing the threads, since
     * the thread that execs goes on in the new image. */
    uint64_t continuing;
    uint64_t calls[MT_OP_LAST_CALL + 1], bytes[MT_OP_LAST_CALL + 1], failures[MT_OP_LAST_CALL + 1];
    uint64_t allocations, leaked_blocks, leaked_bytes, temporary;
    uint64_t peak_sum, peak_max;    /* the processes' live peaks summed (not at one time), and the largest */
    uint64_t ended_at_exec;         /* traces whose process went on in another program image */
    uint64_t incomplete, truncated; /* traces not finished (killed, crashed) but at an exec; truncated */
    uint64_t with_stacks;           /* traces recorded with stacks: those the callsites come from */
    /* The traces' callsites merged by what they mean, never by address (ASLR moves each process's
     * code): by function, file, line and module; a frame without a symbol by module and offset in
     * it (outside every module: by address, which only forked processes share). Their figures are
     * summed, peak_bytes being their shares of each process's own peak; their strings belong to the
     * total. One entry per distinct callsite, in the order first met. */
    mt_callsite_t *callsites;
    struct mt_site_traces {
        uint64_t traces;  /* traces with calls or leaks at the callsite */
        uint64_t leaking; /* of them, those that leaked there */
    } * site_traces;      /* by callsite */
    size_t ncallsites;
    /* The folded stacks of the reports built with keep_folded, each under a first frame that names
     * its process, "COMMAND (pid N)": one flame graph of the process tree, a tower per process. */
    mt_folded_t *folded;
    size_t nfolded;
    void *priv; /* the callsites' strings and their index */
} mt_report_total_t;
/* Adds a trace's report to the totals (zeroed first by the caller). 0, or -ENOMEM (the totals are
 * then incomplete, to be freed). */
int mt_report_total_add(mt_report_total_t *t, const mt_report_t *r);
/* Notes a trace that could not be read, with its error (err->msg, which names the file and the
 * offset): the totals then say that they are not the whole that was asked for, and name it. 0, or
 * -ENOMEM. */
int mt_report_total_fail(mt_report_total_t *t, const char *path, const char *error);
/* The totals as text (after the traces' reports) or one JSON object (CSV: the text's table); `top`
 * as mt_report_print's, for the callsites. 0, or -ENOMEM before anything is printed. */
int mt_report_total_print(const mt_report_total_t *t, FILE *f, mt_table_fmt_t fmt, unsigned top);
/* The merged callsites as --callsites-csv writes one trace's, by calls, with two fields more:
 * traces, leaking_traces. 0, or -ENOMEM before anything is written. */
int mt_report_total_callsites_csv(const mt_report_total_t *t, FILE *f);
void mt_report_total_free(mt_report_total_t *t);
/* One self-contained HTML page: the report, its plots, the flame graph (an SVG file written by
 * mt_report_build, or NULL) and the replay results' table and plots. 0, or a negative errno with the
 * message in err and no page. A plot that cannot be drawn is left out of the page, with a warning
 * on stderr. */
int mt_report_html(const mt_report_t *r, const char *out, const char *const *results, int nresults,
                   const char *flame_svg, mt_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
