#include "asgi_handler.hpp"

namespace m0::asgi {

namespace {

bool is_websocket_upgrade(const http::request& req) {
    auto upgrade = req.header("Upgrade");
    return upgrade && http::ascii_iequals(*upgrade, "websocket");
}

}  // namespace

void asgi_handler::on_request(http::exchange_ptr ex) {
    const http::request& req = ex->req();
    if (is_websocket_upgrade(req)) {
        // Until the WebSocket scope lands: a clear answer, never a hang.
        ex->respond(501, {{"Content-Type", "text/plain; charset=utf-8"}},
                    "WebSocket is not supported on ASGI applications yet\n");
        return;
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
    lane_.submit(std::make_unique<asgi_call>(app_, lane_, std::move(ex), std::move(facts)));
}

}  // namespace m0::asgi
