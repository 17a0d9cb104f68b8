// Model files as numpy (docs/python.md "Model files"): load_model reads a model file with every
// check of nazar/models/model_file.h and hands its parameters over as arrays (the buffers move
// out of the model, no copy); save_model builds the model of a configuration, fills every
// parameter from arrays matched by name (weight-naming contract, README "Weight names") and
// writes it with the library's writer, so the file is byte-for-byte what nazar itself writes.
#include "common.h"

#include "nazar/core/check.h"
#include "nazar/models/config.h"
#include "nazar/models/model_file.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <map>
#include <set>
#include <string>

namespace nazar::py {
namespace {

Shape shape_of(const pb::array& a) {
    std::vector<int64_t> dims(a.shape(), a.shape() + a.ndim());
    if (dims.size() > static_cast<std::size_t>(kMaxDims))
        throw UsageError(
            fmt::format("an array of {} dimensions cannot be a nazar tensor", dims.size()));
    return Shape(std::span<const int64_t>(dims));
}

pb::tuple load(const std::string& path) {
    LoadedModel lm;
    {
        pb::gil_scoped_release nogil;
        lm = load_model(path);
    }
    pb::list params;
    for (const ParamRef& p : lm.model->parameters())
        params.append(pb::make_tuple(p.name, to_numpy(std::move(*p.value))));
    return pb::make_tuple(to_json_string(lm.model->config()), params, lm.metadata);
}

void save(const std::string& path, const std::string& config_json, const pb::dict& params,
          const std::map<std::string, std::string>& metadata) {
    const ModelConfig cfg = model_config_from_string(config_json);
    validate(cfg);
    Seq2Seq model(cfg);
    std::set<std::string> used;
    for (const ParamRef& p : model.parameters()) {
        if (!params.contains(p.name))
            throw UsageError(
                fmt::format("parameter '{}' {} is missing", p.name, p.value->shape().str()));
        const auto a = params[pb::str(p.name)]
                           .cast<pb::array_t<float, pb::array::c_style | pb::array::forcecast>>();
        const Shape s = shape_of(a);
        if (!(s == p.value->shape()))
            throw UsageError(fmt::format("parameter '{}' has shape {}, expected {}", p.name,
                                         s.str(), p.value->shape().str()));
        std::copy(a.data(), a.data() + a.size(), p.value->data());
        used.insert(p.name);
    }
    for (const auto& [k, v] : params) {
        const std::string name = pb::str(k);
        if (used.count(name)) continue;
        // With tied embeddings the file also carries generator.weight, a copy of the embedding.
        if (name == "generator.weight" && cfg.tie_target_embeddings) continue;
        throw UsageError(
            fmt::format("unexpected parameter '{}' (not in this configuration)", name));
    }
    pb::gil_scoped_release nogil;
    save_model(path, model, metadata);
}

}  // namespace

void init_model(pb::module_& m) {
    m.def("load_model", &load, pb::arg("path"));
    m.def("save_model", &save, pb::arg("path"), pb::arg("config_json"), pb::arg("params"),
          pb::arg("metadata"));
}

}  // namespace nazar::py
