// Fuzzes the server's request parser (nazar/serve/request.h): a POST /v1/translate body.
//
// Properties: any bytes give a TranslateRequest or an HttpError with status 400 or 413 and a
// one-line message, never a crash, another exception or a deep recursion; an accepted request
// respects the limits, survives its JSON round trip unchanged, and its response body (built from
// made-up translations of its sentences) is valid JSON.
// Seeds: fuzz/corpus/serve_request/ (valid requests of every field, and refused ones).
#include "fuzz/common.h"

#include "nazar/serve/request.h"

#include <nlohmann/json.hpp>

using namespace nazar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::string_view body = fuzz::as_text(data, size);
    serve::RequestLimits limits;
    limits.max_body_bytes = 1 << 16;
    limits.max_sentences = 16;
    serve::TranslateRequest r;
    try {
        r = serve::parse_translate_request(body, limits);
    } catch (const serve::HttpError& e) {
        fuzz::check_message(e.what());
        if (e.status() != 400 && e.status() != 413)
            fuzz::fail("unexpected status " + std::to_string(e.status()));
        return 0;
    }
    // n_best may exceed a beam the body did not give: the model's stored beam is checked
    // against it later (TranslateRequest::apply_model_settings)
    if (r.text.empty() || static_cast<int>(r.text.size()) > limits.max_sentences || r.beam < 1 ||
        r.beam > limits.max_beam || r.n_best < 1 || (r.given.beam_size && r.n_best > r.beam))
        fuzz::fail("an accepted request breaks a limit: " + serve::to_json(r));
    const std::string json = serve::to_json(r);
    const serve::TranslateRequest back = serve::parse_translate_request(json, limits);
    if (serve::to_json(back) != json || back.batch_key() != r.batch_key())
        fuzz::fail("request changed in a JSON round trip: " + json);

    // A response with one hypothesis per sentence: its source words, with a made-up attention.
    std::vector<Translation> ts(r.text.size());
    for (std::size_t i = 0; i < r.text.size(); ++i) {
        ts[i].source_tokens = {r.text[i]};
        TranslationHypothesis h;
        h.text = r.text[i];
        h.tokens = {r.text[i]};
        h.attention = Tensor({2, 1});
        h.attention.fill(1.0f);
        ts[i].hypotheses.push_back(std::move(h));
    }
    const std::string out = serve::translation_response(r, "m", ts, {});
    if (!nlohmann::json::accept(out)) fuzz::fail("response is not valid JSON");
    return 0;
}
