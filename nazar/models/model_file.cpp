// The model file: parameters + config + vocabularies in one safetensors (model_file.h).
#include "nazar/models/model_file.h"

#include "nazar/core/block_cache.h"
#include "nazar/data/vocab.h"
#include "nazar/models/quantized_file.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <set>

namespace nazar {

void model_to_safetensors(Seq2Seq& model, const std::map<std::string, std::string>& metadata,
                          SafeTensors& out) {
    for (const ParamRef& p : model.parameters())
        NZ_CHECK_INPUT(
            !p.value->reserved(),
            "cannot save '{}': the model holds it only in {} (packed for inference); save "
            "the fp32 model it was loaded from",
            p.name, precision_name(model.precision()));
    out.set_params(model.parameters());
    if (model.config().tie_target_embeddings) out.set("generator.weight", model.generator_weight());
    for (const auto& [k, v] : metadata) out.metadata[k] = v;
    out.metadata.insert_or_assign(kModelFormatKey, std::string(kModelFormatVersion));
    out.metadata[kModelConfigKey] = to_json_string(model.config());
}

namespace {

using ShapeFn = std::function<void(const std::string&, const Shape&)>;

// torch.nn.GRU/LSTM cell parameters of one layer-direction (nn/rnn.h, nn/gru_cell.cpp).
void rnn_cell(const ShapeFn& f, const std::string& base, const std::string& suffix, int64_t gates,
              int64_t in, int64_t hidden, bool layer_norm) {
    f(base + "weight_ih" + suffix, Shape{gates * hidden, in});
    f(base + "weight_hh" + suffix, Shape{gates * hidden, hidden});
    f(base + "bias_ih" + suffix, Shape{gates * hidden});
    f(base + "bias_hh" + suffix, Shape{gates * hidden});
    if (layer_norm) {  // the LN gains (nn/gru_cell.h), after the cell's four tensors
        f(base + "ln_weight_ih" + suffix, Shape{gates * hidden});
        f(base + "ln_weight_hh" + suffix, Shape{gates * hidden});
    }
}

int64_t gates(CellType c) {
    return c == CellType::gru ? 3 : 4;
}

void check_vocab(const SafeTensors& st, const ModelConfig& cfg, const char* key, int expected,
                 const char* what) {
    if (!st.has_meta(key)) return;
    const Vocab v = Vocab::from_json(st.meta(key));
    NZ_CHECK_INPUT(
        v.size() == expected,
        "'{}': {} vocabulary ({}) has {} entries but the model's {} embedding has {} rows",
        st.source, what, key, v.size(), what, expected);
    // A nazar vocabulary has fixed special ids; decoding and scoring go by the config's, so the
    // two must agree (otherwise </s> may never be produced, or <pad> is scored).
    const SpecialIds& sp = cfg.special_ids;
    NZ_CHECK_INPUT(
        sp.pad == Vocab::pad && sp.unk == Vocab::unk && sp.bos == Vocab::bos &&
            sp.eos == Vocab::eos,
        "'{}': nazar.config special_ids (pad {}, unk {}, bos {}, eos {}) disagree with the {} "
        "vocabulary's (pad {}, unk {}, bos {}, eos {})",
        st.source, sp.pad, sp.unk, sp.bos, sp.eos, what, Vocab::pad, Vocab::unk, Vocab::bos,
        Vocab::eos);
}

// The first index in [0, n) whose float is NaN or ±inf (exponent bits all ones), or n.
int64_t first_non_finite(const float* v, int64_t n) {
    constexpr uint32_t kExp = 0x7f800000u;
    constexpr int64_t kChunk = 4096;  // a branch-free pass per chunk, then locate
    for (int64_t begin = 0; begin < n; begin += kChunk) {
        const int64_t end = std::min(n, begin + kChunk);
        uint32_t any = 0;
        for (int64_t i = begin; i < end; ++i) {
            uint32_t bits;
            std::memcpy(&bits, v + i, sizeof bits);
            any |= static_cast<uint32_t>((bits & kExp) == kExp);
        }
        if (!any) continue;
        for (int64_t i = begin; i < end; ++i)
            if (!std::isfinite(v[i])) return i;
    }
    return n;
}

}  // namespace

// Mirrors the constructors: Encoder and Bridge (encoder.cpp), Decoder (decoder.cpp), Attention
// (attention.cpp), generator Linear (seq2seq.cpp). Sizes are int64_t so that hostile sizes
// (G·H beyond int) cannot overflow. test_model_file_hostile.cpp compares this table with
// Seq2Seq::parameters() over every structural choice.
void visit_param_shapes(const ModelConfig& cfg, const ShapeFn& f) {
    const int64_t E = cfg.embedding_size, Hn = cfg.encoder.hidden_size, H = cfg.decoder.hidden_size;
    const int64_t Dn = cfg.encoder.bidirectional ? 2 : 1, C = Dn * Hn, L = cfg.decoder.num_layers;
    const int64_t d_out = generator_input_size(cfg), V = cfg.tgt_vocab_size;
    // encoder.embedding, encoder.rnn (torch order: per layer, forward then _reverse)
    f("encoder.embedding.weight", Shape{cfg.src_vocab_size, E});
    for (int k = 0; k < cfg.encoder.num_layers; ++k)
        for (int d = 0; d < Dn; ++d) {
            const std::string sfx = "_l" + std::to_string(k) + (d ? "_reverse" : "");
            rnn_cell(f, "encoder.rnn.", sfx, gates(cfg.encoder.cell), k == 0 ? E : C, Hn,
                     cfg.encoder.layer_norm);
            for (int j = 1; j < cfg.encoder.transition_depth; ++j) {  // nn/transition.h
                const std::string t = sfx + "_t" + std::to_string(j);
                f("encoder.rnn.weight_hh" + t, Shape{3 * Hn, Hn});
                f("encoder.rnn.bias_ih" + t, Shape{3 * Hn});
                f("encoder.rnn.bias_hh" + t, Shape{3 * Hn});
                if (cfg.encoder.layer_norm) f("encoder.rnn.ln_weight_hh" + t, Shape{3 * Hn});
            }
        }
    // bridge: Linear(in, L·H) unless zero
    const BridgeKind bridge = effective_bridge(cfg);
    if (bridge != BridgeKind::zero) {
        const int64_t in = bridge == BridgeKind::backward_first ? Hn : C;
        f("bridge.weight", Shape{L * H, in});
        f("bridge.bias", Shape{L * H});
    }
    // decoder: embedding, cells (layer 0 input E + feed), combine (luong), deep output
    f("decoder.embedding.weight", Shape{V, E});
    const bool luong = cfg.decoder.kind == DecoderKind::luong;
    const int64_t feed = luong ? (cfg.decoder.input_feeding ? H : 0) : C;
    for (int64_t l = 0; l < L; ++l)
        rnn_cell(f, "decoder.rnn.", "_l" + std::to_string(l), gates(cfg.decoder.cell),
                 l == 0 ? E + feed : H, H, cfg.decoder.layer_norm);
    if (luong) f("decoder.combine.weight", Shape{H, H + C});
    if (cfg.decoder.deep_output) {
        f("decoder.deep_output.state.weight", Shape{d_out, H});
        f("decoder.deep_output.prev.weight", Shape{d_out, E});
        f("decoder.deep_output.context.weight", Shape{d_out, C});
    }
    // attention (AttentionParams::visit order)
    const AttentionConfig a = attention_config(cfg);
    const int64_t A = a.attention_size, P = a.position_size;
    if (a.score == ScoreKind::additive || a.score == ScoreKind::concat) {
        f("attention.query.weight", Shape{A, H});
        f("attention.key.weight", Shape{A, C});
        f("attention.v.weight", Shape{1, A});
    } else if (a.score == ScoreKind::general) {
        f("attention.key.weight", Shape{H, C});
    }
    if (a.scale == ScaleMode::learned) f("attention.scale", Shape{1});
    if (a.local == LocalMode::predictive) {
        f("attention.position.weight", Shape{P, H});
        f("attention.position_v.weight", Shape{1, P});
    }
    if (a.coverage) f("attention.coverage.weight", Shape{1, A});
    if (a.monotonic) f("attention.monotonic_bias", Shape{1});
    if (a.mocha_chunk > 0) f("attention.chunk_v.weight", Shape{1, A});
    // generator (weight absent when tied: it is decoder.embedding.weight)
    if (!cfg.tie_target_embeddings) f("generator.weight", Shape{V, d_out});
    f("generator.bias", Shape{V});
}

std::vector<std::pair<std::string, Shape>> model_param_shapes(const ModelConfig& cfg) {
    std::vector<std::pair<std::string, Shape>> out;
    visit_param_shapes(
        cfg, [&](const std::string& name, const Shape& shape) { out.emplace_back(name, shape); });
    return out;
}

namespace {

ModelConfig checked_config(const SafeTensors& st) {
    NZ_CHECK_INPUT(st.has_meta(kModelFormatKey),
                   "'{}' is not a nazar model file (no '{}' metadata)", st.source, kModelFormatKey);
    NZ_CHECK_INPUT(
        st.meta(kModelFormatKey) == kModelFormatVersion,
        "'{}': model format version '{}' is not supported (this nazar reads version '{}')",
        st.source, st.meta(kModelFormatKey), kModelFormatVersion);
    ModelConfig cfg;
    try {
        cfg = model_config_from_string(st.meta(kModelConfigKey));
        validate(cfg);
    } catch (const Error& e) {
        // Name the file: the config came from it, not from the user, so a bad value is a
        // corrupt file (exit 1), not a usage error (exit 2 with a --help hint).
        throw Error(fmt::format("'{}': {}: {}", st.source, kModelConfigKey, e.what()));
    }
    return cfg;
}

bool state_name(const std::string& name) {
    return name.rfind("optim.", 0) == 0 || name.rfind("train.", 0) == 0;
}

// The model from st's tensors: moved out of `take` (st itself, or null: copied) for inference.
// Quantized files were turned into placeholders + `packed` by the caller.
LoadedModel build_model(const SafeTensors& st, SafeTensors* take, const ModelConfig& cfg,
                        ParamMode mode, std::optional<Precision> precision,
                        std::vector<std::pair<std::string, PackedMatrix>> packed) {
    // Every tensor the model will allocate must be in the file at its size before anything is
    // allocated: a config with huge sizes then fails here, and a model that passes costs at most
    // twice the file's tensor bytes (values + gradients).
    visit_param_shapes(cfg, [&](const std::string& name, const Shape& shape) {
        NZ_CHECK_INPUT(st.contains(name), "'{}': tensor '{}' is missing (expected shape {})",
                       st.source, name, shape.str());
        const Shape& got = st.get(name).shape();
        NZ_CHECK_INPUT(got == shape,
                       "'{}': tensor '{}' has shape {}, expected {} (from nazar.config)", st.source,
                       name, got.str(), shape.str());
    });
    // The model reads its parameters and (tied) the generator.weight copy; optimizer moments are
    // the checkpoint loader's (train/checkpoint.h). Placeholders hold packed matrices.
    check_finite_tensors(
        st, [&](const std::string& name) { return !state_name(name) && !st.get(name).reserved(); });
    LoadedModel out;
    out.model = std::make_unique<Seq2Seq>(cfg, 1, mode);
    std::set<std::string> expected;
    for (const auto& p : out.model->parameters()) {
        expected.insert(p.name);
        const Tensor& t = st.get(p.name);  // present at its shape (checked above)
        if (t.reserved()) continue;        // packed: the model's own placeholder stays
        if (take && mode == ParamMode::inference)
            *p.value = std::move(take->get(p.name));  // replaces the placeholder, no copy
        else
            *p.value = t;  // a placeholder gets memory; a training parameter keeps its own
    }
    if (cfg.tie_target_embeddings) {
        expected.insert("generator.weight");
        if (st.contains("generator.weight")) {
            const TensorView emb = out.model->decoder.embedding.params.weight;
            const Tensor& g = st.get("generator.weight", emb.shape());
            NZ_CHECK_INPUT(
                max_abs_diff(g, emb) == 0.0,
                "'{}': tied model but generator.weight differs from decoder.embedding.weight",
                st.source);
        }
    }
    for (const auto& name : st.names()) {
        NZ_CHECK_INPUT(state_name(name) || expected.count(name),
                       "'{}': unexpected tensor '{}' (shape {}) for this configuration", st.source,
                       name, st.get(name).shape().str());
    }
    check_vocab(st, cfg, kSrcVocabKey, cfg.src_vocab_size, "source");
    check_vocab(st, cfg, kTgtVocabKey, cfg.tgt_vocab_size, "target");
    if (precision) out.model->set_packed(*precision, std::move(packed));
    // moved when the file is the model's to take (the tokenizers and vocabularies: ~0.6 MB)
    out.metadata = take ? std::move(take->metadata) : st.metadata;
    return out;
}

LoadedModel load_impl(const SafeTensors& st, SafeTensors* take, ParamMode mode) {
    const std::optional<Precision> p = file_precision(st);
    NZ_CHECK_INPUT(!p || mode == ParamMode::inference,
                   "'{}' is a quantized ({}) model file, for translate, score and attention only: "
                   "training needs the fp32 model or a checkpoint",
                   st.source, p ? precision_name(*p) : "");
    const ModelConfig cfg = checked_config(st);
    std::vector<std::pair<std::string, PackedMatrix>> packed;
    if (p) {
        NZ_CHECK(take, "load_impl: a quantized file is loaded from a copy");
        packed = take_packed_matrices(*take, *p, cfg.tie_target_embeddings);
    }
    return build_model(st, take, cfg, mode, p, std::move(packed));
}

}  // namespace

LoadedModel model_from_safetensors(const SafeTensors& st, ParamMode mode) {
    if (file_precision(st)) {  // its raw tensors become packed matrices: work on a copy
        SafeTensors copy = st;
        return load_impl(copy, &copy, mode);
    }
    return load_impl(st, nullptr, mode);
}

LoadedModel model_from_safetensors(SafeTensors&& st, ParamMode mode) {
    return load_impl(st, &st, mode);
}

void check_finite_tensors(const SafeTensors& st,
                          const std::function<bool(const std::string&)>& wanted) {
    for (const auto& [name, t] : st.tensors()) {
        if (wanted && !wanted(name)) continue;
        const int64_t i = first_non_finite(t.data(), t.numel());
        if (i == t.numel()) continue;
        const Shape& shape = t.shape();
        const std::string where = shape.ndim() == 2
                                      ? fmt::format("row {}, column {} of shape {}", i / shape[1],
                                                    i % shape[1], shape.str())
                                      : fmt::format("of shape {}", shape.str());
        throw Error(fmt::format("'{}': tensor '{}' holds a non-finite value ({}) at index {} ({})",
                                st.source, name, t.data()[i], i, where));
    }
}

void save_model(const std::string& path, Seq2Seq& model,
                const std::map<std::string, std::string>& metadata) {
    SafeTensors st;
    model_to_safetensors(model, metadata, st);
    save_safetensors(path, st);
}

LoadedModel load_model(const std::string& path, ParamMode mode) {
    LoadedModel m = model_from_safetensors(load_safetensors(path), mode);
    if (mode == ParamMode::inference) release_free_memory();  // a checkpoint's training state
    return m;
}

}  // namespace nazar
