// The model-file format (docs/design.md §5): https://github.com/huggingface/safetensors
//
//   bytes 0..7   N, the header length, unsigned 64-bit little-endian
//   bytes 8..    the header: N bytes of JSON, an object
//                  { "<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
//                    ...,
//                    "__metadata__": {"<key>": "<string value>", ...} }      (optional)
//   then         the data buffer; offsets are relative to its start, tensors are row-major
//                little-endian and tile the buffer exactly (no gaps, no overlaps).
//
// Loading accepts F32 (native) and converts F64, I64, I32 to float32: integers must be
// exactly representable (|v| <= 2^24 or a float-exact value), F64 must be within float range.
// I8 and BF16 tensors (quantized model files: nazar quantize, README "Formats") are kept as
// they are, raw bytes, in raw() — never converted here; model_file.h decides what they mean.
// Saving writes the F32 tensors and the raw ones, through atomic_write_file (fileio.h), header
// padded with spaces to a multiple of 8 bytes, tensors in name order: the same content gives the
// same bytes.
//
// A hostile or corrupt file gives a one-line nazar::Error naming the file and the problem,
// never a crash, a hang or an allocation larger than the file: header length beyond the file
// or above 100 MB, invalid JSON, duplicate names or keys, unknown or unsupported dtype,
// shape × dtype size != end − begin, offsets out of range / overlapping / leaving gaps, more
// than 4 dimensions (nazar's Tensor limit), non-string metadata.
//
// Tensor names are PyTorch state_dict names (docs/design.md §5 weight-naming contract), so
// set_params()/get_params() move a ParamList (params.h) in and out by name.
#pragma once

#include "nazar/core/params.h"
#include "nazar/core/tensor.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace nazar {

inline constexpr uint64_t kSafetensorsMaxHeader = 100ull << 20;  // 100 MB, as upstream

// A tensor kept in its own dtype ("I8" or "BF16"): row-major little-endian bytes.
struct RawTensor {
    std::string dtype;
    Shape shape;
    std::string bytes;
};

class SafeTensors {
public:
    // ---- tensors (kept sorted by name) ----
    void set(const std::string& name,
             ConstTensorView value);  // deep copy; replaces an existing one
    void set(const std::string& name, Tensor&& value);
    bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
    // Throws nazar::Error naming the tensor and the source (file) when absent.
    const Tensor& get(const std::string& name) const;
    Tensor& get(const std::string& name);
    // get() plus a shape check: "'x.safetensors': tensor 'weight' has shape (3, 4), expected (4,
    // 3)"
    const Tensor& get(const std::string& name, const Shape& expected) const;
    void erase(const std::string& name) { tensors_.erase(name); }
    std::vector<std::string> names() const;  // sorted
    std::size_t size() const { return tensors_.size(); }
    const std::map<std::string, Tensor>& tensors() const { return tensors_; }

    // ---- raw tensors (I8, BF16); a name is either a float tensor or a raw one ----
    void set_raw(const std::string& name, RawTensor t);  // dtype I8 or BF16, bytes must fit
    const std::map<std::string, RawTensor>& raw() const { return raw_; }
    void erase_raw(const std::string& name) { raw_.erase(name); }
    // Removes the raw tensor `name` and returns it (its bytes moved, not copied); an error naming
    // the tensor and the source when absent.
    RawTensor take_raw(const std::string& name);

    // ---- metadata: the "__metadata__" string map ----
    std::map<std::string, std::string> metadata;
    bool has_meta(const std::string& key) const { return metadata.count(key) != 0; }
    const std::string& meta(const std::string& key) const;  // throws naming key and source

    // ---- parameters by state_dict name ----
    // Stores every p.value under p.name (deep copies).
    void set_params(const ParamList& params);
    // Copies each tensor into p.value. Every param must be present with p.value's shape
    // (an error names the tensor, both shapes and the source). Extra tensors are ignored.
    void get_params(const ParamList& params) const;

    // Where this came from ("path/model.safetensors" or "<memory>"); used in error messages.
    std::string source = "<memory>";

private:
    std::map<std::string, Tensor> tensors_;
    std::map<std::string, RawTensor> raw_;
};

// Parses a whole file image. `source` names it in errors.
SafeTensors parse_safetensors(std::string_view bytes, const std::string& source = "<memory>");
// The file image (F32 tensors, header padded to 8 bytes). Deterministic.
std::string serialize_safetensors(const SafeTensors& st);

// The file read piece by piece (FileReader, fileio.h): its header, then each tensor straight into
// the memory that keeps it, so the whole file is never held beside its tensors (a model's load
// peaks at its tensors' size, not twice the file's). A raw matrix (I8 / BF16, 2-D) gets capacity
// for its rows rounded up to 16, so that packing it (PackedMatrix::adopt_rows) happens where it
// lies. The same checks and messages as parse_safetensors; on any error nothing is returned.
SafeTensors load_safetensors(const std::string& path);
void save_safetensors(const std::string& path, const SafeTensors& st);  // serialize + atomic write

}  // namespace nazar
