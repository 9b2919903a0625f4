#pragma once
// Where the Redis bus connects: `realtime.bus` as a URL.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace m0::realtime {

struct redis_address {
    enum class transport { tcp, unix_socket };
    transport kind = transport::tcp;
    std::string host;          // tcp: a name, an IPv4 or an IPv6 address (no brackets)
    std::uint16_t port = 6379;
    std::string path;          // unix: the socket's absolute path
    unsigned db = 0;           // accepted for familiarity; pub/sub ignores it
    std::string username;      // AUTH: empty for the default user
    std::string password;      // AUTH only when not empty

    // For logs: the URL without the password.
    std::string display() const;
};

// Parses `redis://[[user]:password@]host[:port][/db]` (an IPv6 host in
// brackets) or `unix://[[user]:password@]/path/to/redis.sock[?db=N]`; user
// and password may be percent-encoded. Returns nullopt and sets `error` to
// what is wrong.
std::optional<redis_address> parse_redis_url(std::string_view url, std::string& error);

}  // namespace m0::realtime
