#pragma once
// A WebSocket connection over the engine's byte_stream (m0/http.hpp): reads
// and answers frames, keeps the connection alive with pings, closes it on
// an idle timeout, runs the close handshake, and finishes with 1001 when
// the reactor drains. The engine keeps owning the socket (timeouts, drain,
// counts); the session only reads and writes through the stream.
//
// Reactor-thread only, like the stream: code on another thread posts to
// io() (a message handed to a worker thread carries the session's
// shared_ptr back with it).
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/steady_timer.hpp>

#include <m0/http.hpp>
#include <m0/websocket/deflate_codec.hpp>
#include <m0/websocket/frame_parser.hpp>
#include <m0/websocket/handshake.hpp>
#include <m0/websocket/prepared_message.hpp>

namespace m0::websocket {

struct session_options {
    std::uint64_t max_message_size = 1024 * 1024;  // larger: close 1009
    // Ping after this long without a byte from the peer; 0 disables.
    std::chrono::nanoseconds ping_interval = std::chrono::seconds(20);
    // After a ping, close (1011) when nothing arrives for this long.
    std::chrono::nanoseconds ping_timeout = std::chrono::seconds(20);
    // Close (1001) after this long without a message either way; 0 disables.
    std::chrono::nanoseconds idle_timeout{0};
    // How long to wait for the peer's close frame after sending ours.
    std::chrono::nanoseconds close_timeout = std::chrono::seconds(5);
    // Reading pauses while more than this is queued to send (a peer that
    // sends faster than it reads gets TCP back-pressure, not a growing buffer).
    std::size_t max_write_buffer = 1024 * 1024;
};

struct message {
    opcode kind = opcode::text;  // text or binary
    std::string data;
};

class session : public std::enable_shared_from_this<session>, private frame_sink {
public:
    using message_handler = std::function<void(const std::shared_ptr<session>& s, message m)>;
    // The connection ended: the peer's close code (1005 if it gave none,
    // 1006 when it vanished without a close frame) or the one m0 sent.
    using close_handler = std::function<void(std::uint16_t code, std::string_view reason)>;

    // Starts reading `stream` (just upgraded with `handshake`'s headers).
    static std::shared_ptr<session> start(std::shared_ptr<http::byte_stream> stream, const session_options& options,
                                          const handshake_result& handshake, message_handler on_message,
                                          close_handler on_close = {});

    // Sends a text or binary message (compressed when negotiated). Dropped
    // once the close handshake has begun.
    void send(opcode kind, std::string_view payload);
    // Sends a message encoded once for many connections, without a copy.
    void send(const prepared_message& m);
    // Whether send(m) would compress: false when permessage-deflate was
    // negotiated with parameters the shared compressed frame does not fit
    // (a smaller window, context takeover), so that a caller holding the
    // payload can send(kind, payload) to compress it for this peer alone.
    bool takes_shared_compressed(const prepared_message& m) const noexcept;
    // Whether this connection compresses its messages at all.
    bool compresses() const noexcept { return deflate_ && deflate_->server_max_window_bits >= 9; }
    // Starts the close handshake with `code` (close_code::...).
    void close(std::uint16_t code, std::string_view reason = {});
    // Stops reading the socket after the bytes already read (their messages
    // are still delivered) until resume_reading(): a consumer whose queue of
    // inbound messages is full slows its peer through TCP instead of
    // buffering. Keepalive pings pause with it (an unread pong is no sign of
    // a dead peer).
    void pause_reading();
    void resume_reading();

    bool is_open() const noexcept { return state_ == state::open; }
    const std::string& subprotocol() const noexcept { return subprotocol_; }
    std::size_t pending_bytes() const { return stream_->pending_bytes(); }
    boost::asio::io_context& io() { return stream_->io(); }

    // Construct through start().
    session(std::shared_ptr<http::byte_stream> stream, const session_options& options,
            const handshake_result& handshake, message_handler on_message, close_handler on_close);

private:
    enum class state { open, closing, closed };
    using clock = std::chrono::steady_clock;

    void read();
    // read() now, or once the write buffer drained below max_write_buffer.
    void continue_reading();
    void on_read(boost::system::error_code ec, std::string_view data);
    void arm_timer();
    void on_timer();
    void finish(std::uint16_t code, std::string_view reason);

    void on_message(opcode kind, std::string payload) override;
    void on_ping(std::string_view payload) override;
    void on_pong(std::string_view payload) override;
    void on_close(std::uint16_t code, std::string_view reason) override;

    std::shared_ptr<http::byte_stream> stream_;
    session_options options_;
    frame_parser parser_;
    std::optional<deflate_params> deflate_;
    std::unique_ptr<deflater> own_deflater_;  // context takeover only
    std::string subprotocol_;
    message_handler on_message_;
    close_handler on_close_;
    state state_ = state::open;
    bool reading_ = false;  // an async_read is on its way
    bool paused_ = false;   // pause_reading()
    boost::asio::steady_timer timer_;
    clock::time_point last_read_;     // any byte from the peer
    clock::time_point last_message_;  // a data message either way
    clock::time_point ping_sent_;
    bool awaiting_pong_ = false;
    clock::time_point close_deadline_;
    std::uint16_t close_code_ = close_code::no_status;
    std::string close_reason_;
};

}  // namespace m0::websocket
