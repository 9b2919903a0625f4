#pragma once
// The `frontend:` section of an ASGI deployment, validated.
#include <cstddef>
#include <string>

#include <m0/websocket/accept.hpp>

namespace m0 {
class config_node;
}

namespace m0::asgi {

enum class lifespan_mode { auto_, on, off };

struct settings {
    std::string app;    // "package.module:attr"
    std::string chdir;  // absolute, or empty
    lifespan_mode lifespan = lifespan_mode::auto_;
    std::size_t send_buffer = 64 * 1024;  // queued response bytes before send() waits
    // Request bodies with a Content-Length up to this are read whole before
    // the app runs; larger and chunked ones stream through receive() in
    // pieces of at most this.
    std::size_t input_buffer = 64 * 1024;
    // The websocket scope: the session keys of libs/websocket (the
    // application picks the subprotocol itself, in websocket.accept).
    websocket::websocket_options websocket;
    // Inbound messages queued for the app before m0 stops reading the socket.
    std::size_t websocket_max_queue = 16;
};

// Throws m0::config_error naming the offending key.
settings read_settings(const config_node& section);

}  // namespace m0::asgi
