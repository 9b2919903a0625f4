#pragma once
// Limits and timeouts of the HTTP/1.1 engine (YAML section `http:`).
// Defaults are in the range of nginx, gunicorn and h2o; see docs/config.md.
#include <chrono>
#include <cstdint>

namespace m0 {

struct http_limits {
    std::uint32_t max_request_line = 8 * 1024;        // 414 beyond
    std::uint32_t max_header_size = 8 * 1024;         // one field; 431 beyond
    std::uint32_t max_header_count = 100;             // 431 beyond
    std::uint32_t max_header_bytes = 32 * 1024;       // whole head; 431 beyond
    std::uint64_t max_body_size = 1024 * 1024 * 1024; // 413 beyond (1 GiB)
    std::chrono::milliseconds header_timeout{30'000}; // 408
    std::chrono::milliseconds body_timeout{30'000};   // per read
    std::chrono::milliseconds write_timeout{30'000};  // per write
    std::chrono::milliseconds keepalive_timeout{75'000};
    std::uint32_t max_requests_per_connection = 0;    // 0: unlimited
    std::uint32_t max_connections_per_reactor = 10'000;
};

}  // namespace m0
