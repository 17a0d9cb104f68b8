// Trainer::validate(): dev loss, and greedy (or beam) decoding of the dev set or an evenly
// spaced sample of it, scored by exact match, BLEU and chrF (trainer.h).
#include "nazar/train/trainer.h"

#include "nazar/core/check.h"
#include "nazar/data/extended_vocab.h"
#include "nazar/decode/beam_search.h"
#include "nazar/decode/greedy.h"
#include "nazar/eval/bleu.h"
#include "nazar/eval/chrf.h"
#include "nazar/eval/wer.h"
#include "nazar/models/model_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string_view>
#include <unordered_map>

namespace nazar {
namespace {

constexpr int kDecodeChunk = 64;  // sentences per greedy batch in validation

// The standard error of a share p (percent) measured on n independent items, in points.
double share_se(double p, int64_t n) {
    if (n <= 0) return 0;
    const double q = p / 100.0;
    return 100.0 * std::sqrt(std::max(q * (1.0 - q), 0.0) / static_cast<double>(n));
}

}  // namespace

ValidationResult Trainer::validate() {
    NZ_CHECK(has_dev_, "validate: no dev data (set dev, or dev_src and dev_tgt)");
    const EmaScope average(ema_.get());
    ValidationResult r = validate_weights(*model_, valid_sources());
    r.criterion = criterion(r);
    return r;
}

ValidationResult Trainer::validate_file(const std::string& path, int64_t* step) {
    NZ_CHECK(has_dev_, "validate: no dev data (set dev, or dev_src and dev_tgt)");
    LoadedModel loaded = load_model(path, ParamMode::inference);
    if (step) {
        const auto it = loaded.metadata.find("train.state");
        *step = it == loaded.metadata.end() ? 0 : train_state_from_json(it->second, path).step;
    }
    ValidationResult r = validate_weights(*loaded.model, dev_groups_.size());
    r.criterion = criterion(r);
    return r;
}

void Trainer::group_dev_sources() {
    // One group per distinct source line, in order of first appearance; its pairs' targets are
    // the references of that source (a lexicon lists several pronunciations of one word; a
    // translation dev set may translate one sentence twice).
    dev_groups_.clear();
    std::unordered_map<std::string_view, std::size_t> seen;
    NZ_CHECK(dev_src_text_.size() == static_cast<std::size_t>(dev_.size()),
             "dev sources: {} lines for {} pairs", dev_src_text_.size(), dev_.size());
    for (int64_t i = 0; i < dev_.size(); ++i) {
        const std::string_view key = dev_src_text_[static_cast<std::size_t>(i)];
        auto [it, fresh] = seen.try_emplace(key, dev_groups_.size());
        if (fresh) dev_groups_.emplace_back();
        dev_groups_[it->second].push_back(i);
    }
}

int64_t Trainer::valid_sources() const {
    const auto G = static_cast<int64_t>(dev_groups_.size());
    if (cfg_.valid_sample < 0) return std::min<int64_t>(G, kAutoValidSample);
    return std::min<int64_t>(cfg_.valid_sample, G);
}

void Trainer::validate_loss(Seq2Seq& model, ValidationResult& r) {
    // Loss over the whole dev set (teacher forcing, eval mode, no label smoothing).
    Batcher dev_batches(dev_, {.batch_tokens = cfg_.batch_tokens,
                               .batch_size = cfg_.batch_tokens > 0 ? 0 : cfg_.batch_size,
                               .shuffle = false});
    Batch batch;
    // the training pass's buffers for the model it trains; its own for another (best.safetensors)
    TrainPass other(std::as_const(model));
    TrainPass& pass = &model == model_.get() ? *pass_ : other;
    double loss = 0, align = 0;
    int64_t correct = 0, aligned = 0;
    for (int64_t k = 0; k < dev_batches.num_batches(); ++k) {
        dev_batches.make_batch(k, batch);
        const LossStats st = pass.eval_loss(batch);
        if (!cfg_.dev_alignment.empty()) {  // the attention of this forward
            const GuidedAlignmentStats g = pass.alignment_loss(batch, dev_alignments_, 1.0f);
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

std::vector<std::string> Trainer::decode_dev(Seq2Seq& model, const std::vector<int64_t>& pairs) {
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
    const GreedyOptions gopt{
        .max_length_ratio = ratio, .max_length_extra = extra, .max_length = limit};
    // Sorted by length to limit padding.
    std::vector<std::size_t> order(pairs.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return dev_.src_length(pairs[a]) < dev_.src_length(pairs[b]);
    });
    std::vector<std::string> hyps(pairs.size());
    DecodeSession session(model);  // its buffers reused by every chunk
    for (std::size_t begin = 0; begin < order.size(); begin += kDecodeChunk) {
        const std::size_t end = std::min(order.size(), begin + kDecodeChunk);
        std::vector<std::vector<int32_t>> src, copy;  // copy: extended ids (copy models)
        for (std::size_t o = begin; o < end; ++o) {
            const auto s = dev_.src(pairs[order[o]]);
            src.emplace_back(s.begin(), s.end());
            if (cfg_.copy_attention) {
                const auto c = dev_.src_copy(pairs[order[o]]);
                copy.emplace_back(c.begin(), c.end());
            }
        }
        const Batch b = batch_from_ids(src, {});
        const Batch bc = batch_from_ids(copy, {});  // the same layout (pad = 0)
        std::vector<std::vector<int32_t>> tokens;
        if (cfg_.valid_beam > 1) {
            for (auto& h : beam_search(session, b.src, b.src_lengths, b.S, beam, bc.src))
                tokens.push_back(std::move(h.front().tokens));
        } else {
            for (auto& g : greedy_decode(session, b.src, b.src_lengths, b.S, gopt, bc.src))
                tokens.push_back(std::move(g.tokens));
        }
        for (std::size_t o = begin; o < end; ++o) {
            const int64_t pair = pairs[order[o]];
            hyps[order[o]] =
                cfg_.copy_attention
                    ? decode_extended(
                          tokens[o - begin], data_.tgt_vocab,
                          {.base = data_.tgt_vocab.size(),
                           .words = {dev_.copy_words(pair).begin(), dev_.copy_words(pair).end()}},
                          data_.tgt_tokenizer)
                    : data_.tgt_vocab.decode(tokens[o - begin], data_.tgt_tokenizer);
        }
    }
    return hyps;
}

ValidationResult Trainer::validate_weights(Seq2Seq& model, int64_t K) {
    ValidationResult r;
    validate_loss(model, r);
    // K evenly spaced distinct sources (all of them when K = G), each scored against every
    // target the dev set gives it.
    const auto G = static_cast<int64_t>(dev_groups_.size());
    r.sources = G;
    if (K <= 0 || G == 0) return r;
    std::vector<int64_t> idx(static_cast<std::size_t>(K));  // the first pair of each group
    std::vector<const std::vector<int64_t>*> group(idx.size());
    std::size_t max_refs = 1;
    for (int64_t i = 0; i < K; ++i) {
        group[i] = &dev_groups_[i * G / K];
        idx[i] = group[i]->front();
        max_refs = std::max(max_refs, group[i]->size());
    }
    const std::vector<std::string> hyps = decode_dev(model, idx);
    // refs[k][i]: the k-th reference of source i; "" = source i has fewer (references.h). The
    // dev lines as read: a reference decoded from ids would hold <unk> for every
    // out-of-vocabulary word (and match a hypothesis's <unk>).
    const bool text = dev_text_.size() == static_cast<std::size_t>(dev_.size());
    std::vector<std::vector<std::string>> refs(max_refs, std::vector<std::string>(idx.size()));
    for (std::size_t i = 0; i < idx.size(); ++i)
        for (std::size_t k = 0; k < group[i]->size(); ++k) {
            const int64_t pair = (*group[i])[k];
            refs[k][i] = text ? dev_text_[static_cast<std::size_t>(pair)]
                              : data_.tgt_vocab.decode(dev_.tgt(pair), data_.tgt_tokenizer);
        }
    r.exact = exact_match(hyps, refs).score;
    r.exact_se = share_se(r.exact, K);
    r.bleu = corpus_bleu(hyps, refs).score;
    r.chrf = corpus_chrf(hyps, refs).score;
    r.sampled = K;
    for (std::size_t i = 0; i < std::min<std::size_t>(3, idx.size()); ++i)
        r.examples.push_back(fmt::format(
            "{} ||| {} ||| {}", data_.src_vocab.decode(dev_.src(idx[i]), data_.src_tokenizer),
            hyps[i], refs[0][i]));
    return r;
}

}  // namespace nazar
