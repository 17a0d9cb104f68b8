// size: over 500 lines: one event loop, a state machine per connection.
// The event loop that owns the server's sockets (connections.h).
#include "nazar/serve/connections.h"

#include "nazar/core/check.h"
#include "nazar/serve/request.h"
#include "nazar/serve/tls.h"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace nazar::serve {

using Clock = std::chrono::steady_clock;

struct PendingReply {
    EventLoop* loop = nullptr;
    uint64_t conn = 0;
    std::atomic<int> state{0};  // 0 waiting, 1 answered, 2 cancelled
    std::mutex m;               // the fields below
    Clock::time_point deadline = Clock::time_point::max();
    HttpResponse timeout_answer;  // sent at the deadline
    HttpResponse answer;          // what send() gave, for the loop to write
    std::function<void(int)> finish;

    void finished(int status) {
        std::function<void(int)> f;
        {
            std::lock_guard lk(m);
            f = std::move(finish);
        }
        if (f) f(status);
    }
};

namespace {

// Status 499 (nginx's): the client closed the connection before its answer; for the metrics.
constexpr int kClientClosed = 499;
constexpr std::size_t kReadChunk = 64 << 10;
constexpr auto kLinger = std::chrono::milliseconds(1000);   // reading after a closing answer
constexpr auto kScanEvery = std::chrono::milliseconds(10);  // deadline checks
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

enum class State { reading, waiting, writing, lingering };

struct Conn {
    uint64_t id = 0;
    int fd = -1;
    State st = State::reading;
    std::string in;
    std::size_t scanned = 0;  // find_head_end's resume point
    bool have_head = false, got_bytes = false;
    HttpRequest req;
    std::string out;
    std::size_t out_off = 0;
    Clock::time_point deadline;
    int served = 0;
    bool close_after = false;
    std::shared_ptr<PendingReply> pending;
    uint32_t events = 0;
    bool active = true;     // counted against max_connections (false: refused, or closing)
    ssl_st* ssl = nullptr;  // the TLS session (--tls-cert), or plain
};

HttpResponse closing_error(int status, const std::string& message) {
    HttpResponse r;
    r.status = status;
    r.body = error_body(status, message);
    r.close = true;
    return r;
}

std::string overload_answer(int max_connections) {
    HttpResponse r;
    r.status = 503;
    r.body = fmt::format(R"({{"error":"too many connections ({} open, --max-connections); )"
                         R"(retry later","status":503}})",
                         max_connections);
    r.headers = {{"Retry-After", "1"}};
    r.close = true;
    return serialize(r, false);
}

}  // namespace

class EventLoop {
public:
    EventLoop(ConnectionLimits l, HttpListener::Handler h, HttpListener::AnswerHook a)
        : lim(l), handler(std::move(h)), hook(std::move(a)) {
        ep = ::epoll_create1(EPOLL_CLOEXEC);
        wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (ep < 0 || wake < 0)
            throw Error(fmt::format("nazar serve: epoll/eventfd: {}", std::strerror(errno)));
        watch(wake, EPOLLIN, EPOLL_CTL_ADD);
        overload = overload_answer(lim.max_connections);
    }
    ~EventLoop() {
        for (auto& [fd, c] : conns) ::close(fd);
        if (listen_fd >= 0) ::close(listen_fd);
        ::close(wake);
        ::close(ep);
    }

    int bind(const std::string& host, int port);
    void run();
    void shutdown() {
        stopping = true;
        poke();
    }
    void post(uint64_t conn) {
        {
            std::lock_guard lk(qm);
            answered.push_back(conn);
        }
        poke();
    }
    void use_tls(const std::string& cert, const std::string& key) {
        tls = std::make_unique<TlsContext>(cert, key);
    }
    ConnectionStats stats() const {
        return {.open = open.load(), .refused = refused.load(), .timed_out = timed_out.load()};
    }

private:
    void poke() {
        const uint64_t one = 1;
        [[maybe_unused]] const ssize_t w = ::write(wake, &one, sizeof one);
    }
    void watch(int fd, uint32_t ev, int op) {
        epoll_event e{};
        e.events = ev;
        e.data.fd = fd;
        ::epoll_ctl(ep, op, fd, &e);
    }
    void set_events(Conn& c, uint32_t ev) {
        if (c.events == ev) return;
        c.events = ev;
        watch(c.fd, ev, EPOLL_CTL_MOD);
    }
    void accept_all(Clock::time_point now);
    void on_event(Conn& c, uint32_t ev, Clock::time_point now);
    void read_into(Conn& c, Clock::time_point now);
    void process_input(Conn& c, Clock::time_point now);
    void dispatch(Conn& c);
    void answer(Conn& c, HttpResponse r, Clock::time_point now);
    void flush(Conn& c, Clock::time_point now);
    void after_answer(Conn& c, Clock::time_point now);
    void start_linger(Conn& c, Clock::time_point now);
    void close_conn(Conn& c);
    void take_answers(Clock::time_point now);
    void check_deadlines(Clock::time_point now);
    void begin_shutdown(Clock::time_point now);

    ConnectionLimits lim;
    HttpListener::Handler handler;
    HttpListener::AnswerHook hook;
    int ep = -1, wake = -1, listen_fd = -1;
    std::unordered_map<int, std::unique_ptr<Conn>> conns;
    std::unordered_map<uint64_t, Conn*> by_id;
    uint64_t next_id = 1;
    int active = 0, lingering = 0;
    std::mutex qm;
    std::vector<uint64_t> answered;  // connections whose pending reply was sent
    std::atomic<bool> stopping{false};
    bool shut = false;
    Clock::time_point accept_paused_until{}, next_scan{};
    std::string overload;
    std::unique_ptr<TlsContext> tls;
    std::vector<char> read_buf = std::vector<char>(kReadChunk);
    std::atomic<int64_t> open{0}, refused{0}, timed_out{0};
};

int EventLoop::bind(const std::string& host, int port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* res = nullptr;
    const std::string service = std::to_string(port);
    if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0)
        throw Error(fmt::format("cannot listen on {}:{}: {}", host, port, ::gai_strerror(rc)));
    std::string why = "no address";
    for (addrinfo* a = res; a && listen_fd < 0; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        const int yes = 1;
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
            listen_fd = fd;
        } else {
            why = std::strerror(errno);
            ::close(fd);
        }
    }
    ::freeaddrinfo(res);
    if (listen_fd < 0)
        throw Error(
            fmt::format("cannot listen on {}:{}: {} (in use, not a local address, or "
                        "not allowed)",
                        host, port, why));
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    ::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len);
    watch(listen_fd, EPOLLIN, EPOLL_CTL_ADD);
    return ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(ss).sin6_port
                                          : reinterpret_cast<sockaddr_in&>(ss).sin_port);
}

void EventLoop::accept_all(Clock::time_point now) {
    for (int k = 0; k < 256; ++k) {
        const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                // Out of descriptors: stop accepting a while (the listener stays readable).
                watch(listen_fd, 0, EPOLL_CTL_MOD);
                accept_paused_until = now + kAcceptPause;
            }
            return;  // EAGAIN, or a connection that went away meanwhile
        }
        const int yes = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
        auto c = std::make_unique<Conn>();
        c->id = next_id++;
        c->fd = fd;
        c->deadline = now + lim.header_timeout;
        Conn& cr = *c;
        conns.emplace(fd, std::move(c));
        by_id.emplace(cr.id, &cr);
        cr.events = EPOLLIN | EPOLLRDHUP;
        watch(fd, cr.events, EPOLL_CTL_ADD);
        if (active >= lim.max_connections) {
            ++refused;
            cr.active = false;
            ++lingering;
            if (hook) hook("", 503);
            // A flood: no courtesy left. TLS: no plain answer to a handshake, just the close.
            if (lingering > lim.max_connections || tls) {
                close_conn(cr);
                continue;
            }
            cr.out = overload;
            cr.close_after = true;
            cr.st = State::writing;
            cr.deadline = now + lim.write_timeout;
            flush(cr, now);
            continue;
        }
        ++active;
        ++open;
        if (tls && !(cr.ssl = tls->session(fd))) close_conn(cr);
    }
}

void EventLoop::close_conn(Conn& c) {
    if (c.st == State::waiting && c.pending) {
        int expected = 0;
        if (c.pending->state.compare_exchange_strong(expected, 2))
            c.pending->finished(kClientClosed);
    }
    if (c.active)
        --active, --open;
    else
        --lingering;
    io_close(c.ssl);
    ::epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
    by_id.erase(c.id);
    conns.erase(c.fd);  // c is gone
}

void EventLoop::read_into(Conn& c, Clock::time_point now) {
    const std::size_t cap = lim.max_header_bytes + lim.max_body_bytes + kReadChunk;
    while (c.in.size() < cap) {
        // Through one loop-owned buffer: a connection's own holds only what it was sent.
        bool want_write = false;
        const ssize_t n = io_recv(c.ssl, c.fd, read_buf.data(), read_buf.size(), want_write);
        if (n > 0) c.in.append(read_buf.data(), static_cast<std::size_t>(n));
        if (n > 0) {
            if (!c.got_bytes && c.st == State::reading) {
                c.got_bytes = true;
                c.deadline = now + lim.header_timeout;  // the whole head from its first byte
            }
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            // TLS: a handshake step may wait for the socket to take its answer.
            if (c.st == State::reading)
                set_events(c, EPOLLIN | EPOLLRDHUP | (want_write ? EPOLLOUT : 0u));
            return;
        }
        if (n < 0 && errno == EINTR) continue;
        // End of stream or an error: a request cut short is lost; nothing to answer. Its
        // answer may close c (the client is gone): from here on, only the id tells.
        const uint64_t id = c.id;
        if (c.st == State::reading) process_input(c, now);
        if (by_id.count(id) && (c.st == State::reading || c.st == State::lingering)) close_conn(c);
        return;
    }
}

void EventLoop::process_input(Conn& c, Clock::time_point now) {
    if (!c.have_head) {
        const std::size_t end = find_head_end(c.in, c.scanned);
        if (end == std::string::npos || end > lim.max_header_bytes) {
            c.scanned = c.in.size();
            if (c.in.size() > lim.max_header_bytes)
                answer(c,
                       closing_error(
                           431, fmt::format("request head exceeds {} bytes", lim.max_header_bytes)),
                       now);
            return;
        }
        if (auto e =
                parse_request_head(std::string_view(c.in.data(), end), lim.max_body_bytes, c.req)) {
            answer(c, closing_error(e->status, e->message), now);
            return;
        }
        c.in.erase(0, end);
        c.scanned = 0;
        c.have_head = true;
        c.deadline = now + lim.body_timeout;
        if (c.req.expect_continue && c.in.size() < static_cast<std::size_t>(c.req.content_length)) {
            static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
            bool other = false;
            [[maybe_unused]] const ssize_t w =
                io_send(c.ssl, c.fd, kContinue, sizeof kContinue - 1, other);
        }
    }
    const auto len = static_cast<std::size_t>(c.req.content_length);
    if (c.in.size() < len) return;
    c.req.body.assign(c.in, 0, len);
    c.in.erase(0, len);
    dispatch(c);
}

void EventLoop::dispatch(Conn& c) {
    c.st = State::waiting;
    set_events(c, EPOLLRDHUP);  // only the hang-up: the next request waits in the kernel
    ++c.served;
    c.pending = std::make_shared<PendingReply>();
    c.pending->loop = this;
    c.pending->conn = c.id;
    handler(c.req, Reply(c.pending));
}

void EventLoop::answer(Conn& c, HttpResponse r, Clock::time_point now) {
    const bool keep = c.req.keep_alive && !r.close && !c.close_after &&
                      c.served < lim.max_requests && !stopping && c.st == State::waiting;
    if (hook) hook(c.req.path, r.status);
    c.out = serialize(r, keep, c.req.method == "HEAD");
    c.out_off = 0;
    c.close_after = !keep;
    c.pending.reset();
    c.st = State::writing;
    c.deadline = now + lim.write_timeout;
    flush(c, now);
}

void EventLoop::flush(Conn& c, Clock::time_point now) {
    while (c.out_off < c.out.size()) {
        bool want_read = false;
        const ssize_t n =
            io_send(c.ssl, c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, want_read);
        if (n > 0) {
            c.out_off += static_cast<std::size_t>(n);
            c.deadline = now + lim.write_timeout;  // progress
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            set_events(c, want_read ? EPOLLIN | EPOLLOUT : EPOLLOUT);
            return;
        }
        close_conn(c);  // the client is gone
        return;
    }
    after_answer(c, now);
}

void EventLoop::after_answer(Conn& c, Clock::time_point now) {
    std::string().swap(c.out);
    c.out_off = 0;
    if (c.in.empty()) std::string().swap(c.in);  // a large request's buffer goes
    if (c.close_after) {
        start_linger(c, now);
        return;
    }
    c.st = State::reading;
    c.have_head = false;
    c.req = HttpRequest{};
    c.scanned = 0;
    c.got_bytes = !c.in.empty();
    c.deadline = now + (c.got_bytes ? lim.header_timeout : lim.idle_timeout);
    set_events(c, EPOLLIN | EPOLLRDHUP);
    if (!c.in.empty()) process_input(c, now);  // a pipelined request
}

// After a closing answer: no more writing; read and drop what the client still sends for a
// moment, so that closing with unread bytes does not reset the answer away.
void EventLoop::start_linger(Conn& c, Clock::time_point now) {
    if (c.active) {
        c.active = false;
        --active, --open, ++lingering;
    }
    c.st = State::lingering;
    io_close(c.ssl);  // close_notify; what follows is read raw and dropped
    c.ssl = nullptr;
    ::shutdown(c.fd, SHUT_WR);
    c.in.clear();
    c.deadline = now + kLinger;
    set_events(c, EPOLLIN | EPOLLRDHUP);
}

void EventLoop::on_event(Conn& c, uint32_t ev, Clock::time_point now) {
    switch (c.st) {
        case State::reading:
            if (ev & (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
                const uint64_t id = c.id;  // read_into may close c (ids are never reused)
                read_into(c, now);
                if (by_id.count(id) && c.st == State::reading) process_input(c, now);
            }
            return;
        case State::lingering: {
            char sink[4096];
            ssize_t n;
            while ((n = ::recv(c.fd, sink, sizeof sink, 0)) > 0) {
            }
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
                close_conn(c);
            return;
        }
        case State::waiting:  // the client hung up (or half-closed) before its answer
            if (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) close_conn(c);
            return;
        case State::writing:
            if (ev & (EPOLLHUP | EPOLLERR)) {
                close_conn(c);
                return;
            }
            if (ev & (EPOLLOUT | EPOLLIN)) flush(c, now);  // EPOLLIN: a TLS write's read
            return;
    }
}

void EventLoop::take_answers(Clock::time_point now) {
    std::vector<uint64_t> ids;
    {
        std::lock_guard lk(qm);
        ids.swap(answered);
    }
    for (const uint64_t id : ids) {
        const auto it = by_id.find(id);
        if (it == by_id.end() || it->second->st != State::waiting) continue;
        Conn& c = *it->second;
        HttpResponse r;
        {
            std::lock_guard lk(c.pending->m);
            r = std::move(c.pending->answer);
        }
        answer(c, std::move(r), now);
    }
}

void EventLoop::check_deadlines(Clock::time_point now) {
    if (now < next_scan) return;
    next_scan = now + kScanEvery;
    if (accept_paused_until != Clock::time_point{} && now >= accept_paused_until && !shut) {
        accept_paused_until = {};
        watch(listen_fd, EPOLLIN, EPOLL_CTL_MOD);
    }
    std::vector<Conn*> due;
    for (auto& [fd, c] : conns) {
        if (c->st == State::waiting) {
            std::lock_guard lk(c->pending->m);
            if (now >= c->pending->deadline) due.push_back(c.get());
        } else if (now >= c->deadline) {
            due.push_back(c.get());
        }
    }
    for (Conn* c : due) {
        switch (c->st) {
            case State::waiting: {
                int expected = 0;
                if (!c->pending->state.compare_exchange_strong(expected, 2)) break;  // answered
                HttpResponse r;
                {
                    std::lock_guard lk(c->pending->m);
                    r = c->pending->timeout_answer;
                }
                c->pending->finished(r.status);
                answer(*c, std::move(r), now);
                break;
            }
            case State::reading:
                if (c->got_bytes) {
                    ++timed_out;
                    answer(*c,
                           closing_error(408, fmt::format("the request did not arrive in time "
                                                          "({} ms for the head, {} ms for the "
                                                          "body)",
                                                          lim.header_timeout.count(),
                                                          lim.body_timeout.count())),
                           now);
                } else {
                    close_conn(*c);  // idle
                }
                break;
            case State::writing:
                ++timed_out;
                close_conn(*c);
                break;
            case State::lingering:
                close_conn(*c);
                break;
        }
    }
}

void EventLoop::begin_shutdown(Clock::time_point now) {
    shut = true;
    if (listen_fd >= 0) {
        ::epoll_ctl(ep, EPOLL_CTL_DEL, listen_fd, nullptr);
        ::close(listen_fd);
        listen_fd = -1;
    }
    std::vector<Conn*> idle;
    for (auto& [fd, c] : conns)
        if (c->st == State::reading || c->st == State::lingering) idle.push_back(c.get());
    for (Conn* c : idle) close_conn(*c);
    (void)now;
}

void EventLoop::run() {
    std::vector<epoll_event> evs(256);
    for (;;) {
        Clock::time_point now = Clock::now();
        if (stopping && !shut) begin_shutdown(now);
        if (shut) {
            bool busy = false;
            for (auto& [fd, c] : conns) busy |= c->st == State::waiting || c->st == State::writing;
            if (!busy) break;
        }
        const int n = ::epoll_wait(ep, evs.data(), static_cast<int>(evs.size()),
                                   static_cast<int>(kScanEvery.count()));
        if (n < 0 && errno != EINTR)
            throw Error(fmt::format("nazar serve: epoll_wait: {}", std::strerror(errno)));
        now = Clock::now();
        for (int i = 0; i < n; ++i) {
            const int fd = evs[i].data.fd;
            if (fd == wake) {
                uint64_t v;
                [[maybe_unused]] const ssize_t r = ::read(wake, &v, sizeof v);
            } else if (fd == listen_fd) {
                if (!shut) accept_all(now);
            } else if (const auto it = conns.find(fd); it != conns.end()) {
                on_event(*it->second, evs[i].events, now);
            }
        }
        take_answers(now);
        check_deadlines(now);
    }
    std::vector<Conn*> rest;
    for (auto& [fd, c] : conns) rest.push_back(c.get());
    for (Conn* c : rest) close_conn(*c);
}

bool Reply::send(HttpResponse r) {
    if (!p_) return false;
    int expected = 0;
    if (!p_->state.compare_exchange_strong(expected, 1)) return false;
    const int status = r.status;
    {
        std::lock_guard lk(p_->m);
        p_->answer = std::move(r);
        p_->deadline = Clock::time_point::max();
    }
    p_->finished(status);
    p_->loop->post(p_->conn);
    return true;
}

bool Reply::cancelled() const {
    return p_ && p_->state.load() == 2;
}

void Reply::set_deadline(Clock::time_point deadline, HttpResponse answer) {
    std::lock_guard lk(p_->m);
    if (p_->state.load() != 0) return;
    p_->deadline = deadline;
    p_->timeout_answer = std::move(answer);
}

void Reply::on_finish(std::function<void(int)> f) {
    std::lock_guard lk(p_->m);
    p_->finish = std::move(f);
}

HttpListener::HttpListener(ConnectionLimits limits, Handler handler, AnswerHook on_answer)
    : loop_(std::make_unique<EventLoop>(limits, std::move(handler), std::move(on_answer))) {}
HttpListener::~HttpListener() = default;
void HttpListener::use_tls(const std::string& cert_file, const std::string& key_file) {
    loop_->use_tls(cert_file, key_file);
}
int HttpListener::bind(const std::string& host, int port) {
    return loop_->bind(host, port);
}
void HttpListener::run() {
    loop_->run();
}
void HttpListener::shutdown() {
    loop_->shutdown();
}
ConnectionStats HttpListener::stats() const {
    return loop_->stats();
}

}  // namespace nazar::serve
