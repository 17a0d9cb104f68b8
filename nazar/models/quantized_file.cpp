// Quantized model files (quantized_file.h).
#include "nazar/models/quantized_file.h"

#include "nazar/core/check.h"

#include <cmath>
#include <cstring>
#include <iterator>

namespace nazar {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool state_tensor(const std::string& name) {
    return name.rfind("optim.", 0) == 0 || name.rfind("train.", 0) == 0;
}

}  // namespace

bool quantized_param(const std::string& name, const Shape& shape) {
    // one-row matrices are vectors (attention v_a, v_p), read by the attention kernels
    return shape.ndim() == 2 && shape[0] > 1 && shape[1] > 0 && !state_tensor(name);
}

bool embedding_param(const std::string& name) {
    return ends_with(name, "embedding.weight");
}

std::optional<Precision> file_precision(const SafeTensors& st) {
    if (!st.has_meta(kPrecisionKey)) {
        NZ_CHECK(st.raw().empty(),
                 "'{}': tensor '{}' is stored as {} but the file has no '{}' metadata", st.source,
                 st.raw().begin()->first, st.raw().begin()->second.dtype, kPrecisionKey);
        return std::nullopt;
    }
    const std::string& v = st.meta(kPrecisionKey);
    NZ_CHECK(v == "int8" || v == "bf16", "'{}': metadata '{}' must be int8 or bf16, got '{}'",
             st.source, kPrecisionKey, v);
    return parse_precision(v);
}

SafeTensors quantize_model_file(const SafeTensors& in, Precision p) {
    NZ_CHECK(p != Precision::fp32, "quantize: precision must be int8 or bf16");
    NZ_CHECK(!file_precision(in), "'{}' is already quantized ({}): quantize its fp32 model",
             in.source, in.metadata.count(kPrecisionKey) ? in.meta(kPrecisionKey) : "");
    SafeTensors out;
    out.metadata = in.metadata;
    out.metadata[kPrecisionKey] = precision_name(p);
    // a model file for inference: a checkpoint's training state is left behind
    for (auto it = out.metadata.begin(); it != out.metadata.end();)
        it = it->first.rfind("train.", 0) == 0 ? out.metadata.erase(it) : std::next(it);
    // tied: generator.weight is the target embedding's copy, quantized to the same bytes
    for (const auto& [name, t] : in.tensors()) {
        if (state_tensor(name)) continue;
        if (!quantized_param(name, t.shape())) {
            out.set(name, t.view());
            continue;
        }
        const int N = t.dim(0), K = t.dim(1);
        const PackedMatrix m = PackedMatrix::pack(t.data(), N, K, K, p);
        RawTensor r{p == Precision::int8 ? "I8" : "BF16", t.shape(), {}};
        r.bytes.resize(static_cast<std::size_t>(t.numel()) * (p == Precision::int8 ? 1 : 2));
        for (int n = 0; n < N; ++n)
            for (int k = 0; k < K; ++k) {
                const std::size_t i = static_cast<std::size_t>(n) * K + k;
                if (p == Precision::int8) {
                    const int8_t q = m.q(n, k);
                    std::memcpy(&r.bytes[i], &q, 1);
                } else {
                    const uint16_t b = m.bf16(n, k);
                    std::memcpy(&r.bytes[2 * i], &b, 2);
                }
            }
        out.set_raw(name, std::move(r));
        if (p == Precision::int8) {
            Tensor s({N});
            std::memcpy(s.data(), m.scales(), sizeof(float) * N);
            out.set(name + kScaleSuffix, std::move(s));
        }
    }
    return out;
}

namespace {

// The checks every raw tensor of a precision-p file passes; returns its scales (int8: checked
// finite and >= 0) or null (bf16).
const Tensor* checked_raw(const SafeTensors& st, const std::string& name, const RawTensor& r,
                          Precision p) {
    const std::string want = p == Precision::int8 ? "I8" : "BF16";
    NZ_CHECK(r.dtype == want, "'{}': tensor '{}' is {} in a {} file (expected {})", st.source, name,
             r.dtype, precision_name(p), want);
    NZ_CHECK(r.shape.ndim() == 2, "'{}': quantized tensor '{}' has shape {}, expected a matrix",
             st.source, name, r.shape.str());
    if (p != Precision::int8) return nullptr;
    const int N = static_cast<int>(r.shape[0]);
    const std::string sname = name + kScaleSuffix;
    NZ_CHECK(st.contains(sname), "'{}': int8 tensor '{}' has no scales '{}'", st.source, name,
             sname);
    const Tensor& s = st.get(sname, Shape{N});
    for (int n = 0; n < N; ++n)
        NZ_CHECK(std::isfinite(s[n]) && s[n] >= 0,
                 "'{}': tensor '{}' row {}: scale {} is not a finite value >= 0", st.source, sname,
                 n, s[n]);
    return &s;
}

uint16_t bf16_at(const RawTensor& r, std::size_t i) {
    uint16_t b;
    std::memcpy(&b, &r.bytes[2 * i], 2);
    return b;
}

Tensor dequantized(const SafeTensors& st, const std::string& name, const RawTensor& r,
                   Precision p) {
    const Tensor* s = checked_raw(st, name, r, p);
    const int K = static_cast<int>(r.shape[1]);
    Tensor w(r.shape);
    for (int64_t i = 0; i < w.numel(); ++i)
        w[i] = s ? static_cast<float>(static_cast<int8_t>(r.bytes[static_cast<std::size_t>(i)])) *
                       (*s)[i / K]
                 : bf16_to_float(bf16_at(r, static_cast<std::size_t>(i)));
    return w;
}

}  // namespace

SafeTensors dequantize_model_file(const SafeTensors& st) {
    const std::optional<Precision> p = file_precision(st);
    NZ_CHECK(p.has_value(), "'{}' is not a quantized model file", st.source);
    SafeTensors out;
    out.source = st.source;
    out.metadata = st.metadata;
    out.metadata.erase(kPrecisionKey);  // an fp32 model file now
    for (const auto& [name, t] : st.tensors()) out.set(name, t.view());
    for (const auto& [name, r] : st.raw()) {
        out.set(name, dequantized(st, name, r, *p));
        if (*p == Precision::int8) out.erase(name + kScaleSuffix);
    }
    return out;
}

namespace {

// A tied model's raw generator.weight must be the raw target embedding (quantize_model_file
// writes the same bytes and scales); it is then dropped: the generator reads the embedding.
void drop_tied_generator(SafeTensors& st, Precision p) {
    const std::string gen = "generator.weight", emb = "decoder.embedding.weight";
    const auto g = st.raw().find(gen), e = st.raw().find(emb);
    if (g == st.raw().end()) {
        NZ_CHECK_INPUT(
            e == st.raw().end() || !st.contains(gen),
            "'{}': tied model: '{}' is {} but '{}' is F32; a quantized file stores both alike",
            st.source, emb, e == st.raw().end() ? "" : e->second.dtype, gen);
        return;
    }
    bool same = e != st.raw().end() && e->second.dtype == g->second.dtype &&
                e->second.shape == g->second.shape && e->second.bytes == g->second.bytes;
    if (same && p == Precision::int8) {
        checked_raw(st, gen, g->second, p);
        checked_raw(st, emb, e->second, p);
        same = max_abs_diff(st.get(gen + kScaleSuffix), st.get(emb + kScaleSuffix)) == 0.0;
    }
    NZ_CHECK_INPUT(same,
                   "'{}': tied model but generator.weight differs from decoder.embedding.weight",
                   st.source);
    st.erase_raw(gen);
    st.erase(gen + kScaleSuffix);
}

}  // namespace

std::vector<std::pair<std::string, PackedMatrix>> take_packed_matrices(SafeTensors& st, Precision p,
                                                                       bool tied) {
    if (tied) drop_tied_generator(st, p);
    std::vector<std::pair<std::string, PackedMatrix>> out;
    std::vector<std::string> names;
    for (const auto& [name, r] : st.raw()) names.push_back(name);
    for (const std::string& name : names) {
        const RawTensor& r = st.raw().at(name);
        if (!quantized_param(name, r.shape)) {  // read as F32, as dequantize_model_file does
            Tensor w = dequantized(st, name, r, p);
            st.set(name, std::move(w));
            if (p == Precision::int8) st.erase(name + kScaleSuffix);
            continue;
        }
        const Tensor* s = checked_raw(st, name, r, p);
        const int N = static_cast<int>(r.shape[0]), K = static_cast<int>(r.shape[1]);
        if (!s)
            for (std::size_t i = 0; i < r.bytes.size() / 2; ++i)
                NZ_CHECK(std::isfinite(bf16_to_float(bf16_at(r, i))),
                         "'{}': tensor '{}' holds a non-finite value ({}) at index {}", st.source,
                         name, bf16_to_float(bf16_at(r, i)), i);
        const Shape shape = r.shape;
        // packed where the file's bytes lie (load_safetensors left room for it): no second copy
        out.emplace_back(name, PackedMatrix::adopt_rows(p, st.take_raw(name).bytes,
                                                        s ? s->data() : nullptr, N, K));
        st.set(name, Tensor::reserved(shape));
        if (s) st.erase(name + kScaleSuffix);
    }
    return out;
}

}  // namespace nazar
