#pragma once
// How the engine finds a connection's client and scheme (docs/config.md,
// "Behind a proxy"): a PROXY protocol header on a listener marked `proxy`
// replaces the socket's addresses; then forwarding headers from a trusted
// peer name the client of each request. Reached through
// reactor_context::client_policy; null there: the socket's peer, always.
#include <vector>

#include "http/trusted_networks.hpp"

namespace m0::http {

struct client_policy {
    trusted_networks forwarded_trusted;  // server.forwarded_allow_ips
    // Per listener of a reactor, in the order of server.listen: whether the
    // connections accepted there start with a PROXY protocol header.
    std::vector<bool> proxy_protocol;
};

}  // namespace m0::http
