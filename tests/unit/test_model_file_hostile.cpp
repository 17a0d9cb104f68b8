// Hostile model files (docs/reliability.md): corrupted versions of a real saved model, read
// the way `nazar translate --model` reads them (bytes -> parse_safetensors -> model_from_
// safetensors). Every one must be a one-line nazar::Error naming the problem: never a crash, a
// hang, another exception type or an allocation the file does not justify.
//
// The model: tests/common/tiny_models.h's configuration with both vocabularies and a tokenizer
// in the metadata, as `nazar train` saves it. Structural damage is done to the bytes (truncation,
// flipped bytes, header edits re-packed with a correct length); semantic damage (missing or
// extra tensors, disagreeing vocabularies, configurations) through the header JSON as well, so
// the file stays valid safetensors and only the model checks can reject it.
#include "nazar/core/safetensors.h"
#include "nazar/data/tokenizer.h"
#include "nazar/data/vocab.h"
#include "nazar/models/model_file.h"
#include "tests/common/test_util.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace nazar {
namespace test_model_file_hostile {
namespace {

using json = nlohmann::json;

using test::vocab_of_size;

// The file image of a real tiny model (V = 10 both sides).
std::string saved_model() {
    Seq2Seq m(test::tiny_config(), 5);
    SafeTensors st;
    model_to_safetensors(m,
                         {{kSrcVocabKey, vocab_of_size(10).to_json()},
                          {kTgtVocabKey, vocab_of_size(10).to_json()},
                          {kSrcTokenizerKey, Tokenizer::character().to_string()},
                          {kTgtTokenizerKey, Tokenizer::word().to_string()}},
                         st);
    return serialize_safetensors(st);
}

// What loading the bytes gives: "" when it loads, else the nazar::Error message. Any other
// exception escapes and fails the test.
std::string load_error(const std::string& bytes) {
    try {
        (void)model_from_safetensors(parse_safetensors(bytes, "m.safetensors"));
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// The file split into its parts, and put back together with a correct header length.
struct Parts {
    json header;
    std::string data;
};
Parts split(const std::string& file) {
    uint64_t n;
    std::memcpy(&n, file.data(), 8);
    return {json::parse(file.substr(8, n)), file.substr(8 + n)};
}
std::string pack(const std::string& header_text, const std::string& data) {
    const uint64_t n = header_text.size();
    std::string out(reinterpret_cast<const char*>(&n), 8);
    return out + header_text + data;
}
std::string pack(const Parts& p) {
    return pack(p.header.dump(), p.data);
}

// Removes a tensor's entry and its bytes, shifting later offsets: a valid file without it.
void remove_tensor(Parts& p, const std::string& name) {
    const uint64_t b = p.header[name]["data_offsets"][0], e = p.header[name]["data_offsets"][1];
    p.data.erase(b, e - b);
    p.header.erase(name);
    for (auto& [k, v] : p.header.items())
        if (k != "__metadata__")
            for (auto& off : v["data_offsets"])
                if (off.get<uint64_t>() >= e) off = off.get<uint64_t>() - (e - b);
}
void add_tensor(Parts& p, const std::string& name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const uint64_t b = p.data.size();
    p.data.append(static_cast<std::size_t>(n) * 4, '\0');
    p.header[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {b, b + n * 4}}};
}
json config_of(const Parts& p) {
    return json::parse(p.header["__metadata__"][kModelConfigKey].get<std::string>());
}
void set_config(Parts& p, const json& cfg) {
    p.header["__metadata__"][kModelConfigKey] = cfg.dump();
}

struct Case {
    const char* name;
    std::function<std::string(const std::string&)> corrupt;  // good file -> hostile file
    const char* expected;                                    // substring of the error
};

std::vector<Case> cases() {
    auto edit = [](std::function<void(Parts&)> f) {
        return [f](const std::string& file) {
            Parts p = split(file);
            f(p);
            return pack(p);
        };
    };
    auto edit_config = [edit](std::function<void(json&)> f) {
        return edit([f](Parts& p) {
            json c = config_of(p);
            f(c);
            set_config(p, c);
        });
    };
    auto meta = [edit](const char* key, std::string value) {
        return edit([key, value](Parts& p) { p.header["__metadata__"][key] = value; });
    };
    return {
        // ---- the safetensors layer ----
        {"empty file", [](const std::string&) { return std::string(); }, "shorter than the 8-byte"},
        {"header length beyond the file",
         [](const std::string& f) {
             std::string g = f;
             g[5] = '\x01';
             return g;
         },
         "exceeds"},
        {"header length 2^64-1",
         [](const std::string& f) {
             std::string g = f;
             std::memset(g.data(), 0xff, 8);
             return g;
         },
         "exceeds"},
        {"header not JSON",
         [](const std::string& f) { return pack("{\"a\": [1, 2", split(f).data); }, "invalid JSON"},
        {"header a JSON array", [](const std::string& f) { return pack("[1, 2]", split(f).data); },
         "JSON object"},
        {"dtype F16", edit([](Parts& p) { p.header["generator.bias"]["dtype"] = "F16"; }),
         "does not load"},
        {"dtype unknown", edit([](Parts& p) { p.header["generator.bias"]["dtype"] = "Q4"; }),
         "unknown dtype"},
        {"dtype F64 with F32 bytes",
         edit([](Parts& p) { p.header["generator.bias"]["dtype"] = "F64"; }), "data_offsets"},
        {"dtype not a string", edit([](Parts& p) { p.header["generator.bias"]["dtype"] = 32; }),
         "dtype"},
        {"negative shape", edit([](Parts& p) { p.header["generator.bias"]["shape"] = {-10}; }),
         "non-negative"},
        {"shape of 2^31", edit([](Parts& p) { p.header["generator.bias"]["shape"] = {1ll << 31}; }),
         "too large"},
        {"shape product overflows", edit([](Parts& p) {
             p.header["generator.bias"]["shape"] = {1 << 30, 1 << 30, 1 << 30, 1 << 30};
         }),
         "overflows"},
        {"five dimensions", edit([](Parts& p) {
             p.header["generator.bias"]["shape"] = {1, 1, 1, 1, 10};
         }),
         "dimensions"},
        {"offsets beyond the data", edit([](Parts& p) { p.data.resize(p.data.size() - 4); }),
         "beyond"},
        {"data after the tensors", edit([](Parts& p) { p.data += "junk"; }), "tensors cover"},
        {"offsets overlap", edit([](Parts& p) {
             p.header["generator.bias"]["data_offsets"] =
                 p.header["encoder.embedding.weight"]["data_offsets"];
             p.header["generator.bias"]["shape"] = p.header["encoder.embedding.weight"]["shape"];
         }),
         "overlap"},
        {"metadata value not a string",
         edit([](Parts& p) { p.header["__metadata__"]["nazar.format"] = 1; }), "must be a string"},
        {"duplicate tensor name",
         [](const std::string& f) {
             Parts p = split(f);
             std::string h = p.header.dump();
             const std::string entry = "\"generator.bias\":" + p.header["generator.bias"].dump();
             h.insert(1, entry + ",");
             return pack(h, p.data);
         },
         "duplicate key"},
        // ---- not a nazar model ----
        {"non-nazar safetensors (no metadata)",
         edit([](Parts& p) { p.header.erase("__metadata__"); }), "not a nazar model file"},
        {"format version absent",
         edit([](Parts& p) { p.header["__metadata__"].erase(kModelFormatKey); }),
         "not a nazar model file"},
        {"format version 2", meta(kModelFormatKey, "2"), "version '2' is not supported"},
        {"format version empty", meta(kModelFormatKey, ""), "is not supported"},
        {"format version '1 '", meta(kModelFormatKey, "1 "), "is not supported"},
        {"config absent", edit([](Parts& p) { p.header["__metadata__"].erase(kModelConfigKey); }),
         "nazar.config"},
        {"config not JSON", meta(kModelConfigKey, "{\"src_vocab_size\": "), "not valid JSON"},
        {"config a JSON array", meta(kModelConfigKey, "[10, 10]"), "must be an object"},
        // ---- tensors vs config ----
        {"missing tensor", edit([](Parts& p) { remove_tensor(p, "attention.v.weight"); }),
         "tensor 'attention.v.weight' is missing"},
        {"missing embedding", edit([](Parts& p) { remove_tensor(p, "encoder.embedding.weight"); }),
         "'encoder.embedding.weight' is missing"},
        {"extra unknown tensor", edit([](Parts& p) {
             add_tensor(p, "decoder.mystery.weight", {2, 3});
         }),
         "unexpected tensor 'decoder.mystery.weight'"},
        {"embedding transposed (same bytes)", edit([](Parts& p) {
             p.header["encoder.embedding.weight"]["shape"] = {4, 10};
         }),
         "has shape (4, 10), expected (10, 4)"},
        {"generator rows disagree with tgt_vocab_size",
         edit_config([](json& c) { c["tgt_vocab_size"] = 11; }), "expected (11"},
        {"hidden size disagrees with the RNN weights",
         edit_config([](json& c) { c["decoder"]["hidden_size"] = 6; }), "expected"},
        {"GRU weights where the config says LSTM",
         edit_config([](json& c) { c["encoder"]["cell"] = "lstm"; }), "expected"},
        {"one layer more in the config",
         edit_config([](json& c) { c["encoder"]["num_layers"] = 2; }), "is missing"},
        // ---- vocabularies and tokenizers ----
        {"source vocabulary smaller than the embedding",
         meta(kSrcVocabKey, vocab_of_size(9).to_json()),
         "source vocabulary (nazar.src_vocab) has 9 entries"},
        {"target vocabulary larger than the embedding",
         meta(kTgtVocabKey, vocab_of_size(11).to_json()), "has 11 entries"},
        {"vocabulary not JSON", meta(kSrcVocabKey, "{\"pieces\": [\"a\""), "not valid JSON"},
        {"vocabulary without pieces", meta(kSrcVocabKey, "{\"specials\": []}"), "pieces"},
        {"vocabulary pieces not strings", meta(kSrcVocabKey, "{\"pieces\": [1, 2, 3, 4, 5, 6]}"),
         "vocabulary metadata"},
        {"vocabulary specials not strings", meta(kSrcVocabKey, "{\"specials\": 4, \"pieces\": []}"),
         "vocabulary metadata"},
        {"vocabulary wrong specials",
         meta(
             kSrcVocabKey,
             R"({"specials": ["<unk>", "<pad>", "<s>", "</s>"], "pieces": ["a","b","c","d","e","f"]})"),
         "specials"},
        {"vocabulary duplicate piece",
         meta(kSrcVocabKey, R"({"pieces": ["a","a","c","d","e","f"]})"), "a"},
    };
}

TEST(ModelFileHostile, TheUncorruptedFileLoads) {
    const std::string good = saved_model();
    EXPECT_EQ(load_error(good), "");
    // Each table entry must change exactly what it says, so check the helpers on a no-op edit.
    EXPECT_EQ(load_error(pack(split(good))), "");
}

TEST(ModelFileHostile, EveryCaseIsAOneLineError) {
    const std::string good = saved_model();
    for (const Case& c : cases()) {
        SCOPED_TRACE(c.name);
        std::string e;
        ASSERT_NO_THROW(e = load_error(c.corrupt(good))) << "an exception other than nazar::Error";
        EXPECT_NE(e, "") << "loaded without an error";
        EXPECT_NE(e.find(c.expected), std::string::npos) << e;
        EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    }
}

// A cut anywhere (inside the length, the header or any tensor's bytes) is an error.
TEST(ModelFileHostile, EveryTruncationIsAnError) {
    const std::string good = saved_model();
    for (std::size_t cut = 0; cut < good.size(); ++cut) {
        const std::string e = load_error(good.substr(0, cut));
        ASSERT_NE(e, "") << "truncated to " << cut << " of " << good.size() << " bytes loaded";
        ASSERT_EQ(e.find('\n'), std::string::npos) << e;
    }
}

// Flipping any one byte of the header or the length either still gives a valid file (e.g. a
// changed digit of a float in the config, or a piece of a vocabulary) or a one-line error.
// In the data, flips change weights: the model loads unless the flip breaks the tied
// generator copy.
TEST(ModelFileHostile, FlippedBytesLoadOrFailCleanly) {
    const std::string good = saved_model();
    uint64_t n;
    std::memcpy(&n, good.data(), 8);
    int errors = 0, loads = 0;
    for (std::size_t i = 0; i < good.size(); i += (i < 8 + n ? 1 : 29)) {
        for (unsigned char mask : {0x01, 0x80}) {
            std::string bad = good;
            bad[i] = static_cast<char>(bad[i] ^ mask);
            std::string e;
            ASSERT_NO_THROW(e = load_error(bad)) << "byte " << i << " ^ " << int(mask);
            ASSERT_EQ(e.find('\n'), std::string::npos) << e;
            (e.empty() ? loads : errors) += 1;
        }
    }
    EXPECT_GT(errors, 0);
    EXPECT_GT(loads, 0);  // data flips
}

// A configuration whose values are out of range or of the wrong type is refused with a one-line
// error (a UsageError from validate(), or the shape check when a value wraps into range).
TEST(ModelFileHostile, OutOfRangeConfigValuesAreRefused) {
    const std::string good = saved_model();
    const std::vector<std::pair<std::string, json>> edits = {
        {"/src_vocab_size", -10},
        {"/src_vocab_size", 0},
        {"/src_vocab_size", 4},
        {"/embedding_size", -1},
        {"/encoder/hidden_size", 0},
        {"/encoder/num_layers", 0},
        {"/encoder/dropout", 1.5},
        {"/encoder/dropout", -0.1},
        {"/decoder/dropout", 1.0},
        {"/decoder/hidden_size", -5},
        {"/decoder/num_layers", -1},
        {"/attention/window", 0},
        {"/attention/attention_size", -3},
        {"/special_ids/eos", 10},
        {"/special_ids/pad", -1},
        {"/encoder/cell", "rnn"},
        {"/decoder/kind", "transformer"},
        {"/src_vocab_size", "ten"},
        {"/src_vocab_size", 2.5e10},
        {"/embedding_size", 1e300},
        {"/encoder/hidden_size", 4294967300ll},
    };
    for (const auto& [ptr, value] : edits) {
        SCOPED_TRACE(ptr + " = " + value.dump());
        Parts p = split(good);
        json c = config_of(p);
        c[json::json_pointer(ptr)] = value;
        if (ptr == "/attention/window") c["attention"]["local"] = "local-m";  // the window matters
        set_config(p, c);
        std::string e;
        try {
            (void)model_from_safetensors(parse_safetensors(pack(p), "m.safetensors"));
        } catch (const Error& err) {
            e = err.what();
        }
        EXPECT_NE(e, "") << "accepted";
        EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    }
}

// model_param_shapes (the loader's pre-allocation check) mirrors the model's constructors: over
// every structural choice it lists exactly Seq2Seq::parameters() (names, order, shapes), so it
// never refuses a valid file.
TEST(ModelFileHostile, ShapeTableMatchesTheModel) {
    int checked = 0;
    constexpr int kVariants = 2 * 2 * 2 * 2 * 4 * 3 * 2 * 5 * 5;
    // Under AddressSanitizer every 7th variant (89 s instrumented for all 9,600): 7 is prime to
    // every radix, so each choice still takes each of its values.
    constexpr int kStride = test::kAddressSanitized ? 7 : 1;
    for (int variant = 0; variant < kVariants; variant += kStride) {
        int v = variant;  // mixed radix: one digit per choice
        auto pick = [&v](int n) {
            const int r = v % n;
            v /= n;
            return r;
        };
        ModelConfig c = test::tiny_config();
        c.encoder.cell = pick(2) ? CellType::lstm : CellType::gru;
        c.decoder.cell = pick(2) ? CellType::lstm : CellType::gru;
        c.encoder.bidirectional = pick(2) == 0;
        c.encoder.num_layers = c.decoder.num_layers = 1 + pick(2);
        c.attention.score = static_cast<ScoreKind>(pick(4));
        const int local = pick(3);
        c.attention.local = static_cast<LocalMode>(local);
        c.attention.position_size = pick(2) ? 0 : 7;  // 0 = H
        const int shape =
            pick(5);  // 0 bahdanau, 1 bahdanau deep, 2 luong, 3 luong feeding, 4 luong tied
        c.decoder.kind = shape < 2 ? DecoderKind::bahdanau : DecoderKind::luong;
        c.decoder.deep_output = shape == 1;
        c.decoder.deep_output_size = shape == 1 ? 6 : 0;
        c.decoder.input_feeding = shape == 3;
        if (shape == 4) {
            c.tie_target_embeddings = true;
            c.embedding_size = c.decoder.hidden_size;  // tying needs d_out == E
        }
        c.decoder.bridge = static_cast<BridgeKind>(pick(5));
        if (c.attention.score == ScoreKind::dot) c.decoder.hidden_size = encoder_output_size(c);
        if (c.attention.score != ScoreKind::additive && c.attention.score != ScoreKind::concat)
            c.attention.attention_size = 0;
        if (c.attention.score == ScoreKind::general) c.attention.scale = ScaleMode::learned;
        c.decoder.attention_timing = c.decoder.kind == DecoderKind::bahdanau
                                         ? AttentionTiming::before
                                         : AttentionTiming::after;
        if (c.tie_target_embeddings) c.embedding_size = c.decoder.hidden_size;
        try {
            validate(c);
        } catch (const UsageError&) {
            continue;  // an invalid combination (e.g. backward-first with a unidirectional encoder)
        }
        SCOPED_TRACE(to_json_string(c));
        Seq2Seq m(c, 3);
        std::vector<std::pair<std::string, Shape>> actual;
        for (const auto& p : m.parameters()) actual.emplace_back(p.name, p.value->shape());
        const auto table = model_param_shapes(c);
        ASSERT_EQ(table.size(), actual.size());
        for (std::size_t i = 0; i < table.size(); ++i) {
            EXPECT_EQ(table[i].first, actual[i].first);
            EXPECT_EQ(table[i].second.str(), actual[i].second.str()) << table[i].first;
        }
        ++checked;
    }
    EXPECT_GT(checked, kVariants / kStride / 4);  // most combinations are valid
}

// Peak resident memory of this process so far (bytes).
int64_t peak_rss() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

// A 9 KB file whose nazar.config claims huge sizes or layer counts is refused before the model
// is built: sizes beyond validate()'s bounds (kMaxVocabSize, kMaxModelSize, kMaxLayers) by the
// bounds (an Error naming nazar.config, not a UsageError: the file is bad), sizes within them by
// the shape check (a one-line error naming a tensor). Either way nothing of the size the config
// implies is allocated (vocabulary 2^24 x 4 floats, values and gradients, encoder and decoder: ~1
// GB; hidden 2^20: 4·2^40 floats). ru_maxrss is the process's peak, so the 200 MB bound covers
// every case together.
TEST(ModelFileHostile, HugeConfigSizesAreRefusedBeforeAllocating) {
    const std::string good = saved_model();
    const std::vector<std::pair<std::string, json>> shape_errors = {
        {"/src_vocab_size", kMaxVocabSize},      {"/tgt_vocab_size", kMaxVocabSize},
        {"/embedding_size", kMaxModelSize},      {"/encoder/hidden_size", kMaxModelSize},
        {"/decoder/hidden_size", kMaxModelSize}, {"/encoder/num_layers", kMaxLayers},
        {"/decoder/num_layers", kMaxLayers},     {"/attention/attention_size", kMaxModelSize},
    };
    const std::vector<std::pair<std::string, json>> usage_errors = {
        {"/src_vocab_size", 100000000},          {"/tgt_vocab_size", kMaxVocabSize + 1},
        {"/embedding_size", kMaxModelSize + 1},  {"/encoder/hidden_size", 2147483647},
        {"/decoder/hidden_size", 1073741824},    {"/encoder/num_layers", 1000000000},
        {"/decoder/num_layers", kMaxLayers + 1}, {"/attention/attention_size", 2147483647},
        {"/attention/window", 2147483647},       {"/decoder/deep_output_size", kMaxModelSize + 1},
    };
    const int64_t before = peak_rss();
    for (const bool usage : {false, true})
        for (const auto& [ptr, value] : usage ? usage_errors : shape_errors) {
            SCOPED_TRACE(ptr + " = " + value.dump());
            Parts p = split(good);
            json c = config_of(p);
            c[json::json_pointer(ptr)] = value;
            set_config(p, c);
            std::string e;
            bool is_usage = false;
            try {
                (void)model_from_safetensors(parse_safetensors(pack(p), "m.safetensors"));
            } catch (const UsageError& err) {
                e = err.what();
                is_usage = true;
            } catch (const Error& err) {
                e = err.what();
            }
            // A bad value in a file is a corrupt file (exit 1), never a usage error (exit 2
            // with a --help hint): audit item 10.
            EXPECT_FALSE(is_usage) << e;
            if (usage) {
                EXPECT_NE(e.find("'m.safetensors': nazar.config: "), std::string::npos) << e;
                EXPECT_NE(e.find("must be <= "), std::string::npos) << e;
            } else {
                EXPECT_NE(e.find("m.safetensors': tensor '"), std::string::npos) << e;
                EXPECT_TRUE(e.find("expected") != std::string::npos ||
                            e.find("is missing") != std::string::npos)
                    << e;
            }
            EXPECT_EQ(e.find('\n'), std::string::npos) << e;
        }
    // The sizes of the other sub-modules: local-p's predictor, deep output (bahdanau).
    for (const char* which : {"position", "deep"}) {
        SCOPED_TRACE(which);
        ModelConfig cfg = test::tiny_config();
        if (std::string(which) == "position")
            cfg.attention.local = LocalMode::predictive;
        else
            cfg.decoder.deep_output = true;
        Seq2Seq m(cfg, 5);
        SafeTensors st;
        model_to_safetensors(m, {}, st);
        Parts p = split(serialize_safetensors(st));
        json c = config_of(p);
        if (std::string(which) == "position")
            c["attention"]["position_size"] = kMaxModelSize;
        else
            c["decoder"]["deep_output_size"] = kMaxModelSize;
        set_config(p, c);
        const std::string e = load_error(pack(p));
        EXPECT_NE(e.find(fmt::format("expected ({}, 5)", kMaxModelSize)), std::string::npos) << e;
    }
    const int64_t grown = peak_rss() - before;
    EXPECT_LT(grown, int64_t{200} << 20) << "peak RSS grew by " << (grown >> 20) << " MB";
}

}  // namespace
}  // namespace test_model_file_hostile
}  // namespace nazar
