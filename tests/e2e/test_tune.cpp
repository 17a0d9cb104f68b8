// `nazar tune` and the decoding settings stored in a model file, on a random word-level model
// (nothing is trained): every grid point's score equals the score of translate() run with that
// point's settings (re-ranking is exact); the chosen point is the best; the built-in defaults'
// score is translate's with no options; settings round-trip through the file; translate and the
// Translator take them unless a flag overrides; hostile metadata is refused with the file and
// field named; the CLI's errors.
#include "nazar/core/safetensors.h"
#include "nazar/decode/decode_defaults.h"
#include "nazar/decode/search_tuning.h"
#include "nazar/decode/translator.h"
#include "nazar/models/model_file.h"
#include "tests/common/cli_run.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace nazar {
namespace test_tune {
namespace {

using test::kNazarBin;
using test::read_lines;
using test::sh;
using test::slurp;

std::string tmp(const std::string& name) {
    return test::process_tmp("tune", name);
}

const std::vector<std::string> kSrcWords = {"a", "b", "c", "d", "e", "f", "g", "h"};
const std::vector<std::string> kTgtWords = {"w", "x", "y", "z", "v", "u"};

void save_random_model(const std::string& path, uint64_t seed, const std::string& defaults = "") {
    ModelConfig c = test::tiny_config();
    c.src_vocab_size = 12;
    c.tgt_vocab_size = 10;
    Seq2Seq m(c, seed);
    // Flat output distributions with </s> at about 0.3 a step: outputs of many lengths, whose
    // ranking the penalties change.
    for (const ParamRef& p : m.parameters()) {
        if (p.name == "generator.weight")
            for (int64_t i = 0; i < p.value->numel(); ++i) p.value->data()[i] *= 0.1f;
        if (p.name == "generator.bias") p.value->at(c.special_ids.eos) += 1.1f;
    }
    std::map<std::string, std::string> meta = {
        {kSrcVocabKey, Vocab::from_pieces(kSrcWords).to_json()},
        {kTgtVocabKey, Vocab::from_pieces(kTgtWords).to_json()},
        {kSrcTokenizerKey, Tokenizer::word().to_string()},
        {kTgtTokenizerKey, Tokenizer::word().to_string()}};
    if (!defaults.empty()) meta[kDecodeDefaultsKey] = defaults;
    save_model(path, m, meta);
}

// 40 distinct random sources; references: the model's own outputs with two other settings
// (alternately), so that the settings change every metric.
struct Dev {
    std::vector<std::string> src;
    std::vector<std::vector<std::string>> refs;  // one stream
};

std::vector<std::string> best_texts(const std::vector<Translation>& res);

Dev make_dev(const std::string& model, uint64_t x) {
    Dev d;
    const auto next = [&x] {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        return x >> 33;
    };
    std::set<std::string> seen;
    while (d.src.size() < 40) {
        std::string s;
        for (int k = 0, n = 1 + static_cast<int>(next() % 8); k < n; ++k)
            s += (k ? " " : "") + kSrcWords[next() % kSrcWords.size()];
        if (seen.insert(s).second) d.src.push_back(s);
    }
    const Translator tr(model);
    const auto a = best_texts(
        tr.translate(d.src, {.beam_size = 6, .length_penalty = 2.5f, .coverage_penalty = 0.4f}));
    const auto b = best_texts(tr.translate(d.src, {.beam_size = 3, .length_penalty = 0.0f}));
    d.refs.emplace_back();
    for (std::size_t i = 0; i < d.src.size(); ++i) {
        const std::string& r = i % 2 ? a[i] : b[i];
        d.refs[0].push_back(r.empty() ? "w" : r);  // an empty reference is refused
    }
    return d;
}

std::vector<std::string> best_texts(const std::vector<Translation>& res) {
    std::vector<std::string> out;
    for (const Translation& t : res) out.push_back(t.hypotheses.at(0).text);
    return out;
}

class Tune : public testing::Test {
protected:
    static void SetUpTestSuite() {
        save_random_model(tmp("model.safetensors"), 7);
        const Dev d = make_dev(tmp("model.safetensors"), 99);
        std::ofstream f(tmp("dev.tsv")), src(tmp("dev.src")), ref(tmp("dev.ref"));
        for (std::size_t i = 0; i < d.src.size(); ++i) {
            f << d.src[i] << '\t' << d.refs[0][i] << '\n';
            src << d.src[i] << '\n';
            ref << d.refs[0][i] << '\n';
        }
    }
    static std::string model() { return tmp("model.safetensors"); }
};

TEST_F(Tune, EveryPointScoresWhatTranslateGivesWithItsSettings) {
    const Translator tr(model());
    const Dev dev = make_dev(model(), 99);
    TuningGrid grid{.beams = {1, 3, 6},
                    .length_penalties = {0.0f, 0.7f, 2.5f},
                    .coverage_penalties = {0.0f, 0.4f, 3.0f}};
    TranslationOptions base;
    base.max_length_ratio = 2.5f;
    int beams_seen = 0;
    for (const TuneMetric metric : {TuneMetric::chrf, TuneMetric::wer}) {
        const TuningResult r = tune_search(tr, dev.src, dev.refs, metric, grid, base,
                                           [&](const BeamSummary&) { ++beams_seen; });
        // beam 1: one point; beams 3 and 6: 3 x 3; beam 5 (the defaults) searched, not a point
        ASSERT_EQ(r.points.size(), 1u + 9u + 9u);
        ASSERT_EQ(r.beams.size(), 3u);
        std::set<double> distinct;
        for (const TuningPoint& p : r.points) {
            TranslationOptions o = base;
            o.beam_size = p.beam;
            o.length_penalty = p.length_penalty;
            o.coverage_penalty = p.coverage_penalty;
            const double direct =
                metric_score(metric, best_texts(tr.translate(dev.src, o)), dev.refs);
            EXPECT_EQ(direct, p.score) << to_string(metric) << " beam " << p.beam << " lp "
                                       << p.length_penalty << " cp " << p.coverage_penalty;
            distinct.insert(p.score);
            // the chosen point is at least as good as every point
            if (higher_is_better(metric))
                EXPECT_GE(r.best.score, p.score);
            else
                EXPECT_LE(r.best.score, p.score);
        }
        EXPECT_GT(distinct.size(), 2u) << "the settings should matter on this model";
        TranslationOptions o = base;  // translate's defaults: beam 5, lp 0.6, cp 0
        EXPECT_EQ(r.defaults.beam, 5);
        EXPECT_EQ(r.defaults.score,
                  metric_score(metric, best_texts(tr.translate(dev.src, o)), dev.refs));
    }
    EXPECT_EQ(beams_seen, 6);
}

TEST_F(Tune, DefaultsRoundTripAndApply) {
    DecodeDefaults d{.beam_size = 7,
                     .length_penalty = 1.2f,
                     .coverage_penalty = 0.2f,
                     .max_length_ratio = 3.0f,
                     .max_length_extra = -2,
                     .max_length = 64,
                     .tuned = TuningRecord{.metric = "exact",
                                           .score = 70.5,
                                           .default_score = 69.25,
                                           .dev = "dev.tsv",
                                           .sources = 40}};
    const std::string json = to_json(d);
    EXPECT_NE(json.find("\"length_penalty\":1.2,"), std::string::npos) << json;
    const DecodeDefaults back = decode_defaults_from_json(json, "m");
    EXPECT_TRUE(same_settings(back, d));
    EXPECT_EQ(back.tuned->metric, "exact");
    EXPECT_EQ(back.tuned->score, 70.5);
    EXPECT_EQ(back.tuned->sources, 40);

    TranslationOptions o;
    o.n_best = 9;  // longer than the stored beam: the beam widens
    apply_decode_defaults(d, {.length_penalty = true}, o);
    EXPECT_EQ(o.beam_size, 9);
    EXPECT_EQ(o.length_penalty, 0.6f);  // given explicitly: kept
    EXPECT_EQ(o.coverage_penalty, 0.2f);
    EXPECT_EQ(o.max_length_ratio, 3.0f);
    EXPECT_EQ(o.max_length_extra, -2);
    EXPECT_EQ(o.max_length, 64);
    TranslationOptions given;
    apply_decode_defaults(d, {true, true, true, true, true, true}, given);
    EXPECT_EQ(given.beam_size, TranslationOptions{}.beam_size);
    EXPECT_EQ(given.max_length, TranslationOptions{}.max_length);
    EXPECT_TRUE(decode_defaults_from_json("{}", "m").empty());
}

TEST_F(Tune, HostileSettingsAreRefusedNamingFileAndField) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"[1]", "must be a JSON object"},
        {"{\"beam\": 0}", "'beam' must be in [1, 1024]"},
        {"{\"beam\": 1e9}", "'beam' must be an integer"},
        {"{\"beam\": 18446744073709551615}", "'beam' must be in"},
        {"{\"length_penalty\": -1}", "'length_penalty' must be in"},
        {"{\"coverage_penalty\": \"0.2\"}", "'coverage_penalty' must be a number"},
        {"{\"max_length\": 2000000}", "'max_length' must be in"},
        {"{\"max_length_ratio\": null}", "'max_length_ratio' must be a number"},
        {"{\"beams\": 5}", "unknown field 'beams'"},
        {"{\"tuned\": {\"metric\": 5}}", "'tuned.metric' must be a string"},
        {"{\"tuned\": {\"when\": 5}}", "unknown field 'tuned.when'"},
        {"{\"beam\": 5", "not JSON"},
        {std::string(100000, '['), "nesting deeper than 32 levels"},
    };
    for (const auto& [text, why] : cases) {
        try {
            decode_defaults_from_json(text, "bad.safetensors");
            ADD_FAILURE() << "accepted " << text;
        } catch (const Error& e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find("'bad.safetensors': metadata 'nazar.decode_defaults'"),
                      std::string::npos)
                << msg;
            EXPECT_NE(msg.find(why), std::string::npos) << text << " -> " << msg;
        }
    }
    // A model file carrying such settings does not load for translation.
    save_random_model(tmp("hostile.safetensors"), 7, "{\"beam\": -3}");
    EXPECT_THROW(Translator(tmp("hostile.safetensors")), Error);
    EXPECT_EQ(sh(kNazarBin + " translate --model " + tmp("hostile.safetensors") +
                 " < /dev/null 2> " + tmp("hostile.err")),
              1);
    EXPECT_NE(slurp(tmp("hostile.err")).find("'beam' must be in [1, 1024], got -3"),
              std::string::npos)
        << slurp(tmp("hostile.err"));
}

TEST_F(Tune, EnsembleKeepsOnlySharedSettings) {
    save_random_model(tmp("e1.safetensors"), 1, "{\"beam\": 3, \"length_penalty\": 1.0}");
    save_random_model(tmp("e2.safetensors"), 2, "{\"beam\": 3, \"length_penalty\": 1.0}");
    save_random_model(tmp("e3.safetensors"), 3, "{\"beam\": 4}");
    EXPECT_EQ(Translator(std::vector<std::string>{tmp("e1.safetensors"), tmp("e2.safetensors")})
                  .decode_defaults()
                  .beam_size,
              3);
    EXPECT_TRUE(Translator(std::vector<std::string>{tmp("e1.safetensors"), tmp("e3.safetensors")})
                    .decode_defaults()
                    .empty());
    EXPECT_TRUE(Translator(std::vector<std::string>{tmp("e1.safetensors"), model()})
                    .decode_defaults()
                    .empty());
}

TEST_F(Tune, CliStoresTheChoiceAndTranslateUsesIt) {
    const std::string copy = tmp("tuned.safetensors");
    const std::string before = slurp(model());
    ASSERT_EQ(sh(kNazarBin + " --threads 1 tune --model " + model() + " --dev " + tmp("dev.tsv") +
                 " --metric chrf --beams 1,3,6 --length-penalties 0,0.7,2.5 "
                 "--coverage-penalties 0,0.4 --max-length-ratio 2.5 --grid " +
                 tmp("grid.tsv") + " -o " + copy + " > " + tmp("tune.out")),
              0);
    EXPECT_EQ(slurp(model()), before) << "-o leaves the model file as it was";
    const std::string report = slurp(tmp("tune.out"));
    EXPECT_NE(report.find("dev: 40 sources, 40 references; chrf"), std::string::npos) << report;
    EXPECT_NE(report.find("chosen: beam "), std::string::npos) << report;
    EXPECT_EQ(read_lines(tmp("grid.tsv")).size(), 1u + 1u + 6u + 6u);

    const Translator tuned(copy);
    const DecodeDefaults& d = tuned.decode_defaults();
    ASSERT_TRUE(d.beam_size && d.max_length_ratio && d.tuned);
    EXPECT_EQ(*d.max_length_ratio, 2.5f);
    EXPECT_EQ(d.tuned->metric, "chrf");
    EXPECT_EQ(d.tuned->sources, 40);
    // translate with no flags == translate with the chosen settings as flags, and its chrF is
    // the one tune reported
    const std::string flags =
        fmt::format("--beam {} --max-length-ratio 2.5", *d.beam_size) +
        (d.length_penalty ? fmt::format(" --length-penalty {} --coverage-penalty {}",
                                        *d.length_penalty, *d.coverage_penalty)
                          : "");
    const std::string src = tmp("dev.src"), ref = tmp("dev.ref");
    ASSERT_EQ(sh(kNazarBin + " translate --model " + copy + " < " + src + " > " + tmp("a.txt")), 0);
    ASSERT_EQ(sh(kNazarBin + " translate --model " + model() + " " + flags + " < " + src + " > " +
                 tmp("b.txt")),
              0);
    EXPECT_EQ(read_lines(tmp("a.txt")), read_lines(tmp("b.txt")));
    ASSERT_EQ(sh(kNazarBin + " eval --metric chrf -b --ref " + ref + " --hyp " + tmp("a.txt") +
                 " > " + tmp("chrf.txt")),
              0);
    EXPECT_NEAR(std::stod(slurp(tmp("chrf.txt"))), d.tuned->score, 0.005);
    // a flag still wins: --beam 1 is greedy whatever the file says
    ASSERT_EQ(
        sh(kNazarBin + " translate --model " + copy + " --beam 1 < " + src + " > " + tmp("c.txt")),
        0);
    ASSERT_EQ(sh(kNazarBin + " translate --model " + model() +
                 " --beam 1 --max-length-ratio 2.5 < " + src + " > " + tmp("d.txt")),
              0);
    EXPECT_EQ(read_lines(tmp("c.txt")), read_lines(tmp("d.txt")));
    // --n-best beyond the stored beam widens it instead of failing
    EXPECT_EQ(
        sh(kNazarBin + " translate --model " + copy + " --n-best 7 < " + src + " > /dev/null"), 0);
    // --write replaces the file in place (same bytes as -o gave)
    ASSERT_EQ(sh("cp " + model() + " " + tmp("inplace.safetensors")), 0);
    ASSERT_EQ(sh(kNazarBin + " --threads 1 tune --model " + tmp("inplace.safetensors") + " --dev " +
                 tmp("dev.tsv") +
                 " --metric chrf --beams 1,3,6 --length-penalties 0,0.7,2.5 "
                 "--coverage-penalties 0,0.4 --max-length-ratio 2.5 --write > /dev/null"),
              0);
    const DecodeDefaults in_place = Translator(tmp("inplace.safetensors")).decode_defaults();
    EXPECT_TRUE(same_settings(in_place, d));
}

TEST_F(Tune, CliErrors) {
    const std::string m = model(), dev = tmp("dev.tsv");
    const auto rc = [&](const std::string& args, const std::string& expect) {
        const int code = sh(kNazarBin + " tune " + args + " > /dev/null 2> " + tmp("err.txt"));
        const std::string err = slurp(tmp("err.txt"));
        EXPECT_NE(err.find(expect), std::string::npos) << args << " -> " << err;
        return code;
    };
    EXPECT_EQ(rc("--model " + m, "--dev FILE"), 2);
    EXPECT_EQ(rc("--model " + m + " --src " + dev, "--src needs at least one --ref"), 2);
    EXPECT_EQ(rc("--model " + m + " --model " + m + " --dev " + dev + " --write",
                 "an ensemble's settings"),
              2);
    EXPECT_EQ(rc("--model " + m + " --dev " + dev + " --beams 0", "beam 0 is outside"), 2);
    EXPECT_EQ(
        rc("--model " + m + " --dev " + dev + " --length-penalties 1,-1", "penalty -1 is not"), 2);
    EXPECT_EQ(rc("--model " + m + " --dev " + dev + " --metric meteor", "meteor"), 2);
    {
        std::ofstream f(tmp("bad.tsv"));
        f << "a b\tw\nc d no tab here\n";
    }
    EXPECT_EQ(rc("--model " + m + " --dev " + tmp("bad.tsv"),
                 "'" + tmp("bad.tsv") + "', line 2: expected 'source<TAB>target'"),
              2);
    {
        std::ofstream f(tmp("short.ref"));
        f << "w\n";
    }
    EXPECT_EQ(rc("--model " + m + " --src " + tmp("dev.src") + " --ref " + tmp("short.ref"),
                 "has 1 lines"),
              2);
}

}  // namespace
}  // namespace test_tune
}  // namespace nazar
