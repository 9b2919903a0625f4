// The WebSocket side of a held connection (hold_mode::ws): the 101 and the
// session on the reactor, inbound messages to the frontend's handler, and
// the `connection` calls the application makes from any thread.
#include "held_connection.hpp"

#include <m0/websocket/handshake.hpp>

namespace m0::realtime {

void held_connection::start_ws(std::vector<http::response_header> headers) {
    auto handshake = websocket::check_handshake(ex_->req(), config_.websocket.handshake);
    auto ex = std::move(ex_);
    if (!handshake.accepted) {
        // The view was told by m0.hold(); a request that changed since cannot happen.
        ex->respond(handshake.status, std::move(handshake.headers), std::move(handshake.body));
        finish();
        return;
    }
    // The view's extra headers (Set-Cookie) ride on the 101.
    for (auto& h : headers) handshake.headers.push_back(std::move(h));
    stream_ = ex->upgrade(handshake.headers);
    if (!stream_) {
        ex->respond(400, {{"Content-Type", "text/plain"}}, "cannot switch protocols on this request\n");
        finish();
        return;
    }
    auto weak = weak_from_this();
    stream_->on_drain([weak] {
        // The session sends 1001 itself; the hold only counts it.
        if (auto self = weak.lock(); self && !self->ended_)
            self->counters_.ended_by_drain.fetch_add(1, std::memory_order_relaxed);
    });
    session_ = websocket::session::start(
        stream_, config_.websocket.session, handshake,
        [weak](const std::shared_ptr<websocket::session>&, websocket::message m) {
            if (auto self = weak.lock()) self->on_inbound(std::move(m));
        },
        // A hold without channels has no other owner: the session keeps it
        // until it ends (finish() lets go of the session, which breaks the cycle).
        [self = shared_from_this()](std::uint16_t code, std::string_view) { self->on_ws_closed(code); });
    if (overflowed_) {
        end_stream();
        return;
    }
    pump();
}

void held_connection::on_inbound(websocket::message m) {
    if (ended_ || !inbound_) return;
    const bool more = inbound_->on_message(
        shared_from_this(), m.kind == websocket::opcode::binary ? payload_kind::binary : payload_kind::text,
        std::move(m.data));
    if (!more && session_) session_->pause_reading();
}

void held_connection::resume_reading() {
    if (session_) session_->resume_reading();
}

void held_connection::on_ws_closed(std::uint16_t code) {
    close_code_ = code;
    finish();
}

void held_connection::send_frame(const message& m) {
    // The shared frame, with no copy per connection; a peer whose
    // permessage-deflate parameters the shared compressed frame does not
    // fit (a smaller window) gets the payload compressed for it alone.
    if (session_->compresses() && !session_->takes_shared_compressed(*m.ws))
        session_->send(m.ws_kind == payload_kind::binary ? websocket::opcode::binary : websocket::opcode::text, *m.data);
    else
        session_->send(*m.ws);
}

ws_format held_connection::frame_format(payload_kind kind) const noexcept {
    const auto& deflate = config_.websocket.handshake.deflate;
    // The shared compressed frame fits connections that negotiated
    // server_no_context_takeover at the full window (session::send).
    return ws_format{kind, deflate.enabled && deflate.server_no_context_takeover && deflate.server_max_window_bits == 15,
                     deflate.level};
}

void held_connection::send(std::string_view data, payload_kind kind) {
    if (!reactor_) return;
    auto m = make_ws_message(data, frame_format(kind));
    reactor_->post([self = shared_from_this(), m = std::move(m)] { self->deliver(m); });
}

void held_connection::subscribe(std::string_view channel) {
    if (registry_) registry_->add_channel(*this, channel);
}

void held_connection::unsubscribe(std::string_view channel) {
    if (registry_) registry_->remove_channel(*this, channel);
}

void held_connection::close(std::uint16_t code, std::string_view reason) {
    if (!reactor_) return;
    reactor_->post([self = shared_from_this(), code, reason = std::string(reason)] {
        if (self->session_) self->session_->close(code, reason);
    });
}

}  // namespace m0::realtime
