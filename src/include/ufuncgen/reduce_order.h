/*
 * The order of a short reduction of an associative function (`associative: true`), written
 * once for the host loops (host_reduce_impl.h's ufg_reduce_ops.few) and the device kernels (a
 * .reduceat segment, kernels.cu.j2), so that both give the same bits, and the bits of NumPy's
 * own add: its pairwise sum of fewer than 128 values (numpy/_core/src/umath/loops_utils.h.src).
 *
 *   - fewer than 8 elements: in order;
 *   - else 8 accumulators, started with the first 8, each then taking every 8th element over
 *     the whole rows of 8, folded ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), and the
 *     rest added to that in order.
 *
 * A complex element is two of NumPy's values (its complex pairwise sum counts the floats), so
 * UFG_REDUCE_FEW_ORDER_COMPLEX takes the same order in elements with half the numbers: in
 * order below 4, else 4 accumulators folded (r0 + r1) + (r2 + r3).
 *
 * NumPy's loop then adds the result into its accumulator: acc = f(acc, result).  The chain
 * of dependent steps is some n/8 + 4 long instead of n, which is what a short row of a 2-D
 * reduction (NumPy calls the loop once a row) was bound by.
 */
#ifndef UFUNCGEN_REDUCE_ORDER_H
#define UFUNCGEN_REDUCE_ORDER_H

#include <stdint.h>

/* Calls of this many elements or more are reduced otherwise: over SIMD lanes and leaves on the
 * host (host_reduce.h), in order in a device .reduceat segment.  At most 128, NumPy's block. */
#define UFG_REDUCE_FEW 64

/*
 * result = the reduction of n >= 1 elements in the order above.  T: the type the steps are
 * taken in; ELEMENT(i): element i as a T; STEP(a, b, r): *r = f(a, b), as a body function is
 * called.  A statement; it declares its own variables in a block.
 */
#define UFG_REDUCE_FEW_ORDER(T, n, ELEMENT, STEP, result)                                   \
    do {                                                                                    \
        T ufg_r0_, ufg_r1_, ufg_r2_, ufg_r3_, ufg_r4_, ufg_r5_, ufg_r6_, ufg_r7_;           \
        int64_t ufg_i_;                                                                     \
        if ((n) < 8) {                                                                      \
            (result) = ELEMENT(0);                                                          \
            ufg_i_ = 1;                                                                     \
        }                                                                                   \
        else {                                                                              \
            /* Eight named accumulators: as an array folded in a loop, GCC kept them in     \
             * memory. */                                                                   \
            ufg_r0_ = ELEMENT(0); ufg_r1_ = ELEMENT(1); ufg_r2_ = ELEMENT(2);               \
            ufg_r3_ = ELEMENT(3); ufg_r4_ = ELEMENT(4); ufg_r5_ = ELEMENT(5);               \
            ufg_r6_ = ELEMENT(6); ufg_r7_ = ELEMENT(7);                                     \
            for (ufg_i_ = 8; ufg_i_ + 8 <= (n); ufg_i_ += 8) {                              \
                STEP(ufg_r0_, ELEMENT(ufg_i_), &ufg_r0_);                                   \
                STEP(ufg_r1_, ELEMENT(ufg_i_ + 1), &ufg_r1_);                               \
                STEP(ufg_r2_, ELEMENT(ufg_i_ + 2), &ufg_r2_);                               \
                STEP(ufg_r3_, ELEMENT(ufg_i_ + 3), &ufg_r3_);                               \
                STEP(ufg_r4_, ELEMENT(ufg_i_ + 4), &ufg_r4_);                               \
                STEP(ufg_r5_, ELEMENT(ufg_i_ + 5), &ufg_r5_);                               \
                STEP(ufg_r6_, ELEMENT(ufg_i_ + 6), &ufg_r6_);                               \
                STEP(ufg_r7_, ELEMENT(ufg_i_ + 7), &ufg_r7_);                               \
            }                                                                               \
            STEP(ufg_r0_, ufg_r1_, &ufg_r0_);                                               \
            STEP(ufg_r2_, ufg_r3_, &ufg_r2_);                                               \
            STEP(ufg_r4_, ufg_r5_, &ufg_r4_);                                               \
            STEP(ufg_r6_, ufg_r7_, &ufg_r6_);                                               \
            STEP(ufg_r0_, ufg_r2_, &ufg_r0_);                                               \
            STEP(ufg_r4_, ufg_r6_, &ufg_r4_);                                               \
            STEP(ufg_r0_, ufg_r4_, &(result));                                              \
        }                                                                                   \
        for (; ufg_i_ < (n); ufg_i_++) {                                                    \
            STEP((result), ELEMENT(ufg_i_), &(result));                                     \
        }                                                                                   \
    } while (0)

/* The same for complex elements (above). */
#define UFG_REDUCE_FEW_ORDER_COMPLEX(T, n, ELEMENT, STEP, result)                           \
    do {                                                                                    \
        T ufg_r0_, ufg_r1_, ufg_r2_, ufg_r3_;                                               \
        int64_t ufg_i_;                                                                     \
        if ((n) < 4) {                                                                      \
            (result) = ELEMENT(0);                                                          \
            ufg_i_ = 1;                                                                     \
        }                                                                                   \
        else {                                                                              \
            ufg_r0_ = ELEMENT(0); ufg_r1_ = ELEMENT(1);                                     \
            ufg_r2_ = ELEMENT(2); ufg_r3_ = ELEMENT(3);                                     \
            for (ufg_i_ = 4; ufg_i_ + 4 <= (n); ufg_i_ += 4) {                              \
                STEP(ufg_r0_, ELEMENT(ufg_i_), &ufg_r0_);                                   \
                STEP(ufg_r1_, ELEMENT(ufg_i_ + 1), &ufg_r1_);                               \
                STEP(ufg_r2_, ELEMENT(ufg_i_ + 2), &ufg_r2_);                               \
                STEP(ufg_r3_, ELEMENT(ufg_i_ + 3), &ufg_r3_);                               \
            }                                                                               \
            STEP(ufg_r0_, ufg_r1_, &ufg_r0_);                                               \
            STEP(ufg_r2_, ufg_r3_, &ufg_r2_);                                               \
            STEP(ufg_r0_, ufg_r2_, &(result));                                              \
        }                                                                                   \
        for (; ufg_i_ < (n); ufg_i_++) {                                                    \
            STEP((result), ELEMENT(ufg_i_), &(result));                                     \
        }                                                                                   \
    } while (0)

#endif /* UFUNCGEN_REDUCE_ORDER_H */
