#include <m0/websocket/accept.hpp>

namespace m0::websocket {

std::shared_ptr<session> accept(const http::exchange_ptr& ex, const websocket_options& options,
                                session::message_handler on_message, session::close_handler on_close) {
    auto handshake = check_handshake(ex->req(), options.handshake);
    if (!handshake.accepted) {
        ex->respond(handshake.status, std::move(handshake.headers), std::move(handshake.body));
        return nullptr;
    }
    auto stream = ex->upgrade(handshake.headers);
    if (!stream) {
        // A streamed body still pending, or the client already gone.
        ex->respond(400, {{"Content-Type", "text/plain"}}, "cannot switch protocols on this request\n");
        return nullptr;
    }
    return session::start(std::move(stream), options.session, handshake, std::move(on_message), std::move(on_close));
}

}  // namespace m0::websocket
