// oneDNN's dnnl_sgemm behind nazar's large products (NAZAR_BLAS=oneDNN, the default). oneDNN
// picks its kernels from the CPU's feature bits (cpuid + XCR0), never from a table of CPU models,
// so a CPU newer than the library still gets its widest kernels (docs/performance.md).
//
// oneDNN is opened on the first product that needs it (onednn_api.h), not at start.
//
// Debian's oneDNN runs on OpenMP. Every calling thread's OpenMP team size is set to
// backend_set_threads' value before its first product (1 in GemmThreading::pool: nazar's pool
// already gives each thread its own block, and a team per pool thread would oversubscribe).
#include "nazar/core/check.h"
#include "nazar/core/gemm/internal.h"

#include <fmt/format.h>

#if NAZAR_BLAS_ONEDNN
#include "nazar/core/gemm/onednn_api.h"

#include <omp.h>

#include <atomic>

namespace nazar::gemm_detail {

namespace {

std::atomic<int> g_threads{1};

void set_team_size() {
    thread_local int t_team = 0;
    const int want = g_threads.load(std::memory_order_relaxed);
    if (t_team != want) {
        omp_set_num_threads(want);
        t_team = want;
    }
}

}  // namespace

void backend_sgemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                   const float* B, int ldb, float beta, float* C, int ldc) {
    set_team_size();
    const dnnl_status_t st = onednn().dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A,
                                                 lda, B, ldb, beta, C, ldc);
    NZ_CHECK(st == dnnl_success, "dnnl_sgemm failed (status {}) on {}x{}x{}", static_cast<int>(st),
             M, N, K);
}

void backend_sgemv(bool ta, int M, int N, float alpha, const float* A, int lda, const float* x,
                   float beta, float* y) {
    // op(A) x as a product with one column: y (rows x 1)
    const int rows = ta ? N : M, inner = ta ? M : N;
    backend_sgemm(ta, false, rows, 1, inner, alpha, A, lda, x, 1, beta, y, 1);
}

void backend_set_threads(int n) {
    g_threads.store(n);
}

std::string backend_isa() {
    switch (onednn().dnnl_get_effective_cpu_isa()) {
        case dnnl_cpu_isa_sse41:
            return "sse41";
        case dnnl_cpu_isa_avx:
            return "avx";
        case dnnl_cpu_isa_avx2:
            return "avx2";
        case dnnl_cpu_isa_avx2_vnni:
            return "avx2_vnni";
        case dnnl_cpu_isa_avx512_core:
            return "avx512_core";
        case dnnl_cpu_isa_avx512_core_vnni:
            return "avx512_core_vnni";
        case dnnl_cpu_isa_avx512_core_bf16:
            return "avx512_core_bf16";
        case dnnl_cpu_isa_avx512_core_amx:
            return "avx512_core_amx";
        default:
            return fmt::format("isa {:#x}",
                               static_cast<int>(onednn().dnnl_get_effective_cpu_isa()));
    }
}

IsaTier backend_tier() {
    const unsigned isa = static_cast<unsigned>(onednn().dnnl_get_effective_cpu_isa());
    const auto has = [&](dnnl_cpu_isa_t t) {
        const unsigned b = static_cast<unsigned>(t);
        return (isa & b) == b;
    };
    if (has(dnnl_cpu_isa_avx512_core)) return IsaTier::avx512;
    if (has(dnnl_cpu_isa_avx2)) return IsaTier::avx2;
    return IsaTier::below_avx2;
}

std::string backend_advice() {
    return "unset ONEDNN_MAX_CPU_ISA / DNNL_MAX_CPU_ISA and NAZAR_ISA";
}

std::string backend_description() {
    const dnnl_version_t* v = onednn().dnnl_version();
    return fmt::format("oneDNN {}.{}.{} sgemm [{}], {} thread(s) per call", v->major, v->minor,
                       v->patch, backend_isa(), g_threads.load());
}

}  // namespace nazar::gemm_detail
#endif  // NAZAR_BLAS_ONEDNN
