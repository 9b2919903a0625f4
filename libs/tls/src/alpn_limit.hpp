#pragma once
// A connection that may choose only some of the context's ALPN protocols
// (a listener that speaks HTTP/1.1 only, beside one that offers h2 with the
// same certificates): the allowed one hangs off its SSL as ex_data, where
// the context's ALPN callback reads it.
#include <string>

#include <openssl/ssl.h>

namespace m0::tls::detail {

inline int alpn_limit_index() {
    static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    return index;
}

// Null: every protocol of the context.
inline const std::string* alpn_limit(SSL* ssl) {
    return static_cast<const std::string*>(SSL_get_ex_data(ssl, alpn_limit_index()));
}

}  // namespace m0::tls::detail
