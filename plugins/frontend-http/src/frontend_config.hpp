#pragma once
// The `frontend:` section of an http frontend, as validated plain data. The
// runtime (router, fixed_route, static mounts) never sees YAML.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <m0/http.hpp>
#include <m0/static_files/static_config.hpp>
#include <m0/websocket/accept.hpp>

namespace m0 {
class config_node;
}

namespace m0::frontend_http {

struct route_config {
    std::string path;                  // without the trailing '*' of a prefix route
    bool prefix = false;               // `path: /api/*` matches every path starting with /api/
    std::vector<std::string> methods;  // upper case; empty means any method
    unsigned status = 200;
    std::vector<http::response_header> headers;
    std::string body;
    bool echo = false;                 // answer with the request body
    std::chrono::nanoseconds delay{0}; // answer after this long (a reactor timer)
    // `websocket: echo`: a WebSocket endpoint echoing every message.
    std::optional<websocket::websocket_options> websocket;
};

struct frontend_config {
    std::vector<route_config> routes;   // in file order; first match wins
    std::vector<static_files::static_mount_config> statics; // in file order
};

// Validates `section` (the whole `frontend:` map, `type` included). Throws
// m0::config_error located at the offending node.
frontend_config parse_frontend_config(const config_node& section);

}  // namespace m0::frontend_http
