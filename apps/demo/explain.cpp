#include "apps/demo/explain.h"

#include "nazar/data/vocab.h"
#include "nazar/models/decode_session.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace nazar::demo {

namespace {

std::string vec(const std::vector<double>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{:8.4f}", i ? ", " : "", v[i]);
    return s + "]";
}
std::vector<double> row(ConstTensorView m, int r) {  // row r of a 2-D view
    std::vector<double> out(static_cast<std::size_t>(m.dim(1)));
    for (int64_t c = 0; c < m.dim(1); ++c) out[c] = m.at(r, c);
    return out;
}
std::string matrix(const char* name, ConstTensorView m) {
    std::string s = fmt::format("    {} ({}x{}):\n", name, m.dim(0), m.dim(1));
    for (int64_t r = 0; r < m.dim(0); ++r) s += "      " + vec(row(m, static_cast<int>(r))) + "\n";
    return s;
}
std::vector<double> matvec(ConstTensorView W, const std::vector<double>& x) {  // W (R, C) · x (C)
    std::vector<double> y(static_cast<std::size_t>(W.dim(0)), 0.0);
    for (int64_t r = 0; r < W.dim(0); ++r)
        for (int64_t c = 0; c < W.dim(1); ++c) y[r] += W.at(r, c) * x[c];
    return y;
}
std::vector<double> softmax(const std::vector<double>& e) {
    const double m = *std::max_element(e.begin(), e.end());
    std::vector<double> a(e.size());
    double z = 0;
    for (std::size_t i = 0; i < e.size(); ++i) z += a[i] = std::exp(e[i] - m);
    for (double& x : a) x /= z;
    return a;
}

// Step 1 by hand: the scores e_2i of the query q against the encoder states h_i.
std::vector<double> scores_by_hand(std::string& o, bool bahdanau, const AttentionParams& P,
                                   const std::vector<std::vector<double>>& h,
                                   const std::vector<double>& q) {
    const int S = static_cast<int>(h.size());
    std::vector<double> e(S);
    if (bahdanau) {
        o += fmt::format(
            "  query: s_1 = {} (the decoder state after \"Le\"; Bahdanau looks BEFORE updating "
            "it)\n",
            vec(q));
        const std::vector<double> u = matvec(P.W_q, q);
        o += fmt::format("  W_a s_1 = {}   (per step)\n", vec(u));
        o += "  1. scores e_2i = v_a · tanh(W_a s_1 + U_a h_i)   (U_a h_i: once per sentence)\n";
        for (int i = 0; i < S; ++i) {
            const std::vector<double> k = matvec(P.W_k, h[i]);
            double sum = 0;
            for (int a = 0; a < P.v_a.dim(1); ++a) sum += P.v_a.at(0, a) * std::tanh(u[a] + k[a]);
            e[i] = sum;
            o += fmt::format("     i={} U_a h_i = {}  e_2{} = {:8.4f}\n", i, vec(k), i, e[i]);
        }
    } else {
        o += fmt::format("  RNN first: s_2 = GRU(Emb(\"Le\"), s_1) = {}\n", vec(q));
        o += "  1. scores e_2i = s_2 · (W_a h_i)   (W_a h_i: once per sentence)\n";
        for (int i = 0; i < S; ++i) {
            const std::vector<double> k = matvec(P.W_k, h[i]);
            double sum = 0;
            for (std::size_t a = 0; a < k.size(); ++a) sum += q[a] * k[a];
            e[i] = sum;
            o += fmt::format("     i={} W_a h_i = {}  e_2{} = {:8.4f}\n", i, vec(k), i, e[i]);
        }
    }
    return e;
}

// Step 4 by hand: the input of the output layer (s_2, or Luong's attentional state s̃_2).
std::vector<double> output_input_by_hand(std::string& o, bool bahdanau, const Seq2Seq& model,
                                         const std::vector<double>& q, const std::vector<double>& c,
                                         const std::vector<double>& s_new) {
    std::vector<double> out_in;
    if (bahdanau) {
        o += fmt::format(
            "  4. RNN with the context fed in: s_2 = GRU([Emb(\"Le\"); c_2], s_1) = {}   (nazar's "
            "GRU)\n",
            vec(s_new));
        out_in = s_new;
        o += "     output p(y_2) = softmax(W_o s_2 + b_o)\n";
    } else {
        std::vector<double> sc = q;
        sc.insert(sc.end(), c.begin(), c.end());
        out_in = matvec(model.decoder.combine.params.weight, sc);
        for (double& x : out_in) x = std::tanh(x);
        o += fmt::format("  4. attentional state s̃_2 = tanh(W_c [s_2; c_2]) = {}\n", vec(out_in));
        o += "     output p(y_2) = softmax(W_o s̃_2 + b_o)\n";
    }
    return out_in;
}

// The output distribution by hand, and its three most likely tokens.
std::vector<double> output_by_hand(std::string& o, const Seq2Seq& model, const Vocab& tv,
                                   const std::vector<double>& out_in) {
    const int V = tv.size();
    const ConstTensorView Wo = model.generator_weight();
    std::vector<double> logits = matvec(Wo, out_in);
    for (int v = 0; v < V; ++v) logits[v] += model.generator.params.bias[v];
    const std::vector<double> p = softmax(logits);
    std::vector<int> order(static_cast<std::size_t>(V));
    for (int v = 0; v < V; ++v) order[v] = v;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
    o += "     most likely next tokens (untrained, so not yet \"chat\"):";
    for (int k = 0; k < 3; ++k) o += fmt::format("  {} {:.4f}", tv.piece(order[k]), p[order[k]]);
    o += "\n";
    return p;
}

}  // namespace

StepWalkthrough explain_model_step(DecoderKind kind) {
    const bool bahdanau = kind == DecoderKind::bahdanau;
    const std::vector<std::string> src_words{"The", "cat", "sat"},
        tgt_words{"Le", "chat", "s'est", "assis"};
    const Vocab sv = Vocab::from_pieces(src_words), tv = Vocab::from_pieces(tgt_words);
    ModelConfig cfg;
    cfg.src_vocab_size = sv.size();
    cfg.tgt_vocab_size = tv.size();
    cfg.embedding_size = 3;
    cfg.encoder.hidden_size = 2;  // bidirectional: C = 4
    cfg.decoder.hidden_size = 4;  // H = 4
    cfg.decoder.kind = kind;
    cfg.attention.score = bahdanau ? ScoreKind::additive : ScoreKind::general;
    cfg.attention.attention_size = 3;  // A (Bahdanau)
    Seq2Seq model(cfg, 2015);
    const int S = 3, V = tv.size();
    const std::vector<int32_t> src{sv.id("The"), sv.id("cat"), sv.id("sat")};
    const std::vector<int> len{S};
    DecodeSession session(model);
    EncodedSource enc;
    session.encode(src, len, S, enc);
    DecoderState st;
    session.init_state(enc, st);
    Tensor lp({1, V}), att({1, S});
    const std::vector<int32_t> bos{Vocab::bos}, le{tv.id("Le")};
    // step 0 emits the first word; teacher forcing feeds "Le" next
    session.step(bos, enc, st, lp, att);
    const std::vector<double> s_prev = row(st.h.select(0), 0);
    session.step(le, enc, st, lp, att);  // step 1: docs/spec.md §10's example 1 ("chat")
    const std::vector<double> s_new = row(st.h.select(0), 0);

    StepWalkthrough w;
    std::string& o = w.text;
    o += fmt::format(
        "{} — one decoder step of a tiny model, by hand and by nazar's code\n",
        bahdanau ? "Bahdanau (additive score, attention BEFORE the RNN step, query s_{t-1})"
                 : "Luong general (bilinear score, attention AFTER the RNN step, query s_t)");
    o += "  source \"The cat sat\" (3 word tokens), output so far \"Le\": "
         "docs/spec.md §10's example 1 "
         "step, which predicts word 2.\n";
    o += fmt::format(
        "  sizes: E = 3, encoder 2 per direction -> C = d_h = 4, H = d_s = 4{}; seeded weights "
        "(Rng 2015), untrained.\n",
        bahdanau ? ", A = d_a = 3" : "");
    const AttentionParams& P = model.attention.params;
    o += "  weights:\n";
    if (bahdanau) {
        o += matrix("W_a = attention.query.weight", P.W_q) +
             matrix("U_a = attention.key.weight", P.W_k) +
             matrix("v_a = attention.v.weight", P.v_a);
    } else {
        o += matrix("W_a = attention.key.weight", P.W_k) +
             matrix("W_c = decoder.combine.weight", model.decoder.combine.params.weight);
    }
    o += "  encoder states h_i (DecodeSession::encode):\n";
    std::vector<std::vector<double>> h(S);
    for (int i = 0; i < S; ++i) {
        h[i] = row(enc.enc_out.select(0), i);
        o += fmt::format("    h_{} ({:<3}) = {}\n", i, src_words[i], vec(h[i]));
    }
    const std::vector<double> q = bahdanau ? s_prev : s_new;
    const std::vector<double> e = scores_by_hand(o, bahdanau, P, h, q);
    const std::vector<double> alpha = softmax(e);
    o += fmt::format("  2. weights α_2 = softmax(e_2) = {}   (Σ = 1)\n", vec(alpha));
    std::vector<double> c(h[0].size(), 0.0);
    for (int i = 0; i < S; ++i)
        for (std::size_t k = 0; k < c.size(); ++k) c[k] += alpha[i] * h[i][k];
    o += fmt::format("  3. context c_2 = Σ_i α_2i h_i = {}\n", vec(c));
    const std::vector<double> out_in = output_input_by_hand(o, bahdanau, model, q, c, s_new);
    const std::vector<double> p = output_by_hand(o, model, tv, out_in);
    for (int i = 0; i < S; ++i)
        w.max_weight_diff = std::max(w.max_weight_diff, std::abs(alpha[i] - att.at(0, i)));
    for (int v = 0; v < V; ++v)
        w.max_logp_diff =
            std::max(w.max_logp_diff, std::abs(std::log(p[v]) - static_cast<double>(lp.at(0, v))));
    o += fmt::format(
        "  check against DecodeSession::step (the code that trains and translates): max |Δα| = "
        "{:.1e}, "
        "max |Δ log p| = {:.1e}\n",
        w.max_weight_diff, w.max_logp_diff);
    return w;
}

}  // namespace nazar::demo
