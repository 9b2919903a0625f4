#include "http/peer.hpp"

#include <m0/log.hpp>

#include "http/client_policy.hpp"
#include "http/forwarded.hpp"
#include "telemetry/request_recorder.hpp"

namespace m0::http::detail {

std::string connection_log_prefix(unsigned reactor, const boost::asio::ip::tcp::endpoint& remote) {
    std::string line = "http: reactor " + std::to_string(reactor) + ": ";
    const bool v6 = remote.address().is_v6();
    if (v6) line += '[';
    line += remote.address().to_string();
    if (v6) line += ']';
    line += ':';
    line += std::to_string(remote.port());
    return line;
}

void apply_forwarding(request& req, const client_policy& policy, request_recorder* recorder, unsigned reactor) {
    forwarded_client client{req.remote, req.scheme};
    std::string why;
    switch (resolve_forwarded(req.headers, policy.forwarded_trusted, client, why)) {
        case forwarded_outcome::none: return;
        case forwarded_outcome::applied:
            req.remote = client.remote;
            req.scheme = client.scheme;
            return;
        case forwarded_outcome::malformed:
            // The peer is trusted, yet what it sent does not parse: the
            // request goes on from the peer's address rather than a guess.
            if (recorder) recorder->forwarded_headers_ignored();
            if (log::enabled(log::level::debug))
                log::debug(connection_log_prefix(reactor, req.remote) + ": ignored forwarding headers: " + why);
            return;
    }
}

}  // namespace m0::http::detail
