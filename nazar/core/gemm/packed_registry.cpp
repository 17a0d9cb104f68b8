// The registry behind gemm's packed path (packed.h, "packed weights registered for gemm"): the
// packed matrices of loaded models keyed on the address of their fp32 weight (or its
// placeholder), looked up by gemm_raw (try_packed) for every A Bᵀ product, gemm_xwt's included.
#include "nazar/core/check.h"
#include "nazar/core/gemm/internal.h"
#include "nazar/core/gemm/packed.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

namespace nazar {
namespace {

struct Entry {
    int N = 0, K = 0;
    std::shared_ptr<const PackedMatrix> m;
    bool fp32_kept = true;
};

struct Registry {
    std::shared_mutex mu;
    std::map<const float*, Entry, std::less<>> entries;
    std::atomic<int> count{0};
    std::atomic<int> placeholders{0};  // entries with fp32_kept = false
};

Registry& registry() {
    static Registry r;
    return r;
}

}  // namespace

namespace gemm_detail {

bool any_packed() {
    return registry().count.load(std::memory_order_acquire) > 0;
}

const PackedMatrix* find_packed(const float* B, int ldb, int* n0, int* k0) {
    Registry& r = registry();
    std::shared_lock lock(r.mu);
    auto it = r.entries.upper_bound(B);
    if (it == r.entries.begin()) return nullptr;
    --it;
    const Entry& e = it->second;
    const std::less<const float*> lt;
    if (!lt(B, it->first + static_cast<int64_t>(e.N) * e.K) || ldb != e.K) return nullptr;
    const int64_t off = B - it->first;
    *n0 = static_cast<int>(off / e.K);
    *k0 = static_cast<int>(off % e.K);
    return e.m.get();
}

// The entry whose fp32 address range holds p, or null.
const Entry* entry_holding(const Registry& r, const float* p, const float** base) {
    auto it = r.entries.upper_bound(p);
    if (it == r.entries.begin()) return nullptr;
    --it;
    const std::less<const float*> lt;
    if (!lt(p, it->first + static_cast<int64_t>(it->second.N) * it->second.K)) return nullptr;
    *base = it->first;
    return &it->second;
}

void check_fp32_operands(const float* A, const float* B) {
    Registry& r = registry();
    if (r.placeholders.load(std::memory_order_acquire) == 0) return;
    std::shared_lock lock(r.mu);
    for (const float* p : {A, B}) {
        const float* base = nullptr;
        const Entry* e = p ? entry_holding(r, p, &base) : nullptr;
        NZ_CHECK(!e || e->fp32_kept,
                 "a product reads the fp32 values of a {} x {} weight held only in {} (packed "
                 "at {}): only C = A W[n0:n1, k0:k1]ᵀ runs on the packed form",
                 e ? e->N : 0, e ? e->K : 0, e ? precision_name(e->m->precision()) : "",
                 static_cast<const void*>(base));
    }
}

bool try_packed(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                float beta, float* C, int ldc) {
    if (!any_packed()) return false;
    int n0 = 0, k0 = 0;
    const PackedMatrix* m = find_packed(B, ldb, &n0, &k0);
    if (!m || n0 + N > m->rows() || k0 + K > m->cols()) return false;
    GemmProfile* prof = profile();
    const auto t0 =
        prof ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    gemm_packed(M, n0, n0 + N, k0, K, alpha, A, lda, *m, beta, C, ldc);
    if (prof)
        profile_add(prof, false, true, M, N, K,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                    true, false);
    return true;
}

}  // namespace gemm_detail

PackedWeights::~PackedWeights() {
    clear();
}

void PackedWeights::add(const float* w, int N, int K, Precision p) {
    add(w, PackedMatrix::pack(w, N, K, K, p));
}

void PackedWeights::add(const float* w, PackedMatrix m, bool fp32_kept) {
    NZ_CHECK(w != nullptr, "PackedWeights::add: null matrix");
    Registry& r = registry();
    std::unique_lock lock(r.mu);
    const int N = m.rows(), K = m.cols();
    const bool fresh =
        r.entries
            .emplace(w, Entry{N, K, std::make_shared<const PackedMatrix>(std::move(m)), fp32_kept})
            .second;
    NZ_CHECK(fresh, "PackedWeights::add: matrix {} registered twice", static_cast<const void*>(w));
    entries_.push_back(w);
    r.count.fetch_add(1, std::memory_order_release);
    if (!fp32_kept) r.placeholders.fetch_add(1, std::memory_order_release);
}

std::shared_ptr<const PackedMatrix> PackedWeights::get(const float* w) const {
    if (std::find(entries_.begin(), entries_.end(), w) == entries_.end()) return nullptr;
    Registry& r = registry();
    std::shared_lock lock(r.mu);
    return r.entries.at(w).m;
}

std::size_t PackedWeights::bytes() const {
    Registry& r = registry();
    std::shared_lock lock(r.mu);
    std::size_t b = 0;
    for (const float* w : entries_) b += r.entries.at(w).m->bytes();
    return b;
}

void PackedWeights::clear() {
    Registry& r = registry();
    std::unique_lock lock(r.mu);
    for (const float* w : entries_) {
        auto it = r.entries.find(w);
        if (!it->second.fp32_kept) r.placeholders.fetch_sub(1, std::memory_order_release);
        r.entries.erase(it);
        r.count.fetch_sub(1, std::memory_order_release);
    }
    entries_.clear();
}

}  // namespace nazar
