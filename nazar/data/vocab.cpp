#include "nazar/data/vocab.h"

#include "nazar/core/check.h"
#include "nazar/core/text_limits.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <numeric>

namespace nazar {

int32_t PieceCounter::intern(std::string_view piece) {
    auto it = map_.find(piece);
    if (it != map_.end()) return it->second;
    const int32_t id = static_cast<int32_t>(pieces_.size());
    it = map_.emplace(std::string(piece), id).first;
    pieces_.push_back(it->first);
    counts_.push_back(0);
    return id;
}

void Vocab::index() {
    map_.clear();
    map_.reserve(pieces_.size());
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
        const bool fresh = map_.emplace(pieces_[i], static_cast<int32_t>(i) + kNumSpecials).second;
        NZ_CHECK_INPUT(fresh, "vocabulary lists the piece '{}' twice", pieces_[i]);
    }
}

Vocab Vocab::build(const PieceCounter& counter, const VocabOptions& o,
                   std::vector<int32_t>* remap) {
    NZ_CHECK_USAGE(
        o.max_size == 0 || o.max_size > kNumSpecials,
        "vocabulary max_size must be 0 (no limit) or more than {} (the specials), got {}",
        kNumSpecials, o.max_size);
    NZ_CHECK_USAGE(o.min_freq >= 1, "vocabulary min_freq must be at least 1, got {}", o.min_freq);
    const auto& counts = counter.counts();
    const auto& pieces = counter.pieces();
    std::vector<int32_t> order;
    for (int32_t i = 0; i < counter.size(); ++i)
        if (counts[i] >= o.min_freq) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return counts[a] != counts[b] ? counts[a] > counts[b] : pieces[a] < pieces[b];
    });
    if (o.max_size > 0 && static_cast<int64_t>(order.size()) > o.max_size - kNumSpecials)
        order.resize(o.max_size - kNumSpecials);
    Vocab v;
    v.pieces_.reserve(order.size());
    for (int32_t i : order) v.pieces_.emplace_back(pieces[i]);
    v.index();
    if (remap) {
        remap->assign(counter.size(), unk);
        for (std::size_t k = 0; k < order.size(); ++k)
            (*remap)[order[k]] = static_cast<int32_t>(k) + kNumSpecials;
    }
    return v;
}

Vocab Vocab::from_pieces(std::span<const std::string> pieces) {
    Vocab v;
    v.pieces_.assign(pieces.begin(), pieces.end());
    v.index();
    return v;
}

Vocab Vocab::from_spm(const Tokenizer& spm) {
    std::vector<bool> special;
    const auto all = spm.spm_pieces(&special);
    std::vector<std::string> pieces;
    for (std::size_t i = 0; i < all.size(); ++i)
        if (!special[i]) pieces.push_back(all[i]);
    return from_pieces(pieces);
}

int32_t Vocab::id(std::string_view piece) const {
    const auto it = map_.find(piece);
    return it == map_.end() ? unk : it->second;
}

std::string_view Vocab::piece(int32_t id) const {
    NZ_CHECK(id >= 0 && id < size(), "token id {} out of range [0, {})", id, size());
    return id < kNumSpecials ? kSpecialNames[id] : std::string_view(pieces_[id - kNumSpecials]);
}

void Vocab::encode(const Pieces& pieces, std::vector<int32_t>& out) const {
    for (auto p : pieces.views) out.push_back(id(p));
}

std::string Vocab::decode(std::span<const int32_t> ids, const Tokenizer& tokenizer) const {
    std::vector<std::string_view> pieces;
    pieces.reserve(ids.size());
    for (int32_t id : ids) {
        if (id == eos) break;
        if (id == pad || id == bos) continue;
        pieces.push_back(piece(id));
    }
    return tokenizer.decode(std::span<const std::string_view>(pieces));
}

std::string Vocab::to_json() const {
    nlohmann::json j;
    j["specials"] = nlohmann::json::array();
    for (auto s : kSpecialNames) j["specials"].push_back(std::string(s));
    j["pieces"] = pieces_;
    return j.dump();
}

Vocab Vocab::from_json(std::string_view json) try {
    check_nesting(json, "vocabulary metadata", TextSyntax::json);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(json);
    } catch (const nlohmann::json::exception& e) {
        throw Error(fmt::format("vocabulary metadata is not valid JSON: {}", excerpt(e.what())));
    }
    NZ_CHECK_INPUT(j.is_object() && j.contains("pieces") && j["pieces"].is_array(),
                   "vocabulary metadata has no \"pieces\" array");
    if (j.contains("specials")) {
        const auto specials = j["specials"].get<std::vector<std::string>>();
        NZ_CHECK_INPUT(specials.size() == kNumSpecials &&
                           std::equal(specials.begin(), specials.end(), std::begin(kSpecialNames)),
                       "vocabulary specials must be <pad> <unk> <s> </s>, got {} entries",
                       specials.size());
    }
    Vocab v;
    v.pieces_ = j["pieces"].get<std::vector<std::string>>();
    v.index();
    return v;
} catch (
    const nlohmann::json::type_error& e) {  // "pieces"/"specials" that are not lists of strings
    throw Error(fmt::format("vocabulary metadata: {}", e.what()));
}

}  // namespace nazar
