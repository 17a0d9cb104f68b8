#include "nazar/train/training_source.h"

#include "nazar/core/check.h"
#include "nazar/data/pipeline.h"
#include "nazar/train/trainer.h"

#include <fmt/format.h>

#include <memory>
#include <utility>

namespace nazar {

TrainingSource TrainingSource::from_text(Tokenizer src_tokenizer, Tokenizer tgt_tokenizer,
                                         Vocab src_vocab, Vocab tgt_vocab,
                                         std::span<const TextPair> train,
                                         std::span<const TextPair> dev) {
    TrainingSource s{.src_tokenizer = std::move(src_tokenizer),
                     .tgt_tokenizer = std::move(tgt_tokenizer),
                     .src_vocab = std::move(src_vocab),
                     .tgt_vocab = std::move(tgt_vocab)};
    const auto add = [&](Corpus& to, std::span<const TextPair> pairs, const char* name) {
        for (std::size_t i = 0; i < pairs.size(); ++i) {
            const std::string where = fmt::format("{} pair {}", name, i + 1);
            to.add(encode_line(pairs[i].first, s.src_tokenizer, s.src_vocab, where + ", source"),
                   encode_line(pairs[i].second, s.tgt_tokenizer, s.tgt_vocab, where + ", target"));
        }
    };
    add(s.train, train, "training");
    add(s.dev, dev, "dev");
    for (const TextPair& p : dev) {
        s.dev_src.push_back(p.first);
        s.dev_tgt.push_back(p.second);
    }
    return s;
}

void check_in_memory_config(const TrainConfig& cfg) {
    for (const char* key : {"train", "train_src", "train_tgt", "dev", "dev_src", "dev_tgt",
                            "train_alignment", "dev_alignment"}) {
        const std::string value = get_config_value(cfg, *find_config_key(key));
        if (!value.empty())
            throw UsageError(fmt::format(
                "{} is set ('{}') but the data is given in memory: leave the data files unset", key,
                value));
    }
    if (cfg.copy_attention)
        throw UsageError("copy_attention needs the data from files (the extended vocabularies)");
    TrainConfig files = cfg;
    // A training set is given (the memory's); "-" names no file to check. (assign, not = "-":
    // gcc 12's -Wrestrict.)
    files.train.assign(1, '-');
    files.average_best = 0;  // the dev set in memory is checked when it is taken (take_data)
    validate_config(files);
}

// The Trainer's data from memory (trainer.h): the vocabularies and tokenizers as given.
std::unique_ptr<Checkpoint> Trainer::take_data(TrainingSource&& data) {
    NZ_CHECK_INPUT(data.train.size() > 0, "no training pairs in the data given in memory");
    NZ_CHECK_INPUT(data.dev_src.size() == static_cast<std::size_t>(data.dev.size()) &&
                       data.dev_tgt.size() == data.dev_src.size(),
                   "dev data in memory: {} pairs of ids but {} sources and {} targets as text",
                   data.dev.size(), data.dev_src.size(), data.dev_tgt.size());
    data_.src_tokenizer = std::move(data.src_tokenizer);
    data_.tgt_tokenizer = std::move(data.tgt_tokenizer);
    data_.src_vocab = std::move(data.src_vocab);
    data_.tgt_vocab = std::move(data.tgt_vocab);
    data_.corpus = std::move(data.train);
    data_.summary.name = "memory";
    data_.summary.read = data_.summary.kept = data_.corpus.size();
    dev_ = std::move(data.dev);
    dev_src_text_ = std::move(data.dev_src);
    dev_text_ = std::move(data.dev_tgt);
    has_dev_ = dev_.size() > 0;
    if (cfg_.average_best > 0 && !has_dev_)
        throw UsageError(fmt::format(
            "average_best {} needs dev pairs: it keeps the best validations", cfg_.average_best));
    group_dev_sources();
    return nullptr;
}

}  // namespace nazar
