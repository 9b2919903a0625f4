#pragma once
// The core's HTTP/1.1 engine, as frontends see it (docs/architecture.md).
//
// The engine accepts on a worker's listeners, parses requests (no Python, no
// GIL), and hands each complete request to a handler on the reactor thread as
// an `exchange`. The handler answers at once (native routes) or later, from a
// completion on the same reactor thread (executor jobs). Requests on one
// connection are dispatched one at a time, so pipelined responses leave in
// order. The engine owns Content-Length / Transfer-Encoding / Connection /
// Date / Server; handlers never set them.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <m0/api.hpp>
#include <m0/worker.hpp>

namespace m0::http {

struct header_field {
    std::string_view name;
    std::string_view value;
};

// A parsed request. Views stay valid until the exchange is destroyed.
struct request {
    std::string_view method;
    std::string_view target;        // as sent: "/a%20b?x=1"
    std::string_view path;          // target up to '?', not decoded
    std::string_view query;         // after '?', without it; empty if none
    unsigned version = 11;          // 10 or 11
    std::vector<header_field> headers;  // arrival order, duplicates kept
    std::string body;               // whole body, de-chunked
    bool keep_alive = true;         // what the client asked for
    boost::asio::ip::tcp::endpoint remote;
    boost::asio::ip::tcp::endpoint local;

    // First header with this name (case-insensitive); nullopt if none.
    M0_API std::optional<std::string_view> header(std::string_view name) const;
};

struct response_header {
    std::string name;
    std::string value;
};

// One request and its response. Reactor-thread only (post to the reactor to
// use it from elsewhere). Holding the shared_ptr keeps the connection's
// state alive; if the client went away, writes are dropped and
// client_gone() turns true.
class exchange {
public:
    virtual ~exchange() = default;
    virtual const request& req() const = 0;
    virtual boost::asio::io_context& io() = 0;

    // Whole response at once. Content-Length is set from the body (no body is
    // sent for HEAD, 204 and 304). A status below 200 or above 999 is a
    // handler error, answered as 500 (interim 1xx responses are the
    // engine's, e.g. 100 Continue); the same holds for begin().
    virtual void respond(unsigned status, std::vector<response_header> headers, std::string body) = 0;

    // Streamed response: begin, then write/write_file any number of times,
    // then end. With a content_length the response is length-delimited (and
    // the handler must send exactly that many bytes); without one it is
    // chunked on HTTP/1.1 and close-delimited on HTTP/1.0.
    virtual void begin(unsigned status, std::vector<response_header> headers,
                       std::optional<std::uint64_t> content_length) = 0;
    virtual void write(std::string data) = 0;
    // Sends [offset, offset+length) of `fd` with sendfile. The engine takes
    // ownership of fd and closes it.
    virtual void write_file(int fd, std::uint64_t offset, std::uint64_t length) = 0;
    virtual void end() = 0;
    // Something went wrong mid-response: close the connection without a
    // well-formed end, so the client cannot mistake it for a complete one.
    virtual void abort() = 0;

    // Bytes queued but not yet written to the socket (for flow control).
    virtual std::size_t pending_bytes() const = 0;
    // Runs `fn` on the reactor once pending_bytes() drops to `below` or the
    // client is gone (at once if already so). One waiter at a time.
    virtual void when_drained(std::size_t below, std::function<void()> fn) = 0;
    virtual bool client_gone() const = 0;

    // respond() for a handler answering from long-lived data (a fixed route's
    // configured headers and body): nothing is copied into a new vector or
    // string; the head is formatted straight from `headers` and the body
    // copied once into the connection's write buffer. Both need only live
    // for the call. Declared last so existing vtable slots keep their place.
    virtual void respond_borrowed(unsigned status, const std::vector<response_header>& headers,
                                  std::string_view body) = 0;
};

using exchange_ptr = std::shared_ptr<exchange>;

class handler {
public:
    virtual ~handler() = default;
    // Reactor thread. Must eventually answer (respond, or begin..end/abort)
    // unless the client goes away.
    virtual void on_request(exchange_ptr ex) = 0;
};

// Starts serving HTTP/1.1 on every listener of `ctx` with ctx.limits, and adds
// its drain and force-close hooks to ctx. Returns at once; the work runs on
// ctx.io. `h` must outlive the worker loop.
M0_API void serve(worker_context& ctx, handler& h);

// Field syntax (RFC 9110), shared by every handler that validates or
// compares header names, so frontends agree with the engine.

// ASCII case-insensitive equality (header names, tokens; locale-free).
constexpr bool ascii_iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = static_cast<char>(x + 32);
        if (y >= 'A' && y <= 'Z') y = static_cast<char>(y + 32);
        if (x != y) return false;
    }
    return true;
}

// A non-empty RFC 9110 token (tchar+): method names, field names.
constexpr bool is_token(std::string_view s) noexcept {
    if (s.empty()) return false;
    for (char c : s) {
        bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!alnum && std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) return false;
    }
    return true;
}

// Headers the engine writes itself: framing and connection management.
// A handler's copy is dropped (a frontend may refuse it in config instead).
constexpr bool is_engine_owned_header(std::string_view name) noexcept {
    for (std::string_view owned :
         {"Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Date", "Server"}) {
        if (ascii_iequals(name, owned)) return true;
    }
    return false;
}

// Standard reason phrase ("Not Found"), or "Unknown".
M0_API std::string_view reason_phrase(unsigned status) noexcept;

// Percent-decodes `in` ("%2e" → "."); nullopt on a malformed escape.
M0_API std::optional<std::string> percent_decode(std::string_view in);


}  // namespace m0::http
