/*
 * Host reductions of associative functions (`associative: true`), included by host_loops.h.
 *
 * NumPy runs `f.reduce` by calling the loop with the accumulator as both its first input and
 * its output, stride 0 for both (the reduce pattern): acc = f(f(f(acc, x0), x1), x2) ...
 * Taken literally that is one serial chain, one element at a time.  A function that declares
 * itself associative (and commutative: see the README) may be reordered, and then runs here:
 *
 *   - a call of fewer than UFG_REDUCE_FEW elements (a short row of a 2-D reduction) in the
 *     order of NumPy's own pairwise sum of so few (reduce_order.h), in scalar code
 *     (ufg_reduce_ops.few);
 *   - longer, leaves of 4 rows of UFG_REDUCE_LANES_OF(the element's size) independent
 *     accumulators (lane j takes elements j, j + LANES, ...): 128 floats over 32 lanes, 64
 *     doubles over 16, which the compiler turns into SIMD registers; the lanes are then
 *     folded pairwise (j with j + LANES/2, ...); the call's last leaf, when shorter than two
 *     rows of them, the same way over UFG_REDUCE_SHORT_LANES, and under two rows of those in
 *     order;
 *   - the leaf results combined pairwise by a binary counter (ufg_reduce_push): two results of
 *     the same level (2^level leaves each) merge as soon as both exist, so the partial sums
 *     form a balanced tree over the leaves;
 *   - the tree's leftover roots folded from the newest: f(r0, f(r1, ... f(rk-1, rk))).
 *
 * Accuracy: each lane adds 4 elements in sequence, and the tree adds log2(LANES) +
 * log2(n / LEAF) levels, so a float sum's error grows like log2(n): NumPy's pairwise sum, with
 * 16 elements per lane (8 lanes, 128-element blocks), has the same growth and a longer
 * sequential part (on standard normal data our mean error is some 5% lower; a balanced tree is
 * the best any reordering can do without knowing that f is an addition).
 *
 * The order depends on n, the type's size and the element order only: not on the vector
 * width of the CPU (the lanes are defined in C, and a SIMD register holds several of them),
 * nor on the threads.
 * Large calls are cut into parts of UFG_REDUCE_PART elements, a fixed power-of-two number of
 * leaves, so each complete part is one finished subtree of the single-threaded tree: parts
 * reduced on any thread, then combined by the same counter, give the same bits (see
 * ufg_reduce_total).
 *
 * A type stored as something other than what the body computes in (float16 and bfloat16,
 * computed as float) is widened as it is read, and its partial results stay floats: the
 * steps of one call round to float, and only the call's result, combined into NumPy's
 * accumulator, is rounded to the stored type, once.  So is NumPy's own float16 sum
 * (np.add.reduce adds in float32 and rounds at the end of each loop call); rounding each
 * step to float16, as an ordered reduction does, lost all but a few bits of a long sum.
 *
 * The typed half (the leaf, the counter, the three entry points of ufg_reduce_ops) is
 * host_reduce_impl.h, included once per reorderable loop by the generated module.
 */
#ifndef UFUNCGEN_HOST_REDUCE_H
#define UFUNCGEN_HOST_REDUCE_H

#include <stdlib.h>
#include <string.h>

#include "ufuncgen/reduce_order.h"

/* Accumulators per leaf, for elements (as computed) of `size` bytes: as many as fill
 * UFG_REDUCE_LANE_BYTES, two cache lines, from UFG_REDUCE_SHORT_LANES to UFG_REDUCE_MAX_LANES.
 * 32 floats or 16 doubles are 4 AVX2 registers, enough independent adds to hide the add
 * latency.  32 doubles, 8 registers, were slower where memory sets the pace, by as much as
 * NumPy's whole per-row cost (AVX-512 EPYC, one thread, 10M values: 0.98x np.add.reduce in
 * 1-D and 0.89x over rows of 1,000, against 1.15x and 1.05x over 16), and in cache no faster. */
#define UFG_REDUCE_LANE_BYTES 128
#define UFG_REDUCE_MAX_LANES 32
#define UFG_REDUCE_SHORT_LANES 8
#define UFG_REDUCE_LANES_OF(size)                                                          \
    ((size) >= UFG_REDUCE_LANE_BYTES / UFG_REDUCE_SHORT_LANES ? UFG_REDUCE_SHORT_LANES       \
     : (size) <= UFG_REDUCE_LANE_BYTES / UFG_REDUCE_MAX_LANES ? UFG_REDUCE_MAX_LANES         \
                                                              : UFG_REDUCE_LANE_BYTES / (int)(size))
/* Rows of lanes per leaf: each lane adds 4 elements in sequence, whatever the type (with 8,
 * 16 doubles a leaf of 128, a float64 sum of standard normal values lost the few percent of
 * accuracy by which it is ahead of NumPy's). */
#define UFG_REDUCE_LEAF_ROWS 4
/* The longest leaf, of the narrowest elements; a strided leaf is gathered into a stack buffer
 * this long. */
#define UFG_REDUCE_LEAF (UFG_REDUCE_LEAF_ROWS * UFG_REDUCE_MAX_LANES)
/* A call's last leaf of fewer elements than two rows of lanes is reduced over
 * UFG_REDUCE_SHORT_LANES lanes, and of fewer than this in order.  (A call as short is
 * reduced through ufg_reduce_ops.few.) */
#define UFG_REDUCE_SHORT_MIN (2 * UFG_REDUCE_SHORT_LANES)
/* Elements per part of a multi-threaded reduction (65,536): a power-of-two number of leaves of
 * any type, a complete subtree. */
#define UFG_REDUCE_PART (UFG_REDUCE_LEAF << 9)
/* Levels of the binary counter: enough for 2^64 leaves. */
#define UFG_REDUCE_MAX_DEPTH 64

_Static_assert((UFG_REDUCE_LANE_BYTES & (UFG_REDUCE_LANE_BYTES - 1)) == 0 &&
               (UFG_REDUCE_SHORT_LANES & (UFG_REDUCE_SHORT_LANES - 1)) == 0 &&
               (UFG_REDUCE_MAX_LANES & (UFG_REDUCE_MAX_LANES - 1)) == 0 &&
               (UFG_REDUCE_LEAF_ROWS & (UFG_REDUCE_LEAF_ROWS - 1)) == 0,
               "lanes fold pairwise, and every leaf length divides a part a power of two times");
_Static_assert((UFG_REDUCE_PART / UFG_REDUCE_LEAF & (UFG_REDUCE_PART / UFG_REDUCE_LEAF - 1)) == 0,
               "a part is a power-of-two number of leaves: one complete subtree");

/* One loop's reduction, on raw bytes (defined per type by host_reduce_impl.h).  Its partial
 * results are of the type the body computes in: for float16 and bfloat16 a float, 4 bytes,
 * where an element and the accumulator are stored in 2.  A loop of a function not declared
 * associative has `ordered` alone (range, parts and combine NULL). */
typedef struct {
    int itemsize;           /* an element, and NumPy's accumulator, as stored */
    int partial_size;       /* a partial result */
    /* *result = the reduction of n >= 1 elements at `in`, `stride` bytes apart. */
    void (*range)(npy_intp n, const char *in, npy_intp stride, char *result);
    /* *result = the same reduction of a range cut into `count` complete parts, whose results
     * are `values` (contiguous), followed by the rest's result `rest` (NULL: no rest). */
    void (*parts)(npy_intp count, const char *values, const char *rest, char *result);
    /* *acc = f(*acc, *x): the accumulator as stored, x a partial result */
    void (*combine)(char *acc, const char *x);
    /* *acc = f(*acc, r), r the reduction of 1 <= n < UFG_REDUCE_FEW elements in the order of
     * NumPy's pairwise sum (reduce_order.h), rounded to the stored type once */
    void (*few)(npy_intp n, const char *in, npy_intp stride, char *acc);
    /* *acc = f(...f(f(*acc, x0), x1)..., x[n-1]), in order, rounded to the stored type once
     * (every step, for a function not declared associative) */
    void (*ordered)(npy_intp n, const char *in, npy_intp stride, char *acc);
    /* out[i] = f(out[i - 1], in[i]) for i < n from out[-1] = *first, in order, each step
     * rounded to the stored type (NumPy's accumulate call: ufg_is_accumulate_call) */
    void (*accumulate)(npy_intp n, const char *first, const char *in, npy_intp in_stride,
                       char *out, npy_intp out_stride);
} ufg_reduce_ops;

/*
 * Whether NumPy called a binary loop in the reduce pattern: output 0 is input 0, both with
 * stride 0, and input 1 does not overlap that accumulator.
 */
static inline bool
ufg_is_reduce_call(char **args, npy_intp n, const npy_intp *steps, int itemsize)
{
    return n > 1 && args[2] == args[0] && steps[0] == 0 && steps[2] == 0 &&
           !ufg_spans_overlap(args[1], steps[1], itemsize, args[0], 0, itemsize, n);
}

/*
 * Whether a reduce-pattern call is a row short enough for ops->few (ufg_run_reduce), told
 * apart before the entry point's general path (ufg_run_elementwise).
 */
static inline bool
ufg_is_short_reduce_call(char **args, npy_intp n, const npy_intp *steps,
                         const ufg_reduce_ops *ops, int itemsize)
{
    return ops != NULL && ops->range != NULL && n < UFG_REDUCE_FEW &&
           ufg_is_reduce_call(args, n, steps, itemsize);
}

/*
 * Whether NumPy called a binary loop as its accumulate does: input 0 is the output one step
 * back (out[i - 1], the result before), so each element needs the one just written.
 */
static inline bool
ufg_is_accumulate_call(char **args, npy_intp n, const npy_intp *steps)
{
    return n > 1 && steps[0] != 0 && steps[2] == steps[0] && args[2] == args[0] + steps[0];
}

/* Parts 1, 2, ... of a multi-threaded reduction (part 0 was the timed sample). */
typedef struct {
    const ufg_reduce_ops *ops;
    const char *in;
    npy_intp stride;
    char *values;
} ufg_reduce_job;

static void
ufg_reduce_task(void *context, int64_t index)
{
    const ufg_reduce_job *job = (const ufg_reduce_job *)context;
    const npy_intp part = (npy_intp)index + 1;
    job->ops->range(UFG_REDUCE_PART, job->in + part * UFG_REDUCE_PART * job->stride,
                    job->stride, job->values + part * job->ops->partial_size);
}

/*
 * *total = the reduction of n elements.  A large call (two parts or more, and at least the
 * pool's element threshold) reduces its complete parts separately, on the pool when a timed
 * first part says the rest is worth it, and combines them: the same bits as one range call
 * (see the header comment), which is also the fallback should the parts' memory not come.
 */
static void
ufg_reduce_total(const ufg_reduce_ops *ops, const char *in, npy_intp n, npy_intp stride,
                 bool threads_allowed, char *total)
{
    /* Reordered anyway, the elements are taken in memory order: a reversed view (x[::-1]) is
     * read forward, contiguous, as NumPy's iterator reads it, where each leaf was gathered an
     * element at a time (0.2x np.add.reduce). */
    if (stride < 0) {
        in += (n - 1) * stride;
        stride = -stride;
    }
    const npy_intp count = n / UFG_REDUCE_PART;
    const int threads = ufg_parallel_threads(threads_allowed, n, &ufg_threads->min_elements);
    char *values = threads > 1 && count >= 2 ? malloc((size_t)count * (size_t)ops->partial_size)
                                             : NULL;
    if (values == NULL) {
        ops->range(n, in, stride, total);
        return;
    }
    const int64_t start = ufg_now_ns();
    ops->range(UFG_REDUCE_PART, in, stride, values);
    const int64_t elapsed = ufg_now_ns() - start;
    ufg_reduce_job job = {ops, in, stride, values};
    if (ufg_parallel_worth(elapsed, UFG_REDUCE_PART, n - UFG_REDUCE_PART)) {
        ufg_threads->parallel_for(ufg_reduce_task, &job, count - 1);
    }
    else {
        for (npy_intp part = 1; part < count; part++) {
            ufg_reduce_task(&job, part - 1);
        }
    }
    _Alignas(8) char rest[UFG_MAX_ITEMSIZE];
    const npy_intp done = count * UFG_REDUCE_PART;
    if (done < n) {
        ops->range(n - done, in + done * stride, stride, rest);
    }
    ops->parts(count, values, done < n ? rest : NULL, total);
    free(values);
}

/*
 * A reduce-pattern call of a loop with a reduction: acc = f(acc, reduction of the n inputs).
 * Over lanes from UFG_REDUCE_FEW elements on; fewer went through ops->few before this, in the
 * order of NumPy's add of so few (a short row of a 2-D reduction: ufg_is_short_reduce_call);
 * any number, for a function not declared associative, in NumPy's generic order through
 * ops->ordered.  Both are scalar.  `exact`: the loop's flag-exact kernel (see ufg_run_block),
 * or NULL; with it, a reordered reduction that raised an error the kernel's block would re-run
 * for runs again through ops->ordered, from the saved accumulator, so that only scalar libm's
 * flags reach NumPy.
 */
static void
ufg_run_reduce(char **args, npy_intp n, const npy_intp *steps, const ufg_reduce_ops *ops,
               const ufg_exact_kernel *exact, bool threads_allowed)
{
    _Alignas(8) char total[UFG_MAX_ITEMSIZE], saved_acc[UFG_MAX_ITEMSIZE];
    if (ops->range == NULL) {
        ops->ordered(n, args[1], steps[1], args[0]);
        return;
    }
    if (exact == NULL) {
        ufg_reduce_total(ops, args[1], n, steps[1], threads_allowed, total);
        ops->combine(args[0], total);
        return;
    }
    memcpy(saved_acc, args[0], (size_t)ops->itemsize);
    const unsigned saved = ufg_fp_save_clear();
    ufg_reduce_total(ops, args[1], n, steps[1], threads_allowed, total);
    ops->combine(args[0], total);
    if (ufg_fp_errors_raised(exact->underflow_too)) {
        memcpy(args[0], saved_acc, (size_t)ops->itemsize);
        ufg_fp_clear();
        ops->ordered(n, args[1], steps[1], args[0]);
    }
    ufg_fp_restore(saved);
}

#endif /* UFUNCGEN_HOST_REDUCE_H */
