#include "m0/tls/connection.hpp"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "m0/tls/server_context.hpp"

#include "alpn_limit.hpp"

namespace m0::tls {

// What the socket BIO reads from and writes to. Its own BIO rather than
// OpenSSL's socket BIO: bytes read before the handshake (after a PROXY
// header) come first, writes never raise SIGPIPE (MSG_NOSIGNAL), the errno
// of a failed call is kept for the caller, and small writes may be held to
// leave in one send with what follows (connection.hpp says when).
struct connection::io_state {
    int fd = -1;
    std::string prefix;
    std::size_t prefix_used = 0;
    bool eof = false;
    int error = 0;
    // Writes up to held_output_limit may wait in `held`; holding_all: every
    // write does (the close_notify alert, which is never left half written
    // inside OpenSSL).
    bool holding = false;
    bool holding_all = false;
    std::string held;      // records written and not sent yet, in order
    std::uint64_t sends = 0;
};

namespace {

// Enough for TLS 1.3's two session tickets, a small response and an alert:
// what a connection that ends after one request writes after its handshake.
// Larger output is sent as OpenSSL writes it, so nothing big is copied.
constexpr std::size_t held_output_limit = 4096;

// Sends `held` and then [in, in + len) in one call. Returns how many bytes
// of `in` went; -1 with errno when the call failed. What is held is sent
// first: bytes of `in` go only once `held` is empty.
ssize_t send_after_held(connection::io_state& io, const char* in, std::size_t len) {
    iovec parts[2];
    int count = 0;
    if (!io.held.empty()) parts[count++] = {io.held.data(), io.held.size()};
    if (len > 0) parts[count++] = {const_cast<char*>(in), len};
    if (count == 0) return 0;
    msghdr m{};
    m.msg_iov = parts;
    m.msg_iovlen = static_cast<std::size_t>(count);
    ssize_t n;
    do n = ::sendmsg(io.fd, &m, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0) return -1;
    ++io.sends;
    const auto sent = static_cast<std::size_t>(n);
    if (sent < io.held.size()) {
        io.held.erase(0, sent);
        return 0;
    }
    const std::size_t of_in = sent - io.held.size();
    io.held.clear();
    return static_cast<ssize_t>(of_in);
}

int bio_read(BIO* b, char* out, std::size_t len, std::size_t* done) {
    auto* io = static_cast<connection::io_state*>(BIO_get_data(b));
    BIO_clear_retry_flags(b);
    if (io->prefix_used < io->prefix.size()) {
        const std::size_t n = std::min(len, io->prefix.size() - io->prefix_used);
        std::memcpy(out, io->prefix.data() + io->prefix_used, n);
        io->prefix_used += n;
        if (io->prefix_used == io->prefix.size()) std::string().swap(io->prefix), io->prefix_used = 0;
        *done = n;
        return 1;
    }
    for (;;) {
        const ssize_t n = ::recv(io->fd, out, len, 0);
        if (n > 0) {
            *done = static_cast<std::size_t>(n);
            return 1;
        }
        if (n == 0) {
            io->eof = true;
            return 0;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_read(b);
        else io->error = errno;
        return 0;
    }
}

int bio_write(BIO* b, const char* in, std::size_t len, std::size_t* done) {
    auto* io = static_cast<connection::io_state*>(BIO_get_data(b));
    BIO_clear_retry_flags(b);
    if (io->holding_all || (io->holding && io->held.size() + len <= held_output_limit)) {
        io->held.append(in, len);
        *done = len;
        return 1;
    }
    const ssize_t n = send_after_held(*io, in, len);
    if (n > 0) {
        *done = static_cast<std::size_t>(n);
        return 1;
    }
    // Nothing of `in` was taken: OpenSSL retries the same record later.
    if (n == 0 || errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_write(b);
    else io->error = errno;
    return 0;
}

long bio_ctrl(BIO* b, int cmd, long, void*) {
    switch (cmd) {
        // OpenSSL flushes after each handshake message (each TLS 1.3 ticket
        // alone); the connection sends what is held at the end of its call.
        case BIO_CTRL_FLUSH: return 1;
        // What SSL_OP_IGNORE_UNEXPECTED_EOF asks: the socket ended.
        case BIO_CTRL_EOF: return static_cast<connection::io_state*>(BIO_get_data(b))->eof ? 1 : 0;
        default: return 0;
    }
}

int bio_create(BIO* b) {
    BIO_set_init(b, 1);
    return 1;
}

const BIO_METHOD* socket_method() {
    static BIO_METHOD* const method = [] {
        BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "m0 socket");
        BIO_meth_set_read_ex(m, bio_read);
        BIO_meth_set_write_ex(m, bio_write);
        BIO_meth_set_ctrl(m, bio_ctrl);
        BIO_meth_set_create(m, bio_create);
        return m;
    }();
    return method;
}

std::string to_pem(X509* cert) {
    std::string out;
    BIO* mem = BIO_new(BIO_s_mem());
    if (mem && PEM_write_bio_X509(mem, cert) == 1) {
        char* data = nullptr;
        const long n = BIO_get_mem_data(mem, &data);
        if (n > 0) out.assign(data, static_cast<std::size_t>(n));
    }
    BIO_free(mem);
    return out;
}

std::string rfc4514(X509_NAME* name) {
    std::string out;
    BIO* mem = BIO_new(BIO_s_mem());
    if (mem && X509_NAME_print_ex(mem, name, 0, XN_FLAG_RFC2253) >= 0) {
        char* data = nullptr;
        const long n = BIO_get_mem_data(mem, &data);
        if (n > 0) out.assign(data, static_cast<std::size_t>(n));
    }
    BIO_free(mem);
    return out;
}

bool is_alert_reason(int reason) {
    // OpenSSL reports an alert received from the peer as reason
    // SSL_AD_REASON_OFFSET + the alert's code.
    return reason >= SSL_AD_REASON_OFFSET && reason < SSL_AD_REASON_OFFSET + 256;
}

}  // namespace

std::string_view to_string(handshake_failure f) noexcept {
    switch (f) {
        case handshake_failure::none: return "none";
        case handshake_failure::timeout: return "timeout";
        case handshake_failure::plain_http: return "plain_http";
        case handshake_failure::closed: return "closed";
        case handshake_failure::protocol_version: return "protocol_version";
        case handshake_failure::no_shared_cipher: return "no_shared_cipher";
        case handshake_failure::client_certificate: return "client_certificate";
        case handshake_failure::peer_alert: return "peer_alert";
        case handshake_failure::malformed: return "malformed";
        case handshake_failure::other: return "other";
    }
    return "other";
}

connection::connection(const server_context& ctx, int fd) : io_(std::make_unique<io_state>()) {
    io_->fd = fd;
    ssl_ = SSL_new(ctx.native());
    if (!ssl_) return;
    BIO* bio = BIO_new(socket_method());
    BIO_set_data(bio, io_.get());
    SSL_set_bio(ssl_, bio, bio);
    SSL_set_accept_state(ssl_);
    // Read whole socket buffers, not a record header and then its body:
    // one recv per burst of records instead of two per record.
    SSL_set_read_ahead(ssl_, 1);
    // Most clients end a connection without close_notify: that is an end of
    // stream, not an attack on a protocol (HTTP frames its own bodies).
    SSL_set_options(ssl_, SSL_OP_IGNORE_UNEXPECTED_EOF);
}

void connection::limit_alpn(std::string protocol) {
    alpn_limit_ = std::make_unique<std::string>(std::move(protocol));
    if (ssl_) SSL_set_ex_data(ssl_, detail::alpn_limit_index(), alpn_limit_.get());
}

connection::~connection() {
    if (!ssl_) return;
    // Ended without an error, with or without close_notify (most clients
    // just close): its session stays in the cache for a TLS 1.2 client to
    // resume by id. OpenSSL drops the session of an SSL freed otherwise.
    if (established_ && !protocol_error_) SSL_set_shutdown(ssl_, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    SSL_free(ssl_);
}

void connection::prepend_input(std::string_view bytes) {
    io_->prefix.append(bytes);
}

connection::status connection::handshake() {
    if (established_) return status::done;
    if (!ssl_) {
        failure_ = handshake_failure::other;
        failure_detail_ = "out of memory";
        return status::failed;
    }
    ERR_clear_error();
    io_->holding = true;
    const int r = SSL_do_handshake(ssl_);
    io_->holding = false;
    if (r == 1) {
        established_ = true;
        // TLS 1.3's session tickets (written after the client's Finished)
        // wait for the first response, or for the first read that finds
        // nothing to read: no client waits for them. TLS 1.2's last flight
        // (the server's Finished) is waited for: it goes now.
        if (SSL_version(ssl_) != TLS1_3_VERSION) return flush_output();
        return status::done;
    }
    const status s = after_error(r, true);
    const status flushed = flush_output();
    if (s == status::want_read && flushed == status::want_write) return status::want_write;
    return s;
}

bool connection::has_held_output() const noexcept { return !io_->held.empty(); }

std::uint64_t connection::socket_writes() const noexcept { return io_->sends; }

connection::status connection::flush_output() {
    while (!io_->held.empty()) {
        if (send_after_held(*io_, nullptr, 0) >= 0) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return status::want_write;
        io_->error = errno;
        socket_errno_ = errno;
        return status::failed;
    }
    return status::done;
}

connection::status connection::read(char* buf, std::size_t cap, std::size_t& n) {
    n = 0;
    ERR_clear_error();
    io_->holding = true;
    const int r = SSL_read_ex(ssl_, buf, cap, &n);
    io_->holding = false;
    if (r == 1) return status::done;  // what a read wrote (tickets, a key update) waits for the next write
    const status s = after_error(0, false);
    // The caller waits now: what is held goes before it does.
    const status flushed = flush_output();
    if (s == status::want_read && flushed != status::done) return flushed;
    return s;
}

bool connection::has_buffered_input() const noexcept {
    return io_->prefix_used < io_->prefix.size() || (ssl_ && SSL_has_pending(ssl_));
}

connection::status connection::write(const char* data, std::size_t len, std::size_t& n, bool more_follows) {
    n = 0;
    if (len == 0) return more_follows ? status::done : flush_output();
    ERR_clear_error();
    io_->holding = more_follows;
    const int r = SSL_write_ex(ssl_, data, len, &n);
    io_->holding = false;
    if (r == 1) return status::done;  // not holding: the last record went, and with it all that was held
    return after_error(0, false);
}

bool connection::send_close_notify() noexcept {
    if (!ssl_ || !established_) return true;
    if (!close_notify_queued_) {
        // The alert joins what is held, so OpenSSL never has it half sent
        // (called again, SSL_shutdown would read the client's instead);
        // all of it then leaves in one send, as the socket takes it.
        close_notify_queued_ = true;
        ERR_clear_error();
        io_->holding_all = true;
        SSL_shutdown(ssl_);
        io_->holding_all = false;
        ERR_clear_error();
    }
    switch (flush_output()) {
        case status::want_write: return false;
        case status::done: return true;
        default: io_->held.clear(); return true;  // the socket failed: nothing more will go
    }
}

connection::status connection::after_error(int ret, bool handshaking) {
    const int e = SSL_get_error(ssl_, ret);
    switch (e) {
        case SSL_ERROR_WANT_READ: return status::want_read;
        case SSL_ERROR_WANT_WRITE: return status::want_write;
        case SSL_ERROR_ZERO_RETURN:
            if (!handshaking) return status::closed;
            failure_ = handshake_failure::closed;
            failure_detail_ = "the client closed the connection";
            return status::failed;
        default: break;
    }
    socket_errno_ = io_->error;
    const bool socket_ended = e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0;
    if (!handshaking) {
        // After the handshake the connection ends, by a reset or a
        // protocol error; only the latter spoils its session.
        if (socket_ended) return socket_errno_ == 0 ? status::closed : status::failed;
        protocol_error_ = true;
        ERR_clear_error();
        return status::failed;
    }
    if (socket_ended) {
        failure_ = handshake_failure::closed;
        failure_detail_ = socket_errno_ ? std::strerror(socket_errno_) : "the client closed the connection";
        return status::failed;
    }
    classify_failure(e);
    return status::failed;
}

void connection::classify_failure(int) {
    // The first error queued is the cause; later ones are consequences.
    const unsigned long err = ERR_peek_error();
    char text[256];
    ERR_error_string_n(err, text, sizeof text);
    failure_detail_ = text;
    ERR_clear_error();
    if (ERR_GET_LIB(err) != ERR_LIB_SSL) {
        failure_ = handshake_failure::other;
        return;
    }
    const int reason = ERR_GET_REASON(err);
    switch (reason) {
        case SSL_R_HTTP_REQUEST:
        case SSL_R_HTTPS_PROXY_REQUEST: failure_ = handshake_failure::plain_http; return;
        case SSL_R_UNSUPPORTED_PROTOCOL:
        case SSL_R_VERSION_TOO_LOW:
        case SSL_R_UNKNOWN_PROTOCOL: failure_ = handshake_failure::protocol_version; return;
        case SSL_R_NO_SHARED_CIPHER:
        case SSL_R_NO_SHARED_GROUPS:
        case SSL_R_NO_SUITABLE_SIGNATURE_ALGORITHM: failure_ = handshake_failure::no_shared_cipher; return;
        case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
        case SSL_R_CERTIFICATE_VERIFY_FAILED: failure_ = handshake_failure::client_certificate; return;
        default: break;
    }
    failure_ = is_alert_reason(reason) ? handshake_failure::peer_alert : handshake_failure::malformed;
}

bool connection::resumed() const noexcept { return ssl_ && SSL_session_reused(ssl_) == 1; }

const tls_info& connection::info() {
    if (info_) return *info_;
    info_ = std::make_unique<tls_info>();
    tls_info& i = *info_;
    if (!ssl_ || !established_) return i;
    i.version = static_cast<std::uint16_t>(SSL_version(ssl_));
    if (const SSL_CIPHER* c = SSL_get_current_cipher(ssl_)) {
        i.cipher_suite = SSL_CIPHER_get_protocol_id(c);
        i.cipher_name = SSL_CIPHER_get_name(c);
    }
    if (const char* sni = SSL_get_servername(ssl_, TLSEXT_NAMETYPE_host_name)) i.server_name = sni;
    const unsigned char* alpn = nullptr;
    unsigned alpn_len = 0;
    SSL_get0_alpn_selected(ssl_, &alpn, &alpn_len);
    if (alpn) i.alpn.assign(reinterpret_cast<const char*>(alpn), alpn_len);
    i.resumed = SSL_session_reused(ssl_) == 1;
    i.server_cert = server_context::certificate_pem(ssl_);
    if (X509* leaf = SSL_get0_peer_certificate(ssl_)) {
        i.client_cert_chain.push_back(to_pem(leaf));
        i.client_subject = rfc4514(X509_get_subject_name(leaf));
        // On a server the peer chain leaves out the leaf.
        if (STACK_OF(X509)* chain = SSL_get_peer_cert_chain(ssl_))
            for (int k = 0; k < sk_X509_num(chain); ++k) {
                X509* c = sk_X509_value(chain, k);
                if (X509_cmp(c, leaf) != 0) i.client_cert_chain.push_back(to_pem(c));
            }
        const long verify = SSL_get_verify_result(ssl_);
        if (verify != X509_V_OK) i.client_verify_error = X509_verify_cert_error_string(verify);
    }
    return i;
}

}  // namespace m0::tls
