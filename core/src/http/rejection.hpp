#pragma once
// A request the engine answers on its own, before or without a handler (a
// malformed head, a body over the limit, a body too slow): one policy for
// both engines. Each is logged at info with its reason and recorded in the
// access log and the metrics; what else follows is the protocol's (HTTP/1.1
// closes the connection after it; HTTP/2 answers that stream and charges the
// connection's abuse budget, which bounds the lines one connection can cause).
#include <cstdint>
#include <string_view>

#include <boost/asio/ip/tcp.hpp>

namespace m0 {
class request_recorder;
}

namespace m0::http::detail {

// `where`: the connection (connection_log_prefix), and for HTTP/2 the stream.
void log_rejection(std::string_view where, unsigned status, std::string_view reason);
// Null `recorder`: neither the access log nor the metrics are on.
void record_rejection(request_recorder* recorder, const boost::asio::ip::tcp::endpoint& remote, unsigned status,
                      std::uint64_t body_bytes);

}  // namespace m0::http::detail
