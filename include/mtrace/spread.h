/* Repeated measurements of one figure (a replay's CPU time, wall time, peak RSS over N runs): their
 * median and spread, and the rule by which two of them are called different or within noise. */
#ifndef MTRACE_SPREAD_H
#define MTRACE_SPREAD_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* From this many runs on, the spread is the quartiles (one disturbed run does not widen it); below,
 * it is min..max, all there is. */
#define MT_SPREAD_QUARTILES_FROM 4

typedef struct mt_spread {
    size_t n; /* runs */
    double min, q1, median, q3, max;
} mt_spread_t;

/* The median, quartiles and extremes of v[0..n-1] (n >= 1), sorting v in place. Quartiles and the
 * median interpolate linearly between the sorted values (the median of 4 values is the mean of the
 * middle two; numpy's and R's default). */
void mt_spread_of(mt_spread_t *s, double *v, size_t n);

/* The interval that stands for the noise: q1..q3 from MT_SPREAD_QUARTILES_FROM runs on, else
 * min..max. */
void mt_spread_range(const mt_spread_t *s, double *lo, double *hi);

/* Two medians closer than this, in % of the baseline's, are within noise whatever their spreads: one
 * run has no spread to show its noise, and identical replays of one workload (ls under gdb, 8 runs
 * each) gave peak RSS 0.34 % apart on jemalloc, 0.02 % on glibc, CPU time 40 % apart; in a sweep,
 * jemalloc's default replayed thrice came out 0.42 % apart, and a sweep called the one "-0.0 %: less
 * memory" than the other. */
/* (cli/help_text.c VERDICTS and README.md give the figure in words) */
#define MT_VERDICT_FLOOR_PCT 1.0

typedef enum {
    MT_VERDICT_LOWER = -1, /* x's median is lower and the spreads do not overlap */
    MT_VERDICT_NOISE = 0,  /* the spreads overlap: no difference can be told */
    MT_VERDICT_HIGHER = 1,
} mt_verdict_t;

/* x against base: within noise when their spreads (mt_spread_range) overlap or their medians are
 * within MT_VERDICT_FLOOR_PCT of each other, else lower or higher by the medians. With one run on
 * either side the spreads are single values: see mt_noise_measured. */
mt_verdict_t mt_verdict(const mt_spread_t *x, const mt_spread_t *base);

/* Whether a verdict rests on measured noise: both sides have at least two runs. */
int mt_noise_measured(const mt_spread_t *x, const mt_spread_t *base);

/* The words of a verdict on time ("faster", "slower", "within noise") and on memory ("less memory",
 * "more memory", "within noise"). */
const char *mt_time_verdict_name(mt_verdict_t v);
const char *mt_memory_verdict_name(mt_verdict_t v);

/* One phrase for a table row: the verdict on CPU time and on peak RSS against the baseline's, e.g.
 * "faster, RSS within noise", "CPU time within noise, more memory"; with one run on either side,
 * " (1 run: noise unknown)" follows. Returns out. */
char *mt_verdict_text(char *out, size_t cap, const mt_spread_t *cpu, const mt_spread_t *cpu_base,
                      const mt_spread_t *rss, const mt_spread_t *rss_base);

/* x's change against base in % of base (0 when base is 0). */
double mt_change_pct(double x, double base);

#ifdef __cplusplus
}
#endif
#endif
