// Trainer::validate(): dev loss and a greedy-decoded sample (trainer.h).
#include "nazar/train/trainer.h"

#include "nazar/core/check.h"
#include "nazar/data/extended_vocab.h"
#include "nazar/decode/beam_search.h"
#include "nazar/decode/greedy.h"
#include "nazar/eval/bleu.h"
#include "nazar/eval/chrf.h"
#include "nazar/eval/wer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace nazar {
namespace {

constexpr int kDecodeChunk = 64;  // sentences per greedy batch in validation

}  // namespace

ValidationResult Trainer::validate() {
    NZ_CHECK(has_dev_, "validate: no dev data (set dev, or dev_src and dev_tgt)");
    const EmaScope average(ema_.get());
    ValidationResult r = validate_weights();
    r.criterion = criterion(r);
    return r;
}

void Trainer::validate_loss(ValidationResult& r) {
    // Loss over the whole dev set (teacher forcing, eval mode, no label smoothing).
    Batcher dev_batches(dev_, {.batch_tokens = cfg_.batch_tokens,
                               .batch_size = cfg_.batch_tokens > 0 ? 0 : cfg_.batch_size,
                               .shuffle = false});
    Batch batch;
    double loss = 0, align = 0;
    int64_t correct = 0, aligned = 0;
    for (int64_t k = 0; k < dev_batches.num_batches(); ++k) {
        dev_batches.make_batch(k, batch);
        const LossStats st = model_->eval_loss(batch);
        if (!cfg_.dev_alignment.empty()) {  // the attention of this forward
            const GuidedAlignmentStats g = model_->alignment_loss(batch, dev_alignments_, 1.0f);
            align += g.loss;
            aligned += g.positions;
        }
        loss += st.loss;
        r.tokens += st.tokens;
        correct += st.correct;
    }
    r.loss = r.tokens ? loss / static_cast<double>(r.tokens) : 0.0;
    if (!cfg_.dev_alignment.empty())  // per aligned position, λ = 1
        r.alignment_loss = aligned > 0 ? align / static_cast<double>(aligned) : 0.0;
    r.perplexity = std::exp(r.loss);
    r.accuracy =
        r.tokens ? 100.0 * static_cast<double>(correct) / static_cast<double>(r.tokens) : 0.0;
}

ValidationResult Trainer::validate_weights() {
    ValidationResult r;
    validate_loss(r);

    // Greedy decoding of an evenly spaced sample, sorted by length to limit padding.
    const int64_t N = dev_.size(), K = std::min<int64_t>(cfg_.valid_sample, N);
    if (K == 0) return r;
    // The output limit: valid_max_length tokens when set (whatever the source length: outputs
    // may be much longer than their sources, e.g. digits -> words), else 2 · S_b + 10, at most
    // 512.
    const bool fixed = cfg_.valid_max_length > 0;
    const float ratio = fixed ? 0.0f : 2.0f;
    const int extra = fixed ? cfg_.valid_max_length : 10;
    const int limit = fixed ? cfg_.valid_max_length : 512;
    const BeamOptions beam{.beam_size = cfg_.valid_beam,
                           .max_length_ratio = ratio,
                           .max_length_extra = extra,
                           .max_length = limit};
    std::vector<int64_t> idx(static_cast<std::size_t>(K));
    for (int64_t i = 0; i < K; ++i) idx[i] = i * N / K;
    std::stable_sort(idx.begin(), idx.end(),
                     [&](int64_t a, int64_t b) { return dev_.src_length(a) < dev_.src_length(b); });
    const GreedyOptions gopt{
        .max_length_ratio = ratio, .max_length_extra = extra, .max_length = limit};
    std::vector<std::string> hyps(idx.size()), refs(idx.size());
    for (std::size_t begin = 0; begin < idx.size(); begin += kDecodeChunk) {
        const std::size_t end = std::min(idx.size(), begin + kDecodeChunk);
        std::vector<std::vector<int32_t>> src, copy;  // copy: extended ids (copy models)
        for (std::size_t i = begin; i < end; ++i) {
            const auto s = dev_.src(idx[i]);
            src.emplace_back(s.begin(), s.end());
            if (cfg_.copy_attention)
                copy.emplace_back(dev_.src_copy(idx[i]).begin(), dev_.src_copy(idx[i]).end());
        }
        const Batch b = batch_from_ids(src, {});
        const Batch bc = batch_from_ids(copy, {});  // the same layout (pad = 0)
        std::vector<std::vector<int32_t>> tokens;
        if (cfg_.valid_beam > 1) {
            for (auto& h : beam_search(*model_, b.src, b.src_lengths, b.S, beam, bc.src))
                tokens.push_back(std::move(h.front().tokens));
        } else {
            for (auto& g : greedy_decode(*model_, b.src, b.src_lengths, b.S, gopt, bc.src))
                tokens.push_back(std::move(g.tokens));
        }
        for (std::size_t i = begin; i < end; ++i) {
            hyps[i] = cfg_.copy_attention
                          ? decode_extended(tokens[i - begin], data_.tgt_vocab,
                                            {.base = data_.tgt_vocab.size(),
                                             .words = {dev_.copy_words(idx[i]).begin(),
                                                       dev_.copy_words(idx[i]).end()}},
                                            data_.tgt_tokenizer)
                          : data_.tgt_vocab.decode(tokens[i - begin], data_.tgt_tokenizer);
            // the dev line as read: a reference decoded from ids would hold <unk> for every
            // out-of-vocabulary word (and match a hypothesis's <unk>)
            refs[i] = dev_text_.size() == static_cast<std::size_t>(dev_.size())
                          ? dev_text_[static_cast<std::size_t>(idx[i])]
                          : data_.tgt_vocab.decode(dev_.tgt(idx[i]), data_.tgt_tokenizer);
        }
    }
    const std::vector<std::vector<std::string>> streams{refs};
    r.exact = exact_match(hyps, streams).score;
    r.bleu = corpus_bleu(hyps, streams).score;
    r.chrf = corpus_chrf(hyps, streams).score;
    r.sampled = K;
    for (std::size_t i = 0; i < std::min<std::size_t>(3, idx.size()); ++i)
        r.examples.push_back(fmt::format(
            "{} ||| {} ||| {}", data_.src_vocab.decode(dev_.src(idx[i]), data_.src_tokenizer),
            hyps[i], refs[i]));
    return r;
}

}  // namespace nazar
