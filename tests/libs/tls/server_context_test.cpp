// server_context::load: what it accepts, and each error and warning naming
// the key, the file and why.
#include <boost/test/unit_test.hpp>

#include <m0/tls/server_context.hpp>

#include "certificate_checks.hpp"
#include "test_certificates.hpp"

namespace m0::tls {
namespace {

using test::pki;
using test::temp_dir;
using test::write_chain;

// Whether one of `messages` holds every one of `parts`.
bool mentions(const std::vector<std::string>& messages, std::initializer_list<std::string> parts) {
    for (const auto& message : messages) {
        bool all = true;
        for (const auto& part : parts) all = all && message.find(part) != std::string::npos;
        if (all) return true;
    }
    return false;
}

std::string joined(const std::vector<std::string>& messages) {
    std::string out;
    for (const auto& m : messages) out += m + "\n";
    return out;
}

struct loaded {
    std::shared_ptr<const server_context> context;
    load_report report;
};

loaded load(const settings& s) {
    loaded out;
    out.context = server_context::load(s, out.report);
    BOOST_TEST_MESSAGE("errors:\n" << joined(out.report.errors) << "warnings:\n" << joined(out.report.warnings));
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(server_context_load)

BOOST_AUTO_TEST_CASE(a_good_chain_and_key_load) {
    temp_dir dir;
    settings s;
    s.certificate = write_chain(dir, "a", pki().a);
    const auto r = load(s);
    BOOST_REQUIRE(r.context);
    BOOST_TEST(r.report.errors.empty());
    BOOST_TEST(r.report.warnings.empty());
    BOOST_TEST(r.context->native() != nullptr);
    BOOST_TEST(r.context->config().certificate.cert == s.certificate.cert);
}

BOOST_AUTO_TEST_CASE(pkcs1_and_sec1_keys_load) {
    temp_dir dir;
    for (const auto* leaf : {&pki().rsa, &pki().a}) {
        settings s;
        s.certificate = write_chain(dir, "leaf", *leaf);
        dir.write("leaf.key", test::traditional_pem_of(leaf->key.get()));
        BOOST_TEST(load(s).context != nullptr);
    }
}

BOOST_AUTO_TEST_CASE(a_key_of_another_certificate_is_refused_naming_both_files) {
    temp_dir dir;
    settings s;
    s.certificate = write_chain(dir, "a", pki().a);
    s.certificate.key = write_chain(dir, "b", pki().b).key;
    const auto r = load(s);
    BOOST_TEST(!r.context);
    BOOST_TEST(mentions(r.report.errors, {"tls.key '" + s.certificate.key + "'", "does not match",
                                          "tls.cert '" + s.certificate.cert + "'"}));
}

BOOST_AUTO_TEST_CASE(a_chain_out_of_order_is_refused) {
    temp_dir dir;
    settings s;
    s.certificate = write_chain(dir, "a", pki().a);
    dir.write("a.crt", test::pem_of(pki().intermediate.cert.get()) + test::pem_of(pki().a.cert.get()));
    const auto r = load(s);
    BOOST_TEST(!r.context);
    BOOST_TEST(mentions(r.report.errors, {"tls.cert '" + s.certificate.cert + "'", "out of order"}));
    BOOST_TEST(r.report.errors.size() == 1u);  // not the key's mismatch with the intermediate too
}

BOOST_AUTO_TEST_CASE(an_expired_or_not_yet_valid_certificate_is_refused) {
    temp_dir dir;
    settings s;
    s.certificate = write_chain(dir, "expired", pki().expired);
    BOOST_TEST(mentions(load(s).report.errors, {"tls.cert '" + s.certificate.cert + "'", "expired on"}));
    s.certificate = write_chain(dir, "later", pki().not_yet_valid);
    BOOST_TEST(mentions(load(s).report.errors, {"tls.cert '" + s.certificate.cert + "'", "not valid before"}));
}

BOOST_AUTO_TEST_CASE(a_certificate_expiring_soon_loads_with_a_warning) {
    temp_dir dir;
    settings s;
    s.certificate = write_chain(dir, "soon", pki().expiring);
    const auto r = load(s);
    BOOST_TEST(r.context != nullptr);
    BOOST_TEST(mentions(r.report.warnings, {"tls.cert '" + s.certificate.cert + "'", "expires on", "within 14 days"}));
}

BOOST_AUTO_TEST_CASE(an_encrypted_key_loads_with_its_password_or_password_file) {
    temp_dir dir;
    settings s;
    s.certificate = write_chain(dir, "a", pki().a, "s3cret");
    s.certificate.password = "s3cret";
    BOOST_TEST(load(s).context != nullptr);
    s.certificate.password.clear();
    s.certificate.password_file = dir.write("password", "s3cret\nignored second line\n");
    BOOST_TEST(load(s).context != nullptr);
}

BOOST_AUTO_TEST_CASE(an_encrypted_key_with_a_wrong_or_no_password_is_refused) {
    temp_dir dir;
    settings s;
    s.certificate = write_chain(dir, "a", pki().a, "s3cret");
    s.certificate.password = "wrong";
    auto r = load(s);
    BOOST_TEST(!r.context);
    BOOST_TEST(mentions(r.report.errors, {"tls.key '" + s.certificate.key + "'", "wrong password", "tls.password"}));
    s.certificate.password.clear();
    r = load(s);
    BOOST_TEST(mentions(r.report.errors, {"tls.key '" + s.certificate.key + "'", "encrypted", "tls.password_file"}));
    s.certificate.password_file = dir.path("missing");
    r = load(s);
    BOOST_TEST(mentions(r.report.errors, {"tls.password_file '" + dir.path("missing") + "'", "cannot read"}));
}

BOOST_AUTO_TEST_CASE(unreadable_and_empty_files_are_refused) {
    temp_dir dir;
    settings s;
    s.certificate = write_chain(dir, "a", pki().a);
    s.certificate.cert = dir.path("missing.crt");
    BOOST_TEST(mentions(load(s).report.errors, {"tls.cert '" + s.certificate.cert + "'", "cannot read the file"}));
    s.certificate.cert = dir.write("empty.crt", "nothing here\n");
    BOOST_TEST(mentions(load(s).report.errors, {"tls.cert '" + s.certificate.cert + "'", "no certificate"}));
    s.certificate = write_chain(dir, "a", pki().a);
    s.certificate.key = s.certificate.cert;
    BOOST_TEST(mentions(load(s).report.errors, {"tls.key '" + s.certificate.key + "'", "no private key"}));
    BOOST_TEST(mentions(load(settings{}).report.errors, {"tls.cert", "required"}));
}

BOOST_AUTO_TEST_CASE(client_auth_without_a_ca_is_refused) {
    temp_dir dir;
    settings s;
    s.certificate = write_chain(dir, "a", pki().a);
    s.client_auth = client_auth::required;
    BOOST_TEST(mentions(load(s).report.errors, {"tls.client_auth is required", "tls.ca"}));
    s.client_auth = client_auth::optional;
    BOOST_TEST(mentions(load(s).report.errors, {"tls.client_auth is optional", "tls.ca"}));
    s.ca = dir.write("ca.pem", "not a certificate\n");
    BOOST_TEST(mentions(load(s).report.errors, {"tls.ca '" + s.ca + "'", "no certificate"}));
    s.ca = dir.write("ca.pem", test::pem_of(pki().ca.cert.get()));
    s.crl = dir.write("crl.pem", "not a CRL\n");
    BOOST_TEST(mentions(load(s).report.errors, {"tls.crl '" + s.crl + "'", "no CRL"}));
}

BOOST_AUTO_TEST_CASE(cipher_lists_openssl_refuses_are_refused) {
    temp_dir dir;
    settings s;
    s.certificate = write_chain(dir, "a", pki().a);
    s.ciphers = "NOT-A-CIPHER";
    BOOST_TEST(mentions(load(s).report.errors, {"tls.ciphers 'NOT-A-CIPHER'", "OpenSSL refuses"}));
    s.ciphers.clear();
    s.ciphersuites = "TLS_NOT_A_SUITE";
    BOOST_TEST(mentions(load(s).report.errors, {"tls.ciphersuites 'TLS_NOT_A_SUITE'", "OpenSSL refuses"}));
}

BOOST_AUTO_TEST_CASE(a_minimum_version_other_than_1_2_or_1_3_is_refused) {
    temp_dir dir;
    settings s;
    s.certificate = write_chain(dir, "a", pki().a);
    s.min_version = 0x0302;
    BOOST_TEST(mentions(load(s).report.errors, {"tls.min_version"}));
}

BOOST_AUTO_TEST_CASE(sni_chains_are_checked_and_named_by_their_index) {
    temp_dir dir;
    settings s;
    s.certificate = write_chain(dir, "a", pki().a);
    s.sni.push_back(write_chain(dir, "b", pki().b));
    s.sni.push_back(write_chain(dir, "expired", pki().expired));
    s.sni.push_back(write_chain(dir, "nameless", pki().client));
    const auto r = load(s);
    BOOST_TEST(!r.context);
    BOOST_TEST(mentions(r.report.errors, {"tls.sni[1].cert", "expired on"}));
    BOOST_TEST(mentions(r.report.errors, {"tls.sni[2]", "no names"}));
    BOOST_TEST(!mentions(r.report.errors, {"tls.sni[0]"}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(host_names_match_exactly_or_by_one_wildcard_label) {
    using detail::host_matches;
    BOOST_TEST(host_matches("b.example", "b.example"));
    BOOST_TEST(host_matches("b.example", "B.Example."));
    BOOST_TEST(!host_matches("b.example", "a.b.example"));
    BOOST_TEST(host_matches("*.b.example", "x.b.example"));
    BOOST_TEST(!host_matches("*.b.example", "b.example"));
    BOOST_TEST(!host_matches("*.b.example", "y.x.b.example"));
    BOOST_TEST(!host_matches("*.b.example", ".b.example"));
}

}  // namespace m0::tls
