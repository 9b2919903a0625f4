#pragma once
// The one call a frontend makes for a WebSocket route: check the handshake,
// refuse it with its 400/426 answer, or switch protocols and start a session.
#include <memory>

#include <m0/http.hpp>
#include <m0/websocket/handshake.hpp>
#include <m0/websocket/session.hpp>

namespace m0::websocket {

struct websocket_options {
    handshake_options handshake;
    session_options session;
};

// Reactor thread. Null when the request was answered instead (refused, or
// the connection could not switch).
std::shared_ptr<session> accept(const http::exchange_ptr& ex, const websocket_options& options,
                                session::message_handler on_message, session::close_handler on_close = {});

}  // namespace m0::websocket
