/*
 * The typed half of a reorderable loop's reduction (host_reduce.h explains the order).
 * Included by a generated module once per loop, with four macros defined:
 *
 *   UFG_REDUCE_T            the element type                       float
 *   UFG_REDUCE_BODY         the body function: (T, T, T *)          ufg_body_add_float32
 *   UFG_REDUCE_NAME(part)   this loop's names                       ufg_reduce_add_float32##part
 *   UFG_REDUCE_CLONES       the loop's target clones                UFG_TARGET_CLONES
 *
 * and, for a type stored as something else than the T it is computed in (float16), three or
 * four more: the storage type, the prelude's conversions of one element to and from T, and
 * optionally the runtime's of a contiguous block to T (half_blocks.h):
 *
 *   UFG_REDUCE_STORAGE      ufg_half
 *   UFG_REDUCE_LOAD         ufg_half_to_float
 *   UFG_REDUCE_STORE        ufg_float_to_half
 *   UFG_REDUCE_LOAD_BLOCK   ufg_halves_to_floats
 *
 * and the runtime's of one element in code compiled for F16C, where the CPU has it:
 *
 *   UFG_REDUCE_LOAD_F16C    ufg_half_to_float_f16c
 *   UFG_REDUCE_STORE_F16C   ufg_float_to_half_f16c
 *
 * and, where the body calls a prelude function with a variant for scalar code (hypot), the
 * body's copy with that variant, which the scalar entry points below call (`ordered`, `few`,
 * `accumulate`, `combine`; `range` and `parts`, vectorized, call the body): the same results,
 * each step waiting on less (prelude.h):
 *
 *   UFG_REDUCE_SCALAR_BODY  ufg_body_hypot_float64_scalar
 *
 * and, for a complex T, UFG_REDUCE_COMPLEX (defined empty): a short row takes NumPy's
 * complex pairwise order (reduce_order.h).
 *
 * and, for an integer T, UFG_REDUCE_INTEGER (defined empty): UFG_REDUCE_MAX_LANES lanes
 * whatever its size.  GCC reorders exact integer adds across the lanes itself, and its code
 * for 16 int64 lanes ran 1.4x slower than for 32 (AVX-512 EPYC, 10M values, one thread).
 *
 * A loop of a function not declared associative defines UFG_REDUCE_IN_ORDER_ONLY instead of
 * UFG_REDUCE_CLONES: its reduction is `ordered` alone, NumPy's order, and a stored type that
 * is not T is rounded to at every step, as the loop's kernel would, called element by element.
 *
 * It defines `static const ufg_reduce_ops UFG_REDUCE_NAME(_ops)` and undefines the macros.
 * No guard: each inclusion is another type.
 */
#define T_ UFG_REDUCE_T
#define F_ UFG_REDUCE_BODY
#ifdef UFG_REDUCE_INTEGER
#define LANES_ UFG_REDUCE_MAX_LANES
#else
#define LANES_ UFG_REDUCE_LANES_OF(sizeof(T_))
#endif
#define LEAF_ (UFG_REDUCE_LEAF_ROWS * LANES_)
#ifdef UFG_REDUCE_SCALAR_BODY
#define FS_ UFG_REDUCE_SCALAR_BODY
#else
#define FS_ UFG_REDUCE_BODY
#endif
#ifdef UFG_REDUCE_STORAGE
#define S_ UFG_REDUCE_STORAGE
#define LOAD_(x) UFG_REDUCE_LOAD(x)
#define STORE_(x) UFG_REDUCE_STORE(x)
#else
#define S_ T_
#define LOAD_(x) (x)
#define STORE_(x) (x)
#endif
#if defined(UFG_REDUCE_STORAGE) && defined(UFG_REDUCE_IN_ORDER_ONLY)
#define STEP_ROUNDED_(x) LOAD_(STORE_(x))
#else
#define STEP_ROUNDED_(x) (x)
#endif

#ifndef UFG_REDUCE_IN_ORDER_ONLY

/* `lanes` independent accumulators over x[0..m), m >= 2 * lanes: lane j takes elements j,
 * j + lanes, ... up to the last whole row, then the lanes are folded pairwise (j with
 * j + lanes / 2, ...).  *taken: the elements taken, the rest the caller's, in order.  `lanes`
 * is a constant at each call, so the loops over j are what the compiler vectorizes. */
UFG_INLINE T_
UFG_REDUCE_NAME(_lanes)(const T_ *restrict x, npy_intp m, const int lanes, npy_intp *taken)
{
    /* The lanes start as the first two rows' results, computed in registers: copying the
     * first row into `lane` would be stored in halves that the next vector load cannot
     * forward. */
    T_ lane[UFG_REDUCE_MAX_LANES];
    npy_intp i;
    for (int j = 0; j < lanes; j++) {
        F_(x[j], x[j + lanes], &lane[j]);
    }
    for (i = 2 * lanes; i + lanes <= m; i += lanes) {
        for (int j = 0; j < lanes; j++) {
            F_(lane[j], x[i + j], &lane[j]);
        }
    }
    /* Unrolled, so that each level's loop has a constant count the compiler vectorizes. */
#pragma GCC unroll 8
    for (int width = lanes / 2; width > 0; width /= 2) {
        for (int j = 0; j < width; j++) {
            F_(lane[j], lane[j + width], &lane[j]);
        }
    }
    *taken = i;
    return lane[0];
}

/* A short leaf over UFG_REDUCE_SHORT_LANES lanes (the last leaf of a long call), apart from
 * the long leaves' code: inlined, it moved their loop and cost a float64 sum of 10M values
 * 7%. */
static Py_NO_INLINE T_
UFG_REDUCE_NAME(_short)(const T_ *restrict x, npy_intp m, npy_intp *taken)
{
    return UFG_REDUCE_NAME(_lanes)(x, m, UFG_REDUCE_SHORT_LANES, taken);
}

/* The reduction of one leaf: 1 <= m <= LEAF_ contiguous values, over LANES_ lanes,
 * or UFG_REDUCE_SHORT_LANES for a short one (fewer than UFG_REDUCE_SHORT_MIN: in order). */
UFG_INLINE T_
UFG_REDUCE_NAME(_leaf)(const T_ *restrict x, npy_intp m)
{
    npy_intp i = 1;
    T_ r = x[0];
    if (m >= 2 * LANES_) {
        r = UFG_REDUCE_NAME(_lanes)(x, m, LANES_, &i);
    }
    else if (m >= UFG_REDUCE_SHORT_MIN) {
        r = UFG_REDUCE_NAME(_short)(x, m, &i);
    }
    for (; i < m; i++) {       /* a short leaf, or a leaf's tail: in order */
        F_(r, x[i], &r);
    }
    return r;
}

/* The binary counter over leaf (or part) results: value[k] covers 2^level[k] of them. */
typedef struct {
    T_ value[UFG_REDUCE_MAX_DEPTH];
    unsigned char level[UFG_REDUCE_MAX_DEPTH];
    int depth;
} UFG_REDUCE_NAME(_tree);

UFG_INLINE void
UFG_REDUCE_NAME(_push)(UFG_REDUCE_NAME(_tree) *tree, T_ v)
{
    unsigned char level = 0;
    while (tree->depth > 0 && tree->level[tree->depth - 1] == level) {
        tree->depth--;
        F_(tree->value[tree->depth], v, &v);    /* older on the left: order kept */
        level++;
    }
    tree->value[tree->depth] = v;
    tree->level[tree->depth] = level;
    tree->depth++;
}

UFG_INLINE T_
UFG_REDUCE_NAME(_fold)(const UFG_REDUCE_NAME(_tree) *tree)
{
    T_ r = tree->value[tree->depth - 1];
    for (int k = tree->depth - 2; k >= 0; k--) {
        F_(tree->value[k], r, &r);
    }
    return r;
}

/* A leaf's m elements (`stride` bytes apart) as T, in `widened`, for a stored type that is not
 * T; else where they are, or gathered into `widened` when strided. */
UFG_INLINE const T_ *
UFG_REDUCE_NAME(_leaf_values)(const char *leaf, npy_intp m, npy_intp stride, T_ *widened)
{
#if defined(UFG_REDUCE_STORAGE) && defined(UFG_REDUCE_LOAD_BLOCK)
    if (stride == (npy_intp)sizeof(S_)) {
        UFG_REDUCE_LOAD_BLOCK((const S_ *)leaf, widened, m);
        return widened;
    }
#elif !defined(UFG_REDUCE_STORAGE)
    if (stride == (npy_intp)sizeof(S_)) {
        return (const T_ *)leaf;
    }
    /* Gathered as a strided call's blocks are (host_loops.h): every other element with
     * shuffles, others unrolled. */
    ufg_gather((char *)widened, leaf, stride, m, (int)sizeof(S_));
    return widened;
#endif
    for (npy_intp i = 0; i < m; i++) {
        S_ value;
        memcpy(&value, leaf + i * stride, sizeof value);
        widened[i] = LOAD_(value);
    }
    return widened;
}

/* ufg_reduce_ops.range: compiled for each CPU level, as the elementwise kernels are. */
UFG_REDUCE_CLONES static void
UFG_REDUCE_NAME(_range)(npy_intp n, const char *in, npy_intp stride, char *result)
{
    UFG_REDUCE_NAME(_tree) tree;
    tree.depth = 0;
    T_ widened[UFG_REDUCE_LEAF];
    for (npy_intp start = 0; start < n; start += LEAF_) {
        const npy_intp m = n - start < LEAF_ ? n - start : LEAF_;
        const T_ *x = UFG_REDUCE_NAME(_leaf_values)(in + start * stride, m, stride, widened);
        /* A whole leaf has a constant length: its loops unroll with no early exits, so the
         * lanes stay in registers.  The same operations as for any m. */
        UFG_REDUCE_NAME(_push)(&tree, m == LEAF_ ? UFG_REDUCE_NAME(_leaf)(x, LEAF_)
                                                 : UFG_REDUCE_NAME(_leaf)(x, m));
    }
    const T_ r = UFG_REDUCE_NAME(_fold)(&tree);
    memcpy(result, &r, sizeof r);
}

/* ufg_reduce_ops.parts: complete parts' results through the counter, the rest's last. */
static void
UFG_REDUCE_NAME(_parts)(npy_intp count, const char *values, const char *rest, char *result)
{
    UFG_REDUCE_NAME(_tree) tree;
    tree.depth = 0;
    T_ v;
    for (npy_intp k = 0; k < count; k++) {
        memcpy(&v, values + k * (npy_intp)sizeof v, sizeof v);
        UFG_REDUCE_NAME(_push)(&tree, v);
    }
    if (rest != NULL) {
        /* Taken last, unmerged: in one range call the rest's leaves merge with the parts'
         * roots only once they are complete, f(root, rest), as the fold nests them too. */
        memcpy(&tree.value[tree.depth], rest, sizeof v);
        tree.level[tree.depth] = 0;
        tree.depth++;
    }
    v = UFG_REDUCE_NAME(_fold)(&tree);
    memcpy(result, &v, sizeof v);
}

#endif /* !UFG_REDUCE_IN_ORDER_ONLY */

/* ufg_reduce_ops.ordered: NumPy's own order, from the accumulator, each step in T and the
 * result rounded to the stored type once, as NumPy's float16 loop reduces (every step, for a
 * function not declared associative).  Scalar, as the flag-exact re-run of a reduction that
 * raised needs (ufg_run_reduce). */
UFG_SCALAR_COPY static void
UFG_REDUCE_NAME(_ordered)(npy_intp n, const char *in, npy_intp stride, char *acc)
{
    S_ stored;
    memcpy(&stored, acc, sizeof stored);
    T_ a = LOAD_(stored);
    for (npy_intp i = 0; i < n; i++) {
        memcpy(&stored, in + i * stride, sizeof stored);
        FS_(a, LOAD_(stored), &a);
        a = STEP_ROUNDED_(a);
    }
    stored = STORE_(a);
    memcpy(acc, &stored, sizeof stored);
}

/* ufg_reduce_ops.accumulate: NumPy's accumulate call, out[i] = f(out[i - 1], in[i]) from
 * out[-1] = *first, in order.  The element-by-element loop's results (each step rounded to
 * the stored type, as its store and the next step's load round), with the last result kept
 * in a register rather than stored and loaded back, each step waiting on the body alone: an
 * input aliasing the output is still read after the step before it has stored. */
UFG_SCALAR_COPY static void
UFG_REDUCE_NAME(_accumulate)(npy_intp n, const char *first, const char *in, npy_intp in_stride,
                             char *out, npy_intp out_stride)
{
    S_ stored;
    memcpy(&stored, first, sizeof stored);
    T_ a = LOAD_(stored);
    for (npy_intp i = 0; i < n; i++) {
        memcpy(&stored, in + i * in_stride, sizeof stored);
        FS_(a, LOAD_(stored), &a);
        stored = STORE_(a);
        memcpy(out + i * out_stride, &stored, sizeof stored);
        a = LOAD_(stored);
    }
}

#ifdef UFG_REDUCE_IN_ORDER_ONLY
static const ufg_reduce_ops UFG_REDUCE_NAME(_ops) = {
    (int)sizeof(S_), (int)sizeof(T_), NULL, NULL, NULL, NULL, UFG_REDUCE_NAME(_ordered),
    UFG_REDUCE_NAME(_accumulate),
};
#else

/* One element as stored to T and back, for the functions below that take conversions as
 * arguments (constants once inlined). */
UFG_INLINE T_ UFG_REDUCE_NAME(_load)(S_ x) { return LOAD_(x); }
UFG_INLINE S_ UFG_REDUCE_NAME(_store)(T_ x) { return STORE_(x); }

/* *acc = f(*acc, x), the accumulator as stored: the one rounding to a stored type that is
 * not T. */
UFG_INLINE void
UFG_REDUCE_NAME(_combine_with)(char *acc, T_ x, T_ (*load)(S_), S_ (*store)(T_))
{
    S_ stored;
    T_ a;
    memcpy(&stored, acc, sizeof stored);
    FS_(load(stored), x, &a);
    stored = store(a);
    memcpy(acc, &stored, sizeof stored);
}

/* ufg_reduce_ops.combine */
static void
UFG_REDUCE_NAME(_combine)(char *acc, const char *x)
{
    T_ b;
    memcpy(&b, x, sizeof b);
    UFG_REDUCE_NAME(_combine_with)(acc, b, UFG_REDUCE_NAME(_load), UFG_REDUCE_NAME(_store));
}

/* ufg_reduce_ops.few: 1 <= n < UFG_REDUCE_FEW elements in the order of NumPy's pairwise sum
 * of so few (reduce_order.h), then f(acc, that), as np.add.reduce's loop adds its sum into
 * the accumulator: a short row of `add` gets np.add.reduce's bits.  Scalar, as `ordered`, so
 * its flags are libm's; and with no leaves, counter or widened copy, a row of 40 floats took
 * 15% less time than through `range`.  `load` and `store` convert one element of a stored
 * type that is not T. */
UFG_INLINE void
UFG_REDUCE_NAME(_few_with)(npy_intp n, const char *in, npy_intp stride, char *acc,
                           T_ (*load)(S_), S_ (*store)(T_))
{
    T_ result;
    S_ stored;
#define ELEMENT_(i) (memcpy(&stored, in + (i) * stride, sizeof stored), load(stored))
#ifdef UFG_REDUCE_COMPLEX
    UFG_REDUCE_FEW_ORDER_COMPLEX(T_, n, ELEMENT_, FS_, result);
#else
    UFG_REDUCE_FEW_ORDER(T_, n, ELEMENT_, FS_, result);
#endif
#undef ELEMENT_
    UFG_REDUCE_NAME(_combine_with)(acc, result, load, store);
}

#if defined(UFG_REDUCE_LOAD_F16C) && defined(UFG_HALF_BLOCKS_F16C)
/* The same with the F16C instruction converting each element: a float16 row of 10 took twice
 * as long through half.h's branch-free conversions. */
__attribute__((target("f16c"))) UFG_SCALAR_COPY static void
UFG_REDUCE_NAME(_few_f16c)(npy_intp n, const char *in, npy_intp stride, char *acc)
{
    UFG_REDUCE_NAME(_few_with)(n, in, stride, acc, UFG_REDUCE_LOAD_F16C, UFG_REDUCE_STORE_F16C);
}
#endif

UFG_SCALAR_COPY static void
UFG_REDUCE_NAME(_few)(npy_intp n, const char *in, npy_intp stride, char *acc)
{
#if defined(UFG_REDUCE_LOAD_F16C) && defined(UFG_HALF_BLOCKS_F16C)
    if (ufg_cpu_converts_halves()) {
        UFG_REDUCE_NAME(_few_f16c)(n, in, stride, acc);
        return;
    }
#endif
    UFG_REDUCE_NAME(_few_with)(n, in, stride, acc, UFG_REDUCE_NAME(_load), UFG_REDUCE_NAME(_store));
}

static const ufg_reduce_ops UFG_REDUCE_NAME(_ops) = {
    (int)sizeof(S_), (int)sizeof(T_), UFG_REDUCE_NAME(_range), UFG_REDUCE_NAME(_parts),
    UFG_REDUCE_NAME(_combine), UFG_REDUCE_NAME(_few), UFG_REDUCE_NAME(_ordered),
    UFG_REDUCE_NAME(_accumulate),
};
#endif

#undef STEP_ROUNDED_
#undef STORE_
#undef LOAD_
#undef S_
#undef FS_
#undef F_
#undef LANES_
#undef LEAF_
#undef T_
#undef UFG_REDUCE_STORAGE
#undef UFG_REDUCE_LOAD
#undef UFG_REDUCE_STORE
#undef UFG_REDUCE_LOAD_BLOCK
#undef UFG_REDUCE_LOAD_F16C
#undef UFG_REDUCE_STORE_F16C
#undef UFG_REDUCE_IN_ORDER_ONLY
#undef UFG_REDUCE_T
#undef UFG_REDUCE_COMPLEX
#undef UFG_REDUCE_INTEGER
#undef UFG_REDUCE_BODY
#undef UFG_REDUCE_SCALAR_BODY
#undef UFG_REDUCE_NAME
#undef UFG_REDUCE_CLONES
