#pragma once
// Keys and certificates made at test time with the OpenSSL API, written as
// PEM files into a directory of their own: no fixture file ages or expires.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <m0/tls/server_context.hpp>
#include <m0/tls/settings.hpp>

#include "openssl_handles.hpp"

namespace m0::tls::test {

enum class key_type { ec, rsa };

struct identity {
    detail::x509_ptr cert;
    detail::pkey_ptr key;
};

struct certificate_request {
    std::string common_name{};
    std::vector<std::string> dns_names{};  // subjectAltName
    bool ca = false;
    long valid_from_days = -1;  // relative to now
    long valid_until_days = 365;
    key_type type = key_type::ec;
};

// Issued by `issuer`, or self-signed when it is null.
identity make_identity(const certificate_request& request, const identity* issuer = nullptr);

std::string pem_of(X509* cert);
// PKCS#8; encrypted (AES-256-CBC) when `password` is not empty.
std::string pem_of(EVP_PKEY* key, const std::string& password = "");
// A CRL `issuer` signed, revoking `revoked` (none: an empty one).
std::string crl_pem_of(const identity& issuer, const std::vector<const identity*>& revoked);
// PKCS#1 (RSA) or SEC1 (EC).
std::string traditional_pem_of(EVP_PKEY* key);

// A directory removed with everything in it at the end of the test.
class temp_dir {
public:
    temp_dir();
    ~temp_dir();
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    // Writes `text` to the file `name` in it; returns its path.
    std::string write(const std::string& name, const std::string& text) const;
    std::string path(const std::string& name) const;

private:
    std::filesystem::path path_;
};

// The identities the tests share, made once: a CA, an intermediate it
// signed, and leaves the intermediate signed (EC unless named otherwise).
struct test_pki {
    identity ca;
    identity intermediate;
    identity a;              // a.example, www.a.example
    identity b;              // b.example, *.b.example
    identity rsa;            // rsa.example, an RSA key
    identity expired;        // valid until yesterday
    identity not_yet_valid;  // valid from tomorrow
    identity expiring;       // valid for 5 more days
    identity client;         // a client certificate the CA's intermediate signed
    identity stranger;       // a self-signed client certificate
};
const test_pki& pki();

// Writes `leaf` followed by the intermediate (the chain as served) and its
// key (PKCS#8, encrypted when `password` is set) into `dir`.
certificate_files write_chain(const temp_dir& dir, const std::string& name, const identity& leaf,
                              const std::string& password = "");

// A fixture's settings: the a.example chain in a directory of its own,
// tickets on with a fixed secret; load() fails the test on any error.
struct chain_settings {
    temp_dir dir;
    settings s;
    chain_settings();
    std::shared_ptr<const server_context> load() const;
};

}  // namespace m0::tls::test
