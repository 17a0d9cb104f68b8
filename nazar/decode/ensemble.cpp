// Ensemble decoding (ensemble.h).
#include "nazar/decode/ensemble.h"

#include "nazar/core/check.h"

#include <fmt/format.h>

namespace nazar {

namespace {
std::vector<DecodeSession> sessions(const std::vector<const Seq2Seq*>& models) {
    std::vector<DecodeSession> out;
    out.reserve(models.size());
    for (const Seq2Seq* m : models) {
        NZ_CHECK(m != nullptr, "ensemble: a null member");
        out.emplace_back(*m);
    }
    return out;
}
std::vector<DecodeSession*> pointers(std::vector<DecodeSession>& sessions) {
    std::vector<DecodeSession*> out;
    for (DecodeSession& s : sessions) out.push_back(&s);
    return out;
}
}  // namespace

Ensemble::Ensemble(std::vector<const Seq2Seq*> members, int attention_member)
    : own_(sessions(members)), members_(pointers(own_)), attention_member_(attention_member) {
    check();
}

Ensemble::Ensemble(Sessions sessions, int attention_member)
    : members_(std::move(sessions.each)), attention_member_(attention_member) {
    for (const DecodeSession* s : members_) NZ_CHECK(s != nullptr, "ensemble: a null member");
    check();
}

void Ensemble::check() const {
    NZ_CHECK(!members_.empty(), "ensemble: no members");
    const int attention_member = attention_member_;
    const int M = size();
    if (attention_member != kMeanAttention && (attention_member < 0 || attention_member >= M))
        throw UsageError(fmt::format(
            "ensemble attention: member {} does not exist (the ensemble has {} member{}: 0..{}, "
            "or mean)",
            attention_member, M, M == 1 ? "" : "s", M - 1));
    const ModelConfig& a = members_[0]->config();
    for (int m = 1; m < M; ++m)
        NZ_CHECK_USAGE(members_[m]->config().copy_attention == a.copy_attention,
                       "ensemble: member {} {} copy attention and member 0 {}: members must all "
                       "have it or all lack it",
                       m, a.copy_attention ? "lacks" : "has",
                       a.copy_attention ? "has" : "does not");
    for (int m = 1; m < M; ++m) {
        const ModelConfig& b = members_[m]->config();
        NZ_CHECK_INPUT(b.tgt_vocab_size == a.tgt_vocab_size,
                       "ensemble: member {} has a target vocabulary of {} entries, member 0 of {}: "
                       "members must share the target vocabulary",
                       m, b.tgt_vocab_size, a.tgt_vocab_size);
        NZ_CHECK_INPUT(b.src_vocab_size == a.src_vocab_size,
                       "ensemble: member {} has a source vocabulary of {} entries, member 0 of {}: "
                       "members read the same source ids",
                       m, b.src_vocab_size, a.src_vocab_size);
        const SpecialIds &x = a.special_ids, &y = b.special_ids;
        NZ_CHECK_INPUT(x.pad == y.pad && x.unk == y.unk && x.bos == y.bos && x.eos == y.eos,
                       "ensemble: member {} has other special ids than member 0", m);
    }
}

void Ensemble::set_copy_source(Source& src, std::span<const int32_t> ids, int ext_vocab) const {
    src.m.resize(members_.size());
    for (std::size_t m = 0; m < members_.size(); ++m)
        members_[m]->set_copy_source(src.m[m], ids, ext_vocab);
}

std::span<const float> Ensemble::last_p_gen() {
    if (!config().copy_attention) return {};
    const std::span<const float> first = members_[0]->last_p_gen();
    p_gen_.assign(first.begin(), first.end());
    for (std::size_t m = 1; m < members_.size(); ++m) {
        const std::span<const float> pm = members_[m]->last_p_gen();
        for (std::size_t i = 0; i < p_gen_.size(); ++i) p_gen_[i] += pm[i];
    }
    for (float& p : p_gen_) p /= static_cast<float>(members_.size());
    return p_gen_;
}

void Ensemble::encode(std::span<const int32_t> src, std::span<const int> lengths, int S,
                      Source& out, int rows_per_sentence) {
    out.m.resize(members_.size());
    for (std::size_t m = 0; m < members_.size(); ++m)
        members_[m]->encode(src, lengths, S, out.m[m], rows_per_sentence);
}

void Ensemble::select_rows(const Source& in, std::span<const int> rows, Source& out) const {
    out.m.resize(members_.size());
    for (std::size_t m = 0; m < members_.size(); ++m)
        members_[m]->select_rows(in.m[m], rows, out.m[m]);
}

void Ensemble::init_state(const Source& src, State& state) {
    state.m.resize(members_.size());
    for (std::size_t m = 0; m < members_.size(); ++m) members_[m]->init_state(src.m[m], state.m[m]);
}

void Ensemble::select_state(const State& in, std::span<const int> rows, State& out) const {
    out.m.resize(members_.size());
    for (std::size_t m = 0; m < members_.size(); ++m)
        members_[m]->select_state(in.m[m], rows, out.m[m]);
}

void Ensemble::step(std::span<const int32_t> prev, const Source& src, State& state,
                    TensorView log_probs, TensorView attention) {
    const int M = size();
    const int64_t N = log_probs.dim(0), V = log_probs.dim(1);
    const bool want_attn = attention.numel() > 0;
    const bool mean_attn = want_attn && attention_member_ == kMeanAttention;
    if (M > 1) {
        if (lp_scratch_.numel() < N * V) lp_scratch_ = Tensor({N, V});
        if (want_attn && attn_scratch_.numel() < attention.numel())
            attn_scratch_ = Tensor({attention.dim(0), attention.dim(1)});
    }
    float* lp = log_probs.data();
    float* at = want_attn ? attention.data() : nullptr;
    const int64_t nv = N * V, ns = want_attn ? attention.numel() : 0;
    for (int m = 0; m < M; ++m) {
        // Member 0 writes the outputs; the others a scratch that is added in. The attention
        // output gets the chosen member's rows, or every member's for the mean.
        const bool first = m == 0;
        const TensorView lp_m =
            first ? log_probs : TensorView(lp_scratch_.data(), log_probs.shape());
        TensorView at_m;  // empty: not needed from this member
        if (mean_attn)
            at_m = first ? attention : TensorView(attn_scratch_.data(), attention.shape());
        else if (want_attn && m == attention_member_)
            at_m = attention;
        members_[m]->step(prev, src.m[m], state.m[m], lp_m, at_m);
        if (!first) {
            const float* s = lp_m.data();
            for (int64_t i = 0; i < nv; ++i) lp[i] += s[i];
            if (mean_attn) {
                const float* a = at_m.data();
                for (int64_t i = 0; i < ns; ++i) at[i] += a[i];
            }
        }
    }
    if (M > 1) {
        const float count = static_cast<float>(M);
        for (int64_t i = 0; i < nv; ++i) lp[i] /= count;
        if (mean_attn)
            for (int64_t i = 0; i < ns; ++i) at[i] /= count;
    }
}

}  // namespace nazar
