#pragma once
// The native WebSocket echo (`websocket: echo`): every text or binary
// message goes back as it came. Autobahn's fuzzing client runs against it.
#include <m0/http.hpp>
#include <m0/websocket/accept.hpp>

namespace m0::frontend_http {

// Reactor thread: answers the handshake (or its refusal) and echoes.
void serve_websocket_echo(const http::exchange_ptr& ex, const websocket::websocket_options& options);

}  // namespace m0::frontend_http
