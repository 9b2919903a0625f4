// Real handshakes between a client SSL and one from server_context::native(),
// over an in-memory BIO pair: which chain SNI chooses, which protocol ALPN
// picks, what client authentication lets through, and whether a ticket one
// context issued resumes on another built from the same settings (as on
// another serving process).
#include <cstring>

#include <boost/test/unit_test.hpp>

#include <openssl/err.h>

#include <m0/tls/server_context.hpp>

#include "test_certificates.hpp"

namespace m0::tls {
namespace {

using detail::ssl_ctx_ptr;
using detail::ssl_ptr;
using test::pki;
using test::temp_dir;
using test::write_chain;

using session_ptr = std::unique_ptr<SSL_SESSION, detail::openssl_free<SSL_SESSION_free>>;

struct client_hello {
    std::string server_name{};                // empty: no SNI
    std::string alpn{};                       // wire format, e.g. "\x02h2\x08http/1.1"
    SSL_SESSION* session = nullptr;           // to resume
    int max_version = TLS1_3_VERSION;
    const test::identity* certificate = nullptr;  // the client's
};

struct outcome {
    bool completed = false;
    std::string server_subject;  // the CN of the certificate the server sent
    std::string protocol;        // ALPN, empty: none
    bool resumed = false;
    long verify_result = X509_V_OK;  // the server's view of the client certificate
    session_ptr session;         // the client's, tickets received
};

std::string common_name(X509* cert) {
    char text[256] = {};
    X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, text, sizeof text);
    return text;
}

bool pending(SSL* ssl, int rc) {
    const int error = SSL_get_error(ssl, rc);
    return error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE;
}

outcome handshake(SSL_CTX* server, const client_hello& hello) {
    ssl_ctx_ptr client_ctx(SSL_CTX_new(TLS_client_method()));
    SSL_CTX_set_max_proto_version(client_ctx.get(), hello.max_version);
    SSL_CTX_set_verify(client_ctx.get(), SSL_VERIFY_NONE, nullptr);
    if (hello.certificate) {
        SSL_CTX_use_certificate(client_ctx.get(), hello.certificate->cert.get());
        SSL_CTX_use_PrivateKey(client_ctx.get(), hello.certificate->key.get());
    }
    ssl_ptr client(SSL_new(client_ctx.get()));
    ssl_ptr srv(SSL_new(server));
    BIO* client_end = nullptr;
    BIO* server_end = nullptr;
    BIO_new_bio_pair(&client_end, 0, &server_end, 0);
    SSL_set_bio(client.get(), client_end, client_end);
    SSL_set_bio(srv.get(), server_end, server_end);
    SSL_set_connect_state(client.get());
    SSL_set_accept_state(srv.get());
    if (!hello.server_name.empty()) SSL_set_tlsext_host_name(client.get(), hello.server_name.c_str());
    if (!hello.alpn.empty())
        SSL_set_alpn_protos(client.get(), reinterpret_cast<const unsigned char*>(hello.alpn.data()),
                            static_cast<unsigned int>(hello.alpn.size()));
    if (hello.session) SSL_set_session(client.get(), hello.session);

    outcome out;
    bool client_done = false, server_done = false;
    for (int round = 0; round < 50 && !(client_done && server_done); ++round) {
        if (!client_done) {
            const int rc = SSL_do_handshake(client.get());
            client_done = rc == 1;
            if (!client_done && !pending(client.get(), rc)) break;
        }
        if (!server_done) {
            const int rc = SSL_do_handshake(srv.get());
            server_done = rc == 1;
            if (!server_done && !pending(srv.get(), rc)) break;
        }
    }
    ERR_clear_error();
    out.verify_result = SSL_get_verify_result(srv.get());
    if (!(client_done && server_done)) return out;
    // TLS 1.3 tickets come after the handshake: the client reads them.
    char byte;
    (void)SSL_read(client.get(), &byte, 1);
    ERR_clear_error();
    out.completed = true;
    if (X509* cert = SSL_get1_peer_certificate(client.get())) {
        out.server_subject = common_name(cert);
        X509_free(cert);
    }
    const unsigned char* protocol = nullptr;
    unsigned int protocol_size = 0;
    SSL_get0_alpn_selected(client.get(), &protocol, &protocol_size);
    out.protocol.assign(reinterpret_cast<const char*>(protocol), protocol_size);
    out.resumed = SSL_session_reused(client.get()) == 1;
    out.session.reset(SSL_get1_session(client.get()));
    // An SSL freed before it sent close_notify takes its session out of
    // its cache (not resumable).
    SSL_shutdown(client.get());
    SSL_shutdown(srv.get());
    return out;
}

// Chains a.example (the default) and b.example, *.b.example (by SNI).
struct two_chains : test::chain_settings {
    two_chains() { s.sni.push_back(write_chain(dir, "b", pki().b)); }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(handshakes, two_chains)

BOOST_AUTO_TEST_CASE(sni_chooses_the_chain_named_and_the_default_otherwise) {
    const auto server = load();
    BOOST_TEST(handshake(server->native(), {.server_name = "b.example"}).server_subject == "b.example");
    BOOST_TEST(handshake(server->native(), {.server_name = "www.b.example"}).server_subject == "b.example");
    BOOST_TEST(handshake(server->native(), {.server_name = "unknown.example"}).server_subject == "a.example");
    BOOST_TEST(handshake(server->native(), {}).server_subject == "a.example");
    s.sni.front().names = {"configured.example"};
    const auto renamed = load();
    BOOST_TEST(handshake(renamed->native(), {.server_name = "configured.example"}).server_subject == "b.example");
    BOOST_TEST(handshake(renamed->native(), {.server_name = "b.example"}).server_subject == "a.example");
}

BOOST_AUTO_TEST_CASE(alpn_picks_http_1_1_and_goes_on_without_a_common_protocol) {
    const auto server = load();
    const auto both =
        handshake(server->native(), {.server_name = "a.example", .alpn = std::string("\x02h2\x08http/1.1", 12)});
    BOOST_TEST(both.protocol == "http/1.1");
    const auto none = handshake(server->native(), {.server_name = "a.example", .alpn = std::string("\x02h2", 3)});
    BOOST_TEST(none.completed);
    BOOST_TEST(none.protocol.empty());
}

BOOST_AUTO_TEST_CASE(a_ticket_resumes_on_another_context_with_the_same_secret_only) {
    for (const int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
        BOOST_TEST_CONTEXT("TLS version " << std::hex << version) {
            const auto first = load();
            const auto second = load();  // another serving process
            const client_hello fresh{.server_name = "a.example", .max_version = version};
            const auto issued = handshake(first->native(), fresh);
            BOOST_REQUIRE(issued.session);
            client_hello resuming = fresh;
            resuming.session = issued.session.get();
            BOOST_TEST(handshake(second->native(), resuming).resumed);
            s.ticket_secret.fill(8);  // another deployment
            const auto other = load();
            s.ticket_secret.fill(7);
            const auto refused = handshake(other->native(), resuming);
            BOOST_TEST(refused.completed);
            BOOST_TEST(!refused.resumed);
        }
    }
}

// TLS 1.3 tickets are for one use: a resumed connection must get a new one,
// or a client that reconnects again has none left (wrk, reconnecting with
// the last connection's session, paid a full handshake every other time).
BOOST_AUTO_TEST_CASE(a_resumed_tls13_connection_gets_a_fresh_ticket_that_resumes_again) {
    const auto server = load();
    client_hello hello{.server_name = "a.example"};
    auto previous = handshake(server->native(), hello);
    BOOST_REQUIRE(previous.session);
    for (int round = 0; round < 3; ++round) {
        hello.session = previous.session.get();
        auto next = handshake(server->native(), hello);
        BOOST_TEST(next.resumed);
        BOOST_REQUIRE(next.session);
        const unsigned char* old_ticket = nullptr;
        const unsigned char* new_ticket = nullptr;
        std::size_t old_length = 0, new_length = 0;
        SSL_SESSION_get0_ticket(previous.session.get(), &old_ticket, &old_length);
        SSL_SESSION_get0_ticket(next.session.get(), &new_ticket, &new_length);
        BOOST_TEST((new_length > 0 && (new_length != old_length ||
                                       std::memcmp(old_ticket, new_ticket, new_length) != 0)));
        previous = std::move(next);
    }
}

BOOST_AUTO_TEST_CASE(without_session_tickets_a_session_does_not_cross_contexts) {
    s.session_tickets = false;
    const auto first = load();
    client_hello hello{.server_name = "a.example", .max_version = TLS1_2_VERSION};
    const auto issued = handshake(first->native(), hello);
    BOOST_REQUIRE(issued.session);
    hello.session = issued.session.get();
    BOOST_TEST(handshake(first->native(), hello).resumed);  // from its session cache
    BOOST_TEST(!handshake(load()->native(), hello).resumed);
}

// On the default chain and on one SNI chose: the verify settings must hold
// on every context.
BOOST_AUTO_TEST_CASE(client_auth_required_refuses_and_optional_lets_through_a_client_without_a_good_certificate) {
    s.ca = dir.write("ca.pem", test::pem_of(pki().ca.cert.get()) + test::pem_of(pki().intermediate.cert.get()));
    for (const auto mode : {client_auth::required, client_auth::optional}) {
        s.client_auth = mode;
        const auto server = load();
        const bool required = mode == client_auth::required;
        for (const char* name : {"a.example", "b.example"}) {
            BOOST_TEST_CONTEXT(name << (required ? " required" : " optional")) {
                const auto as = [&](const test::identity* certificate) {
                    return handshake(server->native(), {.server_name = name, .certificate = certificate});
                };
                BOOST_TEST(as(nullptr).completed == !required);
                const auto stranger = as(&pki().stranger);
                BOOST_TEST(stranger.completed == !required);
                if (!required) BOOST_TEST(stranger.verify_result != X509_V_OK);  // for the application to read
                const auto known = as(&pki().client);
                BOOST_TEST(known.completed);
                BOOST_TEST(known.verify_result == X509_V_OK);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(a_client_certificate_the_crl_revokes_is_refused) {
    s.client_auth = client_auth::required;
    s.ca = dir.write("ca.pem", test::pem_of(pki().ca.cert.get()) + test::pem_of(pki().intermediate.cert.get()));
    const auto with_crl = [&](const std::vector<const test::identity*>& revoked) {
        s.crl = dir.write("crl.pem", test::crl_pem_of(pki().intermediate, revoked));
        return handshake(load()->native(), {.server_name = "a.example", .certificate = &pki().client});
    };
    BOOST_TEST(with_crl({}).completed);
    const auto revoked = with_crl({&pki().client});
    BOOST_TEST(!revoked.completed);
    BOOST_TEST(revoked.verify_result == X509_V_ERR_CERT_REVOKED);
}

BOOST_AUTO_TEST_CASE(a_context_outlives_its_server_context) {
    // A reload drops the server_context while connections still use its
    // SSL_CTX (each SSL holds a reference): what the callbacks read lives
    // with the SSL_CTX.
    auto server = load();
    ssl_ctx_ptr kept(server->native());
    SSL_CTX_up_ref(kept.get());
    server.reset();
    const auto later = handshake(kept.get(), {.server_name = "b.example", .alpn = std::string("\x08http/1.1", 9)});
    BOOST_TEST(later.server_subject == "b.example");
    BOOST_TEST(later.protocol == "http/1.1");
    BOOST_TEST(later.session != nullptr);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace m0::tls
