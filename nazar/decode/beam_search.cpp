// size: over 500 lines: one batched search (its private sentence state, steps, cancellation).
// Batched beam search (beam_search.h).
//
// Hypotheses are nodes of a per-sentence tree (parent node, token, attention row), so keeping a
// candidate copies one attention row, never a whole prefix. Rows of the decoder state are the
// live hypotheses of the active sentences, concatenated sentence by sentence in rank order.
#include "nazar/decode/beam_search.h"

#include "nazar/core/check.h"
#include "nazar/core/kernels.h"
#include "nazar/core/simd.h"
#include "nazar/core/threads.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <type_traits>

#include "nazar/decode/beam_groups.h"
#include "nazar/decode/shortlist.h"
#include "nazar/decode/step_types.h"
#include "nazar/decode/stream.h"

namespace nazar {

void validate(const BeamOptions& o) {
    if (o.beam_size < 1)
        throw UsageError(fmt::format("beam size must be >= 1, got {}", o.beam_size));
    if (o.n_best < 1 || o.n_best > o.beam_size)
        throw UsageError(
            fmt::format("n-best must be in [1, beam size {}], got {}", o.beam_size, o.n_best));
    if (!(o.length_penalty >= 0))
        throw UsageError(fmt::format("length penalty must be >= 0, got {}", o.length_penalty));
    if (!(o.coverage_penalty >= 0))
        throw UsageError(fmt::format("coverage penalty must be >= 0, got {}", o.coverage_penalty));
    if (!(o.max_length_ratio >= 0))
        throw UsageError(fmt::format("max length ratio must be >= 0, got {}", o.max_length_ratio));
    if (o.max_length < 1)
        throw UsageError(fmt::format("max length must be >= 1, got {}", o.max_length));
    if (o.min_length < 0)
        throw UsageError(fmt::format("min length must be >= 0, got {}", o.min_length));
    if (o.output_group_rows < -1)
        throw UsageError(
            fmt::format("output group rows must be >= -1, got {}", o.output_group_rows));
    if (o.stream && o.n_best != 1)
        throw UsageError(fmt::format("streaming emits one hypothesis: n-best 1, got {}", o.n_best));
}

int max_output_length(int S_b, float max_length_ratio, int max_length_extra, int max_length) {
    // ratio · S_b in float, like the PyTorch reference; the floor and the sum in 64 bits, so a
    // huge ratio or extra (1e9, 2^31 − 8) means "up to max_length", never an int that wrapped
    // around to one token. The product is capped at 2^40 (the result is <= max_length anyway);
    // NaN (an infinite ratio times an empty source) counts as 0.
    const float prod = max_length_ratio * static_cast<float>(S_b);
    const double base = prod > 0 ? std::floor(std::min(static_cast<double>(prod), 0x1p40)) : 0.0;
    const int64_t m = static_cast<int64_t>(base) + max_length_extra;
    return static_cast<int>(std::min<int64_t>(max_length, std::max<int64_t>(1, m)));
}

namespace {

struct Node {
    int parent;  // node index, -1 = the empty prefix
    int32_t token;
    float p_gen = 0;  // copy attention: p_gen of the step that emitted token
};

struct Done {
    int node;
    double log_prob, score;
    bool finished;
    bool constraints_met = true;
};

struct Candidate {
    double total;  // log p of the extended prefix
    int rank;      // live rank of the parent within its sentence
    int32_t token;
};

// Ranking of candidates: higher total first; ties: lower parent rank, then lower token id.
bool better(const Candidate& a, const Candidate& b) {
    if (a.total != b.total) return a.total > b.total;
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.token < b.token;
}

struct Sentence {
    int b = 0, S_b = 0, limit = 0, steps = 0;
    std::vector<Node> nodes;
    std::vector<float> attn;  // (nodes, S_b)
    std::vector<int> live;    // node ids, rank order
    std::vector<double> live_lp;
    std::vector<Done> done;
    // Lexical constraints (null: none) and each live hypothesis's state, in rank order.
    const TokenConstraints* cons = nullptr;
    std::vector<ConstraintState> live_cs;
    StreamReads reads;  // BeamOptions::stream
    bool active = true;
    bool cancelled = false;         // BeamOptions::cancelled: dropped, returns nothing
    bool cancel_requested = false;  // before the first step: dropped after it, unpolled

    void cancel() {  // leaves the batch now, giving back what its search held
        cancelled = true, active = false;
        nodes = {}, attn = {}, live = {}, live_lp = {}, done = {}, live_cs = {};
    }

    int length(int node) const {
        int n = 0;
        for (; node >= 0; node = nodes[node].parent) ++n;
        return n;
    }
    // (n, S_b) attention of the path ending at `node`.
    Tensor path_attention(int node) const {
        const int n = length(node);
        Tensor a({n, S_b});
        for (int t = n - 1; t >= 0; --t, node = nodes[node].parent)
            if (S_b > 0)
                std::memcpy(a.data() + static_cast<int64_t>(t) * S_b,
                            &attn[static_cast<std::size_t>(node) * S_b], sizeof(float) * S_b);
        return a;
    }
    void finish(int node, double log_prob, bool finished, const BeamOptions& o,
                bool constraints_met = true) {
        const Tensor a = path_attention(node);
        done.push_back({node, log_prob,
                        ranking_score(log_prob, a, o.length_penalty, o.coverage_penalty), finished,
                        constraints_met});
    }
    // The number of leading tokens shared by every hypothesis that can still be returned first
    // (BeamOptions::stream, n_best 1): the best finished one (the first of the best score: the
    // ranking is stable) and each live one whose descendants can score at least as well (the
    // bound of settled()); all live ones while none is finished.
    int common_prefix(const BeamOptions& o) const {
        std::vector<int> cands;  // the hypotheses' last nodes
        const Done* best = nullptr;
        for (const Done& d : done)
            if (!best || d.score > best->score) best = &d;
        if (best) cands.push_back(best->node);
        const double lp = length_penalty(limit, o.length_penalty);
        for (std::size_t k = 0; k < live.size(); ++k)
            if (!best || live_lp[k] / lp >= best->score) cands.push_back(live[k]);
        if (cands.empty()) return 0;
        std::vector<int> first, other;  // node paths, root first
        const auto path = [&](int node, std::vector<int>& out) {
            out.clear();
            for (; node >= 0; node = nodes[node].parent) out.push_back(node);
            std::reverse(out.begin(), out.end());
        };
        path(cands[0], first);
        std::size_t common = first.size();
        for (std::size_t c = 1; c < cands.size(); ++c) {
            path(cands[c], other);
            common = std::min(common, other.size());
            for (std::size_t n = 0; n < common; ++n)
                if (other[n] != first[n]) common = n;
        }
        return static_cast<int>(common);
    }
    // The tokens of the path ending at `node`, oldest first: its last `n` at most.
    void tail_tokens(int node, int n, std::vector<int32_t>& out) const {
        out.clear();
        for (; node >= 0 && static_cast<int>(out.size()) < n; node = nodes[node].parent)
            out.push_back(nodes[node].token);
        std::reverse(out.begin(), out.end());
    }
    // True when the n_best best finished scores cannot be beaten by any descendant of `live`.
    bool settled(const BeamOptions& o) const {
        const int nb = o.n_best;
        if (static_cast<int>(done.size()) < nb || live.empty()) return live.empty();
        std::vector<double> s;
        for (const Done& d : done) s.push_back(d.score);
        std::nth_element(s.begin(), s.begin() + (nb - 1), s.end(), std::greater<>());
        const double best_live = *std::max_element(live_lp.begin(), live_lp.end());
        // α >= 0: lp grows with length, so log p / lp is largest at the longest allowed length.
        const double bound = best_live / length_penalty(limit, o.length_penalty);
        return s[nb - 1] >= bound;
    }
};

// One row of a step's output as offer_row reads it: log-probs as step() wrote them (logits
// false), or logits z with the bias added and their log-sum-exp: log p[y] = fl(z[y] − lse),
// the value step() would have written.
struct OutputRow {
    const float* v;
    float lse = 0;
    bool logits = false;
    const int32_t* ids = nullptr;  // a shortlist: column y is token ids[y]
    const int32_t* inv = nullptr;  // and token t column inv[t] (−1: not in it)

    float log_p(int y) const { return logits ? v[y] - lse : v[y]; }
    int32_t token(int y) const { return ids ? ids[y] : y; }
    int column(int32_t t) const { return inv ? inv[t] : t; }
    // A screening threshold on v for a threshold t on log p: v[y] < screen(t) implies
    // log_p(y) < t (the margin covers the roundings of t + lse and of z − lse); NaN or an
    // infinity anywhere lets every entry through to the exact comparison.
    float screen(float t) const {
        if (!logits) return t;
        const double s = static_cast<double>(t) + lse;
        return static_cast<float>(s - (1e-5 + 1e-5 * (std::fabs(t) + std::fabs(lse))));
    }
};

// Offers the tokens of one row (live rank `rank`, log p so far `base`) to `best`: the sentence's
// running best `w` candidates under `better`, sorted best first. Rows are offered in rank order
// and tokens in id order, so a later candidate never wins a tie against a kept one, and the
// result is the best w of all rows' candidates (what sorting every row's own best w gave).
// The `forbid` ids (<pad>, <s>, and </s> before min_length; −1 = none) are skipped, as if their
// log p were −inf.
//
// Once `best` holds w candidates, a token can only enter if base + lp[y] > T (T: the w-th
// total). Most of the V entries are far below, so the row is screened 8 floats at a time
// against a float threshold t <= T − base (minus a margin that covers the float and double
// roundings: lp[y] < t implies base + lp[y] < T; on logits rows, against row.screen(t)); only
// entries at or above it (and NaN) take the exact double comparison, so the kept set and
// order are exactly the full scan's.
void offer_row(const OutputRow& row, int V, double base, int rank, int w,
               std::span<const int32_t> forbid, std::vector<Candidate>& best) {
    const auto threshold = [&]() -> float {
        if (static_cast<int>(best.size()) < w) return -std::numeric_limits<float>::infinity();
        const double d = best.back().total - base;  // NaN (−inf − −inf) compares false: exact path
        return static_cast<float>(d - (1e-5 + 1e-6 * std::fabs(d)));
    };
    float t = threshold(), ts = row.screen(t);
    const auto offer = [&](int y) {
        const int32_t token = row.token(y);
        if (std::find(forbid.begin(), forbid.end(), token) != forbid.end()) return;
        const Candidate c{base + row.log_p(y), rank, token};
        if (static_cast<int>(best.size()) == w) {
            if (!better(c, best.back())) return;
            best.pop_back();
        }
        best.insert(std::upper_bound(best.begin(), best.end(), c, better), c);
        t = threshold();
        ts = row.screen(t);
    };
    int y = 0;
#ifdef NZ_SIMD_AVX2
    for (; y + 8 <= V; y += 8) {
        int mask = simd::not_below_mask8(row.v + y, ts);  // NaN included
        while (mask != 0) {
            const int lane = __builtin_ctz(static_cast<unsigned>(mask));
            mask &= mask - 1;
            if (!(row.log_p(y + lane) < t)) offer(y + lane);  // t may have risen within the block
        }
    }
#endif
    for (; y < V; ++y)
        if (!(row.log_p(y) < t)) offer(y);
}

// Scratch of advance(), reused every step.
struct StepScratch {
    std::vector<Candidate> cands;
    std::vector<int> live, live_rows;
    std::vector<double> live_lp;
    // constrained sentences only
    std::vector<OutputRow> rows;
    std::vector<Candidate> pool, one;
    std::vector<ConstraintState> cand_states, live_cs;
    std::vector<int32_t> forbid, extra, prefix;
    std::vector<std::vector<int>> banks;
};

// The tokens row k of a constrained sentence may not take: <pad>, <s>, </s> before min_length
// or while an include phrase is unmet, and the last token of every exclude phrase its prefix
// would complete.
void constrained_forbid(const Sentence& s, int k, const BeamOptions& o, const SpecialIds& sp,
                        StepScratch& st) {
    const TokenConstraints& c = *s.cons;
    st.forbid.assign({sp.pad, sp.bos});
    if (s.steps + 1 < o.min_length || !s.live_cs[k].all_met(c)) st.forbid.push_back(sp.eos);
    if (!c.exclude.empty()) {
        s.tail_tokens(s.live[k], longest_exclude(c) - 1, st.prefix);
        banned_tokens(c, st.prefix, st.forbid);
    }
}

// Dynamic beam allocation (constraints.h): w of the candidates — the best w overall, each
// row's best, and every token advancing an include phrase — split into banks by met constraint
// tokens, w / (banks) each (the remainder to the top bank), slots a bank cannot fill given to
// the others from the top bank down. st.cands gets them best first, st.cand_states their
// states.
void constrained_candidates(const Sentence& s, int V, int w, const BeamOptions& o,
                            const SpecialIds& sp, StepScratch& st) {
    const TokenConstraints& c = *s.cons;
    st.cands.clear();
    st.pool.clear();
    for (int k = 0; k < static_cast<int>(st.rows.size()); ++k) {
        const OutputRow& row = st.rows[k];
        const double base = s.live_lp[k];
        constrained_forbid(s, k, o, sp, st);
        offer_row(row, V, base, k, w, st.forbid, st.cands);
        st.one.clear();
        offer_row(row, V, base, k, 1, st.forbid, st.one);
        st.pool.insert(st.pool.end(), st.one.begin(), st.one.end());
        st.extra.clear();
        advancing_tokens(c, s.live_cs[k], st.extra);
        for (const int32_t y : st.extra)
            if (row.column(y) >= 0 &&
                std::find(st.forbid.begin(), st.forbid.end(), y) == st.forbid.end())
                st.pool.push_back({base + row.log_p(row.column(y)), k, y});
    }
    st.pool.insert(st.pool.end(), st.cands.begin(), st.cands.end());
    std::sort(st.pool.begin(), st.pool.end(), better);
    st.pool.erase(std::unique(st.pool.begin(), st.pool.end(),
                              [](const Candidate& a, const Candidate& b) {
                                  return a.rank == b.rank && a.token == b.token;
                              }),
                  st.pool.end());
    const int C = c.include_tokens();
    st.banks.assign(static_cast<std::size_t>(C) + 1, {});
    std::vector<ConstraintState> states;
    states.reserve(st.pool.size());
    for (std::size_t i = 0; i < st.pool.size(); ++i) {
        states.push_back(next_state(c, s.live_cs[st.pool[i].rank], st.pool[i].token));
        st.banks[states.back().met_tokens].push_back(static_cast<int>(i));
    }
    std::vector<int> take(st.banks.size());
    int left = w;
    for (int b = C; b >= 0; --b) {
        const int alloc = w / (C + 1) + (b == C ? w % (C + 1) : 0);
        take[b] = std::min<int>(alloc, static_cast<int>(st.banks[b].size()));
        left -= take[b];
    }
    for (bool more = true; left > 0 && more;) {
        more = false;
        for (int b = C; b >= 0 && left > 0; --b)
            if (take[b] < static_cast<int>(st.banks[b].size())) ++take[b], --left, more = true;
    }
    std::vector<int> kept;
    for (int b = 0; b <= C; ++b)
        kept.insert(kept.end(), st.banks[b].begin(), st.banks[b].begin() + take[b]);
    std::sort(kept.begin(), kept.end());  // pool order: best first
    st.cands.clear();
    st.cand_states.clear();
    for (const int i : kept) {
        st.cands.push_back(st.pool[i]);
        st.cand_states.push_back(std::move(states[i]));
    }
}

// One step of sentence `s`, whose live hypotheses are rows [row0, row0 + s.live.size()) of
// the step's attention (rows, S) and rows [lp0, lp0 + s.live.size()) of lp_view: the step's
// log-probs (rows, V), or a group of its rows (lp0 = row0 − the group's first row). Keeps the
// best candidates, finishes those that end in </s>, and the live ones too when the sentence
// stops. Returns whether it goes on; then st.live_rows holds the rows its new live hypotheses
// extend. Logits rows (bias: the output layer's, null when absent): each row gets its bias and
// log-sum-exp here, while it is in cache, and is then read as log p.
bool advance(Sentence& s, int row0, TensorView lp_view, int lp0, TensorView at_view,
             std::span<const float> p_gen, const BeamOptions& o, const SpecialIds& sp,
             StepScratch& st, bool logits, const float* bias, const OutputRow& shortlist) {
    const int V = lp_view.dim(1), S = at_view.dim(1), K = o.beam_size;
    const int n_live = static_cast<int>(s.live.size());  // rows [row0, row0 + n_live)
    const int w = K - static_cast<int>(s.done.size());
    const std::array<int32_t, 3> forbid = {sp.pad, sp.bos,
                                           s.steps + 1 < o.min_length ? sp.eos : -1};
    st.cands.clear();
    st.rows.clear();
    if (o.stream)  // what each row's step needed of the source
        for (int k = 0; k < n_live; ++k)
            s.reads.step_row(at_view.data() + static_cast<int64_t>(row0 + k) * S, s.S_b);
    for (int k = 0; k < n_live; ++k) {
        OutputRow row = shortlist;  // its ids / inv
        row.v = lp_view.data() + static_cast<int64_t>(lp0 + k) * V;
        if (logits) {
            row.logits = true;
            const bool more = lp0 + k + 1 < lp_view.dim(0);  // the next row: in L2 meanwhile
            row.lse = kernels::add_bias_logsumexp_row(const_cast<float*>(row.v), bias, V,
                                                      more ? row.v + V : nullptr);
        }
        if (s.cons)
            st.rows.push_back(row);
        else
            offer_row(row, V, s.live_lp[k], k, w, forbid, st.cands);
    }
    if (s.cons) constrained_candidates(s, V, w, o, sp, st);
    st.live.clear();
    st.live_lp.clear();
    st.live_rows.clear();
    st.live_cs.clear();
    for (std::size_t i = 0; i < st.cands.size(); ++i) {
        const Candidate& c = st.cands[i];
        const int node = static_cast<int>(s.nodes.size());
        s.nodes.push_back(
            {s.live[c.rank], c.token, p_gen.empty() ? 0.0f : p_gen[std::size_t(row0 + c.rank)]});
        const float* a = at_view.data() + static_cast<int64_t>(row0 + c.rank) * S;
        s.attn.insert(s.attn.end(), a, a + s.S_b);
        if (c.token == sp.eos) {
            s.finish(node, c.total, true, o);  // constrained: only once all are met
        } else {
            st.live.push_back(node);
            st.live_lp.push_back(c.total);
            st.live_rows.push_back(row0 + c.rank);
            if (s.cons) st.live_cs.push_back(st.cand_states[i]);
        }
    }
    s.live.assign(st.live.begin(), st.live.end());
    s.live_lp.assign(st.live_lp.begin(), st.live_lp.end());
    if (s.cons) s.live_cs.assign(st.live_cs.begin(), st.live_cs.end());
    ++s.steps;
    bool stop = s.live.empty() || static_cast<int>(s.done.size()) >= K || s.steps >= s.limit ||
                (o.early_stop && s.settled(o));
    if (stop) {
        // Cut at the limit (or settled): the live ones count too.
        if (static_cast<int>(s.done.size()) < K)
            for (std::size_t k = 0; k < s.live.size(); ++k)
                s.finish(s.live[k], s.live_lp[k], false, o,
                         !s.cons || s.live_cs[k].all_met(*s.cons));
        s.live.clear();
        s.live_lp.clear();
        s.active = false;
        return false;
    }
    if (o.stream) s.reads.commit(s.common_prefix(o));
    return true;
}

// The n_best hypotheses of each sentence, best first.
void collect(std::vector<Sentence>& sent, const BeamOptions& o, bool copy,
             std::vector<std::vector<Hypothesis>>& results) {
    const int B = static_cast<int>(sent.size());
    for (int b = 0; b < B; ++b) {
        Sentence& s = sent[b];
        // stable: finished in the order they finished, then the unfinished in rank order
        std::stable_sort(s.done.begin(), s.done.end(),
                         [](const Done& x, const Done& y) { return x.score > y.score; });
        // Constrained: those that meet the constraints first (a search cut at the maximum
        // length may leave hypotheses that do not, and these may score better).
        if (s.cons)
            std::stable_partition(s.done.begin(), s.done.end(),
                                  [](const Done& d) { return d.constraints_met; });
        const int n = std::min<int>(o.n_best, static_cast<int>(s.done.size()));
        for (int k = 0; k < n; ++k) {
            const Done& d = s.done[k];
            Hypothesis h;
            h.finished = d.finished;
            h.log_prob = d.log_prob;
            h.score = d.score;
            h.steps = s.steps;
            h.constraints_met = d.constraints_met;
            h.attention = s.path_attention(d.node);
            h.tokens.resize(s.length(d.node));
            if (o.stream) h.read = s.reads.reads_of(static_cast<int>(h.tokens.size()));
            if (copy) h.p_gen.resize(h.tokens.size());
            int node = d.node;
            for (int t = static_cast<int>(h.tokens.size()) - 1; t >= 0;
                 --t, node = s.nodes[node].parent) {
                h.tokens[t] = s.nodes[node].token;
                if (copy) h.p_gen[t] = s.nodes[node].p_gen;
            }
            results[b].push_back(std::move(h));
        }
    }
}

// The fused output path (logits rows, OutputRow): a model without copy attention.
bool has_step_logits(const DecodeSession& m) {
    return m.has_step_logits();
}
bool has_step_logits(const Ensemble&) {
    return false;
}
const float* step_logits_bias(const DecodeSession& m) {
    return m.step_logits_bias();
}
const float* step_logits_bias(const Ensemble&) {
    return nullptr;
}
template <class Model, class Source, class State>
void step_rows(Model& model, bool fused, std::span<const int32_t> prev, const Source& src,
               State& state, TensorView out, TensorView attn) {
    if constexpr (std::is_same_v<Model, DecodeSession>)
        if (fused) return model.step_logits(prev, src, state, out, attn);
    model.step(prev, src, state, out, attn);
}
// Grouped output (BeamOptions::output_group_rows): the fewest rows a group may have, 0 = none.
int group_min_rows(const DecodeSession& m, const EncodedSource& src, int rows) {
    return m.step_logits_group_min_rows(src, rows);
}
int group_min_rows(const Ensemble&, const Ensemble::Source&, int) {
    return 0;
}
// A thread's buffer for its groups' logits rows. The calling thread's is one per decoding
// thread (the pool's workers' are shared by every caller): the search gives its pages back
// when it ends.
Tensor& group_buffer() {
    thread_local Tensor buf;
    return buf;
}
// Grouped output (form_groups' groups of the step's sentences, N rows): each pool thread takes
// whole groups; a group's logits rows are made into a buffer of the thread's own and consumed
// by the group's sentences at once, while they are still in its cache. advance_one(i, rows,
// r): sentence i's step, its first row being row r of `rows`.
template <class Advance>
void grouped_output(const DecodeSession& model, const std::vector<int>& first,
                    const std::vector<int>& groups, int N, int V, const Advance& advance_one) {
    parallel_for(static_cast<int64_t>(groups.size()) - 1, 1, [&](int64_t g0, int64_t g1) {
        Tensor& buf = group_buffer();
        for (int64_t g = g0; g < g1; ++g) {
            const int r0 = first[groups[g]];
            const int r1 =
                groups[g + 1] < static_cast<int>(first.size()) ? first[groups[g + 1]] : N;
            buf.resize({r1 - r0, V}, false);
            model.step_logits_rows(r0, r1, buf.view());
            for (int i = groups[g]; i < groups[g + 1]; ++i)
                advance_one(i, buf.view(), first[i] - r0);
        }
    });
}

// The next step's rows: the new live hypotheses of the sentences that go on, in sentence order
// (their sentences, the rows they extend, their last tokens).
void next_rows(const std::vector<Sentence>& sent, const std::vector<int>& first,
               const std::vector<int>& row_sentence, const std::vector<char>& goes_on,
               const std::vector<StepScratch>& st, std::vector<int>& next_row_sentence,
               std::vector<int>& parents, std::vector<int32_t>& prev) {
    next_row_sentence.clear();
    parents.clear();
    prev.clear();
    for (const int row0 : first) {
        const Sentence& s = sent[row_sentence[row0]];
        if (!goes_on[s.b]) continue;
        for (std::size_t k = 0; k < s.live.size(); ++k) {
            next_row_sentence.push_back(s.b);
            parents.push_back(st[s.b].live_rows[k]);
            prev.push_back(s.nodes[s.live[k]].token);
        }
    }
}

// BeamOptions::cancelled before the first step: true when every sentence is cancelled; the
// others cancelled are dropped after the first step (the rows are laid out for all of them).
bool cancelled_at_start(std::vector<Sentence>& sent, const BeamOptions& o) {
    if (!o.cancelled) return false;
    bool all = true;
    for (Sentence& s : sent) all = (s.cancel_requested = o.cancelled(s.b)) && all;
    return all;
}

// After a step: the sentences that go on but are cancelled leave the batch.
void drop_cancelled(std::vector<Sentence>& sent, const std::vector<int>& first,
                    const std::vector<int>& row_sentence, std::vector<char>& goes_on,
                    const BeamOptions& o) {
    if (!o.cancelled) return;
    for (const int row0 : first) {
        Sentence& s = sent[row_sentence[row0]];
        if (goes_on[s.b] && (s.cancel_requested || o.cancelled(s.b))) {
            goes_on[s.b] = 0;
            s.cancel();
        }
    }
}

// One sentence per source, each with the empty prefix live (and its constraints, checked
// against the V output tokens).
std::vector<Sentence> start_sentences(std::span<const int> lengths, int S, const BeamOptions& o,
                                      int V, const SpecialIds& sp) {
    NZ_CHECK_USAGE(o.constraints.empty() || o.constraints.size() == lengths.size(),
                   "beam_search: constraints for {} sentences, the batch has {}",
                   o.constraints.size(), lengths.size());
    std::vector<Sentence> sent(lengths.size());
    for (std::size_t b = 0; b < lengths.size(); ++b) {
        NZ_CHECK(lengths[b] >= 0 && lengths[b] <= S,
                 "beam_search: lengths[{}] = {} outside [0, {}]", b, lengths[b], S);
        Sentence& s = sent[b];
        s.b = static_cast<int>(b);
        s.S_b = lengths[b];
        s.limit = max_output_length(s.S_b, o.max_length_ratio, o.max_length_extra, o.max_length);
        s.live = {-1};
        s.live_lp = {0.0};
        if (!o.constraints.empty() && !o.constraints[b].empty()) {
            const TokenConstraints& c = o.constraints[b];
            const std::array<int32_t, 3> reserved = {sp.pad, sp.bos, sp.eos};
            validate(c, V, reserved);
            s.cons = &c;
            s.live_cs = {initial_state(c)};
            s.limit = std::min(o.max_length, std::max(s.limit, c.include_tokens() + 1));
        }
    }
    return sent;
}

// BeamOptions::shortlist for one batch: restricts a DecodeSession's output layer to the batch's
// candidates while the search runs, and gives them back after (exceptions too).
class ShortlistScope {
public:
    template <class Model>
    ShortlistScope(Model& model, const BeamOptions& o, std::span<const int32_t> src,
                   std::span<const int> lengths, int S, const SpecialIds& sp) {
        if (o.shortlist == nullptr) return;
        if constexpr (std::is_same_v<Model, DecodeSession>) {
            NZ_CHECK_USAGE(!model.config().copy_attention,
                           "a shortlist needs a model without copy attention");
            NZ_CHECK_USAGE(o.shortlist->target_vocab_size() == model.config().tgt_vocab_size,
                           "the shortlist was loaded for a target vocabulary of {}, the model has "
                           "{}",
                           o.shortlist->target_vocab_size(), model.config().tgt_vocab_size);
            // </s> and <unk> can be emitted; <pad> and <s> never are, but their rows keep a
            // full shortlist's normalisation the whole vocabulary's
            const std::array<int32_t, 4> always = {sp.pad, sp.unk, sp.bos, sp.eos};
            ids_ = o.shortlist->candidates(src, lengths, S, o.constraints, always);
            inv_.assign(static_cast<std::size_t>(model.config().tgt_vocab_size), -1);
            for (std::size_t j = 0; j < ids_.size(); ++j) inv_[std::size_t(ids_[j])] = int(j);
            session_ = &model;  // given back by the destructor even if this throws midway
            model.restrict_output(ids_);
        } else {
            throw UsageError("a shortlist is for one model, not an ensemble");
        }
    }
    ~ShortlistScope() {
        if (session_) session_->restrict_output({});
    }
    ShortlistScope(const ShortlistScope&) = delete;
    ShortlistScope& operator=(const ShortlistScope&) = delete;
    OutputRow row() const {
        OutputRow r{nullptr};
        if (!ids_.empty()) r.ids = ids_.data(), r.inv = inv_.data();
        return r;
    }

private:
    DecodeSession* session_ = nullptr;
    std::vector<int32_t> ids_, inv_;
};

// The step API's source and state types of a model (DecodeSession or Ensemble).
using detail::StepTypes;  // decode/step_types.h

// The next step's rows: the decoder states of the rows they extend (`parents`, unless those
// are this step's rows in order), and the encoder rows of their sentences (when the row →
// sentence map changed). cur: the encoding the steps read.
template <class Model, class Buffers, class Source>
void carry_rows(Model& model, Buffers& b, const std::vector<int>& parents,
                const std::vector<int>& row_sentence, const std::vector<int>& next_row_sentence,
                const Source*& cur) {
    bool identity = parents.size() == row_sentence.size();
    for (std::size_t k = 0; identity && k < parents.size(); ++k)
        identity = parents[k] == static_cast<int>(k);
    if (!identity) {
        model.select_state(b.state, parents, b.next_state);
        std::swap(b.state, b.next_state);
    }
    if (next_row_sentence != row_sentence) {
        model.select_rows(b.enc, next_row_sentence, b.rows_enc);
        cur = &b.rows_enc;
    }
}

template <class Model>
std::vector<std::vector<Hypothesis>> beam_impl(Model& model, std::span<const int32_t> src,
                                               std::span<const int> lengths, int S,
                                               const BeamOptions& o,
                                               std::span<const int32_t> copy_src) {
    validate(o);
    const int B = static_cast<int>(lengths.size());
    NZ_CHECK(static_cast<int64_t>(src.size()) == static_cast<int64_t>(B) * S,
             "beam_search: src has {} ids, expected B·S = {}·{}", src.size(), B, S);
    const int K = o.beam_size;
    const auto& sp = model.config().special_ids;
    std::vector<std::vector<Hypothesis>> results(B);
    if (B == 0) return results;

    std::vector<Sentence> sent = start_sentences(lengths, S, o, model.config().tgt_vocab_size, sp);
    if (cancelled_at_start(sent, o)) return results;  // not even the encoder runs

    detail::EnsembleSearchBuffers ensemble_buffers;
    auto& buffers = detail::search_buffers(model, ensemble_buffers);
    const auto end_search = detail::end_search_on_exit(model);
    auto& enc = buffers.enc;
    model.encode(src, lengths, S, enc, K);
    ShortlistScope scope(model, o, src, lengths, S, sp);  // the output layer's rows, if any
    const OutputRow shortlist = scope.row();
    const int V = detail::prepare_copy(model, enc, copy_src);  // extended with copy attention
    auto& state = buffers.state;
    model.init_state(enc, state);
    const typename StepTypes<Model>::Source* cur = &enc;
    std::vector<int> row_sentence(B), next_row_sentence, parents, first;
    std::iota(row_sentence.begin(), row_sentence.end(), 0);
    std::vector<int32_t> prev(B, sp.bos);
    // The log-probs of an ungrouped step's rows: every row (B·K) where no step is grouped;
    // where steps are grouped (each group's rows go into a buffer of its own), the rows of the
    // ungrouped steps (a sentence or two, or more rows than fp32 groups take), so that the
    // beams do not hold B·K rows (5 MB per decoding thread at 32 × 5 rows, V 8,000).
    Tensor &log_probs = buffers.log_probs, &attn = buffers.attention;
    attn.resize({static_cast<int64_t>(B) * K, S});
    std::vector<StepScratch> st(B);  // per sentence
    std::vector<char> goes_on(B);
    const bool fused = o.fused_output && has_step_logits(model);
    const float* bias = fused ? step_logits_bias(model) : nullptr;

    const int target_rows = detail::group_target_rows(o, V);
    const int64_t lp_rows = fused && group_min_rows(model, enc, B * K) > 0 ? 0 : int64_t{B} * K;
    std::vector<int> groups;
    while (!row_sentence.empty()) {
        const int N = static_cast<int>(row_sentence.size());
        const TensorView at_view = attn.slice(0, N);
        // The sentences of this step (rows [first[i], first[i] + live)) advance independently,
        // each on its own scratch, split over the pool; the next step's rows are then
        // assembled in sentence order, so the result does not depend on the split.
        first.clear();
        for (int row0 = 0; row0 < N; row0 += static_cast<int>(sent[row_sentence[row0]].live.size()))
            first.push_back(row0);
        const int min_rows = fused ? group_min_rows(model, *cur, N) : 0;
        detail::form_groups(first, N, target_rows, min_rows, num_threads(), groups);
        std::span<const float> p_gen;  // after the step
        const auto advance_one = [&](int64_t i, TensorView lp, int lp0) {
            Sentence& s = sent[row_sentence[first[i]]];
            goes_on[s.b] = advance(s, first[i], lp, lp0, at_view, p_gen, o, sp, st[s.b], fused,
                                   bias, shortlist);
        };
        if (groups.empty()) {
            log_probs.resize({std::max<int64_t>(lp_rows, N), V}, false);
            const TensorView lp_view = log_probs.slice(0, N);
            step_rows(model, fused, prev, *cur, state, lp_view, at_view);
            p_gen = detail::step_p_gen(model);
            parallel_for(static_cast<int64_t>(first.size()), 4, [&](int64_t i0, int64_t i1) {
                for (int64_t i = i0; i < i1; ++i) advance_one(i, lp_view, first[i]);
            });
        } else if constexpr (std::is_same_v<Model, DecodeSession>) {
            model.step_hidden(prev, *cur, state, at_view);
            grouped_output(model, first, groups, N, V, advance_one);
        }
        drop_cancelled(sent, first, row_sentence, goes_on, o);
        next_rows(sent, first, row_sentence, goes_on, st, next_row_sentence, parents, prev);
        if (next_row_sentence.empty()) break;
        carry_rows(model, buffers, parents, row_sentence, next_row_sentence, cur);
        std::swap(row_sentence, next_row_sentence);
    }

    group_buffer().discard_pages(DecodeSession::kScratchDiscardBytes);
    collect(sent, o, !copy_src.empty(), results);
    return results;
}

}  // namespace

std::vector<std::vector<Hypothesis>> beam_search(DecodeSession& model, std::span<const int32_t> src,
                                                 std::span<const int> lengths, int S,
                                                 const BeamOptions& o,
                                                 std::span<const int32_t> copy_src) {
    return beam_impl(model, src, lengths, S, o, copy_src);
}

std::vector<std::vector<Hypothesis>> beam_search(const Seq2Seq& model, std::span<const int32_t> src,
                                                 std::span<const int> lengths, int S,
                                                 const BeamOptions& o,
                                                 std::span<const int32_t> copy_src) {
    DecodeSession session(model);
    return beam_impl(session, src, lengths, S, o, copy_src);
}

std::vector<std::vector<Hypothesis>> beam_search(Ensemble& model, std::span<const int32_t> src,
                                                 std::span<const int> lengths, int S,
                                                 const BeamOptions& o,
                                                 std::span<const int32_t> copy_src) {
    return beam_impl(model, src, lengths, S, o, copy_src);
}

}  // namespace nazar
