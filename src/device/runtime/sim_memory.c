/*
 * The simulator's device memory: host blocks, registered by address so that any pointer into
 * one finds it, handed out again after stream-ordered frees like a CUDA memory pool, and
 * checked on every use against the frees (see sim.h).
 */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

/* cudaMalloc's alignment, which kernels and consumers may rely on. */
#define UFG_SIM_ALIGNMENT 256
/* Freed blocks kept for reuse; beyond either bound a freed block goes back to the host. */
#define UFG_SIM_POOL_BLOCKS 256
#define UFG_SIM_POOL_BYTES ((size_t)64 << 20)
/* What a freed block reads as: NaN in every float type, -1 in every integer type. */
#define UFG_SIM_POISON 0xFF

pthread_mutex_t ufg_sim_mutex = PTHREAD_MUTEX_INITIALIZER;

/* Blocks not yet released, sorted by base address (bisection finds interior pointers). */
static ufg_sim_block **ufg_sim_blocks = NULL;
static size_t ufg_sim_nblocks = 0, ufg_sim_capacity = 0;

/* Freeing and freed blocks, newest first; the freed ones counted. */
static ufg_sim_block *ufg_sim_pool = NULL;
static size_t ufg_sim_pool_blocks = 0, ufg_sim_pool_bytes = 0;

/* ------------------------------------------------------------------ the registry */

/* Index of the first block whose base is > address. */
static size_t
ufg_sim_upper_bound(uintptr_t address)
{
    size_t lo = 0, hi = ufg_sim_nblocks;

    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (ufg_sim_blocks[mid]->base <= address) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    return lo;
}

static int
ufg_sim_register(ufg_sim_block *block)
{
    size_t at;

    if (ufg_sim_nblocks == ufg_sim_capacity) {
        const size_t capacity = ufg_sim_capacity ? 2 * ufg_sim_capacity : 64;
        ufg_sim_block **grown = realloc(ufg_sim_blocks, capacity * sizeof(*grown));
        if (grown == NULL) {
            return UFG_ERROR_MEMORY_ALLOCATION;
        }
        ufg_sim_blocks = grown;
        ufg_sim_capacity = capacity;
    }
    at = ufg_sim_upper_bound(block->base);
    memmove(&ufg_sim_blocks[at + 1], &ufg_sim_blocks[at],
            (ufg_sim_nblocks - at) * sizeof(*ufg_sim_blocks));
    ufg_sim_blocks[at] = block;
    ufg_sim_nblocks++;
    return 0;
}

static void
ufg_sim_unregister(ufg_sim_block *block)
{
    const size_t at = ufg_sim_upper_bound(block->base);

    if (at > 0 && ufg_sim_blocks[at - 1] == block) {
        memmove(&ufg_sim_blocks[at - 1], &ufg_sim_blocks[at],
                (ufg_sim_nblocks - at) * sizeof(*ufg_sim_blocks));
        ufg_sim_nblocks--;
    }
}

ufg_sim_block *
ufg_sim_block_find(uintptr_t address)
{
    const size_t at = ufg_sim_upper_bound(address);

    if (at > 0) {
        ufg_sim_block *block = ufg_sim_blocks[at - 1];
        if (address - block->base < block->size) {
            return block;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ the pool */

static void
ufg_sim_pool_remove(ufg_sim_block *block)
{
    for (ufg_sim_block **link = &ufg_sim_pool; *link != NULL; link = &(*link)->next_in_pool) {
        if (*link == block) {
            *link = block->next_in_pool;
            block->next_in_pool = NULL;
            break;
        }
    }
    if (block->state == UFG_SIM_BLOCK_FREED) {
        ufg_sim_pool_blocks--;
        ufg_sim_pool_bytes -= block->size;
    }
}

/* Returns the memory to the host; the record goes when no queued operation names it. */
static void
ufg_sim_release(ufg_sim_block *block)
{
    ufg_sim_unregister(block);
    free((void *)block->base);
    block->state = UFG_SIM_BLOCK_RELEASED;
    if (block->users == 0) {
        free(block);
    }
}

/* A pooled block that `stream` may have: same device and size, and either its free has run or
 * it is queued on this very stream, whose later work runs after it. */
static ufg_sim_block *
ufg_sim_pool_take(size_t size, int device, const void *queue)
{
    for (ufg_sim_block *block = ufg_sim_pool; block != NULL; block = block->next_in_pool) {
        if (block->size == size && block->device == device &&
            (block->state == UFG_SIM_BLOCK_FREED ||
             (queue != NULL && block->free_queue == queue))) {
            ufg_sim_pool_remove(block);
            block->state = UFG_SIM_BLOCK_LIVE;
            return block;
        }
    }
    return NULL;
}

int
ufg_sim_block_allocate(size_t nbytes, int device, const void *queue, ufg_sim_block **out)
{
    /* aligned_alloc wants a multiple of the alignment; zero bytes still get a unique,
     * registered address, as consumers expect a non-null pointer for empty arrays. */
    const size_t size = nbytes == 0 ? UFG_SIM_ALIGNMENT
        : (nbytes + UFG_SIM_ALIGNMENT - 1) / UFG_SIM_ALIGNMENT * UFG_SIM_ALIGNMENT;
    ufg_sim_block *block;

    if (size < nbytes) {
        return UFG_ERROR_MEMORY_ALLOCATION;     /* the rounding overflowed */
    }
    if ((block = ufg_sim_pool_take(size, device, queue)) != NULL) {
        *out = block;
        return 0;
    }
    block = calloc(1, sizeof(*block));
    if (block == NULL) {
        return UFG_ERROR_MEMORY_ALLOCATION;
    }
    block->base = (uintptr_t)aligned_alloc(UFG_SIM_ALIGNMENT, size);
    if (block->base == 0) {
        free(block);
        return UFG_ERROR_MEMORY_ALLOCATION;
    }
    block->size = size;
    block->device = device;
    block->state = UFG_SIM_BLOCK_LIVE;
    if (ufg_sim_register(block) != 0) {
        free((void *)block->base);
        free(block);
        return UFG_ERROR_MEMORY_ALLOCATION;
    }
    *out = block;
    return 0;
}

int
ufg_sim_block_queue_free(ufg_sim_block *block, void *stream, const void *queue)
{
    /* cudaFreeAsync rejects pointers it did not hand out, and double frees. */
    if (block->state != UFG_SIM_BLOCK_LIVE) {
        return UFG_ERROR_INVALID_VALUE;
    }
    block->state = UFG_SIM_BLOCK_FREEING;
    block->queued_frees++;
    block->free_stream = stream;
    block->free_queue = queue;
    block->next_in_pool = ufg_sim_pool;
    ufg_sim_pool = block;
    return 0;
}

void
ufg_sim_block_run_free(ufg_sim_block *block)
{
    memset((void *)block->base, UFG_SIM_POISON, block->size);
    block->run_frees++;
    if (block->state != UFG_SIM_BLOCK_FREEING || block->run_frees != block->queued_frees) {
        return;     /* taken again on its own stream, whose new owner's work comes after */
    }
    block->state = UFG_SIM_BLOCK_FREED;
    ufg_sim_pool_blocks++;
    ufg_sim_pool_bytes += block->size;
    if (ufg_sim_pool_blocks > UFG_SIM_POOL_BLOCKS || ufg_sim_pool_bytes > UFG_SIM_POOL_BYTES) {
        ufg_sim_pool_remove(block);
        ufg_sim_release(block);
    }
}

/* ------------------------------------------------------------------ uses */

ufg_sim_use
ufg_sim_block_use(uintptr_t address)
{
    ufg_sim_use use = {ufg_sim_block_find(address), 0, address};

    if (use.block != NULL) {
        use.block->users++;
        use.generation = use.block->queued_frees;
    }
    return use;
}

int
ufg_sim_use_check(const ufg_sim_use *use, char *message, size_t size)
{
    const ufg_sim_block *block = use->block;

    /* Freed (and not handed out again) or released: whatever the generations say, the use
     * came after a free that has run. */
    if (block == NULL || (block->state != UFG_SIM_BLOCK_RELEASED &&
                          block->state != UFG_SIM_BLOCK_FREED &&
                          block->run_frees == use->generation)) {
        return 0;
    }
    snprintf(message, size,
             "an operation used device memory at %#lx (in the %zu-byte buffer at %#lx, "
             "device %d) %s on stream %#lx; nothing ordered the two",
             (unsigned long)use->address, block->size, (unsigned long)block->base,
             block->device,
             block->run_frees < use->generation && block->state == UFG_SIM_BLOCK_LIVE
                 ? "before the stream-ordered free that made it available again ran"
                 : "after it was freed",
             (unsigned long)(uintptr_t)block->free_stream);
    return -1;
}

void
ufg_sim_use_end(ufg_sim_use *use)
{
    ufg_sim_block *block = use->block;

    if (block != NULL && --block->users == 0 && block->state == UFG_SIM_BLOCK_RELEASED) {
        free(block);
    }
    use->block = NULL;
}
