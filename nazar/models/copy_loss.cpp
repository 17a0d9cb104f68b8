// Seq2Seq's copy attention (seq2seq.h, models/copy.h): the mixture's batch loss, scores and
// gradients after forward_batch (a decoder step's: decode_session.cpp).
#include "nazar/core/blas.h"
#include "nazar/core/kernels.h"
#include "nazar/models/train_pass.h"
#include "nazar/nn/softmax_xent.h"

#include <algorithm>
#include <cstring>

namespace nazar {

LossStats TrainPass::copy_loss(const Batch& batch, float scale, bool grads,
                               std::span<double> scores, ConstTensorView gen_in_arg,
                               float label_smoothing) {
    NZ_CHECK(scores.empty() || label_smoothing == 0.0f, "copy_loss: scores are unsmoothed");
    const int B = batch.B, S = batch.S, T = batch.T, V = cfg_.tgt_vocab_size;
    const int C = m_.encoder.output_size(), H = m_.decoder.H, D = m_.decoder.output_size();
    NZ_CHECK(static_cast<int64_t>(batch.src_copy.size()) == int64_t{B} * S &&
                 static_cast<int64_t>(batch.tgt_copy.size()) == int64_t{B} * T,
             "copy attention: the batch has no extended ids (load the corpus with copy_ids)");
    const ConstTensorView gen_in =
        gen_in_arg.ndim() == 0 || gen_in_arg.numel() == 0 ? out_.view() : gen_in_arg;
    copy_alpha_.resize({T, B, S}, false);
    copy_ctx_.resize({T, B, C}, false);
    copy_s_.resize({T, B, H}, false);
    for (int t = 0; t < T; ++t) {
        dense_weights(steps_[t].attention, copy_alpha_.select(t));
        copy_ctx_.select(t).copy_from(steps_[t].context);
        copy_s_.select(t).copy_from(h_all_.select(t + 1).select(m_.decoder.L - 1));
    }
    const int64_t rows = int64_t{T} * B, chunk = std::min<int64_t>(rows, 256);
    // g_t = w · [c_t ; s_t ; e_t] + b for all T·B rows (e_t: the decoder's input ẽ_t)
    copy_g_.resize({rows}, false);
    m_.copy_gate.forward(copy_ctx_.reshape({rows, C}), copy_s_.reshape({rows, H}),
                         emb_.reshape({rows, m_.decoder.E}), copy_in_, copy_g_);
    logits_.resize({chunk, V}, false);
    if (grads) {
        copy_dz_.resize({chunk, V}, false);
        copy_d_alpha_.resize({T, B, S});
        copy_dg_.resize({rows});
        d_out_.resize({T, B, D});
    }
    if (!scores.empty()) std::fill(scores.begin(), scores.end(), 0.0);
    const ConstTensorView W = m_.generator_weight();
    // the gradients are the trained model's (a const pass scores only)
    Seq2Seq* const w = grads ? &trainee() : nullptr;
    Tensor* const d_W = w == nullptr                 ? nullptr
                        : cfg_.tie_target_embeddings ? &w->decoder.embedding.grad.weight
                                                     : &w->generator.grad.weight;
    LossStats st;
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
        const int64_t r1 = std::min(rows, r0 + chunk);
        const ConstTensorView x = gen_in.reshape({rows, D}).slice(r0, r1);
        const TensorView lp = logits_.slice(0, r1 - r0);
        output_log_probs(x, W, m_.generator.params.bias, lp);  // log-softmax: same mixture as z
        const TensorView dz = grads ? copy_dz_.slice(0, r1 - r0) : TensorView();
        for (int64_t r = r0; r < r1; ++r) {  // row r = (t, b), t = r / B, b = r % B
            const int t = static_cast<int>(r / B), b = static_cast<int>(r % B);
            const int32_t y = batch.tgt_copy[static_cast<std::size_t>(b) * T + t];
            if (y == cfg_.special_ids.pad) {
                if (grads) std::memset(dz.select(r - r0).data(), 0, sizeof(float) * V);
                continue;
            }
            const CopyRow row{.z = lp.select(r - r0).data(),
                              .V = V,
                              .alpha = copy_alpha_.select(t).select(b).data(),
                              .ids = batch.src_copy.data() + static_cast<std::size_t>(b) * S,
                              .S = std::min(batch.src_lengths[b], S),
                              .g = copy_g_[r],
                              .normalized = true};
            CopyRowGrad g{.d_z = grads ? dz.select(r - r0).data() : nullptr,
                          .d_alpha = grads ? copy_d_alpha_.select(t).select(b).data() : nullptr};
            const double loss = copy_row_loss(row, y, scale, grads ? &g : nullptr, label_smoothing);
            st.loss += loss;
            ++st.tokens;
            st.correct += copy_row_argmax(row) == y;
            if (!scores.empty()) scores[b] -= loss;
            if (grads) copy_dg_[r] = g.d_g;
        }
        if (!grads) continue;
        // z = x Wᵀ + b  =>  d_x = d_z W;  d_W += d_zᵀ x;  d_b += Σ_rows d_z
        gemm(dz, false, W, false, d_out_.reshape({rows, D}).slice(r0, r1), 1.0f, 0.0f);
        gemm(dz, true, x, false, *d_W, 1.0f, 1.0f);
        if (w->generator.grad.bias.numel() > 0)
            for (int64_t r = 0; r < r1 - r0; ++r)
                kernels::axpy(V, 1.0f, dz.select(r).data(), w->generator.grad.bias.data());
    }
    if (grads) copy_gate_backward(batch);
    return st;
}

// d g -> the gate's weights, d c_t / d s_t / d e_t. d c_t (copy_d_c_) and the mixture's d α
// (copy_d_alpha_) reach each step's attention through AttentionTerms (attention_terms_forward).
void TrainPass::copy_gate_backward(const Batch& batch) {
    const int B = batch.B, T = batch.T, C = m_.encoder.output_size();
    const int64_t rows = int64_t{T} * B;
    copy_d_c_.resize({T, B, C});
    copy_d_s_.resize({T, B, m_.decoder.H});
    copy_d_e_.resize({T, B, m_.decoder.E});
    trainee().copy_gate.backward(copy_dg_, copy_in_, copy_d_c_.reshape({rows, C}),
                                 copy_d_s_.reshape({rows, m_.decoder.H}),
                                 copy_d_e_.reshape({rows, m_.decoder.E}));
}

}  // namespace nazar
