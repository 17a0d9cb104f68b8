// Whole seq2seq models vs PyTorch (tests/parity/parity.h, tests/parity/gen/make_model_fixtures.py).
//
// Per case (Bahdanau GRU; Bahdanau deep output + tied embeddings + 2 decoder layers; Bahdanau
// LSTM with a mean bridge; Luong dot, general, general + input feeding + 1/sqrt(C) scale, concat,
// local-m, local-p; LSTM encoder and decoder; two docs/spec.md §6 ablations; scheduled sampling; an
// empty source sentence; coverage attention with the coverage loss, Bahdanau and Luong concat;
// monotonic attention, Bahdanau additive and Luong general with a learned scale, whose loss,
// scores and gradients use the expected alignment and whose decoding attends hard; MoChA,
// Bahdanau additive with w = 2 and Luong concat with w = 3, whose attention rows and contexts are
// the chunkwise weights β while the steps carry the monotonic α) the
// fixture pair is a nazar model file WRITTEN BY PYTORCH (python/nazar_torch.py save_model) and the
// float64 values nazar_torch.py computes from it. nazar must:
//   (a) load it and give the same per-sentence log-probabilities (TrainPass::score, forced
//       decoding of target + </s>) and the same evaluation loss (label smoothing included);
//   (b) give the same gradients of one training step (loss / tokens), every parameter by name
//       (one case with scheduled sampling at p = 1, where the inputs are the model's own argmax);
//   (c) save it back: the same tensors bit for bit, the metadata passed through, the same bytes,
//       and the re-saved file scores identically;
//   plus decoding: greedy and beam search (K = 3, 2-best, α = 0.6, β = 0.2; nazar's exact early
//   stop on) give the same tokens, finished flags, log-probabilities, ranking scores and
//   attention rows (the generator guarantees a gap >= 1e-4 at every argmax / beam decision, so
//   float32 cannot take another branch than float64).
// The other direction (a model initialised and saved by nazar, scored by the `nazar score` CLI
// and by PyTorch) is the CTest entry parity.model_files_cli (check_model_files.py), which runs
// this binary's ParityModelFiles.Export with NAZAR_PARITY_EXPORT=<dir> to write those files.
//
// Tolerance 1e-4 (norm-wise relative per tensor; per sentence for scores), as the issue asks.
// Measured (float32 nazar vs float64 PyTorch): scores <= 1e-7, gradients <= 2e-5 (the test
// prints the worst per case; 1.6e-5 at most, attention.query.weight of bahdanau_deep_tied); a
// wrong term is 1e-2 or more.
#include "parity.h"

#include "nazar/core/fileio.h"
#include "nazar/decode/beam_search.h"
#include "nazar/decode/greedy.h"
#include "nazar/models/model_file.h"
#include "nazar/models/train_pass.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace nazar {
namespace test_parity_models {
namespace {

using test::batch_of;
using test::Fixture;
constexpr double kTol = 1e-4;

const char* const kCases[] = {"bahdanau_gru",
                              "bahdanau_deep_tied",
                              "luong_dot",
                              "luong_general",
                              "luong_general_feed",
                              "luong_concat",
                              "luong_local_m",
                              "luong_local_p",
                              "luong_lstm",
                              "bahdanau_lstm_mean",
                              "ablation_bahdanau_general",
                              "ablation_luong_additive_local_p",
                              "bahdanau_sampled",
                              "empty_source",
                              "bahdanau_dropout",
                              "luong_dropout",
                              "luong_feed_dropout",
                              "bahdanau_coverage",
                              "luong_concat_coverage",
                              "bahdanau_layer_norm",
                              "luong_layer_norm_feed",
                              "luong_lstm_layer_norm",
                              "bahdanau_residual",
                              "bahdanau_transition",
                              "bahdanau_monotonic",
                              "luong_general_monotonic",
                              "bahdanau_mocha",
                              "luong_concat_mocha"};

// A decoded result's attention (n, S_b) into the top-left corner of a zeroed (n_max, S) block.
void place_attention(const Tensor& attention, TensorView out) {
    out.zero();
    if (attention.ndim() != 2) return;
    const int n = std::min(attention.dim(0), static_cast<int>(out.dim(0)));
    const int S_b = attention.dim(1);
    ASSERT_LE(S_b, out.dim(1));
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < S_b; ++i) out.at(j, i) = attention.at(j, i);
}

// Largest norm-wise relative error over all parameter gradients (for the printed summary).
double worst_grad_error(const Fixture& f, const ParamList& params, std::string& which) {
    double worst = 0;
    for (const auto& p : params) {
        const Tensor& want = f["grad." + p.name];
        if (want.numel() != p.grad->numel()) continue;  // reported by expect_grads
        const double e = max_rel_error(p.grad->reshape(want.shape()), want);
        if (e > worst) {
            worst = e;
            which = p.name;
        }
    }
    return worst;
}

void check_model(const std::string& name) {
    const std::string model_path = test::fixture_path("model_" + name);
    Fixture f("model_" + name + "_expect");
    SCOPED_TRACE(model_path);
    const Batch batch = batch_of(f);
    const float smoothing = std::stof(f.st.meta("label_smoothing"));
    const float sampling = std::stof(f.st.meta("sampling_prob"));

    // ---- (a) the PyTorch-written file loads; parameter names are the contract both ways ----
    LoadedModel lm = load_model(model_path);
    Seq2Seq& model = *lm.model;
    const ParamList params = model.parameters();
    {
        std::set<std::string> ours, theirs;
        for (const auto& p : params) ours.insert(p.name);
        for (const auto& n : f.list("params")) theirs.insert(n);
        EXPECT_EQ(ours, theirs) << "parameter names of nazar vs PyTorch";
    }
    EXPECT_EQ(to_json_string(model.config()), f.st.meta("config"))
        << "nazar.config as nazar writes it";

    std::vector<double> scores(static_cast<std::size_t>(batch.B));
    TrainPass(model).score(batch, scores);
    const Tensor& want_scores = f["scores"];
    Tensor got_scores(Shape{batch.B});
    double worst_score = 0;
    for (int b = 0; b < batch.B; ++b) {
        got_scores[b] = static_cast<float>(scores[b]);
        const double rel =
            std::abs(scores[b] - want_scores[b]) / std::abs(static_cast<double>(want_scores[b]));
        worst_score = std::max(worst_score, rel);
        EXPECT_LE(rel, kTol) << "sentence " << b << ": nazar " << scores[b] << " vs PyTorch "
                             << want_scores[b];
    }
    f.expect_output("scores", got_scores, kTol);
    const LossStats ev = TrainPass(model).eval_loss(batch, smoothing);
    f.expect_output("loss", Tensor::from({1}, std::vector<float>{static_cast<float>(ev.loss)}),
                    kTol);
    f.expect_output("tokens", Tensor::from({1}, std::vector<float>{static_cast<float>(ev.tokens)}),
                    0.0);
    if (smoothing == 0.0f) {  // Σ_b score[b] == −loss
        double sum = 0;
        for (double s : scores) sum += s;
        EXPECT_NEAR(sum, -ev.loss, 1e-4 * ev.loss);
    }

    // ---- greedy decoding (same tokens, same summed log-probabilities) ----
    const std::vector<int32_t> src(batch.src.begin(), batch.src.end());
    const auto greedy = greedy_decode(model, src, batch.src_lengths, batch.S);
    const Tensor& want_tokens = f["greedy_tokens"];
    Tensor tokens(want_tokens.shape()), lengths(Shape{batch.B}), gscores(Shape{batch.B});
    tokens.fill(-1.0f);
    for (int b = 0; b < batch.B; ++b) {
        const auto& r = greedy[static_cast<std::size_t>(b)];
        lengths[b] = static_cast<float>(r.tokens.size());
        gscores[b] = static_cast<float>(r.score);
        for (std::size_t i = 0; i < r.tokens.size() && static_cast<int>(i) < tokens.dim(1); ++i)
            tokens.at(b, static_cast<int64_t>(i)) = static_cast<float>(r.tokens[i]);
    }
    f.expect_output("greedy_lengths", lengths, 0.0);
    f.expect_output("greedy_tokens", tokens, 0.0);
    f.expect_output("greedy_scores", gscores, kTol);
    Tensor gatt(f["greedy_attention"].shape());  // (B, n, S), 0 beyond each result
    for (int b = 0; b < batch.B; ++b)
        place_attention(greedy[static_cast<std::size_t>(b)].attention, gatt.select(b));
    f.expect_output("greedy_attention", gatt, kTol);

    // ---- beam search (same n-best lists: tokens, finished flags, log-probabilities, GNMT scores)
    // ----
    const nlohmann::json bo = nlohmann::json::parse(f.st.meta("beam"));
    const BeamOptions beam_options{.beam_size = bo.at("beam_size").get<int>(),
                                   .n_best = bo.at("n_best").get<int>(),
                                   .length_penalty = bo.at("alpha").get<float>(),
                                   .coverage_penalty = bo.at("beta").get<float>()};
    const auto beams = beam_search(model, src, batch.src_lengths, batch.S, beam_options);
    const Tensor& want_beam = f["beam.tokens"];  // (B, N, n)
    const int NB = want_beam.dim(1);
    Tensor btokens(want_beam.shape()), blengths(Shape{batch.B, NB}), bfinished(Shape{batch.B, NB});
    Tensor bscores(Shape{batch.B, NB}), blogp(Shape{batch.B, NB}),
        batt(f["beam.attention"].shape());
    btokens.fill(-1.0f);
    for (int b = 0; b < batch.B; ++b) {
        const auto& hyps = beams[static_cast<std::size_t>(b)];
        ASSERT_EQ(static_cast<int>(hyps.size()), NB) << "sentence " << b << ": n-best list size";
        for (int k = 0; k < NB; ++k) {
            const Hypothesis& h = hyps[static_cast<std::size_t>(k)];
            blengths.at(b, k) = static_cast<float>(h.tokens.size());
            bfinished.at(b, k) = h.finished ? 1.0f : 0.0f;
            bscores.at(b, k) = static_cast<float>(h.score);
            blogp.at(b, k) = static_cast<float>(h.log_prob);
            place_attention(h.attention, batt.select(b).select(k));
            for (std::size_t i = 0; i < h.tokens.size() && static_cast<int>(i) < btokens.dim(2);
                 ++i)
                btokens.at(b, k, static_cast<int64_t>(i)) = static_cast<float>(h.tokens[i]);
        }
    }
    f.expect_output("beam.lengths", blengths, 0.0);
    f.expect_output("beam.finished", bfinished, 0.0);
    f.expect_output("beam.tokens", btokens, 0.0);
    f.expect_output("beam.scores", bscores, kTol);
    f.expect_output("beam.log_probs", blogp, kTol);
    f.expect_output("beam.attention", batt, kTol);

    // ---- (b) one training step: gradients of loss / tokens, every parameter by name ----
    // dropout cases: the fixture's masks at every site (seq2seq.h DropoutMasks)
    const bool dropout = f.st.has_meta("dropout");
    DropoutMasks masks;
    if (dropout) {
        masks.src_emb = f["mask.src_emb"];
        masks.enc_out = f["mask.enc_out"];
        masks.tgt_emb = f["mask.tgt_emb"];
        masks.dec_out = f["mask.dec_out"];
        masks.attention = f["mask.attention"];
    }
    zero_grads(params);
    Rng rng(5);
    // coverage cases: the training objective adds λ Σ min(α, cov) (train_loss includes it)
    const float coverage_weight =
        f.st.has_meta("coverage_loss_weight") ? std::stof(f.st.meta("coverage_loss_weight")) : 0.0f;
    const LossStats st = TrainPass(model).train_step(batch,
                                                     {.label_smoothing = smoothing,
                                                      .sampling_prob = sampling,
                                                      .grad_scale = 0.0f,
                                                      .masks = dropout ? &masks : nullptr,
                                                      .coverage_loss_weight = coverage_weight},
                                                     rng);
    if (dropout) {  // the masks must matter: a wrong site would otherwise pass unnoticed
        EXPECT_GT(std::abs(st.loss - ev.loss), 1e-3 * ev.loss)
            << "train_step with dropout masks gives the evaluation loss";
    } else if (sampling == 0.0f) {
        EXPECT_NEAR(st.loss, ev.loss, 1e-6 * ev.loss)
            << "train_step and eval_loss disagree (dropout is 0)";
    }
    if (coverage_weight > 0) {
        EXPECT_GT(st.coverage_loss, 1e-3) << "the coverage loss is 0";
    }
    f.expect_output(
        "train_loss",
        Tensor::from({1}, std::vector<float>{static_cast<float>(st.loss + st.coverage_loss)}),
        kTol);
    EXPECT_EQ(st.tokens, ev.tokens);
    f.expect_grads(params, kTol);
    std::string worst_name;
    const double worst_grad = worst_grad_error(f, params, worst_name);
    std::printf("[ parity ] %-20s worst score rel err %.2e, worst grad rel err %.2e (%s)\n",
                name.c_str(), worst_score, worst_grad, worst_name.c_str());
    ::testing::Test::RecordProperty("worst_grad_rel_err",
                                    fmt::format("{:.3g} {}", worst_grad, worst_name));
    f.expect_all_compared();

    // ---- (c) nazar saves the PyTorch-written model back: same tensors, same metadata, same bytes
    // ----
    const std::string out =
        std::string(NAZAR_BINARY_DIR) + "/parity-models-resave-" + name + ".safetensors";
    LoadedModel fresh = load_model(model_path);  // parameters untouched by the training step above
    save_model(out, *fresh.model, fresh.metadata);
    const SafeTensors a = load_safetensors(model_path), b = load_safetensors(out);
    EXPECT_EQ(a.names(), b.names());
    for (const auto& n : a.names()) {
        if (!b.contains(n)) continue;
        EXPECT_EQ(max_abs_diff(a.get(n), b.get(n)), 0.0)
            << "tensor " << n << " changed on nazar's re-save";
    }
    EXPECT_EQ(a.metadata, b.metadata);
    EXPECT_TRUE(read_file(model_path) == read_file(out))
        << "re-saved file differs in bytes from " << model_path;
    std::vector<double> again(scores.size());
    TrainPass(*load_model(out).model).score(batch, again);
    std::vector<double> first(scores.size());
    TrainPass(*fresh.model).score(batch, first);
    EXPECT_EQ(first, again) << "the re-saved model scores differently";
    std::remove(out.c_str());
}

TEST(ParityModels, BahdanauGru) {
    check_model("bahdanau_gru");
}
TEST(ParityModels, BahdanauDeepOutputTied) {
    check_model("bahdanau_deep_tied");
}  // 2 decoder layers
TEST(ParityModels, LuongDot) {
    check_model("luong_dot");
}
TEST(ParityModels, LuongGeneral) {
    check_model("luong_general");
}  // unidirectional 2-layer encoder
TEST(ParityModels, LuongGeneralInputFeeding) {
    check_model("luong_general_feed");
}  // scaled, ε = 0.1
TEST(ParityModels, LuongConcat) {
    check_model("luong_concat");
}  // bridge zero
TEST(ParityModels, LuongLocalMonotonic) {
    check_model("luong_local_m");
}
TEST(ParityModels, LuongLocalPredictive) {
    check_model("luong_local_p");
}
TEST(ParityModels, LuongLstm) {
    check_model("luong_lstm");
}  // LSTM encoder (2 layers) and decoder
TEST(ParityModels, BahdanauLstmMeanBridge) {
    check_model("bahdanau_lstm_mean");
}  // unidirectional encoder
// docs/spec.md §6 ablations (named explicitly in the config): general score before the RNN step
// with a learned scale; additive score after it, with local-p
TEST(ParityModels, AblationBahdanauGeneral) {
    check_model("ablation_bahdanau_general");
}
TEST(ParityModels, AblationLuongAdditiveLocalP) {
    check_model("ablation_luong_additive_local_p");
}
// scheduled sampling with p = 1 (deterministic): the training step feeds the model's own argmax
TEST(ParityModels, BahdanauScheduledSampling) {
    check_model("bahdanau_sampled");
}
// an empty source sentence in the batch (S_b = 0): zero encoder states, empty local-p window
TEST(ParityModels, EmptySourceSentence) {
    check_model("empty_source");
}
// train mode with fixed dropout masks at every site (embeddings, encoder states, decoder output):
// deep output + mean bridge (reads the dropped H); Luong split outputs with per-sentence masks;
// Luong input feeding (the feed is not dropped)
TEST(ParityModels, BahdanauDropoutMasks) {
    check_model("bahdanau_dropout");
}
TEST(ParityModels, LuongDropoutMasksPerSentence) {
    check_model("luong_dropout");
}
TEST(ParityModels, LuongInputFeedingDropoutMasks) {
    check_model("luong_feed_dropout");
}
// coverage attention with the coverage loss in the training step (w_c random, λ 0.7 / 0.4)
// layer-normalised GRU cells: 2-layer bidirectional encoder, 2-layer Bahdanau decoder, H = 16
TEST(ParityModels, BahdanauLayerNorm) {
    check_model("bahdanau_layer_norm");
}
TEST(ParityModels, LuongLayerNormInputFeeding) {
    check_model("luong_layer_norm_feed");
}
TEST(ParityModels, LuongLstmLayerNorm) {  // LSTM encoder, 2-layer LSTM decoder, input feeding
    check_model("luong_lstm_layer_norm");
}
TEST(ParityModels, BahdanauResidualEncoder) {  // 3-layer bidirectional encoder_residual
    check_model("bahdanau_residual");
}

TEST(ParityModels, BahdanauDeepTransitionEncoder) {  // 2 GRU cells a step, layer norm, 2 layers
    check_model("bahdanau_transition");
}

TEST(ParityModels, BahdanauCoverage) {
    check_model("bahdanau_coverage");
}
TEST(ParityModels, LuongConcatCoverage) {
    check_model("luong_concat_coverage");
}
// monotonic attention (r random around monotonic_bias_init, noise 0): teacher forcing with the
// expected alignment carried from step to step, greedy and beam search with hard attention (one
// position or none; the generator keeps every examined |e_j + r| >= 1e-3)
TEST(ParityModels, BahdanauMonotonic) {
    check_model("bahdanau_monotonic");
}
TEST(ParityModels, LuongGeneralMonotonic) {  // learned scale, input feeding, an empty sentence
    check_model("luong_general_monotonic");
}
// MoChA (v_c random, |v_c| in [2, 4), noise 0): teacher forcing with the chunkwise β over the
// expected alignment α (the context sums β, the step reports β, the next step reads α); greedy
// and beam search attend to the softmax of u over the w positions ending at the hard stop (cut at
// position 0), or to nothing once the reader ran off the end
TEST(ParityModels, BahdanauMocha) {  // w = 2, c_t = Σ β h feeds the RNN step
    check_model("bahdanau_mocha");
}
TEST(ParityModels, LuongConcatMocha) {  // w = 3, input feeding, an empty sentence
    check_model("luong_concat_mocha");
}

// ---- export for check_model_files.py (parity.model_files_cli); skipped in a plain ctest run ----
// For every case: nazar_<case>.safetensors = a model INITIALISED and saved by nazar (the case's
// config, Rng seed 7, the fixture's vocabularies/tokenizers); <case>.src / <case>.tgt = the
// fixture batch as text ("s5 s9", "t4 t12"); nazar_<case>.scores = TrainPass::score in-process
// (%.17g); torch_<case>.safetensors = the PyTorch-written fixture model, copied byte for byte;
// resaved_<case>.safetensors = that model loaded and saved by nazar.
TEST(ParityModelFiles, Export) {
    const char* dir = std::getenv("NAZAR_PARITY_EXPORT");
    if (dir == nullptr || *dir == '\0')
        GTEST_SKIP() << "set NAZAR_PARITY_EXPORT=<dir> (check_model_files.py does)";
    const std::string d(dir);
    for (const char* c : kCases) {
        const std::string name(c), model_path = test::fixture_path("model_" + name);
        Fixture f("model_" + name + "_expect");
        const Batch batch = batch_of(f);
        LoadedModel torch_model = load_model(model_path);

        Seq2Seq mine(model_config_from_string(f.st.meta("config")), 7);
        std::map<std::string, std::string> meta;
        for (const char* k : {kSrcVocabKey, kTgtVocabKey, kSrcTokenizerKey, kTgtTokenizerKey})
            meta[k] = torch_model.metadata.at(k);
        save_model(d + "/nazar_" + name + ".safetensors", mine, meta);

        std::string src_text, tgt_text, score_text;
        for (int b = 0; b < batch.B; ++b) {
            for (int s = 0; s < batch.src_lengths[b]; ++s)
                src_text += (s ? " s" : "s") + std::to_string(batch.src_at(b, s));
            for (int t = 0; t + 1 < batch.tgt_lengths[b]; ++t)
                tgt_text += (t ? " t" : "t") + std::to_string(batch.tgt_out_at(b, t));
            src_text += "\n";
            tgt_text += "\n";
        }
        std::vector<double> scores(static_cast<std::size_t>(batch.B));
        TrainPass(mine).score(batch, scores);
        for (double s : scores) score_text += fmt::format("{:.17g}\n", s);
        atomic_write_file(d + "/" + name + ".src", src_text);
        atomic_write_file(d + "/" + name + ".tgt", tgt_text);
        atomic_write_file(d + "/nazar_" + name + ".scores", score_text);
        atomic_write_file(d + "/torch_" + name + ".safetensors", read_file(model_path));
        save_model(d + "/resaved_" + name + ".safetensors", *torch_model.model,
                   torch_model.metadata);
    }
}

}  // namespace
}  // namespace test_parity_models
}  // namespace nazar
