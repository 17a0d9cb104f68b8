// Alignments, unknown-word replacement and forced alignment (alignment.h).
#include "nazar/decode/alignment.h"

#include "nazar/decode/step_types.h"

#include "nazar/core/check.h"
#include "nazar/core/fileio.h"
#include "nazar/core/text_limits.h"
#include "nazar/data/reader.h"
#include "nazar/data/vocab.h"
#include "nazar/models/seq2seq.h"

#include <fmt/format.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstring>

namespace nazar {

AlignmentFormat parse_alignment_format(std::string_view name) {
    if (name == "none") return AlignmentFormat::none;
    if (name == "hard") return AlignmentFormat::hard;
    if (name == "soft") return AlignmentFormat::soft;
    throw UsageError(fmt::format("alignment format must be none, hard or soft, got '{}'", name));
}

namespace {
void check_rows(ConstTensorView attention, int n_tgt, const char* what) {
    NZ_CHECK(attention.ndim() == 2 || attention.numel() == 0,
             "{}: attention must be (n, S_b), got {} dims", what, attention.ndim());
    const int n = attention.ndim() == 2 ? attention.dim(0) : 0;
    NZ_CHECK(n_tgt >= 0 && n_tgt <= n, "{}: {} target tokens but {} attention rows", what, n_tgt,
             n);
}
}  // namespace

std::vector<AlignmentLink> hard_alignment(ConstTensorView attention, int n_tgt) {
    check_rows(attention, n_tgt, "hard_alignment");
    std::vector<AlignmentLink> links;
    const int S = attention.ndim() == 2 ? attention.dim(1) : 0;
    if (S == 0) return links;
    for (int j = 0; j < n_tgt; ++j) {
        const float* row = attention.data() + static_cast<int64_t>(j) * S;
        const float* best = std::max_element(row, row + S);  // first maximum
        // a row of zeros attended nowhere (monotonic attention past the end): no link
        if (*best > 0.0f) links.push_back({static_cast<int>(best - row), j});
    }
    return links;
}

std::string format_hard_alignment(std::span<const AlignmentLink> links) {
    std::string out;
    for (const AlignmentLink& l : links) {
        if (!out.empty()) out += ' ';
        fmt::format_to(std::back_inserter(out), "{}-{}", l.src, l.tgt);
    }
    return out;
}

std::string format_soft_alignment(ConstTensorView attention, int n_tgt) {
    check_rows(attention, n_tgt, "format_soft_alignment");
    const int S = attention.ndim() == 2 ? attention.dim(1) : 0;
    std::string out = "[";
    for (int j = 0; j < n_tgt; ++j) {
        out += j ? ",[" : "[";
        for (int i = 0; i < S; ++i)
            fmt::format_to(std::back_inserter(out), "{}{:.6g}", i ? "," : "", attention.at(j, i));
        out += ']';
    }
    out += ']';
    return out;
}

UnkDictionary load_unk_dictionary(const std::string& path) {
    UnkDictionary dict;
    // A regular file (or a pipe): /dev/zero or /dev/urandom as a dictionary would never end.
    if (const std::string why = file_problem(path, false); !why.empty()) {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode))
            throw Error(fmt::format("cannot read the --dict file '{}': it {}", path, why));
    }
    LineReader reader(path, kDefaultMaxLineBytes);
    std::string_view line;
    while (reader.next(line)) {
        if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
        const auto tab = line.find('\t');
        NZ_CHECK_INPUT(tab != std::string_view::npos,
                       "{}:{}: expected 'source<TAB>target', got '{}'", path, reader.line_number(),
                       excerpt(line));
        dict.emplace(std::string(line.substr(0, tab)),
                     std::string(line.substr(tab + 1)));  // first wins
    }
    return dict;
}

std::vector<std::string> output_pieces(std::span<const int32_t> tokens, ConstTensorView attention,
                                       const Vocab& tgt_vocab, int32_t eos, int32_t unk,
                                       bool replace_unk, std::span<const std::string> src_pieces,
                                       const UnkDictionary* dictionary) {
    std::vector<std::string> out;
    const int S = attention.ndim() == 2 ? attention.dim(1) : 0;
    if (replace_unk)
        NZ_CHECK(static_cast<int>(src_pieces.size()) == S,
                 "replace-unk: {} source pieces but attention over {}", src_pieces.size(), S);
    for (std::size_t j = 0; j < tokens.size() && tokens[j] != eos; ++j) {
        if (tokens[j] != unk || !replace_unk || S == 0) {
            out.emplace_back(tgt_vocab.piece(tokens[j]));
            continue;
        }
        NZ_CHECK(static_cast<int>(j) < attention.dim(0),
                 "replace-unk: token {} has no attention row", j);
        const float* row = attention.data() + static_cast<int64_t>(j) * S;
        const float* best = std::max_element(row, row + S);
        if (!(*best > 0.0f)) {  // attended nowhere (monotonic past the end): nothing to copy
            out.emplace_back(tgt_vocab.piece(tokens[j]));
            continue;
        }
        const std::string& src = src_pieces[best - row];
        const auto it = dictionary ? dictionary->find(src) : UnkDictionary::const_iterator{};
        out.push_back(dictionary && it != dictionary->end() ? it->second : src);
    }
    return out;
}

std::vector<ForcedAlignment> forced_alignment(const Seq2Seq& model, std::span<const int32_t> src,
                                              std::span<const int> lengths, int S,
                                              std::span<const std::vector<int32_t>> targets,
                                              std::span<const int32_t> copy_src) {
    DecodeSession session(model);
    return forced_alignment(session, src, lengths, S, targets, copy_src);
}

std::vector<ForcedAlignment> forced_alignment(DecodeSession& model, std::span<const int32_t> src,
                                              std::span<const int> lengths, int S,
                                              std::span<const std::vector<int32_t>> targets,
                                              std::span<const int32_t> copy_src) {
    // teacher forcing: monotonic attention's expected alignment, as training and scoring see it
    model.set_hard_monotonic(false);
    struct Restore {
        DecodeSession& m;
        ~Restore() { m.set_hard_monotonic(true); }
    } restore{model};
    const int B = static_cast<int>(lengths.size());
    NZ_CHECK(static_cast<int>(targets.size()) == B, "forced_alignment: {} sources but {} targets",
             B, targets.size());
    const auto& sp = model.config().special_ids;
    std::vector<ForcedAlignment> out(B);
    if (B == 0) return out;
    EncodedSource enc;
    model.encode(src, lengths, S, enc);
    const int V = detail::prepare_copy(model, enc, copy_src);  // extended with copy attention
    int T = 0;  // steps: the longest target plus its </s>
    for (int b = 0; b < B; ++b) {
        T = std::max(T, static_cast<int>(targets[b].size()) + 1);
        out[b].attention = Tensor({static_cast<int64_t>(targets[b].size()) + 1, lengths[b]});
        for (int32_t y : targets[b])
            NZ_CHECK(y >= 0 && y < V, "forced_alignment: target id {} outside [0, {})", y, V);
    }
    DecoderState state;
    model.init_state(enc, state);
    Tensor log_probs({B, V}), attn({B, S});
    std::vector<int32_t> prev(B, sp.bos);
    for (int t = 0; t < T; ++t) {
        model.step(prev, enc, state, log_probs, attn);
        for (int b = 0; b < B; ++b) {
            const int Tb = static_cast<int>(targets[b].size());
            if (t > Tb) continue;  // padding steps of shorter targets
            const int32_t y = t < Tb ? targets[b][t] : sp.eos;
            out[b].log_prob += log_probs.at(b, y);
            if (const auto pg = model.last_p_gen(); !pg.empty()) out[b].p_gen.push_back(pg[b]);
            if (lengths[b] > 0)
                std::memcpy(out[b].attention.data() + static_cast<int64_t>(t) * lengths[b],
                            attn.data() + static_cast<int64_t>(b) * S, sizeof(float) * lengths[b]);
            prev[b] = t < Tb ? y : sp.pad;
        }
    }
    return out;
}

}  // namespace nazar
