#pragma once
// Who is at the other end of a connection, as both protocol engines see it:
// the socket's peer or what a PROXY header reported, the scheme, and
// whether forwarding headers from it are believed.
#include <string>
#include <string_view>

#include <boost/asio/ip/tcp.hpp>

#include <m0/http.hpp>

namespace m0 {
class request_recorder;
}

namespace m0::http {
struct client_policy;
}

namespace m0::http::detail {

struct peer_address {
    boost::asio::ip::tcp::endpoint remote;  // the socket's peer, or the PROXY header's source
    boost::asio::ip::tcp::endpoint local;
    std::string_view scheme = "http";       // "https" on TLS, or when a PROXY v2 header says so
    bool trusts_forwarded = false;          // remote is in server.forwarded_allow_ips
};

// "http: reactor 0: 127.0.0.1:5000": who a log line is about.
std::string connection_log_prefix(unsigned reactor, const boost::asio::ip::tcp::endpoint& remote);

// Applies the forwarding headers of a request from a trusted peer (its
// client and scheme); malformed ones are counted and logged at debug, and
// the request goes on from the peer's address.
void apply_forwarding(request& req, const client_policy& policy, request_recorder* recorder,
                      unsigned reactor);

}  // namespace m0::http::detail
