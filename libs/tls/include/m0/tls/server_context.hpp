#pragma once
// The OpenSSL server contexts of a deployment's `tls:` section: the default
// chain and the SNI ones, client authentication, versions and ciphers,
// session tickets, ALPN. Built (and every file checked) by load(); immutable
// afterwards, so any reactor thread may start connections from it. A reload
// builds a new one; connections keep the context they started with (each
// SSL holds a reference to its SSL_CTX).
#include <memory>
#include <string>
#include <vector>

#include <m0/tls/settings.hpp>

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace m0::tls {

struct load_report {
    // Each names the file(s) and why: "tls.key 'k.pem' does not match the
    // certificate in tls.cert 'c.pem'". Any error: load() returns null.
    std::vector<std::string> errors;
    // A certificate that expires within 14 days, and the like.
    std::vector<std::string> warnings;
};

class server_context {
public:
    // Reads and checks every file `s` names: a key that does not match its
    // certificate, a chain out of order, an expired or not yet valid
    // certificate, a key that cannot be decrypted, client_auth required (or
    // optional) without a CA, an unreadable CA or CRL, a cipher list OpenSSL
    // refuses. Null when anything failed (then report.errors says what).
    static std::shared_ptr<const server_context> load(const settings& s, load_report& report);

    ~server_context();
    server_context(const server_context&) = delete;
    server_context& operator=(const server_context&) = delete;

    // The context a connection starts with (the default chain); the SNI
    // callback moves it to another chain's context.
    SSL_CTX* native() const noexcept;
    const settings& config() const noexcept;
    // The PEM of the certificate a connection's context serves (after SNI
    // chose it), encoded when the context was built; empty if unknown.
    static const std::string& certificate_pem(const SSL* ssl) noexcept;

    struct state;
    explicit server_context(std::unique_ptr<state> st);

private:
    std::unique_ptr<state> state_;
};

}  // namespace m0::tls
