#pragma once
// The core's HTTP engines (HTTP/1.1, and HTTP/2 on the same exchanges), as
// frontends see them (docs/architecture.md).
//
// The engine accepts on a reactor's listeners, parses requests (no Python, no
// GIL), and hands each complete request to a handler on the reactor thread as
// an `exchange` (or, for a handler that streams request bodies, each request
// head: see handler::stream_body). The handler answers at once (native routes) or later, from a
// completion on the same reactor thread (executor jobs). Requests on one
// connection are dispatched one at a time, so pipelined responses leave in
// order. The engine owns Content-Length / Transfer-Encoding / Connection /
// Date / Server; handlers never set them.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <m0/api.hpp>
#include <m0/http_fields.hpp>
#include <m0/reactor.hpp>
#include <m0/tls_info.hpp>

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
    // The prefix of the mount that routed this request ("/api"; "" for a
    // mount at "/" and in a deployment without `mounts:`). `path` starts
    // with it; an application sees it as SCRIPT_NAME (ASGI root_path) and
    // the rest of `path` as its own path. Set by the core before the
    // handler runs.
    std::string_view script_name;
    unsigned version = 11;          // 10, 11, or 20 (HTTP/2)
    std::vector<header_field> headers;  // arrival order, duplicates kept
    std::string body;               // whole body, de-chunked; empty when streamed
    bool keep_alive = true;         // what the client asked for
    // The client and the address it reached. Behind a proxy (a PROXY
    // protocol listener, or forwarding headers from a peer in
    // server.forwarded_allow_ips) these are what the proxy reported, not the
    // socket's; `remote` has port 0 when the proxy did not say.
    boost::asio::ip::tcp::endpoint remote;
    boost::asio::ip::tcp::endpoint local;
    // "http", or "https" when a trusted proxy says the client used TLS.
    std::string_view scheme = "http";
    // On a listener marked `tls`: the connection's TLS session (version,
    // cipher, SNI, the client's certificate); null on a plain one.
    const tls_info* tls = nullptr;

    // First header with this name (case-insensitive); nullopt if none.
    M0_API std::optional<std::string_view> header(std::string_view name) const;
};

struct response_header {
    std::string name;
    std::string value;
};

class byte_stream;

// How a request ended, for the access log (%(outcome)s, JSON "outcome") and
// the metrics: `ok` unless the server answered for the application —
// `timeout` at its request deadline (m0/deadline.hpp).
enum class request_outcome : std::uint8_t { ok, timeout };
M0_API std::string_view to_string(request_outcome o) noexcept;

// Receives one piece of a streamed request body on the reactor thread:
// `chunk` is non-empty unless `last` (the body ended; it may still carry the
// final bytes) or `ec` is set. Errors: asio::error::message_size (over
// http.max_body_size: the engine answered 413), timed_out (body_timeout:
// 408), eof (the client ended the connection before the body's end: the
// engine answered 400 unless the response had begun),
// connection_reset (the client is gone), operation_aborted (the response
// already ended), already_started (another pull is pending),
// errc::bad_message (malformed chunked framing: 400).
using body_handler = std::function<void(boost::system::error_code ec, std::string chunk, bool last)>;

// One request and its response. Reactor-thread only (post to the reactor to
// use it from elsewhere). Holding the shared_ptr keeps the connection's
// state alive; if the client went away, writes are dropped and
// client_gone() turns true.
//
// Half-close rule: a client that shuts down its sending side after its
// request (FIN) is not gone: it still gets the whole response, streamed or
// not, and the connection closes after it. The client is gone when a write
// fails, a read reports a reset, a timeout or force-close ends the
// connection, or the handler aborts. A handler that wants to hear of the
// FIN itself (an ASGI app awaiting receive() after its body) asks with
// on_peer_eof().
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
    // Runs `fn` (posted to the reactor) once pending_bytes() drops to
    // `below` or the client is gone (soon if already so). Any number of
    // waiters; each runs once.
    virtual void when_drained(std::size_t below, std::function<void()> fn) = 0;
    virtual bool client_gone() const = 0;

    // respond() for a handler answering from long-lived data (a fixed route's
    // configured headers and body): nothing is copied into a new vector or
    // string; the head is formatted straight from `headers` and the body
    // copied once into the connection's write buffer. Both need only live
    // for the call. Declared last so existing vtable slots keep their place.
    virtual void respond_borrowed(unsigned status, const std::vector<response_header>& headers,
                                  std::string_view body) = 0;

    // Pulls the next piece of the request body, at most `max_bytes` (0 is
    // taken as 1); `fn` runs posted to the reactor. One pull at a time. The
    // engine reads the socket only while a pull is pending, so a handler
    // that pulls slowly slows the client down (TCP flow control); an
    // `Expect: 100-continue` is answered on the first pull, and not at all
    // if the response begins first. On an exchange whose body was read
    // whole (request::body), the first pull gets a copy of it with `last`.
    // A body left unread when the response ends is discarded up to a bound,
    // and beyond it the connection closes after the response.
    virtual void read_body(std::size_t max_bytes, body_handler fn) = 0;
    // True while a streamed body still has bytes to come (none pulled yet,
    // or not up to its end).
    virtual bool body_pending() const = 0;

    // Runs `fn` once, posted to the reactor, when the client is gone (see
    // the half-close rule above): at once if it already is. Not run if the
    // response ends first. Any number of callbacks. A reset is seen at
    // once while the handler works (the engine reads ahead, or, while a
    // streamed body waits for its next pull, watches for socket errors).
    virtual void on_client_gone(std::function<void()> fn) = 0;

    // Answers 101 Switching Protocols with `headers` (Upgrade and the like;
    // the engine adds Connection: upgrade) and hands the connection over as
    // a byte stream; the exchange is finished. Null, and nothing sent, when
    // the connection cannot switch: the response has begun, the request is
    // HTTP/1.0, a streamed body is still pending, or the client is gone.
    virtual std::shared_ptr<byte_stream> upgrade(std::vector<response_header> headers) = 0;

    // Runs `fn` once, posted to the reactor, when the reactor starts draining
    // while this response is in progress (at once if it already is): a held
    // response (an SSE stream) should then end. Not run if the response
    // ends first. Any number of callbacks. A handler that does not listen
    // is force-closed at the drain deadline.
    virtual void on_drain(std::function<void()> fn) = 0;

    // end() with a trailer section: on a chunked response the fields follow
    // the last chunk; on any other framing (Content-Length, HTTP/1.0, no
    // body) there is no place for them and they are dropped. The handler
    // validates them (tokens, no CR/LF); engine-owned names are dropped as
    // in headers. Declared last so existing vtable slots keep their place.
    virtual void end_with_trailers(std::vector<response_header> trailers) = 0;

    // write() of a payload shared by many responses (a broadcast to held
    // streams): queued without a copy per connection; the exchange holds a
    // reference until it is written.
    virtual void write_shared(std::shared_ptr<const std::string> data) = 0;

    // Runs `fn` once, posted to the reactor, when the client has shut down
    // its sending side (FIN) while this response is not finished and the
    // request body is no longer being read: at once if that happened
    // already. The client is not gone (the half-close rule): the response is
    // still written. A FIN inside a streamed body is the cut-short upload
    // instead (read_body fails with eof; 400 if the response has not begun,
    // and then `fn` never runs). Not run if the response ends first, nor
    // after a reset (on_client_gone tells that). Seen as far as the engine
    // reads ahead: behind a full read-ahead buffer of pipelined requests it
    // is not. Any number of callbacks. Declared last so existing vtable
    // slots keep their place.
    virtual void on_peer_eof(std::function<void()> fn) = 0;

    // write_shared() of several payloads at once (the messages a held stream
    // has waiting): one chunk on a chunked response, and the pieces
    // gathered into as few writes to the socket as the engine can, instead
    // of one write each. Empty payloads are
    // skipped. Declared last so existing vtable slots keep their place.
    virtual void write_shared_batch(std::span<const std::shared_ptr<const std::string>> pieces) = 0;

    // How this request ended, when not `ok` (the core's deadline watchdog
    // sets `timeout` before it answers); recorded with the response. Any
    // time before the response ends.
    virtual void set_outcome(request_outcome o) { (void)o; }
};

// A connection after 101 Switching Protocols: raw bytes both ways, owned by
// the engine. Reactor-thread only. It counts as a live connection: on drain
// the on_drain callbacks run (the owner finishes its protocol, e.g. a
// WebSocket close 1001, then calls close()); force-close closes it.
class byte_stream {
public:
    // `data` is valid during the call only. At end of stream ec is
    // asio::error::eof; after close() or force-close, operation_aborted.
    using read_handler = std::function<void(boost::system::error_code ec, std::string_view data)>;

    virtual ~byte_stream() = default;
    virtual boost::asio::io_context& io() = 0;
    // Reads what is available, at least one byte; `fn` runs posted to the
    // reactor. Bytes that followed the request head arrive first. One read
    // at a time.
    virtual void async_read(read_handler fn) = 0;
    virtual void write(std::string data) = 0;
    // Queues a payload shared by many streams (a broadcast) without a copy
    // per connection: the stream holds a reference until it is written.
    virtual void write_shared(std::shared_ptr<const std::string> data) = 0;
    virtual std::size_t pending_bytes() const = 0;
    // As exchange::when_drained: any number of waiters, each runs once when
    // pending_bytes() <= below or the stream is closed.
    virtual void when_drained(std::size_t below, std::function<void()> fn) = 0;
    // Runs `fn` once (posted) when the reactor starts draining; at once if it
    // already is. The owner should then finish and close().
    virtual void on_drain(std::function<void()> fn) = 0;
    // Writes what is queued, then closes (a lingering close, so the peer
    // reads it all). Pending reads end with operation_aborted.
    virtual void close() = 0;
    virtual bool closed() const = 0;
};

using exchange_ptr = std::shared_ptr<exchange>;

class handler {
public:
    virtual ~handler() = default;
    // Reactor thread. Must eventually answer (respond, or begin..end/abort)
    // unless the client goes away.
    virtual void on_request(exchange_ptr ex) = 0;
    // Reactor thread, once a request head with a body is parsed. True: the
    // exchange goes to on_request at once and the handler pulls the body
    // with exchange::read_body. False (the default): on_request comes with
    // the whole body in request::body.
    virtual bool stream_body(const request& req) {
        (void)req;
        return false;
    }
};

// Starts serving HTTP/1.1 on every listener of `ctx` with ctx.limits, and adds
// its drain and force-close hooks to ctx. Returns at once; the work runs on
// ctx.io. `h` must outlive the reactor loop. When ctx.mount is set (one mount
// of several) it only registers `h` with the core's mount router.
M0_API void serve(reactor_context& ctx, handler& h);

// Standard reason phrase ("Not Found"), or "Unknown".
M0_API std::string_view reason_phrase(unsigned status) noexcept;

// Percent-decodes `in` ("%2e" → "."); nullopt on a malformed escape.
M0_API std::optional<std::string> percent_decode(std::string_view in);


}  // namespace m0::http
