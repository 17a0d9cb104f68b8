// Process-wide kernel switches set by tests (AVX-512 vs AVX2 paths, nazar's own NN kernel, the
// gemm threading, the thread count), saved when a guard is made and restored when it goes out of
// scope: also when an assertion fails or an exception escapes, so no test leaves a kernel choice
// behind for the next test of the same process (gtest runs a file's tests in one process when
// they are run outside ctest).
//
//   const auto keep = test::keep_additive_avx512();
//   if (!attn::set_additive_avx512(true)) GTEST_SKIP() << "no AVX-512 on this CPU";
#pragma once

#include "nazar/attention/additive_kernels.h"
#include "nazar/core/blas.h"
#include "nazar/core/gemm/nn512.h"
#include "nazar/core/threads.h"

#include <functional>

namespace nazar::test {

template <class T>
class [[nodiscard]] SwitchGuard {
public:
    SwitchGuard(T saved, std::function<void(T)> restore)
        : saved_(saved), restore_(std::move(restore)) {}
    ~SwitchGuard() { restore_(saved_); }
    SwitchGuard(const SwitchGuard&) = delete;
    SwitchGuard& operator=(const SwitchGuard&) = delete;

private:
    T saved_;
    std::function<void(T)> restore_;
};

// attn::set_additive_avx512 (the fused additive-attention kernels, additive_kernels.h).
inline SwitchGuard<bool> keep_additive_avx512() {
    return {attn::additive_avx512(), [](bool on) { attn::set_additive_avx512(on); }};
}
// set_small_gemm_avx512 (the small-M kernel, blas.h).
inline SwitchGuard<bool> keep_small_gemm_avx512() {
    return {small_gemm_avx512(), [](bool on) { set_small_gemm_avx512(on); }};
}
// detail::set_nn512 (nazar's own NN kernel, core/gemm/nn512.h).
inline SwitchGuard<bool> keep_nn512() {
    return {detail::nn512_available(), [](bool on) { detail::set_nn512(on); }};
}
// set_gemm_threading (blas.h).
inline SwitchGuard<GemmThreading> keep_gemm_threading() {
    return {gemm_threading(), [](GemmThreading t) { set_gemm_threading(t); }};
}
// set_num_threads (threads.h).
inline SwitchGuard<int> keep_num_threads() {
    return {num_threads(), [](int n) { set_num_threads(n); }};
}

}  // namespace nazar::test
