#include "nazar/core/safetensors.h"

#include "nazar/core/check.h"
#include "nazar/core/fileio.h"
#include "nazar/core/text_limits.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <utility>

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; add byte swaps");

namespace nazar {

using json = nlohmann::json;

namespace {

// Names and parser messages come from the file: keep errors on one printable line.
std::string printable(std::string_view s, std::size_t max_len = 80) {
    std::string out;
    for (char c : s.substr(0, max_len)) out += (c >= 0x20 && c != 0x7f) || (c & 0x80) ? c : '?';
    if (s.size() > max_len) out += "...";
    return out;
}

enum class DType { f32, f64, i64, i32, i8, bf16 };

struct Entry {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    uint64_t begin, end;
};

DType parse_dtype(const std::string& src, const std::string& name, const std::string& s) {
    if (s == "F32") return DType::f32;
    if (s == "F64") return DType::f64;
    if (s == "I64") return DType::i64;
    if (s == "I32") return DType::i32;
    if (s == "I8") return DType::i8;
    if (s == "BF16") return DType::bf16;
    static const std::set<std::string> known = {"BOOL", "U8",  "U16",     "I16",    "U32",
                                                "U64",  "F16", "F8_E4M3", "F8_E5M2"};
    if (known.count(s))
        throw Error(fmt::format(
            "'{}': tensor '{}' has dtype {}, which nazar does not load (F32, F64, I64, I32, and "
            "I8 / BF16 in quantized model files, only)",
            src, printable(name), s));
    throw Error(fmt::format("'{}': tensor '{}' has unknown dtype '{}'", src, printable(name),
                            printable(s)));
}

std::size_t dtype_size(DType d) {
    if (d == DType::i8) return 1;
    if (d == DType::bf16) return 2;
    return (d == DType::f64 || d == DType::i64) ? 8 : 4;
}

std::size_t raw_dtype_size(const std::string& dtype) {
    NZ_CHECK(dtype == "I8" || dtype == "BF16", "safetensors: raw dtype must be I8 or BF16, got {}",
             dtype);
    return dtype == "I8" ? 1 : 2;
}

uint64_t read_u64(const json& v, const std::string& src, const std::string& name,
                  const char* what) {
    NZ_CHECK_INPUT(v.is_number_integer() &&
                       !(v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0),
                   "'{}': tensor '{}': {} must be non-negative integers, got {}", src,
                   printable(name), what, printable(v.dump()));
    return v.is_number_unsigned() ? v.get<uint64_t>() : static_cast<uint64_t>(v.get<int64_t>());
}

Entry parse_entry(const std::string& src, const std::string& name, const json& e) {
    NZ_CHECK_INPUT(!name.empty(), "'{}': empty tensor name", src);
    NZ_CHECK_INPUT(e.is_object(), "'{}': entry '{}' must be an object, got {}", src,
                   printable(name), e.type_name());
    for (const auto& [k, v] : e.items())
        NZ_CHECK_INPUT(k == "dtype" || k == "shape" || k == "data_offsets",
                       "'{}': tensor '{}' has unexpected key '{}'", src, printable(name),
                       printable(k));
    NZ_CHECK_INPUT(e.contains("dtype") && e.contains("shape") && e.contains("data_offsets"),
                   "'{}': tensor '{}' needs dtype, shape and data_offsets", src, printable(name));
    const json& dt = e["dtype"];
    NZ_CHECK_INPUT(dt.is_string(), "'{}': tensor '{}': dtype must be a string", src,
                   printable(name));
    Entry out{name, parse_dtype(src, name, dt.get<std::string>()), {}, 0, 0};

    const json& shape = e["shape"];
    NZ_CHECK_INPUT(shape.is_array(), "'{}': tensor '{}': shape must be an array", src,
                   printable(name));
    NZ_CHECK_INPUT(shape.size() <= static_cast<std::size_t>(kMaxDims),
                   "'{}': tensor '{}' has {} dimensions, nazar supports {}", src, printable(name),
                   shape.size(), kMaxDims);
    for (const auto& d : shape) {
        const uint64_t v = read_u64(d, src, name, "shape entries");
        NZ_CHECK_INPUT(v <= static_cast<uint64_t>(INT32_MAX),
                       "'{}': tensor '{}': dimension {} too large", src, printable(name), v);
        out.shape.push_back(static_cast<int64_t>(v));
    }
    const json& off = e["data_offsets"];
    NZ_CHECK_INPUT(off.is_array() && off.size() == 2,
                   "'{}': tensor '{}': data_offsets must be [begin, end]", src, printable(name));
    out.begin = read_u64(off[0], src, name, "data_offsets");
    out.end = read_u64(off[1], src, name, "data_offsets");
    NZ_CHECK_INPUT(out.begin <= out.end, "'{}': tensor '{}': data_offsets [{}, {}] are reversed",
                   src, printable(name), out.begin, out.end);

    // numel * size == end - begin, without overflow (dims are <= INT32_MAX, but 4 of them are not).
    uint64_t bytes = dtype_size(out.dtype);
    for (int64_t d : out.shape)
        NZ_CHECK_INPUT(!__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes),
                       "'{}': tensor '{}': shape overflows", src, printable(name));
    NZ_CHECK_INPUT(
        bytes == out.end - out.begin,
        "'{}': tensor '{}': shape {} x {} bytes = {} bytes but data_offsets [{}, {}] hold {}", src,
        printable(name), printable(e["shape"].dump()), dtype_size(out.dtype), bytes, out.begin,
        out.end, out.end - out.begin);
    return out;
}

// Integers must survive the trip to float32 exactly (token ids, lengths, counts).
template <class I>
float int_to_float(I v, const std::string& src, const std::string& name, int64_t i) {
    const float f = static_cast<float>(v);
    const bool exact = std::fabs(f) < 0x1p63f && static_cast<int64_t>(f) == static_cast<int64_t>(v);
    NZ_CHECK_INPUT(
        exact, "'{}': tensor '{}': integer {} at index {} is not exactly representable as float32",
        src, printable(name), static_cast<int64_t>(v), i);
    return f;
}

// The float32 tensor of entry e from its bytes p (e.end - e.begin of them).
Tensor decode(const Entry& e, const char* p, const std::string& src) {
    Tensor t{Shape(std::span<const int64_t>(e.shape))};
    const int64_t n = t.numel();
    float* out = t.data();
    switch (e.dtype) {
        case DType::f32:
            if (n) std::memcpy(out, p, static_cast<std::size_t>(n) * 4);
            break;
        case DType::f64:
            for (int64_t i = 0; i < n; ++i) {
                double v;
                std::memcpy(&v, p + i * 8, 8);
                out[i] = static_cast<float>(v);
                NZ_CHECK_INPUT(
                    !std::isfinite(v) || std::isfinite(out[i]),
                    "'{}': tensor '{}': F64 value {} at index {} is outside float32 range", src,
                    printable(e.name), v, i);
            }
            break;
        case DType::i64:
            for (int64_t i = 0; i < n; ++i) {
                int64_t v;
                std::memcpy(&v, p + i * 8, 8);
                out[i] = int_to_float(v, src, e.name, i);
            }
            break;
        case DType::i32:
            for (int64_t i = 0; i < n; ++i) {
                int32_t v;
                std::memcpy(&v, p + i * 4, 4);
                out[i] = int_to_float(v, src, e.name, i);
            }
            break;
        case DType::i8:
        case DType::bf16:
            NZ_FAIL("'{}': tensor '{}': raw dtype decoded as float", src, printable(e.name));
    }
    return t;
}

// The 8-byte header length against the limit and the file size, before anything else is read.
void check_header_length(std::string_view first8, uint64_t file_size, const std::string& src) {
    NZ_CHECK_INPUT(
        first8.size() >= 8 && file_size >= 8,
        "'{}' is not a nazar model file: {} bytes, shorter than the 8-byte header length", src,
        file_size);
    uint64_t n = 0;
    std::memcpy(&n, first8.data(), 8);
    if (n <= kSafetensorsMaxHeader && n <= file_size - 8) return;
    // Text (a corpus, a configuration) read as a length is a huge number: say what it is.
    const bool text = std::all_of(first8.begin(), first8.begin() + 8, [](char c) {
        return (c >= 0x20 && c < 0x7f) || c == '\t' || c == '\n' || c == '\r';
    });
    throw Error(fmt::format(
        "'{}' is not a nazar model file: header length {} exceeds {}{}", src, n,
        n > kSafetensorsMaxHeader ? fmt::format("the {} byte limit", kSafetensorsMaxHeader)
                                  : fmt::format("the file size {}", file_size),
        text ? fmt::format(" (its first 8 bytes are text: '{}')", printable(first8.substr(0, 8)))
             : std::string()));
}

}  // namespace

// ---- SafeTensors ------------------------------------------------------------------------

void SafeTensors::set(const std::string& name, ConstTensorView value) {
    raw_.erase(name);
    tensors_.insert_or_assign(name, Tensor::clone(value));
}
void SafeTensors::set(const std::string& name, Tensor&& value) {
    raw_.erase(name);
    tensors_.insert_or_assign(name, std::move(value));
}
void SafeTensors::set_raw(const std::string& name, RawTensor t) {
    NZ_CHECK(static_cast<uint64_t>(t.shape.numel()) * raw_dtype_size(t.dtype) == t.bytes.size(),
             "safetensors: raw tensor '{}' {} {} holds {} bytes", name, t.dtype, t.shape.str(),
             t.bytes.size());
    tensors_.erase(name);
    raw_.insert_or_assign(name, std::move(t));
}

RawTensor SafeTensors::take_raw(const std::string& name) {
    const auto it = raw_.find(name);
    NZ_CHECK_INPUT(it != raw_.end(), "'{}': no raw tensor named '{}' ({} raw tensors)", source,
                   name, raw_.size());
    RawTensor t = std::move(it->second);
    raw_.erase(it);
    return t;
}

const Tensor& SafeTensors::get(const std::string& name) const {
    const auto it = tensors_.find(name);
    NZ_CHECK_INPUT(it != tensors_.end(), "'{}': no tensor named '{}' ({} tensors)", source, name,
                   tensors_.size());
    return it->second;
}
Tensor& SafeTensors::get(const std::string& name) {
    return const_cast<Tensor&>(static_cast<const SafeTensors&>(*this).get(name));
}

const Tensor& SafeTensors::get(const std::string& name, const Shape& expected) const {
    const Tensor& t = get(name);
    NZ_CHECK_INPUT(t.shape() == expected, "'{}': tensor '{}' has shape {}, expected {}", source,
                   name, t.shape().str(), expected.str());
    return t;
}

std::vector<std::string> SafeTensors::names() const {
    std::vector<std::string> out;
    out.reserve(tensors_.size());
    for (const auto& [k, v] : tensors_) out.push_back(k);
    return out;
}

const std::string& SafeTensors::meta(const std::string& key) const {
    const auto it = metadata.find(key);
    NZ_CHECK_INPUT(it != metadata.end(), "'{}': no metadata entry '{}'", source, key);
    return it->second;
}

void SafeTensors::set_params(const ParamList& params) {
    for (const auto& p : params) set(p.name, p.value->view());
}

void SafeTensors::get_params(const ParamList& params) const {
    for (const auto& p : params) p.value->copy_from(get(p.name, p.value->shape()));
}

// ---- parse / serialize ------------------------------------------------------------------

// The tensors must tile the data buffer of data_len bytes exactly, as upstream requires; sorts
// `entries` by offset.
static void check_tiling(std::vector<Entry>& entries, uint64_t data_len, const std::string& src) {
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
    });
    uint64_t pos = 0;
    for (const auto& e : entries) {
        NZ_CHECK_INPUT(e.end <= data_len,
                       "'{}': tensor '{}': data_offsets [{}, {}] beyond the {} data bytes", src,
                       printable(e.name), e.begin, e.end, data_len);
        NZ_CHECK_INPUT(
            e.begin >= pos,
            "'{}': tensor '{}': data_offsets [{}, {}] overlap the previous tensor (ends at {})",
            src, printable(e.name), e.begin, e.end, pos);
        NZ_CHECK_INPUT(e.begin == pos,
                       "'{}': tensor '{}': gap in the data buffer between {} and {}", src,
                       printable(e.name), pos, e.begin);
        pos = e.end;
    }
    NZ_CHECK_INPUT(pos == data_len, "'{}': data buffer has {} bytes but tensors cover {}", src,
                   data_len, pos);
}

namespace {

// What a header says, every check but the values' done: the tensors (sorted by offset, tiling
// the data buffer exactly) and the metadata.
struct Header {
    std::vector<Entry> entries;
    std::map<std::string, std::string> metadata;
    uint64_t data_start = 0;  // 8 + N: where the data buffer begins in the file
};

// head: the file's first bytes, at least 8 + N of them (N the header length, checked here
// against file_size, the whole file's size, first).
Header parse_header(std::string_view head, uint64_t file_size, const std::string& src) {
    check_header_length(head.substr(0, std::min<std::size_t>(8, head.size())), file_size, src);
    uint64_t n = 0;
    std::memcpy(&n, head.data(), 8);
    NZ_CHECK(head.size() - 8 >= n, "parse_header: {} of the {} header bytes given", head.size() - 8,
             n);
    const std::string_view header = head.substr(8, n);
    NZ_CHECK_INPUT(!header.empty() && header[0] == '{',
                   "'{}': header must be a JSON object starting with '{{'", src);

    check_nesting(header, fmt::format("'{}': header", src), TextSyntax::json);

    // Duplicate keys: nlohmann silently keeps the last; track the keys of every open object.
    std::vector<std::set<std::string>> open;
    std::string duplicate;
    json::parser_callback_t cb = [&](int, json::parse_event_t ev, json& parsed) {
        if (ev == json::parse_event_t::object_start)
            open.emplace_back();
        else if (ev == json::parse_event_t::object_end && !open.empty())
            open.pop_back();
        else if (ev == json::parse_event_t::key && !open.empty() && duplicate.empty() &&
                 !open.back().insert(parsed.get<std::string>()).second)
            duplicate = parsed.get<std::string>();
        return true;
    };
    json h;
    try {
        h = json::parse(header.begin(), header.end(), cb);
    } catch (const json::exception& e) {
        throw Error(fmt::format("'{}': invalid JSON header: {}", src, printable(e.what(), 200)));
    }
    NZ_CHECK_INPUT(duplicate.empty(), "'{}': duplicate key '{}' in the header", src,
                   printable(duplicate));
    NZ_CHECK_INPUT(h.is_object(), "'{}': header must be a JSON object", src);

    Header out;
    for (const auto& [k, v] : h.items()) {
        if (k == "__metadata__") {
            NZ_CHECK_INPUT(v.is_object(), "'{}': __metadata__ must be an object of strings", src);
            for (const auto& [mk, mv] : v.items()) {
                NZ_CHECK_INPUT(mv.is_string(),
                               "'{}': __metadata__ entry '{}' must be a string, got {}", src,
                               printable(mk), mv.type_name());
                out.metadata[mk] = mv.get<std::string>();
            }
            continue;
        }
        out.entries.push_back(parse_entry(src, k, v));
    }
    out.data_start = 8 + n;
    check_tiling(out.entries, file_size - out.data_start, src);  // sorts entries by offset
    return out;
}

bool raw_dtype(DType d) {
    return d == DType::i8 || d == DType::bf16;
}

RawTensor raw_tensor(const Entry& e, std::string bytes) {
    return {e.dtype == DType::i8 ? "I8" : "BF16", Shape(std::span<const int64_t>(e.shape)),
            std::move(bytes)};
}

}  // namespace

SafeTensors parse_safetensors(std::string_view bytes, const std::string& source) {
    Header h = parse_header(bytes, bytes.size(), source);
    SafeTensors st;
    st.source = source;
    st.metadata = std::move(h.metadata);
    for (const auto& e : h.entries) {
        const char* p = bytes.data() + h.data_start + e.begin;
        if (raw_dtype(e.dtype))
            st.set_raw(e.name, raw_tensor(e, std::string(p, e.end - e.begin)));
        else
            st.set(e.name, decode(e, p, source));
    }
    return st;
}

std::string serialize_safetensors(const SafeTensors& st) {
    json h = json::object();
    uint64_t pos = 0;
    // float and raw tensors merged in name order (a name is in one map only: set / set_raw)
    std::map<std::string, std::pair<const Tensor*, const RawTensor*>> all;
    for (const auto& [name, t] : st.tensors()) all[name].first = &t;
    for (const auto& [name, r] : st.raw()) all[name].second = &r;
    for (const auto& [name, tr] : all) {
        NZ_CHECK(!name.empty() && name != "__metadata__", "safetensors: invalid tensor name '{}'",
                 name);
        const Shape& sh = tr.first ? tr.first->shape() : tr.second->shape;
        json shape = json::array();
        for (int64_t d : sh.dims()) shape.push_back(d);
        const uint64_t bytes = tr.first ? static_cast<uint64_t>(tr.first->numel()) * 4
                                        : static_cast<uint64_t>(tr.second->bytes.size());
        h[name] = {{"dtype", tr.first ? std::string("F32") : tr.second->dtype},
                   {"shape", shape},
                   {"data_offsets", {pos, pos + bytes}}};
        pos += bytes;
    }
    if (!st.metadata.empty()) h["__metadata__"] = st.metadata;
    std::string header;
    try {
        header = h.dump();
    } catch (const json::exception& e) {  // e.g. a name or metadata value that is not UTF-8
        NZ_FAIL("safetensors: cannot encode the header: {}", printable(e.what(), 200));
    }
    header.append((8 - header.size() % 8) % 8, ' ');

    std::string out;
    out.reserve(8 + header.size() + pos);
    const uint64_t n = header.size();
    out.append(reinterpret_cast<const char*>(&n), 8);
    out += header;
    for (const auto& [name, tr] : all) {
        if (tr.first)
            out.append(reinterpret_cast<const char*>(tr.first->data()),
                       static_cast<std::size_t>(tr.first->numel()) * 4);
        else
            out += tr.second->bytes;
    }
    return out;
}

SafeTensors load_safetensors(const std::string& path) {
    // Read piece by piece: the header length (checked against the file size before anything
    // else is read; only regular files are opened, so /dev/zero or a FIFO never is), the
    // header, then each tensor straight into the memory that keeps it. The file is never held
    // whole beside its tensors; a non-F32 float tensor passes through a buffer of its own size.
    const FileReader f(path);
    std::string head(std::min<uint64_t>(8, f.size()), '\0');
    f.read_at(0, head.data(), head.size());
    check_header_length(head, f.size(), path);
    uint64_t n = 0;
    std::memcpy(&n, head.data(), 8);
    head.resize(8 + n);
    f.read_at(8, head.data() + 8, n);
    Header h = parse_header(head, f.size(), path);
    head = std::string();

    SafeTensors st;
    st.source = path;
    st.metadata = std::move(h.metadata);
    for (const auto& e : h.entries) {
        const uint64_t at = h.data_start + e.begin, size = e.end - e.begin;
        if (e.dtype == DType::f32) {
            Tensor t{Shape(std::span<const int64_t>(e.shape))};
            f.read_at(at, t.data(), size);
            st.set(e.name, std::move(t));
            continue;
        }
        std::string bytes;
        if (raw_dtype(e.dtype) && e.shape.size() == 2 && e.shape[0] > 0)  // rows rounded up to 16
            bytes.reserve(size / static_cast<uint64_t>(e.shape[0]) *
                          ((static_cast<uint64_t>(e.shape[0]) + 15) / 16 * 16));
        bytes.resize(size);
        f.read_at(at, bytes.data(), size);
        if (raw_dtype(e.dtype))
            st.set_raw(e.name, raw_tensor(e, std::move(bytes)));
        else
            st.set(e.name, decode(e, bytes.data(), path));
    }
    return st;
}

void save_safetensors(const std::string& path, const SafeTensors& st) {
    atomic_write_file(path, serialize_safetensors(st));
}

}  // namespace nazar
