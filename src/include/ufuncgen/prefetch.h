/*
 * Software prefetch of a gufunc's inputs, for its C-contiguous loop (ufg_range_prefetched_* in
 * the generated module).
 *
 * A gufunc whose outer iterations each read a short core slice (l2_norm over rows of 10,
 * rgb_to_gray's pixels) does not overlap its memory traffic with its arithmetic as a
 * vectorized stream does: l2_norm float64 over 1M rows of 10 took 2.9 ms, where a plain read
 * of its 80 MB took 1.8 ms and its arithmetic on rows in cache 2.0 ms.  Asking for the inputs
 * a fixed distance ahead overlaps the two.  The loop runs a chunk of outer iterations at a
 * time, each chunk's prefetches first, so the iterations themselves are the same loop as
 * before: a loop the compiler vectorized stays vectorized, and every result is the same bit
 * for bit.
 *
 * Measured on an AMD EPYC (Zen 5), one thread, inputs larger than the caches, the same module
 * built with and without it and timed in one process: l2_norm float64 over 1M rows of 10 took
 * 2.20 ms instead of 2.92, rgb_to_gray over 2000x2000 pixels 1.07 ms instead of 1.52
 * (float32) and 2.66 instead of 3.19 (float64); with the inputs in cache, no change.  Loops
 * that compute more than they read lost to it (matmul 5x5 float64: 12%), so they are left out
 * (ufg_prefetch_chunk).  A vectorized elementwise loop is not helped (the hardware prefetchers
 * keep up with it), so only gufuncs use this.
 *
 * Each constant below may be set with -D when building, to tune for another machine.
 */
#ifndef UFUNCGEN_PREFETCH_H
#define UFUNCGEN_PREFETCH_H

#include <stdint.h>

#include <numpy/ndarraytypes.h>

#include "ufuncgen/cache_lines.h"

/* Input bytes per chunk (of the widest input): the chunk's lines stay in L1. */
#ifndef UFG_PREFETCH_CHUNK_BYTES
#define UFG_PREFETCH_CHUNK_BYTES 1024
#endif
/* How far ahead of the chunk being computed each input is prefetched.  Between 8 and 16 KiB
 * was best on the machine measured; 4 KiB recovered two thirds of the gain. */
#ifndef UFG_PREFETCH_DISTANCE_BYTES
#define UFG_PREFETCH_DISTANCE_BYTES 8192
#endif
/* Calls reading fewer input bytes than this are likely in cache already. */
#ifndef UFG_PREFETCH_MIN_BYTES
#define UFG_PREFETCH_MIN_BYTES (256 * 1024)
#endif
/* Loops reading fewer input bytes than this per step of their core dimensions compute more
 * than they wait (ufg_prefetch_chunk). */
#ifndef UFG_PREFETCH_MIN_BYTES_PER_STEP
#define UFG_PREFETCH_MIN_BYTES_PER_STEP 4
#endif

/*
 * Outer iterations per chunk for a contiguous call of [begin, end) whose `nin` inputs advance
 * by steps[0..nin) bytes per iteration over `ncore` core dimensions dimensions[1..ncore];
 * `end - begin` (one chunk, nothing prefetched) when prefetching is not worth it:
 * - a short call: its inputs are likely in cache;
 * - core slices wider than a chunk: their own inner loops stream, which the hardware follows;
 * - a loop that computes more than it reads (under UFG_PREFETCH_MIN_BYTES_PER_STEP input bytes
 *   per step of its core dimensions; a 5x5 float64 matmul reads 400 bytes over 5*5*5 steps):
 *   it is not waiting on memory, and the prefetches and the shorter loops only cost;
 * - more than one input advancing with the outer loop: on an AMD EPYC with AVX-512, inner1d
 *   over 1M rows of 10 took 3.2-3.5 ms (float32) and 6.3-6.6 ms (float64) with the two inputs
 *   prefetched and 2.6 and 5.0 without, 0.74x Numba's @guvectorize against 1.05x, where the
 *   one-input loops still gained (rgb_to_gray float64 over 2000x2000 pixels 3.6 ms against
 *   4.0-4.3).
 */
static inline npy_intp
ufg_prefetch_chunk(npy_intp const *steps, int nin, npy_intp const *dimensions, int ncore,
                   npy_intp begin, npy_intp end)
{
    const npy_intp iterations = end - begin;
    npy_intp widest = 0, per_iteration = 0, core_steps = 1;
    int streams = 0;
    for (int i = 0; i < nin; i++) {
        if (steps[i] < 0 || steps[i] > UFG_PREFETCH_CHUNK_BYTES) {
            return iterations;
        }
        widest = steps[i] > widest ? steps[i] : widest;
        per_iteration += steps[i];
        streams += steps[i] != 0;
    }
    if (streams > 1) {
        return iterations;
    }
    /* The inputs lie in memory, so their bytes fit in an npy_intp.  The product of the core
     * sizes (an output's may be huge beside an empty one) is only compared with
     * per_iteration, so it stops just past it. */
    for (int d = 1; d <= ncore; d++) {
        const npy_intp size = dimensions[d] > 1 ? dimensions[d] : 1;
        if (size > per_iteration / core_steps) {
            core_steps = per_iteration + 1;
            break;
        }
        core_steps *= size;
    }
    if (widest == 0 || per_iteration * iterations < UFG_PREFETCH_MIN_BYTES
            || per_iteration < UFG_PREFETCH_MIN_BYTES_PER_STEP * core_steps) {
        return iterations;
    }
    const npy_intp chunk = UFG_PREFETCH_CHUNK_BYTES / widest;
    /* Whole vectors of an outer loop the compiler vectorized: no remainder loop per chunk. */
    return chunk >= 16 ? chunk - chunk % 16 : chunk;
}

/* Prefetches, for each input, the lines that iterations [from, to) will read a distance
 * ahead.  Prefetches do not fault, so reaching past an input's end is harmless; the
 * addresses are computed as integers, never as pointers past the array. */
static inline void
ufg_prefetch_inputs(char *const *args, npy_intp const *steps, int nin, npy_intp from, npy_intp to)
{
    for (int i = 0; i < nin; i++) {
        const uintptr_t base = (uintptr_t)args[i] + UFG_PREFETCH_DISTANCE_BYTES;
        const uintptr_t stop = base + (uintptr_t)(to * steps[i]);
        const uintptr_t first = base + (uintptr_t)(from * steps[i]);
        uintptr_t line = first & ~(uintptr_t)(UFG_CACHE_LINE_BYTES - 1);
        for (; line < stop; line += UFG_CACHE_LINE_BYTES) {
            __builtin_prefetch((const void *)line, 0, 3);
        }
    }
}

#endif /* UFUNCGEN_PREFETCH_H */
