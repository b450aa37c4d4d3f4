/*
 * Outputs streamed past the caches, for the contiguous elementwise calls too large for the
 * last-level cache (host_loops.h, ufg_run_aligned).
 *
 * An ordinary store to a line that is not in cache first reads the line (a read for
 * ownership), so an output written that way crosses the memory bus twice: `add` of float32
 * moves 16 bytes an element where it needs 12.  A non-temporal store writes a whole line
 * without reading it.  GCC has no way to ask for them in a loop it vectorizes, so the kernel
 * runs a chunk of elements at a time into buffers that stay in L1, and each chunk is copied
 * out with non-temporal stores.  The kernel's loop is the one an ordinary call runs, so every
 * element gets the same bits and raises the same flags.
 *
 * They lose where the data would have stayed in cache (the store then goes all the way to
 * memory, and the next reader fetches it back): in a C test on one thread of an AMD EPYC with
 * AVX-512, `out = x + y` of float32 ran 1.3x faster at 10M elements (120 MB), 1.07x-1.2x at
 * 4M, the same at 2M (24 MB) and 0.8x-1.0x at 1M (12 MB, its 32 MB L3 holding it), the same
 * with the result summed right after.  So only calls moving UFG_STREAM_OUT_MIN_BYTES stream.
 *
 * Each constant below may be set with -D when building, to tune for another machine.
 */
#ifndef UFUNCGEN_STREAM_OUT_H
#define UFUNCGEN_STREAM_OUT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <numpy/ndarraytypes.h>

#include "ufuncgen/cache_lines.h"

#if defined(__x86_64__) && defined(__SSE2__) && defined(__linux__)
#include <emmintrin.h>
#include <sys/mman.h>
#define UFG_HAS_STREAM_STORES 1
#else
#define UFG_HAS_STREAM_STORES 0
#endif

/* Bytes a call reads and writes (its broadcast inputs' one value not counted) from which its
 * outputs stream: the measured machine's L3 (sysconf's figure for it is not to be trusted in
 * a virtual machine: 320 MB on the one measured). */
#ifndef UFG_STREAM_OUT_MIN_BYTES
#define UFG_STREAM_OUT_MIN_BYTES (32 * 1024 * 1024)
#endif
/* Bytes of every output's buffer together per chunk: well inside L1 with the chunk's inputs. */
#ifndef UFG_STREAM_OUT_CHUNK_BYTES
#define UFG_STREAM_OUT_CHUNK_BYTES 2048
#endif
/* Elements per chunk are a multiple of this, so that every chunk of every output (itemsizes
 * 1 to 16 bytes) starts where the first one did relative to a cache line. */
#define UFG_STREAM_OUT_CHUNK_STEP 64
/* Arguments of a call at most (host_loops.h checks UFG_MAX_ARGS against it). */
#define UFG_STREAM_OUT_MAX_ARGS 32

/* Whether the page holding p is in memory.  The pages of an output NumPy has just allocated
 * are not: the first store to each faults in a page that the kernel zeroes through the
 * caches, where ordinary stores then find its lines, and non-temporal ones must evict them
 * (`add` of 10M float32 into a new array: 0.88x-0.91x with its output streamed).  An `out=`
 * array written before is in memory, not in cache. */
static inline bool
ufg_page_resident(const char *p)
{
#if UFG_HAS_STREAM_STORES
    const uintptr_t page = 4096;    /* the smallest; mincore reports huge pages in its units */
    unsigned char resident = 0;
    return mincore((void *)((uintptr_t)p & ~(page - 1)), 1, &resident) == 0
           && (resident & 1) != 0;
#else
    (void)p;
    return false;
#endif
}

/* Whether a contiguous call of n elements streams its outputs (`steps` 0 for a broadcast
 * input, the itemsize otherwise): a call moving UFG_STREAM_OUT_MIN_BYTES or more whose
 * outputs' first and last pages are in memory (ufg_page_resident).  Not a call writing over
 * an input (out=x): the chunk just read is in cache, with nothing to save, and a non-temporal
 * store must evict its lines (`add` of 10M float32 in place, 0.75x).  Nor a call whose
 * outputs need more than a chunk's buffer for UFG_STREAM_OUT_CHUNK_STEP elements. */
static inline bool
ufg_streams_outputs(char **args, npy_intp n, const npy_intp *steps, int nin, int nargs)
{
    if (!UFG_HAS_STREAM_STORES) {
        return false;
    }
    npy_intp element_bytes = 0, output_bytes = 0;
    for (int k = 0; k < nargs; k++) {
        element_bytes += steps[k];
        output_bytes += k >= nin ? steps[k] : 0;
    }
    if (output_bytes * UFG_STREAM_OUT_CHUNK_STEP > UFG_STREAM_OUT_CHUNK_BYTES
        || n < UFG_STREAM_OUT_MIN_BYTES / element_bytes) {
        return false;
    }
    for (int k = nin; k < nargs; k++) {
        for (int j = 0; j < nin; j++) {
            if (args[k] == args[j]) {
                return false;
            }
        }
        if (!ufg_page_resident(args[k]) || !ufg_page_resident(args[k] + (n - 1) * steps[k])) {
            return false;
        }
    }
    return true;
}

/* Copies `bytes` from a buffer aligned to a cache line to dst, with non-temporal stores for
 * dst's whole 16-byte units.  They are weakly ordered: ufg_stream_fence before another
 * thread may read dst. */
static inline void
ufg_stream_copy(char *dst, const char *src, npy_intp bytes)
{
#if UFG_HAS_STREAM_STORES
    npy_intp head = (npy_intp)((16 - (uintptr_t)dst % 16) % 16);
    head = head < bytes ? head : bytes;
    memcpy(dst, src, (size_t)head);
    npy_intp k = head;
    for (; k + 16 <= bytes; k += 16) {
        _mm_stream_si128((__m128i *)(dst + k), _mm_loadu_si128((const __m128i *)(src + k)));
    }
    memcpy(dst + k, src + k, (size_t)(bytes - k));
#else
    memcpy(dst, src, (size_t)bytes);
#endif
}

/* Orders the non-temporal stores before every later store of this thread: the store that
 * tells another thread the call (or this part of it) is done. */
static inline void
ufg_stream_fence(void)
{
#if UFG_HAS_STREAM_STORES
    _mm_sfence();
#endif
}

/* A contiguous call of n elements (inputs of step 0 broadcast), its outputs streamed: the
 * elements before the first output's next cache line through the kernel directly, the rest a
 * chunk at a time through buffers.  An output may be an input exactly (out=x, which
 * ufg_streams_outputs does not choose): a chunk's inputs are read before its outputs are
 * copied. */
static void
ufg_run_streaming_outputs(char **args, npy_intp n, const npy_intp *steps, int nin, int nargs,
                          const int *itemsizes, void (*kernel)(npy_intp, char **))
{
    _Alignas(UFG_CACHE_LINE_BYTES) char buffers[UFG_STREAM_OUT_CHUNK_BYTES];
    char *chunk_args[UFG_STREAM_OUT_MAX_ARGS];
    npy_intp output_bytes = 0;
    for (int k = nin; k < nargs; k++) {
        output_bytes += itemsizes[k];
    }
    const npy_intp chunk = UFG_STREAM_OUT_CHUNK_BYTES / output_bytes
                           / UFG_STREAM_OUT_CHUNK_STEP * UFG_STREAM_OUT_CHUNK_STEP;
    /* None if the first output is not aligned to its itemsize: the copies then start where
     * they may. */
    const npy_intp head = ufg_elements_to_cache_line(args[nin], itemsizes[nin], n);
    if (head > 0) {
        kernel(head, args);
    }
    for (npy_intp start = head; start < n; start += chunk) {
        const npy_intp m = n - start < chunk ? n - start : chunk;
        npy_intp offset = 0;
        for (int k = 0; k < nargs; k++) {
            if (k < nin) {
                chunk_args[k] = args[k] + start * steps[k];
            }
            else {
                chunk_args[k] = buffers + offset;
                offset += chunk * itemsizes[k];
            }
        }
        kernel(m, chunk_args);
        for (int k = nin; k < nargs; k++) {
            ufg_stream_copy(args[k] + start * itemsizes[k], chunk_args[k], m * itemsizes[k]);
        }
    }
    ufg_stream_fence();
}

#endif /* UFUNCGEN_STREAM_OUT_H */
