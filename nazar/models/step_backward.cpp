// The decoder's step backward (decoder.h): step_backward, the per-step reference, and the two
// halves it is made of, which SequenceBackward (sequence_backward.h) shares with it.
#include "nazar/core/blas.h"
#include "nazar/core/kernels.h"
#include "nazar/models/decoder.h"
#include "nazar/models/row_helpers.h"

namespace nazar {

using decoder_rows::add_cols_out;
using decoder_rows::tanh_backward;

void Decoder::step_backward([[maybe_unused]] int t, ConstTensorView d_out, ConstTensorView emb,
                            ConstTensorView h_prev, ConstTensorView c_prev, ConstTensorView h_new,
                            [[maybe_unused]] ConstTensorView c_new, ConstTensorView out,
                            const EncodedSource& src, Attention& attention,
                            const DecoderStepCache& cache, TensorView d_h_new, TensorView d_c_new,
                            TensorView d_h_prev, TensorView d_c_prev, TensorView d_feed_prev,
                            TensorView d_emb, TensorView d_enc_out, TensorView d_keys) {
    const int N = emb.dim(0);
    NZ_CHECK_SHAPE(d_out, {N, d_out_});
    NZ_CHECK_SHAPE(d_h_new, {L, N, H});
    NZ_CHECK_SHAPE(d_h_prev, {L, N, H});
    d_ctx_.resize({N, C});  // zeroed: d c_t collects the output, feed and attention paths
    output_step_backward(d_out, emb, h_new, out, src, attention, cache, d_h_new, d_ctx_, d_emb,
                         d_enc_out, d_keys, nullptr);
    cells_step_backward(h_prev, c_prev, src, attention, cache, d_h_new, d_c_new, d_ctx_, d_h_prev,
                        d_c_prev, d_feed_prev, d_emb, d_enc_out, d_keys, nullptr);
}

// The output o_t and, with Luong timing, the attention that read s_t: adds d s_t into
// d_h_new[L−1] and d c_t into d_ctx. `def`: the combine's W_c gradient and the attention's
// query-side weight gradients go to its rows instead of grad.
void Decoder::output_step_backward(ConstTensorView d_out, ConstTensorView emb,
                                   ConstTensorView h_new, ConstTensorView out,
                                   const EncodedSource& src, Attention& attention,
                                   const DecoderStepCache& cache,
                                   TensorView d_h_new,    // (L, N, H)  d_h_new[L−1] +=
                                   TensorView d_ctx,      // (N, C)     +=
                                   TensorView d_emb,      // (N, E)     += (deep output)
                                   TensorView d_enc_out,  // (N, S, C)  +=
                                   TensorView d_keys,     // (N, S, K)  +=
                                   const DeferredStep* def) {
    const int N = emb.dim(0);
    const ConstTensorView s = h_new.select(L - 1);
    const TensorView d_s = d_h_new.select(L - 1);
    if (kind == DecoderKind::luong) {
        // s̃ = tanh(z), z = W_c [s; c]  =>  d_z = d_s̃ ⊙ (1 − s̃²);  d_[s; c] = d_z W_c;
        // grad.W_c += d_zᵀ [s; c]   (def: W_c's gradient comes per chunk, from def->d_z)
        if (def == nullptr) d_pre_.resize({N, H}, false);
        const TensorView d_z = def != nullptr ? def->d_z : d_pre_.view();
        tanh_backward(d_out, out, d_z);
        d_cat_.resize({N, H + C});
        if (def != nullptr)
            gemm(d_z, false, combine.params.weight, false, d_cat_, 1.0f, 1.0f);
        else
            combine.backward(d_z, cache.combine_in, d_cat_);
        add_cols_out(d_cat_.data(), H + C, d_s);
        add_cols_out(d_cat_.data() + H, H + C, d_ctx);
    } else if (deep) {
        // o = tanh(z), z = L_s s + L_y e + L_c c  =>  d_z = d_o ⊙ (1 − o²);  d_s += d_z L_s;
        // d_e += d_z L_y;  d_c += d_z L_c;  grad.L_* += d_zᵀ (s | e | c)
        d_pre_.resize({N, d_out_}, false);
        tanh_backward(d_out, out, d_pre_);
        deep_state.backward(d_pre_, s, d_s);
        deep_prev.backward(d_pre_, emb, d_emb);
        deep_context.backward(d_pre_, cache.context, d_ctx);
    } else {
        kernels::axpy(d_s.numel(), 1.0f, d_out.data(), d_s.data());  // o = s
    }
    // Luong timing: the query was s_t, so d_query joins d_s before the cells' backward.
    if (!before_)
        attention.backward(d_ctx, s, src.keys, src.enc_out_rows(N), src.length_rows(N),
                           cache.attention, d_s, decoder_rows::first_rows(d_keys, N),
                           decoder_rows::first_rows(d_enc_out, N),
                           def != nullptr ? def->query : nullptr);
}

// The stacked cells, top layer first, then layer 0's input x0 = [e ; feed] and, with Bahdanau
// timing, the attention that read s_{t-1}. `def`: each cell's gate gradients go to its rows
// (the weight gradients and layer 0's d_e = d_gi W_e come per chunk) and only what the
// recurrence needs is computed here.
void Decoder::cells_step_backward(ConstTensorView h_prev, ConstTensorView c_prev,
                                  const EncodedSource& src, Attention& attention,
                                  const DecoderStepCache& cache,
                                  TensorView d_h_new,      // (L, N, H)  read and modified
                                  TensorView d_c_new,      // (L, N, H)  LSTM; read and modified
                                  TensorView d_ctx,        // (N, C)     d c_t (complete after)
                                  TensorView d_h_prev,     // (L, N, H)  +=
                                  TensorView d_c_prev,     // (L, N, H)  += (LSTM)
                                  TensorView d_feed_prev,  // (N, H)     += (input feeding)
                                  TensorView d_emb,        // (N, E)     += (def: per chunk)
                                  TensorView d_enc_out,    // (N, S, C)  +=
                                  TensorView d_keys,       // (N, S, K)  +=
                                  const DeferredStep* def) {
    const int N = h_prev.dim(1), I0 = E + feed_;
    // d_h_new[l] is complete once layer l+1 has added its input gradient
    d_x0_.resize({N, I0});
    for (int l = L - 1; l >= 0; --l) {
        const ConstTensorView x = l == 0 ? cache.x0.view() : cache.layer_in[l].view();
        TensorView d_x = d_x0_;
        if (l > 0) {
            d_layer_.resize({N, H});
            d_x = d_layer_;
        }
        if (def == nullptr) {
            if (cell == CellType::gru)
                gru[l].backward(d_h_new.select(l), x, h_prev.select(l), cache.gru[l], d_x,
                                d_h_prev.select(l));
            else
                lstm[l].backward(d_h_new.select(l), d_c_new.select(l), x, h_prev.select(l),
                                 c_prev.select(l), cache.lstm[l], d_x, d_h_prev.select(l),
                                 d_c_prev.select(l));
        } else {
            // only what the recurrence needs: d_h, d_x of layers > 0, and layer 0's feed
            // columns d_f = d_gi W_f (W_f = W_ih[:, E:])
            const TensorView d_x_now = l == 0 ? TensorView() : d_x;
            const TensorView d_gi = def->d_gi[l].select(def->row).slice(0, N);
            if (cell == CellType::gru)
                gru[l].backward_data(d_h_new.select(l), h_prev.select(l), cache.gru[l], d_gi,
                                     def->d_gh[l].select(def->row).slice(0, N), d_x_now,
                                     d_h_prev.select(l));
            else  // layer norm: the two products' gate gradients apart (d_gh)
                lstm[l].backward_data(
                    d_h_new.select(l), d_c_new.select(l), c_prev.select(l), cache.lstm[l], d_gi,
                    d_x_now, d_h_prev.select(l), d_c_prev.select(l), {},
                    lstm[l].params.layer_norm() ? def->d_gh[l].select(def->row).slice(0, N)
                                                : TensorView());
            if (l == 0 && feed_ > 0) {
                const int GH = gate_size();
                const RNNCellParams& p = cell == CellType::gru ? gru[0].params : lstm[0].params;
                gemm_raw(false, false, N, feed_, GH, 1.0f, d_gi.data(), GH, p.weight_ih.data() + E,
                         I0, 1.0f, d_x0_.data() + E, I0);
            }
        }
        // x_l = dropout(s^{l-1})  =>  d_s^{l-1} += d_x_l ⊙ mask
        if (l > 0) dropout.backward(d_layer_, cache.dropout[l], d_h_new.select(l - 1));
    }
    // x0 = [e ; feed]  =>  d_e += d_x0[:, :E];  d_feed += d_x0[:, E:]
    if (def == nullptr) add_cols_out(d_x0_.data(), I0, d_emb);  // def: per chunk
    if (kind == DecoderKind::bahdanau) add_cols_out(d_x0_.data() + E, I0, d_ctx);
    if (kind == DecoderKind::luong && feed_ > 0) add_cols_out(d_x0_.data() + E, I0, d_feed_prev);
    // Bahdanau timing: the query was s_{t-1}; d_c_t is complete only now (it fed the cell).
    if (before_)
        attention.backward(
            d_ctx, h_prev.select(L - 1), src.keys, src.enc_out_rows(N), src.length_rows(N),
            cache.attention, d_h_prev.select(L - 1), decoder_rows::first_rows(d_keys, N),
            decoder_rows::first_rows(d_enc_out, N), def != nullptr ? def->query : nullptr);
}

}  // namespace nazar
