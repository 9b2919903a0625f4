#include "test_certificates.hpp"

#include <boost/test/unit_test.hpp>

#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <stdlib.h>

#include <fstream>
#include <stdexcept>

namespace m0::tls::test {
namespace {

using detail::bio_ptr;
using detail::pkey_ptr;
using detail::x509_ptr;

void require(bool ok, const char* what) {
    if (!ok) throw std::runtime_error(std::string("test certificates: ") + what + " failed");
}

pkey_ptr make_key(key_type type) {
    pkey_ptr key(type == key_type::ec ? EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")
                                      : EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(2048)));
    require(key != nullptr, "key generation");
    return key;
}

void add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    require(ext != nullptr && X509_add_ext(cert, ext, -1) == 1, "adding an extension");
    X509_EXTENSION_free(ext);
}

std::string text_of(BIO* bio) {
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio, &data);
    return std::string(data, static_cast<std::size_t>(size));
}

}  // namespace

identity make_identity(const certificate_request& request, const identity* issuer) {
    identity out{x509_ptr(X509_new()), make_key(request.type)};
    X509* cert = out.cert.get();
    static long serial = 1;
    X509_set_version(cert, X509_VERSION_3);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), serial++);
    X509_time_adj_ex(X509_getm_notBefore(cert), static_cast<int>(request.valid_from_days), 0, nullptr);
    X509_time_adj_ex(X509_getm_notAfter(cert), static_cast<int>(request.valid_until_days), 0, nullptr);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(request.common_name.c_str()), -1, -1, 0);
    X509* signer = issuer ? issuer->cert.get() : cert;
    X509_set_issuer_name(cert, X509_get_subject_name(signer));
    X509_set_pubkey(cert, out.key.get());
    add_extension(cert, signer, NID_basic_constraints, request.ca ? "critical,CA:TRUE" : "CA:FALSE");
    add_extension(cert, signer, NID_subject_key_identifier, "hash");
    if (request.ca) add_extension(cert, signer, NID_key_usage, "critical,keyCertSign,cRLSign");
    if (!request.dns_names.empty()) {
        std::string names;
        for (const auto& dns : request.dns_names) names += (names.empty() ? "DNS:" : ",DNS:") + dns;
        add_extension(cert, signer, NID_subject_alt_name, names);
    }
    require(X509_sign(cert, issuer ? issuer->key.get() : out.key.get(), EVP_sha256()) > 0, "signing");
    return out;
}

std::string pem_of(X509* cert) {
    bio_ptr out(BIO_new(BIO_s_mem()));
    require(PEM_write_bio_X509(out.get(), cert) == 1, "writing a certificate");
    return text_of(out.get());
}

std::string pem_of(EVP_PKEY* key, const std::string& password) {
    bio_ptr out(BIO_new(BIO_s_mem()));
    const EVP_CIPHER* cipher = password.empty() ? nullptr : EVP_aes_256_cbc();
    require(PEM_write_bio_PKCS8PrivateKey(out.get(), key, cipher, password.empty() ? nullptr : password.data(),
                                          static_cast<int>(password.size()), nullptr, nullptr) == 1,
            "writing a key");
    return text_of(out.get());
}

std::string crl_pem_of(const identity& issuer, const std::vector<const identity*>& revoked) {
    std::unique_ptr<X509_CRL, detail::openssl_free<X509_CRL_free>> crl(X509_CRL_new());
    X509_CRL_set_version(crl.get(), X509_CRL_VERSION_2);
    X509_CRL_set_issuer_name(crl.get(), X509_get_subject_name(issuer.cert.get()));
    std::unique_ptr<ASN1_TIME, detail::openssl_free<ASN1_TIME_free>> now(X509_time_adj_ex(nullptr, -1, 0, nullptr));
    std::unique_ptr<ASN1_TIME, detail::openssl_free<ASN1_TIME_free>> next(X509_time_adj_ex(nullptr, 30, 0, nullptr));
    X509_CRL_set1_lastUpdate(crl.get(), now.get());
    X509_CRL_set1_nextUpdate(crl.get(), next.get());
    for (const auto* cert : revoked) {
        X509_REVOKED* entry = X509_REVOKED_new();
        X509_REVOKED_set_serialNumber(entry, X509_get_serialNumber(cert->cert.get()));
        X509_REVOKED_set_revocationDate(entry, now.get());
        X509_CRL_add0_revoked(crl.get(), entry);
    }
    X509_CRL_sort(crl.get());
    require(X509_CRL_sign(crl.get(), issuer.key.get(), EVP_sha256()) > 0, "signing a CRL");
    bio_ptr out(BIO_new(BIO_s_mem()));
    require(PEM_write_bio_X509_CRL(out.get(), crl.get()) == 1, "writing a CRL");
    return text_of(out.get());
}

std::string traditional_pem_of(EVP_PKEY* key) {
    bio_ptr out(BIO_new(BIO_s_mem()));
    require(PEM_write_bio_PrivateKey_traditional(out.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1,
            "writing a key");
    return text_of(out.get());
}

temp_dir::temp_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "m0-tls-test-XXXXXX").string();
    require(::mkdtemp(pattern.data()) != nullptr, "mkdtemp");
    path_ = pattern;
}

temp_dir::~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

std::string temp_dir::path(const std::string& name) const { return (path_ / name).string(); }

std::string temp_dir::write(const std::string& name, const std::string& text) const {
    std::ofstream out(path(name), std::ios::binary);
    out << text;
    require(static_cast<bool>(out), "writing a file");
    return path(name);
}

const test_pki& pki() {
    static const test_pki made = [] {
        test_pki p;
        p.ca = make_identity({.common_name = "m0 test CA", .ca = true, .valid_until_days = 3650});
        p.intermediate =
            make_identity({.common_name = "m0 test intermediate", .ca = true, .valid_until_days = 3650}, &p.ca);
        p.a = make_identity({.common_name = "a.example", .dns_names = {"a.example", "www.a.example"}}, &p.intermediate);
        p.b = make_identity({.common_name = "b.example", .dns_names = {"b.example", "*.b.example"}}, &p.intermediate);
        p.rsa = make_identity({.common_name = "rsa.example", .dns_names = {"rsa.example"}, .type = key_type::rsa},
                              &p.intermediate);
        p.expired = make_identity({.common_name = "expired.example",
                                   .dns_names = {"expired.example"},
                                   .valid_from_days = -30,
                                   .valid_until_days = -1},
                                  &p.intermediate);
        p.not_yet_valid = make_identity({.common_name = "later.example",
                                         .dns_names = {"later.example"},
                                         .valid_from_days = 1,
                                         .valid_until_days = 30},
                                        &p.intermediate);
        p.expiring = make_identity({.common_name = "soon.example",
                                    .dns_names = {"soon.example"},
                                    .valid_from_days = -30,
                                    .valid_until_days = 5},
                                   &p.intermediate);
        p.client = make_identity({.common_name = "client"}, &p.intermediate);
        p.stranger = make_identity({.common_name = "stranger"});
        return p;
    }();
    return made;
}

certificate_files write_chain(const temp_dir& dir, const std::string& name, const identity& leaf,
                              const std::string& password) {
    certificate_files files;
    files.cert = dir.write(name + ".crt", pem_of(leaf.cert.get()) + pem_of(pki().intermediate.cert.get()));
    files.key = dir.write(name + ".key", pem_of(leaf.key.get(), password));
    return files;
}

chain_settings::chain_settings() {
    s.certificate = write_chain(dir, "a", pki().a);
    s.ticket_secret.fill(7);
}

std::shared_ptr<const server_context> chain_settings::load() const {
    load_report report;
    auto context = server_context::load(s, report);
    BOOST_REQUIRE_MESSAGE(context, (report.errors.empty() ? std::string() : report.errors.front()));
    return context;
}

}  // namespace m0::tls::test
