/*
 * UFG_FASTMATH_BEGIN / UFG_FASTMATH_END: around the code of a function that opts in to fast
 * math (`fastmath: true`), in the host loops and in the simulator's kernels alike, so that
 * the simulator computes what the host computes.  GCC turns on -ffast-math for the code
 * between them; nvcc has no such pragma, so a module's fast-math kernels are generated into a
 * file of their own (<module>_kernels_fastmath.cu) that is compiled with --use_fast_math.
 */
#ifndef UFUNCGEN_FASTMATH_H
#define UFUNCGEN_FASTMATH_H

#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define UFG_FASTMATH_BEGIN _Pragma("GCC push_options") _Pragma("GCC optimize(\"fast-math\")")
#define UFG_FASTMATH_END _Pragma("GCC pop_options")
#else
#define UFG_FASTMATH_BEGIN
#define UFG_FASTMATH_END
#endif

#endif /* UFUNCGEN_FASTMATH_H */
