// Seq2Seq's terms on the attention beyond the output loss (seq2seq.h attention_terms_forward):
// the coverage loss and recurrence, copy attention's d α and d c_t, and guided alignment, all
// handed to the attention's backward through AttentionTerms (attention_terms.h).
#include "nazar/core/kernels.h"
#include "nazar/models/guided_alignment.h"
#include "nazar/models/train_pass.h"

#include <vector>

namespace nazar {

namespace {
std::vector<std::span<const AlignedPair>> batch_links(const Batch& batch,
                                                      const CorpusAlignments& alignments) {
    std::vector<std::span<const AlignedPair>> rows(static_cast<std::size_t>(batch.B));
    for (int b = 0; b < batch.B; ++b) {
        const int64_t pair = batch.index[static_cast<std::size_t>(b)];
        NZ_CHECK(pair >= 0 && pair < alignments.size(),
                 "guided alignment: batch row {} is pair {}, the alignments hold {}", b, pair,
                 alignments.size());
        rows[static_cast<std::size_t>(b)] = alignments.links(pair);
    }
    return rows;
}
}  // namespace

GuidedAlignmentStats TrainPass::alignment_loss(const Batch& batch,
                                               const CorpusAlignments& alignments,
                                               float weight) const {
    NZ_CHECK(static_cast<int>(steps_.size()) >= batch.T, "alignment_loss: no forward of the batch");
    NZ_CHECK(!skipped_,
             "alignment_loss: the last forward (train_step) skipped padded rows; run eval_loss on "
             "the batch first");
    return guided_alignment_loss(std::span<const DecoderStepCache>(steps_.data(), batch.T),
                                 batch_links(batch, alignments), batch.T, batch.S, weight, 1.0f,
                                 TensorView());
}

void TrainPass::attention_terms_forward(const Batch& batch, const TrainOptions& opt, float scale,
                                        LossStats& stats) {
    const bool guided = opt.guided_alignment_weight > 0.0f;
    NZ_CHECK_USAGE(opt.guided_alignment_weight >= 0.0f,
                   "guided_alignment_weight must be >= 0, got {}", opt.guided_alignment_weight);
    NZ_CHECK_USAGE(!guided || opt.alignments != nullptr,
                   "guided_alignment_weight {} needs alignments (train_alignment)",
                   opt.guided_alignment_weight);
    terms_on_ = AttentionTerms::needed(m_.attention, opt.coverage_loss_weight,
                                       cfg_.copy_attention || guided);
    if (!terms_on_) return;
    const int T = batch.T, B = batch.B, S = batch.S;
    const std::span<const DecoderStepCache> steps(steps_.data(), T);
    stats.coverage_loss = terms_.loss_forward(m_.attention, steps, targets_, cfg_.special_ids.pad,
                                              B, S, opt.coverage_loss_weight, scale);
    if (cfg_.copy_attention) {  // the mixture's d α and the gate's d c_t (copy_loss)
        const TensorView d_alpha = terms_.direct_alpha();
        kernels::axpy(d_alpha.numel(), 1.0f, copy_d_alpha_.data(), d_alpha.data());
        terms_.direct_context(m_.encoder.output_size()).copy_from(copy_d_c_);
    }
    if (guided) {
        const GuidedAlignmentStats g =
            guided_alignment_loss(steps, batch_links(batch, *opt.alignments), T, S,
                                  opt.guided_alignment_weight, scale, terms_.direct_alpha());
        stats.alignment_loss = g.loss;
        stats.aligned = g.positions;
    }
}

}  // namespace nazar
