#pragma once
// Owning pointers to OpenSSL objects, each freed by its own function.
#include <memory>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace m0::tls::detail {

template <auto Free>
struct openssl_free {
    template <class T>
    void operator()(T* p) const noexcept {
        Free(p);
    }
};

using bio_ptr = std::unique_ptr<BIO, openssl_free<BIO_free_all>>;
using x509_ptr = std::unique_ptr<X509, openssl_free<X509_free>>;
using x509_crl_ptr = std::unique_ptr<X509_CRL, openssl_free<X509_CRL_free>>;
using x509_store_ptr = std::unique_ptr<X509_STORE, openssl_free<X509_STORE_free>>;
using pkey_ptr = std::unique_ptr<EVP_PKEY, openssl_free<EVP_PKEY_free>>;
using ssl_ctx_ptr = std::unique_ptr<SSL_CTX, openssl_free<SSL_CTX_free>>;
using ssl_ptr = std::unique_ptr<SSL, openssl_free<SSL_free>>;

}  // namespace m0::tls::detail
