#pragma once
// The `frontend:` section of an ASGI deployment, validated.
#include <cstddef>
#include <string>

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
};

// Throws m0::config_error naming the offending key.
settings read_settings(const config_node& section);

}  // namespace m0::asgi
