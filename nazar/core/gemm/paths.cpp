// Which path each product takes (blas.h: gemm_path, gemm_paths), and the once-only check that
// the GEMM library runs the kernels the CPU's feature bits call for.
#include "nazar/core/blas.h"
#include "nazar/core/cpu_features.h"
#include "nazar/core/gemm/internal.h"
#include "nazar/core/gemm/nn512.h"
#include "nazar/core/simd.h"  // NZ_SIMD_AVX2: whether the small-M kernel has its vector blocks

#include <fmt/format.h>

#include <cstdio>
#include <mutex>

namespace nazar {

namespace gemm_detail {

const char* tier_name(IsaTier t) {
    switch (t) {
        case IsaTier::avx512:
            return "avx512";
        case IsaTier::avx2:
            return "avx2";
        case IsaTier::naive:
            return "naive";
        default:
            return "below-avx2";
    }
}

IsaTier expected_tier() {
    const CpuFeatures& f = cpu_features();
    if (f.avx512f && f.avx512dq && f.avx512bw && f.avx512vl) return IsaTier::avx512;
    if (f.avx2 && f.fma) return IsaTier::avx2;
    return IsaTier::below_avx2;
}

void check_library_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        if (!kHaveBlas) return;
        const IsaTier have = backend_tier(), want = expected_tier();
        if (static_cast<int>(have) >= static_cast<int>(want)) return;
        const bool capped = switches().isa == "avx2";
        std::fprintf(stderr,
                     "nazar: large GEMM products run %s kernels (%s) on a CPU whose features call "
                     "for %s (%s); %s\n",
                     tier_name(have), backend_isa().c_str(), tier_name(want),
                     capped ? "NAZAR_ISA=avx2 is set" : "the GEMM library chose them",
                     capped ? "unset NAZAR_ISA for full speed" : backend_advice().c_str());
    });
}

}  // namespace gemm_detail

using namespace gemm_detail;

GemmPath gemm_path(bool ta, bool tb, int M, int N, int K, bool packed_wt) {
    if (!kHaveBlas) return {"naive loops", "naive", "NAZAR_BLAS=Naive"};
    (void)N;
    (void)K;
    if (packed_wt && M > kSmallGemmRows && M <= kNn512Rows && detail::nn512_available())
        return {"nazar NN", "avx512", "16 lanes, packed per-batch Wᵀ"};
    if (packed_wt) tb = true;  // gemm_xwt falls back to the NT product against W
    if (!ta && tb && M <= kSmallGemmRows) {
#ifdef NZ_SIMD_AVX2
        const bool wide = small_m_avx512_on();
        return {"nazar small-M", wide ? "avx512" : "avx2", wide ? "16 lanes" : "8 lanes"};
#else
        return {"nazar small-M", "portable", "plain C++ loops"};  // no x86 (aarch64)
#endif
    }
    if (!ta && !tb && nn512_takes(M) && detail::nn512_available())
        return {"nazar NN", "avx512", "16 lanes, B in place"};
    check_library_once();
    return {kLibraryName, tier_name(backend_tier()), backend_isa()};
}

std::string gemm_expected_isa() {
    return tier_name(expected_tier());
}

std::vector<GemmPathRow> gemm_paths() {
    struct Class {
        const char* name;
        bool ta, tb;
        int M, N, K;
        bool packed;
    };
    const Class classes[] = {
        {"A Bᵀ, M <= 8 (decoding steps: one row per sentence or beam)", false, true, 5, 8000, 512,
         false},
        {"x Wᵀ through the packed per-batch Wᵀ, 8 < M <= 512 (recurrence steps)", false, false, 64,
         1536, 512, true},
        {"A B, M <= 512 (backward steps: d_h = d_a W)", false, false, 64, 512, 1536, false},
        {"A Bᵀ, M > 8 (generator logits, input projections)", false, true, 256, 8000, 512, false},
        {"Aᵀ B (weight gradients)", true, false, 8000, 512, 256, false},
        {"A B, M > 512 (large products)", false, false, 2048, 2048, 2048, false},
    };
    std::vector<GemmPathRow> rows;
    for (const Class& c : classes)
        rows.push_back({c.name, c.M, c.N, c.K, gemm_path(c.ta, c.tb, c.M, c.N, c.K, c.packed)});
    return rows;
}

}  // namespace nazar
