// aligned_alloc_floats / aligned_free (tensor.h) over the cache of large blocks (block_cache.h).
#include "nazar/core/block_cache.h"

#include "nazar/core/tensor.h"

#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

// GCC defines __SANITIZE_ADDRESS__ under -fsanitize=address; clang 14 only has the feature test
#if defined(__SANITIZE_ADDRESS__)
#define NZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NZ_ASAN 1
#endif
#endif

#ifdef NZ_ASAN
#include <sanitizer/asan_interface.h>
#define NZ_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define NZ_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define NZ_POISON(p, n) ((void)(p), (void)(n))
#define NZ_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace nazar {

namespace {

// Every block starts with one alignment unit: its size in bytes (after the header), so
// aligned_free knows whether the block may be kept and in which class, and its state, so a block
// freed twice (or a header overwritten by a stray write before a tensor) stops the process
// instead of handing one block to two tensors. Under AddressSanitizer the header is poisoned
// while the block is out, and so is the slack past the requested size.
constexpr std::size_t kHeader = kAlignment;
constexpr uint64_t kLive = 0x6e617a61722d6f6eULL;  // handed out
constexpr uint64_t kKept = 0x6e617a61722d6b70ULL;  // in the cache
constexpr uint64_t kGone = 0;                      // returned to the system

void write_header(char* base, std::size_t bytes, uint64_t state) {
    NZ_UNPOISON(base, kHeader);
    std::memcpy(base, &bytes, sizeof bytes);
    std::memcpy(base + sizeof bytes, &state, sizeof state);
}

uint64_t read_header(char* base, std::size_t* bytes) {
    NZ_UNPOISON(base, kHeader);
    uint64_t state = 0;
    std::memcpy(bytes, base, sizeof *bytes);
    std::memcpy(&state, base + sizeof *bytes, sizeof state);
    return state;
}

// Large blocks (kBlockCacheMinBytes and more) are mappings of their own, outside AddressSanitizer
// (which watches the allocator's blocks, not mappings): one given back leaves the process at
// once. From glibc's heap, a block freed in the middle of a thread's arena stays resident, and
// glibc serves blocks of up to the largest it has unmapped (its dynamic mmap threshold, up to
// 32 MB) from there: decoding threads each kept a few MB of freed tensors that way
// (docs/decoding.md, "Thread safety"). A fresh mapping is zero, and its pages cost memory only
// once written.
#ifdef NZ_ASAN
constexpr bool kMapLarge = false;
#else
constexpr bool kMapLarge = true;
#endif

bool mapped_block(std::size_t bytes) {
    return kMapLarge && bytes >= kBlockCacheMinBytes;
}

// A fresh block of `bytes` after its header, zero (true) or not known to be; null when the
// system has no memory for it.
char* fresh_block(std::size_t bytes, bool* zero) {
    *zero = mapped_block(bytes);
    if (!*zero) return static_cast<char*>(std::aligned_alloc(kAlignment, kHeader + bytes));
    void* p =
        mmap(nullptr, kHeader + bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
}

// Back to the system (the whole block readable again for the allocator).
void release(char* base, std::size_t bytes) {
    NZ_UNPOISON(base, kHeader + bytes);
    write_header(base, bytes, kGone);
    if (mapped_block(bytes))
        munmap(base, kHeader + bytes);
    else
        std::free(base);
}

std::size_t limit_from_environment() {
    const char* e = std::getenv("NAZAR_BLOCK_CACHE_MB");
    if (e == nullptr) return kBlockCacheDefaultBytes;
    char* end = nullptr;
    errno = 0;
    const unsigned long long mb = std::strtoull(e, &end, 10);
    if (*e == '\0' || *end != '\0' || *e == '-' || errno != 0 || mb > (std::size_t{1} << 24)) {
        std::fprintf(stderr,
                     "nazar: ignoring NAZAR_BLOCK_CACHE_MB=%s (expected a whole number of MiB, "
                     "0 to 16777216); keeping up to %zu MiB of freed tensor memory\n",
                     e, kBlockCacheDefaultBytes >> 20);
        return kBlockCacheDefaultBytes;
    }
    return static_cast<std::size_t>(mb) << 20;
}

struct Block {
    char* base;         // what aligned_alloc returned: the header, then the user's memory
    std::size_t bytes;  // after the header (the class)
};

class Cache {
public:
    // A kept block of exactly `bytes` (a class), most recently freed first; nullptr if none.
    char* take(std::size_t bytes) {
        std::lock_guard<std::mutex> lock(mu_);
        for (std::size_t i = kept_.size(); i-- > 0;)
            if (kept_[i].bytes == bytes) {
                char* base = kept_[i].base;
                kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(i));
                kept_bytes_ -= bytes;
                ++reused_;
                NZ_UNPOISON(base, kHeader + bytes);
                return base;
            }
        ++fresh_;
        return nullptr;
    }
    // Keeps the block (evicting the least recently freed ones over the limit) or frees it.
    void give(char* base, std::size_t bytes) {
        locked([&](std::vector<Block>& out) {
            if (bytes > limit_) {
                out.push_back({base, bytes});
                return;
            }
            write_header(base, bytes, kKept);
            NZ_POISON(base, kHeader + bytes);
            kept_.push_back({base, bytes});
            kept_bytes_ += bytes;
            evict_over(limit_, out);
        });
    }
    void set_limit(std::size_t bytes) {
        locked([&](std::vector<Block>& out) {
            limit_ = bytes;
            evict_over(limit_, out);
        });
    }
    void release_all() {
        locked([&](std::vector<Block>& out) { evict_over(0, out); });
    }
    // fork(): the child must not inherit the list locked by another thread (pthread_atfork)
    void lock() { mu_.lock(); }
    void unlock() { mu_.unlock(); }
    BlockCacheStats stats() {
        std::lock_guard<std::mutex> lock(mu_);
        return {kept_bytes_, limit_, kept_.size(), reused_, fresh_};
    }

private:
    // f(out) under the lock; the blocks it put in `out` then go back to the system outside it
    template <class F>
    void locked(F&& f) {
        std::vector<Block> out;
        {
            std::lock_guard<std::mutex> lock(mu_);
            f(out);
        }
        for (const Block& b : out) release(b.base, b.bytes);
    }
    void evict_over(std::size_t limit, std::vector<Block>& out) {
        std::size_t n = 0;
        while (kept_bytes_ > limit) {
            kept_bytes_ -= kept_[n].bytes;
            out.push_back(kept_[n++]);
        }
        kept_.erase(kept_.begin(), kept_.begin() + static_cast<std::ptrdiff_t>(n));
    }

    std::mutex mu_;
    std::vector<Block> kept_;  // least recently freed first
    std::size_t kept_bytes_ = 0;
    std::size_t limit_ = limit_from_environment();
    uint64_t reused_ = 0, fresh_ = 0;
};

// Never destroyed: tensors owned by static and thread_local objects are freed during exit, in
// an order the cache cannot know; the blocks it keeps then go back with the process.
Cache& cache() {
    static Cache* c = [] {
        auto* made = new Cache;
        pthread_atfork([] { cache().lock(); }, [] { cache().unlock(); }, [] { cache().unlock(); });
        return made;
    }();
    return *c;
}

[[noreturn]] void bad_free(const void* p, uint64_t state) {
    std::fprintf(stderr,
                 "nazar: aligned_free(%p): %s; stopping rather than hand one block to two "
                 "tensors\n",
                 p,
                 state == kKept ? "the block was freed twice"
                                : "not a live tensor block (freed twice, or its header "
                                  "overwritten)");
    std::abort();
}

}  // namespace

std::size_t block_cache_class(std::size_t bytes) {
    // four classes per power of two: a multiple of 2^(floor(log2 bytes) - 2), of 64 at least
    const std::size_t step = std::max<std::size_t>(std::bit_floor(bytes) >> 2, kAlignment);
    return (bytes + step - 1) / step * step;
}

BlockCacheStats block_cache_stats() {
    return cache().stats();
}

void set_block_cache_limit(std::size_t bytes) {
    cache().set_limit(bytes);
}

void release_block_cache() {
    cache().release_all();
}

void release_free_memory() {
    release_block_cache();
    ::malloc_trim(0);
}

void keep_large_allocations_mapped() {
    static std::once_flag once;
    std::call_once(once, [] {
        for (const char* v : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"})
            if (std::getenv(v) != nullptr) return;
        ::mallopt(M_MMAP_THRESHOLD, static_cast<int>(kBlockCacheMinBytes));
    });
}

float* aligned_alloc_floats(int64_t n) {
    if (n == 0) return nullptr;
    NZ_CHECK(n > 0 && static_cast<uint64_t>(n) < (uint64_t{1} << 60) / sizeof(float),
             "cannot allocate {} floats", n);
    const std::size_t want =
        (static_cast<std::size_t>(n) * sizeof(float) + kAlignment - 1) / kAlignment * kAlignment;
    const bool large = want >= kBlockCacheMinBytes;
    const std::size_t bytes = large ? block_cache_class(want) : want;
    char* base = large ? cache().take(bytes) : nullptr;
    bool zero = false;
    if (base == nullptr) {
        base = fresh_block(bytes, &zero);
        if (base == nullptr)
            NZ_FAIL("out of memory allocating {} floats ({:.1f} MiB)", n, bytes / 1048576.0);
    }
    write_header(base, bytes, kLive);
    // the requested part only: a fresh block's pages past it stay untouched (and unmapped)
    if (!zero) std::memset(base + kHeader, 0, want);
    NZ_POISON(base, kHeader);
    NZ_POISON(base + kHeader + want, bytes - want);  // slack of the size class
    return reinterpret_cast<float*>(base + kHeader);
}

namespace {
// The block of a live tensor p (not null): its base and size; stops on a block not live.
char* live_block(float* p, std::size_t* bytes) {
    char* base = reinterpret_cast<char*>(p) - kHeader;
    const uint64_t state = read_header(base, bytes);
    if (state != kLive) bad_free(p, state);
    return base;
}
}  // namespace

void aligned_free(float* p) {
    if (p == nullptr) return;
    std::size_t bytes = 0;
    char* base = live_block(p, &bytes);
    if (bytes >= kBlockCacheMinBytes)
        cache().give(base, bytes);
    else
        release(base, bytes);
}

void aligned_free_outgrown(float* p) {
    if (p == nullptr) return;
    std::size_t bytes = 0;
    char* base = live_block(p, &bytes);
    release(base, bytes);
}

}  // namespace nazar
