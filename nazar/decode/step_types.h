// The encoded source and decoder state types of what a search decodes with: one Seq2Seq, or an
// Ensemble of them (decode/ensemble.h). Shared by greedy.cpp and beam_search.cpp.
#pragma once

#include "nazar/decode/ensemble.h"
#include "nazar/models/seq2seq.h"

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

}  // namespace nazar::detail
