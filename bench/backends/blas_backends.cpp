// OpenBLAS vs oneDNN sgemm on the standard model's own GEMM shapes (docs/performance-log.md,
// "Choosing the BLAS backend"). Built only when Debian's libdnnl-dev is installed (it is not a
// dependency of nazar); run it with `make blas-backends`.
//
// Both libraries run single-threaded, as nazar calls its backend: nazar's pool cuts a large
// product into blocks and each pool thread runs one single-threaded sgemm
// (nazar/core/gemm/dispatch.cpp). The rate is GFLOP per CPU-second of the best of three
// repetitions, so a loaded machine changes it little. Each shape's two results are compared (max
// |difference| printed, and a difference above 1e-4·K is an error: exit 1).
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <random>
#include <vector>

namespace {

double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Shape {
    const char* name;
    int M, N, K;
    bool ta, tb;  // C (M x N) = op(A) op(B), row-major
};

// The standard config (V 8000, E 256, bi-GRU 256+256, GRU 512, A 512, B 64, S ~35).
constexpr Shape kShapes[] = {
    {"square 2048 (peak)", 2048, 2048, 2048, false, false},
    {"generator chunk X W^T", 256, 8000, 512, false, true},
    {"generator d_X = d_Z W", 256, 512, 8000, false, false},
    {"generator d_W = d_Z^T X", 8000, 512, 256, true, false},
    {"encoder input, all steps", 2240, 768, 256, false, true},
    {"decoder [e;c] W_ih^T, one step", 64, 1536, 768, false, true},
    {"decoder h W_hh^T, one step", 64, 1536, 512, false, true},
    {"decoder d_W_ih, one step (K = B)", 1536, 768, 64, true, false},
    {"decoder d_W_ih, all steps (K = T*B)", 1536, 768, 2048, true, false},
    {"beam 5, batch 1: generator", 5, 8000, 512, false, true},
    {"beam 5, batch 64: generator", 320, 8000, 512, false, true},
};

}  // namespace

int main() {
    openblas_set_num_threads(1);
    std::printf("# %s; oneDNN %d.%d.%d (OMP_NUM_THREADS=1 expected)\n", openblas_get_corename(),
                dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch);
    std::printf("%-50s %17s %15s %7s %9s\n", "shape (M x N x K)", "OpenBLAS GF/cpu-s",
                "oneDNN GF/cpu-s", "ratio", "max diff");
    std::mt19937 gen(1);
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    int bad = 0;
    for (const Shape& s : kShapes) {
        std::vector<float> a(static_cast<std::size_t>(s.M) * s.K),
            b(static_cast<std::size_t>(s.K) * s.N);
        std::vector<float> c1(static_cast<std::size_t>(s.M) * s.N), c2(c1.size());
        for (float& x : a) x = uni(gen);
        for (float& x : b) x = uni(gen);
        const int lda = s.ta ? s.M : s.K, ldb = s.tb ? s.K : s.N;
        const auto openblas = [&] {
            cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans,
                        s.tb ? CblasTrans : CblasNoTrans, s.M, s.N, s.K, 1.0f, a.data(), lda,
                        b.data(), ldb, 0.0f, c1.data(), s.N);
        };
        const auto onednn = [&] {
            dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.M, s.N, s.K, 1.0f, a.data(), lda,
                       b.data(), ldb, 0.0f, c2.data(), s.N);
        };
        const double flops = 2.0 * s.M * s.N * s.K;
        const int reps = std::max(3, static_cast<int>(3e9 / flops));
        openblas();
        onednn();
        double t_openblas = 1e30, t_onednn = 1e30;
        for (int round = 0; round < 3; ++round) {
            double t0 = cpu_now();
            for (int i = 0; i < reps; ++i) openblas();
            t_openblas = std::min(t_openblas, (cpu_now() - t0) / reps);
            t0 = cpu_now();
            for (int i = 0; i < reps; ++i) onednn();
            t_onednn = std::min(t_onednn, (cpu_now() - t0) / reps);
        }
        double diff = 0;
        for (std::size_t i = 0; i < c1.size(); ++i)
            diff = std::max(diff, std::fabs(double{c1[i]} - c2[i]));
        if (diff > 1e-4 * s.K) ++bad;
        char label[96];
        std::snprintf(label, sizeof label, "%s (%dx%dx%d)", s.name, s.M, s.N, s.K);
        std::printf("%-50s %17.1f %15.1f %6.2fx %9.1e\n", label, flops / t_openblas / 1e9,
                    flops / t_onednn / 1e9, t_openblas / t_onednn, diff);
    }
    if (bad)
        std::fprintf(stderr, "blas_backends: %d shape(s) differ between the two libraries\n", bad);
    return bad ? 1 : 0;
}
