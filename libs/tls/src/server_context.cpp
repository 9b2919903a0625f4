#include <m0/tls/server_context.hpp>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cstring>
#include <exception>
#include <optional>
#include <string_view>

#include "alpn_limit.hpp"
#include "certificate_checks.hpp"
#include "ticket_keys.hpp"

namespace m0::tls {
namespace {

using namespace detail;

// X25519 first (fast, no curve parameters to get wrong), then the NIST curves
// of clients without it.
constexpr const char* key_exchange_groups = "X25519:prime256v1:secp384r1";
// Sessions a serving process remembers for TLS 1.2 resumption by id; tickets
// carry the rest (and work across processes).
constexpr long session_cache_size = 10240;
// One for every context of every deployment: a session may resume on any
// chain of the same deployment (they share client verification), and the
// ticket keys tell deployments apart.
constexpr std::string_view session_id_context = "m0 tls";

struct ca_names_free {
    void operator()(STACK_OF(X509_NAME) * names) const noexcept { sk_X509_NAME_pop_free(names, X509_NAME_free); }
};
using ca_names_ptr = std::unique_ptr<STACK_OF(X509_NAME), ca_names_free>;

// What client certificates are checked against (tls.ca, tls.crl), shared by
// every context of the deployment.
struct client_verification {
    x509_store_ptr store;
    ca_names_ptr names;  // sent in the CertificateRequest, so a client picks the right certificate
};

// What the callbacks read, owned by each SSL_CTX (ex_data) rather than by
// the server_context: a connection keeps its SSL_CTX after a reload dropped
// the server_context, and may still need them (TLS 1.3 sends tickets after
// the handshake).
struct callback_data {
    std::vector<std::string> alpn;      // server preference
    // The leaf certificate as PEM, for the ASGI tls extension's server_cert:
    // encoded once here, not per connection (it cost a full RSA handshake
    // a quarter of its time).
    std::string certificate_pem;
    std::optional<ticket_keys> tickets;  // null: tls.session_tickets false
    struct named_context {
        std::vector<std::string> names;
        ssl_ctx_ptr context;
    };
    std::vector<named_context> sni;  // the default context's only
};

void free_callback_data(void*, void* data, CRYPTO_EX_DATA*, int, long, void*) {
    delete static_cast<callback_data*>(data);
}

int callback_data_index() {
    static const int index =
        CRYPTO_get_ex_new_index(CRYPTO_EX_INDEX_SSL_CTX, 0, nullptr, nullptr, nullptr, free_callback_data);
    return index;
}

const callback_data* data_of(const SSL* ssl) {
    return static_cast<const callback_data*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), callback_data_index()));
}

std::string pem_of(X509* cert) {
    std::string out;
    std::unique_ptr<BIO, openssl_free<BIO_free>> mem(BIO_new(BIO_s_mem()));
    if (mem && PEM_write_bio_X509(mem.get(), cert) == 1) {
        char* data = nullptr;
        const long n = BIO_get_mem_data(mem.get(), &data);
        if (n > 0) out.assign(data, static_cast<std::size_t>(n));
    }
    return out;
}

// The SNI callback of the default context: moves the connection to the
// context of the chain whose names match; an unknown name (or none) stays
// on the default chain.
int choose_chain(SSL* ssl, int*, void* arg) {
    const char* host = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    if (!host) return SSL_TLSEXT_ERR_OK;
    for (const auto& entry : static_cast<const callback_data*>(arg)->sni) {
        for (const auto& name : entry.names) {
            if (!host_matches(name, host)) continue;
            if (!SSL_set_SSL_CTX(ssl, entry.context.get())) return SSL_TLSEXT_ERR_ALERT_FATAL;
            // The verify mode stays the SSL's, taken from the context it
            // started with; every context has the same, so this only keeps
            // it right should that change.
            SSL_set_verify(ssl, SSL_CTX_get_verify_mode(entry.context.get()),
                           SSL_CTX_get_verify_callback(entry.context.get()));
            return SSL_TLSEXT_ERR_OK;
        }
    }
    return SSL_TLSEXT_ERR_OK;
}

// The first protocol of tls.alpn that the client offers; none: the
// handshake goes on without ALPN (the connection speaks HTTP/1.1).
int choose_protocol(SSL* ssl, const unsigned char** out, unsigned char* out_size, const unsigned char* offered,
                     unsigned int offered_size, void* arg) {
    const std::string* only = detail::alpn_limit(ssl);
    for (const auto& ours : static_cast<const callback_data*>(arg)->alpn) {
        if (only && ours != *only) continue;
        for (unsigned int at = 0; at < offered_size;) {
            const unsigned int size = offered[at];
            if (at + 1 + size > offered_size) break;
            if (size == ours.size() && std::memcmp(offered + at + 1, ours.data(), size) == 0) {
                *out = offered + at + 1;
                *out_size = static_cast<unsigned char>(size);
                return SSL_TLSEXT_ERR_OK;
            }
            at += 1 + size;
        }
    }
    return SSL_TLSEXT_ERR_NOACK;
}

int seal_or_open_ticket(SSL* ssl, unsigned char name[16], unsigned char* iv, EVP_CIPHER_CTX* cipher,
                        EVP_MAC_CTX* mac, int seal) {
    const callback_data* data = data_of(ssl);
    if (!data || !data->tickets) return seal ? -1 : 0;
    try {
        const int r = data->tickets->seal_or_open(name, iv, cipher, mac, seal != 0);
        // TLS 1.3 tickets are for one use (RFC 8446, C.4): a resumed
        // connection gets fresh ones only if the callback asks (2), as
        // OpenSSL's own ticket keys always do; without them a client that
        // reconnects again has no ticket left and pays a full handshake.
        if (!seal && r == 1 && SSL_version(ssl) == TLS1_3_VERSION) return 2;
        return r;
    } catch (const std::exception&) {
        return -1;  // never through OpenSSL's C frames
    }
}

// Client authentication "optional": a certificate that does not verify
// does not end the handshake; the transport reads SSL_get_verify_result
// and hands the reason to the application.
int accept_any_client_certificate(int, X509_STORE_CTX*) { return 1; }

std::optional<client_verification> load_client_verification(const settings& s, load_report& report) {
    client_verification out;
    if (s.client_auth != client_auth::none && s.ca.empty()) {
        report.errors.push_back(std::string("tls.client_auth is ") +
                                (s.client_auth == client_auth::required ? "required" : "optional") +
                                " but tls.ca is not set: the CA bundle client certificates must chain to");
        return std::nullopt;
    }
    if (s.ca.empty()) {
        if (!s.crl.empty()) report.errors.push_back("tls.crl is set without tls.ca: it is checked against client "
                                                    "certificates, which need tls.ca");
        return report.errors.empty() ? std::optional(std::move(out)) : std::nullopt;
    }
    const std::size_t errors_before = report.errors.size();
    out.store.reset(X509_STORE_new());
    out.names.reset(sk_X509_NAME_new_null());
    for (const auto& ca : read_certificates("tls.ca", s.ca, report)) {
        X509_STORE_add_cert(out.store.get(), ca.get());
        sk_X509_NAME_push(out.names.get(), X509_NAME_dup(X509_get_subject_name(ca.get())));
    }
    if (!s.crl.empty()) {
        for (const auto& crl : read_crls("tls.crl", s.crl, report)) X509_STORE_add_crl(out.store.get(), crl.get());
        // The client's certificate, not its issuers: a CRL of each CA that
        // issues client certificates is enough.
        X509_STORE_set_flags(out.store.get(), X509_V_FLAG_CRL_CHECK);
    }
    if (s.client_auth == client_auth::none)
        report.warnings.push_back("tls.ca is set but tls.client_auth is none: no client certificate is asked for");
    if (report.errors.size() > errors_before) return std::nullopt;
    return out;
}

// A context for one chain with every setting of the section. The checks of
// the strings OpenSSL parses (ciphers) report here: they run on the default
// context first, so an SNI context never adds the same error again.
ssl_ctx_ptr make_context(const settings& s, const loaded_chain& chain, const client_verification& verification,
                         load_report& report) {
    const std::size_t errors_before = report.errors.size();
    ssl_ctx_ptr ctx(SSL_CTX_new(TLS_server_method()));
    if (!ctx) {
        report.errors.push_back("tls: cannot create an OpenSSL context: " + openssl_reason());
        return nullptr;
    }
    SSL_CTX* c = ctx.get();
    SSL_CTX_set_min_proto_version(c, s.min_version);
    const std::string ciphers = s.ciphers.empty() ? std::string(intermediate_ciphers) : s.ciphers;
    if (!SSL_CTX_set_cipher_list(c, ciphers.c_str()))
        report.errors.push_back("tls.ciphers '" + s.ciphers + "': OpenSSL refuses the list (" + openssl_reason() +
                                "); see `openssl ciphers -v '" + s.ciphers + "'`");
    if (!s.ciphersuites.empty() && !SSL_CTX_set_ciphersuites(c, s.ciphersuites.c_str()))
        report.errors.push_back("tls.ciphersuites '" + s.ciphersuites + "': OpenSSL refuses the list (" +
                                openssl_reason() + "); expected TLS 1.3 suites such as TLS_AES_128_GCM_SHA256");
    SSL_CTX_set1_groups_list(c, key_exchange_groups);
    SSL_CTX_set_dh_auto(c, 1);
    // Renegotiation is an attack surface HTTP/1.1 has no use for. The
    // server's order of the cipher list decides (testssl.sh grades a server
    // without one HIGH), except that a client putting ChaCha20 first (no AES
    // hardware: most phones) gets ChaCha20.
    SSL_CTX_set_options(c, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE |
                               SSL_OP_PRIORITIZE_CHACHA | (s.session_tickets ? 0 : SSL_OP_NO_TICKET));
    // A connection's buffers are freed while it idles (keep-alive); the
    // transport writes from buffers that may move between retries.
    SSL_CTX_set_mode(c, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);

    SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_SERVER);
    SSL_CTX_sess_set_cache_size(c, session_cache_size);
    SSL_CTX_set_session_id_context(c, reinterpret_cast<const unsigned char*>(session_id_context.data()),
                                   static_cast<unsigned int>(session_id_context.size()));
    // A ticket decrypts for two periods at most: offer no longer a lifetime.
    SSL_CTX_set_timeout(c, static_cast<long>(s.ticket_rotation.count()));

    if (!SSL_CTX_use_certificate(c, chain.certificates.front().get()) ||
        !SSL_CTX_use_PrivateKey(c, chain.key.get()))
        report.errors.push_back("tls: OpenSSL refuses the certificate or key: " + openssl_reason());
    for (std::size_t i = 1; i < chain.certificates.size(); ++i) SSL_CTX_add1_chain_cert(c, chain.certificates[i].get());

    if (verification.store) {
        SSL_CTX_set1_cert_store(c, verification.store.get());
        SSL_CTX_set_client_CA_list(c, SSL_dup_CA_list(verification.names.get()));
    }
    switch (s.client_auth) {
    case client_auth::none: SSL_CTX_set_verify(c, SSL_VERIFY_NONE, nullptr); break;
    case client_auth::optional: SSL_CTX_set_verify(c, SSL_VERIFY_PEER, accept_any_client_certificate); break;
    case client_auth::required:
        SSL_CTX_set_verify(c, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
        break;
    }

    auto data = std::make_unique<callback_data>();
    data->alpn = s.alpn;
    data->certificate_pem = pem_of(chain.certificates.front().get());
    if (s.session_tickets) data->tickets.emplace(s.ticket_secret, s.ticket_rotation);
    SSL_CTX_set_alpn_select_cb(c, choose_protocol, data.get());
    SSL_CTX_set_tlsext_ticket_key_evp_cb(c, seal_or_open_ticket);
    SSL_CTX_set_ex_data(c, callback_data_index(), data.release());
    if (report.errors.size() > errors_before) return nullptr;
    return ctx;
}

std::string sni_prefix(std::size_t i) { return "tls.sni[" + std::to_string(i) + "]"; }

}  // namespace

struct server_context::state {
    settings config;
    ssl_ctx_ptr default_context;  // holds the SNI ones (its callback data)
};

server_context::server_context(std::unique_ptr<state> st) : state_(std::move(st)) {}
server_context::~server_context() = default;

const std::string& server_context::certificate_pem(const SSL* ssl) noexcept {
    static const std::string none;
    const callback_data* data = data_of(ssl);
    return data ? data->certificate_pem : none;
}

SSL_CTX* server_context::native() const noexcept { return state_->default_context.get(); }
const settings& server_context::config() const noexcept { return state_->config; }

std::shared_ptr<const server_context> server_context::load(const settings& s, load_report& report) {
    const std::size_t errors_before = report.errors.size();
    ERR_clear_error();
    if (s.min_version != TLS1_2_VERSION && s.min_version != TLS1_3_VERSION)
        report.errors.push_back("tls.min_version: expected 1.2 or 1.3");
    const auto chain = load_chain(s.certificate, "tls", report);
    std::vector<std::optional<loaded_chain>> sni_chains;
    for (std::size_t i = 0; i < s.sni.size(); ++i) {
        sni_chains.push_back(load_chain(s.sni[i], sni_prefix(i), report));
        if (sni_chains.back() && sni_chains.back()->names.empty()) {
            report.errors.push_back(sni_prefix(i) + ": no names to choose it by: set " + sni_prefix(i) +
                                    ".names, or use a certificate with subjectAltName DNS names");
        }
    }
    const auto verification = load_client_verification(s, report);
    if (report.errors.size() > errors_before) return nullptr;

    auto st = std::make_unique<state>();
    st->config = s;
    st->default_context = make_context(s, *chain, *verification, report);
    if (!st->default_context) return nullptr;
    auto* data = static_cast<callback_data*>(SSL_CTX_get_ex_data(st->default_context.get(), callback_data_index()));
    for (std::size_t i = 0; i < sni_chains.size(); ++i) {
        auto context = make_context(s, *sni_chains[i], *verification, report);
        if (!context) return nullptr;
        data->sni.push_back({sni_chains[i]->names, std::move(context)});
    }
    if (!data->sni.empty()) {
        SSL_CTX_set_tlsext_servername_callback(st->default_context.get(), choose_chain);
        SSL_CTX_set_tlsext_servername_arg(st->default_context.get(), data);
    }
    return std::make_shared<const server_context>(std::move(st));
}

}  // namespace m0::tls
