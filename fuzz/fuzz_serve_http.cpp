// Fuzzes the server's HTTP/1.1 head parser (nazar/serve/http.h): the bytes a client sends
// before its body.
//
// Properties: find_head_end finds the same end whether the bytes come at once or in two reads;
// any head gives a request or a refusal with one of the documented statuses and a one-line
// printable message (client bytes escaped), never a crash; an accepted request has a method
// token, a target starting with '/' (or OPTIONS *), a path that is the target's prefix, and a
// Content-Length within the body limit.
// Seeds: fuzz/corpus/serve_http/ (valid heads, and refused ones of every status).
#include "fuzz/common.h"

#include "nazar/serve/http.h"

#include <set>
#include <string>

using namespace nazar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const std::size_t end = serve::find_head_end(bytes);
    if (size > 1) {  // the same end when the search resumes after a first read
        const std::size_t split = size / 2;
        std::size_t first = serve::find_head_end(bytes.substr(0, split));
        if (first == std::string_view::npos) first = serve::find_head_end(bytes, split);
        if (first != end) fuzz::fail("find_head_end differs across two reads");
    }
    const std::string_view head = end == std::string_view::npos ? bytes : bytes.substr(0, end);
    serve::HttpRequest r;
    constexpr std::size_t kMaxBody = 1 << 20;
    if (const auto e = serve::parse_request_head(head, kMaxBody, r)) {
        static const std::set<int> statuses = {400, 411, 413, 417, 501, 505};
        if (!statuses.count(e->status))
            fuzz::fail("unexpected status " + std::to_string(e->status));
        fuzz::check_message(e->message.c_str());
        for (const char c : e->message)
            if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f)
                fuzz::fail("a control byte in the message");
        return 0;
    }
    if (r.method.empty() || r.target.empty()) fuzz::fail("accepted without method or target");
    if (r.target.front() != '/' && !(r.target == "*" && r.method == "OPTIONS"))
        fuzz::fail("accepted target '" + r.target + "'");
    if (r.target.compare(0, r.path.size(), r.path) != 0) fuzz::fail("path is not a prefix");
    if (r.content_length < 0 || static_cast<std::size_t>(r.content_length) > kMaxBody)
        fuzz::fail("Content-Length outside the limit");
    serve::HttpResponse res{.status = 200, .body = r.path};
    (void)serve::serialize(res, r.keep_alive, r.method == "HEAD");
    return 0;
}
