// Ensemble decoding (docs/decoding.md, "Ensembles"): several models decode as one. At each step
// every member takes the same previous tokens and the ensemble's log-probabilities are the
// arithmetic mean of the members' log-probabilities:
//   log q(y | y_<t, x) = (1/M) Σ_m log p_m(y | y_<t, x)
// i.e. the normalised-by-nothing geometric mean of the members' distributions (a product of
// experts, as Marian's ensembles), not the log of their mean probability. Why: a sentence's
// ensemble score is then exactly the mean of the members' scores (Σ_t of a mean = mean of Σ_t),
// so `nazar score` with several models and the translate scores agree; it needs no exp/log over
// the vocabulary per step; and a token any member finds implausible is vetoed rather than
// rescued by one confident member. The values are not renormalised (Σ_y q ≤ 1), like the
// greedy/beam scores of a single model which are its own Σ log p.
// M = 1 is the member itself, bit for bit; M identical members give that member's values
// exactly ((a + a) / 2 = a in float). The attention (coverage penalty, alignments, replace_unk)
// is one member's (`attention_member`, default 0) or the mean of all members' (kMeanAttention).
//
// Copy-attention members (models/copy.h; all members or none) give log(P_m(w) + ε) over the
// same per-sentence extended vocabulary [0, V + X_b) (it depends only on the source pieces and
// the shared target vocabulary), and are averaged the same way: the mean of the members' log
// mixtures, so a copied word is kept when the members agree on copying it, and a sentence's
// ensemble score is still the mean of the members' `nazar score`s. p_gen is the members' mean.
// Members must agree on the target vocabulary size and the special ids (Error naming the
// member otherwise); they read the same source ids, so the text front ends (decode/translator.h,
// `nazar score`) also require equal source and target vocabularies and tokenizers. Members may
// differ in everything else (cell, sizes, attention, decoder kind).
//
// The interface mirrors DecodeSession's step API (models/decode_session.h), so greedy_decode and
// beam_search take either.
#pragma once

#include "nazar/models/decode_session.h"

#include <span>
#include <utility>
#include <vector>

namespace nazar {

// Ensemble attention (alignments, coverage penalty, replace_unk): a member index (0-based), or
// this value for the mean of every member's attention (= TranslationOptions::kMeanAttention).
inline constexpr int kMeanAttention = -1;

class Ensemble {
public:
    struct Source {
        std::vector<EncodedSource> m;  // per member
    };
    struct State {
        std::vector<DecoderState> m;  // per member
    };

    // Members are borrowed (not owned) and only read: the ensemble decodes through a session of
    // its own over each (decode_session.h), so that ensembles on several threads may share the
    // members. One ensemble runs one call at a time.
    explicit Ensemble(std::vector<const Seq2Seq*> members, int attention_member = 0);
    // The same through the caller's sessions (one per member, borrowed: a pool of them reused
    // across calls keeps its buffers, decode/translator.cpp).
    struct Sessions {
        explicit Sessions(std::vector<DecodeSession*> s) : each(std::move(s)) {}
        std::vector<DecodeSession*> each;
    };
    explicit Ensemble(Sessions sessions, int attention_member = 0);
    Ensemble(const Ensemble&) = delete;  // members_ may point into own_
    Ensemble& operator=(const Ensemble&) = delete;

    int size() const { return static_cast<int>(members_.size()); }
    const ModelConfig& config() const { return members_[0]->config(); }  // vocab, special ids

    void encode(std::span<const int32_t> src, std::span<const int> lengths, int S, Source& out,
                int rows_per_sentence = 1);
    void select_rows(const Source& in, std::span<const int> rows, Source& out) const;
    void init_state(const Source& src, State& state);
    void step(std::span<const int32_t> prev, const Source& src, State& state, TensorView log_probs,
              TensorView attention);
    void select_state(const State& in, std::span<const int> rows, State& out) const;
    // Copy attention (every member has it): the source's extended ids for each member
    // (DecodeSession::set_copy_source); step() then writes (N, ext_vocab).
    void set_copy_source(Source& src, std::span<const int32_t> ids, int ext_vocab) const;
    // The members' mean p_gen of each row of the last step (empty without copy attention).
    std::span<const float> last_p_gen();

private:
    void check() const;  // the members agree (vocabularies, special ids, copy attention)

    std::vector<DecodeSession> own_;       // sessions made by the first constructor
    std::vector<DecodeSession*> members_;  // one session over each member
    int attention_member_;
    Tensor lp_scratch_, attn_scratch_;
    std::vector<float> p_gen_;
};

}  // namespace nazar
