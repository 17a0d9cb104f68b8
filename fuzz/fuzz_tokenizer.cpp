// Fuzzes what a model file's metadata feeds the data layer: Tokenizer::from_string (JSON with a
// base64 SentencePiece model proto), Tokenizer::spm_from_proto on raw bytes, base64_decode and
// Vocab::from_json. Input: byte 0 selects the reader, the rest is its text.
// Properties: a one-line nazar::Error or a result; base64 round-trips; a loaded vocabulary
// round-trips through to_json; a loaded tokenizer encodes and decodes a fixed sentence.
// Seeds: fuzz/corpus/tokenizer/ (a real tiny spm model among them).
#include "fuzz/common.h"

#include "nazar/data/tokenizer.h"
#include "nazar/data/vocab.h"

using namespace nazar;

namespace {

void exercise(const Tokenizer& tok) {
    const std::string_view sentence = "Hello wörld, ça va? 12";
    const std::vector<std::string> pieces = tok.encode(sentence);
    (void)tok.decode(pieces);
    if (tok.kind() == TokenizerKind::spm) {
        std::vector<int> ids;
        tok.encode_spm_ids(sentence, ids);
        (void)tok.spm_pieces();
    }
    const Tokenizer back = Tokenizer::from_string(tok.to_string());  // must not throw
    if (back.kind() != tok.kind() || back.spm_model_proto() != tok.spm_model_proto())
        fuzz::fail("tokenizer changed in a to_string round trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view text = fuzz::as_text(data + 1, size - 1);
    switch (data[0] % 4) {
        case 0: {
            Tokenizer tok;
            if (fuzz::expect_error_or_ok([&] { tok = Tokenizer::from_string(text); }))
                fuzz::expect_error_or_ok([&] { exercise(tok); });
            break;
        }
        case 1: {
            Tokenizer tok;
            if (fuzz::expect_error_or_ok(
                    [&] { tok = Tokenizer::spm_from_proto(std::string(text)); }))
                fuzz::expect_error_or_ok([&] { exercise(tok); });
            break;
        }
        case 2: {
            std::string bytes;
            if (fuzz::expect_error_or_ok([&] { bytes = base64_decode(text); }) &&
                base64_encode(bytes) != text)
                // Only canonical text needs to round-trip: padding bits may differ.
                if (base64_decode(base64_encode(bytes)) != bytes) fuzz::fail("base64 round trip");
            break;
        }
        default: {
            Vocab v;
            if (fuzz::expect_error_or_ok([&] { v = Vocab::from_json(text); })) {
                const Vocab back = Vocab::from_json(v.to_json());  // must not throw
                if (back.to_json() != v.to_json() || back.size() != v.size())
                    fuzz::fail("vocab round trip");
            }
            break;
        }
    }
    return 0;
}
