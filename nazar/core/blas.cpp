#include "nazar/core/blas.h"

#include "nazar/core/gemm_nn512.h"
#include "nazar/core/threads.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#if NAZAR_BLAS_OPENBLAS
#include <cblas.h>
#endif
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define NZ_BLAS_AVX2 1
#endif

namespace nazar {

namespace {
// GemmThreading::pool: OpenBLAS runs single-threaded in whichever thread calls it, and a large
// gemm is cut into column (or row) blocks run by nazar's own pool (threads.h), so one set of
// threads serves BLAS and our loops and nothing spins against anything. GemmThreading::blas:
// OpenBLAS's own pthreads pool (the measured alternative; docs/performance.md).
// NAZAR_GEMM_THREADS=blas in the environment selects the latter at start-up.
std::atomic<GemmThreading> g_threading{[] {
    const char* e = std::getenv("NAZAR_GEMM_THREADS");
    return e && std::strcmp(e, "blas") == 0 ? GemmThreading::blas : GemmThreading::pool;
}()};
std::atomic<int> g_blas_threads{1};
// Below this many flops one thread does the whole product (waking a sleeping pool costs ~10 µs;
// between a step's jobs the workers are usually still spinning, so splitting pays much lower).
// 1.5e6 rather than 4e6 splits the small config's encoder steps (32 x 384 x 128, 3.1 MFLOP) and
// batch-1 decoder products: small training +5-7% per CPU-second and wall, greedy batch 1 +27%;
// 7.5e5 and 3e5 measured the same as 1.5e6, 16e6 20-25% slower (quiet 2-core machine).
constexpr double kSplitFlops = 1.5e6;
constexpr int kBlock = 16;  // split points are multiples of the kernels' register blocking
// C = alpha A Bᵀ + beta C with at most kSmallM rows (decoding: one row per sentence or beam) is
// done by our own kernel: OpenBLAS packs all of B (e.g. the 8000 x 512 generator, 16 MB) on
// every call, which costs more than the product itself at M <= 8. Here B is read once, row by
// row, straight from memory; A's rows stay in L1.
constexpr int kSmallM = kSmallGemmRows;
constexpr int kNn512Rows = 512;

// Scalar tail k in [k0, K), as explicit FMAs in order: the AVX2 and AVX-512 kernels must agree
// bit for bit, and left to itself GCC contracts (or vectorises) this loop differently per target.
inline float dot_tail(const float* x, const float* w, int k0, int K) {
    float s = 0;
    for (int k = k0; k < K; ++k) s = std::fma(x[k], w[k], s);
    return s;
}

#ifdef NZ_BLAS_AVX2
// dst (8 rows, ldd) = src (8 rows, lds)ᵀ for an 8 x 8 tile.
inline void transpose8x8(const float* src, int64_t lds, float* dst, int64_t ldd) {
    __m256 r[8], u[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * lds);
    for (int i = 0; i < 8; i += 2) {
        u[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        u[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4)
        for (int j = 0; j < 2; ++j) {
            r[i + 2 * j] = _mm256_shuffle_ps(u[i + j], u[i + j + 2], _MM_SHUFFLE(1, 0, 1, 0));
            r[i + 2 * j + 1] = _mm256_shuffle_ps(u[i + j], u[i + j + 2], _MM_SHUFFLE(3, 2, 3, 2));
        }
    for (int i = 0; i < 4; ++i) {
        _mm256_storeu_ps(dst + i * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
        _mm256_storeu_ps(dst + (i + 4) * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
    }
}

inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// MB rows of A (m0..m0+MB) against J rows of B (n..n+J), register-blocked: per 8-float step of
// K, MB + J loads feed MB·J FMAs (the unblocked 1-row-of-A x 4-rows-of-B loop needed 5 loads
// per 4 FMAs and was load-bound). Every C entry is still one 8-lane accumulator over k = 0, 8,
// 16, ... in order, reduced by hsum8 and added to its scalar tail: the same operations in the
// same order as before, so results are bit-identical whatever the blocking (and M).
template <int MB, int J>
void abt_block(int m0, int n, int n_next, int K, float alpha, const float* A, int lda,
               const float* B, int ldb, float beta, float* C, int ldc) {
    const int K8 = K & ~7;
    __m256 acc[MB][J];
    for (int i = 0; i < MB; ++i)
        for (int j = 0; j < J; ++j) acc[i][j] = _mm256_setzero_ps();
    const float* x[MB];
    const float* w[J];
    for (int i = 0; i < MB; ++i) x[i] = A + static_cast<int64_t>(m0 + i) * lda;
    for (int j = 0; j < J; ++j) w[j] = B + static_cast<int64_t>(n + j) * ldb;
    // Prefetch the same rows of the next 12-row group (see abt_block512).
    const bool prefetch = m0 == 0;
    for (int k = 0; k < K8; k += 8) {
        if (prefetch && (k & 15) == 0)
            for (int j = 0; j < J && n + 12 + j < n_next; ++j)
                _mm_prefetch(
                    reinterpret_cast<const char*>(w[j] + 12 * static_cast<int64_t>(ldb) + k),
                    _MM_HINT_T0);
        __m256 wv[J];
        for (int j = 0; j < J; ++j) wv[j] = _mm256_loadu_ps(w[j] + k);
        for (int i = 0; i < MB; ++i) {
            const __m256 xv = _mm256_loadu_ps(x[i] + k);
            for (int j = 0; j < J; ++j) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    for (int i = 0; i < MB; ++i)
        for (int j = 0; j < J; ++j) {
            float& c = C[static_cast<int64_t>(m0 + i) * ldc + n + j];
            const float v = hsum8(acc[i][j]) + dot_tail(x[i], w[j], K8, K);
            c = alpha * v + (beta == 0.0f ? 0.0f : beta * c);
        }
}

// The same blocks with AVX-512 where the CPU has it (chosen at run time; the build's baseline
// stays x86-64-v3): a zmm register holds two rows of B side by side ([B_j chunk | B_j+1 chunk])
// against a row chunk of A broadcast to both halves, so each 8-float half is exactly the
// 8-lane accumulator of the AVX2 kernel (same FMAs, same order) and the halves are reduced by
// the same hsum8: results are bit-identical to the AVX2 path, with half the FMA instructions
// and 32 registers (MB x 4 pairs = 8 rows of B per block).
#if defined(__GNUC__)
#define NZ_BLAS_AVX512 1
// GCC 12's AVX-512 intrinsic headers initialise their "undefined" vectors from themselves,
// which -Wmaybe-uninitialized reports once inlined: a false positive.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <int MB>
__attribute__((target("avx512f,avx512dq"))) void abt_block512(int m0, int n, int n_next, int K,
                                                              float alpha, const float* A, int lda,
                                                              const float* B, int ldb, float beta,
                                                              float* C, int ldc) {
    constexpr int P = 4;
    const int K8 = K & ~7;
    __m512 acc[MB][P];
    for (int i = 0; i < MB; ++i)
        for (int p = 0; p < P; ++p) acc[i][p] = _mm512_setzero_ps();
    const float* x[MB];
    const float* w[2 * P];
    for (int i = 0; i < MB; ++i) x[i] = A + static_cast<int64_t>(m0 + i) * lda;
    for (int j = 0; j < 2 * P; ++j) w[j] = B + static_cast<int64_t>(n + j) * ldb;
    // The next panel of B (rows n + 8 .. n + 15, the same K) is prefetched while this one is
    // used, one cache line per row every other k-step: eight short row streams restart every
    // panel, too short for the hardware prefetcher to catch when B (the 16 MB generator) has
    // been pushed out of L3 by the rest of the step. Prefetches change no arithmetic.
    const bool prefetch = m0 == 0 && n_next > n;
    for (int k = 0; k < K8; k += 8) {
        if (prefetch && (k & 15) == 0)
            for (int j = 0; j < 2 * P && n + 2 * P + j < n_next; ++j)
                _mm_prefetch(
                    reinterpret_cast<const char*>(w[j] + static_cast<int64_t>(2 * P) * ldb + k),
                    _MM_HINT_T0);
        __m512 wv[P];
        for (int p = 0; p < P; ++p)
            wv[p] = _mm512_insertf32x8(_mm512_zextps256_ps512(_mm256_loadu_ps(w[2 * p] + k)),
                                       _mm256_loadu_ps(w[2 * p + 1] + k), 1);
        for (int i = 0; i < MB; ++i) {
            const __m512 xv = _mm512_broadcast_f32x8(_mm256_loadu_ps(x[i] + k));
            for (int p = 0; p < P; ++p) acc[i][p] = _mm512_fmadd_ps(xv, wv[p], acc[i][p]);
        }
    }
    for (int i = 0; i < MB; ++i)
        for (int p = 0; p < P; ++p)
            for (int h = 0; h < 2; ++h) {
                const int j = 2 * p + h;
                const __m256 half = h == 0 ? _mm512_castps512_ps256(acc[i][p])
                                           : _mm512_extractf32x8_ps(acc[i][p], 1);
                float& c = C[static_cast<int64_t>(m0 + i) * ldc + n + j];
                const float v = hsum8(half) + dot_tail(x[i], w[j], K8, K);
                c = alpha * v + (beta == 0.0f ? 0.0f : beta * c);
            }
}

#pragma GCC diagnostic pop

// AVX-512F and DQ present (CPUID and OS state), unless NAZAR_SMALL_GEMM=avx2 (for comparison).
bool cpu_has_avx512() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
}
std::atomic<bool> g_small_avx512{[] {
    const char* e = std::getenv("NAZAR_SMALL_GEMM");
    return !(e && std::strcmp(e, "avx2") == 0) && cpu_has_avx512();
}()};
#endif  // __GNUC__
#endif  // NZ_BLAS_AVX2

// rows [n0, n1) of C (M x N, ldc) = alpha A (M x K, lda) Bᵀ (B: N x K, ldb) + beta C
void small_m_abt(int M, int n0, int n1, int K, float alpha, const float* A, int lda, const float* B,
                 int ldb, float beta, float* C, int ldc) {
    int n = n0;
#ifdef NZ_BLAS_AVX2
    // (MB, J) blocks, MB·J + J + 1 <= 16 ymm registers: M = 1: 1x4, 2: 2x4, 3: 3x3, 4: 4x3,
    // 5: 5x2 (beam 5 at batch 1), 6 = 3+3, 7 = 4+3, 8 = 4+4. n advances by 12 (a multiple of
    // every J), so each group of 12 rows of B is read from memory once and from L1 after.
    const auto block = [&](int m0, int mb, int nn) {
        switch (mb) {
            case 1:
                abt_block<1, 4>(m0, nn, n1, K, alpha, A, lda, B, ldb, beta, C, ldc);
                return 4;
            case 2:
                abt_block<2, 4>(m0, nn, n1, K, alpha, A, lda, B, ldb, beta, C, ldc);
                return 4;
            case 3:
                abt_block<3, 3>(m0, nn, n1, K, alpha, A, lda, B, ldb, beta, C, ldc);
                return 3;
            case 4:
                abt_block<4, 3>(m0, nn, n1, K, alpha, A, lda, B, ldb, beta, C, ldc);
                return 3;
            default:
                abt_block<5, 2>(m0, nn, n1, K, alpha, A, lda, B, ldb, beta, C, ldc);
                return 2;
        }
    };
    int mbs[2] = {M, 0};
    if (M == 6) mbs[0] = 3, mbs[1] = 3;
    if (M == 7) mbs[0] = 4, mbs[1] = 3;
    if (M == 8) mbs[0] = 4, mbs[1] = 4;
#ifdef NZ_BLAS_AVX512
    if (g_small_avx512.load(std::memory_order_relaxed))
        for (; n + 8 <= n1; n += 8)
            for (int i = 0, m0 = 0; i < 2 && mbs[i] > 0; m0 += mbs[i], ++i) switch (mbs[i]) {
                    case 1:
                        abt_block512<1>(m0, n, n1, K, alpha, A, lda, B, ldb, beta, C, ldc);
                        break;
                    case 2:
                        abt_block512<2>(m0, n, n1, K, alpha, A, lda, B, ldb, beta, C, ldc);
                        break;
                    case 3:
                        abt_block512<3>(m0, n, n1, K, alpha, A, lda, B, ldb, beta, C, ldc);
                        break;
                    case 4:
                        abt_block512<4>(m0, n, n1, K, alpha, A, lda, B, ldb, beta, C, ldc);
                        break;
                    default:
                        abt_block512<5>(m0, n, n1, K, alpha, A, lda, B, ldb, beta, C, ldc);
                        break;
                }
#endif
    for (; n + 12 <= n1; n += 12)
        for (int i = 0, m0 = 0; i < 2 && mbs[i] > 0; m0 += mbs[i], ++i)
            for (int nn = n; nn < n + 12;) nn += block(m0, mbs[i], nn);
    // The rest: the vector loop on the rows the former 4-row loop covered, scalar after (as
    // before).
    const int n4 = n0 + ((n1 - n0) & ~3);
    for (; n < n4; ++n)
        for (int m = 0; m < M; ++m) {
            const float* x = A + static_cast<int64_t>(m) * lda;
            const float* w = B + static_cast<int64_t>(n) * ldb;
            const int K8 = K & ~7;
            __m256 acc = _mm256_setzero_ps();
            for (int k = 0; k < K8; k += 8)
                acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(w + k), acc);
            float& c = C[static_cast<int64_t>(m) * ldc + n];
            c = alpha * (hsum8(acc) + dot_tail(x, w, K8, K)) + (beta == 0.0f ? 0.0f : beta * c);
        }
#endif
    for (; n < n1; ++n)
        for (int m = 0; m < M; ++m) {
            float& c = C[static_cast<int64_t>(m) * ldc + n];
            const float v = dot_tail(A + static_cast<int64_t>(m) * lda,
                                     B + static_cast<int64_t>(n) * ldb, 0, K);
            c = alpha * v + (beta == 0.0f ? 0.0f : beta * c);
        }
}
}  // namespace

bool set_small_gemm_avx512(bool on) {
#ifdef NZ_BLAS_AVX512
    g_small_avx512.store(on && cpu_has_avx512());
    return g_small_avx512.load();
#else
    (void)on;
    return false;
#endif
}

bool small_gemm_avx512() {
#ifdef NZ_BLAS_AVX512
    return g_small_avx512.load();
#else
    return false;
#endif
}

void set_gemm_threading(GemmThreading t) {
    g_threading.store(t);
    blas_set_num_threads(g_blas_threads.load());
}

GemmThreading gemm_threading() {
    return g_threading.load();
}

namespace {
void check_matrix(const char* what, TensorView v) {
    NZ_CHECK(v.ndim() == 2, "gemm: {} must be 2-D, got {}", what, v.shape().str());
}
}  // namespace

void gemm(TensorView a, bool ta, TensorView b, bool tb, TensorView c, float alpha, float beta) {
    check_matrix("A", a);
    check_matrix("B", b);
    check_matrix("C", c);
    const int M = ta ? a.dim(1) : a.dim(0), K = ta ? a.dim(0) : a.dim(1);
    const int Kb = tb ? b.dim(1) : b.dim(0), N = tb ? b.dim(0) : b.dim(1);
    NZ_CHECK(K == Kb && c.dim(0) == M && c.dim(1) == N,
             "gemm: op(A) {}x{} times op(B) {}x{} into C {} (A {}{}, B {}{})", M, K, Kb, N,
             c.shape().str(), a.shape().str(), ta ? "ᵀ" : "", b.shape().str(), tb ? "ᵀ" : "");
    gemm_raw(ta, tb, M, N, K, alpha, a.data(), a.dim(1), b.data(), b.dim(1), beta, c.data(),
             c.dim(1));
}

void gemm_batched(TensorView a, bool ta, TensorView b, bool tb, TensorView c, float alpha,
                  float beta) {
    NZ_CHECK(a.ndim() == 3 && b.ndim() == 3 && c.ndim() == 3,
             "gemm_batched: 3-D views expected, got {} {} {}", a.shape().str(), b.shape().str(),
             c.shape().str());
    const int n = a.dim(0);
    NZ_CHECK(b.dim(0) == n && c.dim(0) == n, "gemm_batched: batch sizes {} {} {}", n, b.dim(0),
             c.dim(0));
    for (int i = 0; i < n; ++i) gemm(a.select(i), ta, b.select(i), tb, c.select(i), alpha, beta);
}

void gemm_naive(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc) {
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double acc = 0;
            for (int k = 0; k < K; ++k) {
                const float av = ta ? A[k * lda + i] : A[i * lda + k];
                const float bv = tb ? B[j * ldb + k] : B[k * ldb + j];
                acc += static_cast<double>(av) * bv;
            }
            float& cv = C[i * ldc + j];
            cv = static_cast<float>(alpha * acc +
                                    (beta == 0.0f ? 0.0 : static_cast<double>(beta) * cv));
        }
}

namespace {
void gemm_dispatch(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                   const float* B, int ldb, float beta, float* C, int ldc);

// cols(c0, c1) for columns [c0, c1) of an M x N x K product on nazar's NN kernel: all of them
// on this thread below kSplitFlops (or with one thread), else 32-column strips over the pool.
template <class F>
void by_strips(int M, int N, int K, F&& cols) {
    if (num_threads() < 2 || 2.0 * M * N * K < kSplitFlops) {
        cols(0, N);
        return;
    }
    parallel_for((N + 31) / 32, 1, [&](int64_t u0, int64_t u1) {
        cols(static_cast<int>(u0) * 32, std::min(N, static_cast<int>(u1) * 32));
    });
}

// NAZAR_GEMM_PROFILE=1: every gemm_raw call is timed and tallied by (transposes, M, N, K); at
// exit the 40 shapes that took longest are printed to stderr with calls, time, share and
// GFLOP/s (docs/performance.md). Off (the default) it costs one test of a pointer per call.
class GemmProfile {
public:
    void add(bool ta, bool tb, int M, int N, int K, double seconds, bool packed = false) {
        std::lock_guard lk(m_);
        auto& e = t_[{ta, tb, M, N, K, packed}];
        ++e.calls;
        e.seconds += seconds;
    }
    ~GemmProfile() {
        std::lock_guard lk(m_);
        double total = 0;
        std::vector<std::pair<double, std::string>> rows;
        for (const auto& [k, e] : t_) total += e.seconds;
        for (const auto& [k, e] : t_) {
            const auto& [ta, tb, M, N, K, packed] = k;
            rows.emplace_back(
                e.seconds,
                fmt::format("{:9.1f} ms {:5.1f}% {:8} calls  {}{} M {:5} N {:5} K {:5} {:7.1f} "
                            "GFLOP/s{}",
                            1e3 * e.seconds, total > 0 ? 100 * e.seconds / total : 0.0, e.calls,
                            ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K,
                            e.seconds > 0
                                ? 2e-9 * M * N * K * static_cast<double>(e.calls) / e.seconds
                                : 0.0,
                            packed ? "  (x Wᵀ through the packed per-batch Wᵀ)" : ""));
        }
        std::sort(rows.rbegin(), rows.rend());
        std::fprintf(stderr, "gemm profile: %.1f ms in %zu shapes\n", 1e3 * total, rows.size());
        for (std::size_t i = 0; i < rows.size() && i < 40; ++i)
            std::fprintf(stderr, "%s\n", rows[i].second.c_str());
    }

private:
    struct Entry {
        int64_t calls = 0;
        double seconds = 0;
    };
    std::mutex m_;
    std::map<std::tuple<bool, bool, int, int, int, bool>, Entry> t_;
};
std::unique_ptr<GemmProfile> g_profile{[]() -> GemmProfile* {
    const char* e = std::getenv("NAZAR_GEMM_PROFILE");
    return e && std::strcmp(e, "1") == 0 ? new GemmProfile : nullptr;
}()};
}  // namespace

void gemm_raw(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
              const float* B, int ldb, float beta, float* C, int ldc) {
    if (!g_profile) {
        gemm_dispatch(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    gemm_dispatch(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    g_profile->add(ta, tb, M, N, K,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

namespace {
void gemm_dispatch(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                   const float* B, int ldb, float beta, float* C, int ldc) {
    if (M == 0 || N == 0) return;
    if (K == 0) {  // C = beta C; BLAS would do this too, but some builds read A/B anyway
        for (int i = 0; i < M; ++i)
            for (int j = 0; j < N; ++j)
                C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
        return;
    }
#if NAZAR_BLAS_OPENBLAS
    const auto one = [&](int m0, int m1, int n0, int n1) {
        const float* a = ta ? A + m0 : A + static_cast<int64_t>(m0) * lda;
        const float* b = tb ? B + static_cast<int64_t>(n0) * ldb : B + n0;
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    m1 - m0, n1 - n0, K, alpha, a, lda, b, ldb, beta,
                    C + static_cast<int64_t>(m0) * ldc + n0, ldc);
    };
    const int threads = num_threads();
    if (!ta && tb && M <= kSmallM) {
        if (threads < 2 || 2.0 * M * N * K < kSplitFlops) {
            small_m_abt(M, 0, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
            return;
        }
        parallel_for((N + kBlock - 1) / kBlock, 1, [&](int64_t u0, int64_t u1) {
            small_m_abt(M, static_cast<int>(u0) * kBlock,
                        std::min(N, static_cast<int>(u1) * kBlock), K, alpha, A, lda, B, ldb, beta,
                        C, ldc);
        });
        return;
    }
    // NN products of up to kNn512Rows rows: our kernel, B read in place (gemm_nn512.h). Above,
    // OpenBLAS's cache blocking of A wins (2240 x 512 x 512: 439 vs 356 GFLOP/s, 2048^3: 451 vs
    // 395); at 256 rows ours does (256 x 512 x 8000: 450 vs 362; 64-row steps 390-440 vs 250-310).
    if (!ta && !tb && M <= kNn512Rows && detail::nn512_available()) {
        by_strips(M, N, K, [&](int c0, int c1) {
            detail::gemm_nn512(M, c0, c1, K, alpha, A, lda, B, ldb, beta, C, ldc);
        });
        return;
    }
    if (g_threading.load(std::memory_order_relaxed) == GemmThreading::blas || threads < 2 ||
        2.0 * M * N * K < kSplitFlops) {
        one(0, M, 0, N);
        return;
    }
    // Cut the longer side into `threads` blocks of whole kBlock units (fixed for a given thread
    // count, so results stay deterministic); each block is an independent single-threaded sgemm.
    const bool by_cols = N >= M;
    const int len = by_cols ? N : M, units = (len + kBlock - 1) / kBlock;
    parallel_for(units, 1, [&](int64_t u0, int64_t u1) {
        const int b0 = static_cast<int>(u0) * kBlock,
                  b1 = std::min(len, static_cast<int>(u1) * kBlock);
        if (by_cols)
            one(0, M, b0, b1);
        else
            one(b0, b1, 0, N);
    });
#else
    gemm_naive(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}

}  // namespace

void gemv_raw(bool ta, int M, int N, float alpha, const float* A, int lda, const float* x,
              float beta, float* y) {
#if NAZAR_BLAS_OPENBLAS
    cblas_sgemv(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, M, N, alpha, A, lda, x, 1, beta, y,
                1);
#else
    // op(A) x as a gemm with one column: y (rows x 1)
    const int rows = ta ? N : M, inner = ta ? M : N;
    gemm_naive(ta, false, rows, 1, inner, alpha, A, lda, x, 1, beta, y, 1);
#endif
}

void refresh_weight_t(WeightT& wt, const float* w, int N, int K, int ldw) {
#if NAZAR_BLAS_OPENBLAS
    const bool used = detail::nn512_available();
#else
    const bool used = false;  // the naive build multiplies with loops either way
#endif
    if (!used || N == 0 || K == 0) {  // nothing would read it
        wt.reset();
        return;
    }
    const int strips = (N + 31) / 32;
    if (!wt || wt.use_count() > 1) wt = std::make_shared<Tensor>(Shape{strips, K, 32});
    wt->resize({strips, K, 32}, false);
    float* t = wt->data();
    // element (k, n) of Wᵀ, i.e. W[n][k], lives at t[(n / 32) · 32 K + 32 k + n % 32]
    const auto at = [&](int k, int n) -> float& {
        return t[static_cast<int64_t>(n / 32) * K * 32 + static_cast<int64_t>(k) * 32 + n % 32];
    };
    // 8 x 8 tiles transposed in registers (AVX2), groups of 8 rows of W over the pool; scalar
    // edges; the padding columns of the last strip are zero.
    const int N8 = N & ~7, K8 = K & ~7;
    parallel_for((N + 7) / 8, 8, [&](int64_t b0, int64_t b1) {
        for (int n0 = static_cast<int>(b0) * 8; n0 < std::min<int64_t>(N, b1 * 8); n0 += 8) {
            const float* src = w + static_cast<int64_t>(n0) * ldw;
            if (n0 < N8) {
#ifdef NZ_BLAS_AVX2
                for (int k0 = 0; k0 < K8; k0 += 8) transpose8x8(src + k0, ldw, &at(k0, n0), 32);
#else
                for (int k0 = 0; k0 < K8; ++k0)
                    for (int i = 0; i < 8; ++i) at(k0, n0 + i) = src[int64_t{i} * ldw + k0];
#endif
                for (int k = K8; k < K; ++k)
                    for (int i = 0; i < 8; ++i) at(k, n0 + i) = src[int64_t{i} * ldw + k];
            } else {
                for (int n = n0; n < N; ++n)
                    for (int k = 0; k < K; ++k) at(k, n) = w[static_cast<int64_t>(n) * ldw + k];
            }
        }
    });
    if (N % 32 != 0)
        for (int k = 0; k < K; ++k)
            for (int n = N; n < strips * 32; ++n) at(k, n) = 0.0f;
}

void refresh_weight_t(WeightT& wt, TensorView w) {
    check_matrix("W", w);
    refresh_weight_t(wt, w.data(), w.dim(0), w.dim(1), w.dim(1));
}

void gemm_xwt(int M, int N, int K, float alpha, const float* A, int lda, const float* W, int ldw,
              WeightTRows wt, float beta, float* C, int ldc) {
    if (!wt || M <= kSmallM || M > kNn512Rows || !detail::nn512_available()) {
        gemm_raw(false, true, M, N, K, alpha, A, lda, W, ldw, beta, C, ldc);
        return;
    }
    const auto t0 =
        g_profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    by_strips(M, N, K, [&](int c0, int c1) {
        detail::gemm_nn512_packed(M, c0, c1, K, alpha, A, lda, wt.data, wt.strip_stride, beta, C,
                                  ldc);
    });
    if (g_profile)
        g_profile->add(false, true, M, N, K,
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                       true);
}

std::string blas_description() {
#if NAZAR_BLAS_OPENBLAS
    return fmt::format(
        "OpenBLAS {} [{}], {} thread(s){}{}", openblas_get_config(), openblas_get_corename(),
        openblas_get_num_threads(),
        g_threading.load() == GemmThreading::pool ? ", large products split over nazar's pool" : "",
        detail::nn512_available() ? ", NN products on nazar's AVX-512 kernel" : "");
#else
    return "naive loops (NAZAR_BLAS=Naive)";
#endif
}

void blas_set_num_threads(int n) {
    g_blas_threads.store(n);
#if NAZAR_BLAS_OPENBLAS
    openblas_set_num_threads(g_threading.load() == GemmThreading::pool ? 1 : n);
#else
    (void)n;
#endif
}

}  // namespace nazar
