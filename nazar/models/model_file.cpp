// The model file: parameters + config + vocabularies in one safetensors (model_file.h).
#include "nazar/models/model_file.h"

#include "nazar/data/vocab.h"

#include <set>

namespace nazar {

void model_to_safetensors(Seq2Seq& model, const std::map<std::string, std::string>& metadata, SafeTensors& out) {
    out.set_params(model.parameters());
    if (model.config().tie_target_embeddings) out.set("generator.weight", model.generator_weight());
    for (const auto& [k, v] : metadata) out.metadata[k] = v;
    out.metadata.insert_or_assign(kModelFormatKey, std::string(kModelFormatVersion));
    out.metadata[kModelConfigKey] = to_json_string(model.config());
}

namespace {

void check_vocab(const SafeTensors& st, const char* key, int expected, const char* what) {
    if (!st.has_meta(key)) return;
    const Vocab v = Vocab::from_json(st.meta(key));
    NZ_CHECK(v.size() == expected, "'{}': {} vocabulary ({}) has {} entries but the model's {} embedding has {} rows",
             st.source, what, key, v.size(), what, expected);
}

}  // namespace

LoadedModel model_from_safetensors(const SafeTensors& st) {
    NZ_CHECK(st.has_meta(kModelFormatKey), "'{}' is not a nazar model file (no '{}' metadata)", st.source,
             kModelFormatKey);
    NZ_CHECK(st.meta(kModelFormatKey) == kModelFormatVersion,
             "'{}': model format version '{}' is not supported (this nazar reads version '{}')", st.source,
             st.meta(kModelFormatKey), kModelFormatVersion);
    const ModelConfig cfg = model_config_from_string(st.meta(kModelConfigKey));
    LoadedModel out;
    out.model = std::make_unique<Seq2Seq>(cfg);  // validates the config
    const ParamList params = out.model->parameters();
    std::set<std::string> expected;
    for (const auto& p : params) {
        expected.insert(p.name);
        NZ_CHECK(st.contains(p.name), "'{}': tensor '{}' is missing (expected shape {})", st.source, p.name,
                 p.value->shape().str());
        const Tensor& t = st.get(p.name);
        NZ_CHECK(t.shape() == p.value->shape(), "'{}': tensor '{}' has shape {}, expected {} (from nazar.config)",
                 st.source, p.name, t.shape().str(), p.value->shape().str());
        p.value->copy_from(t);
    }
    if (cfg.tie_target_embeddings) {
        expected.insert("generator.weight");
        if (st.contains("generator.weight")) {
            const TensorView emb = out.model->decoder.embedding.params.weight;
            const Tensor& g = st.get("generator.weight", emb.shape());
            NZ_CHECK(max_abs_diff(g, emb) == 0.0,
                     "'{}': tied model but generator.weight differs from decoder.embedding.weight", st.source);
        }
    }
    for (const auto& name : st.names()) {
        const bool state = name.rfind("optim.", 0) == 0 || name.rfind("train.", 0) == 0;
        NZ_CHECK(state || expected.count(name), "'{}': unexpected tensor '{}' (shape {}) for this configuration",
                 st.source, name, st.get(name).shape().str());
    }
    check_vocab(st, kSrcVocabKey, cfg.src_vocab_size, "source");
    check_vocab(st, kTgtVocabKey, cfg.tgt_vocab_size, "target");
    out.metadata = st.metadata;
    return out;
}

void save_model(const std::string& path, Seq2Seq& model, const std::map<std::string, std::string>& metadata) {
    SafeTensors st;
    model_to_safetensors(model, metadata, st);
    save_safetensors(path, st);
}

LoadedModel load_model(const std::string& path) { return model_from_safetensors(load_safetensors(path)); }

}  // namespace nazar
