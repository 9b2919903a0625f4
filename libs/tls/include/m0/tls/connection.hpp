#pragma once
// One TLS connection over a non-blocking socket the caller owns and waits
// on: the handshake, then reads and writes of plaintext. Never blocks and
// never waits itself: each call does what the socket allows now and says
// what it needs next (readable, writable), so it fits any event loop (the
// engine's reactor waits with Asio's async_wait). One thread at a time.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <m0/tls_info.hpp>

typedef struct ssl_st SSL;

namespace m0::tls {

class server_context;

// Why a handshake failed, as counted in the metrics (reason label).
enum class handshake_failure {
    none,
    timeout,             // the engine's handshake timer ran out (set by the caller)
    plain_http,          // the client spoke plain HTTP to the TLS port
    closed,              // the client closed (or reset) during the handshake
    protocol_version,    // no TLS version both sides accept
    no_shared_cipher,    // no cipher suite or group both sides accept
    client_certificate,  // missing, or refused by client_auth: required
    peer_alert,          // the client sent an alert (it refused our certificate, say)
    malformed,           // not TLS, or broken records
    other,
};
// "plain_http", "no_shared_cipher", ...: the metric's label value.
std::string_view to_string(handshake_failure f) noexcept;

class connection {
public:
    enum class status { done, want_read, want_write, closed, failed };

    // `fd` stays the caller's: it is never closed here.
    connection(const server_context& ctx, int fd);
    ~connection();
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    // Bytes already read from the socket that belong to the TLS stream (the
    // ones that followed a PROXY protocol header): read before the socket.
    void prepend_input(std::string_view bytes);

    // Before the handshake: of the context's ALPN protocols, this one only
    // may be chosen (a listener that speaks HTTP/1.1 only: "http/1.1").
    void limit_alpn(std::string protocol);

    // Advances the handshake. failed: failure() says why.
    status handshake();
    bool established() const noexcept { return established_; }
    // Set only by a handshake that failed.
    handshake_failure failure() const noexcept { return failure_; }
    // OpenSSL's words for the failure, for a debug log line.
    const std::string& failure_detail() const noexcept { return failure_detail_; }

    // Up to `cap` bytes of plaintext into `buf`. closed: the client ended
    // the stream (close_notify, or a plain end of the connection).
    status read(char* buf, std::size_t cap, std::size_t& n);
    // Plaintext already decrypted or received and not read yet: the next
    // read() returns without the socket.
    bool has_buffered_input() const noexcept;
    // Writes a prefix of [data, data+len). want_write: nothing of it was
    // taken; retry later with the same bytes at the same position (a record
    // may already be half sent). more_follows: the caller writes again (or
    // sends close_notify) before it waits, so small records may be held to
    // leave with the next ones in one send; without it, the records go now
    // with all that was held before them.
    status write(const char* data, std::size_t len, std::size_t& n, bool more_follows = false);
    // Sends close_notify, with what is held, as far as the socket takes it
    // now; never waits for the client's. False: output is still held (the
    // socket is full); call again once it is writable, until true.
    bool send_close_notify() noexcept;

    // Output is held at three points, each to save a send per connection:
    // the session tickets a TLS 1.3 handshake ends with, what a read that
    // returned data wrote, and write(..., more_follows). It goes with the
    // next write, or when a handshake or read returns anything but done
    // (the caller is about to wait), or by flush_output().
    bool has_held_output() const noexcept;
    // Sends what is held: done, want_write (the socket is full) or failed.
    status flush_output();
    // send(2) calls made so far (what the tests count).
    std::uint64_t socket_writes() const noexcept;

    // An abbreviated handshake (a ticket or a cached session).
    bool resumed() const noexcept;
    // Built after the handshake; the PEM texts are made on first call.
    const tls_info& info();
    // The errno of the socket call that failed, or 0.
    int socket_error() const noexcept { return socket_errno_; }
    SSL* native() const noexcept { return ssl_; }

    // Used by the socket BIO.
    struct io_state;

private:
    status after_error(int ret, bool handshaking);
    void classify_failure(int ssl_error);

    SSL* ssl_ = nullptr;
    std::unique_ptr<io_state> io_;
    std::unique_ptr<tls_info> info_;
    handshake_failure failure_ = handshake_failure::none;
    std::string failure_detail_;
    std::unique_ptr<std::string> alpn_limit_;  // limit_alpn's protocol (the SSL points at it)
    int socket_errno_ = 0;
    bool established_ = false;
    bool protocol_error_ = false;  // a TLS error after the handshake
    bool close_notify_queued_ = false;
};

}  // namespace m0::tls
