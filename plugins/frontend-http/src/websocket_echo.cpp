#include "websocket_echo.hpp"

namespace m0::frontend_http {

void serve_websocket_echo(const http::exchange_ptr& ex, const websocket::websocket_options& options) {
    websocket::accept(ex, options, [](const std::shared_ptr<websocket::session>& s, websocket::message m) {
        s->send(m.kind, m.data);
    });
}

}  // namespace m0::frontend_http
