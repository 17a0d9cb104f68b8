// TLS for `nazar serve --tls-cert FILE --tls-key FILE` (docs/serve.md "TLS"), on Debian's
// OpenSSL: one server context, one session per connection, and non-blocking I/O that reads and
// writes either a TLS session or the plain socket, for the event loop (connections.cpp).
#pragma once

#include <sys/types.h>
#include <cstddef>
#include <string>

struct ssl_st;
struct ssl_ctx_st;

namespace nazar::serve {

// TLS 1.2 or newer, the certificate chain and its private key from PEM files. Throws Error
// naming the file and OpenSSL's reason (unreadable, not PEM, key not matching the certificate).
class TlsContext {
public:
    TlsContext(const std::string& cert_file, const std::string& key_file);
    ~TlsContext();
    TlsContext(const TlsContext&) = delete;
    TlsContext& operator=(const TlsContext&) = delete;
    ssl_st* session(int fd) const;  // a server session on the accepted socket (nullptr: failed)

private:
    ssl_ctx_st* ctx_ = nullptr;
};

// Non-blocking reads and writes through `ssl` (the handshake runs inside them), or the plain
// socket when ssl is null. Like recv/send: > 0 bytes, 0 end of stream (read), -1 with errno
// EAGAIN when it would block — `want_other` then says the session waits for the other
// direction (a write needs the socket readable, or a read writable) — or another errno.
ssize_t io_recv(ssl_st* ssl, int fd, char* buf, std::size_t n, bool& want_other);
ssize_t io_send(ssl_st* ssl, int fd, const char* buf, std::size_t n, bool& want_other);
void io_close(ssl_st* ssl);  // close_notify (best effort) and free; null: nothing

}  // namespace nazar::serve
