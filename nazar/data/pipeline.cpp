#include "nazar/data/pipeline.h"

#include "nazar/core/check.h"
#include "nazar/data/utf8.h"

namespace nazar {

Tokenizer make_tokenizer(const TokenizerOptions& o, const CorpusFiles& files, int side,
                         bool skip_bad_lines) {
    switch (o.kind) {
        case TokenizerKind::character:
            return Tokenizer::character();
        case TokenizerKind::word:
            return Tokenizer::word();
        case TokenizerKind::spm:
            break;
    }
    if (!o.spm_model.empty()) return Tokenizer::spm_from_file(o.spm_model);
    PairReader reader(files, skip_bad_lines);
    RawPair pair;
    bool pending_tgt = false;  // side 2: the target of the pair just given
    auto next = [&](std::string& out) {
        if (pending_tgt) {
            pending_tgt = false;
            out.assign(pair.tgt);
            return true;
        }
        if (!reader.next(pair)) return false;
        out.assign(side == 1 ? pair.tgt : pair.src);
        pending_tgt = side == 2;
        return true;
    };
    return Tokenizer::train_spm(next, o.spm);
}

TrainingData prepare_training_data(const CorpusFiles& files, const DataOptions& o) {
    TrainingData d;
    const bool skip = o.load.skip_bad_lines;
    if (o.shared_vocab) {
        d.src_tokenizer = make_tokenizer(o.src_tokenizer, files, 2, skip);
        d.tgt_tokenizer = d.src_tokenizer;
    } else {
        d.src_tokenizer = make_tokenizer(o.src_tokenizer, files, 0, skip);
        d.tgt_tokenizer = make_tokenizer(o.tgt_tokenizer, files, 1, skip);
    }
    const VocabBuild build{.src = o.src_vocab,
                           .tgt = o.shared_vocab ? o.src_vocab : o.tgt_vocab,
                           .shared = o.shared_vocab};
    d.corpus = load_corpus_building_vocabs(files, d.src_tokenizer, d.tgt_tokenizer, build, o.load,
                                           d.src_vocab, d.tgt_vocab, &d.summary);
    return d;
}

std::vector<int32_t> encode_line(std::string_view line, const Tokenizer& tokenizer,
                                 const Vocab& vocab, std::string_view where) {
    const std::size_t bad = utf8::find_invalid(line);
    if (bad != utf8::npos)
        throw Error(fmt::format("{}: invalid UTF-8 at byte {} of the line (0x{:02x})", where,
                                bad + 1, static_cast<unsigned char>(line[bad])));
    Pieces pieces;
    tokenizer.encode(line, pieces);
    std::vector<int32_t> ids;
    vocab.encode(pieces, ids);
    return ids;
}

}  // namespace nazar
