/*
 * The bytes an array's elements lie in, and whether two such spans share one: the host loops'
 * overlap tests (host_loops.h, host_reduce.h) and the core's .at (src/core/host_at.c).
 */
#ifndef UFUNCGEN_SPANS_H
#define UFUNCGEN_SPANS_H

#include <stdbool.h>

#include <numpy/npy_common.h>

/* [*lo, *hi): the bytes of n >= 1 elements of `itemsize` bytes, `step` apart, from p. */
static inline void
ufg_span(const char *p, npy_intp step, npy_intp itemsize, npy_intp n, const char **lo,
         const char **hi)
{
    const char *last = p + (n - 1) * step;
    *lo = step < 0 ? last : p;
    *hi = (step < 0 ? p : last) + itemsize;
}

/* Whether n elements at a (step sa, itemsize ia) and at b (sb, ib) share any byte. */
static inline bool
ufg_spans_overlap(const char *a, npy_intp sa, int ia, const char *b, npy_intp sb, int ib,
                  npy_intp n)
{
    const char *a_lo, *a_hi, *b_lo, *b_hi;
    ufg_span(a, sa, ia, n, &a_lo, &a_hi);
    ufg_span(b, sb, ib, n, &b_lo, &b_hi);
    return a_lo < b_hi && b_lo < a_hi;
}

#endif /* UFUNCGEN_SPANS_H */
