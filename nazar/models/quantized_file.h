// Quantized model files (`nazar quantize`; README "Formats"): a model file whose weight
// matrices are stored in reduced precision, for inference.
//
//   int8: each weight matrix W (N x K) as tensor "<name>" dtype I8 (N, K), w_q = round(w / s_n),
//         and tensor "<name>.scale" dtype F32 (N), s_n = max_k |w_nk| / 127 (symmetric, per
//         output row): w ≈ w_q · s_n.
//   bf16: each weight matrix as tensor "<name>" dtype BF16 (N, K), rounded to nearest even.
//   Which tensors: every 2-D parameter of more than one row — the weight matrices, and the two
//   embedding tables (lookups dequantize the rows they read: nn/embedding.h). With tied target
//   embeddings "generator.weight" is stored exactly as "decoder.embedding.weight" (the same
//   bytes and scales). Everything else (biases, the one-row attention vectors v_a / v_p,
//   attention.scale) stays F32. Files written before the embeddings were quantized (F32
//   embeddings, and with tied embeddings an F32 generator.weight) still load: their embeddings
//   are quantized at load, as --precision does for an fp32 file.
//   Metadata: "nazar.precision" = "int8" | "bf16", besides the model file's own keys.
// Loading one for inference (model_file.h, ParamMode::inference) takes each matrix into its
// packed form as stored (take_packed_matrices: the file's int8 values and scales, or bf16
// values, no fp32 copy, packed in the bytes the file was read into: PackedMatrix::adopt_rows)
// and sets the model's precision to the file's; every F32 tensor is read
// as usual. Training from one is refused (ParamMode::training).
#pragma once

#include "nazar/core/gemm/packed.h"
#include "nazar/core/safetensors.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nazar {

inline constexpr const char* kPrecisionKey = "nazar.precision";
inline constexpr const char* kScaleSuffix = ".scale";

// Whether the parameter `name` of shape `shape` is stored quantized (matrices and embeddings).
bool quantized_param(const std::string& name, const Shape& shape);
// Whether `name` is an embedding table ("...embedding.weight"): read by row lookups.
bool embedding_param(const std::string& name);

// The file's precision: nullopt for an fp32 file (no nazar.precision, no raw tensors); an
// error naming the file for an inconsistent one (raw tensors without the key or the reverse).
std::optional<Precision> file_precision(const SafeTensors& st);

// A model file (or checkpoint: its optim.* / train.* tensors are dropped) in precision p.
SafeTensors quantize_model_file(const SafeTensors& in, Precision p);

// The fp32 model file a quantized one stands for: raw tensors dequantized, ".scale" tensors
// and nazar.precision removed. Errors name the file and the tensor.
SafeTensors dequantize_model_file(const SafeTensors& st);

// The inference loader's part (model_file.cpp): with `tied`, a raw "generator.weight" is checked
// equal to the raw "decoder.embedding.weight" (dtype, shape, bytes, scales) and dropped. Every
// raw tensor of `st` (a quantized file of precision p) that quantized_param() names is taken
// out as a PackedMatrix, checked as dequantize_model_file checks it (dtype, shape, scales finite
// and >= 0; bf16 values finite), and left in `st` as a Tensor::reserved placeholder of its shape;
// its ".scale" tensor is removed. Any other raw tensor is dequantized into F32 in place.
std::vector<std::pair<std::string, PackedMatrix>> take_packed_matrices(SafeTensors& st, Precision p,
                                                                       bool tied);

}  // namespace nazar
