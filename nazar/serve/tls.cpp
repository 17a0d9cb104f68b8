// TLS sessions for the event loop (tls.h).
#include "nazar/serve/tls.h"

#include "nazar/core/check.h"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <sys/socket.h>

#include <cerrno>

namespace nazar::serve {

namespace {

std::string openssl_reason() {
    const unsigned long e = ERR_get_error();
    ERR_clear_error();
    if (e == 0) return "unknown OpenSSL error";
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    return buf;
}

// Maps a failed SSL_read/SSL_write to the recv/send convention.
ssize_t failed(SSL* ssl, int rc, bool& want_other, bool reading) {
    const int err = SSL_get_error(ssl, rc);
    switch (err) {
        case SSL_ERROR_WANT_READ:
            want_other = !reading;
            errno = EAGAIN;
            return -1;
        case SSL_ERROR_WANT_WRITE:
            want_other = reading;
            errno = EAGAIN;
            return -1;
        case SSL_ERROR_ZERO_RETURN:  // close_notify
            return reading ? 0 : (errno = EPIPE, -1);
        case SSL_ERROR_SYSCALL:
            ERR_clear_error();
            if (errno == 0) errno = EPIPE;  // the peer closed without close_notify
            return -1;
        default:  // a protocol error: not TLS, a bad handshake
            ERR_clear_error();
            errno = EPROTO;
            return -1;
    }
}

}  // namespace

TlsContext::TlsContext(const std::string& cert_file, const std::string& key_file) {
    ctx_ = SSL_CTX_new(TLS_server_method());
    if (!ctx_) throw Error("TLS: cannot create a context: " + openssl_reason());
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                               SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_options(ctx_, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    const auto fail = [&](const std::string& what) {
        const std::string reason = openssl_reason();
        SSL_CTX_free(ctx_);
        ctx_ = nullptr;
        throw Error(fmt::format("TLS: {}: {}", what, reason));
    };
    if (SSL_CTX_use_certificate_chain_file(ctx_, cert_file.c_str()) != 1)
        fail(fmt::format("cannot use certificate file '{}' (--tls-cert; PEM)", cert_file));
    if (SSL_CTX_use_PrivateKey_file(ctx_, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
        const bool mismatch = ERR_GET_REASON(ERR_peek_error()) == X509_R_KEY_VALUES_MISMATCH;
        fail(mismatch ? fmt::format("the key '{}' does not match the certificate '{}'", key_file,
                                    cert_file)
                      : fmt::format("cannot use private key file '{}' (--tls-key; PEM, "
                                    "unencrypted)",
                                    key_file));
    }
    if (SSL_CTX_check_private_key(ctx_) != 1)
        fail(fmt::format("the key '{}' does not match the certificate '{}'", key_file, cert_file));
}

TlsContext::~TlsContext() {
    if (ctx_) SSL_CTX_free(ctx_);
}

ssl_st* TlsContext::session(int fd) const {
    SSL* ssl = SSL_new(ctx_);
    if (!ssl) return nullptr;
    if (SSL_set_fd(ssl, fd) != 1) {
        SSL_free(ssl);
        return nullptr;
    }
    SSL_set_accept_state(ssl);
    return ssl;
}

ssize_t io_recv(ssl_st* ssl, int fd, char* buf, std::size_t n, bool& want_other) {
    want_other = false;
    if (!ssl) return ::recv(fd, buf, n, 0);
    errno = 0;
    const int rc = SSL_read(ssl, buf, static_cast<int>(std::min<std::size_t>(n, 1 << 30)));
    return rc > 0 ? rc : failed(ssl, rc, want_other, true);
}

ssize_t io_send(ssl_st* ssl, int fd, const char* buf, std::size_t n, bool& want_other) {
    want_other = false;
    if (!ssl) return ::send(fd, buf, n, MSG_NOSIGNAL);
    errno = 0;
    const int rc = SSL_write(ssl, buf, static_cast<int>(std::min<std::size_t>(n, 1 << 30)));
    return rc > 0 ? rc : failed(ssl, rc, want_other, false);
}

void io_close(ssl_st* ssl) {
    if (!ssl) return;
    if (SSL_is_init_finished(ssl)) SSL_shutdown(ssl);  // one close_notify, no waiting
    ERR_clear_error();
    SSL_free(ssl);
}

}  // namespace nazar::serve
