// Seq2Seq::set_precision (seq2seq.h): the weight matrices a loaded model's products read and
// the two embedding tables, packed once in bf16 or int8 and registered for gemm
// (core/gemm/packed.h); the embeddings' lookups read their packed rows (nn/embedding.h). An
// inference-mode model (core/params.h) keeps only the packed form: each fp32 value becomes a
// Tensor::reserved placeholder, and gemm refuses any other product that would read it
// (packed.h, check_fp32_operands).
#include "nazar/core/block_cache.h"
#include "nazar/core/gemm/packed.h"
#include "nazar/models/quantized_file.h"
#include "nazar/models/seq2seq.h"

#include <map>

namespace nazar {

namespace {

// The matrix p with the values of `from` (any precision): dequantized rows, packed again.
PackedMatrix repack(const PackedMatrix& from, Precision p) {
    Tensor w({from.rows(), from.cols()});
    for (int n = 0; n < from.rows(); ++n) from.dequantize_row(n, w.data() + int64_t{n} * w.dim(1));
    return PackedMatrix::pack(w.data(), w.dim(0), w.dim(1), w.dim(1), p);
}

}  // namespace

Seq2Seq::~Seq2Seq() = default;

void Seq2Seq::set_precision(Precision p) {
    set_packed(p, {});
}

void Seq2Seq::set_packed(Precision p, std::vector<std::pair<std::string, PackedMatrix>> given) {
    NZ_CHECK(given.empty() || mode_ == ParamMode::inference,
             "Seq2Seq::set_packed: packed matrices are given to inference models only");
    {
        const std::lock_guard lock(step_t_mutex_);
        step_t_.reset();  // made from the weights that change now
    }
    std::map<std::string, PackedMatrix> from_file;
    for (auto& [name, m] : given) {
        NZ_CHECK(m.precision() == p, "Seq2Seq::set_packed: '{}' is {}, the model {}", name,
                 precision_name(m.precision()), precision_name(p));
        from_file.emplace(name, std::move(m));
    }
    if (from_file.empty() && p == precision_) return;
    // Each matrix's new packed form (or new fp32 values), made before the old registrations go.
    struct Next {
        Tensor* value;
        PackedMatrix packed;  // precision fp32 (empty) when p is fp32
        Tensor fp32;          // p fp32 and the value is a placeholder: the dequantized values
        bool keep_fp32;
    };
    std::vector<Next> next;
    for (const ParamRef& r : parameters()) {
        Tensor& w = *r.value;
        // the matrices and embeddings a quantized file stores quantized (with a tied generator,
        // its embedding: the lookups read it packed too)
        if (!quantized_param(r.name, w.shape())) continue;
        Next n{&w, {}, {}, mode_ == ParamMode::training};
        const int N = w.dim(0), K = w.dim(1);
        auto it = from_file.find(r.name);
        if (it != from_file.end()) {
            NZ_CHECK(it->second.rows() == N && it->second.cols() == K,
                     "Seq2Seq::set_packed: '{}' is {} x {}, the parameter {}", r.name,
                     it->second.rows(), it->second.cols(), w.shape().str());
            n.packed = std::move(it->second);
            from_file.erase(it);
        } else if (!w.reserved()) {
            if (p != Precision::fp32) n.packed = PackedMatrix::pack(w.data(), N, K, K, p);
        } else {  // held only packed: start from the packed values
            const std::shared_ptr<const PackedMatrix> old =
                packed_ ? packed_->get(w.data()) : nullptr;
            NZ_CHECK(old, "Seq2Seq::set_precision: '{}' has neither fp32 nor packed values",
                     r.name);
            if (p == Precision::fp32) {
                n.fp32 = Tensor(w.shape());
                for (int row = 0; row < N; ++row)
                    old->dequantize_row(row, n.fp32.data() + int64_t{row} * K);
            } else {
                n.packed = repack(*old, p);
            }
        }
        next.push_back(std::move(n));
    }
    NZ_CHECK(from_file.empty(), "Seq2Seq::set_packed: '{}' is not a packed weight matrix",
             from_file.empty() ? "" : from_file.begin()->first);
    encoder.embedding.set_packed(nullptr);  // fp32 lookups until the new tables are set
    decoder.embedding.set_packed(nullptr);
    packed_.reset();  // the old registrations (their placeholders stay reserved in `next`)
    precision_ = Precision::fp32;
    if (p == Precision::fp32) {
        for (Next& n : next)
            if (n.fp32.numel() > 0) *n.value = std::move(n.fp32);
        return;
    }
    auto packed = std::make_unique<PackedWeights>();
    for (Next& n : next) {
        // an inference model drops the fp32 values: a placeholder keeps the address reserved
        if (!n.keep_fp32 && !n.value->reserved()) *n.value = Tensor::reserved(n.value->shape());
        packed->add(n.value->data(), std::move(n.packed), n.keep_fp32);
    }
    // the lookups read the packed tables (an inference model has no fp32 table left)
    for (Embedding* e : {&encoder.embedding, &decoder.embedding})
        e->set_packed(packed->get(e->params.weight.data()));
    packed_ = std::move(packed);
    precision_ = p;
    // the fp32 values just dropped go back to the system, not into the cache of freed blocks
    // (core/block_cache.h): a model held in int8 / bf16 should cost that much, not its fp32 size
    if (mode_ == ParamMode::inference) release_block_cache();
}

std::size_t Seq2Seq::packed_bytes() const {
    return packed_ ? packed_->bytes() : 0;
}

ParamMemory Seq2Seq::memory() {
    ParamMemory m;
    for (const ParamRef& r : parameters()) {
        const std::size_t bytes = static_cast<std::size_t>(r.value->numel()) * sizeof(float);
        if (r.value->reserved())
            ++m.packed_only;
        else
            m.values += bytes;
        if (r.grad) m.gradients += static_cast<std::size_t>(r.grad->numel()) * sizeof(float);
    }
    m.packed = packed_bytes();
    return m;
}

}  // namespace nazar
