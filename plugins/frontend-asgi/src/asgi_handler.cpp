#include "asgi_handler.hpp"

#include <charconv>
#include <cstdint>

#include <m0/websocket/handshake.hpp>

#include "asgi_websocket.hpp"

namespace m0::asgi {

bool asgi_handler::stream_body(const http::request& req) {
    auto value = req.header("content-length");
    if (!value) return true;
    // The engine validated the digits; a value too large for 64 bits is
    // over any input_buffer.
    std::uint64_t n = 0;
    auto r = std::from_chars(value->data(), value->data() + value->size(), n);
    return r.ec != std::errc() || n > app_.config.input_buffer;
}

void asgi_handler::on_request(http::exchange_ptr ex) {
    const http::request& req = ex->req();
    // A malformed handshake is answered here (400/426) and never reaches
    // the app; the app picks the subprotocol when it accepts.
    std::optional<websocket::handshake_result> handshake;
    if (websocket::is_upgrade_request(req)) {
        handshake = websocket::check_handshake(req, app_.config.websocket.handshake);
        if (!handshake->accepted) {
            ex->respond(handshake->status, std::move(handshake->headers), std::move(handshake->body));
            return;
        }
    }
    request_facts facts;
    // Most paths have nothing to decode: the loop thread reads the raw one.
    if (req.path.find('%') != std::string_view::npos) {
        auto decoded = http::percent_decode(req.path);
        if (!decoded) {
            ex->respond(400, {{"Content-Type", "text/plain; charset=utf-8"}}, "Bad Request\n");
            return;
        }
        facts.path = std::move(*decoded);
        facts.decoded = true;
    }
    if (handshake) {
        lane_.submit(std::make_unique<websocket_call>(app_, lane_, std::move(ex), std::move(facts), std::move(*handshake)));
        return;
    }
    facts.body_streamed = ex->body_pending();
    auto deadline = deadlines_ ? deadlines_->watch(ex) : nullptr;
    lane_.submit(std::make_unique<asgi_call>(app_, lane_, std::move(ex), std::move(facts), std::move(deadline)));
}

}  // namespace m0::asgi
