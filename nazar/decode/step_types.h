// The encoded source and decoder state types of what a search decodes with: one DecodeSession, or
// an Ensemble of them (decode/ensemble.h). Shared by greedy.cpp and beam_search.cpp.
#pragma once

#include "nazar/decode/ensemble.h"
#include "nazar/models/decode_session.h"

#include <algorithm>
#include <span>

namespace nazar::detail {

template <class Model>
struct StepTypes {
    using Source = EncodedSource;
    using State = DecoderState;
};
template <>
struct StepTypes<Ensemble> {
    using Source = Ensemble::Source;
    using State = Ensemble::State;
};

// A search's encodings, states and step outputs: a session's own, kept from batch to batch
// (DecodeSession::SearchBuffers), or, for an ensemble (made per call), these.
struct EnsembleSearchBuffers {
    Ensemble::Source enc, rows_enc;
    Ensemble::State state, next_state;
    Tensor log_probs, attention;
};
inline DecodeSession::SearchBuffers& search_buffers(DecodeSession& model, EnsembleSearchBuffers&) {
    return model.search_buffers();
}
inline EnsembleSearchBuffers& search_buffers(Ensemble&, EnsembleSearchBuffers& own) {
    return own;
}
// When the search ends, even by a throw: a session's end_search (the per-batch weights dropped,
// the batch's buffers' pages given back); an ensemble's buffers are the call's own.
struct EndSearchOnExit {
    DecodeSession* session;  // null: an ensemble's search
    ~EndSearchOnExit() {
        if (session) session->end_search();
    }
};
inline EndSearchOnExit end_search_on_exit(DecodeSession& model) {
    return {&model};
}
inline EndSearchOnExit end_search_on_exit(Ensemble&) {
    return {nullptr};
}

// Copy attention (a model with cfg.copy_attention; models/copy.h): hands the source's
// extended ids (B·S, row-major) to the encoded rows and returns the step's vocabulary
// V + max_b X_b; other models return V. An ensemble of copy models hands them to every member.
inline int prepare_copy(DecodeSession& model, EncodedSource& enc,
                        std::span<const int32_t> copy_src) {
    const int V = model.config().tgt_vocab_size;
    if (!model.config().copy_attention) return model.step_vocab(enc);  // a shortlist's M
    NZ_CHECK(!copy_src.empty(), "decoding a copy model needs the source's extended ids");
    int ext = V;
    for (int32_t id : copy_src) ext = std::max(ext, id + 1);
    model.set_copy_source(enc, copy_src, ext);
    return ext;
}
inline int prepare_copy(Ensemble& model, Ensemble::Source& enc, std::span<const int32_t> copy_src) {
    const int V = model.config().tgt_vocab_size;
    if (!model.config().copy_attention) return V;
    NZ_CHECK(!copy_src.empty(), "decoding copy models needs the source's extended ids");
    int ext = V;
    for (int32_t id : copy_src) ext = std::max(ext, id + 1);
    model.set_copy_source(enc, copy_src, ext);
    return ext;
}
// p_gen of each row of the last step (empty: not a copy model).
inline std::span<const float> step_p_gen(const DecodeSession& model) {
    return model.last_p_gen();
}
inline std::span<const float> step_p_gen(Ensemble& model) {
    return model.last_p_gen();
}

}  // namespace nazar::detail
