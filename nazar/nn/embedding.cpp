// Embedding lookup with sparse (touched-row) gradients (see embedding.h).
#include "nazar/nn/embedding.h"

#include "nazar/core/gemm/packed.h"

#include <algorithm>
#include <cstring>

namespace nazar {

Embedding::Embedding(Config c, Rng& rng, ParamMode mode) : cfg(c) {
    NZ_CHECK(cfg.num_embeddings > 0 && cfg.embedding_dim > 0,
             "Embedding: sizes must be positive, got V={} E={}", cfg.num_embeddings,
             cfg.embedding_dim);
    NZ_CHECK(cfg.padding_idx >= -1 && cfg.padding_idx < cfg.num_embeddings,
             "Embedding: padding_idx {} out of range for V={}", cfg.padding_idx,
             cfg.num_embeddings);
    params.weight = make_param({cfg.num_embeddings, cfg.embedding_dim}, mode);
    grad.weight = make_grad({cfg.num_embeddings, cfg.embedding_dim}, mode);
    if (mode != ParamMode::training) return;
    rng.fill_normal(params.weight, 0.0f, 1.0f);
    if (cfg.padding_idx >= 0) params.weight.select(cfg.padding_idx).zero();
}

namespace {

// Row n of a packed table, dequantized into out (m.cols() floats). The layout (packed.h): 16-row
// panels, each a run of 4-byte groups along K (4 int8 or 2 bf16 values per row and group), the
// row's group at byte (n % 16) * 4 of the group's 64. Equal to m.dequantize_row(n, out).
void packed_row(const PackedMatrix& m, int n, float* out) {
    const uint8_t* base = m.panel(n / 16) + (n % 16) * 4;
    const int K = m.cols(), G = m.groups();
    if (m.precision() == Precision::int8) {
        const float s = m.scales()[n];
        for (int g = 0; g < G; ++g) {
            const auto* q = reinterpret_cast<const int8_t*>(base + int64_t{g} * 64);
            for (int j = 0, k = 4 * g; j < 4 && k < K; ++j, ++k)
                out[k] = static_cast<float>(q[j]) * s;
        }
        return;
    }
    for (int g = 0; g < G; ++g) {
        const uint8_t* b = base + int64_t{g} * 64;
        for (int j = 0, k = 2 * g; j < 2 && k < K; ++j, ++k) {
            uint16_t v;
            std::memcpy(&v, b + 2 * j, 2);
            out[k] = bf16_to_float(v);
        }
    }
}

}  // namespace

void Embedding::forward(std::span<const int32_t> ids, TensorView out) const {
    const int V = params.weight.dim(0), E = params.weight.dim(1);
    const int64_t N = static_cast<int64_t>(ids.size());
    NZ_CHECK(out.numel() == N * E && out.shape()[-1] == E,
             "Embedding::forward: out {} for {} ids of size {}", out.shape().str(), N, E);
    const float* w = params.weight.data();
    for (int64_t n = 0; n < N; ++n) {
        const int32_t id = ids[n];
        NZ_CHECK(id >= 0 && id < V, "Embedding::forward: id {} at position {} out of range [0, {})",
                 id, n, V);
        if (packed_)
            packed_row(*packed_, id, out.data() + n * E);
        else
            std::memcpy(out.data() + n * E, w + static_cast<int64_t>(id) * E, sizeof(float) * E);
    }
}

void Embedding::set_packed(std::shared_ptr<const PackedMatrix> table) {
    NZ_CHECK(
        !table || (table->rows() == params.weight.dim(0) && table->cols() == params.weight.dim(1) &&
                   table->precision() != Precision::fp32),
        "Embedding::set_packed: a {} x {} {} table for weight {}", table ? table->rows() : 0,
        table ? table->cols() : 0, table ? precision_name(table->precision()) : "",
        params.weight.shape().str());
    packed_ = std::move(table);
}

void Embedding::backward(ConstTensorView d_out, std::span<const int32_t> ids) {
    NZ_CHECK(!packed_, "Embedding::backward: the table is held in {} for inference",
             precision_name(packed_ ? packed_->precision() : Precision::fp32));
    const int V = params.weight.dim(0), E = params.weight.dim(1);
    const int64_t N = static_cast<int64_t>(ids.size());
    NZ_CHECK(d_out.numel() == N * E && d_out.shape()[-1] == E,
             "Embedding::backward: d_out {} for {} ids of size {}", d_out.shape().str(), N, E);
    NZ_CHECK(grad.weight.dim(0) == V && grad.weight.dim(1) == E,
             "Embedding::backward: grad.weight {} vs ({}, {})", grad.weight.shape().str(), V, E);
    // out[n] = W[ids[n]]   =>   d_W[ids[n]] += d_out[n]   (padding_idx excluded, as PyTorch)
    scratch_.clear();
    float* g = grad.weight.data();
    for (int64_t n = 0; n < N; ++n) {
        const int32_t id = ids[n];
        NZ_CHECK(id >= 0 && id < V,
                 "Embedding::backward: id {} at position {} out of range [0, {})", id, n, V);
        if (id == cfg.padding_idx) continue;
        float* row = g + static_cast<int64_t>(id) * E;
        const float* d = d_out.data() + n * E;
        for (int e = 0; e < E; ++e) row[e] += d[e];
        scratch_.push_back(id);
    }
    // touched_ = sorted unique (touched_ ∪ scratch_)
    std::sort(scratch_.begin(), scratch_.end());
    scratch_.erase(std::unique(scratch_.begin(), scratch_.end()), scratch_.end());
    const std::size_t old = touched_.size();
    touched_.insert(touched_.end(), scratch_.begin(), scratch_.end());
    std::inplace_merge(touched_.begin(), touched_.begin() + static_cast<std::ptrdiff_t>(old),
                       touched_.end());
    touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
}

void Embedding::zero_grad() {
    for (const int32_t r : touched_) grad.weight.select(r).zero();
    touched_.clear();
}

}  // namespace nazar
