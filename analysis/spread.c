/* Repeated measurements: median and spread, and the within-noise rule that every verdict of mtrace
 * replay, compare and sweep goes through. A replay's wall time on one workload was seen to vary from
 * 5 s to 35 s between runs, and a setting named 19 % faster by its best wall time was 1 % slower in
 * CPU time: a figure is a distribution, and two of them differ only when their spreads do not meet. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "mtrace/spread.h"

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The p-quantile of sorted v by linear interpolation between the order statistics at p * (n - 1). */
static double quantile(const double *v, size_t n, double p)
{
    const double pos = p * (double)(n - 1);
    const size_t i = (size_t)pos;
    if (i + 1 >= n)
        return v[n - 1];
    return v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
}

void mt_spread_of(mt_spread_t *s, double *v, size_t n)
{
    assert(n >= 1);
    qsort(v, n, sizeof *v, cmp_double);
    s->n = n;
    s->min = v[0];
    s->max = v[n - 1];
    s->q1 = quantile(v, n, 0.25);
    s->median = quantile(v, n, 0.5);
    s->q3 = quantile(v, n, 0.75);
}

void mt_spread_range(const mt_spread_t *s, double *lo, double *hi)
{
    const int quartiles = s->n >= MT_SPREAD_QUARTILES_FROM;
    *lo = quartiles ? s->q1 : s->min;
    *hi = quartiles ? s->q3 : s->max;
}

mt_verdict_t mt_verdict(const mt_spread_t *x, const mt_spread_t *base)
{
    double xlo, xhi, blo, bhi;
    mt_spread_range(x, &xlo, &xhi);
    mt_spread_range(base, &blo, &bhi);
    if (xlo <= bhi && blo <= xhi)
        return MT_VERDICT_NOISE;
    if (fabs(mt_change_pct(x->median, base->median)) < MT_VERDICT_FLOOR_PCT)
        return MT_VERDICT_NOISE;
    /* Each range holds its median, so ranges apart have medians apart in the same order. */
    return x->median < base->median ? MT_VERDICT_LOWER : MT_VERDICT_HIGHER;
}

int mt_noise_measured(const mt_spread_t *x, const mt_spread_t *base)
{
    return x->n >= 2 && base->n >= 2;
}

const char *mt_time_verdict_name(mt_verdict_t v)
{
    return v == MT_VERDICT_LOWER ? "faster" : v == MT_VERDICT_HIGHER ? "slower" : "within noise";
}

const char *mt_memory_verdict_name(mt_verdict_t v)
{
    return v == MT_VERDICT_LOWER ? "less memory" : v == MT_VERDICT_HIGHER ? "more memory" : "within noise";
}

char *mt_verdict_text(char *out, size_t cap, const mt_spread_t *cpu, const mt_spread_t *cpu_base,
                      const mt_spread_t *rss, const mt_spread_t *rss_base)
{
    const mt_verdict_t t = mt_verdict(cpu, cpu_base), m = mt_verdict(rss, rss_base);
    const int measured = mt_noise_measured(cpu, cpu_base) && mt_noise_measured(rss, rss_base);
    snprintf(out, cap, "%s%s, %s%s%s", t == MT_VERDICT_NOISE ? "CPU time " : "", mt_time_verdict_name(t),
             m == MT_VERDICT_NOISE ? "RSS " : "", mt_memory_verdict_name(m), measured ? "" : " (1 run: noise unknown)");
    return out;
}

double mt_change_pct(double x, double base)
{
    return base != 0 ? 100.0 * (x - base) / base : 0;
}
