// The incremental decoding API over a shared model (decode_session.h): encode once, then one
// decoder step at a time over rows that beam search selects and reorders (decode/). Eval mode
// only. Everything written here is the session's own or the caller's; the model is only read.
#include "nazar/models/decode_session.h"

#include "nazar/attention/coverage.h"
#include "nazar/attention/monotonic.h"

#include "nazar/core/gemm/packed.h"
#include "nazar/core/kernels.h"
#include "nazar/core/threads.h"
#include "nazar/nn/softmax_xent.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace nazar {
namespace {

// out rows n = in rows rows[n] along dimension `dim` (0 or 1) of a 2-, 3- or 4-D tensor. An
// absent tensor ((0) placeholder: GRU's c, dot's keys, no feed) stays absent; a real one with no
// elements (enc_out (N, 0, C) of empty sources) keeps its shape with N' = rows.size().
void gather(const Tensor& in, int dim, std::span<const int> rows, Tensor& out) {
    if (in.ndim() < 2) {
        out = Tensor(Shape{0});
        return;
    }
    Shape shape = in.shape();
    const int N = static_cast<int>(shape[dim]);
    shape[dim] = static_cast<int64_t>(rows.size());
    out.resize(shape, false);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < dim; ++d) outer *= in.shape()[d];
    for (int d = dim + 1; d < in.ndim(); ++d) inner *= in.shape()[d];
    const int64_t M = static_cast<int64_t>(rows.size());
    for (int64_t n = 0; n < M; ++n)
        NZ_CHECK(rows[n] >= 0 && rows[n] < N, "row {} outside [0, {})", rows[n], N);
    if (inner == 0) return;
    // Copies of at least ~64 KB per piece over the pool (enc_out and the attention keys of 320
    // beam rows are 20+ MB each when the rows change).
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / inner);
    parallel_for(outer * M, grain, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
            const int64_t o = i / M, n = i % M;
            std::memcpy(out.data() + i * inner, in.data() + (o * N + rows[n]) * inner,
                        sizeof(float) * inner);
        }
    });
}

// The generator's product of a decoder step runs on a Wᵀ packed for the batch
// (EncodedSource::generator_t) at kSmallGemmRows < rows <= kGeneratorTRows; the library re-packs
// the 8000 x 512 W on every call, which at few rows costs as much as the product, into a scratch
// buffer of its own per calling thread (8.4 MB for that W: per decoding thread, while the packed
// Wᵀ is one per model). Measured on Zen 5 (docs/performance.md, "The generator through a packed
// Wᵀ"), one product of all rows: 2.4x at 10 rows, 1.8x at 20, 1.3x at 64, 1.1x at 128, 1.04x at
// 192, slower at 256-320 (the library's). Up to kNn512Rows since beam search groups fp32 rows on
// it (step_logits_group_min_rows): at 64 x 5 rows its groups ran as fast as the library's one
// product (`nazar bench decode --beam 5 --batch 64`, Intel Xeon family 6 model 207: 43.2-45.0
// against 44.2-44.9 sentences/s at one thread, 48.1-51.0 against 45.5-48.3 at two) and hold a
// group's logits, not 320 rows' (10 MB).
constexpr int kGeneratorTRows = 512;  // nn512's limit (kNn512Rows, core/gemm/internal.h)

// The packed (bf16 / int8) matrix holding a loaded model's weight w, or null (core/gemm/packed.h).
const PackedMatrix* packed_matrix(ConstTensorView w) {
    int n0 = 0, k0 = 0;
    return gemm_detail::find_packed(w.data(), static_cast<int>(w.dim(1)), &n0, &k0);
}

WeightTRows generator_rows(const EncodedSource& src, int64_t rows) {
    return rows <= kGeneratorTRows ? weight_t_rows(src.generator_t) : WeightTRows{};
}

// Pages of dead scratch given back (Tensor::discard_pages), for buffers of at least
// DecodeSession::kScratchDiscardBytes.
void discard(std::initializer_list<Tensor*> ts) {
    for (Tensor* t : ts) t->discard_pages(DecodeSession::kScratchDiscardBytes);
}
void discard(std::vector<Tensor>& ts) {
    for (Tensor& t : ts) t.discard_pages(DecodeSession::kScratchDiscardBytes);
}

// The encoder's scratch is dead while the batch's steps run, whose own buffers (logits, rows)
// are as large: its pages go back to the system once the batch is encoded, so that a session
// holds about the larger of the two, not both (the tensors keep their buffers; the encoder
// writes every value before it reads it).
void discard_encoder_scratch(EncoderCache& c) {
    discard({&c.emb});
    discard(c.rnn.layer_in);
    discard(c.rnn.layer_out);
    for (RNNInferenceScratch& sc : c.rnn.infer) discard({&sc.proj});
}

void discard_step_cache(DecoderStepCache& c) {
    discard({&c.x0, &c.context, &c.combine_in, &c.deep_term});
    discard(c.layer_in);
    for (GRUStepCache& g : c.gru) discard({&g.gates, &g.gh_n, &g.gi, &g.ln_i, &g.ln_h});
    for (LSTMStepCache& l : c.lstm) discard({&l.gates, &l.tanh_c, &l.gh, &l.ln_i, &l.ln_h});
    AttentionStepCache& a = c.attention;
    discard({&a.weights, &a.probs, &a.scores, &a.query_proj, &a.pos_hidden, &a.coverage,
             &a.previous, &a.alpha, &a.chunk_scores});
}

}  // namespace

DecodeSession::DecodeSession(const Seq2Seq& model) : model_(&model) {}
DecodeSession::~DecodeSession() = default;
DecodeSession::DecodeSession(DecodeSession&&) noexcept = default;
DecodeSession& DecodeSession::operator=(DecodeSession&&) noexcept = default;

void DecodeSession::encode(std::span<const int32_t> src, std::span<const int> lengths, int S,
                           EncodedSource& out, int rows_per_sentence) {
    const Seq2Seq& m = *model_;
    const int N = static_cast<int>(lengths.size());
    NZ_CHECK(N > 0 && static_cast<int64_t>(src.size()) == int64_t{N} * S,
             "encode: {} ids for {} sentences of {}", src.size(), N, S);
    Rng unused(0);
    out.N = N;
    out.S = S;
    out.lengths.assign(lengths.begin(), lengths.end());
    out.enc_out.resize({N, S, m.encoder.output_size()}, false);
    m.encoder.forward(src, lengths, out.enc_out, enc_cache_, unused, Mode::inference);
    const int step_rows = N * std::max(1, rows_per_sentence);
    // The steps' transposed weights (steps of more than kSmallGemmRows rows): an inference
    // model's, made once and shared by every session; else made here for this batch.
    const auto shared = step_rows > kSmallGemmRows ? m.step_weights_t() : nullptr;
    m.attention.precompute(out.enc_out, out.keys, shared ? 0 : step_rows);
    m.decoder.prepare_steps(out, shared ? 0 : step_rows);
    if (shared) {
        out.keys.query_t = shared->query;
        out.wih_t = shared->wih;
        out.whh_t = shared->whh;
        out.generator_t = shared->generator;
    } else if (step_rows > kSmallGemmRows) {
        // The generator's Wᵀ (the batch may shrink into kGeneratorTRows as sentences end);
        // refresh_weight_t leaves it empty for bf16 / int8 weights, which have their own packing.
        refresh_weight_t(out.generator_t, m.generator_weight());
    } else {
        out.generator_t.reset();
    }
    out.init_h.resize({m.decoder.L, N, m.decoder.H}, false);
    m.bridge.forward(out.enc_out, enc_cache_.final, lengths, out.init_h, bridge_cache_);
    discard_encoder_scratch(enc_cache_);
}

void DecodeSession::SearchBuffers::release_weights() {
    for (EncodedSource* e : {&enc, &rows_enc}) {
        e->keys.query_t.reset();
        e->wih_t.clear();
        e->whh_t.clear();
        e->generator_t.reset();
        e->shared = nullptr;
    }
}

void DecodeSession::end_search() {
    search_.release_weights();
    step_generator_t_.reset();
    for (EncodedSource* e : {&search_.enc, &search_.rows_enc})
        discard({&e->enc_out, &e->keys.keys, &e->init_h});
    for (DecoderState* d : {&search_.state, &search_.next_state})
        discard({&d->h, &d->c, &d->feed, &d->coverage, &d->previous});
    discard({&search_.log_probs, &search_.attention, &emb_, &out_});
    discard_step_cache(cache_);
}

void DecodeSession::select_rows(const EncodedSource& in, std::span<const int> rows,
                                EncodedSource& out) const {
    NZ_CHECK(&in != &out, "select_rows: in and out must differ");
    out.N = static_cast<int>(rows.size());
    out.S = in.S;
    out.lengths.resize(rows.size());
    for (std::size_t n = 0; n < rows.size(); ++n) {
        NZ_CHECK(rows[n] >= 0 && rows[n] < in.N, "select_rows: row {} outside [0, {})", rows[n],
                 in.N);
        out.lengths[n] = in.lengths[rows[n]];
    }
    // The encoder states and attention keys are not copied (a sentence's beam rows read the
    // same rows, which stay in cache): out refers to the encoding `in` was selected from.
    out.shared = &in.states();
    out.shared_rows.resize(rows.size());
    for (std::size_t n = 0; n < rows.size(); ++n)
        out.shared_rows[n] = in.shared ? in.shared_rows[rows[n]] : rows[n];
    out.enc_out = Tensor(Shape{0});
    out.keys.keys = Tensor(Shape{0});
    out.keys.query_t = in.keys.query_t;  // per-batch transposed weights: shared
    out.wih_t = in.wih_t;
    out.whh_t = in.whh_t;
    out.generator_t = in.generator_t;
    gather(in.init_h, 1, rows, out.init_h);
    out.copy_vocab = in.copy_vocab;
    out.copy_ids.clear();
    if (!in.copy_ids.empty())
        for (int r : rows)
            out.copy_ids.insert(out.copy_ids.end(), in.copy_ids.begin() + std::ptrdiff_t{r} * in.S,
                                in.copy_ids.begin() + std::ptrdiff_t{r + 1} * in.S);
}

void DecodeSession::init_state(const EncodedSource& src, DecoderState& state) const {
    const Decoder& decoder = model_->decoder;
    const int N = src.N, L = decoder.L, H = decoder.H;
    state.t = 0;
    state.h.resize({L, N, H}, false);
    state.h.copy_from(src.init_h);
    if (decoder.cell == CellType::lstm)
        state.c.resize({L, N, H});
    else
        state.c = Tensor(Shape{0});
    if (decoder.kind == DecoderKind::luong && decoder.feed_size() > 0)
        state.feed.resize({N, H});
    else
        state.feed = Tensor(Shape{0});
    if (model_->attention.cfg.coverage)
        attn::start_coverage(N, src.S, state.coverage);
    else
        state.coverage = Tensor(Shape{0});
    if (model_->attention.cfg.monotonic)
        attn::start_previous(N, src.S, state.previous);
    else
        state.previous = Tensor(Shape{0});
}

void DecodeSession::step(std::span<const int32_t> prev, const EncodedSource& src,
                         DecoderState& state, TensorView log_probs, TensorView attn) {
    const Seq2Seq& m = *model_;
    NZ_CHECK_SHAPE(log_probs, {static_cast<int64_t>(prev.size()), step_vocab(src)});
    step_decoder(prev, src, state);
    if (config().copy_attention)  // reads state.h: s_t (eval mode: in place)
        copy_step_log_probs(src, state.h.select(m.decoder.L - 1), log_probs);
    else
        output_log_probs(out_, output_weight(), output_bias(), log_probs,
                         out_ids_.empty() ? generator_rows(src, out_.dim(0)) : WeightTRows{});
    step_attention(src, state, attn);
}

void DecodeSession::step_logits(std::span<const int32_t> prev, const EncodedSource& src,
                                DecoderState& state, TensorView logits, TensorView attn) {
    NZ_CHECK(!config().copy_attention, "step_logits: a copy-attention model's steps need step()");
    const ConstTensorView w = output_weight();
    NZ_CHECK_SHAPE(logits, {static_cast<int64_t>(prev.size()), w.dim(0)});
    step_decoder(prev, src, state);
    const int R = out_.dim(0), V = w.dim(0), D = w.dim(1);
    gemm_xwt(R, V, D, 1.0f, out_.data(), D, w.data(), D,
             out_ids_.empty() ? generator_rows(src, R) : WeightTRows{}, 0.0f, logits.data(), V);
    step_attention(src, state, attn);
}

void DecodeSession::step_hidden(std::span<const int32_t> prev, const EncodedSource& src,
                                DecoderState& state, TensorView attn) {
    NZ_CHECK(!config().copy_attention, "step_hidden: a copy-attention model's steps need step()");
    step_decoder(prev, src, state);
    step_generator_t_ = out_ids_.empty() ? src.generator_t : nullptr;
    step_attention(src, state, attn);
}

void DecodeSession::step_logits_rows(int r0, int r1, TensorView logits) const {
    NZ_CHECK(0 <= r0 && r0 <= r1 && r1 <= out_.dim(0), "step_logits_rows: rows [{}, {}) of {}", r0,
             r1, out_.dim(0));
    const ConstTensorView w = output_weight();
    NZ_CHECK_SHAPE(logits, {r1 - r0, w.dim(0)});
    const int V = w.dim(0), D = w.dim(1);
    gemm_xwt(r1 - r0, V, D, 1.0f, out_.data() + int64_t{r0} * D, D, w.data(), D,
             weight_t_rows(step_generator_t_), 0.0f, logits.data(), V);
}

int DecodeSession::step_logits_group_min_rows(const EncodedSource& src, int rows) const {
    // Packed (bf16 / int8) weights: each row is rounded or quantized on its own and summed
    // along K in one order, whatever the rows around it (core/gemm/packed.h), except that bf16
    // products of packed_amx_min_rows rows or more run on AMX tiles, which sum in another order
    // (int8 on AMX gives the VNNI kernel's bits): bf16 groups then start at that many rows.
    const PackedMatrix* m = packed_matrix(output_weight());
    if (!m) {
        // fp32: through the packed Wᵀ, nazar's NN kernel sums each entry in one order whatever
        // the rows (nn512.h), for products of more than kSmallGemmRows rows (fewer: the small-M
        // kernel, another order); the step's one product takes that path up to kGeneratorTRows
        // rows (beyond, the library's, whose rows can depend on the row count: no groups).
        // Grouped, a decoding thread holds a group's logits instead of all B·K rows (5 MB at
        // 32 x 5 rows, V 8,000).
        const bool nn = out_ids_.empty() && src.generator_t && rows <= kGeneratorTRows &&
                        xwt_rows_independent(rows);
        return nn ? kSmallGemmRows + 1 : 0;
    }
    const Precision p = m->precision();
    return p == Precision::bf16 && packed_amx_available(p) ? packed_amx_min_rows(p) : 1;
}

const float* DecodeSession::step_logits_bias() const {
    const ConstTensorView b = output_bias();  // absent: empty, or a default Tensor (no data)
    return b.data() != nullptr && b.numel() > 0 ? b.data() : nullptr;
}

ConstTensorView DecodeSession::output_weight() const {
    return out_ids_.empty() ? model_->generator_weight() : ConstTensorView(sub_w_);
}

ConstTensorView DecodeSession::output_bias() const {
    return out_ids_.empty() ? ConstTensorView(model_->generator.params.bias)
                            : ConstTensorView(sub_b_);
}

void DecodeSession::restrict_output(std::span<const int32_t> ids) {
    NZ_CHECK(!config().copy_attention, "an output shortlist needs a model without copy attention");
    // Checked before anything changes: a refused call leaves the session as it was.
    const ConstTensorView w = model_->generator_weight();
    const int V = static_cast<int>(w.dim(0)), D = static_cast<int>(w.dim(1));
    const int M = static_cast<int>(ids.size());
    for (int j = 0; j < M; ++j)
        NZ_CHECK(ids[j] >= 0 && ids[j] < V && (j == 0 || ids[j] > ids[j - 1]),
                 "restrict_output: ids must be increasing and in [0, {}), got {} at {}", V, ids[j],
                 j);
    int n0 = 0, k0 = 0;
    const PackedMatrix* full = gemm_detail::find_packed(w.data(), D, &n0, &k0);
    NZ_CHECK(!full || (n0 == 0 && k0 == 0 && full->rows() == V && full->cols() == D),
             "restrict_output: the output layer's packed form is not the whole matrix");
    if (sub_packed_) sub_packed_->clear();  // before sub_w_ moves
    out_ids_.assign(ids.begin(), ids.end());
    if (ids.empty()) return;
    sub_w_.resize({M, D}, false);
    if (full != nullptr) {  // the packed rows as they are; sub_w_ only their address
        if (!sub_packed_) sub_packed_ = std::make_unique<PackedWeights>();
        sub_packed_->add(sub_w_.data(), full->select_rows(ids), /*fp32_kept=*/false);
    } else {
        for (int j = 0; j < M; ++j)
            std::memcpy(sub_w_.data() + int64_t{j} * D, w.data() + int64_t{ids[j]} * D,
                        sizeof(float) * D);
    }
    const ConstTensorView b(model_->generator.params.bias);
    if (b.data() != nullptr && b.numel() > 0) {
        sub_b_.resize({M}, false);
        for (int j = 0; j < M; ++j) sub_b_.data()[j] = b.data()[ids[j]];
    } else {
        sub_b_ = Tensor();
    }
}

// The step up to the output layer: state advances (h, c, feed, coverage), out_ holds the rows
// the generator reads.
void DecodeSession::step_decoder(std::span<const int32_t> prev, const EncodedSource& src,
                                 DecoderState& state) {
    const Seq2Seq& m = *model_;
    const Decoder& decoder = m.decoder;
    const bool coverage = m.attention.cfg.coverage, monotonic = m.attention.cfg.monotonic;
    const int N = static_cast<int>(prev.size());
    NZ_CHECK(N == src.N && N == state.rows(), "step: {} tokens, {} source rows, {} state rows", N,
             src.N, state.rows());
    Rng unused(0);
    const ModelConfig& cfg = config();
    emb_.resize({N, decoder.E}, false);
    if (cfg.copy_attention) {  // extended ids (copied source words) are read as <unk>
        prev_.assign(prev.begin(), prev.end());
        for (int32_t& y : prev_)
            if (y >= cfg.tgt_vocab_size) y = cfg.special_ids.unk;
        prev = prev_;
    }
    decoder.embedding.forward(prev, emb_);
    out_.resize({N, decoder.output_size()}, false);
    // coverage: the step reads cov_t (moved into its cache) and leaves cov_{t+1} in the state
    if (coverage) std::swap(cache_.attention.coverage, state.coverage);
    // monotonic: the step reads α_{t−1} and leaves its own α_t (one-hot when decoding hard)
    if (monotonic) {
        std::swap(cache_.attention.previous, state.previous);
        cache_.attention.hard = hard_monotonic_;
    }
    // eval mode: the new state may overwrite the old one in place
    decoder.step_forward(state.t, emb_, state.h, state.c, state.feed, src, m.attention, state.h,
                         state.c, out_, cache_, unused, Mode::eval);
    if (coverage) attn::advance_coverage(cache_.attention, state.coverage);
    if (monotonic) attn::advance_previous(cache_.attention, state.previous);
    if (!state.feed.empty()) state.feed.copy_from(out_);
}

// The step's dense attention weights (an empty view: not needed); t advances.
void DecodeSession::step_attention(const EncodedSource& src, DecoderState& state,
                                   TensorView attn) const {
    if (!attn.empty()) {
        NZ_CHECK_SHAPE(attn, {state.rows(), src.S});
        dense_weights(cache_.attention, attn);
    }
    ++state.t;
}

void DecodeSession::select_state(const DecoderState& in, std::span<const int> rows,
                                 DecoderState& out) const {
    NZ_CHECK(&in != &out, "select_state: in and out must differ");
    out.t = in.t;
    gather(in.h, 1, rows, out.h);
    gather(in.c, 1, rows, out.c);
    gather(in.feed, 0, rows, out.feed);
    gather(in.coverage, 0, rows, out.coverage);
    gather(in.previous, 0, rows, out.previous);
}

// ---- copy attention ----

void DecodeSession::set_copy_source(EncodedSource& src, std::span<const int32_t> ids,
                                    int ext_vocab) const {
    const ModelConfig& cfg = config();
    NZ_CHECK(cfg.copy_attention, "set_copy_source: the model has no copy attention");
    NZ_CHECK(static_cast<int64_t>(ids.size()) == int64_t{src.N} * src.S,
             "set_copy_source: {} ids for {} rows of {}", ids.size(), src.N, src.S);
    NZ_CHECK(ext_vocab >= cfg.tgt_vocab_size, "set_copy_source: extended vocabulary {} < V {}",
             ext_vocab, cfg.tgt_vocab_size);
    for (int32_t id : ids)
        NZ_CHECK(id >= 0 && id < ext_vocab, "set_copy_source: id {} outside [0, {})", id,
                 ext_vocab);
    src.copy_ids.assign(ids.begin(), ids.end());
    src.copy_vocab = ext_vocab;
}

int DecodeSession::step_vocab(const EncodedSource& src) const {
    const ModelConfig& cfg = config();
    if (!cfg.copy_attention)
        return out_ids_.empty() ? cfg.tgt_vocab_size : static_cast<int>(out_ids_.size());
    NZ_CHECK(src.copy_vocab >= cfg.tgt_vocab_size &&
                 static_cast<int64_t>(src.copy_ids.size()) == int64_t{src.N} * src.S,
             "a copy model's steps need the source's extended ids (set_copy_source)");
    return src.copy_vocab;
}

void DecodeSession::copy_step_log_probs(const EncodedSource& src, ConstTensorView s_top,
                                        TensorView log_probs) {
    const Seq2Seq& m = *model_;
    const int N = src.N, S = src.S, V = config().tgt_vocab_size, Vx = step_vocab(src);
    copy_alpha_.resize({N, S}, false);
    dense_weights(cache_.attention, copy_alpha_);
    copy_g_.resize({N}, false);
    m.copy_gate.forward(cache_.context, s_top, emb_, copy_in_, copy_g_);
    logits_.resize({N, V}, false);
    output_log_probs(out_, m.generator_weight(), m.generator.params.bias, logits_,
                     generator_rows(src, N));
    p_gen_.resize(static_cast<std::size_t>(N));
    // rows are independent: each pool thread mixes its own (the same bits at any split)
    parallel_for(N, 8, [&](int64_t n0, int64_t n1) {
        for (int64_t n = n0; n < n1; ++n) {
            const CopyRow row{.z = logits_.select(n).data(),
                              .V = V,
                              .alpha = copy_alpha_.select(n).data(),
                              .ids = src.copy_ids.data() + static_cast<std::size_t>(n) * S,
                              .S = std::min(src.lengths[n], S),
                              .g = copy_g_[n],
                              .normalized = true};
            p_gen_[static_cast<std::size_t>(n)] =
                copy_row_log_probs(row, Vx, log_probs.select(n).data());
        }
    });
}

}  // namespace nazar
