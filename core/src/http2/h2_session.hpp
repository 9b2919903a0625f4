#pragma once
// One HTTP/2 connection (RFC 9113) on libnghttp2's memory API, on the
// reactor thread: bytes read from the transport go to nghttp2, which calls
// back with frames; streams become exchanges handed to the same handler the
// HTTP/1.1 engine serves; nghttp2's output is gathered in one output queue
// and written through the transport. An HTTP/1.1 session hands its
// connection over when ALPN chose "h2" or the client opened with the h2c
// preface.
//
// Memory stays bounded whatever the client does: request bodies by the
// stream windows (granted as handlers read), responses by the handlers'
// own backpressure on pending_bytes(), nghttp2's output by not asking it for
// more while the socket is behind, and the streams by the concurrent-stream
// limit, which also caps running handlers.
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <m0/http.hpp>
#include <m0/tls/connection.hpp>
#include <m0/tls/server_context.hpp>

#include "http/connection.hpp"
#include "http/output_queue.hpp"
#include "http/peer.hpp"
#include "http2/h2_stream.hpp"
#include "http2/settings.hpp"

struct nghttp2_session;

namespace m0 {
class request_recorder;
}
namespace m0::http::detail {
class server;
}

namespace m0::http2 {

class h2_session final : public std::enable_shared_from_this<h2_session>, public http::detail::connection {
public:
    using clock = std::chrono::steady_clock;
    using stream_ptr = std::shared_ptr<h2_stream>;

    // first_bytes: what the HTTP/1.1 session read already (the h2c preface
    // and what followed it); tls: the connection's TLS, its handshake done.
    h2_session(std::shared_ptr<http::detail::server> owner, boost::asio::ip::tcp::socket socket,
               std::unique_ptr<tls::connection> tls, std::shared_ptr<const tls::server_context> tls_context,
               const http::detail::peer_address& peer, const settings& config);
    ~h2_session();

    // The server already lists this connection (server::session_handed_over).
    void start(std::string_view first_bytes);
    void drain() override;
    void force_close() override;
    boost::asio::io_context& io() noexcept;

    // Called by h2_exchange; calls about a stream whose response is
    // finished, or after the connection closed, are ignored.
    void respond(h2_stream& st, unsigned status, const std::vector<http::response_header>& headers,
                 std::string&& body);
    void begin(h2_stream& st, unsigned status, const std::vector<http::response_header>& headers,
               std::optional<std::uint64_t> content_length);
    // push: queues the payload on st.out.
    void write(h2_stream& st, std::uint64_t size, const std::function<void()>& push);
    void write_file(h2_stream& st, int fd, std::uint64_t offset, std::uint64_t length);
    void end(h2_stream& st, const std::vector<http::response_header>* trailers);
    void abort(h2_stream& st);
    void when_drained(h2_stream& st, std::size_t below, std::function<void()> fn);
    bool client_gone(const h2_stream& st) const noexcept { return st.gone || closed_; }
    void read_body(h2_stream& st, std::size_t max_bytes, http::body_handler fn);
    void on_client_gone(h2_stream& st, std::function<void()> fn);
    void on_drain(h2_stream& st, std::function<void()> fn);
    // The exchange is being destroyed.
    void released(h2_stream& st) noexcept;
    // RFC 8441: answers an extended CONNECT's handshake with 200 and hands
    // the stream over as a byte stream; null for any other request.
    std::shared_ptr<http::byte_stream> upgrade(const std::shared_ptr<h2_stream>& st,
                                               const std::vector<http::response_header>& headers);

    // Called by h2_byte_stream.
    void stream_read(h2_stream& st, http::byte_stream::read_handler fn);
    void stream_write(h2_stream& st, const std::function<void()>& push);
    void stream_on_drain(h2_stream& st, std::function<void()> fn);
    void stream_close(h2_stream& st);
    bool stream_closed(const h2_stream& st) const noexcept { return st.ended || client_gone(st); }

    // nghttp2 callbacks (h2_session.cpp), public for the C trampolines.
    int on_begin_headers_frame(std::int32_t stream_id);
    int on_begin_headers(std::int32_t stream_id);
    int on_header(std::int32_t stream_id, bool trailer, std::string_view name, std::string_view value);
    int on_frame_recv(std::uint8_t type, std::uint8_t flags, std::int32_t stream_id, bool ping_ack);
    int on_data(std::int32_t stream_id, const std::uint8_t* data, std::size_t len);
    int on_stream_close(std::int32_t stream_id, std::uint32_t error_code);
    void on_frame_sent(std::uint8_t type, std::uint8_t flags, std::int32_t stream_id, std::uint32_t goaway_code);
    void on_invalid_frame();
    long read_response(h2_stream& st, std::uint8_t* buf, std::size_t length, std::uint32_t* flags);

private:
    h2_stream* find(std::int32_t stream_id) noexcept;
    // Head complete (and body, unless streamed): to the handler, or to the
    // waiting line while as many handlers run as streams are allowed.
    void head_ready(h2_stream& st);
    void request_complete(h2_stream& st);
    void dispatch(const stream_ptr& st);
    void dispatch_waiting();
    bool make_request(h2_stream& st);
    // Answers on the engine's behalf (431, 405, 413, 408), with no handler
    // (http/rejection.hpp): `reason` goes to the log.
    void answer_error(h2_stream& st, unsigned status, std::string_view reason);
    void submit_head(h2_stream& st, unsigned status, const std::vector<http::response_header>* headers,
                     std::optional<std::uint64_t> content_length, bool with_body);
    bool accept_status(h2_stream& st, unsigned status);
    void finish(h2_stream& st);
    void recycle(h2_stream& st) noexcept;
    void record(const h2_stream& st);
    void reset_stream(h2_stream& st, std::uint32_t error_code);
    void resume(h2_stream& st);
    void serve_pull(h2_stream& st);
    void deliver_stream_read(h2_stream& st);
    void fail_pull(h2_stream& st, boost::system::error_code ec);
    void mark_gone(h2_stream& st);
    // Callbacks no one will run, destroyed from a posted handler: one may
    // hold the last reference to its exchange or byte stream.
    void drop_later(std::vector<std::function<void()>>& fns);
    void notify_drained(h2_stream& st);
    // Spends one unit of the connection's budget for resets and invalid
    // frames; GOAWAY ENHANCE_YOUR_CALM once it is gone.
    void charge_abuse();
    void terminate(std::uint32_t error_code);

    // I/O.
    void feed(const char* data, std::size_t n);
    void read_more();
    void on_read(const boost::system::error_code& ec, std::size_t n);
    void tls_read_ready();
    // What a TLS wait (transport_wait_tls) ends in: a read, or its error.
    void tls_wait_done(const boost::system::error_code& ec);
    // TLS: waits until a read may make progress (transport_wait_tls).
    void wait_tls(bool socket_first);
    // Takes nghttp2's output into the queue (up to the high-water mark)
    // and writes it.
    void send();
    void send_soon();
    void flush();
    void on_writable(const boost::system::error_code& ec);
    // Closes once nothing more will be read or written.
    void maybe_finish();
    void send_continue(h2_stream& st);  // the interim 100 of Expect: 100-continue
    // After the client's EOF neither WINDOW_UPDATE nor DATA can come: a
    // stream whose output waits for window, or whose request body is not
    // whole, would never end (its handler learns the client is gone).
    bool unfinishable(const h2_stream& st) const;
    void reset_unfinishable();
    // The close: what TLS holds and its close_notify first (under the write
    // timeout: http/transport.hpp), then linger().
    void start_linger();
    // Half-close, then read until the client closes or the linger timeout.
    void linger();
    void close();

    void arm_timer();
    void on_timer(const boost::system::error_code& ec);
    std::string log_prefix() const;

    std::shared_ptr<http::detail::server> server_;
    const http_limits& limits_;
    const settings& config_;
    request_recorder* const recorder_;
    boost::asio::ip::tcp::socket socket_;
    std::unique_ptr<tls::connection> tls_;
    std::shared_ptr<const tls::server_context> tls_context_;  // keeps tls_'s SSL_CTX alive
    http::detail::peer_address peer_;
    boost::asio::steady_timer timer_;
    nghttp2_session* ng_ = nullptr;

    std::unordered_map<std::int32_t, stream_ptr> streams_;  // open in nghttp2
    std::deque<stream_ptr> waiting_;
    std::uint32_t running_ = 0;  // exchanges handed out and not released
    std::uint32_t served_ = 0;
    // Streams the engine itself resets (an abort, a stalled reader, a
    // response done before its request): not charged to the client.
    std::vector<std::int32_t> own_resets_;
    std::int32_t highest_stream_ = -1;  // the highest id a client's HEADERS named (-1: none yet)
    static constexpr std::size_t max_skipped_ranges = 16;
    std::vector<std::pair<std::int32_t, std::int32_t>> skipped_;  // ids the client jumped over

    static constexpr std::size_t max_spare_requests = 16;
    std::vector<std::unique_ptr<http::detail::request_data>> spare_data_;
    // The time of the current pass (a read fed to nghttp2, a send), for
    // the per-stream clocks: one clock read per pass, not per frame.
    clock::time_point now_{};
    std::unique_ptr<char[]> rbuf_;
    http::detail::output_queue out_;

    // The abuse budget (settings::reset_burst, reset_rate).
    double abuse_tokens_ = 0;
    clock::time_point abuse_refilled_{};

    clock::time_point last_read_{};
    clock::time_point idle_since_{};  // no stream open and no handler running since
    clock::time_point blocked_since_ = clock::time_point::max();  // output waiting for the socket
    clock::time_point ping_sent_ = clock::time_point::max();
    clock::time_point linger_until_ = clock::time_point::max();

    bool read_pending_ = false;
    bool read_paused_ = false;   // output backlog: the client must read first
    bool tls_wants_write_ = false;
    bool write_wait_pending_ = false;
    bool sending_ = false;
    bool send_posted_ = false;
    bool draining_ = false;
    bool goaway_sent_ = false;
    bool peer_eof_ = false;
    bool lingering_ = false;
    bool closed_ = false;
};

}  // namespace m0::http2
