// Tensor memory (aligned_alloc_floats / aligned_free, tensor.h) goes through a cache of large
// blocks: a freed block of at least kBlockCacheMinBytes is kept, up to a limit, and handed to the
// next request of its size class instead of going back to the system.
//
// Why: glibc serves large blocks with mmap and returns them with munmap, so every fresh large
// tensor is paid for again in page faults: the kernel maps and zeroes each 4 KB page on its first
// touch. Decoding makes such tensors once per batch (the encoder's outputs and keys, the
// decoder's and generator's packed Wᵀ, 16 MB for the standard model's generator). On the
// virtual machines this project measures on a fault costs about 10 µs: mapping and zeroing 16 MB
// took 40 ms against 0.4 ms to pack the generator's Wᵀ into memory already mapped
// (docs/performance.md, "Large blocks kept for reuse").
//
// Size classes: four per power of two (a request is rounded up by less than 25%; pages past the
// requested size of a fresh block are never touched). A reused block is zeroed like a fresh one.
// The blocks kept are evicted least recently freed first. Thread-safe, and fork-safe (the list's
// lock is taken around fork()). Every block has a 64-byte header (its size and state): freeing a
// block twice stops the process with a message, as glibc's check did. Under AddressSanitizer a
// kept block is poisoned until it is handed out again, and a block out has its header and the
// slack past the requested size poisoned, so use after free and overflows are still reported.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nazar {

// Smallest block the cache keeps: below this glibc's own free lists serve requests without
// faults.
inline constexpr std::size_t kBlockCacheMinBytes = std::size_t{256} << 10;
// Default limit on the bytes the cache keeps (NAZAR_BLOCK_CACHE_MB in the environment, read once
// at the first allocation, overrides it; 0 turns the cache off).
inline constexpr std::size_t kBlockCacheDefaultBytes = std::size_t{256} << 20;

struct BlockCacheStats {
    std::size_t kept_bytes = 0;   // bytes of the blocks kept now
    std::size_t limit_bytes = 0;  // the limit (0: off)
    std::size_t kept_blocks = 0;
    uint64_t reused = 0;  // requests served from a kept block
    uint64_t fresh = 0;   // requests of at least kBlockCacheMinBytes that went to the system
};
BlockCacheStats block_cache_stats();
// Sets the limit; blocks kept beyond it are released at once (0 releases them all and turns the
// cache off).
void set_block_cache_limit(std::size_t bytes);
// Returns every kept block to the system (the limit stays).
void release_block_cache();
// release_block_cache() and glibc's malloc_trim(0): after a phase that freed much more than the
// work after it will need (loading a checkpoint for decoding frees its optimizer state), so that
// the process does not carry the freed pages.
void release_free_memory();
// Fixes glibc's mmap threshold at kBlockCacheMinBytes (mallopt M_MMAP_THRESHOLD), once per
// process, unless the environment already sets it (MALLOC_MMAP_THRESHOLD_,
// MALLOC_TRIM_THRESHOLD_ or GLIBC_TUNABLES: the user's choice stands). glibc raises the threshold
// to the largest block it has unmapped (up to 32 MB: a loaded file's buffer does it), and then
// serves blocks under it from per-thread heaps, which keep a freed block resident: the libraries'
// own scratch (oneDNN's packing buffers, 256 KB to 1 MB per product) then stays resident once per
// decoding thread. Called by Translator (decode/translator.h); tensors' own large blocks are
// mappings whatever the threshold (block_cache.cpp).
void keep_large_allocations_mapped();
// The size class a request of `bytes` (>= kBlockCacheMinBytes) is rounded up to.
std::size_t block_cache_class(std::size_t bytes);

}  // namespace nazar
