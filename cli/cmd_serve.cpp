// `nazar serve --model M [--model NAME=M2 ...] [--host 127.0.0.1] [--port 8080]`: the HTTP
// translation server with the attention explorer (nazar/serve/, docs/serve.md).
// Prints "nazar serve: listening on http://HOST:PORT/ ..." on stdout once it accepts
// connections (--port 0 picks a free port: the line says which). SIGTERM or SIGINT: drain —
// /health answers 503 "draining", new translations 503, the requests in flight are answered —
// then stop accepting and exit 0.
#include "cli/command.h"
#include "cli/options.h"
#include "nazar/core/check.h"
#include "nazar/core/threads.h"
#include "nazar/decode/translator.h"
#include "nazar/serve/server.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace nazar::cli {
namespace {

struct ServeArgs {
    std::vector<std::string> models;
    serve::ServerConfig cfg;
    double window_ms = 5;
    int64_t timeout_ms = 30000;
    int64_t header_timeout_ms = 10000, body_timeout_ms = 30000, idle_timeout_ms = 5000,
            write_timeout_ms = 10000;
    std::string api_key_file;
    int threads = -1;
};

// One key per line (blank lines and surrounding spaces ignored); at least one.
std::vector<std::string> read_api_keys(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw UsageError(fmt::format("--api-key-file: cannot read '{}'", path));
    std::vector<std::string> keys;
    std::string line;
    while (std::getline(in, line)) {
        const auto b = line.find_first_not_of(" \t\r");
        if (b == std::string::npos) continue;
        const auto e = line.find_last_not_of(" \t\r");
        keys.push_back(line.substr(b, e - b + 1));
    }
    if (keys.empty()) throw UsageError(fmt::format("--api-key-file '{}' holds no key", path));
    return keys;
}

// Each connection is a descriptor: take the hard limit, so --max-connections is what binds.
void raise_descriptor_limit() {
    rlimit r{};
    if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &r);
    }
}

bool is_model_name(std::string_view s) {
    if (s.empty() || s.size() > 64) return false;
    for (const char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
            return false;
    return true;
}

// "NAME=PATH" or "PATH" (named after the file's stem). A PATH that exists is taken whole even
// when it contains '='.
std::pair<std::string, std::string> model_arg(const std::string& arg) {
    const std::size_t eq = arg.find('=');
    std::error_code ec;
    if (eq != std::string::npos && is_model_name(arg.substr(0, eq)) &&
        !std::filesystem::exists(arg, ec))
        return {arg.substr(0, eq), arg.substr(eq + 1)};
    std::string name = std::filesystem::path(arg).stem().string();
    if (!is_model_name(name)) name = "model";
    return {name, arg};
}

// SIGTERM/SIGINT may arrive on any thread (BLAS and nazar's pools exist before this command
// runs), so the handler only writes the signal number into a pipe (async-signal-safe); the
// watcher thread reads it and stops the server. The watcher ends on a signal or when `done`.
int g_signal_pipe[2] = {-1, -1};

extern "C" void on_stop_signal(int sig) {
    const int saved = errno;
    const unsigned char b = static_cast<unsigned char>(sig);
    [[maybe_unused]] const ssize_t w = ::write(g_signal_pipe[1], &b, 1);
    errno = saved;
}

void watch_signals(serve::Server& server, const std::atomic<bool>& done) {
    while (!done) {
        pollfd p{g_signal_pipe[0], POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        unsigned char sig = 0;
        if (::read(g_signal_pipe[0], &sig, 1) != 1) continue;
        std::fprintf(stderr,
                     "nazar serve: %s: draining (new translations get 503), answering those "
                     "in flight\n",
                     sig == SIGTERM ? "SIGTERM" : "SIGINT");
        server.stop();
        return;
    }
}

void install_serve_signal_handlers() {
    if (g_signal_pipe[0] < 0 && ::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        throw Error(fmt::format("nazar serve: cannot create a pipe: {}", std::strerror(errno)));
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    // A client that hangs up mid-answer must not kill the server.
    signal(SIGPIPE, SIG_IGN);
}

int run_serve(ServeArgs& a) {
    apply_threads_option(a.threads);
    a.cfg.batcher.window = std::chrono::microseconds(static_cast<int64_t>(a.window_ms * 1000));
    a.cfg.timeout = std::chrono::milliseconds(a.timeout_ms);
    auto& cl = a.cfg.connections;
    cl.header_timeout = std::chrono::milliseconds(a.header_timeout_ms);
    cl.body_timeout = std::chrono::milliseconds(a.body_timeout_ms);
    cl.idle_timeout = std::chrono::milliseconds(a.idle_timeout_ms);
    cl.write_timeout = std::chrono::milliseconds(a.write_timeout_ms);
    a.cfg.batcher.max_work = a.cfg.limits.max_work;  // a batch holds at most one largest request
    if (!a.api_key_file.empty()) a.cfg.api_keys = read_api_keys(a.api_key_file);
    raise_descriptor_limit();

    install_serve_signal_handlers();  // before the models load: a SIGTERM then still exits 0 later
    std::vector<std::unique_ptr<Translator>> translators;
    std::vector<serve::NamedModel> named;
    std::string names;
    for (const std::string& arg : a.models) {
        auto [name, path] = model_arg(arg);
        for (const serve::NamedModel& m : named)
            if (m.name == name)
                throw UsageError(
                    fmt::format("model name '{}' is given twice; name models with "
                                "--model NAME=PATH",
                                name));
        // one decoding session per decoder thread, all over one copy of the weights
        translators.push_back(std::make_unique<Translator>(
            path, TranslatorConfig{.replicas = a.cfg.batcher.decoders}));
        named.push_back({name, translators.back().get()});
        names += (names.empty() ? "" : ", ") + name;
    }

    serve::Server server(a.cfg, named);
    const int port = server.bind();
    if (!server.loopback() && a.cfg.api_keys.empty())
        std::fprintf(stderr,
                     "nazar serve: warning: listening on %s without --api-key-file: anyone who "
                     "can reach this address can use the server (docs/serve.md \"Deployment\")\n",
                     a.cfg.host.c_str());
    std::printf("nazar serve: listening on %s://%s:%d/ (models: %s; default %s)\n",
                a.cfg.tls_cert.empty() ? "http" : "https", a.cfg.host.c_str(), port, names.c_str(),
                named.front().name.c_str());
    std::fflush(stdout);

    std::atomic<bool> done{false};
    std::thread watcher([&] { watch_signals(server, done); });
    try {
        server.run();
    } catch (...) {
        done = true;
        watcher.join();
        throw;
    }
    done = true;
    watcher.join();
    std::fprintf(stderr, "nazar serve: stopped\n");
    return 0;
}

// The request-cost, connection and access options.
void add_connection_options(CLI::App& app, ServeArgs& a) {
    auto& c = a.cfg;
    app.add_option("--max-work", c.limits.max_work,
                   "Most hypothesis steps a request may take: sentences x beam x maximum output "
                   "length (413 above)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
        ->capture_default_str();
    app.add_option("--max-answer-bytes", c.limits.max_answer_bytes,
                   "Largest answer a request may ask for, estimated before decoding (413 above)")
        ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 34))
        ->capture_default_str();
    app.add_option("--max-connections", c.connections.max_connections,
                   "Client connections open at once (503 and close above)")
        ->check(CLI::Range(1, 1 << 20))
        ->capture_default_str();
    app.add_option("--max-requests-per-connection", c.connections.max_requests,
                   "Requests on one keep-alive connection before it is closed")
        ->check(CLI::Range(1, 1 << 30))
        ->capture_default_str();
    app.add_option("--header-timeout-ms", a.header_timeout_ms,
                   "A request's head must arrive within this of its first byte (408 after)")
        ->check(CLI::Range(int64_t{1}, int64_t{3600000}))
        ->capture_default_str();
    app.add_option("--body-timeout-ms", a.body_timeout_ms,
                   "A request's body must arrive within this of its head (408 after)")
        ->check(CLI::Range(int64_t{1}, int64_t{3600000}))
        ->capture_default_str();
    app.add_option("--idle-timeout-ms", a.idle_timeout_ms,
                   "A keep-alive connection with no request for this long is closed")
        ->check(CLI::Range(int64_t{1}, int64_t{3600000}))
        ->capture_default_str();
    app.add_option("--write-timeout-ms", a.write_timeout_ms,
                   "A connection whose client reads no byte of its answer for this long is closed")
        ->check(CLI::Range(int64_t{1}, int64_t{3600000}))
        ->capture_default_str();
    app.add_option("--allow-origin", c.allow_origins,
                   "A web origin (https://app.example) whose pages may call the server; repeat for "
                   "more; * for any (others get 403)");
    app.add_option("--tls-cert", c.tls_cert,
                   "PEM certificate chain: serve HTTPS (TLS 1.2 or newer) with --tls-key");
    app.add_option("--tls-key", c.tls_key, "PEM private key of --tls-cert (unencrypted)");
    app.add_option("--api-key-file", a.api_key_file,
                   "File of API keys, one per line: every route but /health and the page then "
                   "needs Authorization: Bearer KEY (401 without)");
}

void setup_serve(CLI::App& app, std::function<int()>& run) {
    auto a = std::make_shared<ServeArgs>();
    auto& c = a->cfg;
    app.add_option("--model", a->models,
                   "Model file, or NAME=FILE; repeat for more models (the first is the default; "
                   "a bare FILE is named after its stem)")
        ->required();
    app.add_option("--host", c.host, "Address to listen on (loopback by default)")
        ->capture_default_str();
    app.add_option("--port", c.port, "Port (0 = any free port; the listening line says which)")
        ->check(CLI::Range(0, 65535))
        ->capture_default_str();
    app.add_option("--max-body-bytes", c.limits.max_body_bytes, "Largest request body (413 above)")
        ->check(CLI::Range(std::size_t{64}, std::size_t{1} << 30))
        ->capture_default_str();
    app.add_option("--max-sentences", c.limits.max_sentences, "Sentences per request (400 above)")
        ->check(CLI::Range(1, 1 << 20))
        ->capture_default_str();
    app.add_option("--max-tokens", c.limits.max_tokens, "Source tokens per sentence (400 above)")
        ->check(CLI::Range(1, 1 << 20))
        ->capture_default_str();
    app.add_option("--max-beam", c.limits.max_beam, "Largest beam and n_best (400 above)")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    app.add_option("--queue", c.batcher.capacity,
                   "Requests that may wait for a batch (503 with Retry-After above)")
        ->check(CLI::Range(1, 1 << 20))
        ->capture_default_str();
    app.add_option("--timeout-ms", a->timeout_ms,
                   "Per-request timeout, arrival to answer (504 after it)")
        ->check(CLI::Range(int64_t{1}, int64_t{86400000}))
        ->capture_default_str();
    app.add_option("--batch-window-ms", a->window_ms,
                   "How long a batch waits for more requests after its first one")
        ->check(CLI::Range(0.0, 600000.0))
        ->capture_default_str();
    app.add_option("--batch-requests", c.batcher.max_requests,
                   "Most requests per batch (1 = no cross-request batching)")
        ->check(CLI::Range(1, 1 << 20))
        ->capture_default_str();
    app.add_option("--batch-tokens", c.batcher.max_tokens,
                   "Source-token budget of a batch (a batch closes early when it is full)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
        ->capture_default_str();
    app.add_option("--decoder-batch", c.batcher.decoder_batch,
                   "Sentences per decoder batch inside one batched beam search")
        ->check(CLI::Range(1, 1 << 16))
        ->capture_default_str();
    app.add_option("--decoders", c.batcher.decoders,
                   "Decoder threads: batches decoded at the same time, each model's weights "
                   "shared by all (each adds its buffers only)")
        ->check(CLI::Range(1, 256))
        ->capture_default_str();
    add_connection_options(app, *a);
    app.add_option("--http-threads", c.http_threads,
                   "Worker threads that parse requests and write answers (connections are "
                   "served by one event loop)")
        ->check(CLI::Range(1, 256))
        ->capture_default_str();
    add_threads_option(app, a->threads);
    run = [a] { return run_serve(*a); };
}

}  // namespace

NZ_REGISTER_COMMAND(serve, "HTTP translation server with a web attention explorer", setup_serve);

}  // namespace nazar::cli
