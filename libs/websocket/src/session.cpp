#include <m0/websocket/session.hpp>

#include <algorithm>
#include <utility>

namespace m0::websocket {
namespace {

parser_options parser_options_for(const session_options& options, const handshake_result& handshake) {
    parser_options p;
    p.max_message_size = options.max_message_size;
    if (handshake.deflate) {
        p.deflate = true;
        p.client_max_window_bits = handshake.deflate->client_max_window_bits;
        p.client_no_context_takeover = handshake.deflate->client_no_context_takeover;
    }
    return p;
}

}  // namespace

std::shared_ptr<session> session::start(std::shared_ptr<http::byte_stream> stream, const session_options& options,
                                        const handshake_result& handshake, message_handler on_message,
                                        close_handler on_close) {
    auto s = std::make_shared<session>(std::move(stream), options, handshake, std::move(on_message),
                                       std::move(on_close));
    std::weak_ptr<session> weak = s;
    s->stream_->on_drain([weak] {
        if (auto self = weak.lock()) self->close(close_code::going_away, "server shutting down");
    });
    s->arm_timer();
    s->read();
    return s;
}

session::session(std::shared_ptr<http::byte_stream> stream, const session_options& options,
                 const handshake_result& handshake, message_handler on_message, close_handler on_close)
    : stream_(std::move(stream)),
      options_(options),
      parser_(parser_options_for(options, handshake)),
      deflate_(handshake.deflate),
      subprotocol_(handshake.subprotocol),
      on_message_(std::move(on_message)),
      on_close_(std::move(on_close)),
      timer_(stream_->io()),
      last_read_(clock::now()),
      last_message_(last_read_) {
    // Our frames can only be compressed with a window the peer accepts;
    // zlib has no 256-byte window, so at 8 bits m0 sends plain frames.
    if (deflate_ && !deflate_->server_no_context_takeover && deflate_->server_max_window_bits >= 9)
        own_deflater_ = std::make_unique<deflater>(deflate_->server_max_window_bits, deflate_->level);
}

void session::read() {
    if (reading_ || paused_ || state_ == state::closed) return;
    reading_ = true;
    stream_->async_read([self = shared_from_this()](boost::system::error_code ec, std::string_view data) {
        self->on_read(ec, data);
    });
}

void session::continue_reading() {
    if (stream_->pending_bytes() > options_.max_write_buffer) {
        stream_->when_drained(options_.max_write_buffer / 2, [self = shared_from_this()] { self->read(); });
        return;
    }
    read();
}

void session::pause_reading() { paused_ = true; }

void session::resume_reading() {
    if (!paused_) return;
    paused_ = false;
    continue_reading();
}

void session::on_read(boost::system::error_code ec, std::string_view data) {
    reading_ = false;
    if (state_ == state::closed) return;
    if (ec) {
        // Gone without a close frame (1006), or the close we sent went
        // unanswered before the stream ended.
        if (state_ == state::closing) finish(close_code_, close_reason_);
        else finish(1006, "connection lost");
        return;
    }
    last_read_ = clock::now();
    if (auto err = parser_.feed(data, *this)) {
        if (state_ == state::open) stream_->write(encode_close_frame(err.code, err.reason));
        // Failing the connection (RFC 6455 7.1.7): the close frame leaves
        // with the stream's lingering close; nothing more is read.
        finish(err.code, err.reason);
        return;
    }
    if (state_ == state::closed) return;
    continue_reading();
}

void session::on_message(opcode kind, std::string payload) {
    if (state_ != state::open) return;  // after our close frame: read and dropped
    last_message_ = clock::now();
    if (on_message_) on_message_(shared_from_this(), message{kind, std::move(payload)});
}

void session::on_ping(std::string_view payload) {
    if (state_ == state::open) stream_->write(encode_frame(opcode::pong, payload));
}

void session::on_pong(std::string_view) { awaiting_pong_ = false; }

void session::on_close(std::uint16_t code, std::string_view reason) {
    if (state_ == state::open) {
        // Echo the peer's code (an empty close answers an empty one).
        stream_->write(code == close_code::no_status ? encode_frame(opcode::close, {})
                                                     : encode_close_frame(code, {}));
    }
    finish(code, reason);
}

void session::send(opcode kind, std::string_view payload) {
    if (state_ != state::open) return;
    last_message_ = clock::now();
    if (deflate_ && deflate_->server_max_window_bits >= 9) {
        std::string deflated;
        if (own_deflater_) own_deflater_->compress(payload, deflated, false);
        else deflater::shared(deflate_->server_max_window_bits, deflate_->level).compress(payload, deflated, true);
        std::string frame = encode_frame_header(kind, deflated.size(), true, true);
        frame += deflated;
        stream_->write(std::move(frame));
        return;
    }
    std::string frame = encode_frame_header(kind, payload.size());
    frame.reserve(frame.size() + payload.size());
    frame += payload;
    stream_->write(std::move(frame));
}

bool session::takes_shared_compressed(const prepared_message& m) const noexcept {
    return deflate_ && deflate_->server_no_context_takeover && deflate_->server_max_window_bits == 15 &&
           m.compressed_frame();
}

void session::send(const prepared_message& m) {
    if (state_ != state::open) return;
    last_message_ = clock::now();
    stream_->write_shared(takes_shared_compressed(m) ? m.compressed_frame() : m.plain_frame());
}

void session::close(std::uint16_t code, std::string_view reason) {
    if (state_ != state::open) return;
    stream_->write(encode_close_frame(code, reason));
    state_ = state::closing;
    close_code_ = code;
    close_reason_ = std::string(reason);
    close_deadline_ = clock::now() + options_.close_timeout;
    arm_timer();
}

void session::finish(std::uint16_t code, std::string_view reason) {
    if (state_ == state::closed) return;
    state_ = state::closed;
    timer_.cancel();
    stream_->close();
    // Handlers may hold the session (an echo's closure does): drop them so
    // nothing keeps it alive past its stream.
    auto on_close = std::exchange(on_close_, {});
    on_message_ = {};
    if (on_close) on_close(code, reason);
}

void session::arm_timer() {
    clock::time_point next = clock::time_point::max();
    if (state_ == state::closing) {
        next = close_deadline_;
    } else if (state_ == state::open) {
        if (options_.ping_interval.count() > 0)
            next = awaiting_pong_ ? ping_sent_ + options_.ping_timeout : last_read_ + options_.ping_interval;
        if (options_.idle_timeout.count() > 0) next = std::min(next, last_message_ + options_.idle_timeout);
    }
    if (next == clock::time_point::max()) return;
    // The deadline moves with traffic without re-arming: the timer wakes at
    // the old one, finds it moved, and sleeps again.
    timer_.expires_at(next);
    timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (!ec) self->on_timer();
    });
}

void session::on_timer() {
    const auto now = clock::now();
    if (state_ == state::closed) return;
    if (state_ == state::closing) {
        if (now >= close_deadline_) finish(close_code_, close_reason_);
        else arm_timer();
        return;
    }
    if (paused_) {
        // Not reading: a pong would go unseen, so the peer counts as alive.
        awaiting_pong_ = false;
        last_read_ = now;
    }
    if (options_.ping_interval.count() > 0) {
        if (awaiting_pong_ && last_read_ > ping_sent_) awaiting_pong_ = false;  // any byte proves the peer alive
        if (awaiting_pong_ && now >= ping_sent_ + options_.ping_timeout) {
            stream_->write(encode_close_frame(close_code::internal_error, "keepalive ping timeout"));
            finish(close_code::internal_error, "keepalive ping timeout");
            return;
        }
        if (!awaiting_pong_ && now >= last_read_ + options_.ping_interval) {
            stream_->write(encode_frame(opcode::ping, {}));
            ping_sent_ = now;
            awaiting_pong_ = true;
        }
    }
    if (options_.idle_timeout.count() > 0 && now >= last_message_ + options_.idle_timeout) {
        close(close_code::going_away, "idle timeout");
        return;
    }
    arm_timer();
}

}  // namespace m0::websocket
