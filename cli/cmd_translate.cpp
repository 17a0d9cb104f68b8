// `nazar translate --model M [--beam K] [--n-best N] [--alignment hard|soft] ...`: one sentence
// per line in (stdin or --input), translations out (stdout or --output), in input order.
// Streams in bounded memory: reads up to --chunk lines (only those already there, so a terminal
// or a pipe is answered line by line), translates them (sorted by length into batches of
// --batch), writes them (cli/output.h: every write checked), repeats.
// Output formats (docs/decoding.md):
//   plain           translation[ ||| alignment]
//   n-best/scores   i ||| translation ||| score[ ||| alignment]     (i: 0-based input line)
// alignment: hard = Pharaoh "i-j" (source token i, target token j), soft = JSON matrix.
#include "cli/command.h"
#include "cli/options.h"
#include "cli/output.h"
#include "nazar/core/check.h"
#include "nazar/core/text_limits.h"
#include "nazar/core/threads.h"
#include "nazar/data/reader.h"
#include "nazar/decode/decode_defaults.h"
#include "nazar/decode/protect.h"
#include "nazar/decode/shortlist.h"
#include "nazar/decode/stream.h"
#include "nazar/decode/translator.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace nazar::cli {
namespace {

struct TranslateArgs {
    std::string input = "-", output = "-", alignment = "none", dict, precision, constraints;
    std::vector<std::string> protect_regex;
    bool protect = false;
    std::string shortlist;
    ShortlistOptions shortlist_options;
    std::vector<std::string> models;  // several: an ensemble
    std::string ensemble_attention = "0";
    TranslationOptions opt;
    int chunk = 1024;
    int threads = -1;
    std::size_t max_line_bytes = kDefaultMaxLineBytes;
    bool scores = false, progress = false, stream = false;
    CLI::App* app = nullptr;
};

// --stream: what the streamed outputs waited for (stream.h), summed over the sentences.
struct StreamStats {
    int64_t sentences = 0, tokens = 0;
    int64_t early = 0;  // tokens emitted before their source ended
    int64_t ahead = 0;  // Σ over tokens of the source tokens not yet read when it was emitted
    double ap = 0;      // Σ of the sentences' Average Proportion

    void add(const std::vector<Translation>& res) {
        for (const Translation& t : res) {
            if (t.hypotheses.empty()) continue;
            const std::vector<int>& read = t.hypotheses.front().read;
            const int S_b = static_cast<int>(t.source_tokens.size());
            ++sentences;
            tokens += static_cast<int64_t>(read.size());
            for (const int r : read) {
                early += r < S_b ? 1 : 0;
                ahead += S_b - r;
            }
            ap += average_proportion(read, S_b);
        }
    }
    void report() const {
        const double n = tokens ? static_cast<double>(tokens) : 1.0;
        std::fprintf(stderr,
                     "stream: %lld sentences, %lld output tokens (</s> included), %.1f%% emitted "
                     "before their source ended, %.2f source tokens before its end on average, "
                     "Average Proportion %.3f (1 = waits for all)\n",
                     static_cast<long long>(sentences), static_cast<long long>(tokens),
                     100.0 * static_cast<double>(early) / n, static_cast<double>(ahead) / n,
                     sentences ? ap / static_cast<double>(sentences) : 0.0);
    }
};

// Fills the decoding settings not given as flags from the model file's (`nazar tune`); an
// n-best list longer than a stored beam widens the beam.
void apply_stored_settings(const Translator& translator, const CLI::App& app,
                           TranslationOptions& o) {
    const auto given = [&app](const char* flag) { return app.count(flag) > 0; };
    apply_decode_defaults(translator.decode_defaults(),
                          {.beam_size = given("--beam"),
                           .length_penalty = given("--length-penalty"),
                           .coverage_penalty = given("--coverage-penalty"),
                           .max_length_ratio = given("--max-length-ratio"),
                           .max_length_extra = given("--max-length-extra"),
                           .max_length = given("--max-length")},
                          o);
}

// --constraints: one JSON value per input line: {"include": [...], "exclude": [...]}, a list
// (include phrases), or an empty line / {} / [] / null (none).
TextConstraints parse_constraints_line(std::string_view line, const LineReader& file) {
    const auto fail = [&](const std::string& why) -> TextConstraints {
        throw UsageError(fmt::format("{}:{}: {}", file.path(), file.line_number(), why));
    };
    TextConstraints c;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) return c;
    nlohmann::json j;
    try {
        check_nesting(line, "constraints", TextSyntax::json);  // before the recursive parser
        j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
        return fail(fmt::format("not JSON ({})", e.what()));
    } catch (const Error& e) {  // check_nesting
        return fail(e.what());
    }
    const auto strings = [&](const nlohmann::json& v, const char* what,
                             std::vector<std::string>& out) {
        if (!v.is_array()) fail(fmt::format("'{}' must be a list of strings", what));
        for (const auto& x : v) {
            if (!x.is_string() || x.get<std::string>().empty())
                fail(fmt::format("'{}' must hold non-empty strings, got {}", what,
                                 excerpt(x.dump())));
            out.push_back(x.get<std::string>());
        }
    };
    if (j.is_null()) return c;
    if (j.is_array()) {
        strings(j, "include", c.include);
    } else if (j.is_object()) {
        for (const auto& [key, v] : j.items()) {
            if (key == "include")
                strings(v, "include", c.include);
            else if (key == "exclude")
                strings(v, "exclude", c.exclude);
            else
                fail(fmt::format("unknown field '{}' (fields: include, exclude)", excerpt(key)));
        }
    } else {
        fail(
            "expected {\"include\": [...], \"exclude\": [...]}, a list of phrases, or an "
            "empty line");
    }
    return c;
}

// What --constraints and --protect add to each input line, and what was not placed.
struct ConstraintSource {
    std::unique_ptr<LineReader> file;      // --constraints
    std::optional<SpanProtector> protect;  // --protect / --protect-regex
    int64_t sentences = 0, phrases = 0, unmet = 0;

    bool active() const { return file || protect; }
    // The constraints of `lines`, read in step with the input.
    std::vector<TextConstraints> next(const std::vector<std::string>& lines, int64_t done) {
        std::vector<TextConstraints> out(lines.size());
        for (std::size_t i = 0; i < lines.size(); ++i) {
            if (file) {
                std::string_view line;
                if (!file->next(line))
                    throw UsageError(fmt::format(
                        "constraints file '{}' ends at line {}, the input has more lines ({} at "
                        "least)",
                        file->path(), file->line_number(), done + i + 1));
                out[i] = parse_constraints_line(line, *file);
            }
            if (protect) protect->add_spans(lines[i], out[i].include);
            sentences += out[i].empty() ? 0 : 1;
            phrases += static_cast<int64_t>(out[i].include.size());
        }
        return out;
    }
    // One stderr line per sentence whose include phrases were not all placed.
    void report(const std::vector<Translation>& res, int64_t done) {
        for (std::size_t i = 0; i < res.size(); ++i) {
            if (res[i].unmet.empty()) continue;
            std::string list;
            for (const std::string& p : res[i].unmet)
                list += (list.empty() ? "'" : ", '") + excerpt(p) + "'";
            std::fprintf(stderr, "line %lld: not placed: %s\n",
                         static_cast<long long>(done + static_cast<int64_t>(i) + 1), list.c_str());
            unmet += static_cast<int64_t>(res[i].unmet.size());
        }
    }
    void finish() {
        std::string_view extra;
        if (file && file->next(extra))
            throw UsageError(
                fmt::format("constraints file '{}' has more lines than the input", file->path()));
        if (active())
            std::fprintf(stderr,
                         "constraints: %lld sentences with constraints, %lld include phrases, "
                         "%lld placed, %lld not placed\n",
                         static_cast<long long>(sentences), static_cast<long long>(phrases),
                         static_cast<long long>(phrases - unmet), static_cast<long long>(unmet));
    }
};

// --shortlist (empty without it).
Shortlist load_shortlist(const TranslateArgs& a, const Translator& translator) {
    if (a.shortlist.empty()) return {};
    if (a.models.size() > 1) throw UsageError("--shortlist is for one model, not an ensemble");
    return translator.load_shortlist(a.shortlist, a.shortlist_options);
}

// --constraints and --protect / --protect-regex.
ConstraintSource constraint_source(const TranslateArgs& a) {
    ConstraintSource c;
    if (!a.constraints.empty())
        c.file = std::make_unique<LineReader>(a.constraints, a.max_line_bytes);
    if (a.protect || !a.protect_regex.empty())
        c.protect = SpanProtector::from_patterns(a.protect_regex, a.protect);
    return c;
}

// --ensemble-attention: a member index in [0, members), or "mean".
int parse_ensemble_attention(const std::string& text, std::size_t members) {
    if (text == "mean") return TranslationOptions::kMeanAttention;
    int k = -1;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), k);
    if (text.empty() || ec != std::errc() || p != text.data() + text.size() || k < 0 ||
        static_cast<std::size_t>(k) >= members)
        throw UsageError(fmt::format(
            "--ensemble-attention: '{}' is not a member (0..{} for {} --model file{}) or 'mean'",
            excerpt(text), members - 1, members, members == 1 ? "" : "s"));
    return k;
}

// One chunk's output lines: the best translation per input, or the n-best list ('i ||| text |||
// score'), each with its alignment and p_gen when asked.
std::string format_translations(const std::vector<Translation>& res, int64_t done,
                                bool nbest_format, AlignmentFormat format) {
    std::string text;
    for (std::size_t i = 0; i < res.size(); ++i) {
        for (const TranslationHypothesis& h : res[i].hypotheses) {
            if (nbest_format)
                fmt::format_to(std::back_inserter(text), "{} ||| ", done + static_cast<int64_t>(i));
            text += h.text;
            if (nbest_format) fmt::format_to(std::back_inserter(text), " ||| {:.6f}", h.score);
            if (format == AlignmentFormat::hard)
                text += " ||| " + format_hard_alignment(h.alignment);
            if (format == AlignmentFormat::soft)
                text +=
                    " ||| " + format_soft_alignment(h.attention, static_cast<int>(h.tokens.size()));
            if (format != AlignmentFormat::none && !h.read.empty()) {
                text += " ||| read";  // --stream: source tokens read when each row was emitted
                for (const int r : h.read) fmt::format_to(std::back_inserter(text), " {}", r);
            }
            if (format != AlignmentFormat::none && !h.p_gen.empty()) {
                text += " ||| p_gen";  // copy attention: p_gen of each output token
                for (std::size_t j = 0; j < h.tokens.size(); ++j)
                    fmt::format_to(std::back_inserter(text), " {:.3f}", h.p_gen[j]);
            }
            text += '\n';
            if (!nbest_format) break;
        }
    }
    return text;
}

// One chunk of input lines; an error names the input lines, not the index within the chunk.
std::vector<Translation> translate_chunk(const Translator& translator,
                                         const std::vector<std::string>& lines,
                                         const TranslateArgs& a, int64_t done) {
    try {
        return translator.translate(lines, a.opt);
    } catch (const UsageError&) {
        throw;
    } catch (const Error& e) {
        throw Error(fmt::format("{} (input '{}', lines {}-{})", e.what(), a.input, done + 1,
                                done + lines.size()));
    }
}

int run_translate(TranslateArgs& a) {
    apply_threads_option(a.threads);
    const AlignmentFormat format = parse_alignment_format(a.alignment);
    if (!a.dict.empty() && !a.opt.replace_unk) throw UsageError("--dict needs --replace-unk");
    const UnkDictionary dict = a.dict.empty() ? UnkDictionary{} : load_unk_dictionary(a.dict);
    if (!a.dict.empty()) a.opt.dictionary = &dict;
    a.opt.alignments = format == AlignmentFormat::hard;
    a.opt.attention = format == AlignmentFormat::soft;
    const bool nbest_format = a.scores || a.opt.n_best > 1;
    // Options are checked before the model loads, so a typo fails fast.
    const auto check_n_best = [&a] {
        if (a.opt.n_best > a.opt.beam_size)
            throw UsageError(
                fmt::format("--n-best {} exceeds --beam {}", a.opt.n_best, a.opt.beam_size));
    };
    if (a.app->count("--beam") > 0) check_n_best();

    a.opt.ensemble_attention = parse_ensemble_attention(a.ensemble_attention, a.models.size());
    const Translator translator(a.models, {.precision = parse_precision_option(a.precision)});
    apply_stored_settings(translator, *a.app, a.opt);
    a.opt.stream = a.stream;
    // streaming: greedy unless --beam says otherwise, whatever the model stores
    if (a.stream && a.app->count("--beam") == 0) a.opt.beam_size = 1;
    check_n_best();
    StreamStats streamed;
    const Shortlist shortlist = load_shortlist(a, translator);
    if (!a.shortlist.empty()) a.opt.shortlist = &shortlist;
    LineReader reader(a.input, a.max_line_bytes);
    ConstraintSource constraints = constraint_source(a);
    std::vector<std::string> inputs = {a.input, a.dict, a.constraints};
    inputs.insert(inputs.end(), a.models.begin(), a.models.end());
    OutputSink out(a.output, inputs);
    const bool interactive = a.input == "-" && isatty(STDIN_FILENO);
    const bool progress = a.progress || (!interactive && isatty(STDERR_FILENO));
    const auto start = std::chrono::steady_clock::now();
    if (progress && !translator.decode_defaults().empty())
        std::fprintf(stderr, "settings stored in the model: %s\n",
                     describe(translator.decode_defaults()).c_str());

    std::vector<std::string> lines;
    std::string_view line;
    int64_t done = 0;
    bool more = true;
    while (more) {
        lines.clear();
        // Up to --chunk lines, but only those there already: a terminal or a pipe that is
        // written line by line gets each answer before the next line is read.
        while (static_cast<int>(lines.size()) < a.chunk && (lines.empty() || reader.ready()) &&
               (more = reader.next(line)))
            lines.emplace_back(line);
        if (lines.empty()) break;
        std::vector<TextConstraints> cons;
        if (constraints.active()) {
            cons = constraints.next(lines, done);
            a.opt.constraints = cons;
        }
        const std::vector<Translation> res = translate_chunk(translator, lines, a, done);
        const std::string text = format_translations(res, done, nbest_format, format);
        out.write(text);
        constraints.report(res, done);
        if (a.stream) streamed.add(res);
        done += static_cast<int64_t>(lines.size());
        if (progress) {
            const double s =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            std::fprintf(stderr, "\rtranslated %lld sentences, %.1f sentences/s",
                         static_cast<long long>(done), s > 0 ? static_cast<double>(done) / s : 0.0);
        }
    }
    if (progress && done > 0) std::fprintf(stderr, "\n");
    constraints.finish();
    if (a.stream) streamed.report();
    out.close();
    return 0;
}

// What the output may and must hold: --constraints, --protect, --protect-regex, --shortlist.
void add_control_options(CLI::App& app, TranslateArgs& args) {
    TranslateArgs* a = &args;
    app.add_option("--constraints", a->constraints,
                   "Lexical constraints, one JSON line per input line: {\"include\": [...], "
                   "\"exclude\": [...]} or a list of include phrases (empty line: none); "
                   "every include phrase appears in the output, no exclude phrase does");
    app.add_flag("--protect", a->protect,
                 "Copy placeholders (printf, {0}, %(name)s, ${var}), --options, URLs, e-mail "
                 "addresses and XML/HTML tags of each source verbatim (include constraints); "
                 "a span not placed is reported on stderr");
    app.add_option("--protect-regex", a->protect_regex,
                   "A regular expression (ECMAScript; group 1 if it has one) whose matches are "
                   "protected as --protect's; repeatable; without --protect only these")
        ->take_all()
        ->allow_extra_args(false);
    app.add_option("--shortlist", a->shortlist,
                   "Vocabulary shortlist (nazar shortlist): each batch's output layer computes "
                   "only the frequent target tokens and the likeliest translations of its source "
                   "tokens");
    app.add_option("--shortlist-frequent", a->shortlist_options.frequent,
                   "Frequent target tokens taken from the shortlist")
        ->check(CLI::Range(0, 1 << 20))
        ->capture_default_str();
    app.add_option("--shortlist-best", a->shortlist_options.best,
                   "Translations per source token taken from the shortlist")
        ->check(CLI::Range(0, 1 << 20))
        ->capture_default_str();
}

void setup_translate(CLI::App& app, std::function<int()>& run) {
    auto a = std::make_shared<TranslateArgs>();
    a->app = &app;
    auto& o = a->opt;
    app.add_option("--model", a->models,
                   "Model file (model.safetensors or a checkpoint); repeat for an ensemble (the "
                   "members' log-probabilities are averaged at each step)")
        ->required()
        ->take_all()
        ->allow_extra_args(false);
    app.add_option("--ensemble-attention", a->ensemble_attention,
                   "Ensembles: the attention (alignments, coverage penalty, --replace-unk) of "
                   "member K (0-based, in --model order) or the mean of all")
        ->capture_default_str();
    add_precision_option(app, a->precision);
    app.add_option("--input", a->input, "Sentences, one per line ('-' = stdin; gzip is detected)")
        ->capture_default_str();
    app.add_option("--output", a->output, "Where to write ('-' = stdout)")->capture_default_str();
    app.add_option("--beam", o.beam_size,
                   "Beam size K (1 = greedy); this and the penalties and length limits below "
                   "default to the model's stored settings (nazar tune) when it has them")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    app.add_option("--n-best", o.n_best, "Hypotheses per sentence (n-best format when > 1)")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    app.add_flag("--scores", a->scores,
                 "Use the n-best format 'i ||| translation ||| score' even for one hypothesis");
    app.add_option("--alignment", a->alignment,
                   "Append alignments: none, hard (Pharaoh i-j) or soft (JSON matrix)")
        ->check(CLI::IsMember({"none", "hard", "soft"}))
        ->capture_default_str();
    add_control_options(app, *a);
    app.add_flag("--stream", a->stream,
                 "Decode as if each source arrived one token at a time, emitting each output "
                 "token once the monotonic attention has read its position (greedy unless "
                 "--beam is given: then once every hypothesis begins with it; monotonic models "
                 "with a unidirectional encoder and bridge: zero); prints the latency on stderr "
                 "and, with --alignment, the tokens read per output token");
    app.add_flag("--replace-unk", o.replace_unk, "Replace <unk> by the most-attended source token");
    app.add_option("--dict", a->dict, "Dictionary 'source<TAB>target' for --replace-unk");
    app.add_option("--batch", o.batch_size,
                   "Sentences per decoder batch, at most (fewer where a long sentence would pad "
                   "the batch to more than twice its tokens)")
        ->check(CLI::Range(1, 1 << 16))
        ->capture_default_str();
    app.add_option("--chunk", a->chunk, "Most lines read (and sorted by length) at a time")
        ->check(CLI::Range(1, 1 << 24))
        ->capture_default_str();
    app.add_option("--length-penalty", o.length_penalty,
                   "GNMT length normalisation alpha (0 = none)")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    app.add_option("--coverage-penalty", o.coverage_penalty,
                   "GNMT coverage penalty beta (0 = none)")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    app.add_option("--max-length-ratio", o.max_length_ratio,
                   "Output length limit: min(--max-length, max(1, floor(ratio * source length) + "
                   "extra)), computed in 64 bits: any ratio or extra, however large, gives at "
                   "most --max-length")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    app.add_option("--max-length-extra", o.max_length_extra,
                   "Added to ratio * source length (any int; see --max-length-ratio)")
        ->capture_default_str();
    app.add_option("--max-length", o.max_length,
                   "Absolute output length limit (at most 1048576 tokens)")
        ->check(CLI::Range(1, 1 << 20))
        ->capture_default_str();
    add_max_line_bytes_option(app, a->max_line_bytes);
    app.add_flag("--progress", a->progress,
                 "Progress line on stderr (default: when stderr is a terminal)");
    add_threads_option(app, a->threads);
    run = [a] { return run_translate(*a); };
}

}  // namespace

NZ_REGISTER_COMMAND(translate, "Translate sentences (beam search), one per line, stdin to stdout",
                    setup_translate);

}  // namespace nazar::cli
