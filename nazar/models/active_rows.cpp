// Training's active rows (seq2seq.h plan_active_rows): each decoder step runs only on the rows
// whose sentence still has targets, a prefix of the batch.
#include "nazar/models/train_pass.h"

#include <algorithm>
#include <span>
#include <vector>

namespace nazar {

bool TrainPass::can_skip_rows(const TrainOptions& opt) const {
    // coverage, monotonic: each step reads the whole batch's state of the step before
    return m_.decoder.L == 1 && !m_.attention.cfg.coverage && !m_.attention.cfg.monotonic &&
           !cfg_.copy_attention && opt.guided_alignment_weight == 0.0f;
}

void TrainPass::plan_active_rows(const Batch& batch, bool skip) {
    const int B = batch.B, T = batch.T, pad = cfg_.special_ids.pad;
    active_.assign(static_cast<std::size_t>(T), B);
    skipped_ = false;
    if (!skip) return;
    row_end_.assign(static_cast<std::size_t>(B), 0);
    for (int b = 0; b < B; ++b)
        for (int t = T - 1; t >= 0; --t)
            if (batch.tgt_out_at(b, t) != pad) {
                row_end_[static_cast<std::size_t>(b)] = t + 1;
                break;
            }
    // n_t = 1 + the last row still running at t: nonincreasing in t, so step t's rows hold the
    // next step's and its states s_t (rows [0, n_{t-1})) cover its input rows.
    for (int t = 0; t < T; ++t) {
        int n = 1;
        for (int b = 0; b < B; ++b)
            if (row_end_[static_cast<std::size_t>(b)] > t) n = b + 1;
        active_[static_cast<std::size_t>(t)] = n;
        skipped_ = skipped_ || n < B;
    }
}

void TrainPass::clear_inactive(int t) {
    const int n = active_[static_cast<std::size_t>(t)], B = h_all_.dim(2);
    if (n == B) return;
    h_all_.select(t + 1).select(0).slice(n, B).zero();  // one layer (can_skip_rows)
    if (c_all_.numel() > 0) c_all_.select(t + 1).select(0).slice(n, B).zero();
    out_.select(t).slice(n, B).zero();
}

}  // namespace nazar

namespace nazar {

namespace {

// out[i] = in[order[i]] for rows of `width` elements.
template <class T>
void gather_rows(const std::vector<T>& in, std::span<const int> order, std::size_t width,
                 std::vector<T>& out) {
    out.resize(in.size());
    if (in.empty()) return;
    for (std::size_t i = 0; i < order.size(); ++i)
        std::copy_n(in.begin() + static_cast<std::ptrdiff_t>(order[i] * width), width,
                    out.begin() + static_cast<std::ptrdiff_t>(i * width));
}

// A dropout mask's rows reordered: axis 0 (B, ·) or axis 1 (T, B, ·); empty stays empty.
void reorder_mask(const Tensor& in, std::span<const int> order, int axis, Tensor& out) {
    if (in.ndim() == 0 || in.numel() == 0) {
        out.resize({0});
        return;
    }
    out.resize(in.shape(), false);
    const int outer = axis == 0 ? 1 : in.dim(0);
    for (int o = 0; o < outer; ++o) {
        const ConstTensorView src = axis == 0 ? in.view() : in.select(o);
        const TensorView dst = axis == 0 ? out.view() : out.select(o);
        for (std::size_t i = 0; i < order.size(); ++i)
            dst.select(static_cast<int64_t>(i)).copy_from(src.select(order[i]));
    }
}

}  // namespace

const Batch& TrainPass::sort_rows(const Batch& given, const TrainOptions& opt,
                                  const DropoutMasks*& masks) {
    const bool encoder_draws = cfg_.encoder.num_layers > 1 && cfg_.encoder.dropout > 0.0f;
    if (!can_skip_rows(opt) || opt.sampling_prob > 0.0f || encoder_draws) return given;
    const int B = given.B, S = given.S, T = given.T, pad = cfg_.special_ids.pad;
    // an inconsistent batch stays as given: forward_batch reports it
    const auto sized = [&](std::size_t n, int64_t width, bool optional) {
        return (optional && n == 0) || static_cast<int64_t>(n) == int64_t{B} * width;
    };
    if (B <= 1 || !sized(given.src.size(), S, false) || !sized(given.tgt_in.size(), T, false) ||
        !sized(given.tgt_out.size(), T, false) || !sized(given.src_lengths.size(), 1, false) ||
        !sized(given.tgt_lengths.size(), 1, true) || !sized(given.index.size(), 1, true) ||
        !sized(given.src_copy.size(), S, true) || !sized(given.tgt_copy.size(), T, true))
        return given;
    row_end_.assign(static_cast<std::size_t>(B), 0);
    for (int b = 0; b < B; ++b)
        for (int t = T - 1; t >= 0 && row_end_[static_cast<std::size_t>(b)] == 0; --t)
            if (given.tgt_out_at(b, t) != pad) row_end_[static_cast<std::size_t>(b)] = t + 1;
    order_.resize(static_cast<std::size_t>(B));
    for (int b = 0; b < B; ++b) order_[static_cast<std::size_t>(b)] = b;
    std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) {
        return row_end_[static_cast<std::size_t>(a)] > row_end_[static_cast<std::size_t>(b)];
    });
    bool identity = true;
    for (int b = 0; b < B; ++b) identity = identity && order_[static_cast<std::size_t>(b)] == b;
    if (identity) return given;
    const std::span<const int> order(order_);
    sorted_.B = B;
    sorted_.S = S;
    sorted_.T = T;
    gather_rows(given.src, order, static_cast<std::size_t>(S), sorted_.src);
    gather_rows(given.src_lengths, order, 1, sorted_.src_lengths);
    gather_rows(given.tgt_in, order, static_cast<std::size_t>(T), sorted_.tgt_in);
    gather_rows(given.tgt_out, order, static_cast<std::size_t>(T), sorted_.tgt_out);
    gather_rows(given.tgt_lengths, order, 1, sorted_.tgt_lengths);
    gather_rows(given.index, order, 1, sorted_.index);
    gather_rows(given.src_copy, order, static_cast<std::size_t>(S), sorted_.src_copy);
    gather_rows(given.tgt_copy, order, static_cast<std::size_t>(T), sorted_.tgt_copy);
    if (masks != nullptr) {
        reorder_mask(masks->src_emb, order, 0, sorted_masks_.src_emb);
        reorder_mask(masks->enc_out, order, 0, sorted_masks_.enc_out);
        reorder_mask(masks->tgt_emb, order, 1, sorted_masks_.tgt_emb);
        reorder_mask(masks->dec_out, order, 1, sorted_masks_.dec_out);
        reorder_mask(masks->attention, order, 1, sorted_masks_.attention);
        masks = &sorted_masks_;
    }
    return sorted_;
}

}  // namespace nazar
