#pragma once
// One HTTP/1.1 connection: reads and parses requests, dispatches them one at
// a time to the handler, writes responses in order, keeps the connection
// alive or closes it. Reactor-thread only.
//
// I/O style: reads are Asio async reads; writes are non-blocking sendmsg /
// sendfile straight from the output queue, waiting for writability only when
// the socket buffer is full, so an inline answer leaves without a detour
// through the scheduler. One steady_timer per connection enforces every
// timeout (see arm_timer).
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <m0/http.hpp>
#include <m0/tls/connection.hpp>
#include <m0/tls/server_context.hpp>

#include "http/connection.hpp"
#include "http/output_queue.hpp"
#include "http/request_data.hpp"
#include "http1/request_parser.hpp"
#include "http1/response_head.hpp"

namespace m0::http::detail {

class server;
class exchange_impl;

class session final : public std::enable_shared_from_this<session>, public connection {
public:
    using clock = std::chrono::steady_clock;

    // proxy_protocol: the connection starts with a PROXY protocol header
    // (a listener marked `proxy`), read before any HTTP. tls: set on a
    // listener marked `tls`: a TLS handshake (after the PROXY header) comes
    // before any HTTP, and every byte after it goes through TLS.
    // http2: the client may speak HTTP/2 instead (ALPN "h2" after the TLS
    // handshake, or the h2c preface as its first bytes); the connection is
    // then handed to the HTTP/2 engine.
    // local: the address the socket was accepted at when the listener knows
    // it (bound to one address); unspecified: asked of the socket.
    session(std::shared_ptr<server> owner, boost::asio::ip::tcp::socket socket, bool proxy_protocol = false,
            std::shared_ptr<const tls::server_context> tls = nullptr, bool http2 = false,
            boost::asio::ip::tcp::endpoint local = {});
    ~session();
    session(const session&) = delete;
    session& operator=(const session&) = delete;

    void start();

    // Called by the server on ctx.on_drain / ctx.on_force_close.
    void drain() override;
    void force_close() override;

    // Called by exchange_impl; calls from an exchange that is not the one
    // being answered are ignored.
    void respond(exchange_impl& ex, unsigned status, const std::vector<response_header>& headers,
                 std::string&& body);
    void respond_borrowed(exchange_impl& ex, unsigned status, const std::vector<response_header>& headers,
                          std::string_view body);
    void begin(exchange_impl& ex, unsigned status, const std::vector<response_header>& headers,
               std::optional<std::uint64_t> content_length);
    void write(exchange_impl& ex, std::string&& data);
    void write_shared(exchange_impl& ex, std::shared_ptr<const std::string> data);
    void write_shared_batch(exchange_impl& ex, std::span<const std::shared_ptr<const std::string>> pieces);
    void write_file(exchange_impl& ex, int fd, std::uint64_t offset, std::uint64_t length);
    // trailers: written after the last chunk of a chunked response, else dropped.
    void end(exchange_impl& ex, const std::vector<response_header>* trailers = nullptr);
    void abort(exchange_impl& ex);
    void set_outcome(exchange_impl& ex, request_outcome o);
    std::size_t pending_bytes() const noexcept { return static_cast<std::size_t>(out_.pending()); }
    void when_drained(std::size_t below, std::function<void()> fn);
    bool client_gone() const noexcept { return gone_; }
    void read_body(exchange_impl& ex, std::size_t max_bytes, body_handler fn);
    bool body_pending(const exchange_impl& ex) const noexcept { return active_ == &ex && body_open_; }
    void on_client_gone(exchange_impl& ex, std::function<void()> fn);
    void on_peer_eof(exchange_impl& ex, std::function<void()> fn);
    void on_drain(exchange_impl& ex, std::function<void()> fn);
    std::shared_ptr<byte_stream> upgrade(exchange_impl& ex, const std::vector<response_header>& headers);

    // Called by byte_stream_impl once the connection was upgraded.
    void stream_read(byte_stream::read_handler fn);
    void stream_write(std::string&& data);
    void stream_write_shared(std::shared_ptr<const std::string> data);
    void stream_on_drain(std::function<void()> fn);
    void stream_close();
    bool stream_closed() const noexcept { return closed_ || close_after_flush_; }
    // The exchange is being destroyed; takes back its buffers for reuse.
    void released(exchange_impl& ex, std::unique_ptr<request_data> data) noexcept;
    boost::asio::io_context& io() noexcept;

private:
    // Frames one body write (Content-Length, chunked or to EOF); `push`
    // queues the payload itself.
    template <class Push>
    void write_body(exchange_impl& ex, std::size_t size, Push push);
    enum class read_phase { idle, head, body, none };

    struct response_state {
        bool begun = false;
        body_framing framing = body_framing::none;
        bool send_body = false;        // false for HEAD and bodiless statuses
        std::uint64_t remaining = 0;   // framing::length: bytes still owed
        unsigned status = 0;
        std::uint64_t body_bytes = 0;  // handed to the connection, for the access log
        request_outcome outcome = request_outcome::ok;
    };

    // Transport: the socket itself, or TLS over it.
    // Reads what is there now into [p, p + cap); would_block when nothing is.
    std::size_t read_now(char* p, std::size_t cap, boost::system::error_code& ec);
    // The read maybe_read issues: into the buffer at rend_, then on_read.
    // socket_first: wait for the socket even if TLS holds bytes (they are
    // an incomplete record).
    void read_async(bool socket_first = false);
    void tls_read_ready();
    // What a TLS wait (transport_wait_tls) ends in: a read, or its error.
    void tls_wait_done(const boost::system::error_code& ec);
    void start_tls();
    void tls_handshake_step();
    void tls_failed(tls::handshake_failure why);
    // The client opened with the h2c preface: yes, no, or too few bytes yet.
    enum class preface { yes, no, maybe };
    preface h2c_preface() const noexcept;
    void hand_over_to_http2();

    // Request side.
    void process();
    bool ensure_read_space(bool may_grow);
    void maybe_read();
    void on_read(const boost::system::error_code& ec, std::size_t n);
    void dispatch();
    void update_read_phase(clock::time_point now);
    // Reads the PROXY protocol header from the buffer: true once it is
    // taken (remote_ and local_ are the proxy's report), false while more
    // bytes are needed or after a malformed header closed the connection.
    bool take_proxy_header();
    void refuse_proxy_header(std::string_view why);
    // Whether forwarding headers are believed on this connection (its peer
    // is in server.forwarded_allow_ips), and applying them to a request.
    void update_trust();
    void resolve_client(request& req) const;

    // Streamed request body.
    // Parses the pending pull's piece from buffered and readily available
    // bytes; waits for the socket if there are none.
    void serve_pull();
    void deliver_pull(const boost::system::error_code& ec, bool last);
    // The streamed body cannot be completed (413, 408, 400; a client that
    // ended its side early: 400): answers on the handler's behalf if its
    // response has not begun, else closes. The pull fails with `ec`, by
    // default the code for `status`.
    void body_failed(unsigned status, std::string_view reason, boost::system::error_code ec = {});
    // Skips the rest of a body its handler left unread; false while more
    // input is needed or once the connection must close instead.
    bool discard_body();
    void mark_gone();
    void drop_drain_fns();
    // The client's FIN arrived while the active exchange's body is no longer
    // read: runs its on_peer_eof callbacks.
    void notify_peer_eof();
    // While the socket is not read for an exchange (a streamed body waiting
    // for its next pull, a full read-ahead buffer), waits for a socket
    // error so a reset is still noticed.
    void watch_for_reset();
    // Hands buffered bytes to the upgraded stream's pending read.
    void deliver_stream_read();
    std::unique_ptr<request_data> take_request_data();

    // Response side.
    // False (after answering 500) when a handler gives a status that is not
    // a final one.
    bool accept_status(const exchange_impl& ex, unsigned status);
    void start_response(unsigned status, const std::vector<response_header>* headers, body_framing framing,
                        std::uint64_t length);
    // Answers a rejected request and closes after it; logs one line.
    void send_error(unsigned status, std::string_view reason);
    // The same without the log line, with this body (text/plain).
    void answer_error(unsigned status, std::string_view body);
    void log_rejection(unsigned status, std::string_view reason) const;
    // "http: reactor 0: 127.0.0.1:5000": who a log line is about.
    std::string log_prefix() const;
    void finish_response();
    // Tells the reactor's recorder (access log, metrics) about the active
    // exchange's response, or about a request rejected before it parsed.
    void record_response();
    void record_rejection(unsigned status, std::uint64_t body_bytes);
    void output_added();
    void streamed_added();
    void flush();
    void on_writable(const boost::system::error_code& ec);
    void notify_drain();

    // Connection end.
    void start_linger();
    void linger();
    bool nothing_more_coming();
    void close();

    // Timeouts.
    clock::time_point after(std::chrono::milliseconds timeout, clock::time_point now) const noexcept;
    void set_read_deadline(clock::time_point t);
    void set_write_deadline(clock::time_point t);
    void arm_timer(clock::time_point now);
    void on_timer(const boost::system::error_code& ec);

    std::shared_ptr<server> server_;
    const http_limits& limits_;
    request_recorder* const recorder_;  // null: no access log, no metrics
    clock::time_point dispatched_at_;   // of the active exchange, when recorded
    std::vector<std::string> captured_headers_;  // response header values the access log asks for
    // While released() ends the response of an exchange being destroyed: its
    // request, which the exchange no longer holds (for record_response).
    const request* released_req_ = nullptr;
    boost::asio::ip::tcp::socket socket_;
    // TLS: the context this connection started from (kept for its SNI
    // contexts), and the connection once started; null on plain TCP.
    std::shared_ptr<const tls::server_context> tls_context_;
    std::unique_ptr<tls::connection> tls_;
    bool tls_wants_write_ = false;  // the last TLS read needs the socket writable first
    boost::asio::steady_timer timer_;
    boost::asio::ip::tcp::endpoint remote_;  // the socket's peer, or the PROXY header's source
    boost::asio::ip::tcp::endpoint local_;
    std::string_view scheme_ = "http";       // "https" when a PROXY v2 header says the client used TLS
    bool proxy_pending_ = false;             // a PROXY header is still expected
    bool trusts_forwarded_ = false;          // remote_ is a trusted proxy
    bool http2_ = false;                     // HTTP/2 is allowed on this connection

    std::unique_ptr<char[]> rbuf_;
    std::size_t rcap_ = 0;
    std::size_t rbegin_ = 0;  // unparsed bytes are [rbegin_, rend_)
    std::size_t rend_ = 0;
    std::size_t linger_discarded_ = 0;

    request_parser parser_;
    std::unique_ptr<request_data> building_;  // the request being parsed
    std::unique_ptr<request_data> spare_;     // recycled from a finished exchange
    exchange_impl* active_ = nullptr;         // dispatched, response not finished
    response_state resp_;
    bool keep_alive_ = false;  // for the active exchange
    bool client_closes_ = false;  // its request said it is the client's last (HTTP/1.0, Connection: close)
    unsigned version_ = 11;    // of the active exchange
    bool is_head_ = false;     // of the active exchange
    std::uint32_t served_ = 0;

    output_queue out_;
    struct drain_waiter {
        std::size_t below;
        std::function<void()> fn;
    };
    std::vector<drain_waiter> drain_waiters_;
    std::vector<std::function<void()>> gone_fns_;  // of the active exchange
    std::vector<std::function<void()>> peer_eof_fns_;  // of the active exchange
    // Told when the worker drains: the active exchange's, or the stream's.
    std::vector<std::function<void()>> drain_fns_;

    // Streamed request body of the active exchange (handler::stream_body).
    struct body_pull {
        std::size_t max = 0;
        body_handler fn;
    };
    body_pull pull_;
    std::string pull_chunk_;      // the parser's sink while a pull is served
    std::string discard_sink_;
    std::uint64_t discarded_ = 0;
    bool body_open_ = false;      // the parser is inside the active exchange's streamed body
    bool continue_owed_ = false;  // the client waits for 100 Continue before sending it
    bool discarding_ = false;     // the response ended first: skipping the rest

    // After 101 Switching Protocols (upgrade).
    bool upgraded_ = false;
    byte_stream::read_handler stream_read_;
    std::vector<std::function<void()>> stream_drain_fns_;

    read_phase phase_ = read_phase::none;
    clock::time_point read_deadline_ = clock::time_point::max();
    clock::time_point idle_since_{};  // when the read phase last became idle
    clock::time_point write_deadline_ = clock::time_point::max();
    clock::time_point armed_ = clock::time_point::max();

    bool processing_ = false;
    bool read_pending_ = false;
    bool write_wait_pending_ = false;
    bool error_wait_pending_ = false;
    bool close_after_flush_ = false;
    bool lingering_ = false;
    bool peer_eof_ = false;
    bool gone_ = false;
    bool closed_ = false;
};

}  // namespace m0::http::detail
