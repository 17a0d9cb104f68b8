#include "nazar/data/corpus.h"

#include "nazar/data/extended_vocab.h"

#include "nazar/core/check.h"
#include "nazar/core/threads.h"

#include <algorithm>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <cstdio>
#include <unordered_set>

namespace nazar {

std::string thousands(int64_t n) {
    std::string digits = std::to_string(n < 0 ? -n : n), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return n < 0 ? "-" + out : out;
}

std::string LoadSummary::str() const {
    std::vector<std::string> reasons;
    auto add = [&](int64_t n, const std::string& what) {
        if (n) reasons.push_back(thousands(n) + " " + what);
    };
    add(bad.wrong_tabs, "without exactly one tab");
    add(bad.invalid_utf8, "invalid UTF-8");
    add(empty, "empty side");
    add(too_long, fmt::format("too long (> {} tokens)", max_length));
    add(ratio, fmt::format("length ratio > {:g}", max_length_ratio));
    add(duplicate, duplicate == 1 ? "duplicate" : "duplicates");
    std::string text = fmt::format("{}: {} pairs read, {} kept; dropped: ", name, thousands(read),
                                   thousands(kept));
    if (reasons.empty()) return text + "none";
    for (std::size_t i = 0; i < reasons.size(); ++i) text += (i ? ", " : "") + reasons[i];
    return text;
}

void Corpus::add(std::span<const int32_t> src, std::span<const int32_t> tgt) {
    src_.ids.insert(src_.ids.end(), src.begin(), src.end());
    src_.offsets.push_back(static_cast<int64_t>(src_.ids.size()));
    tgt_.ids.insert(tgt_.ids.end(), tgt.begin(), tgt.end());
    tgt_.offsets.push_back(static_cast<int64_t>(tgt_.ids.size()));
}

void Corpus::add_copy(std::span<const int32_t> src, std::span<const int32_t> tgt,
                      std::span<const std::string> words) {
    NZ_CHECK(size() > 0 && (copy_ || size() == 1) &&
                 static_cast<int64_t>(src_copy_.size() + src.size()) == src_.offsets.back() &&
                 static_cast<int64_t>(tgt_copy_.size() + tgt.size()) == tgt_.offsets.back(),
             "add_copy: extended ids must follow every add, with the pair's lengths");
    copy_ = true;
    src_copy_.insert(src_copy_.end(), src.begin(), src.end());
    tgt_copy_.insert(tgt_copy_.end(), tgt.begin(), tgt.end());
    copy_words_.insert(copy_words_.end(), words.begin(), words.end());
    word_offsets_.push_back(static_cast<int64_t>(copy_words_.size()));
}

void Corpus::pop_back() {
    NZ_CHECK(size() > 0, "pop_back on an empty corpus");
    for (Side* s : {&src_, &tgt_}) {
        s->offsets.pop_back();
        s->ids.resize(static_cast<std::size_t>(s->offsets.back()));
    }
    if (copy_) {
        src_copy_.resize(static_cast<std::size_t>(src_.offsets.back()));
        tgt_copy_.resize(static_cast<std::size_t>(tgt_.offsets.back()));
        word_offsets_.pop_back();
        copy_words_.resize(static_cast<std::size_t>(word_offsets_.back()));
        copy_ = size() > 0;
    }
}

void Corpus::shrink_to_fit() {
    for (Side* s : {&src_, &tgt_}) {
        s->ids.shrink_to_fit();
        s->offsets.shrink_to_fit();
    }
}

std::size_t Corpus::memory_bytes() const {
    std::size_t bytes = 0;
    for (const Side* s : {&src_, &tgt_})
        bytes += s->ids.capacity() * sizeof(int32_t) + s->offsets.capacity() * sizeof(int64_t);
    return bytes;
}

namespace {

// How one side turns text into ids: tokenize and look up a fixed vocabulary (thread-safe, runs
// in parallel), or tokenize to pieces that the serial stage interns for building a vocabulary.
struct SideMap {
    const Tokenizer* tokenizer;
    const Vocab* vocab = nullptr;     // fixed
    PieceCounter* counter = nullptr;  // building
    int64_t* unk = nullptr;
    std::vector<int32_t>
        spm_table{};  // SentencePiece id -> vocabulary id (spm with a fixed vocabulary)

    void prepare() {
        if (counter || tokenizer->kind() != TokenizerKind::spm) return;
        std::vector<bool> special;
        const auto pieces = tokenizer->spm_pieces(&special);
        spm_table.resize(pieces.size());
        for (std::size_t i = 0; i < pieces.size(); ++i)
            spm_table[i] = special[i] ? Vocab::unk : vocab->id(pieces[i]);
    }

    struct Work {
        Pieces pieces;
        std::vector<int32_t> ids;
        std::vector<int> spm_ids;
    };
    // Parallel stage: `ids` holds final ids (fixed vocabulary) or `pieces` the pieces (building).
    void tokenize(std::string_view text, Work& w) const {
        w.ids.clear();
        if (!spm_table.empty()) {
            tokenizer->encode_spm_ids(text, w.spm_ids);
            for (int id : w.spm_ids) w.ids.push_back(spm_table[static_cast<std::size_t>(id)]);
            return;
        }
        tokenizer->encode(text, w.pieces);
        if (!counter) vocab->encode(w.pieces, w.ids);
    }
    int64_t length(const Work& w) const {
        return static_cast<int64_t>(counter ? w.pieces.size() : w.ids.size());
    }
    // Serial stage. Returns whether any id is <unk>.
    bool finish(Work& w) const {
        if (counter) {
            for (auto p : w.pieces.views) w.ids.push_back(counter->intern(p));
            return false;
        }
        const int64_t unks = std::count(w.ids.begin(), w.ids.end(), Vocab::unk);
        *unk += unks;
        return unks > 0;
    }
};

// The pieces of a tokenized side: the tokenizer's (char/word), or the vocabulary's pieces of the
// ids (SentencePiece with a fixed vocabulary, where only ids are produced).
std::vector<std::string_view> pieces_of(const SideMap& m, const SideMap::Work& w) {
    if (m.spm_table.empty()) return w.pieces.views;
    std::vector<std::string_view> out;
    for (int32_t id : w.ids) out.push_back(m.vocab->piece(id));
    return out;
}

// Copy attention: the extended ids of one pair (data/extended_vocab.h).
ExtendedVocab extended_ids(const SideMap& sm, const SideMap::Work& s, const SideMap& tm,
                           const SideMap::Work& t, std::vector<int32_t>& src,
                           std::vector<int32_t>& tgt) {
    src.clear();
    tgt.clear();
    ExtendedVocab ext = extend_source(pieces_of(sm, s), *tm.vocab, src);
    const std::vector<std::string_view> tp = pieces_of(tm, t);
    for (std::size_t j = 0; j < t.ids.size(); ++j)
        tgt.push_back(t.ids[j] != Vocab::unk ? t.ids[j] : ext.id(tp[j], *tm.vocab));
    return ext;
}

// Exact duplicate detection over pairs already stored in the corpus (by index).
struct PairHash {
    const Corpus* corpus;
    std::size_t operator()(int64_t i) const {
        uint64_t h = 0x9E3779B97F4A7C15ull;
        auto mix = [&h](uint64_t v) {
            h = (h ^ v) * 0xBF58476D1CE4E5B9ull;
            h ^= h >> 31;
        };
        for (int32_t id : corpus->src(i)) mix(static_cast<uint32_t>(id));
        mix(0xFFFFFFFFull + 1);  // side separator
        for (int32_t id : corpus->tgt(i)) mix(static_cast<uint32_t>(id));
        return static_cast<std::size_t>(h);
    }
};
struct PairEqual {
    const Corpus* corpus;
    bool operator()(int64_t a, int64_t b) const {
        const auto sa = corpus->src(a), sb = corpus->src(b), ta = corpus->tgt(a),
                   tb = corpus->tgt(b);
        return std::equal(sa.begin(), sa.end(), sb.begin(), sb.end()) &&
               std::equal(ta.begin(), ta.end(), tb.begin(), tb.end());
    }
};

// The length filters (empty side, too long, length ratio): true, counted in `s`, when the pair
// with side lengths ns and nt is dropped.
bool dropped_by_length(const FilterOptions& f, int64_t ns, int64_t nt, LoadSummary& s) {
    const bool empty = ns == 0 || nt == 0;
    if (empty && f.drop_empty) {
        ++s.empty;
        return true;
    }
    if (f.max_length > 0 && (ns > f.max_length || nt > f.max_length)) {
        ++s.too_long;
        return true;
    }
    if (!empty && f.max_length_ratio > 0.f &&
        static_cast<double>(std::max(ns, nt)) >
            f.max_length_ratio * static_cast<double>(std::min(ns, nt))) {
        ++s.ratio;
        return true;
    }
    return false;
}

// The counts of a finished load; an Error for an empty corpus or one emptied by filtering.
void count_pairs(const PairReader& reader, const Corpus& corpus, LoadSummary& s) {
    s.read = reader.lines_read();
    s.bad = reader.bad_lines();
    s.kept = corpus.size();
    s.src_tokens = corpus.src_tokens();
    s.tgt_tokens = corpus.tgt_tokens();
    NZ_CHECK(s.read == s.kept + s.dropped(),
             "pair accounting broken: read {} != kept {} + dropped {}", s.read, s.kept,
             s.dropped());
    if (s.read == 0) throw Error(fmt::format("{}: empty corpus (no lines)", s.name));
    if (s.kept == 0)
        throw Error(fmt::format("{}: no pairs left after filtering ({})", s.name, s.str()));
}

Corpus load(const CorpusFiles& files, SideMap& src_map, SideMap& tgt_map, const LoadOptions& o,
            LoadSummary& s) {
    const FilterOptions& f = o.filter;
    NZ_CHECK_USAGE(f.max_length >= 0, "max_length must be >= 0 (0 = no limit), got {}",
                   f.max_length);
    NZ_CHECK_USAGE(f.max_length_ratio == 0.f || f.max_length_ratio >= 1.f,
                   "max_length_ratio must be 0 (no limit) or >= 1, got {}", f.max_length_ratio);
    s.name = files.name();
    src_map.prepare();
    tgt_map.prepare();
    s.max_length = f.max_length;
    s.max_length_ratio = f.max_length_ratio;

    Corpus corpus;
    PairReader reader(files, o.skip_bad_lines);
    std::unordered_set<int64_t, PairHash, PairEqual> seen(1024, PairHash{&corpus},
                                                          PairEqual{&corpus});
    // Pairs go through in blocks: tokenized in parallel (the expensive part), then filtered,
    // interned and stored in order, so the result does not depend on the thread count.
    constexpr int kBlock = 4096;
    struct Slot {
        std::string src, tgt;
        SideMap::Work s, t;
        int64_t line = 0;
    };
    NZ_CHECK(!o.copy_ids || (src_map.vocab && tgt_map.vocab),
             "copy ids need fixed vocabularies (load_corpus)");
    std::vector<int32_t> src_copy, tgt_copy;
    std::vector<Slot> block(kBlock);
    if (o.kept_lines) o.kept_lines->clear();
    RawPair pair;
    bool more = true;
    while (more) {
        int n = 0;
        while (n < kBlock && (more = reader.next(pair))) {
            block[n].src.assign(pair.src);
            block[n].tgt.assign(pair.tgt);
            block[n].line = pair.line;
            ++n;
        }
        parallel_for(n, 64, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) {
                src_map.tokenize(block[i].src, block[i].s);
                tgt_map.tokenize(block[i].tgt, block[i].t);
            }
        });
        for (int i = 0; i < n; ++i) {
            Slot& slot = block[i];
            const int64_t ns = src_map.length(slot.s), nt = tgt_map.length(slot.t);
            if (dropped_by_length(f, ns, nt, s)) continue;
            // A pair with <unk> is never called a duplicate: different words may hide behind it.
            const bool unk_s = src_map.finish(slot.s), unk_t = tgt_map.finish(slot.t);
            corpus.add(slot.s.ids, slot.t.ids);
            if (o.copy_ids) {
                const ExtendedVocab ext =
                    extended_ids(src_map, slot.s, tgt_map, slot.t, src_copy, tgt_copy);
                corpus.add_copy(src_copy, tgt_copy, ext.words);
            }
            if (f.drop_duplicates && !unk_s && !unk_t && !seen.insert(corpus.size() - 1).second) {
                corpus.pop_back();
                ++s.duplicate;
                continue;
            }
            if (o.tgt_text) o.tgt_text->push_back(slot.tgt);
            if (o.src_text) o.src_text->push_back(slot.src);
            if (o.kept_lines) o.kept_lines->push_back(slot.line);
            if (src_map.counter)
                for (int32_t id : slot.s.ids) src_map.counter->count(id);
            if (tgt_map.counter)
                for (int32_t id : slot.t.ids) tgt_map.counter->count(id);
        }
    }
    count_pairs(reader, corpus, s);
    corpus.shrink_to_fit();
#ifdef __GLIBC__
    malloc_trim(0);  // hand the growth copies of the id arrays back to the system
#endif
    return corpus;
}

void finish(const LoadOptions& o, const LoadSummary& s, LoadSummary* out) {
    if (o.print_summary) std::fprintf(stderr, "%s\n", s.str().c_str());
    if (out) *out = s;
}

// Final ids for provisional ones; counts the pieces that fell below min_freq / max_size.
void apply_remap(std::vector<int32_t>& ids, const std::vector<int32_t>& remap, int64_t& unk) {
    for (int32_t& id : ids) {
        id = remap[static_cast<std::size_t>(id)];
        unk += id == Vocab::unk;
    }
}

}  // namespace

Corpus load_corpus(const CorpusFiles& files, const Tokenizer& src_tokenizer,
                   const Tokenizer& tgt_tokenizer, const Vocab& src_vocab, const Vocab& tgt_vocab,
                   const LoadOptions& options, LoadSummary* summary) {
    LoadSummary s;
    SideMap src{.tokenizer = &src_tokenizer, .vocab = &src_vocab, .unk = &s.src_unk};
    SideMap tgt{.tokenizer = &tgt_tokenizer, .vocab = &tgt_vocab, .unk = &s.tgt_unk};
    Corpus corpus = load(files, src, tgt, options, s);
    finish(options, s, summary);
    return corpus;
}

Corpus load_corpus_building_vocabs(const CorpusFiles& files, const Tokenizer& src_tokenizer,
                                   const Tokenizer& tgt_tokenizer, const VocabBuild& build,
                                   const LoadOptions& options, Vocab& src_vocab, Vocab& tgt_vocab,
                                   LoadSummary* summary) {
    const bool src_spm = src_tokenizer.kind() == TokenizerKind::spm;
    const bool tgt_spm = tgt_tokenizer.kind() == TokenizerKind::spm;
    if (build.shared) {
        NZ_CHECK_USAGE(
            src_tokenizer.kind() == tgt_tokenizer.kind() &&
                (!src_spm || src_tokenizer.spm_model_proto() == tgt_tokenizer.spm_model_proto()),
            "a shared vocabulary needs the same tokenizer on both sides (got {} and {})",
            to_string(src_tokenizer.kind()), to_string(tgt_tokenizer.kind()));
    }
    LoadSummary s;
    PieceCounter src_counter, tgt_counter;
    PieceCounter& tgt_counter_used = build.shared ? src_counter : tgt_counter;
    if (src_spm) src_vocab = Vocab::from_spm(src_tokenizer);
    if (tgt_spm) tgt_vocab = build.shared ? src_vocab : Vocab::from_spm(tgt_tokenizer);
    SideMap src{.tokenizer = &src_tokenizer, .unk = &s.src_unk};
    SideMap tgt{.tokenizer = &tgt_tokenizer, .unk = &s.tgt_unk};
    if (src_spm)
        src.vocab = &src_vocab;
    else
        src.counter = &src_counter;
    if (tgt_spm)
        tgt.vocab = &tgt_vocab;
    else
        tgt.counter = &tgt_counter_used;
    Corpus corpus = load(files, src, tgt, options, s);

    std::vector<int32_t> remap;
    if (!src_spm) {
        src_vocab = Vocab::build(src_counter, build.src, &remap);
        apply_remap(corpus.src_side().ids, remap, s.src_unk);
        if (build.shared) {
            tgt_vocab = src_vocab;
            apply_remap(corpus.tgt_side().ids, remap, s.tgt_unk);
        }
    }
    if (!tgt_spm && !build.shared) {
        tgt_vocab = Vocab::build(tgt_counter, build.tgt, &remap);
        apply_remap(corpus.tgt_side().ids, remap, s.tgt_unk);
    }
    finish(options, s, summary);
    return corpus;
}

}  // namespace nazar
