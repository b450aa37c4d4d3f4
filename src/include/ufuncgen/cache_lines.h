/*
 * The cache line, which the host loops count in: a kernel's vector loop starts on the first
 * output's next line (host_loops.h, ufg_run_aligned), a gufunc's inputs are prefetched a line
 * at a time (prefetch.h), and streamed outputs are copied out in whole lines (stream_out.h).
 */
#ifndef UFUNCGEN_CACHE_LINES_H
#define UFUNCGEN_CACHE_LINES_H

#include <stdint.h>

#include <numpy/ndarraytypes.h>

#define UFG_CACHE_LINE_BYTES 64

/* How many elements of `itemsize` bytes lie from p to the next 64-byte boundary (0 if p is on
 * one, or not aligned to its itemsize, when no whole element reaches one), at most n. */
static inline npy_intp
ufg_elements_to_cache_line(const char *p, int itemsize, npy_intp n)
{
    const uintptr_t offset = (uintptr_t)p % UFG_CACHE_LINE_BYTES;
    if (offset % (uintptr_t)itemsize != 0) {
        return 0;
    }
    const uintptr_t to_line = (UFG_CACHE_LINE_BYTES - offset) % UFG_CACHE_LINE_BYTES;
    const npy_intp head = (npy_intp)(to_line / (uintptr_t)itemsize);
    return head < n ? head : n;
}

#endif /* UFUNCGEN_CACHE_LINES_H */
