#pragma once
// The `realtime:` section (plugins/realtime-ws/README.md lists every key).
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include <m0/config.hpp>
#include <m0/websocket/accept.hpp>

#include "redis_url.hpp"

namespace m0::realtime {

enum class overflow_policy {
    close,        // end the held stream (its client reconnects and resynchronises)
    drop_oldest,  // drop the oldest queued message to make room
};

struct settings {
    // Bounds on what waits for one slow client: messages not yet handed to
    // the connection's write buffer.
    std::size_t outbox_max_bytes = 1 << 20;
    std::size_t outbox_max_messages = 1024;
    overflow_policy overflow = overflow_policy::close;
    std::chrono::milliseconds sse_heartbeat{15000};

    // The bus: nullopt for `memory` (this process only), else the Redis server.
    std::optional<redis_address> redis;
    std::string bus_prefix = "m0:";  // Redis channel name = prefix + channel
    std::size_t redis_queue_max_messages = 65536;
    std::chrono::milliseconds redis_reconnect_max{5000};
    std::chrono::milliseconds redis_connect_timeout{2000};
    // WebSocket holds: the keys of libs/websocket (as the native echo route).
    websocket::websocket_options websocket;
};

// Throws config_error (with the YAML location) on a bad value.
settings read_settings(const config_node& section);

}  // namespace m0::realtime
