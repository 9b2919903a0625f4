#pragma once
// The `frontend:` section of a WSGI deployment, validated.
#include <cstddef>
#include <string>
#include <vector>

#include <m0/static_files/static_config.hpp>

namespace m0 {
class config_node;
}

namespace m0::wsgi {

struct settings {
    std::string app;          // "package.module:callable"
    std::string url_prefix;   // SCRIPT_NAME: "" or "/mount" (no trailing '/')
    std::string chdir;        // absolute, or empty
    // Served natively (no Python) by the shared static-file library.
    std::vector<static_files::static_mount_config> statics;
    std::size_t stream_buffer = 1 << 20;  // queued bytes before a streaming app waits
    std::size_t input_buffer = 64 << 10;  // request bodies above it stream through wsgi.input
    bool multiprocess = false;            // server.workers > 1 (one interpreter per process)
};

// Throws m0::config_error naming the offending key.
settings read_settings(const config_node& section, const config_node& root);

}  // namespace m0::wsgi
