#pragma once
// What a deployment's `tls:` section says, as plain data with every path
// already resolved (relative paths against the config file's directory).
// Read by the core's config (core/src/config/tls_config.cpp); turned into
// OpenSSL contexts by server_context::load.
#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace m0::tls {

// tls.ciphers when not set: Mozilla's "intermediate" TLS 1.2 list
// (server-side-tls guidelines v5.7): AEAD ciphers with forward secrecy only.
// The DHE ones are kept for the few clients without ECDHE; their groups are
// RFC 7919's, sized to the key (SSL_CTX_set_dh_auto).
inline constexpr std::string_view intermediate_ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
    "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305";

// A certificate chain and its private key.
struct certificate_files {
    std::string cert;           // PEM: the leaf first, then its intermediates
    std::string key;            // PEM: PKCS#1, PKCS#8 or SEC1 (EC); possibly encrypted
    std::string password;       // for an encrypted key; empty: none
    std::string password_file;  // alternatively: the first line of this file
    // Names this chain is chosen for by SNI (exact, or "*.example.com");
    // empty: the DNS names of the certificate's subjectAltName.
    std::vector<std::string> names;
};

enum class client_auth { none, optional, required };

struct settings {
    certificate_files certificate;                // tls.cert, tls.key, tls.password, tls.password_file
    std::vector<certificate_files> sni;           // tls.sni: more chains, chosen by the name a client asks for
    // Qualified: the member has the enum's name.
    tls::client_auth client_auth = tls::client_auth::none;  // tls.client_auth
    std::string ca;                               // tls.ca: PEM bundle of the CAs client certificates chain to
    std::string crl;                              // tls.crl: PEM CRL(s) checked against client certificates
    std::uint16_t min_version = 0x0303;           // tls.min_version: "1.2" (0x0303) or "1.3" (0x0304)
    std::string ciphers;                          // tls.ciphers: TLS 1.2, OpenSSL syntax; empty: intermediate_ciphers
    std::string ciphersuites;                     // tls.ciphersuites: TLS 1.3; empty: OpenSSL's default
    std::vector<std::string> alpn = {"http/1.1"};  // offered in the server's order of preference
    bool session_tickets = true;                  // tls.session_tickets
    std::chrono::seconds ticket_rotation{std::chrono::hours(12)};  // tls.ticket_rotation
    // The secret the ticket keys of every period derive from: made once per
    // deployment before any fork, so every serving process of a supervisor
    // encrypts and accepts the same tickets.
    std::array<std::uint8_t, 32> ticket_secret{};
    std::chrono::milliseconds handshake_timeout{10000};  // tls.handshake_timeout
};

}  // namespace m0::tls
