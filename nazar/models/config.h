// ModelConfig: every hyper-parameter needed to rebuild a seq2seq model (docs/spec.md §2-5), its
// JSON form (stored as "nazar.config" in the model file, docs/design.md §5) and its validation.
//
// JSON (PyTorch spelling; every key optional on input, defaults below; unknown keys are a
// UsageError naming the key, so a typo never silently trains the wrong model):
//   { "src_vocab_size": 1000, "tgt_vocab_size": 1000, "embedding_size": 256,
//     "encoder":   {"cell": "gru", "hidden_size": 256, "num_layers": 1, "bidirectional": true,
//                   "dropout": 0.0},
//     "decoder":   {"kind": "bahdanau", "cell": "gru", "hidden_size": 256, "num_layers": 1,
//                   "dropout": 0.0, "bridge": "auto", "attention_timing": "auto",
//                   "input_feeding": false, "deep_output": false, "deep_output_size": 0},
//     "attention": {"score": "additive", "scale": "none", "local": "global", "window": 10,
//                   "attention_size": 0, "position_size": 0, "coverage": false},
//     "tie_target_embeddings": false,
//     "special_ids": {"pad": 0, "unk": 1, "bos": 2, "eos": 3} }
// to_json writes every key, so from_json(to_json(c)) == c exactly; "coverage", "copy_attention",
// the encoder's / decoder's "layer_norm" and the encoder's "residual" only when true, its
// "transition_depth" only when > 1 (the JSON of a model without them is what it was before they
// existed).
//
// Derived sizes (docs/shapes.md letters): C = encoder.hidden_size · (bidirectional ? 2 : 1) (d_h),
// H = decoder.hidden_size (d_s), A = attention_size or H when 0, P = position_size or H when 0,
// d_out = generator input = deep_output_size (or H when 0) with deep output, else H.
//
// Semantics of the choices (the decoders implement exactly these; docs/models.md):
//   bridge  the initial decoder state s_0 (every decoder layer; LSTM cell state c_0 = 0):
//     backward_first  s_0 = tanh(W_init h_0^bwd + b): h_0^bwd = the top encoder layer's backward
//                     state at position 0 (its final state). Needs a bidirectional encoder.
//     mean            s_0 = tanh(W_init mean_{i<S_b} h_i + b)  (masked mean; S_b = 0 gives 0)
//     last            s_0 = tanh(W_init h_last + b): h_last = the top layer's final states
//                     [fwd after S_b−1 ; bwd after 0] (torch's h_n), size C
//     zero            s_0 = 0, no parameters
//     automatic       "auto": backward_first for bahdanau with a bidirectional encoder, else mean
//     W_init = bridge.weight (L_dec·H, in), bridge.bias (L_dec·H): output rows [l·H, (l+1)·H)
//     are layer l's state.
//   attention_timing  before = query s_{t-1} (top layer), attention before the RNN step
//                     (Bahdanau); after = query s_t (Luong). "auto" = the decoder's own timing.
//                     An unusual score/timing pair (additive score with Luong timing, dot/general
//                     with Bahdanau timing) must be named explicitly and produces a warning
//                     (docs/spec.md §6.3: mistake 2). bahdanau + after is not supported (its RNN
//                     input needs c_t before the step): UsageError.
#pragma once

#include "nazar/attention/attention.h"
#include "nazar/nn/rnn.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nazar {

enum class DecoderKind { bahdanau, luong };
enum class BridgeKind { automatic, backward_first, mean, last, zero };
enum class AttentionTiming { automatic, before, after };

struct EncoderConfig {
    CellType cell = CellType::gru;
    int hidden_size = 256;  // per direction
    int num_layers = 1;
    bool bidirectional = true;
    float dropout = 0.0f;      // between layers (train mode), as torch.nn.GRU
    bool layer_norm = false;   // layer-normalised cells (nn/gru_cell.h, lstm_cell.h); JSON key
                               // written when true
    bool residual = false;     // layer k > 0 outputs its states plus its input (nn/rnn.h); needs
                               // num_layers >= 2; JSON key written when true
    int transition_depth = 1;  // deep transition: GRU cells per step (nn/transition.h), 1-8;
                               // > 1 needs cell gru; JSON key written when > 1
};

struct DecoderConfig {
    DecoderKind kind = DecoderKind::bahdanau;
    CellType cell = CellType::gru;
    int hidden_size = 256;  // H = d_s
    int num_layers = 1;     // attention reads/uses the TOP layer's state
    float dropout = 0.0f;   // between stacked decoder layers (train mode)
    BridgeKind bridge = BridgeKind::automatic;
    AttentionTiming attention_timing = AttentionTiming::automatic;
    bool input_feeding = false;  // luong only: x_t = [Emb(y_{t-1}); s̃_{t-1}], s̃_{-1} = 0
    bool deep_output = false;    // bahdanau only: o_t = tanh(L_s s_t + L_y Emb(y_{t-1}) + L_c c_t)
    int deep_output_size = 0;    // size of o_t with deep output; 0 = H
    bool layer_norm = false;     // layer-normalised cells (nn/gru_cell.h, lstm_cell.h); JSON
                                 // key written when true
};

struct SpecialIds {
    int pad = 0, unk = 1, bos = 2, eos = 3;  // nazar/data/vocab.h's ids
    bool operator==(const SpecialIds&) const = default;
};

struct ModelConfig {
    int src_vocab_size = 0;    // V_src
    int tgt_vocab_size = 0;    // V (= V_tgt)
    int embedding_size = 256;  // E, source and target embeddings
    EncoderConfig encoder{};
    DecoderConfig decoder{};
    // score, scale, local, window, attention_size, position_size are read from here;
    // query_size / context_size are derived (attention_config()) and not stored in JSON.
    AttentionConfig attention{};
    bool tie_target_embeddings =
        false;  // generator.weight IS decoder.embedding.weight (needs d_out == E)
    SpecialIds special_ids{};
    bool copy_attention = false;  // pointer-generator (models/copy.h); JSON key written when true
};

// Derived sizes and resolved choices.
int encoder_output_size(const ModelConfig& cfg);   // C
int generator_input_size(const ModelConfig& cfg);  // d_out
BridgeKind effective_bridge(const ModelConfig& cfg);
AttentionTiming effective_timing(const ModelConfig& cfg);
// cfg.attention with query_size = H, context_size = C, attention_size = A, position_size = P
// filled.
AttentionConfig attention_config(const ModelConfig& cfg);

// Upper bounds validate() enforces (far above real models; they keep every derived size such as
// 2·hidden, 4·H, L·H, H + C, 2·window + 1 within int).
inline constexpr int kMaxModelSize =
    1 << 20;  // embedding, hidden, attention, position, deep output, window
inline constexpr int kMaxVocabSize = 1 << 24;  // src/tgt vocabulary
inline constexpr int kMaxLayers = 64;          // encoder/decoder num_layers

// Throws UsageError (one line, naming the sizes / keys involved) on an invalid configuration:
// sizes < 1 or above the bounds above, vocab < 5 (4 specials + 1), dropout outside [0, 1),
// dot with H != C (names both, suggests general), tie with d_out != E (names both), backward_first
// with a unidirectional encoder, deep_output with luong, input_feeding with bahdanau, bahdanau +
// after, an unusual score/timing pair without an explicit attention_timing, special ids outside [0,
// V). Returns the warnings to print (an explicitly requested unusual score/timing pair).
std::vector<std::string> validate(const ModelConfig& cfg);
// validate() and print each warning to stderr as "warning: ...".
void validate_and_warn(const ModelConfig& cfg);

nlohmann::json to_json(const ModelConfig& cfg);
ModelConfig model_config_from_json(
    const nlohmann::json& j);                        // UsageError on unknown keys / bad values
std::string to_json_string(const ModelConfig& cfg);  // compact dump
ModelConfig model_config_from_string(std::string_view json);  // parse errors are UsageErrors

const char* to_string(DecoderKind k);      // "bahdanau", "luong"
const char* to_string(BridgeKind k);       // "auto", "backward-first", "mean", "last", "zero"
const char* to_string(AttentionTiming k);  // "auto", "before", "after"
const char* to_string(CellType k);         // "gru", "lstm"
DecoderKind parse_decoder_kind(std::string_view s);
BridgeKind parse_bridge_kind(std::string_view s);
AttentionTiming parse_attention_timing(std::string_view s);
CellType parse_cell_type(std::string_view s);

}  // namespace nazar
