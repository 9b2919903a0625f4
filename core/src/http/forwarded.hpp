#pragma once
// Who the client is behind trusted proxies: `Forwarded` (RFC 7239), or else
// `X-Forwarded-For` / `X-Forwarded-Proto`, read only from a peer in
// server.forwarded_allow_ips (the caller checks the peer).
//
// Several hops: the entries are walked from the right (the hop nearest to
// m0) and every entry that is itself a trusted address is skipped; the first
// one that is not is the client. If all are trusted, the leftmost is. This
// is uvicorn's ProxyHeadersMiddleware rule, and it keeps a client from
// choosing its address by sending a header of its own: the proxy appends the
// address it saw to whatever the client wrote.
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include <m0/api.hpp>
#include <m0/http.hpp>

#include "http/trusted_networks.hpp"

namespace m0::http {

enum class forwarded_outcome {
    none,       // no forwarding header: the peer is the client
    applied,    // `client` holds what the headers say
    malformed,  // a header did not parse: `client` is unchanged, `why` says what
};

struct forwarded_client {
    boost::asio::ip::tcp::endpoint remote;  // port 0 when the proxy did not say
    std::string_view scheme = "http";       // "http" or "https" (ws/wss map to these)
};

// `client` starts as the connection's peer and scheme. A chosen hop that is
// not an address (`for=unknown`, an obfuscated `_name`, or an element
// without `for`) leaves the address as it was and still applies its `proto`.
// `Forwarded` wins over the X-Forwarded-* pair when both are present; a
// malformed `Forwarded` makes the pair ignored too.
M0_INTERNAL_API forwarded_outcome resolve_forwarded(const std::vector<header_field>& headers,
                                                    const trusted_networks& trusted, forwarded_client& client,
                                                    std::string& why);

}  // namespace m0::http
