/*
 * Floating-point error flags around a generated loop's vectorized code, for the host loops
 * (host_loops.h: elementwise blocks) and the gufunc outer loops (host_threads.h).
 */
#ifndef UFUNCGEN_FP_ERRORS_H
#define UFUNCGEN_FP_ERRORS_H

#include <fenv.h>
#include <stdbool.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <xmmintrin.h>
#endif

/*
 * Flag-exact floating-point errors.  A vectorized loop may raise a flag that NumPy's scalar
 * math would not: a libmvec call (vector exp(-inf) raises FE_INVALID, vector sin/cos of
 * |x| > ~1e19 FE_OVERFLOW), and an operation the body guards (`x < 0 ? -1 : sqrt(x)`,
 * `x > 0 ? log(x) : 0`), which GCC's vectorizer if-converts into one computed on every lane,
 * the guarded-off ones too (its RTL if-conversion of scalar code never speculates one that
 * may trap).  A loop whose body calls vector math or has a conditional (gen/model.py,
 * flag_exact_functions) therefore runs each block with the flags cleared; when the block
 * raised invalid, divide-by-zero or overflow (or underflow, for a body with a conditional:
 * gen/model.py, guarded_functions), the flags are cleared again and the block
 * re-runs through the loop's scalar copy (the same body, not vectorized: UFG_SCALAR_COPY,
 * calling scalar libm), whose flags are those NumPy would give (unless re-runs of earlier
 * blocks of its group raised every one of them already: ufg_fp_rerun_needed, below).  The
 * flags set before the block are put back afterwards.  A flag-free block costs two reads and
 * two writes of the SSE control/status register.
 */
#define UFG_FP_ERRORS_MXCSR 0x0du   /* invalid | divide-by-zero | overflow */
#define UFG_FP_UNDERFLOW_MXCSR 0x10u
#define UFG_FP_FLAGS_MXCSR 0x3fu

static inline unsigned
ufg_fp_save_clear(void)
{
#if defined(__x86_64__) && defined(__SSE2__)
    /* float and double math runs on SSE only: its flags live in MXCSR, x87 ones stay put. */
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(csr & ~UFG_FP_FLAGS_MXCSR);
    return csr & UFG_FP_FLAGS_MXCSR;
#else
    const unsigned saved = (unsigned)fetestexcept(FE_ALL_EXCEPT);
    feclearexcept(FE_ALL_EXCEPT);
    return saved;
#endif
}

/* The flags among invalid, divide-by-zero and overflow (and, with `underflow_too`, underflow)
 * that the block raised, as a set ufg_fp_restore can raise again. */
static inline unsigned
ufg_fp_errors(bool underflow_too)
{
#if defined(__x86_64__) && defined(__SSE2__)
    return _mm_getcsr() & (UFG_FP_ERRORS_MXCSR | (underflow_too ? UFG_FP_UNDERFLOW_MXCSR : 0));
#else
    return (unsigned)fetestexcept(FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW |
                                  (underflow_too ? FE_UNDERFLOW : 0));
#endif
}

static inline bool
ufg_fp_errors_raised(bool underflow_too)
{
    return ufg_fp_errors(underflow_too) != 0;
}

/*
 * Whether a block whose vector run raised the flags now raised re-runs through its loop's
 * scalar copy: it raised an error (invalid, divide-by-zero, overflow; underflow too with
 * `underflow_too`) and some flag NumPy reports, underflow included, that the re-runs of earlier
 * blocks of its group (`confirmed`, ufg_fp_confirm) did not raise.  A block with no such flag
 * keeps its vector results: a re-run could only raise flags the call raises anyway, and the
 * vector flags it keeps are all raised already (libmvec's expf raises underflow for arguments
 * it overflows on, 89.8 to 90.1, which scalar expf does not: so underflow is compared too).
 */
static inline bool
ufg_fp_rerun_needed(bool underflow_too, unsigned confirmed)
{
    return ufg_fp_errors(underflow_too) != 0 && (ufg_fp_errors(true) & ~confirmed) != 0;
}

/* After a re-run: the flags it raised, confirmed for the rest of the group. */
static inline void
ufg_fp_confirm(unsigned *confirmed)
{
    *confirmed |= ufg_fp_errors(true);
}

/* Flags as ufg_fp_raised takes them. */
#if defined(__x86_64__) && defined(__SSE2__)
#define UFG_FP_DIVIDE 0x04u
#define UFG_FP_UNDERFLOW UFG_FP_UNDERFLOW_MXCSR
#else
#define UFG_FP_DIVIDE ((unsigned)FE_DIVBYZERO)
#define UFG_FP_UNDERFLOW ((unsigned)FE_UNDERFLOW)
#endif

/* Whether the block raised any of `flags` (UFG_FP_DIVIDE, UFG_FP_UNDERFLOW). */
static inline bool
ufg_fp_raised(unsigned flags)
{
#if defined(__x86_64__) && defined(__SSE2__)
    return (_mm_getcsr() & flags) != 0;
#else
    return fetestexcept((int)flags) != 0;
#endif
}

static inline void
ufg_fp_clear(void)
{
#if defined(__x86_64__) && defined(__SSE2__)
    _mm_setcsr(_mm_getcsr() & ~UFG_FP_FLAGS_MXCSR);
#else
    feclearexcept(FE_ALL_EXCEPT);
#endif
}

static inline void
ufg_fp_restore(unsigned saved)
{
#if defined(__x86_64__) && defined(__SSE2__)
    if (saved) {
        _mm_setcsr(_mm_getcsr() | saved);   /* sticky flags: setting them traps nothing */
    }
#else
    if (saved) {
        feraiseexcept((int)saved);
    }
#endif
}

#endif /* UFUNCGEN_FP_ERRORS_H */
