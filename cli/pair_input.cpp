#include "cli/pair_input.h"

#include "nazar/data/extended_vocab.h"

#include "nazar/core/check.h"
#include "nazar/data/pipeline.h"

#include <fmt/format.h>

namespace nazar::cli {

TextModel load_text_model(const std::string& path, const char* purpose) {
    LoadedModel m = load_model(path, ParamMode::inference);
    auto meta = [&](const char* key) -> const std::string& {
        const auto it = m.metadata.find(key);
        if (it == m.metadata.end())
            throw Error(fmt::format(
                "'{}' lacks metadata '{}' (vocabularies and tokenizers are needed to {} text)",
                path, key, purpose));
        return it->second;
    };
    Tokenizer src_tok = Tokenizer::from_string(meta(kSrcTokenizerKey));
    Tokenizer tgt_tok = Tokenizer::from_string(meta(kTgtTokenizerKey));
    Vocab src_vocab = Vocab::from_json(meta(kSrcVocabKey));
    Vocab tgt_vocab = Vocab::from_json(meta(kTgtVocabKey));
    return {std::move(m), std::move(src_tok), std::move(tgt_tok), std::move(src_vocab),
            std::move(tgt_vocab)};
}

CorpusFiles pair_files(const std::string& src, const std::string& tgt, const std::string& tsv) {
    const bool two = !src.empty() || !tgt.empty();
    if (tsv.empty() == !two) throw UsageError("give either --tsv F, or --src F and --tgt F");
    if (two && (src.empty() || tgt.empty())) throw UsageError("--src and --tgt go together");
    return tsv.empty() ? CorpusFiles{.src = src, .tgt = tgt} : CorpusFiles{.tsv = tsv};
}

void for_each_pair_batch(
    PairReader& reader, const TextModel& tm, int batch,
    const std::function<void(const IdRows& src, const IdRows& tgt, const CopyRows& copy)>& flush) {
    IdRows src, tgt;
    CopyRows copy;
    const bool copying = tm.loaded.model->config().copy_attention;
    Pieces sp, tp;
    auto emit = [&] {
        if (src.empty()) return;
        flush(src, tgt, copy);
        src.clear();
        tgt.clear();
        copy.src.clear();
        copy.tgt.clear();
    };
    RawPair pair;
    while (reader.next(pair)) {
        const std::string where = fmt::format("{}:{}", reader.name(), pair.line);
        src.push_back(encode_line(pair.src, tm.src_tok, tm.src_vocab, where));
        tgt.push_back(encode_line(pair.tgt, tm.tgt_tok, tm.tgt_vocab, where));
        if (copying) {  // the lines are valid UTF-8 now (encode_line checked)
            tm.src_tok.encode(pair.src, sp);
            tm.tgt_tok.encode(pair.tgt, tp);
            copy.src.emplace_back();
            copy.tgt.emplace_back();
            extend_pair(sp.views, tp.views, tm.tgt_vocab, copy.src.back(), copy.tgt.back());
        }
        if (static_cast<int>(src.size()) >= batch) emit();
    }
    emit();
}

}  // namespace nazar::cli
