// The model file (docs/design.md §5): one .safetensors holding every parameter and what is needed
// to rebuild and use the model.
//
//   tensors        float32, by weight-naming-contract name (Seq2Seq::parameters()). With tied
//                  target embeddings "generator.weight" is ALSO written (a copy of
//                  decoder.embedding.weight) so PyTorch's strict load_state_dict finds every key;
//                  load checks it equals the embedding.
//   __metadata__   "nazar.format" = "1", "nazar.config" = ModelConfig JSON (config.h),
//                  plus the caller's strings, conventionally under the keys below
//                  (Vocab::to_json / Tokenizer::to_string from nazar/data).
// Written atomically (temporary file, fsync, rename: core/fileio.h), so a crash never leaves a
// half-written model.
//
// Loading checks: format version; config valid; every expected tensor present with its expected
// shape (error names the tensor, expected and actual shape); no unexpected tensors (except
// names starting with "optim." or "train.", which checkpoints add); vocab metadata (when
// present) of the size the embeddings have, and the config's special ids equal to the
// vocabulary's fixed ones (data/vocab.h) when a vocabulary is present; every value of every
// tensor the model reads finite (check_finite_tensors).
// The names and shapes are checked against model_param_shapes(config) BEFORE the model is
// built, so a hostile nazar.config (vocabulary 10^9 in an 8 KB file) is refused without
// allocating: the model is only built once every parameter it will allocate is present in the
// file at its size, i.e. its memory is bounded by the file's size (params + grads = 2x; for
// inference the file's own tensors, moved, or 1x).
#pragma once

#include "nazar/core/safetensors.h"
#include "nazar/models/seq2seq.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace nazar {

inline constexpr const char* kModelFormatKey = "nazar.format";
inline constexpr const char* kModelFormatVersion = "1";
inline constexpr const char* kModelConfigKey = "nazar.config";
inline constexpr const char* kSrcVocabKey = "nazar.src_vocab";  // Vocab::to_json()
inline constexpr const char* kTgtVocabKey = "nazar.tgt_vocab";
inline constexpr const char* kSrcTokenizerKey = "nazar.src_tokenizer";  // Tokenizer::to_string()
inline constexpr const char* kTgtTokenizerKey = "nazar.tgt_tokenizer";

struct LoadedModel {
    std::unique_ptr<Seq2Seq> model;
    std::map<std::string, std::string> metadata;  // the whole __metadata__ (incl. nazar.*)
};

// Calls f(name, shape) for each of Seq2Seq(cfg).parameters(), in that order, computing the
// shapes from the configuration alone (nothing is allocated for the tensors). cfg must be valid
// (validate()). f may throw to stop early: the loader does at the first tensor the file lacks,
// so a hostile layer count (num_layers 10^9) costs as many steps as the file has tensors.
void visit_param_shapes(const ModelConfig& cfg,
                        const std::function<void(const std::string&, const Shape&)>& f);
// The same as a list (tests).
std::vector<std::pair<std::string, Shape>> model_param_shapes(const ModelConfig& cfg);

// Parameters + format + config + `metadata` into `out` (replacing same-named entries).
void model_to_safetensors(Seq2Seq& model, const std::map<std::string, std::string>& metadata,
                          SafeTensors& out);
// Rebuilds the model from `st` with every check listed above (errors name st.source).
// mode (core/params.h), the caller's explicit choice:
//   training   parameters with gradients; a quantized model file is refused (training needs
//              fp32 weights).
//   inference  (translate, score, attention, serve, Translator, the Python Translator) no
//              gradients; a quantized model file (quantized_file.h: nazar quantize) is accepted,
//              its matrices held only in packed form (no fp32 copy) and the model set to the
//              file's precision.
// The rvalue form moves the file's tensors into the model instead of copying them.
LoadedModel model_from_safetensors(const SafeTensors& st, ParamMode mode = ParamMode::training);
LoadedModel model_from_safetensors(SafeTensors&& st, ParamMode mode = ParamMode::training);

// Throws nazar::Error naming the first tensor of `st` (in name order) among those `wanted`
// accepts (all when empty) that holds NaN or inf, with the element's index and the value:
//   'm.safetensors': tensor 'generator.weight' holds a non-finite value (nan) at index 37
//   (row 3, column 1 of shape (12, 9))
// Loading refuses such files: NaN weights decode to empty output, and NaN optimizer moments
// make every resumed update a skipped one.
void check_finite_tensors(const SafeTensors& st,
                          const std::function<bool(const std::string&)>& wanted = {});

void save_model(const std::string& path, Seq2Seq& model,
                const std::map<std::string, std::string>& metadata = {});
LoadedModel load_model(const std::string& path, ParamMode mode = ParamMode::training);

}  // namespace nazar
