#pragma once
// How the engine finds a connection's client and scheme (docs/config.md,
// "Behind a proxy"), and which listeners speak TLS: a PROXY protocol header
// on a listener marked `proxy` replaces the socket's addresses; then
// forwarding headers from a trusted peer name the client of each request.
// A listener marked `tls` starts each connection with a TLS handshake (after
// the PROXY header, when both); HTTP/2 is spoken where allowed. Reached through reactor_context::client_policy;
// null there: the socket's peer, plain TCP, always.
#include <atomic>
#include <memory>
#include <vector>

#include <m0/tls/server_context.hpp>

#include "http/trusted_networks.hpp"
#include "http2/settings.hpp"

namespace m0::http {

// The TLS contexts new connections start from. A reload (SIGHUP in a single
// process) replaces them whole; a connection keeps the one it started with.
class tls_context_slot {
public:
    explicit tls_context_slot(std::shared_ptr<const tls::server_context> ctx) : current_(std::move(ctx)) {}
    std::shared_ptr<const tls::server_context> get() const noexcept { return current_.load(std::memory_order_acquire); }
    void replace(std::shared_ptr<const tls::server_context> ctx) noexcept {
        current_.store(std::move(ctx), std::memory_order_release);
    }

private:
    std::atomic<std::shared_ptr<const tls::server_context>> current_;
};

struct client_policy {
    trusted_networks forwarded_trusted;  // server.forwarded_allow_ips
    // Per listener of a reactor, in the order of server.listen: whether the
    // connections accepted there start with a PROXY protocol header, and
    // whether they speak TLS.
    std::vector<bool> proxy_protocol;
    std::vector<bool> tls;
    // And whether they speak HTTP/2 besides HTTP/1.1: ALPN "h2" on a TLS
    // listener, the h2c preface on a plain one (http2.enabled, or the
    // listener's `h1` / `h2` option).
    std::vector<bool> http2;
    http2::settings http2_settings;
    // Set when some listener is marked `tls`.
    std::shared_ptr<tls_context_slot> tls_contexts;
};

}  // namespace m0::http
