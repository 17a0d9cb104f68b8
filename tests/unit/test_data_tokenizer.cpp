// Tokenizers (nazar/data/tokenizer.h): char / word / spm round trips, including non-Latin
// scripts, combining characters and unusual whitespace; SentencePiece training (unigram and
// BPE); serialisation to the model-file metadata string; base64.
#include "nazar/core/check.h"
#include "nazar/core/rng.h"
#include "nazar/data/tokenizer.h"
#include "nazar/data/utf8.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace test_data_tokenizer {

using namespace nazar;

namespace {

// Non-Latin scripts, combining marks (e + U+0301, Devanagari vowel signs, Hangul jamo),
// 4-byte code points, no-break spaces, tabs and runs of spaces.
const std::vector<std::string> kTexts = {
    "Hello, world!",
    "Ouvrir le fichier \xC2\xAB\xC2\xA0"
    "donn\xC3\xA9"
    "es\xC2\xA0\xC2\xBB\xE2\x80\xAF: 3 Mo",  // U+00A0, U+202F
    "Cafe\xCC\x81 vs caf\xC3\xA9",           // combining acute vs precomposed
    "日本語のテキスト、句読点。",
    "Русский текст с ёлкой",
    "مرحبا بالعالم",
    "हिन्दी में लिखा गया वाक्य",
    "\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB",  // Hangul as conjoining jamo
    "emoji 😀 and 𝄞 music",
    "  leading, trailing and   inner   spaces  ",
    "tabs\tinside\tthe\ttext",
    "",
};

std::vector<std::string> synthetic_sentences(int n, uint64_t seed) {
    const std::vector<std::string> words = {
        "open",  "file",   "save",   "the",     "directory",   "cannot", "read",       "write",
        "error", "option", "ouvrir", "fichier", "enregistrer", "le",     "répertoire", "impossible",
        "de",    "lire",   "écrire", "erreur",  "données",     "日本",   "語",         "Русский",
        "текст", "%s",     "--help", "42",      "naïve",       "façade"};
    Rng rng(seed);
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) {
        std::string s;
        const int len = 1 + static_cast<int>(rng.below(12));
        for (int k = 0; k < len; ++k) {
            if (k) s += ' ';
            s += words[rng.below(words.size())];
        }
        out.push_back(s);
    }
    return out;
}

Tokenizer train(const std::vector<std::string>& sentences, SpmModelType type, int vocab_size) {
    std::size_t i = 0;
    return Tokenizer::train_spm(
        [&](std::string& s) {
            if (i == sentences.size()) return false;
            s = sentences[i++];
            return true;
        },
        {.vocab_size = vocab_size, .model_type = type});
}

std::string roundtrip(const Tokenizer& t, const std::string& s) {
    return t.decode(t.encode(s));
}

}  // namespace

TEST(DataTokenizer, CharIsCodePointsAndExact) {
    const Tokenizer t = Tokenizer::character();
    EXPECT_EQ(t.encode("aé 日"), (std::vector<std::string>{"a", "é", " ", "日"}));
    // A combining mark is its own code point, hence its own piece.
    EXPECT_EQ(t.encode("e\xCC\x81"), (std::vector<std::string>{"e", "\xCC\x81"}));
    EXPECT_EQ(t.encode("😀").size(), 1u);
    for (const auto& s : kTexts) {
        EXPECT_EQ(roundtrip(t, s), s);
        EXPECT_EQ(t.encode(s).size(), utf8::length(s)) << s;
    }
}

TEST(DataTokenizer, WordSplitsOnAsciiWhitespaceAndNormalizesSpaces) {
    const Tokenizer t = Tokenizer::word();
    EXPECT_EQ(t.encode("  Open\tthe  file\r\n"), (std::vector<std::string>{"Open", "the", "file"}));
    // No-break spaces belong to the word: "données »" stays one piece with its U+00A0.
    const std::string nbsp =
        "\xC2\xAB\xC2\xA0"
        "donn\xC3\xA9"
        "es\xC2\xA0\xC2\xBB";  // « données »
    EXPECT_EQ(t.encode(nbsp + " ok"), (std::vector<std::string>{nbsp, "ok"}));
    EXPECT_TRUE(t.encode(" \t ").empty());
    // Exact up to whitespace normalisation, documented as decode(encode(s)) == normalize_spaces(s).
    EXPECT_EQ(normalize_spaces("  leading, trailing and   inner   spaces  "),
              "leading, trailing and inner spaces");
    EXPECT_EQ(normalize_spaces("tabs\tinside"), "tabs inside");
    for (const auto& s : kTexts) {
        EXPECT_EQ(roundtrip(t, s), normalize_spaces(s)) << s;
        EXPECT_EQ(roundtrip(t, roundtrip(t, s)), roundtrip(t, s));  // idempotent
    }
    EXPECT_EQ(roundtrip(t, "Cafe\xCC\x81 vs caf\xC3\xA9"),
              "Cafe\xCC\x81 vs caf\xC3\xA9");  // marks untouched
}

TEST(DataTokenizer, SpmUnigramAndBpeAreExact) {
    const auto sentences = synthetic_sentences(3000, 11);
    for (SpmModelType type : {SpmModelType::unigram, SpmModelType::bpe}) {
        const Tokenizer t = train(sentences, type, 400);
        EXPECT_EQ(t.kind(), TokenizerKind::spm);
        EXPECT_LE(t.spm_pieces().size(), 400u);
        // Subwords: frequent words are shorter in pieces than in characters.
        EXPECT_LT(t.encode("ouvrir le fichier").size(), utf8::length("ouvrir le fichier"));
        for (const auto& s : sentences) {
            ASSERT_EQ(roundtrip(t, s), s);
            if (&s - sentences.data() == 200) break;
        }
        // Unseen scripts and odd whitespace come back byte for byte (byte fallback, identity
        // normalisation, extra whitespace kept).
        for (const auto& s : kTexts)
            EXPECT_EQ(roundtrip(t, s), s)
                << (type == SpmModelType::bpe ? "bpe: " : "unigram: ") << s;
    }
}

// Pieces the model lacks (a copy model's copied source pieces, data/extended_vocab.h) decode
// with their ▁ as spaces like the model's own pieces, not raw; a first one loses its leading
// space (the dummy prefix). Known pieces decode as before.
TEST(DataTokenizer, SpmDecodesForeignPiecesWithSpaces) {
    const Tokenizer t = train(synthetic_sentences(3000, 11), SpmModelType::unigram, 400);
    const std::string sp = "\xE2\x96\x81";  // ▁
    const std::vector<std::string> known = t.encode("ouvrir le fichier");
    const std::string foreign = sp + "zzqx" + sp + "--block-signal[=SIG]";
    const std::vector<std::string> own = t.spm_pieces();
    ASSERT_TRUE(std::find(own.begin(), own.end(), foreign) == own.end());
    std::vector<std::string> mixed = known;
    mixed.push_back(foreign);
    mixed.push_back("qq");  // a foreign piece without ▁: glued, as a word-inner piece
    EXPECT_EQ(t.decode(mixed), "ouvrir le fichier zzqx --block-signal[=SIG]qq");
    mixed.insert(mixed.begin(), foreign);
    EXPECT_EQ(t.decode(mixed),
              "zzqx --block-signal[=SIG] ouvrir le fichier zzqx "
              "--block-signal[=SIG]qq");
    EXPECT_EQ(t.decode(known), "ouvrir le fichier");
}

TEST(DataTokenizer, SpmTrainingIsDeterministicAndSerialises) {
    const auto sentences = synthetic_sentences(2000, 5);
    const Tokenizer a = train(sentences, SpmModelType::unigram, 300);
    const Tokenizer b = train(sentences, SpmModelType::unigram, 300);
    EXPECT_EQ(a.spm_pieces(), b.spm_pieces());

    const std::string meta = a.to_string();
    EXPECT_EQ(meta.find("\"kind\":\"spm\""), 1u) << meta.substr(0, 40);
    const Tokenizer c = Tokenizer::from_string(meta);
    EXPECT_EQ(c.spm_model_proto(), a.spm_model_proto());
    for (const auto& s : kTexts) EXPECT_EQ(c.encode(s), a.encode(s));

    // A given .model file loads to the same tokenizer.
    const auto path = std::filesystem::temp_directory_path() /
                      ("nazar_spm_" + std::to_string(::getpid()) + ".model");
    std::ofstream(path, std::ios::binary) << a.spm_model_proto();
    const Tokenizer d = Tokenizer::spm_from_file(path.string());
    std::filesystem::remove(path);
    EXPECT_EQ(d.encode("ouvrir le fichier"), a.encode("ouvrir le fichier"));
    EXPECT_THROW(Tokenizer::spm_from_file(path.string()), Error);
    EXPECT_THROW(Tokenizer::spm_from_proto("not a model"), Error);
}

TEST(DataTokenizer, SpmTrainingErrorsAreReported) {
    // A reader error inside training comes out as the reader's error, not a SentencePiece one.
    int calls = 0;
    EXPECT_THROW(Tokenizer::train_spm(
                     [&](std::string& s) {
                         if (++calls > 3) throw Error("input.tsv:4: invalid UTF-8");
                         s = "abc def";
                         return true;
                     },
                     {.vocab_size = 50}),
                 Error);
    EXPECT_THROW(Tokenizer::train_spm([](std::string&) { return false; }, {.vocab_size = 50}),
                 Error);
    EXPECT_THROW(Tokenizer::train_spm([](std::string&) { return false; }, {.vocab_size = 2}),
                 Error);
}

TEST(DataTokenizer, CharAndWordSerialise) {
    EXPECT_EQ(Tokenizer::from_string(Tokenizer::character().to_string()).kind(),
              TokenizerKind::character);
    EXPECT_EQ(Tokenizer::from_string(Tokenizer::word().to_string()).kind(), TokenizerKind::word);
    EXPECT_EQ(Tokenizer::word().to_string(), R"({"kind":"word"})");
    // From a file's metadata, not from the user: an Error, not a UsageError (audit item 10).
    try {
        (void)Tokenizer::from_string("{\"kind\": \"bytes\"}");
        ADD_FAILURE() << "kind 'bytes' accepted";
    } catch (const UsageError& e) {
        ADD_FAILURE() << "UsageError: " << e.what();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("unknown tokenizer 'bytes'"), std::string::npos);
    }
    EXPECT_THROW(Tokenizer::from_string("{\"kind\": \"spm\"}"), Error);
    EXPECT_THROW(Tokenizer::from_string("not json"), Error);
    EXPECT_EQ(parse_tokenizer_kind("char"), TokenizerKind::character);
    EXPECT_EQ(to_string(TokenizerKind::spm), "spm");
}

TEST(DataTokenizer, Base64RoundTripsEveryLength) {
    EXPECT_EQ(base64_encode(""), "");
    EXPECT_EQ(base64_encode("f"), "Zg==");
    EXPECT_EQ(base64_encode("fo"), "Zm8=");
    EXPECT_EQ(base64_encode("foo"), "Zm9v");
    EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
    std::string bytes;
    for (int i = 0; i < 300; ++i) {
        EXPECT_EQ(base64_decode(base64_encode(bytes)), bytes);
        bytes += static_cast<char>((i * 37) & 255);
    }
    EXPECT_THROW(base64_decode("abc"), Error);
    EXPECT_THROW(base64_decode("ab!d"), Error);
}

}  // namespace test_data_tokenizer
