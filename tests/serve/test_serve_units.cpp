// The server's parts without HTTP (nazar/serve/): the request parser (limits, types, round trip),
// the Prometheus histogram, and the batcher on a random model saved by the test: jobs batched
// together get the same translations as alone, the request budget splits batches, a full queue
// refuses, an abandoned job leaves the queue, a failing job fails alone, several decoder threads
// over one model's sessions give what one gives.
#include "nazar/data/tokenizer.h"
#include "nazar/data/vocab.h"
#include "nazar/models/model_file.h"
#include "nazar/serve/batcher.h"
#include "nazar/serve/metrics.h"
#include "nazar/serve/request.h"
#include "tests/common/tiny_models.h"

#include <gtest/gtest.h>

#include <unistd.h>

namespace nazar::serve {
namespace test_serve_units {
namespace {

int status_of(std::string_view body, const RequestLimits& limits = {}) {
    try {
        parse_translate_request(body, limits);
        return 200;
    } catch (const HttpError& e) {
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
        return e.status();
    }
}

std::string message_of(std::string_view body, const RequestLimits& limits = {}) {
    try {
        parse_translate_request(body, limits);
    } catch (const HttpError& e) {
        return e.what();
    }
    return "";
}

TEST(ServeRequest, ParsesEveryFieldAndRoundTrips) {
    const TranslateRequest r = parse_translate_request(
        R"({"text": ["a b", "c"], "model": "m", "beam": 4, "n_best": 2, "attention": true,
            "alignment": "soft", "length_penalty": 1.5, "coverage_penalty": 0.25,
            "replace_unk": true})",
        {});
    EXPECT_EQ(r.text, (std::vector<std::string>{"a b", "c"}));
    EXPECT_EQ(r.model, "m");
    EXPECT_EQ(r.beam, 4);
    EXPECT_EQ(r.n_best, 2);
    EXPECT_TRUE(r.attention);
    EXPECT_EQ(r.alignment, AlignmentFormat::soft);
    EXPECT_FLOAT_EQ(r.length_penalty, 1.5f);
    EXPECT_FLOAT_EQ(r.coverage_penalty, 0.25f);
    EXPECT_TRUE(r.replace_unk);
    const TranslateRequest back = parse_translate_request(to_json(r), {});
    EXPECT_EQ(to_json(back), to_json(r));
    EXPECT_EQ(back.batch_key(), r.batch_key());
    // Defaults; a single string; null alignment.
    const TranslateRequest d = parse_translate_request(R"({"text": "x", "alignment": null})", {});
    EXPECT_EQ(d.text, std::vector<std::string>{"x"});
    EXPECT_EQ(d.beam, 5);
    EXPECT_EQ(d.alignment, AlignmentFormat::none);
    // The default model round-trips as null ("model": "" is refused on input).
    EXPECT_EQ(parse_translate_request(to_json(d), {}).model, "");
    // Which of beam and the penalties the body gave survives the round trip: an n_best above
    // the default beam waits for the model's stored beam (a fuzzer's finding).
    const TranslateRequest g = parse_translate_request(R"({"text": ["a"], "n_best": 6})", {});
    EXPECT_FALSE(g.given.beam_size);
    const TranslateRequest g2 = parse_translate_request(to_json(g), {});
    EXPECT_FALSE(g2.given.beam_size || g2.given.length_penalty || g2.given.coverage_penalty);
    EXPECT_EQ(to_json(g2), to_json(g));
    EXPECT_EQ(g2.batch_key(), g.batch_key());
    const TranslateRequest b = parse_translate_request(to_json(r), {});
    EXPECT_TRUE(b.given.beam_size && b.given.length_penalty && b.given.coverage_penalty);
    // Options that change decoding change the key, and so does keeping the attention matrices
    // (memory); which form of them the answer shows does not.
    TranslateRequest e = d, f = d;
    e.attention = true;
    f.alignment = AlignmentFormat::hard;
    EXPECT_NE(e.batch_key(), d.batch_key());
    EXPECT_EQ(e.batch_key(), f.batch_key());
    e.beam = 4;
    EXPECT_NE(e.batch_key(), d.batch_key());
}

TEST(ServeRequest, RefusesWithStatusAndReason) {
    RequestLimits lim;
    lim.max_sentences = 2;
    lim.max_beam = 6;
    lim.max_body_bytes = 100;
    EXPECT_EQ(status_of("{", lim), 400);
    EXPECT_EQ(status_of("\"text\"", lim), 400);
    EXPECT_EQ(status_of(R"({"text": ["a", "b", "c"]})", lim), 400);
    EXPECT_EQ(message_of(R"({"text": ["a", "b", "c"]})", lim),
              "3 sentences exceed the limit of 2 per request (--max-sentences)");
    EXPECT_EQ(status_of(R"({"text": ["a"], "beam": 7})", lim), 400);
    EXPECT_EQ(status_of(R"({"text": ["a"], "beam": -1})", lim), 400);
    EXPECT_EQ(status_of(R"({"text": ["a"], "beam": 1e3})", lim), 400);
    EXPECT_EQ(status_of(R"({"text": ["a"], "beam": 18446744073709551615})", lim), 400);
    EXPECT_EQ(status_of(R"({"text": ["a"], "length_penalty": -1})", lim), 400);
    EXPECT_EQ(status_of(R"({"text": ["a"], "attention": 1})", lim), 400);
    EXPECT_EQ(status_of(R"({"text": ["a"], "model": 3})", lim), 400);
    EXPECT_EQ(status_of(R"({"text": ["a"], "x": 3})", lim), 400);
    EXPECT_EQ(status_of(R"({"text": []})", lim), 400);
    EXPECT_EQ(status_of("{\"text\": [\"\xc3\x28\"]}", lim), 400);
    EXPECT_EQ(message_of("{\"text\": [\"\xc3\x28\"]}", lim),
              "request body: invalid UTF-8 at byte 12 (0xc3)");
    EXPECT_EQ(status_of(R"({"text": ["\ud800"]})", lim), 400);  // lone surrogate escape
    EXPECT_EQ(status_of(std::string(40, '['), lim), 400);
    // A number too large for a double (found by fuzz_serve_request), with a bounded message.
    RequestLimits wide;
    EXPECT_EQ(status_of(R"({"text": ["a"], "beam": 1e999})", wide), 400);
    const std::string huge = "{\"beam\": 9e" + std::string(5000, '9') + "}";
    EXPECT_EQ(status_of(huge, wide), 400);
    EXPECT_LT(message_of(huge, wide).size(), 400u);
    EXPECT_EQ(status_of(std::string(101, ' '), lim), 413);
    EXPECT_EQ(message_of(R"({"text": ["a"], "beam": 2, "n_best": 3})", lim),
              "n_best 3 exceeds beam 2");
    // Brackets inside strings are text, not nesting.
    EXPECT_EQ(status_of(R"({"text": ["[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["]})"), 200);
}

TEST(ServeRequest, ModelSettingsFillOnlyWhatTheBodyLeftOut) {
    const DecodeDefaults stored = decode_defaults_from_json(
        R"({"beam": 3, "length_penalty": 1.4, "coverage_penalty": 0.2, "max_length_ratio": 3,
            "max_length_extra": 2, "max_length": 90})",
        "m");
    TranslateRequest r = parse_translate_request(R"({"text": "x", "length_penalty": 0})", {});
    r.apply_model_settings(stored);
    EXPECT_EQ(r.beam, 3);
    EXPECT_EQ(r.length_penalty, 0.0f);  // the body's
    EXPECT_EQ(r.coverage_penalty, 0.2f);
    const TranslationOptions o = r.options();
    EXPECT_EQ(o.max_length_ratio, 3.0f);
    EXPECT_EQ(o.max_length_extra, 2);
    EXPECT_EQ(o.max_length, 90);
    // the same request with the values spelled out batches with it
    TranslateRequest spelled = parse_translate_request(
        R"({"text": "y", "beam": 3, "length_penalty": 0, "coverage_penalty": 0.2})", {});
    spelled.apply_model_settings(stored);
    EXPECT_EQ(spelled.batch_key(), r.batch_key());
    // n_best beyond the stored beam widens it; beyond a given beam it is refused
    TranslateRequest wide = parse_translate_request(R"({"text": "x", "n_best": 4})", {});
    wide.apply_model_settings(stored);
    EXPECT_EQ(wide.beam, 4);
    TranslateRequest plain = parse_translate_request(R"({"text": "x", "n_best": 6})", {});
    try {
        plain.apply_model_settings({});
        ADD_FAILURE() << "n_best 6 over the default beam 5 was accepted";
    } catch (const HttpError& e) {
        EXPECT_EQ(e.status(), 400);
        EXPECT_STREQ(e.what(), "n_best 6 exceeds beam 5");
    }
}

TEST(ServeMetrics, HistogramIsCumulative) {
    Histogram h({1, 2, 4});
    for (const double x : {0.5, 1.0, 3.0, 9.0}) h.observe(x);
    std::string out;
    h.render(out, "x", "help");
    EXPECT_NE(out.find("x_bucket{le=\"1\"} 2\n"), std::string::npos) << out;
    EXPECT_NE(out.find("x_bucket{le=\"2\"} 2\n"), std::string::npos) << out;
    EXPECT_NE(out.find("x_bucket{le=\"4\"} 3\n"), std::string::npos) << out;
    EXPECT_NE(out.find("x_bucket{le=\"+Inf\"} 4\nx_sum 13.5\nx_count 4\n"), std::string::npos)
        << out;
}

TEST(ServeMetrics, CountsByRouteAndStatus) {
    Metrics m({"/a"});
    m.count_request("/a", 200);
    m.count_request("/zzz", 404);
    m.count_batch(3, 5, 10, 20, 0.5);
    const std::string text = m.render({.queue_depth = 2, .queue_capacity = 8, .in_flight = 3});
    EXPECT_NE(text.find("nazar_http_requests_total{path=\"/a\",status=\"200\"} 1\n"),
              std::string::npos);
    EXPECT_NE(text.find("nazar_http_requests_total{path=\"other\",status=\"404\"} 1\n"),
              std::string::npos);
    EXPECT_NE(text.find("nazar_http_errors_total{status=\"404\"} 1\n"), std::string::npos);
    EXPECT_NE(text.find("nazar_queue_depth 2\n"), std::string::npos);
    EXPECT_NE(text.find("nazar_tokens_per_second 40\n"), std::string::npos) << text;
    EXPECT_EQ(m.batches_larger_than_one(), 1);
}

class ServeBatcher : public testing::Test {
protected:
    static void SetUpTestSuite() {
        path_ = testing::TempDir() + "/nazar_serve_units_" + std::to_string(::getpid()) +
                ".safetensors";
        ModelConfig c = test::tiny_config();
        c.src_vocab_size = 9;
        c.tgt_vocab_size = 9;
        Seq2Seq m(c, 11);
        const std::vector<std::string> words = {"a", "b", "c", "d", "e"};
        save_model(path_, m,
                   {{kSrcVocabKey, Vocab::from_pieces(words).to_json()},
                    {kTgtVocabKey, Vocab::from_pieces(words).to_json()},
                    {kSrcTokenizerKey, Tokenizer::word().to_string()},
                    {kTgtTokenizerKey, Tokenizer::word().to_string()}});
        tr_ = new Translator(path_);
    }
    static void TearDownTestSuite() {
        delete tr_;
        std::remove(path_.c_str());
    }
    static std::shared_ptr<Job> job(std::vector<std::string> text, int beam = 3) {
        auto j = std::make_shared<Job>();
        j->translator = tr_;
        j->request.text = std::move(text);
        j->request.beam = beam;
        j->request.n_best = 2;
        j->tokens = 2;
        return j;
    }
    static inline std::string path_;
    static inline Translator* tr_ = nullptr;
};

const auto kLong = std::chrono::steady_clock::now() + std::chrono::hours(1);

TEST_F(ServeBatcher, BatchedEqualsAlone) {
    const std::vector<std::vector<std::string>> inputs = {
        {"a b c"}, {"d", "e e e a"}, {"b a"}, {"c d e a b"}, {"a"}};
    Metrics metrics({});
    BatcherConfig cfg;
    cfg.window = std::chrono::hours(1);  // only the request budget closes a batch
    cfg.max_requests = static_cast<int>(inputs.size());
    Batcher b(cfg, metrics);
    std::vector<std::shared_ptr<Job>> jobs;
    for (const auto& in : inputs) {
        jobs.push_back(job(in));
        ASSERT_TRUE(b.submit(jobs.back()));
    }
    for (const auto& j : jobs) ASSERT_TRUE(b.wait(j, kLong));
    EXPECT_EQ(metrics.batches_larger_than_one(), 1);
    for (std::size_t k = 0; k < inputs.size(); ++k) {
        EXPECT_EQ(jobs[k]->status, 200);
        EXPECT_EQ(jobs[k]->batch.requests, static_cast<int>(inputs.size()));
        const auto alone = tr_->translate(inputs[k], jobs[k]->request.options());
        ASSERT_EQ(jobs[k]->translations.size(), alone.size());
        for (std::size_t i = 0; i < alone.size(); ++i) {
            ASSERT_EQ(jobs[k]->translations[i].hypotheses.size(), alone[i].hypotheses.size());
            for (std::size_t h = 0; h < alone[i].hypotheses.size(); ++h) {
                EXPECT_EQ(jobs[k]->translations[i].hypotheses[h].tokens,
                          alone[i].hypotheses[h].tokens);
                EXPECT_NEAR(jobs[k]->translations[i].hypotheses[h].score,
                            alone[i].hypotheses[h].score, 1e-4);
            }
        }
    }
}

TEST_F(ServeBatcher, QueueBoundAbandonAndKinds) {
    Metrics metrics({});
    BatcherConfig cfg;
    cfg.window = std::chrono::hours(1);
    cfg.capacity = 3;
    cfg.max_requests = 100;
    auto b = std::make_unique<Batcher>(cfg, metrics);
    auto j1 = job({"a"}), j2 = job({"b"}, 2), j3 = job({"c"}), j4 = job({"d"});
    ASSERT_TRUE(b->submit(j1));
    ASSERT_TRUE(b->submit(j2));
    ASSERT_TRUE(b->submit(j3));
    EXPECT_FALSE(b->submit(j4));  // full
    EXPECT_EQ(b->queue_depth(), 3);
    // j3 gives up: it leaves the queue, which has room again.
    EXPECT_FALSE(b->wait(j3, std::chrono::steady_clock::now()));
    EXPECT_EQ(b->queue_depth(), 2);
    EXPECT_TRUE(b->submit(j4));
    b->stop();  // drains: j1 and j4 (beam 3) together, j2 (beam 2) alone
    EXPECT_TRUE(j1->done && j2->done && j4->done);
    EXPECT_FALSE(j3->done);
    EXPECT_EQ(j1->batch.requests, 2);
    EXPECT_EQ(j4->batch.requests, 2);
    EXPECT_EQ(j2->batch.requests, 1);
    EXPECT_FALSE(b->submit(job({"e"})));  // stopped
}

// --decoders: batches decoded side by side through one Translator's replicas (sessions over one
// copy of the weights) give every job what a lone decode gives.
TEST_F(ServeBatcher, SeveralDecodersGiveWhatOneGives) {
    Translator shared(path_, {.replicas = 3});
    Metrics metrics({});
    BatcherConfig cfg;
    cfg.window = std::chrono::microseconds(0);
    cfg.max_requests = 1;  // a batch per job: the three threads decode at once
    cfg.decoders = 3;
    Batcher b(cfg, metrics);
    const std::vector<std::string> words = {"a b c", "d e", "b a d d", "c", "e e a b", "a d"};
    std::vector<std::shared_ptr<Job>> jobs;
    for (int round = 0; round < 4; ++round)
        for (std::size_t k = 0; k < words.size(); ++k) {
            jobs.push_back(job({words[k], words[(k + 1) % words.size()]}, 2 + (k % 3)));
            jobs.back()->translator = &shared;
            ASSERT_TRUE(b.submit(jobs.back()));
        }
    for (const auto& j : jobs) {
        ASSERT_TRUE(b.wait(j, kLong));
        ASSERT_EQ(j->status, 200) << j->error;
        const auto alone = tr_->translate(j->request.text, j->request.options());
        ASSERT_EQ(j->translations.size(), alone.size());
        for (std::size_t i = 0; i < alone.size(); ++i) {
            ASSERT_EQ(j->translations[i].hypotheses.size(), alone[i].hypotheses.size());
            for (std::size_t h = 0; h < alone[i].hypotheses.size(); ++h) {
                EXPECT_EQ(j->translations[i].hypotheses[h].tokens, alone[i].hypotheses[h].tokens);
                EXPECT_EQ(j->translations[i].hypotheses[h].score, alone[i].hypotheses[h].score);
            }
        }
    }
    EXPECT_EQ(shared.replicas(), 3);
    BatcherConfig none = cfg;
    none.decoders = 0;
    EXPECT_THROW(Batcher(none, metrics), UsageError);
}

TEST_F(ServeBatcher, AFailingJobFailsAlone) {
    Metrics metrics({});
    BatcherConfig cfg;
    cfg.window = std::chrono::hours(1);
    cfg.max_requests = 2;
    Batcher b(cfg, metrics);
    auto good = job({"a b"}), bad = job({"a \xff"});  // invalid UTF-8 reaches the Translator
    ASSERT_TRUE(b.submit(good));
    ASSERT_TRUE(b.submit(bad));
    ASSERT_TRUE(b.wait(good, kLong));
    ASSERT_TRUE(b.wait(bad, kLong));
    EXPECT_EQ(good->status, 200);
    EXPECT_EQ(good->translations.size(), 1u);
    EXPECT_EQ(bad->status, 400);
    EXPECT_NE(bad->error.find("invalid UTF-8"), std::string::npos) << bad->error;
}

}  // namespace
}  // namespace test_serve_units
}  // namespace nazar::serve
