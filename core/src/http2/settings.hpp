#pragma once
// Limits of the HTTP/2 engine (YAML section `http2:`). Each is a documented
// key (docs/config.md, "HTTP/2"); the defaults are safe for a server facing
// the internet.
#include <chrono>
#include <cstdint>

namespace m0::http2 {

struct settings {
    bool enabled = true;                          // listeners speak h2 unless marked `h1`
    // WebSocket over HTTP/2 (RFC 8441, extended CONNECT) announced to
    // clients; off: browsers open their WebSockets over HTTP/1.1.
    bool websocket = false;
    std::uint32_t max_concurrent_streams = 100;   // SETTINGS_MAX_CONCURRENT_STREAMS; also running handlers
    std::uint32_t initial_window_size = 65535;    // per stream: request body bytes in flight before the app reads
    std::uint32_t max_frame_size = 16384;         // largest frame the client may send
    std::uint32_t max_header_list_size = 65536;   // decoded request head (RFC 9113 counting); 431 beyond
    std::uint32_t max_header_count = 100;         // fields in a request head; 431 beyond
    std::chrono::milliseconds ping_interval{60000};  // PING a connection this quiet (0: never)
    std::chrono::milliseconds ping_timeout{20000};   // and close it when no answer comes within this
    std::uint32_t max_requests_per_connection = 0;   // then GOAWAY (0: unlimited)
    // The client's resets, resets the server has to send, invalid frames
    // and rejected requests, per connection: a burst of reset_burst,
    // refilled at reset_rate per second; beyond it, GOAWAY ENHANCE_YOUR_CALM.
    std::uint32_t reset_burst = 200;
    std::uint32_t reset_rate = 50;
};

}  // namespace m0::http2
