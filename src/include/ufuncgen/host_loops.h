/*
 * Host loop runtime, included by every generated module.
 *
 * A generated elementwise loop has one hand-off point: a contiguous kernel, compiled once per
 * CPU level (target_clones) so that the compiler vectorizes it for the machine it runs on.
 * NumPy may call a loop with any strides; `ufg_run_elementwise` turns those calls into
 * kernel calls on contiguous blocks, so every call, strided or broadcast, runs vectorized code.
 */
#ifndef UFUNCGEN_HOST_LOOPS_H
#define UFUNCGEN_HOST_LOOPS_H

#include <Python.h>   /* first, as Python requires */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ufuncgen/vecmath.h"
#include <tgmath.h>
#ifdef UFG_SIMD_SIN_COS
#undef sin
#undef cos
#define sin(x) __builtin_tgmath(ufg_sinf, ufg_sin, sinl, csinf, csin, csinl, (x))
#define cos(x) __builtin_tgmath(ufg_cosf, ufg_cos, cosl, ccosf, ccos, ccosl, (x))
#endif

#include <numpy/ndarraytypes.h>

#include "ufuncgen/cache_lines.h"
#include "ufuncgen/fp_errors.h"
#include "ufuncgen/host_threads.h"
#include "ufuncgen/half_blocks.h"   /* float16 converted a block at a time */
#include "ufuncgen/prefetch.h"      /* a gufunc's contiguous inputs, ahead of its loop */

/* UFG_MAX_ARGS and UFG_MAX_ITEMSIZE: generated from the generator's tables (gen/limits.py,
 * gen/element_types.py). */
#include "ufuncgen/element_types.h"
#include "ufuncgen/limits.h"
/* Elements per block: small enough that every argument's block stays in L1. */
#define UFG_BLOCK 256
/* Elements of a flag-exact loop's groups of blocks, from the start of a call: a contiguous
 * call checks its flags a group at a time, and a block whose flags a re-run of an earlier block
 * of its group confirmed is not re-run (ufg_run_block). */
#define UFG_CHECK_CHUNK 4096
_Static_assert(UFG_CHECK_CHUNK % UFG_BLOCK == 0, "groups of whole blocks");
/* Elements of one float16 or bfloat16 core input that a gufunc's contiguous loop converts to
 * float at a time (ufg_range_widened_* in the generated module): 8 KiB of stack per input. */
#define UFG_WIDEN_ELEMENTS 2048
/* A gufunc's contiguous loop runs as many rows side by side, one in each SIMD lane, as this
 * many bytes hold elements of its widest core input, where the core size is one of
 * gen/render.py's LANE_SIZES (ufg_range_lanes_* in the generated module): an AVX2 vector's. */
#define UFG_LANE_BYTES 32

#define UFG_INLINE static inline __attribute__((always_inline))

/* How the shared bodies header (<module>_bodies.h) declares its functions on the host. */
#define UFG_BODY_FN UFG_INLINE
#define UFG_HELPER_FN static inline __attribute__((unused))
typedef npy_intp ufg_stride_t;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(UFG_NO_TARGET_CLONES)
#define UFG_TARGET_CLONES \
    __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
/* For the loops of complex signatures: GCC 12's vectorizer turns a complex product
 * (ar br - ai bi) + (ar bi + ai br) i into vfmaddsub, rounding once where the scalar code
 * rounds twice, even under -ffp-contract=off.  Without FMA in the clone it uses vaddsubpd,
 * which rounds as the scalar code does, so an element's bits do not depend on its position
 * or on the CPU. */
#define UFG_TARGET_CLONES_WITHOUT_FMA __attribute__((target_clones("default", "avx2")))
/* For the loops of gufuncs and of vectorized reductions whose bodies call no vector math:
 * NumPy's large arrays start 16 bytes past a 64-byte boundary, so every 512-bit load of a
 * stream splits a cache line, and GCC 12 vectorizes a body's in-order reduction over a core
 * dimension at 512 bits as a serial chain of lane extractions (gen/render.py's target_clones
 * says where it was measured). */
#define UFG_TARGET_CLONES_UP_TO_AVX2 \
    __attribute__((target_clones("default", "arch=x86-64-v3")))
#else
#define UFG_TARGET_CLONES
#define UFG_TARGET_CLONES_WITHOUT_FMA
#define UFG_TARGET_CLONES_UP_TO_AVX2
#endif

/* A function's `fastmath: true` turns on -ffast-math for its loops alone. */
#include "ufuncgen/fastmath.h"

typedef void (*ufg_contiguous_kernel)(npy_intp n, char **args);
/* A loop over a call's own steps, each element read and written in place (ufg_in_place_pays). */
typedef void (*ufg_strided_kernel)(npy_intp n, char **args, const npy_intp *steps);

/*
 * Bytes (every argument's elements together) past which an elementwise call runs its loop's
 * copy compiled up to AVX2 (ufg_kernel_for_call).  Such a call streams from memory, and on an
 * AMD EPYC with AVX-512 a 512-bit stream ran slower than a 256-bit one: add float32 over 10M
 * elements into out= 3.5-4.0 ms against 3.0-3.1 (np.add, AVX2: 3.0), custom_op float64 7.3-7.9
 * against 6.2-6.6; 1M elements (12 MB) already 0.93x np.add.  In cache the AVX-512 clone
 * stays: a polynomial over 100,000 float32 took 10 us in it and 14 in AVX2.
 */
#define UFG_STREAM_BYTES (4 * 1024 * 1024)

/* The kernel of a call of n elements of `bytes` bytes (its arguments' itemsizes together):
 * `stream`, the loop's copy up to AVX2, where it has one and the call is larger than
 * UFG_STREAM_BYTES.  Both copies give every element the same bits: no vector math, no
 * complex product, each operation rounded as it is written, whatever the vector width. */
static inline ufg_contiguous_kernel
ufg_kernel_for_call(ufg_contiguous_kernel kernel, ufg_contiguous_kernel stream, npy_intp n,
                    int bytes)
{
    return stream != NULL && n > UFG_STREAM_BYTES / bytes ? stream : kernel;
}

/* A flag-exact loop's scalar copy (ufg_run_block), whether a block that raised underflow
 * re-runs there too (gen/model.py, guarded_functions), and its special kernel for blocks dense
 * with exp arguments past underflow or logs of +-0, or NULL, with those arguments' flags
 * (ufg_run_chosen). */
typedef struct {
    ufg_contiguous_kernel kernel;
    bool underflow_too;
    ufg_contiguous_kernel special;
    unsigned special_after;
} ufg_exact_kernel;

/* Before a run of a loop with a special kernel: errno cleared, for ufg_special_called_for. */
static inline void
ufg_special_watch(const ufg_exact_kernel *exact)
{
    if (exact->special != NULL) {
        errno = 0;
    }
}

/*
 * Whether a run just made through `ran` (after ufg_special_watch, its flags alone raised)
 * held an argument the loop's special kernel computes inline: it raised that argument's flag
 * (underflow for an exp past underflow, divide-by-zero for a log of +-0: exact->special_after)
 * and, through the plain kernel, libm's scalar exp or log, which libmvec calls for each lane
 * outside its fast range, reported a range or pole error (errno ERANGE).  Not an underflow of
 * the body's other operations (`exp(x) * 1e-30`), nor an exp that overflows (ERANGE without
 * underflow), nor an exp whose result is subnormal (glibc leaves errno alone, and both kernels
 * compute it lane by lane).
 */
static inline bool
ufg_special_called_for(ufg_contiguous_kernel ran, const ufg_exact_kernel *exact)
{
    if (exact->special == NULL || !ufg_fp_raised(exact->special_after)) {
        return false;
    }
    return ran == exact->special || errno == ERANGE;
}

/*
 * Which kernel runs the blocks of a group (UFG_CHECK_CHUNK) of a loop with a special kernel,
 * whose exp and log compute the arguments libmvec leaves its fast path for (an exp that rounds
 * to +0, a log of +-0) inline (prelude.h, ufg_exp_f_special).  libmvec computes a vector
 * holding such an argument lane by lane through scalar libm (exp of float32 data that mostly
 * underflows ran at 0.07x np.exp), but the special kernel is slower on other lanes (1.6x for
 * float32 exp): it pays where such arguments are dense, and costs where they are sparse (one
 * in 256, a masked softmax's padding, made exp 1.4x slower).  So a block that held one makes
 * the next run in halves, and after UFG_SPECIAL_BLOCKS blocks in a row whose halves each held
 * one (at least one argument in every 128), the blocks after them run through the special
 * kernel, as long as each holds one.  A group starts with the plain kernel, so which kernel
 * runs a block does not depend on the thread count: the two give each element the same flags,
 * and the same bits but where libmvec raised a flag for an argument it hands to scalar libm
 * (exp(-1e10): invalid) and the plain kernel's block re-runs through the scalar copy.
 */
#define UFG_SPECIAL_BLOCKS 2
typedef struct {
    bool suspect;       /* the last block held an argument: run the next in halves */
    int dense;          /* blocks in a row whose halves each held one */
} ufg_special_choice;

/* m elements (at most UFG_BLOCK) through the kernel `choice` picks, `choice` updated for the
 * next block; the flags raised are those of one run of the m elements. */
static inline void
ufg_run_chosen(npy_intp m, char **args, int nargs, const int *itemsizes,
               ufg_contiguous_kernel kernel, const ufg_exact_kernel *exact,
               ufg_special_choice *choice)
{
    if (choice->dense >= UFG_SPECIAL_BLOCKS) {
        exact->special(m, args);
        choice->dense = ufg_special_called_for(exact->special, exact) ? choice->dense : 0;
        choice->suspect = choice->dense > 0;
        return;
    }
    const npy_intp half = UFG_BLOCK / 2;
    if (!choice->suspect || m <= half) {
        ufg_special_watch(exact);
        kernel(m, args);
        choice->suspect = ufg_special_called_for(kernel, exact);
        choice->dense = 0;
        return;
    }
    char *second[UFG_MAX_ARGS];
    for (int k = 0; k < nargs; k++) {
        second[k] = args[k] + half * itemsizes[k];
    }
    ufg_special_watch(exact);
    kernel(half, args);
    bool both = ufg_special_called_for(kernel, exact);
    const unsigned first = ufg_fp_save_clear();
    ufg_special_watch(exact);
    kernel(m - half, second);
    both = ufg_special_called_for(kernel, exact) && both;
    ufg_fp_restore(first);
    choice->dense = both ? choice->dense + 1 : 0;
    choice->suspect = both;
}

/* Before a kernel's loop: its arguments are the same array or disjoint (ufg_run_elementwise
 * sends a partial overlap, NumPy's reductions, one element at a time), so no element depends
 * on another's store and the compiler need not test at run time whether they overlap.  GCC's
 * test ignores the kernel's restrict locals and, when an output lies within a few elements of
 * another argument, as NumPy's allocator often leaves small arrays, sends a short call to the
 * scalar copy of the loop: its libm results differ by an ULP from libmvec's, so an element's
 * bits depended on where its arrays were allocated. */
#if defined(__clang__)
#define UFG_NO_ALIAS_CHECK _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define UFG_NO_ALIAS_CHECK _Pragma("GCC ivdep")
#else
#define UFG_NO_ALIAS_CHECK
#endif

/* Keeps a generated scalar kernel's loop from being vectorized. */
#if defined(__GNUC__)
#define UFG_NO_VECTORIZE_BARRIER() __asm__ volatile("" ::: "memory")
#else
#define UFG_NO_VECTORIZE_BARRIER() ((void)0)
#endif

/* On a loop's scalar copy (the flag-exact re-run): the loops inside a body (a gufunc's over its
 * core dimensions, a short one of an elementwise body) are not vectorized either, so that no
 * guarded operation is computed on a lane its guard turned off and every math call is scalar
 * libm's.  The other options are the command line's. */
#if defined(__GNUC__) && !defined(__clang__)
#define UFG_SCALAR_COPY __attribute__((optimize("no-tree-vectorize", "no-tree-slp-vectorize")))
#else
#define UFG_SCALAR_COPY
#endif

/* Before the loop of a kernel over a call's own steps (ufg_strided_kernel), in a function with
 * UFG_SCALAR_COPY: four elements an iteration, not vectorized. */
#if defined(__clang__)
#define UFG_STRIDED_LOOP _Pragma("clang loop vectorize(disable) unroll_count(4)")
#elif defined(__GNUC__)
#define UFG_STRIDED_LOOP _Pragma("GCC unroll 4")
#else
#define UFG_STRIDED_LOOP
#endif

/*
 * One contiguous block of m elements through `kernel`, flag-exact through `exact` when that
 * is not NULL.  `spare[k]` (UFG_BLOCK elements) is free for input k: an input the block's
 * output overwrites (out=x) is copied there first, so that a re-run reads the values the first
 * run read.  `spare` is NULL where no output can be an input.
 * `choice`, where not NULL, picks the plain kernel or the loop's special one and is updated
 * (ufg_run_chosen); NULL runs `kernel`.
 * `*confirmed` holds the flags that re-runs of earlier blocks of the same group of
 * UFG_CHECK_CHUNK elements raised through the scalar copy: a block whose vector run raised an
 * error but no flag beyond those keeps its vector results (ufg_fp_rerun_needed; `log` of data
 * with a zero in every block re-ran each one through scalar libm at 0.2x np.log).  The groups
 * lie where they lie whatever the thread count (elementwise parts are multiples of
 * UFG_CHECK_CHUNK for a flag-exact loop), so which blocks keep their vector results, whose
 * last bits may differ from scalar libm's, does not depend on it.
 */
static inline void
ufg_run_block(npy_intp m, char **block_args, int nin, int nargs, const int *itemsizes,
              ufg_contiguous_kernel kernel, const ufg_exact_kernel *exact,
              char (*spare)[UFG_BLOCK * UFG_MAX_ITEMSIZE], unsigned *confirmed,
              ufg_special_choice *choice)
{
    if (exact == NULL) {
        kernel(m, block_args);
        return;
    }
    char *run_args[UFG_MAX_ARGS];
    for (int k = 0; k < nargs; k++) {
        run_args[k] = block_args[k];
    }
    for (int k = 0; k < nin && spare != NULL; k++) {
        for (int j = nin; j < nargs; j++) {
            if (block_args[j] == block_args[k]) {
                memcpy(spare[k], block_args[k], (size_t)m * (size_t)itemsizes[k]);
                run_args[k] = spare[k];
                break;
            }
        }
    }
    const unsigned saved = ufg_fp_save_clear();
    if (choice != NULL && exact->special != NULL) {
        ufg_run_chosen(m, run_args, nargs, itemsizes, kernel, exact, choice);
    }
    else {
        kernel(m, run_args);
    }
    if (ufg_fp_rerun_needed(exact->underflow_too, *confirmed)) {
        ufg_fp_clear();
        exact->kernel(m, run_args);
        ufg_fp_confirm(confirmed);
    }
    ufg_fp_restore(saved);
}

/* n elements of `size` bytes from src (every `from_step` bytes) to dst (every `to_step`).
 * The size is a constant in each case, so that each copy is one load and one store, not a
 * call to memcpy: a strided call copies every element of its strided arguments.  Every other
 * element (`a[::2]`, a complex array's `.real`) and a reversed view (`a[::-1]`), gathered or
 * scattered, have loops of their own with both steps constant, which the compiler vectorizes
 * with shuffles (2-3x faster than one element at a time on the Zen 5 EPYC; `a[::2] + b`
 * float32 in cache 0.8x -> 1.2x np.add), in AVX2 where the CPU has it: with SSE2's two
 * doubles a shuffle, `add(a[::-1], b[::-1])` float64 went from 0.47x np.add to 0.73x, with
 * AVX2 to 0.95x (AVX-512 EPYC, 100,000 elements, one thread). */
#define UFG_COPY_WITH_STEPS(size, to, from)                                                \
    if (to_step == (to) * (npy_intp)(size) && from_step == (from) * (npy_intp)(size)) {    \
        for (npy_intp i = 0; i < n; i++) {                                                 \
            memcpy(dst + (to) * i * (npy_intp)(size), src + (from) * i * (npy_intp)(size),  \
                   size);                                                                  \
        }                                                                                  \
        return;                                                                            \
    }
#define UFG_COPY_ELEMENTS(size)                                                            \
    UFG_COPY_WITH_STEPS(size, 1, 2)                                                        \
    UFG_COPY_WITH_STEPS(size, 2, 1)                                                        \
    UFG_COPY_WITH_STEPS(size, 1, -1)                                                       \
    UFG_COPY_WITH_STEPS(size, -1, 1)                                                       \
    _Pragma("GCC unroll 4")                                                                \
    for (npy_intp i = 0; i < n; i++, dst += to_step, src += from_step) {                   \
        memcpy(dst, src, size);                                                            \
    }                                                                                      \
    return

UFG_TARGET_CLONES_UP_TO_AVX2 static void
ufg_copy_elements(char *dst, npy_intp to_step, const char *src, npy_intp from_step, npy_intp n,
                  int itemsize)
{
    switch (itemsize) {
    case 1: UFG_COPY_ELEMENTS(1);
    case 2: UFG_COPY_ELEMENTS(2);
    case 4: UFG_COPY_ELEMENTS(4);
    case 8: UFG_COPY_ELEMENTS(8);
    case 16: UFG_COPY_ELEMENTS(16);
    default: UFG_COPY_ELEMENTS((size_t)itemsize);
    }
}
#undef UFG_COPY_ELEMENTS
#undef UFG_COPY_WITH_STEPS

/*
 * Whether a strided call of a loop with a kernel over the call's own steps (a body of a few
 * operations: render.strided_kernel) runs there, each element read and written in place as
 * NumPy's strided loops do, rather than in blocks (ufg_run_elementwise_blocked): where an
 * argument's block copy would go an element at a time (a step other than 0 or one element,
 * and for elements of 4 bytes or less other than 2 or -1, whose copies are vectorized), or its
 * elements are of 8 bytes or more, which a vectorized copy moves too few at a time to pay.
 * Gathering an input into a block and scattering an output from one cost a load and a store
 * an element, more than the vector loop saves on such a body: on an AVX-512 EPYC, one thread,
 * 100,000 elements, three alternating runs (benchmarks/strided.py), `x + y` over a[::3] and
 * b[::3] went from 0.54x np.add to 1.03x in float32 and from 0.88x to 0.99x in float64,
 * a[::-2] + b from 0.67x to 0.99x (float64), `.real + .imag` of complex128 from 0.80x to
 * 1.03x, a[::-1] + b[::-1] float64 from 0.79x to 1.04x, `2.5 * x + y` over a[::3] and b[::3]
 * from 67 to 37 us in float32.  In float32, a[::-1] + b[::-1] stays in blocks: 1.5x np.add
 * there, 1.0x in place.
 */
static inline bool
ufg_in_place_pays(const npy_intp *steps, int nargs, const int *itemsizes)
{
    for (int k = 0; k < nargs; k++) {
        const npy_intp step = steps[k], size = itemsizes[k];
        if (step != 0 && step != size
            && (size >= 8 || (step != 2 * size && step != -size))) {
            return true;
        }
    }
    return false;
}

static void
ufg_gather(char *dst, const char *src, npy_intp stride, npy_intp n, int itemsize)
{
    ufg_copy_elements(dst, itemsize, src, stride, n, itemsize);
}

/* n copies of the element at src: the block buffer of an input broadcast along the call.
 * The element is read once, and the stores vectorize. */
#define UFG_FILL_ELEMENTS(type)                                                            \
    {                                                                                      \
        type value;                                                                        \
        memcpy(&value, src, sizeof value);                                                 \
        for (npy_intp i = 0; i < n; i++) {                                                 \
            memcpy(dst + i * (npy_intp)sizeof value, &value, sizeof value);                \
        }                                                                                  \
        return;                                                                            \
    }

static void
ufg_fill(char *dst, const char *src, npy_intp n, int itemsize)
{
    switch (itemsize) {
    case 1: UFG_FILL_ELEMENTS(uint8_t)
    case 2: UFG_FILL_ELEMENTS(uint16_t)
    case 4: UFG_FILL_ELEMENTS(uint32_t)
    case 8: UFG_FILL_ELEMENTS(uint64_t)
    default: ufg_copy_elements(dst, itemsize, src, 0, n, itemsize);
    }
}
#undef UFG_FILL_ELEMENTS

static void
ufg_scatter(char *dst, npy_intp stride, const char *src, npy_intp n, int itemsize)
{
    ufg_copy_elements(dst, stride, src, itemsize, n, itemsize);
}

/*
 * The elements of a strided call's blocks: UFG_BLOCK, or for a call of n elements that only
 * broadcasts (every argument contiguous, or an input of stride 0: `a + 2.0`) and re-runs no
 * block (`exact` NULL), up to as many as its broadcast inputs' buffers hold (16x more for
 * inputs of one byte, 4x for float32) but no more than a quarter of n, for the buffers are
 * filled at each call (a row of an outer sum `a[:, None] + b` is one).  Such a call copies
 * nothing per block, and the kernel's call and loop set-up around a cheap body's 256 elements
 * were a fifth of its time.  Always a multiple of UFG_BLOCK, so that every block but the call's
 * last one ends on whole iterations of a vector loop whatever the thread parts (multiples of
 * UFG_PARALLEL_ALIGN), and starts on a cache line after the first.
 */
static inline npy_intp
ufg_block_length(npy_intp n, const npy_intp *steps, int nin, int nargs, const int *itemsizes,
                 const ufg_exact_kernel *exact)
{
    if (exact != NULL) {
        return UFG_BLOCK;
    }
    int widest = 1;
    for (int k = 0; k < nargs; k++) {
        if (steps[k] == itemsizes[k]) {
            continue;
        }
        if (k >= nin || steps[k] != 0) {
            return UFG_BLOCK;
        }
        widest = itemsizes[k] > widest ? itemsizes[k] : widest;
    }
    const npy_intp most = (npy_intp)UFG_BLOCK * (UFG_MAX_ITEMSIZE / widest);
    const npy_intp quarter = n / 4 / UFG_BLOCK * UFG_BLOCK;
    return quarter < UFG_BLOCK ? UFG_BLOCK : quarter < most ? quarter : most;
}

/*
 * Strided or broadcast call: gather strided inputs into block buffers, fill broadcast
 * (stride 0) inputs once, run the kernel, scatter strided outputs.  Exact in-place aliasing
 * (out=x) stays correct because each block is read before it is written.
 */
static void
ufg_run_elementwise_blocked(char **args, npy_intp n, const npy_intp *steps, int nin, int nargs,
                            const int *itemsizes, ufg_contiguous_kernel kernel,
                            const ufg_exact_kernel *exact)
{
    _Alignas(UFG_CACHE_LINE_BYTES) char buffers[UFG_MAX_ARGS][UFG_BLOCK * UFG_MAX_ITEMSIZE];
    char *block_args[UFG_MAX_ARGS];
    const npy_intp block = ufg_block_length(n, steps, nin, nargs, itemsizes, exact);
    unsigned confirmed = 0;                 /* by the re-runs of this group's blocks */
    ufg_special_choice choice = {false, 0};

    for (int k = 0; k < nin; k++) {
        if (steps[k] == 0) {
            ufg_fill(buffers[k], args[k], n < block ? n : block, itemsizes[k]);
        }
    }
    for (npy_intp start = 0; start < n; start += block) {
        const npy_intp m = n - start < block ? n - start : block;
        for (int k = 0; k < nargs; k++) {
            char *base = args[k] + start * steps[k];
            if (steps[k] == itemsizes[k]) {
                block_args[k] = base;
            }
            else {
                block_args[k] = buffers[k];
                if (k < nin && steps[k] != 0) {
                    ufg_gather(buffers[k], base, steps[k], m, itemsizes[k]);
                }
            }
        }
        if (start % UFG_CHECK_CHUNK == 0) {
            confirmed = 0;
            choice = (ufg_special_choice){false, 0};
        }
        /* An input gathered into buffers[k] is never an output's block; one read in place
         * leaves buffers[k] free. */
        ufg_run_block(m, block_args, nin, nargs, itemsizes, kernel, exact, buffers, &confirmed,
                      &choice);
        for (int k = nin; k < nargs; k++) {
            if (steps[k] != itemsizes[k]) {
                ufg_scatter(args[k] + start * steps[k], steps[k], buffers[k], m, itemsizes[k]);
            }
        }
    }
}

/*
 * A contiguous call of a loop with a scalar kernel.  Checking the flags every 256 elements
 * costs ~10% on cheap bodies, so a call whose outputs are not its inputs (out=x) is checked
 * a group of UFG_CHECK_CHUNK elements at a time; a group that raised an error runs again
 * block by block (re-running the vector kernel is harmless: no output is an input), so
 * exactly the blocks ufg_run_block would re-run run scalar, until re-runs have confirmed every
 * flag the group's vector run raised, underflow too: the rest of the group keeps that run's
 * results, whose flags are raised already.  A loop with a special kernel runs a group's first
 * blocks apart until they chose the kernel for the rest (ufg_run_chosen).
 * Otherwise (out=x) every block keeps a copy of its inputs: ufg_run_elementwise_blocked.
 */
static void
ufg_run_contiguous_checked(char **args, npy_intp n, const npy_intp *steps, int nin, int nargs,
                           const int *itemsizes, ufg_contiguous_kernel kernel,
                           const ufg_exact_kernel *exact)
{
    for (int k = 0; k < nin; k++) {
        for (int j = nin; j < nargs; j++) {
            if (args[j] == args[k]) {
                ufg_run_elementwise_blocked(args, n, steps, nin, nargs, itemsizes, kernel, exact);
                return;
            }
        }
    }
    char *chunk_args[UFG_MAX_ARGS], *block_args[UFG_MAX_ARGS];
    for (npy_intp start = 0; start < n; start += UFG_CHECK_CHUNK) {
        const npy_intp m = n - start < UFG_CHECK_CHUNK ? n - start : UFG_CHECK_CHUNK;
        for (int k = 0; k < nargs; k++) {
            chunk_args[k] = args[k] + start * itemsizes[k];
        }
        const unsigned saved = ufg_fp_save_clear();
        /* The group's first `head` elements block by block while the kernel for the rest is
         * not chosen (ufg_run_chosen), the rest through `rest`. */
        npy_intp head = 0;
        ufg_contiguous_kernel rest = kernel;
        if (exact->special != NULL) {
            ufg_special_choice choice = {false, 0};
            unsigned head_flags = 0;
            do {
                const npy_intp b = m - head < UFG_BLOCK ? m - head : UFG_BLOCK;
                for (int k = 0; k < nargs; k++) {
                    block_args[k] = chunk_args[k] + head * itemsizes[k];
                }
                ufg_run_chosen(b, block_args, nargs, itemsizes, kernel, exact, &choice);
                head += b;
                head_flags |= ufg_fp_save_clear();      /* each block's flags its own */
            } while (head < m && choice.suspect && choice.dense < UFG_SPECIAL_BLOCKS);
            ufg_fp_restore(head_flags);
            rest = choice.dense >= UFG_SPECIAL_BLOCKS ? exact->special : kernel;
        }
        if (head < m) {
            for (int k = 0; k < nargs; k++) {
                block_args[k] = chunk_args[k] + head * itemsizes[k];
            }
            rest(m - head, block_args);
        }
        const unsigned errors = ufg_fp_errors(exact->underflow_too);
        if (errors == 0) {
            ufg_fp_restore(saved);      /* with the chunk's inexact or underflow flags */
            continue;
        }
        const unsigned raised = ufg_fp_errors(true);
        ufg_fp_clear();                 /* the chunk's flags are dropped: its blocks raise theirs */
        ufg_fp_restore(saved);
        unsigned confirmed = 0;
        for (npy_intp b = 0; b < m && (raised & ~confirmed) != 0; b += UFG_BLOCK) {
            for (int k = 0; k < nargs; k++) {
                block_args[k] = chunk_args[k] + b * itemsizes[k];
            }
            ufg_run_block(m - b < UFG_BLOCK ? m - b : UFG_BLOCK, block_args, nin, nargs,
                          itemsizes, b < head ? kernel : rest, exact, NULL, &confirmed, NULL);
        }
    }
}

/* Whether n elements at a (step sa, itemsize ia) and at b (sb, ib) share any byte: their
 * spans meet, and unless they interleave, elements of one step apart that never share a byte
 * (a complex array's real and imaginary parts, the columns of an (n, 2) array). */
static inline bool
ufg_spans_overlap(const char *a, npy_intp sa, int ia, const char *b, npy_intp sb, int ib,
                  npy_intp n)
{
    const char *a_lo = sa < 0 ? a + (n - 1) * sa : a;
    const char *a_hi = (sa < 0 ? a : a + (n - 1) * sa) + ia;
    const char *b_lo = sb < 0 ? b + (n - 1) * sb : b;
    const char *b_hi = (sb < 0 ? b : b + (n - 1) * sb) + ib;
    if (!(a_lo < b_hi && b_lo < a_hi)) {
        return false;
    }
    const npy_intp step = sa < 0 ? -sa : sa;
    if (sa != sb || step < ia || step < ib) {
        return true;
    }
    /* b's elements start `gap` bytes past the start of one of a's, each step: they miss a's
     * elements when they start past its end and end before the next one starts. */
    const npy_intp gap = (npy_intp)(((intptr_t)b - (intptr_t)a) % step + step) % step;
    return gap < ia || gap + ib > step;
}

/*
 * Whether an output overlaps an input other than exactly (same start, same nonzero step), or
 * another output at all.  NumPy copies overlapping operands of an ordinary call, but its
 * reductions call the loop with the accumulator as both input 0 and output (stride 0 for
 * reduce, shifted by one element for accumulate): each element must then see the one written
 * just before it.  Outputs that meet (`out=(o[:-1], o[1:])`) it writes element by element,
 * the later output's write winning where they meet: the vector kernel's blocks store one
 * output's block after the other's.
 */
static inline bool
ufg_outputs_overlap(char **args, npy_intp n, const npy_intp *steps, int nin, int nargs,
                    const int *itemsizes)
{
    for (int j = nin; j < nargs; j++) {
        for (int k = 0; k < j; k++) {
            if (k < nin && args[j] == args[k] && steps[j] == steps[k] && steps[j] != 0) {
                continue;
            }
            if (ufg_spans_overlap(args[j], steps[j], itemsizes[j], args[k], steps[k],
                                  itemsizes[k], n)) {
                return true;
            }
        }
    }
    return false;
}

/* One element at a time, in order: for the reductions above. */
static void
ufg_run_elementwise_serial(char **args, npy_intp n, const npy_intp *steps, int nargs,
                           ufg_contiguous_kernel kernel)
{
    char *element_args[UFG_MAX_ARGS];

    for (npy_intp i = 0; i < n; i++) {
        for (int k = 0; k < nargs; k++) {
            element_args[k] = args[k] + i * steps[k];
        }
        kernel(1, element_args);
    }
}

#include "ufuncgen/host_reduce.h"

/* The one input of a call that is broadcast (stride 0) while every other argument is
 * contiguous, or -1. */
static inline int
ufg_only_broadcast_input(const npy_intp *steps, int nin, int nargs, const int *itemsizes)
{
    int only = -1;
    for (int k = 0; k < nargs; k++) {
        if (steps[k] == itemsizes[k]) {
            continue;
        }
        if (k >= nin || steps[k] != 0 || only >= 0) {
            return -1;
        }
        only = k;
    }
    return only;
}

/* Outputs streamed past the caches (ufg_run_aligned). */
#include "ufuncgen/stream_out.h"
_Static_assert(UFG_MAX_ARGS <= UFG_STREAM_OUT_MAX_ARGS, "a streamed call's arguments fit");

/* A contiguous call: the kernel, or with `exact` the kernel checked in chunks. */
static void
ufg_run_contiguous_part(char **args, npy_intp n, const npy_intp *steps, int nin, int nargs,
                        const int *itemsizes, ufg_contiguous_kernel kernel,
                        const ufg_exact_kernel *exact)
{
    if (exact == NULL) {
        kernel(n, args);
    }
    else {
        ufg_run_contiguous_checked(args, n, steps, nin, nargs, itemsizes, kernel, exact);
    }
}

/*
 * A call, contiguous or strided (ufg_run_elementwise_blocked), its kernel's vector loop started
 * at the first output's next cache line when `from_line` and that output is contiguous (the
 * elements before it in a call of their own; UFG_BLOCK elements are whole lines, so every
 * block of a strided call then starts on one too: `a + 2.0`, an input broadcast against
 * another).  NumPy's large arrays start 16 bytes past a line, where every vector store, and
 * every load of an input at the same offset, would span two.  Only for kernels whose elements
 * get the same bits from the scalar and the vector loop (render.scalar_gives_vector_bits):
 * which loop computes an element then depends on where the arrays lie.  A flag-exact re-run of
 * a block gives the flags of that block's elements, wherever the blocks start.  Done here, not
 * in the kernel, so that the kernel keeps one copy of its loop: with two inlined copies, hypot's
 * float64 AVX-512 kernel ran 2.4x slower (GCC 12 rebuilt an all-ones constant with
 * vpternlogd, which reads its destination, into the register holding the last iteration's
 * result).  `stream_out` (ufg_streams_outputs, for such kernels only: its chunks start where
 * the arrays lie too): the call's outputs streamed past the caches, its own head to the line.
 */
static inline void
ufg_run_aligned(char **args, npy_intp n, const npy_intp *steps, int nin, int nargs,
                const int *itemsizes, ufg_contiguous_kernel kernel, const ufg_exact_kernel *exact,
                bool contiguous, bool from_line, bool stream_out)
{
    if (stream_out) {
        ufg_run_streaming_outputs(args, n, steps, nin, nargs, itemsizes, kernel);
        return;
    }
    const bool lines_up = from_line && steps[nin] == itemsizes[nin];
    const npy_intp head = lines_up ? ufg_elements_to_cache_line(args[nin], itemsizes[nin], n) : 0;
    void (*const run)(char **, npy_intp, const npy_intp *, int, int, const int *,
                      ufg_contiguous_kernel, const ufg_exact_kernel *) =
        contiguous ? ufg_run_contiguous_part : ufg_run_elementwise_blocked;
    char *rest[UFG_MAX_ARGS];
    for (int k = 0; k < nargs; k++) {
        rest[k] = args[k] + head * steps[k];
    }
    if (head > 0) {
        run(args, head, steps, nin, nargs, itemsizes, kernel, exact);
    }
    run(rest, n - head, steps, nin, nargs, itemsizes, kernel, exact);
}

/* A call, or one part of a multi-threaded call: elements [offset + index * part, ...). */
typedef struct {
    char **args;
    npy_intp n, offset, part;
    const npy_intp *steps;
    int nin, nargs;
    bool contiguous, from_line, stream_out;
    const int *itemsizes;
    ufg_contiguous_kernel kernel;
    const ufg_exact_kernel *exact;
    ufg_strided_kernel in_place;    /* where not NULL, runs the call (ufg_in_place_pays) */
} ufg_elementwise_job;

/* Elements [start, start + m) of the job's call, as a call of their own. */
static void
ufg_elementwise_range(const ufg_elementwise_job *job, npy_intp start, npy_intp m)
{
    char *part_args[UFG_MAX_ARGS];
    for (int k = 0; k < job->nargs; k++) {
        part_args[k] = job->args[k] + start * job->steps[k];
    }
    if (job->in_place != NULL) {
        job->in_place(m, part_args, job->steps);
        return;
    }
    ufg_run_aligned(part_args, m, job->steps, job->nin, job->nargs, job->itemsizes, job->kernel,
                    job->exact, job->contiguous, job->from_line, job->stream_out);
}

static void
ufg_elementwise_task(void *context, int64_t index)
{
    const ufg_elementwise_job *job = (const ufg_elementwise_job *)context;
    const npy_intp start = job->offset + (npy_intp)index * job->part;
    ufg_elementwise_range(job, start, job->n - start < job->part ? job->n - start : job->part);
}

/*
 * A large call: time a first sample on this thread, then run the rest on the pool if the
 * sample says it is worth it.  Every boundary is a multiple of UFG_PARALLEL_ALIGN, and of a
 * flag-exact loop's groups (UFG_CHECK_CHUNK).
 */
_Static_assert(UFG_PARALLEL_SAMPLE % UFG_CHECK_CHUNK == 0, "the sample ends on a group's end");
static Py_NO_INLINE void
ufg_run_elementwise_parallel(ufg_elementwise_job *job, int threads)
{
    const npy_intp sample = UFG_PARALLEL_SAMPLE;
    const int64_t start = ufg_now_ns();
    ufg_elementwise_range(job, 0, sample);
    const int64_t elapsed = ufg_now_ns() - start;
    const npy_intp rest = job->n - sample;
    job->offset = sample;
    job->part = ufg_parallel_part(rest, 1, threads,
                                  job->exact != NULL ? UFG_CHECK_CHUNK : UFG_PARALLEL_ALIGN);
    if (job->part >= rest || !ufg_parallel_worth(elapsed, sample, rest)) {
        ufg_elementwise_range(job, sample, rest);
        return;
    }
    ufg_threads->parallel_for(ufg_elementwise_task, job, (rest + job->part - 1) / job->part);
}

/*
 * A call small enough that neither threads nor a vector loop started on a cache line
 * (ufg_run_aligned) can pay for themselves, contiguous, each output its input exactly or
 * apart from every input: the kernel alone runs it.  A reduction along a non-contiguous axis
 * calls the loop so once a row (out[j] = f(out[j], row[j]), out= the first input): for rows
 * of 8 float32 the checks of the general path took longer than the row (about 190
 * instructions a call, and a second kernel call for the elements before the output's line).
 */
#define UFG_SMALL_CALL 512
_Static_assert(UFG_SMALL_CALL <= 2 * UFG_PARALLEL_SAMPLE, "threads never take a small call");

static inline bool
ufg_is_small_contiguous_call(char **args, npy_intp n, const npy_intp *steps, int nin, int nargs,
                             const int *itemsizes)
{
    if (n > UFG_SMALL_CALL) {
        return false;
    }
    for (int k = 0; k < nargs; k++) {
        if (steps[k] != itemsizes[k]) {
            return false;
        }
    }
    return !ufg_outputs_overlap(args, n, steps, nin, nargs, itemsizes);
}

/* The entry point's calls other than the short ones (ufg_run_elementwise, below). */
static __attribute__((noinline)) void
ufg_run_elementwise_general(char **args, npy_intp n, const npy_intp *steps, int nin, int nargs,
                            const int *itemsizes, ufg_contiguous_kernel kernel,
                            const ufg_exact_kernel *exact, ufg_contiguous_kernel one,
                            const ufg_contiguous_kernel *broadcast, ufg_strided_kernel strided,
                            const ufg_reduce_ops *reduce, bool threads_allowed, bool from_line)
{
    if (reduce != NULL && ufg_is_reduce_call(args, n, steps, itemsizes[0])) {
        ufg_run_reduce(args, n, steps, reduce, exact, threads_allowed);
        return;
    }
    if (reduce != NULL && ufg_is_accumulate_call(args, n, steps)) {
        reduce->accumulate(n, args[0], args[1], steps[1], args[2], steps[2]);
        return;
    }
    if (n > 1 && ufg_outputs_overlap(args, n, steps, nin, nargs, itemsizes)) {
        ufg_run_elementwise_serial(args, n, steps, nargs, one != NULL ? one : kernel);
        return;
    }
    bool contiguous = true;
    for (int k = 0; k < nargs; k++) {
        contiguous &= steps[k] == itemsizes[k];
    }
    const int only = contiguous || broadcast == NULL
                     ? -1 : ufg_only_broadcast_input(steps, nin, nargs, itemsizes);
    if (only >= 0) {
        kernel = broadcast[only];
        contiguous = true;
    }
    const ufg_strided_kernel in_place =
        !contiguous && strided != NULL && ufg_in_place_pays(steps, nargs, itemsizes)
        ? strided : NULL;
    /* An output whose elements share memory (a step of 0, or less than its item): NumPy
     * writes them in order, the last one winning, which parts on threads would race for. */
    for (int k = nin; k < nargs && threads_allowed; k++) {
        threads_allowed = !ufg_rows_overlap(n, steps[k], itemsizes[k]);
    }
    const bool stream_out = contiguous && from_line && exact == NULL
                            && ufg_streams_outputs(args, n, steps, nin, nargs);
    const int threads = ufg_parallel_threads(threads_allowed, n, &ufg_threads->min_elements);
    if (threads > 1 && n > 2 * UFG_PARALLEL_SAMPLE) {
        ufg_elementwise_job job = {args, n, 0, n, steps, nin, nargs, contiguous, from_line,
                                   stream_out, itemsizes, kernel, exact, in_place};
        ufg_run_elementwise_parallel(&job, threads);
        return;
    }
    if (in_place != NULL) {
        in_place(n, args, steps);
        return;
    }
    ufg_run_aligned(args, n, steps, nin, nargs, itemsizes, kernel, exact, contiguous, from_line,
                    stream_out);
}

/*
 * The one entry point of every elementwise loop.  `threads_allowed` is false for functions
 * with `threads: false`.  `reduce` is the loop's reduction (host_reduce.h) when it is a
 * binary loop of one type, reorderable when the function is `associative: true`, else NULL:
 * a reduce-pattern call then runs there, and an accumulate call as one scalar chain.  Any other
 * overlap of an output with an input or another output runs serially, in order, one element
 * per call (of `one`, else of the kernel, its scalar tail: flag-exact).
 * `exact` is the loop's scalar kernel, with the flags that send a block to it, when its body
 * calls vector math or has a conditional (see ufg_run_block), else NULL: a contiguous call is
 * then checked in chunks (ufg_run_contiguous_checked).
 * `one`: the loop's scalar copy where it gives the vector loop's bits, else NULL: a call of one
 * element (NumPy's .at calls the loop once per index) runs there, without the vector loop's
 * set-up (an AVX-512 hypot took some 25 ns to compute one element).
 * `broadcast`: where not NULL, for each input the loop's kernel that reads that input's one
 * value (render.broadcast_kernel_inputs): a call where that input alone is broadcast and the
 * other arguments are contiguous (`x + 2.0`, a row of an outer sum) runs there as a contiguous
 * call, in place of blocks with a buffer of the value's copies (`a + 2.0` about 10% faster
 * from 2,000 elements to 10M, and an outer sum's rows).
 * `strided`: where not NULL, the loop's kernel over a call's own steps (a body of a few
 * operations whose scalar copy gives the vector loop's bits: render.strided_kernel), which runs
 * the strided calls whose block copies would cost more than the vector loop saves
 * (ufg_in_place_pays), on threads too.  Its code is the scalar copy's, so a flag-exact loop's
 * call raises there what its blocks' re-runs would: no re-run is needed.
 * `from_line`: a call whose first output is contiguous starts its kernel's vector loop at that
 * output's cache line (ufg_run_aligned).
 * The calls that take a few dozen instructions (one element, a short contiguous row, a short
 * row of a reduction) are told apart here, inlined into each generated loop where the
 * arguments are constants; the rest runs out of line (ufg_run_elementwise_general), whose
 * registers and stack frame cost more than such a call: a reduction along rows of 10 float32
 * took 84 instructions a row in the entry point alone, 0.86x-0.89x np.add.reduce.
 */
UFG_INLINE void
ufg_run_elementwise(char **args, npy_intp n, const npy_intp *steps, int nin, int nargs,
                    const int *itemsizes, ufg_contiguous_kernel kernel,
                    const ufg_exact_kernel *exact, ufg_contiguous_kernel one,
                    const ufg_contiguous_kernel *broadcast, ufg_strided_kernel strided,
                    const ufg_reduce_ops *reduce, bool threads_allowed, bool from_line)
{
    if (n == 1 && one != NULL) {
        one(1, args);
        return;
    }
    if (exact == NULL && ufg_is_small_contiguous_call(args, n, steps, nin, nargs, itemsizes)) {
        kernel(n, args);
        return;
    }
    if (ufg_is_short_reduce_call(args, n, steps, reduce, itemsizes[0])) {
        reduce->few(n, args[1], steps[1], args[0]);
        return;
    }
    ufg_run_elementwise_general(args, n, steps, nin, nargs, itemsizes, kernel, exact, one,
                                broadcast, strided, reduce, threads_allowed, from_line);
}

/*
 * The arithmetic of a `dim:` size expression, checked: a zero divisor (or INT64_MIN / -1)
 * would stop the interpreter with SIGFPE, and a product that wraps could make NumPy allocate a
 * small output that the body then overruns.  Each gives 0 and records why in *error (the
 * first reason stays), which fails the call.
 */
enum { UFG_DIM_OK, UFG_DIM_DIVIDES_BY_ZERO, UFG_DIM_OVERFLOWS };

static inline npy_intp
ufg_dim_failed(int *error, int why)
{
    if (*error == UFG_DIM_OK) {
        *error = why;
    }
    return 0;
}

#define UFG_DEFINE_DIM_OPERATION(name, overflows)                                          \
    static inline npy_intp                                                                 \
    ufg_dim_##name(npy_intp a, npy_intp b, int *error)                                     \
    {                                                                                      \
        npy_intp r;                                                                        \
        return overflows(a, b, &r) ? ufg_dim_failed(error, UFG_DIM_OVERFLOWS) : r;         \
    }
UFG_DEFINE_DIM_OPERATION(add, __builtin_add_overflow)
UFG_DEFINE_DIM_OPERATION(subtract, __builtin_sub_overflow)
UFG_DEFINE_DIM_OPERATION(multiply, __builtin_mul_overflow)
#undef UFG_DEFINE_DIM_OPERATION

static inline npy_intp
ufg_dim_quotient(npy_intp a, npy_intp b, int *error)
{
    if (b == 0) {
        return ufg_dim_failed(error, UFG_DIM_DIVIDES_BY_ZERO);
    }
    return (b == -1 && a == NPY_MIN_INTP) ? ufg_dim_failed(error, UFG_DIM_OVERFLOWS) : a / b;
}

static inline npy_intp
ufg_dim_remainder(npy_intp a, npy_intp b, int *error)
{
    if (b == 0) {
        return ufg_dim_failed(error, UFG_DIM_DIVIDES_BY_ZERO);
    }
    return (b == -1) ? 0 : a % b;
}

/*
 * An output core dimension given by a size expression over input dimensions (`dim: p = ...`):
 * fills it in when NumPy allocates the output, checks it when the caller passed out=.
 */
static inline int
ufg_set_computed_core_dim(npy_intp *sizes, int index, npy_intp value, int error,
                          const char *function, const char *dim, const char *expression)
{
    if (error != UFG_DIM_OK) {
        PyErr_Format(PyExc_ValueError, "%s: core dimension %s = %s %s for the input core "
                     "dimensions of this call", function, dim, expression,
                     error == UFG_DIM_DIVIDES_BY_ZERO ? "divides by zero"
                                                      : "overflows a 64-bit integer");
        return -1;
    }
    if (value < 0) {
        PyErr_Format(PyExc_ValueError, "%s: core dimension %s = %s is negative (%zd)",
                     function, dim, expression, (Py_ssize_t)value);
        return -1;
    }
    if (sizes[index] == -1) {
        sizes[index] = value;
    }
    else if (sizes[index] != value) {
        PyErr_Format(PyExc_ValueError,
                     "%s: output core dimension %s has size %zd, expected %s = %zd",
                     function, dim, (Py_ssize_t)sizes[index], expression, (Py_ssize_t)value);
        return -1;
    }
    return 0;
}

#endif /* UFUNCGEN_HOST_LOOPS_H */
