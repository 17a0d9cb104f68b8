// Streaming greedy decoding (stream.h).
#include "nazar/decode/stream.h"

#include "nazar/core/check.h"
#include "nazar/decode/beam_search.h"

#include <fmt/format.h>

#include <algorithm>

namespace nazar {

void check_streamable(const ModelConfig& cfg) {
    const auto refuse = [](const char* why) {
        throw UsageError(
            fmt::format("streaming needs a model whose output cannot depend on "
                        "input not yet read: {}",
                        why));
    };
    if (!cfg.attention.monotonic) refuse("monotonic attention (monotonic: true)");
    if (cfg.encoder.bidirectional) refuse("a unidirectional encoder (bidirectional: false)");
    if (effective_bridge(cfg) != BridgeKind::zero) refuse("the zero bridge (bridge: zero)");
    if (cfg.copy_attention) refuse("no copy attention");
}

namespace {
// α_{t−1} (1, S) widened to (1, S') with zeros: the state of a prefix as the next one reads it.
void widen(Tensor& previous, int S) {
    Tensor wider({1, S});
    const int old = previous.ndim() == 2 ? previous.dim(1) : 0;
    std::copy(previous.data(), previous.data() + old, wider.data());
    previous = std::move(wider);
}

bool attends(ConstTensorView row) {
    for (int64_t i = 0; i < row.numel(); ++i)
        if (row[i] != 0.0f) return true;
    return false;
}
}  // namespace

Hypothesis stream_greedy(DecodeSession& model, std::span<const int32_t> src,
                         const GreedyOptions& options) {
    check_streamable(model.config());
    NZ_CHECK_USAGE(options.max_length >= 1, "stream: max_length must be >= 1, got {}",
                   options.max_length);
    const int S_b = static_cast<int>(src.size());
    const int max_len = max_output_length(S_b, options.max_length_ratio, options.max_length_extra,
                                          options.max_length);
    const auto& sp = model.config().special_ids;
    const int V = model.config().tgt_vocab_size;
    Hypothesis h;
    std::vector<float> rows;
    EncodedSource enc;
    DecoderState state, trial;
    Tensor log_probs({1, V});
    int32_t prev = sp.bos;
    bool done = false;
    // P = source tokens read; an empty source is read at once
    for (int P = std::min(S_b, 1); P <= S_b && !done; ++P) {
        const int lengths[1] = {P};
        model.encode(src.first(static_cast<std::size_t>(P)), lengths, P, enc);
        if (P <= 1)
            model.init_state(enc, state);
        else
            widen(state.previous, P);
        Tensor attn({1, P});
        while (!done) {
            trial = state;
            const int32_t prev_ids[1] = {prev};
            model.step(prev_ids, enc, trial, log_probs, attn);
            if (P < S_b && !attends(attn)) break;  // no stop in the prefix yet: read on
            state = std::move(trial);
            const int y = detail::best_token(log_probs.data(), V, sp.pad, sp.bos);
            h.tokens.push_back(y);
            h.log_prob += log_probs[y];
            h.read.push_back(P);
            rows.insert(rows.end(), attn.data(), attn.data() + P);
            prev = y;
            h.finished = y == sp.eos;
            done = h.finished || static_cast<int>(h.tokens.size()) >= max_len;
        }
    }
    // rows of earlier prefixes are narrower: widen each to S_b
    const int n = static_cast<int>(h.tokens.size());
    h.attention = Tensor({n, S_b});
    std::size_t at = 0;
    for (int i = 0; i < n; ++i) {
        const int w = h.read[static_cast<std::size_t>(i)];
        std::copy(rows.begin() + at, rows.begin() + at + w, h.attention.data() + int64_t{i} * S_b);
        at += static_cast<std::size_t>(w);
    }
    h.score = h.log_prob;
    h.steps = n;
    return h;
}

void StreamReads::step_row(const float* attention, int S_b) {
    int j = S_b - 1;
    while (j >= 0 && attention[j] == 0.0f) --j;
    // an empty source is read at once (stream_greedy reads one token before the first step)
    need = std::max({need, std::min(S_b, 1), j >= 0 ? j + 1 : S_b});
}

void StreamReads::commit(int common) {
    while (static_cast<int>(read.size()) < common) read.push_back(need);
}

std::vector<int> StreamReads::reads_of(int n) const {
    NZ_CHECK(static_cast<int>(read.size()) <= n,
             "stream: {} tokens committed, the hypothesis returned has {}", read.size(), n);
    std::vector<int> out(read);
    out.resize(static_cast<std::size_t>(n), need);
    return out;
}

double average_proportion(std::span<const int> read, int S_b) {
    if (read.empty() || S_b <= 0) return 0.0;
    double sum = 0;
    for (const int r : read) sum += r;
    return sum / (static_cast<double>(S_b) * static_cast<double>(read.size()));
}

}  // namespace nazar
