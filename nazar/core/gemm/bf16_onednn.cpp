// oneDNN's bf16 matmul primitive behind gemm_bf16_on(Bf16Kernel::onednn, ...): the comparison
// for nazar's own AVX512-BF16 kernel (docs/performance.md, "bf16 products"). oneDNN 2.6 exports
// no bf16 gemm function, so this is the matmul primitive: src op(A) and weights op(B) as bf16
// with strides (a transpose is a stride), dst fp32, alpha as the output scale and beta as a sum
// post-op. Primitives are made once per (shape, strides, alpha, beta) and kept; the fp32 inputs
// are converted to bf16 on every call (the cost a caller with fp32 data pays). It runs on one
// OpenMP team of nazar's thread count.
#include "nazar/core/check.h"
#include "nazar/core/gemm/bf16_internal.h"
#include "nazar/core/threads.h"

#if NAZAR_BLAS_ONEDNN
#include "nazar/core/gemm/onednn_api.h"

#include <omp.h>

#include <map>
#include <mutex>
#include <tuple>

namespace nazar::bf16_detail {

namespace {

using gemm_detail::onednn;

void ok(dnnl_status_t st, const char* what) {
    NZ_CHECK(st == dnnl_success, "oneDNN bf16 matmul: {} failed (status {})", what,
             static_cast<int>(st));
}

struct Matmul {
    dnnl_primitive_t prim = nullptr;
    dnnl_memory_desc_t a, b, c;
};

dnnl_engine_t engine() {
    static dnnl_engine_t e = [] {
        dnnl_engine_t x = nullptr;
        ok(onednn().dnnl_engine_create(&x, dnnl_cpu, 0), "engine");
        return x;
    }();
    return e;
}

dnnl_memory_desc_t desc(int rows, int cols, bool trans, int ld, dnnl_data_type_t t) {
    dnnl_memory_desc_t d;
    const dnnl_dims_t dims = {rows, cols};
    const dnnl_dims_t strides = {trans ? 1 : ld, trans ? ld : 1};
    ok(onednn().dnnl_memory_desc_init_by_strides(&d, 2, dims, t, strides), "memory desc");
    return d;
}

Matmul make(bool ta, bool tb, int M, int N, int K, float alpha, float beta, int lda, int ldb,
            int ldc) {
    Matmul m;
    m.a = desc(M, K, ta, lda, dnnl_bf16);
    m.b = desc(K, N, tb, ldb, dnnl_bf16);
    m.c = desc(M, N, false, ldc, dnnl_f32);
    dnnl_matmul_desc_t md;
    ok(onednn().dnnl_matmul_desc_init(&md, &m.a, &m.b, nullptr, &m.c), "matmul desc");
    dnnl_primitive_attr_t attr = nullptr;
    ok(onednn().dnnl_primitive_attr_create(&attr), "attr");
    ok(onednn().dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha), "output scales");
    dnnl_post_ops_t po = nullptr;
    if (beta != 0.0f) {
        ok(onednn().dnnl_post_ops_create(&po), "post-ops");
        ok(onednn().dnnl_post_ops_append_sum(po, beta), "sum post-op");
        ok(onednn().dnnl_primitive_attr_set_post_ops(attr, po), "set post-ops");
    }
    dnnl_primitive_desc_t pd = nullptr;
    ok(onednn().dnnl_primitive_desc_create(&pd, &md, attr, engine(), nullptr), "primitive desc");
    ok(onednn().dnnl_primitive_create(&m.prim, pd), "primitive");
    onednn().dnnl_primitive_desc_destroy(pd);
    if (po) onednn().dnnl_post_ops_destroy(po);
    onednn().dnnl_primitive_attr_destroy(attr);
    return m;
}

const Matmul& cached(bool ta, bool tb, int M, int N, int K, float alpha, float beta, int lda,
                     int ldb, int ldc) {
    using Key = std::tuple<bool, bool, int, int, int, float, float, int, int, int>;
    static std::mutex mu;
    // Never destroyed: the primitives live as long as the process (a static map would drop its
    // handles at exit, which LeakSanitizer reports as leaks).
    static auto& cache = *new std::map<Key, Matmul>;
    std::lock_guard lk(mu);
    const Key k{ta, tb, M, N, K, alpha, beta, lda, ldb, ldc};
    auto it = cache.find(k);
    if (it == cache.end())
        it = cache.emplace(k, make(ta, tb, M, N, K, alpha, beta, lda, ldb, ldc)).first;
    return it->second;
}

}  // namespace

bool onednn_bf16_built() {
    return true;
}

void gemm_onednn_bf16(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                      const float* B, int ldb, float beta, float* C, int ldc) {
    // op(A) as stored (rows x cols of A itself), made contiguous
    const int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
    std::vector<uint16_t> a16(static_cast<size_t>(ar) * ac), b16(static_cast<size_t>(br) * bc);
    round_matrix(A, ar, ac, lda, a16.data());
    round_matrix(B, br, bc, ldb, b16.data());
    const Matmul& m = cached(ta, tb, M, N, K, alpha, beta, ac, bc, ldc);
    dnnl_memory_t ma = nullptr, mb = nullptr, mc = nullptr;
    ok(onednn().dnnl_memory_create(&ma, &m.a, engine(), a16.data()), "memory A");
    ok(onednn().dnnl_memory_create(&mb, &m.b, engine(), b16.data()), "memory B");
    ok(onednn().dnnl_memory_create(&mc, &m.c, engine(), C), "memory C");
    dnnl_stream_t stream = nullptr;
    ok(onednn().dnnl_stream_create(&stream, engine(), dnnl_stream_default_flags), "stream");
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
    const int before = omp_get_max_threads();
    omp_set_num_threads(num_threads());
    const dnnl_status_t st = onednn().dnnl_primitive_execute(m.prim, stream, 3, args);
    onednn().dnnl_stream_wait(stream);
    omp_set_num_threads(before);
    onednn().dnnl_stream_destroy(stream);
    onednn().dnnl_memory_destroy(ma);
    onednn().dnnl_memory_destroy(mb);
    onednn().dnnl_memory_destroy(mc);
    ok(st, "execute");
}

}  // namespace nazar::bf16_detail

#else

namespace nazar::bf16_detail {

bool onednn_bf16_built() {
    return false;
}

void gemm_onednn_bf16(bool, bool, int, int, int, float, const float*, int, const float*, int, float,
                      float*, int) {
    NZ_FAIL("gemm_bf16: this build has no oneDNN (NAZAR_BLAS=oneDNN) for the bf16 matmul");
}

}  // namespace nazar::bf16_detail

#endif
