// The trainer's guided alignment (docs/training.md "Guided alignment"): the training pairs'
// links and the decayed weight of the loss (models/guided_alignment.h).
#include "nazar/models/guided_alignment.h"
#include "nazar/train/trainer.h"

#include <fmt/format.h>

#include <cstdio>

namespace nazar {

void Trainer::load_alignments(std::span<const int64_t> kept_lines, const std::string& training,
                              int64_t lines_read) {
    alignments_ = CorpusAlignments::read(cfg_.train_alignment, data_.corpus, kept_lines, lines_read,
                                         training);
    int64_t aligned_pairs = 0;
    for (int64_t k = 0; k < alignments_.size(); ++k) aligned_pairs += !alignments_.links(k).empty();
    if (comm_->rank() == 0)
        fmt::print(stderr, "{}: {} links for {} of {} pairs (guided alignment, weight {})\n",
                   cfg_.train_alignment, thousands(alignments_.total_links()),
                   thousands(aligned_pairs), thousands(alignments_.size()),
                   cfg_.guided_alignment_weight);
}

float Trainer::guided_weight() const {
    if (cfg_.train_alignment.empty()) return 0.0f;
    return static_cast<float>(
        guided_alignment_weight_at(cfg_.guided_alignment_weight, cfg_.guided_alignment_decay,
                                   cfg_.guided_alignment_decay_steps, state_.step));
}

}  // namespace nazar
