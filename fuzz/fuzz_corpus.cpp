// Fuzzes the corpus readers and the char/word tokenizers (nazar/data): bytes -> a scratch file
// (a TSV, or two line-aligned files; plain or, when the bytes say so, gzip) -> PairReader ->
// tokenizers -> load_corpus_building_vocabs; and utf8::find_invalid against a reference.
//
// Input layout: byte 0 = flags (bit 0 skip_bad_lines, bit 1 two files, bit 2 word tokenizer,
// bit 3 shared vocabulary, bits 4-7 max_length), the rest = the file; with two files the rest
// is split at its first NUL byte (source before, target after).
// Properties: a one-line nazar::Error or pairs that are valid UTF-8 without line endings (and,
// for a TSV, without tabs); char decode(encode(s)) == s; word decode(encode(s)) ==
// normalize_spaces(s); utf8::find_invalid agrees with an independent RFC 3629 validator.
// Seeds: fuzz/corpus/corpus/.
#include "fuzz/common.h"

#include "nazar/data/corpus.h"
#include "nazar/data/reader.h"
#include "nazar/data/tokenizer.h"
#include "nazar/data/utf8.h"
#include "nazar/data/vocab.h"

using namespace nazar;

namespace {

// Independent RFC 3629 validator (Unicode Table 3-7, well-formed byte sequences).
std::size_t reference_find_invalid(std::string_view s) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    std::size_t i = 0;
    while (i < n) {
        const unsigned c = p[i];
        int len;
        unsigned lo = 0x80, hi = 0xBF;  // range of the second byte
        if (c <= 0x7F)
            len = 1;
        else if (c >= 0xC2 && c <= 0xDF)
            len = 2;
        else if (c == 0xE0)
            len = 3, lo = 0xA0;
        else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF)
            len = 3;
        else if (c == 0xED)
            len = 3, hi = 0x9F;
        else if (c == 0xF0)
            len = 4, lo = 0x90;
        else if (c >= 0xF1 && c <= 0xF3)
            len = 4;
        else if (c == 0xF4)
            len = 4, hi = 0x8F;
        else
            return i;
        if (i + len > n) return i;
        for (int k = 1; k < len; ++k) {
            const unsigned b = p[i + k];
            if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return i;
        }
        i += len;
    }
    return utf8::npos;
}

void check_utf8(std::string_view s) {
    const std::size_t got = utf8::find_invalid(s), want = reference_find_invalid(s);
    if (got != want)
        fuzz::fail("utf8::find_invalid = " + std::to_string(got) +
                   ", reference = " + std::to_string(want));
    if (got != utf8::npos) return;
    std::size_t i = 0, count = 0;
    std::string rebuilt;
    while (i < s.size()) utf8::append(rebuilt, utf8::next(s, i)), ++count;
    if (rebuilt != s || count != utf8::length(s))
        fuzz::fail("utf8::next/append/length disagree on valid text");
}

void check_tokenizers(std::string_view text, const Tokenizer& chars, const Tokenizer& words) {
    const std::vector<std::string> c = chars.encode(text);
    if (chars.decode(c) != text) fuzz::fail("char tokenizer: decode(encode(s)) != s");
    if (c.size() != utf8::length(text)) fuzz::fail("char tokenizer: not one piece per code point");
    const std::vector<std::string> w = words.encode(text);
    for (const auto& piece : w)
        for (char ch : piece)
            if (piece.empty() || utf8::is_space(ch))
                fuzz::fail("word tokenizer: empty piece or separator in a piece");
    if (words.decode(w) != normalize_spaces(text))
        fuzz::fail("word tokenizer: decode(encode(s)) != normalize_spaces(s)");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const unsigned flags = data[0];
    const std::string_view body = fuzz::as_text(data + 1, size - 1);
    check_utf8(body);

    CorpusFiles files;
    if (flags & 2) {
        const std::size_t cut = body.find('\0');
        files.src = fuzz::scratch_path("src");
        files.tgt = fuzz::scratch_path("tgt");
        fuzz::write_bytes(files.src, body.substr(0, cut));
        fuzz::write_bytes(
            files.tgt, cut == std::string_view::npos ? std::string_view() : body.substr(cut + 1));
    } else {
        files.tsv = fuzz::scratch_path("tsv");
        fuzz::write_bytes(files.tsv, body);
    }
    const bool skip = flags & 1;
    const Tokenizer chars = Tokenizer::character(), words = Tokenizer::word();

    fuzz::expect_error_or_ok([&] {
        PairReader reader(files, skip);
        RawPair pair;
        while (reader.next(pair)) {
            for (std::string_view side : {pair.src, pair.tgt}) {
                if (!utf8::is_valid(side)) fuzz::fail("PairReader returned invalid UTF-8");
                if (side.find('\n') != std::string_view::npos)
                    fuzz::fail("PairReader returned a line ending");
                if (files.src.empty() && side.find('\t') != std::string_view::npos)
                    fuzz::fail("PairReader returned a TSV side with a tab");
                check_tokenizers(side, chars, words);
            }
        }
        if (reader.lines_read() < reader.bad_lines().total())
            fuzz::fail("more bad lines than lines read");
    });

    fuzz::expect_error_or_ok([&] {
        const Tokenizer& tok = (flags & 4) ? words : chars;
        LoadOptions options{
            .filter = {.max_length = static_cast<int>(flags >> 4), .drop_duplicates = true},
            .skip_bad_lines = skip,
            .print_summary = false};
        VocabBuild build{.src = {.max_size = 0, .min_freq = 1},
                         .tgt = {.max_size = 8, .min_freq = 2},
                         .shared = (flags & 8) != 0};
        Vocab sv, tv;
        LoadSummary summary;
        const Corpus corpus =
            load_corpus_building_vocabs(files, tok, tok, build, options, sv, tv, &summary);
        if (corpus.size() != summary.kept) fuzz::fail("corpus size != summary.kept");
        for (int64_t i = 0; i < corpus.size(); ++i) {
            for (int32_t id : corpus.src(i))
                if (id < 0 || id >= sv.size()) fuzz::fail("source id outside the vocabulary");
            for (int32_t id : corpus.tgt(i))
                if (id < 0 || id >= tv.size()) fuzz::fail("target id outside the vocabulary");
        }
    });
    return 0;
}
