// Embedding lookup, PyTorch's nn.Embedding layout:   out[n, :] = weight[ids[n], :]
//
//   weight (V, E). Init as PyTorch: N(0, 1); the padding_idx row (if any) is zero and never
//   receives a gradient (PyTorch's padding_idx semantics).
// Sparse gradients: backward adds d_out rows into grad.weight and records the rows it touched
// in touched_rows() (sorted, unique), so zeroing, clipping and optimizers can visit only those
// rows. The list is a superset of the rows with a nonzero gradient; zero_grad() zeroes exactly
// those rows and clears the list. (Zeroing the whole grad.weight, e.g. with zero_grads() of
// params.h, is also correct: the list then merely over-approximates until the next zero_grad.)
//
// Gradients: backward ACCUMULATES (+=) into `grad`.
//
// Reduced precision (a model set to bf16 / int8: models/precision.cpp): set_packed() gives the
// table in packed form (core/gemm/packed.h: int8 rows with per-row scales, or bf16), and the
// lookup then dequantizes just the rows it reads, out[n, k] = q[ids[n], k] · s[ids[n]] (int8) —
// equal to PackedMatrix::dequantize_row — so an inference model needs no fp32 table at all
// (params.weight stays a placeholder). backward refuses while a packed table is set.
#pragma once

#include "nazar/core/params.h"
#include "nazar/core/rng.h"
#include "nazar/core/tensor.h"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace nazar {

class PackedMatrix;  // core/gemm/packed.h (internal: not installed)

struct EmbeddingParams {
    Tensor weight{Shape{0}};  // (V, E)

    template <class F>
    void visit(F&& f) {
        f("weight", weight);
    }
};

class Embedding {
public:
    struct Config {
        int num_embeddings = 0;  // V
        int embedding_dim = 0;   // E
        int padding_idx = -1;    // -1: none; else this row is zero and gets no gradient
    };

    Embedding() = default;
    // weight ~ N(0, 1), padding row zeroed; inference: core/params.h
    Embedding(Config cfg, Rng& rng, ParamMode mode = ParamMode::training);

    // out[n] = weight[ids[n]]. An id outside [0, V) is an error naming the id, its position and V.
    void forward(std::span<const int32_t> ids,  // (N)   e.g. a (B, T) batch flattened row-major
                 TensorView out) const;         // (N, E) or (..., E) with N rows; overwritten

    // grad.weight[ids[n]] += d_out[n] for every n (ids == padding_idx skipped); records the rows.
    void backward(ConstTensorView d_out,          // (N, E) or (..., E)
                  std::span<const int32_t> ids);  // (N)   same ids forward saw

    // Rows of grad.weight written since the last zero_grad(): sorted ascending, unique.
    std::span<const int32_t> touched_rows() const { return touched_; }
    // Zeroes the touched rows of grad.weight and clears the list.
    void zero_grad();

    // The table the lookups read in reduced precision (V x E, packed.h), or null: fp32 rows of
    // params.weight. The owner (Seq2Seq::set_packed) keeps it registered for the model's life.
    void set_packed(std::shared_ptr<const PackedMatrix> table);
    const PackedMatrix* packed() const { return packed_.get(); }

    Config cfg;
    EmbeddingParams params;
    EmbeddingParams grad;  // (V, E), zero after construction

private:
    std::shared_ptr<const PackedMatrix> packed_;  // null: fp32 lookups
    std::vector<int32_t> touched_;                // sorted unique row ids
    std::vector<int32_t> scratch_;  // merge buffer (reused; no allocation after warm-up)
};

}  // namespace nazar
