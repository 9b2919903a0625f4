#pragma once
// What an application may learn about a TLS connection (a listener marked
// `tls`): the ASGI `tls` extension and WSGI's SSL_* environ keys are made
// from it. Plain data without OpenSSL, so a frontend needs no TLS library.
#include <cstdint>
#include <string>
#include <vector>

namespace m0 {

struct tls_info {
    std::uint16_t version = 0;        // 0x0303 (TLS 1.2), 0x0304 (TLS 1.3)
    std::uint16_t cipher_suite = 0;   // IANA number
    std::string cipher_name;          // OpenSSL's name ("TLS_AES_128_GCM_SHA256")
    std::string server_name;          // SNI; empty when the client sent none
    std::string alpn;                 // the protocol chosen; empty: none
    bool resumed = false;             // an abbreviated handshake (ticket or session id)
    std::string server_cert;          // PEM of the certificate this server sent
    std::vector<std::string> client_cert_chain;  // PEM, leaf first; empty without one
    std::string client_subject;       // the leaf's subject, RFC 4514; empty without one
    // Empty when the client sent no certificate or it verified; else why it
    // did not ("certificate has expired"): only `tls.client_auth: optional`
    // lets such a connection through.
    std::string client_verify_error;
};

}  // namespace m0
