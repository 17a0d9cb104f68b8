// Fuzzes the model-file reader: bytes -> parse_safetensors (core/safetensors.h) -> round trip
// -> model_from_safetensors (models/model_file.h: format, config, tensor names and shapes,
// vocabularies) -> the vocabulary and tokenizer strings of the metadata.
//
// Properties: hostile bytes give a one-line nazar::Error or a result; a parsed file serializes
// and parses back to the same tensors (bit for bit) and metadata; the same bytes read through a
// real file (load_safetensors: regular-file check, header length checked against the file size
// before the rest is read) give the same answer as from memory.
// Seeds: fuzz/corpus/safetensors/ (real tiny models written by nazar and by PyTorch).
#include "fuzz/common.h"

#include "nazar/core/fileio.h"
#include "nazar/core/safetensors.h"
#include "nazar/data/tokenizer.h"
#include "nazar/data/vocab.h"
#include "nazar/models/model_file.h"

#include <cstring>

using namespace nazar;

namespace {

void check_round_trip(const SafeTensors& st) {
    std::string bytes;
    if (!fuzz::expect_error_or_ok([&] { bytes = serialize_safetensors(st); }))
        return;                                                       // e.g. non-UTF-8 name
    const SafeTensors back = parse_safetensors(bytes, "round trip");  // must not throw
    if (back.metadata != st.metadata) fuzz::fail("metadata changed in a round trip");
    if (back.names() != st.names()) fuzz::fail("tensor names changed in a round trip");
    for (const auto& [name, t] : st.tensors()) {
        const Tensor& u = back.get(name);
        if (u.shape() != t.shape()) fuzz::fail("shape of '" + name + "' changed in a round trip");
        if (t.numel() &&
            std::memcmp(u.data(), t.data(), static_cast<std::size_t>(t.numel()) * 4) != 0)
            fuzz::fail("values of '" + name + "' changed in a round trip");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    SafeTensors st;
    const bool parsed = fuzz::expect_error_or_ok(
        [&] { st = parse_safetensors(fuzz::as_text(data, size), "fuzz.safetensors"); });
    // The file route (what `--model F` does) must agree with the in-memory one.
    static const std::string path = fuzz::scratch_path("model.safetensors");
    fuzz::write_bytes(path, fuzz::as_text(data, size));
    SafeTensors from_file;
    const bool loaded = fuzz::expect_error_or_ok([&] { from_file = load_safetensors(path); });
    if (loaded != parsed)
        fuzz::fail(parsed ? "parsed from memory but not from a file"
                          : "parsed from a file but not from memory");
    if (loaded && (from_file.names() != st.names() || from_file.metadata != st.metadata))
        fuzz::fail("a file and its bytes in memory parse differently");
    if (!parsed) return 0;
    check_round_trip(st);

    // Any nazar.config: the loader checks the file's tensors against the config's shapes before
    // it allocates the model, so a hostile config cannot allocate more than the file justifies
    // (run-fuzzers.sh: -malloc_limit_mb=256).
    fuzz::expect_error_or_ok([&] { (void)model_from_safetensors(st); });

    // The metadata strings a model file carries (model_file.h keys).
    for (const char* key : {kSrcVocabKey, kTgtVocabKey})
        if (st.has_meta(key))
            fuzz::expect_error_or_ok([&] { (void)Vocab::from_json(st.meta(key)); });
    for (const char* key : {kSrcTokenizerKey, kTgtTokenizerKey})
        if (st.has_meta(key))
            fuzz::expect_error_or_ok([&] { (void)Tokenizer::from_string(st.meta(key)); });
    return 0;
}
