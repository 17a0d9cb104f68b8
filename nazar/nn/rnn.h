// Multi-layer, optionally bidirectional GRU/LSTM over a right-padded batch: torch.nn.GRU /
// torch.nn.LSTM with batch_first=True, run as if every sentence were packed alone
// (pack_padded_sequence semantics).
//
//   x (B, T, I), lengths (B)  ->  out (B, T, dirs·H) = [h_fwd ; h_bwd] at every position
//   final.h (L·dirs, B, H) (and final.c for LSTM), index = layer·dirs + dir, as torch's h_n.
//
// Padding (docs/spec.md §2): positions t >= lengths[b] output 0 and do not change the state, so the
// forward direction's final state is its state after the last real token, and the backward
// direction starts at the sentence's own last real token from its initial state. A padded
// sentence gives the same outputs and final states as if it were alone in the batch.
// Layers: layer 0 reads x; layer k > 0 reads dropout(out of layer k−1) (train mode only, as torch;
// the mask is drawn over (T, B, dirs·H) in time-major order of the caller's rows, padding
// included, so the draws do not depend on how the RNN stores its rows).
// Packed inside (PyTorch's PackedSequence): the rows are sorted by length (longest first,
// stable) and step t holds only the n_t = |{b : lengths[b] > t}| rows still running, the
// first n_t of the sorted batch; the steps are stored one after another (N = Σ lengths rows in
// all), so no product, gate or weight gradient touches a padded position. Both directions of a
// bidirectional layer share that layout (position t is real in both for the same rows). x, out
// and the states are mapped to and from the caller's row order by the transposing copies.
// Input projections W_ih x + b_ih of all steps of one layer-direction are ONE GEMM over the N
// real rows; only the W_hh h GEMM and the fused gate kernel (gru_cell.h / lstm_cell.h) run per
// step. All buffers live in RNNCache / RNN scratch and are sized once per batch: nothing
// allocates in the time loop.
// Parameters: visit() gives torch's names and order: weight_ih_l{k}, weight_hh_l{k},
// bias_ih_l{k}, bias_hh_l{k}, then the same with suffix _reverse, for k = 0..L−1.
// Init as PyTorch: everything ~ U(-1/sqrt(H), 1/sqrt(H)).
// Residual connections (Config::residual): layer k > 0 outputs y_k = h_k + x_k, its states plus
// the input it read (x_k = dropout(y_{k−1}), the same width D·H); layer 0's input is x, of
// another width, so it outputs its states alone. The final states stay the cells' own h_k.
// Layer normalisation (Config::layer_norm; gru_cell.h, lstm_cell.h): the input products of all
// rows are normalised in one pass after their GEMM, the recurrent ones per step; the gains are
// ln_weight_ih_l{k}, ln_weight_hh_l{k} (and _reverse), after the four tensors of each cell.
// Deep transition (Config::transition_depth D > 1, GRU only; transition.h): each step of each
// layer-direction runs its cell and then D − 1 transition cells that read only the state; the
// last one's state is the output and what the next step starts from. Their tensors
// (weight_hh_l{k}[_reverse]_t{j}, …) follow the cell's, j = 1 … D − 1.
//
// Gradients: backward ACCUMULATES (+=) into d_x, d_initial and `grad`.
#pragma once

#include "nazar/core/blas.h"
#include "nazar/core/rng.h"
#include "nazar/core/tensor.h"
#include "nazar/nn/dropout.h"
#include "nazar/nn/gru_cell.h"
#include "nazar/nn/lstm_cell.h"
#include "nazar/nn/transition.h"

#include <span>
#include <string>
#include <vector>

namespace nazar {

enum class CellType { gru, lstm };

struct RNNParams {
    std::vector<RNNCellParams> cells;  // [layer · directions + dir]
    // [layer · directions + dir][j − 1]: transition j of the cell (empty without deep transition)
    std::vector<std::vector<TransitionParams>> transitions;
    int directions = 1;  // 1 or 2

    // torch.nn.GRU / LSTM state_dict names, in torch's order.
    template <class F>
    void visit(F&& f) {
        for (std::size_t i = 0; i < cells.size(); ++i) {
            const std::string k = std::to_string(i / directions);
            const std::string sfx = (i % directions) ? "_reverse" : "";
            f("weight_ih_l" + k + sfx, cells[i].weight_ih);
            f("weight_hh_l" + k + sfx, cells[i].weight_hh);
            f("bias_ih_l" + k + sfx, cells[i].bias_ih);
            f("bias_hh_l" + k + sfx, cells[i].bias_hh);
            f("ln_weight_ih_l" + k + sfx, cells[i].ln_weight_ih);  // absent without LN
            f("ln_weight_hh_l" + k + sfx, cells[i].ln_weight_hh);
            if (i < transitions.size())
                for (std::size_t j = 0; j < transitions[i].size(); ++j)
                    transitions[i][j].visit(f, "_l" + k + sfx + "_t" + std::to_string(j + 1));
        }
    }
};

// Initial or final states, laid out as torch's h_0 / h_n and c_0 / c_n.
// Empty tensors ((0)-shaped, the default) mean "zero" (as inputs) or "not needed" (as gradient
// outputs). A c given to a GRU is an error.
struct RNNState {
    Tensor h{Shape{0}};  // (L·dirs, B, H)
    Tensor c{Shape{0}};  // (L·dirs, B, H)  LSTM only; empty for GRU
};

// One layer-direction of the forward pass, in the packed layout of RNNCache (step t's n_t rows
// from row offset[t]). h: rows [0, N) hold the state each packed row started its step from (the
// initial state where a sentence starts: step 0 forward, its last position backward), rows
// [N, N + B) the final states of the sorted rows. Same for c.
struct RNNDirectionCache {
    Tensor gi{Shape{0}};      // (N, 3H)  GRU: W_ih x + b_ih (LSTM: unused, projections go to gates)
    Tensor gates{Shape{0}};   // (N, G·H) activated gates: GRU r, z, n; LSTM i, f, g, o
    Tensor gh_n{Shape{0}};    // (N, H)   GRU only: W_hn h + b_hn
    Tensor tanh_c{Shape{0}};  // (N, H)   LSTM only: tanh(c')
    Tensor h{Shape{0}};       // (N + B, H)
    Tensor c{Shape{0}};       // (N + B, H) LSTM only
    Tensor ln_i{Shape{0}}, ln_h{Shape{0}};      // (N, G·H) layer_norm: â of x W_ihᵀ, h W_hhᵀ
    Tensor rstd_i{Shape{0}}, rstd_h{Shape{0}};  // (N, G)   layer_norm: their 1/sqrt(σ² + ε)
    Tensor gh{Shape{0}};  // (B, 4H)  LSTM with layer_norm: a step's LN(h W_hhᵀ) + b_hh
    WeightT whh_t;  // W_hhᵀ for this forward's steps (blas.h; empty at <= kSmallGemmRows rows or
                    // without AVX-512)
    TransitionCache tr;  // deep transition: its steps' values (the cell's new states in tr.h[0])
};

// Mode::inference (no backward follows): a layer-direction keeps the input projections of its
// N packed rows (one GEMM, as in the other modes) and one step's rows, not every step's gates
// and states. Sorted row i of the running step is row i here.
struct RNNInferenceScratch {
    Tensor proj{Shape{0}};    // (N, G·H)  x W_ihᵀ + b_ih, or LN(x W_ihᵀ) + b_ih (GRU: gi;
                              //           LSTM: the gates, in place)
    Tensor gates{Shape{0}};   // (B, 3H)   GRU: the step's gates
    Tensor gh_n{Shape{0}};    // (B, H)    GRU: W_hn h + b_hn (written by the gate kernel)
    Tensor tanh_c{Shape{0}};  // (B, H)    LSTM
    Tensor gh{Shape{0}};      // (B, 4H)   LSTM with layer_norm: LN(h W_hhᵀ) + b_hh of the step
    Tensor h{Shape{0}}, h_next{Shape{0}}, h_final{Shape{0}};  // (B, H) each
    Tensor c{Shape{0}}, c_next{Shape{0}}, c_final{Shape{0}};  // (B, H) each, LSTM
    WeightT whh_t;          // W_hhᵀ of the direction running (as RNNDirectionCache::whh_t)
    TransitionCache tr;     // deep transition: bias rows and Wᵀ of the direction running
    Tensor tr_h{Shape{0}};  // (B, H) deep transition: the step's states through the chain
};

// Everything backward needs; owned by the caller, reused across batches (resize keeps memory).
// In Mode::inference `dirs` stays empty and `infer` holds the scratch: one set, used by the
// layer-directions in turn, or one per direction where the two run side by side.
struct RNNCache {
    int B = 0, T = 0;
    Mode mode = Mode::eval;
    std::vector<int> lengths;             // (B) in the caller's row order
    std::vector<int> order;               // (B) sorted row i is the caller's row order[i]
    std::vector<int> rows;                // (T) n_t: step t runs the sorted rows [0, n_t)
    std::vector<int64_t> offset;          // (T + 1) first packed row of step t; offset[T] = N
    std::vector<Tensor> layer_in;         // [L]  (N, I or dirs·H) packed layer inputs
                                          //      ([0] = x, [k] = dropout(layer_out[k−1]))
    std::vector<Tensor> layer_out;        // [L]  (N, dirs·H) packed outputs
    std::vector<DropoutCache> dropout;    // [L]  mask of layer_out[k−1], (T, B, dirs·H) in the
                                          //      caller's row order (index 0 unused)
    std::vector<RNNDirectionCache> dirs;  // [L · dirs]  (train, eval)
    std::vector<RNNInferenceScratch> infer;  // [1 or dirs]  (inference)
};

class RNN {
public:
    struct Config {
        CellType cell = CellType::gru;
        int input_size = 0;   // I
        int hidden_size = 0;  // H
        int num_layers = 1;   // L >= 1
        bool bias = true;
        bool bidirectional = false;
        float dropout = 0.0f;      // between layers, train mode only
        bool layer_norm = false;   // layer-normalised cells (gru_cell.h, lstm_cell.h)
        bool residual = false;     // layer k > 0 outputs its states plus its input (see above)
        int transition_depth = 1;  // D: cells per step, the first reading the input (GRU only)
    };

    RNN() = default;
    // U(-1/sqrt(H), 1/sqrt(H)); layer order as torch; inference: core/params.h
    RNN(Config cfg, Rng& rng, ParamMode mode = ParamMode::training);

    int directions() const { return cfg.bidirectional ? 2 : 1; }
    int gates() const { return cfg.cell == CellType::gru ? 3 : 4; }
    bool deep() const { return cfg.transition_depth > 1; }
    int output_size() const { return directions() * cfg.hidden_size; }  // C
    RNNState zero_state(int B) const;  // h (and c) zeros of (L·dirs, B, H)

    // lengths: each in [0, T]; empty span = every sentence has length T.
    // rng: draws dropout masks between layers in train mode (untouched otherwise).
    void forward(ConstTensorView x,             // (B, T, I)
                 std::span<const int> lengths,  // (B)
                 const RNNState& initial,       // (L·dirs, B, H) each; empty tensors = zeros
                 TensorView out,                // (B, T, dirs·H) overwritten; 0 at padding
                 RNNState& final,               // out: (L·dirs, B, H) each (resized; c only LSTM)
                 RNNCache& cache,               // out (Mode::inference: scratch only)
                 Rng& rng, Mode mode) const;

    // From d_out and d_final to d_x, d_initial and every parameter gradient. The cache must come
    // from a train or eval forward (an inference one keeps too little: an Error).
    // d_out at padding positions is ignored (those outputs are constant 0).
    void backward(ConstTensorView d_out,    // (B, T, dirs·H)
                  const RNNState& d_final,  // (L·dirs, B, H) each; empty tensors = zero
                  const RNNCache& cache,
                  TensorView d_x,        // (B, T, I) +=; empty view = not needed
                  RNNState& d_initial);  // (L·dirs, B, H) each +=; empty = not needed

    Config cfg;
    RNNParams params;
    RNNParams grad;

private:
    void forward_direction(int k, int d, const RNNState& initial, RNNState& final,
                           RNNCache& cache) const;  // layer k, direction d
    // forward_direction in Mode::inference: the same products and gate kernels on the same rows
    // (the same bits), the states of one step at a time in `sc`
    void infer_direction(int k, int d, const RNNState& initial, RNNState& final, RNNCache& cache,
                         RNNInferenceScratch& sc) const;
    void backward_direction(int k, int d, const RNNState& d_final, const RNNCache& cache,
                            bool need_d_in, RNNState& d_initial);
    // Backward scratch, sized once per batch (not state).
    Tensor d_layer_in_{Shape{0}};   // (N, I or dirs·H)
    Tensor d_layer_out_{Shape{0}};  // (N, dirs·H)
    Tensor d_gi_{Shape{0}},
        d_gh_{Shape{0}};  // (N, G·H)   (LSTM without LN uses only d_gi_: there d_gi = d_gh)
    // (B, H) in sorted row order: the running gradients and those of the initial states
    Tensor d_h_{Shape{0}}, d_h_next_{Shape{0}}, d_c_{Shape{0}}, d_c_next_{Shape{0}};
    Tensor d_h0_{Shape{0}}, d_c0_{Shape{0}};
    // deep transition: (N, 3H) per transition (its h W_jᵀ's gradient), (B, H) and (B, 3H) scratch
    std::vector<Tensor> d_gh_tr_;
    Tensor d_tr_{Shape{0}}, d_gi_tr_{Shape{0}};
};

}  // namespace nazar
