// Reduced-precision weights for inference (docs/performance.md, "bf16 and int8 inference").
//
// A PackedMatrix holds a weight matrix W (N x K, PyTorch's (out, in) layout) once, in the layout
// its kernel reads: 16-column panels (16 consecutive rows of W), each a run of 4-byte groups
// along K — 2 bf16 values (bf16) or 4 int8 values (int8) — so the kernel broadcasts one 4-byte
// group of an activation row and multiplies it against 16 outputs at once
// (AVX512-BF16 vdpbf16ps, AVX512-VNNI vpdpbusd), with no horizontal sums.
//
//   bf16: W rounded to bf16 (round to nearest even); activations rounded to bf16 per call;
//         products exact in fp32, accumulated in fp32.
//   int8: W quantized symmetrically per output row, w_q = round(w / s_n), s_n = max_k |w| / 127;
//         activations quantized per call and per row (token) m, a_q = round(a / r_m),
//         r_m = max_k |a| / 127; products accumulated exactly in int32;
//         C = alpha r_m s_n Σ a_q w_q + beta C. (Per row beats per tensor: docs/performance.md.)
//
// gemm_packed computes C = alpha A W[n0:n1, k0:k0+k]ᵀ + beta C for any sub-block of W: the
// column split of the decoder's W_ih ([W_e | W_f]) and row splits over threads use it.
// The fast kernels run where cpu_features() reports AVX512-BF16 / AVX512-VNNI (with AVX-512
// F/BW/VL/DQ) and NAZAR_ISA allows AVX-512; elsewhere a portable path computes the same
// quantities (int8: bit-identical; bf16: the same rounded inputs, another summation order),
// reported once on stderr. Products of at least packed_amx_min_rows(p) rows run on AMX tiles
// where the CPU has them and Linux grants the tile state (int8: the same sums, the same bits).
#pragma once

#include "nazar/core/precision.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nazar {

// bf16 bits of x, rounded to nearest even (NaN stays NaN).
uint16_t float_to_bf16(float x);
inline float bf16_to_float(uint16_t b) {
    const uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
}

class PackedMatrix {
public:
    PackedMatrix();
    ~PackedMatrix();
    PackedMatrix(PackedMatrix&&) noexcept;
    PackedMatrix& operator=(PackedMatrix&&) noexcept;

    // W (N x K, leading dimension ldw) in precision p (bf16 or int8).
    static PackedMatrix pack(const float* w, int N, int K, int ldw, Precision p);
    // From a quantized model file: int8 rows q (N x K) with per-row scales (N).
    static PackedMatrix from_int8(const int8_t* q, const float* scales, int N, int K);
    // From bf16 rows (N x K).
    static PackedMatrix from_bf16(const uint16_t* b, int N, int K);
    // From a quantized model file's rows (N x K, row-major: int8 with per-row scales (N), or bf16
    // with scales null), packed in the memory that holds them: a matrix is never held twice while
    // a model loads. A panel's 16 rows fill the same bytes in both layouts when K fills whole
    // groups (K % 4 == 0 int8, K % 2 == 0 bf16), so each panel is reordered where it lies (through
    // one panel of scratch); the last panel's missing rows are zeros appended, inside the capacity
    // when `rows` has room for ceil(N/16)·16 rows (load_safetensors gives raw matrices that). Other
    // K: copied as from_int8 / from_bf16. The same matrix as those give, byte for byte.
    static PackedMatrix adopt_rows(Precision p, std::string&& rows, const float* scales, int N,
                                   int K);

    // The matrix of rows `rows` of this one (in that order), their values and scales as they
    // are: the same products row for row (an output shortlist's rows).
    PackedMatrix select_rows(std::span<const int32_t> rows) const;

    Precision precision() const { return precision_; }
    int rows() const { return N_; }
    int cols() const { return K_; }
    std::size_t bytes() const;  // memory held

    // Element (n, k) as the kernels see it: the bf16 value, or the int8 value (int8).
    float value(int n, int k) const;
    int8_t q(int n, int k) const;                           // int8 only
    const float* scales() const { return scales_.data(); }  // int8: (N) per-row scales
    uint16_t bf16(int n, int k) const;                      // bf16 only
    // Dequantized row n (K floats): value(n, k) · scale_n (int8), value(n, k) (bf16).
    void dequantize_row(int n, float* out) const;

    // Number of 4-byte groups along K (K padded to 2 bf16 / 4 int8 per group).
    int groups() const { return G_; }
    // Panel p (16 rows of W): groups() x 16 x 4 bytes.
    const uint8_t* panel(int p) const {
        return bytes_data() + static_cast<std::size_t>(p) * G_ * 64;
    }
    // int8: Σ_k w_q(n, k) over the groups [g0, g1) for every row n (the kernel's correction for
    // unsigned activations), made on first use and kept.
    const int32_t* group_sums(int g0, int g1) const;

private:
    Precision precision_ = Precision::fp32;
    int N_ = 0, K_ = 0, G_ = 0;
    std::string data_;  // panels, padded with zeros (bytes; a string so that adopt_rows can take a
                        // file's raw tensor, core/safetensors.h, without copying it)
    std::vector<float> scales_;  // int8
    struct SumCache;
    std::unique_ptr<SumCache> sums_;
    void alloc(Precision p, int N, int K);
    uint8_t* at_byte(int n, int k);
    uint8_t* bytes_data() { return reinterpret_cast<uint8_t*>(data_.data()); }
    const uint8_t* bytes_data() const { return reinterpret_cast<const uint8_t*>(data_.data()); }
};

// C (M x (n1 - n0), ldc) = alpha A (M x k, lda) W[n0:n1, k0:k0 + k]ᵀ + beta C.
void gemm_packed(int M, int n0, int n1, int k0, int k, float alpha, const float* A, int lda,
                 const PackedMatrix& W, float beta, float* C, int ldc);

// The kernel gemm_packed runs for p on this CPU: "avx512-bf16", "avx512-vnni" or "portable".
const char* packed_kernel(Precision p);
// Tests and benchmarks: force the portable path (false) or allow the fast one (true, default).
void set_packed_fast(bool allowed);
// Whether the CPU (and NAZAR_ISA) allows the fast kernel for p.
bool packed_fast_available(Precision p);
// On CPUs with AMX-INT8 / AMX-BF16 (and the tile state granted by Linux), products of at least
// packed_amx_min_rows(p) rows run on AMX tiles instead of AVX512-VNNI / AVX512-BF16: int8 with
// the same results bit for bit, bf16 within the same bounds. The kernel a product of M rows
// runs: "amx-int8", "amx-bf16", or packed_kernel(p).
const char* packed_kernel(Precision p, int M);
int packed_amx_min_rows(Precision p);
bool packed_amx_available(Precision p);
// Tests and benchmarks: allow AMX (true, default) or keep to AVX512-VNNI; returns the previous.
bool set_packed_amx(bool allowed);

// The roofline benchmarks set reduced-precision decoding against (nazar bench decode --json):
// the rate of C (M x N) = A (M x K) Wᵀ with W packed once in p (fp32: gemm_raw on W itself),
// repeated for at least `seconds` on this process's threads: GFLOP/s wall and per CPU-second.
struct PackedRate {
    double gflops = 0, gflops_per_cpu_s = 0;
};
PackedRate measure_packed_rate(Precision p, int M, int N, int K, double seconds);

// ---- packed weights registered for gemm (blas.h) ----
// While a PackedWeights object lives, every product gemm_raw / gemm / gemm_xwt computes as
// A Wᵀ with W (or a sub-block of it) one of its registered fp32 matrices runs on the packed
// copy instead. A loaded model owns one (Seq2Seq::set_precision): layers above gemm do not
// know the precision (DESIGN §7). Registered matrices must not change while registered.
// A matrix registered with fp32_kept = false has no fp32 values behind its address (an
// inference model's Tensor::reserved placeholder, models/precision.cpp): gemm_raw, gemm_xwt and
// gemv_raw refuse (NZ_CHECK) any other product that would read it, e.g. W in A W or Wᵀ A.
class PackedWeights {
public:
    PackedWeights() = default;
    ~PackedWeights();
    PackedWeights(const PackedWeights&) = delete;
    PackedWeights& operator=(const PackedWeights&) = delete;

    // Pack W (N x K, row-major, contiguous) and register it under its address.
    void add(const float* w, int N, int K, Precision p);
    // Register an already packed matrix (a quantized file) under the address of w;
    // fp32_kept false: w is only a placeholder (see above).
    void add(const float* w, PackedMatrix m, bool fp32_kept = true);
    // The matrix registered here under w (exactly), or null.
    std::shared_ptr<const PackedMatrix> get(const float* w) const;
    std::size_t count() const { return entries_.size(); }
    std::size_t bytes() const;
    void clear();

private:
    std::vector<const float*> entries_;
};

namespace gemm_detail {
// The registered matrix holding B (with ldb = its K) and the row/column of B in it, or null.
const PackedMatrix* find_packed(const float* B, int ldb, int* n0, int* k0);
// Fast check: whether anything is registered at all.
bool any_packed();
// C = alpha A Bᵀ + beta C on the packed copy of B when B lies in a registered matrix (true);
// false (nothing done) otherwise. gemm_raw asks first (gemm_xwt hands such a product to it).
bool try_packed(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                float beta, float* C, int ldc);
// NZ_CHECK that neither operand starts inside a matrix registered with fp32_kept = false (a
// product gemm could not run packed would read its placeholder). Cheap when nothing is packed.
void check_fp32_operands(const float* A, const float* B);
}  // namespace gemm_detail

}  // namespace nazar
